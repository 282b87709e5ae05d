//! A composite's outgoing HTTPS request against the same request from a native client, side by side in one run
//! (issue #36: at most 1.2×). The `test-http` guest (world `hcp:adapter@0.2.0`) makes one GET through hcpx's
//! `wasi:http` send hook (policy, pinned resolution, TLS over the process's roots, hyper, the row audited) to a
//! loopback HTTPS origin; the native client is the same stack hcpx's hook uses (rustls with ring, no
//! resumption, hyper's HTTP/1 client, tokio), a new connection and full handshake each time. The same
//! composite call without a request (`repeat` with `times` 0) is the call's fixed cost: instantiating the
//! component, the pipeline's checks and the audit row. The request's own cost in a composite is the call with
//! it minus the call without it; that is what the target compares with the native request (docs/perf.md).
//!
//! Needs the guest built: `cargo build --release --target wasm32-wasip2 -p test-http` in guest-adapters/.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde_json::{json, Value};

use hcpx_model::grants::Grants;
use hcpx_model::{Envelope, Invoker, Principal};
use hcpx_runtime::Runtime;
use hcpx_store::Store;

const BODY: &str = "hello over tls";

/// The test CA (its PEM) and a loopback HTTPS origin, kept alive, answering every GET with `BODY`, on a
/// runtime of its own.
struct Origin {
    addr: SocketAddr,
    ca_pem: String,
    ca_der: CertificateDer<'static>,
    _rt: tokio::runtime::Runtime,
}

fn origin() -> Origin {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "hcpx bench ca");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["api.test".to_string()]).unwrap();
    let leaf = leaf.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), ca_cert.der().clone()], key)
            .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(BODY.to_string()))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Origin { addr, ca_pem: ca_cert.pem(), ca_der: ca_cert.der().clone(), _rt: rt }
}

/// The native client: hcpx's send hook's settings (ring, TLS 1.2 and 1.3, ALPN http/1.1, the test CA as the
/// only root, no session resumed), on a tokio runtime like the composite adapter's (one worker; `block_on` on
/// the calling thread, the connection driven by a spawned task).
struct Native {
    rt: tokio::runtime::Runtime,
    connector: tokio_rustls::TlsConnector,
    origin: SocketAddr,
}

impl Native {
    fn new(o: &Origin) -> Native {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(o.ca_der.clone()).unwrap();
        let mut config =
            rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        config.resumption = Resumption::disabled();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        Native { rt, connector: tokio_rustls::TlsConnector::from(Arc::new(config)), origin: o.addr }
    }

    /// One GET on a new connection: the status and body.
    fn get(&self) -> (u16, String) {
        self.rt.block_on(async {
            let tcp = tokio::net::TcpStream::connect(self.origin).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let name = ServerName::try_from("api.test").unwrap();
            let tls = self.connector.connect(name, tcp).await.unwrap();
            let (mut send, conn) = hyper::client::conn::http1::Builder::new()
                .title_case_headers(true)
                .handshake::<_, Empty<bytes::Bytes>>(TokioIo::new(tls))
                .await
                .unwrap();
            let driver = tokio::spawn(conn);
            let req = hyper::Request::get("/")
                .header("host", format!("api.test:{}", self.origin.port()))
                .body(Empty::new())
                .unwrap();
            let resp = send.send_request(req).await.unwrap();
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            driver.abort();
            (status, String::from_utf8(body.to_vec()).unwrap())
        })
    }
}

/// Writes the `test-http` pack (its two commands, the origin's host declared) into `dir`.
fn pack(repo: &Path, dir: &Path, port: u16) -> PathBuf {
    let p = dir.join("test-http");
    std::fs::create_dir_all(&p).unwrap();
    let text = json!({ "type": "string", "description": "A value" });
    let surface = json!({
        "id": "test-http", "kind": "composite", "binding": { "mode": "public" },
        "component": { "path": "./adapter.wasm" },
        "hosts": [format!("api.test:{port}")],
        "verbs": {
            "fetch": { "description": "One request.", "args": { "type": "object",
                "properties": { "url": text }, "required": ["url"] } },
            "repeat": { "description": "The same GET, some times.", "args": { "type": "object",
                "properties": { "url": text, "times": { "type": "integer", "description": "How many GETs" } },
                "required": ["url", "times"] } }
        }
    });
    let policy = json!({ "surface_id": "test-http", "verbs": {
        "fetch": { "operation": "read" }, "repeat": { "operation": "read" } } });
    std::fs::write(p.join("surface.json"), surface.to_string()).unwrap();
    std::fs::write(p.join("policy.json"), policy.to_string()).unwrap();
    std::fs::write(p.join("HARNESS.md"), "# test-http\n\nA bench guest.\n").unwrap();
    let wasm = repo.join("guest-adapters/target/wasm32-wasip2/release/test_http.wasm");
    assert!(
        wasm.exists(),
        "{} is not built: cargo build --release --target wasm32-wasip2 -p test-http in guest-adapters/",
        wasm.display()
    );
    std::fs::copy(wasm, p.join("adapter.wasm")).unwrap();
    p
}

struct Composite {
    rt: Runtime,
    principal: Principal,
    fetch: Envelope,
    empty: Envelope,
    /// A request the policy refuses (a host the pack may not reach): its decision and audit row, no network.
    refused: Envelope,
    _home: tempfile::TempDir,
}

impl Composite {
    /// A store under `base` (a disk's directory, or tmpfs where `fsync` costs next to nothing).
    fn new(repo: &Path, o: &Origin, base: &Path) -> Composite {
        let home = tempfile::tempdir_in(base).unwrap();
        let port = o.addr.port();
        let store = Store::open(&home.path().join("home")).unwrap();
        store.install(&pack(repo, home.path(), port)).unwrap();
        store.set_activated(&["test-http".to_string()], true, None).unwrap();
        let rule: hcpx_pack::pack::HostRule = format!("api.test:{port}").parse().unwrap();
        store.edit_hosts("test-http", &[rule], true, None).unwrap();
        let mut cfg: Value = store.read_json("sandbox.json").unwrap().unwrap_or_else(|| json!({}));
        cfg["egress"] = json!({ "hosts": { "api.test": ["127.0.0.1"] }, "internal": ["api.test"] });
        store.write_json("sandbox.json", &cfg).unwrap();
        let url = format!("https://api.test:{port}/");
        let args = |v: Value| v.as_object().cloned().unwrap();
        Composite {
            rt: Runtime::new(store),
            principal: Principal::local(Grants::All, Invoker::Json),
            fetch: Envelope::new("test-http", "fetch", args(json!({ "url": url }))),
            empty: Envelope::new("test-http", "repeat", args(json!({ "url": url, "times": 0 }))),
            refused: Envelope::new("test-http", "fetch", args(json!({ "url": "https://other.test/" }))),
            _home: home,
        }
    }

    fn call(&self, env: &Envelope) -> Value {
        let out = self.rt.exec(&self.principal, env);
        assert!(out.ok, "{out:?}");
        out.result.unwrap()
    }

    /// The refused request's call, which fails with the code the guest read.
    fn call_refused(&self) {
        let out = self.rt.exec(&self.principal, &self.refused);
        assert!(!out.ok && out.error.as_deref().unwrap_or("").contains("HttpRequestDenied"), "{out:?}");
    }
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let o = origin();
    // hcpx's send hook trusts the process's roots, read once from SSL_CERT_FILE (the operator's CA, here the
    // test CA), before the first request.
    let roots = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(roots.path(), &o.ca_pem).unwrap();
    std::env::set_var("SSL_CERT_FILE", roots.path());
    let native = Native::new(&o);
    let composite = Composite::new(&repo, &o, &std::env::temp_dir());
    // The same pack in a store on tmpfs: the audit row's `fsync`s (the store's durability, the disk's cost)
    // next to free, what is left is the code's.
    let shm = Path::new("/dev/shm");
    let in_memory = Composite::new(&repo, &o, if shm.is_dir() { shm } else { Path::new("/tmp") });
    assert_eq!(native.get(), (200, BODY.to_string()));
    for c in [&composite, &in_memory] {
        assert_eq!(c.call(&c.fetch), json!({ "status": 200, "body": BODY }));
        assert_eq!(c.call(&c.empty), json!({ "sent": 0 }));
        c.call_refused();
    }

    let mut c = Criterion::default().configure_from_args().sample_size(50);
    let mut group = c.benchmark_group("composite https request");
    group.bench_function("native client (rustls + hyper)", |b| b.iter(|| native.get()));
    group.bench_function("composite call with the request", |b| b.iter(|| composite.call(&composite.fetch)));
    group.bench_function("composite call without a request", |b| b.iter(|| composite.call(&composite.empty)));
    group.bench_function("composite call with a refused request", |b| b.iter(|| composite.call_refused()));
    group.bench_function("composite call with the request, store on tmpfs", |b| {
        b.iter(|| in_memory.call(&in_memory.fetch))
    });
    group.bench_function("composite call without a request, store on tmpfs", |b| {
        b.iter(|| in_memory.call(&in_memory.empty))
    });
    group.finish();
    c.final_summary();
    // The p50s of one interleaved run, so every case sees the same machine load; only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = 300;
    // native; with, without (disk); with, without (tmpfs); refused (disk); refused (tmpfs).
    let cases: [Box<dyn Fn()>; 7] = [
        Box::new(|| drop(native.get())),
        Box::new(|| drop(composite.call(&composite.fetch))),
        Box::new(|| drop(composite.call(&composite.empty))),
        Box::new(|| drop(in_memory.call(&in_memory.fetch))),
        Box::new(|| drop(in_memory.call(&in_memory.empty))),
        Box::new(|| composite.call_refused()),
        Box::new(|| in_memory.call_refused()),
    ];
    let mut times: Vec<Vec<Duration>> = cases.iter().map(|_| Vec::with_capacity(n)).collect();
    for _ in 0..n {
        for (i, run) in cases.iter().enumerate() {
            let t = Instant::now();
            run();
            times[i].push(t.elapsed());
        }
    }
    let p: Vec<f64> = times.into_iter().map(|t| us(p50(t))).collect();
    let nat = p[0];
    println!("p50 over {n} interleaved rounds: native request {nat:.0} us");
    for (store, with, without, refused) in
        [("store on disk", p[1], p[2], p[5]), ("store on tmpfs", p[3], p[4], p[6])]
    {
        println!(
            "  {store}: composite call with the request {with:.0} us, without {without:.0} us; the request's \
             own {:.0} us = {:.2}x native; the whole call {:.2}x native",
            with - without,
            (with - without) / nat,
            with / nat
        );
        println!(
            "    a refused request's call {refused:.0} us: its decision and audit row {:.0} us over the empty call; \
             the allowed request's wire part (with minus refused) {:.0} us = {:.2}x native",
            refused - without,
            with - refused,
            (with - refused) / nat
        );
    }
}
