//! A JWT-authenticated call beside a static-token one (#37: at most 1.1×, the issuer's keys cached), side by
//! side in one run, through the whole router in-process (auth layer, access log, handler, pipeline): the
//! cheapest call there is, `hcp-cli`'s `hcp.list` (the runtime answers it itself, so the auth layer's share is
//! the largest it can be), and a wrap tool call (`trivial ping`, a confined process, as most tool calls are;
//! installed with the `hcpx` binary built beside this bench, skipped without one). Each row's three cases are
//! interleaved call by call: a static token of principals.json, an ES256 token and an EdDSA token of an issuer
//! whose key set is in the cache. Prints each case's p50 and p99 and the ratio to the static token's.
//!
//! Run: `cargo bench -p hcpx-http --bench jwt` (JWT_BENCH_N calls per case, default 3000; a tenth of it for
//! the wrap).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt as _;

use hcpx_http::oauth::jws::Jwk;
use hcpx_http::oauth::Verifier;
use hcpx_http::{router_with, AccessLog, Metrics, Parts, Readiness, ServeConfig};
use hcpx_runtime::Runtime;
use hcpx_store::issuers::IssuerRow;
use hcpx_store::Store;

const ISSUER: &str = "https://idp.bench";
const AUDIENCE: &str = "https://hcp.bench/mcp";

fn token(alg: &str, kid: &str, sign: &dyn Fn(&[u8]) -> Vec<u8>) -> String {
    token_jti(alg, kid, "x", sign)
}

/// A token with its own `jti`: another token to the server, whose signature it has not checked yet.
fn token_jti(alg: &str, kid: &str, jti: &str, sign: &dyn Fn(&[u8]) -> Vec<u8>) -> String {
    let exp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 3600;
    let header = json!({ "alg": alg, "kid": kid, "typ": "at+jwt" });
    let claims = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "bench-svc", "exp": exp, "scope": "hcp.read",
                         "client_id": "bench", "jti": jti });
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = sign(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e6
}

fn main() {
    let n: usize = std::env::var("JWT_BENCH_N").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let static_token =
        store.principal_add("bench", "bench", false, vec!["verb.exec.read:*".parse().unwrap()]).unwrap();
    store
        .issuer_add(
            IssuerRow {
                issuer: ISSUER.into(),
                audience: AUDIENCE.into(),
                principal_claim: None,
                tenant: Some("bench".into()),
                tenant_claim: None,
                tenants: vec![],
                scopes: [("hcp.read".to_string(), vec!["verb.exec.read:*".parse().unwrap()])].into(),
                operator_scope: None,
                approver_scope: None,
                person_scope: None,
            },
            false,
        )
        .unwrap();

    let rng = SystemRandom::new();
    let p8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let es = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, p8.as_ref(), &rng).unwrap();
    let point = es.public_key().as_ref().to_vec();
    let e8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let ed = Ed25519KeyPair::from_pkcs8(e8.as_ref()).unwrap();
    let jwks = json!({ "keys": [
        { "kty": "EC", "crv": "P-256", "kid": "es", "alg": "ES256",
          "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..]) },
        { "kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA", "x": URL_SAFE_NO_PAD.encode(ed.public_key().as_ref()) },
    ]});
    let keys: Vec<Jwk> = hcpx_http::oauth::jws::parse_jwks(jwks.to_string().as_bytes()).unwrap();
    let es_token = token("ES256", "es", &|m| es.sign(&SystemRandom::new(), m).unwrap().as_ref().to_vec());
    let ed_token = token("EdDSA", "ed", &|m| ed.sign(m).as_ref().to_vec());

    let oauth = Arc::new(Verifier::default());
    oauth.keys.insert(ISSUER, keys);
    let runtime = Arc::new(Runtime::new(store));
    let metrics = Arc::new(Metrics::new());
    let readiness = Arc::new(Readiness::default());
    readiness.mark_loaded();
    let parts = Parts {
        log: AccessLog::to(Box::new(std::io::sink())),
        shutdown: hcpx_http::ShutdownToken::new(),
        metrics,
        readiness,
    };
    let app = router_with(runtime, &ServeConfig::default(), parts, oauth);
    let tokio = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();

    // The trivial wrap of benches/trivial_pack.sh, installed by the hcpx binary of this target directory.
    let hcpx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/debug/hcpx");
    let wrap = hcpx.exists()
        && {
            let p = dir.path().join("src/trivial");
            std::fs::create_dir_all(p.join("bin")).unwrap();
            std::fs::write(p.join("surface.json"), r#"{"id":"trivial","kind":"wrap","cliBin":"trivial","binding":{"mode":"public"},"wrap":{"bin":"./bin/trivial","json_flag":[]},"verbs":{"ping":{"description":"Ping.","cli":["trivial","ping"]}}}"#).unwrap();
            std::fs::write(
                p.join("policy.json"),
                r#"{"surface_id":"trivial","verbs":{"ping":{"operation":"read"}}}"#,
            )
            .unwrap();
            std::fs::write(p.join("HARNESS.md"), "# Trivial\n\nA trivial pack for benchmarks.\n").unwrap();
            std::fs::write(p.join("bin/trivial"), "#!/bin/sh\nprintf '{\"ok\":true}\\n'\n").unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(p.join("bin/trivial"), std::fs::Permissions::from_mode(0o755)).unwrap();
            let run = |args: &[&str]| {
                std::process::Command::new(&hcpx)
                    .args(args)
                    .env("HCP_HOME", dir.path())
                    .output()
                    .unwrap()
                    .status
                    .success()
            };
            run(&["install", p.to_str().unwrap()]) && run(&["activate", "trivial"])
        };
    let call = |path: &str, bearer: &str| {
        let req = axum::http::Request::post(path)
            .header("authorization", format!("Bearer {bearer}"))
            .header("content-type", "application/json")
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let app = app.clone();
        tokio.block_on(async move {
            let t = Instant::now();
            let resp = app.oneshot(req).await.unwrap();
            let status = resp.status();
            let _ = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
            assert_eq!(status, 200, "the call failed");
            t.elapsed()
        })
    };
    let cases = [
        ("static token", static_token.as_str()),
        ("JWT ES256", es_token.as_str()),
        ("JWT EdDSA", ed_token.as_str()),
    ];
    let mut rows = vec![("built-in hcp.list", "/v1/exec/hcp-cli/hcp.list", n)];
    if wrap {
        rows.push(("wrap trivial ping", "/v1/exec/trivial/ping", (n / 10).max(50)));
    } else {
        eprintln!("jwt: no {} to install the trivial wrap with; its row is left out", hcpx.display());
    }
    println!("| call | token | p50 µs | p99 µs | p50 ratio to static |");
    println!("|------|-------|-------:|-------:|--------------------:|");
    for (row, path, n) in rows {
        for (_, t) in &cases {
            for _ in 0..50 {
                call(path, t);
            }
        }
        let mut lat: Vec<Vec<Duration>> = cases.iter().map(|_| Vec::with_capacity(n)).collect();
        for _ in 0..n {
            for (i, (_, t)) in cases.iter().enumerate() {
                lat[i].push(call(path, t));
            }
        }
        let mut base = 0.0;
        for (i, (label, _)) in cases.iter().enumerate() {
            lat[i].sort();
            let (p50, p99) = (pct(&lat[i], 0.5), pct(&lat[i], 0.99));
            if i == 0 {
                base = p50;
            }
            println!("| {row} | {label} | {p50:.1} | {p99:.1} | {:.3} |", p50 / base);
        }
    }
    // A token's first call: its signature checked (a fresh token each call, signed before the clock starts),
    // beside the static token again.
    let first = (n / 3).max(100);
    let fresh: Vec<(String, String)> = (0..first)
        .map(|i| {
            let j = format!("f{i}");
            (
                token_jti("ES256", "es", &j, &|m| {
                    es.sign(&SystemRandom::new(), m).unwrap().as_ref().to_vec()
                }),
                token_jti("EdDSA", "ed", &j, &|m| ed.sign(m).as_ref().to_vec()),
            )
        })
        .collect();
    let path = "/v1/exec/hcp-cli/hcp.list";
    let mut lat: Vec<Vec<Duration>> = (0..3).map(|_| Vec::with_capacity(first)).collect();
    for (e, d) in &fresh {
        lat[0].push(call(path, &static_token));
        lat[1].push(call(path, e));
        lat[2].push(call(path, d));
    }
    let mut base = 0.0;
    for (i, label) in ["static token", "JWT ES256, first call", "JWT EdDSA, first call"].iter().enumerate() {
        lat[i].sort();
        let (p50, p99) = (pct(&lat[i], 0.5), pct(&lat[i], 0.99));
        if i == 0 {
            base = p50;
        }
        println!("| built-in hcp.list | {label} | {p50:.1} | {p99:.1} | {:.3} |", p50 / base);
    }
}
