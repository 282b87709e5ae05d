//! `hcpx serve` as an OAuth 2.1 resource server (#37 point 2), against a real OpenID provider: the npm package
//! `oidc-provider` (tests/oidc/provider.mjs, installed by scripts/setup.sh with `npm ci`), run with node over
//! HTTPS on a loopback port with a CA made here (hcpx trusts it through `SSL_CERT_FILE`), issuing JWT access
//! tokens for the resource a client names with the client credentials grant. Each token the issue lists is
//! refused on `/mcp` and on `/v1`, through the real binary: another audience, an expired one, a forged
//! signature, `alg: none`, a key that rotated out, a scope short of the grant, a claim naming another tenant.
//! The tokens of each signature algorithm and the static tokens of principals.json are taken; the SDK's own
//! OAuth client gets a token and calls tools (tests/mcp/oauth.py).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::helpers::{repo, Fixture, Home};
use crate::serve::{principal, request_raw, Server};
use crate::test_ca::{test_ca, TestCa};

/// Whether node and the provider's package are there; a failure under CI=true, else a skip that says why.
fn provider_unavailable() -> bool {
    let installed = repo().join("tests/oidc/node_modules/oidc-provider/package.json").exists();
    let node = Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success());
    if installed && node {
        return false;
    }
    let why = "skipped: the OpenID provider needs node and `npm ci` in tests/oidc (scripts/setup.sh)";
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
    eprintln!("{why}");
    true
}

/// Whether this user's python3 has the MCP SDK: scripts/setup.sh installs it for root (CI); the unprivileged
/// pass (scripts/test-nonroot.sh) runs with the system's python3, which may lack it, and then skips saying so.
fn sdk_unavailable() -> bool {
    let ok = Command::new("python3").args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    if !ok {
        assert!(!(root && std::env::var("CI").as_deref() == Ok("true")), "python3 lacks the mcp package");
        eprintln!("skipped: this user's python3 has no mcp package (scripts/setup.sh installs it)");
    }
    !ok
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A fresh private key set for the provider in `dir/NAME.json`, kids `PREFIX-rs256`, `-ps256`, `-es256`,
/// `-es384`, `-ed25519`.
fn key_set(dir: &Path, name: &str, prefix: &str) -> PathBuf {
    let out = Command::new("node")
        .arg(repo().join("tests/oidc/provider.mjs"))
        .args(["keys", prefix])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, &out.stdout).unwrap();
    path
}

/// The OpenID provider on a loopback port; killed when dropped.
struct Provider {
    child: Child,
}

impl Provider {
    /// Serves `issuer` on `port` with `keys`, its clock `skew` seconds off.
    fn start(w: &Tls, issuer: &str, port: u16, keys: &Path, skew: i64) -> Provider {
        let mut child = Command::new("node")
            .arg(repo().join("tests/oidc/provider.mjs"))
            .arg("serve")
            .env("ISSUER", issuer)
            .env("PORT", port.to_string())
            .env("KEYS", keys)
            .env("CERT", &w.cert)
            .env("KEY", &w.key)
            .env("SKEW_SECS", skew.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node");
        let first = BufReader::new(child.stdout.take().unwrap()).lines().next();
        let first = first.and_then(Result::ok).unwrap_or_default();
        assert!(first.starts_with("listening "), "the provider did not start: {first:?}");
        Provider { child }
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The test CA and the provider's leaf for 127.0.0.1, as files.
struct Tls {
    _ca: TestCa,
    ca_file: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

fn tls(dir: &Path) -> Tls {
    let ca = test_ca("hcpx oauth test CA");
    let (cert, key) = ca.leaf_pem(&["127.0.0.1"]);
    let (ca_file, cert_file, key_file) = (dir.join("ca.pem"), dir.join("leaf.pem"), dir.join("leaf.key"));
    std::fs::write(&ca_file, &ca.pem).unwrap();
    std::fs::write(&cert_file, cert).unwrap();
    std::fs::write(&key_file, key).unwrap();
    Tls { _ca: ca, ca_file, cert: cert_file, key: key_file }
}

/// A client credentials token from the provider at `port` for `resource`: (status, the token or the error).
fn token_from(w: &Tls, port: u16, client: &str, resource: &str, scope: &str) -> String {
    let out = Command::new("curl")
        .args(["--silent", "--show-error", "--max-time", "20", "--noproxy", "*", "--cacert"])
        .arg(&w.ca_file)
        .args(["-u", &format!("{client}:secret-{client}")])
        .args(["-d", "grant_type=client_credentials", "--data-urlencode", &format!("resource={resource}")])
        .args(["--data-urlencode", &format!("scope={scope}")])
        .arg(format!("https://127.0.0.1:{port}/token"))
        .output()
        .expect("curl (scripts/setup.sh installs it)");
    let body: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!("no token: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    body["access_token"].as_str().unwrap_or_else(|| panic!("no token: {body}")).to_string()
}

/// A pack with a read and a write that run in a served tenant's workspace.
fn notes_pack(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "notes", "name": "Notes", "kind": "wrap", "cliBin": "notes",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/notes", "json_flag": [], "workspace": { "mode": "workspace" } },
        "verbs": {
            "look": { "description": "List the notes.", "cli": ["notes", "look"] },
            "save": { "description": "Save a note.", "cli": ["notes", "save"] }
        },
        "stimulusTriggers": [{ "ref": "note.saved" }]
    });
    f.policy = json!({
        "surface_id": "notes",
        "verbs": { "look": { "operation": "read" }, "save": { "operation": "write" } },
        "stimuli": { "note.saved": { "delivery": "announce" } }
    });
    f.harness = "# Notes\n\nNotes.\n".into();
    let script = "#!/bin/sh\nif [ \"$1\" = save ]; then echo note >> note.txt; fi\nn=$(cat note.txt 2>/dev/null | wc -l)\nprintf '{\"notes\":%s}\\n' \"$n\"\n";
    f.files = vec![("bin/notes".into(), script.into(), true)];
    h.install(&f, "notes");
}

/// A provider, `hcpx serve` on a port chosen first (the audience names it), and the issuer added for it.
struct World {
    h: Home,
    w: Tls,
    port: u16,
    issuer: String,
    keys: PathBuf,
    provider: Option<Provider>,
    server: Server,
    audience: String,
}

impl World {
    fn new() -> World {
        World::on(Home::new())
    }

    /// The world over `h`'s store (the files under its HCP_HOME, or its PostgreSQL database).
    fn on(h: Home) -> World {
        let w = tls(h.t.path());
        let port = free_port();
        let issuer = format!("https://127.0.0.1:{port}");
        let keys = key_set(h.t.path(), "issuer-keys", "a");
        let provider = Provider::start(&w, &issuer, port, &keys, 0);
        notes_pack(&h);
        let hcp_port = free_port();
        let audience = format!("http://127.0.0.1:{hcp_port}/mcp");
        let out = h.run(&[
            "auth",
            "issuer",
            "add",
            &issuer,
            "--audience",
            &audience,
            "--tenant-claim",
            "org",
            "--tenants",
            "acme",
            "--scope",
            "hcp.read=verb.exec.read:*",
            "--scope",
            "hcp.read=sense.announce:notes",
            "--scope",
            "hcp.write=verb.exec.write:notes",
            "--operator-scope",
            "hcp.operator",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        // A tenant the issuer speaks for can be given its own activation, as a Principal's can.
        let out = h.run(&["activate", "notes", "--tenant", "acme"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", &format!("127.0.0.1:{hcp_port}")])
            .env("HCP_HOME", h.store())
            .envs(h.store_env())
            .env("SSL_CERT_FILE", &w.ca_file)
            .current_dir(h.t.path());
        let server = Server::launch(cmd);
        World { h, w, port, issuer, keys, provider: Some(provider), server, audience }
    }

    fn token(&self, client: &str, scope: &str) -> String {
        token_from(&self.w, self.port, client, &self.audience, scope)
    }

    /// `POST path` with `token` → (status, lower-cased head, body).
    fn post(&self, path: &str, token: &str, body: &Value) -> (u16, String, String) {
        let extra = [("Accept", "application/json, text/event-stream")];
        request_raw(&self.server.addr, "POST", path, Some(token), Some(body.to_string().as_bytes()), &extra)
    }

    /// The same request made on `/v1` and on `/mcp`: a call of `notes.VERB`.
    fn both(&self, verb: &str, token: &str) -> [(u16, String, String); 2] {
        let v1 = self.post(&format!("/v1/exec/notes/{verb}"), token, &json!({}));
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": format!("notes__{verb}"), "arguments": {}}});
        [v1, self.post("/mcp", token, &call)]
    }

    fn notes_saved(&self) -> usize {
        let f = self.h.store().join("tenants/acme/workspaces/notes/note.txt");
        std::fs::read_to_string(f).map(|s| s.lines().count()).unwrap_or(0)
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A 401 refusing the token, naming the metadata, with the reason in the body.
fn assert_refused(what: &str, (status, head, body): &(u16, String, String), why: &str, audience: &str) {
    assert_eq!(*status, 401, "{what}: {head}\n{body}");
    let metadata = audience.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert!(
        head.contains(&format!(
            "www-authenticate: bearer resource_metadata=\"{metadata}\", error=\"invalid_token\""
        )),
        "{what}: {head}"
    );
    assert!(body.contains(why), "{what}: expected {why:?} in {body}");
    assert!(body.contains("\"code\":\"denied\""), "{what}: {body}");
}

fn swap_part(token: &str, i: usize, f: impl Fn(&mut Value)) -> String {
    let mut parts: Vec<String> = token.split('.').map(String::from).collect();
    let mut v: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[i]).unwrap()).unwrap();
    f(&mut v);
    parts[i] = URL_SAFE_NO_PAD.encode(v.to_string());
    parts.join(".")
}

#[test]
fn tokens_of_each_algorithm_and_static_tokens_reach_mcp_and_v1_as_ordinary_principals() {
    if provider_unavailable() {
        return;
    }
    let w = World::new();
    for client in ["acme-rs", "acme-ps", "acme-es", "acme-es384", "acme-ed"] {
        let t = w.token(client, "hcp.read hcp.write");
        let [v1, mcp] = w.both("look", &t);
        assert_eq!(v1.0, 200, "{client}: {v1:?}");
        assert!(v1.2.contains("\"notes\":0"), "{client}: {v1:?}");
        // /mcp takes the token (rmcp then answers for a request without a session as it does for any).
        assert_ne!(mcp.0, 401, "{client}: {mcp:?}");
        let (st, head, _) = w.post("/mcp", &t, &serde_json::from_str(INITIALIZE).unwrap());
        assert_eq!(st, 200, "{client}: {head}");
    }
    let t = w.token("acme-es", "hcp.read hcp.write");
    let (st, _, body) = w.post("/v1/exec/notes/save", &t, &json!({}));
    assert_eq!(st, 200, "{body}");
    assert_eq!(w.notes_saved(), 1, "the write ran in tenant acme's workspace");
    let audit = w.h.audit_log();
    assert!(
        audit.lines().any(|l| l.contains("\"principal\":\"acme-es\"")
            && l.contains("\"tenant\":\"acme\"")
            && l.contains("\"invoker\":\"http\"")),
        "{audit}"
    );
    // A static token of principals.json still works beside them, and a JWT stays one (never looked up there).
    let machine = principal(&w.h, "machine", "acme", &["verb.exec.read:*"], false);
    let (st, _, body) = w.post("/v1/exec/notes/look", &machine, &json!({}));
    assert_eq!(st, 200, "{body}");
    // The operator scope makes an operator; a token without it is told the scope it needs.
    let op = w.token("acme-rs", "hcp.operator");
    let (st, _, text) = request_raw(&w.server.addr, "GET", "/metrics", Some(&op), None, &[]);
    assert_eq!(st, 200, "{text}");
    let (st, head, _) = request_raw(&w.server.addr, "GET", "/metrics", Some(&t), None, &[]);
    assert_eq!(st, 403);
    assert!(head.contains("error=\"insufficient_scope\", scope=\"hcp.operator\""), "{head}");
    // The access log names the Principal, never the token.
    let log = w.server.log();
    assert!(log.contains("\"principal\":\"acme-es\""), "{log}");
    assert!(!log.contains(&t), "a token reached the access log");
}

#[test]
fn each_bad_token_is_refused_on_mcp_and_v1_before_anything_runs() {
    if provider_unavailable() {
        return;
    }
    let mut w = World::new();
    let good = w.token("acme-rs", "hcp.read hcp.write");
    assert_eq!(w.both("look", &good)[0].0, 200, "the good token first, so its keys are cached");

    // Another audience: a token the provider made for another server.
    let other = token_from(&w.w, w.port, "acme-rs", "https://other.example/mcp", "hcp.read hcp.write");
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &other)) {
        assert_refused(&format!("another audience on {face}"), &r, "not this server", &w.audience);
    }

    // A claim naming another tenant than the issuer may speak for.
    let globex = w.token("globex", "hcp.read hcp.write");
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &globex)) {
        assert_refused(&format!("another tenant on {face}"), &r, "which issuer", &w.audience);
    }

    // alg none: the good token's claims, unsigned.
    let none = format!("{}.", {
        let t = swap_part(&good, 0, |h| h["alg"] = json!("none"));
        t.rsplit_once('.').unwrap().0.to_string()
    });
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &none)) {
        assert_refused(&format!("alg none on {face}"), &r, "unsigned", &w.audience);
    }
    // The same with its original signature kept: still refused before any key.
    let none_signed = swap_part(&good, 0, |h| h["alg"] = json!("none"));
    assert_refused("alg none, signature kept", &w.both("save", &none_signed)[0], "unsigned", &w.audience);

    // A forged signature: the claims changed (another tenant's name kept out, more scope), the signature kept…
    let tampered = swap_part(&good, 1, |c| c["sub"] = json!("admin"));
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &tampered)) {
        assert_refused(&format!("tampered claims on {face}"), &r, "does not verify", &w.audience);
    }
    // …and a token signed by another key under the issuer's own kid and name (a second provider with a key set
    // of its own, speaking as this issuer).
    let forger_keys = key_set(w.h.t.path(), "forger-keys", "a");
    let forger_port = free_port();
    let forger = Provider::start(&w.w, &w.issuer, forger_port, &forger_keys, 0);
    let forged = token_from(&w.w, forger_port, "acme-rs", &w.audience, "hcp.read hcp.write");
    drop(forger);
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &forged)) {
        assert_refused(&format!("forged signature on {face}"), &r, "does not verify", &w.audience);
    }

    // An expired token: the issuer's own keys and name, its clock two hours behind.
    let old_port = free_port();
    let stale = Provider::start(&w.w, &w.issuer, old_port, &w.keys, -7200);
    let expired = token_from(&w.w, old_port, "acme-rs", &w.audience, "hcp.read hcp.write");
    drop(stale);
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("save", &expired)) {
        assert_refused(&format!("expired on {face}"), &r, "expired", &w.audience);
    }

    // A scope short of the grant: a good read token asking to write gets 403 naming the scope that gives it.
    let reader = w.token("acme-rs", "hcp.read");
    assert_eq!(w.both("look", &reader)[0].0, 200);
    for (face, (st, head, body)) in ["v1", "mcp"].iter().zip(w.both("save", &reader)) {
        assert_eq!(st, 403, "{face}: {head}\n{body}");
        let metadata = w.audience.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
        assert!(
            head.contains(&format!(
                "www-authenticate: bearer error=\"insufficient_scope\", scope=\"hcp.write\", resource_metadata=\"{metadata}\""
            )),
            "{face}: {head}"
        );
        assert!(
            body.contains("verb.exec.write for notes.save") && body.contains("\"code\":\"denied\""),
            "{face}: {body}"
        );
    }

    // A removed issuer's tokens stop at once.
    assert_eq!(w.h.run(&["auth", "issuer", "remove", &w.issuer]).status.code(), Some(0));
    std::thread::sleep(Duration::from_millis(50));
    let (st, _, body) = w.post("/v1/exec/notes/look", &good, &json!({}));
    assert_eq!(st, 401, "{body}");
    assert!(body.contains("no OAuth issuer") || body.contains("not one this server takes"), "{body}");

    assert_eq!(w.notes_saved(), 0, "a refused token ran a write");
    assert!(!w.h.audit_log().contains("\"save\""), "a refused write left an audit line");
    w.provider.take();
}

#[test]
fn a_key_that_rotated_out_is_refused_and_the_new_key_is_fetched_once() {
    if provider_unavailable() {
        return;
    }
    let mut w = World::new();
    let before = w.token("acme-rs", "hcp.read");
    assert_eq!(w.both("look", &before)[0].0, 200);
    // The provider rotates: restarted on the same port with a new key set only.
    w.provider.take();
    let rotated = key_set(w.h.t.path(), "rotated-keys", "b");
    w.provider = Some(Provider::start(&w.w, &w.issuer, w.port, &rotated, 0));
    let after = w.token("acme-rs", "hcp.read");
    assert!(after
        .split('.')
        .next()
        .map(|h| String::from_utf8(URL_SAFE_NO_PAD.decode(h).unwrap()).unwrap())
        .unwrap()
        .contains("b-rs256"));
    // The new kid is not in the cached set: one refetch finds it.
    let [v1, mcp] = w.both("look", &after);
    assert_eq!(v1.0, 200, "{v1:?}");
    assert_ne!(mcp.0, 401, "{mcp:?}");
    // The old key is gone from the issuer's set: its token, not yet expired, is refused.
    for (face, r) in ["v1", "mcp"].iter().zip(w.both("look", &before)) {
        assert_refused(&format!("rotated-out key on {face}"), &r, "rotated out", &w.audience);
    }
    // A flood of unknown kids makes no further fetch within the interval: still refused, and fast.
    let start = std::time::Instant::now();
    for i in 0..20 {
        let t = swap_part(&before, 0, |h| h["kid"] = json!(format!("nope-{i}")));
        assert_eq!(w.both("look", &t)[0].0, 401);
    }
    assert!(start.elapsed() < Duration::from_secs(20), "unknown kids were fetched for");
}

#[test]
fn protected_resource_metadata_names_the_issuer_and_comes_from_the_audience_not_the_host() {
    let h = Home::new();
    let out = h.run(&[
        "auth",
        "issuer",
        "add",
        "https://idp.example.com/realms/acme",
        "--audience",
        "https://hcp.example.com/mcp",
        "--tenant",
        "acme",
        "--scope",
        "hcp.read=verb.exec.read:*",
        "--approver-scope",
        "hcp.approve",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let s = Server::start(&h, &["--allow-host", "hcp.example.com"]);
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let (st, _, body) = request_raw(&s.addr, "GET", path, None, None, &[]);
        assert_eq!(st, 200, "{path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v,
            json!({
                "resource": "https://hcp.example.com/mcp",
                "authorization_servers": ["https://idp.example.com/realms/acme"],
                "scopes_supported": ["hcp.approve", "hcp.read"],
                "bearer_methods_supported": ["header"],
                "resource_name": "hcpx"
            }),
            "{path}"
        );
    }
    let (st, _, _) = request_raw(&s.addr, "GET", "/.well-known/oauth-protected-resource/v2", None, None, &[]);
    assert_eq!(st, 404);
    // The 401's metadata URL is the audience's, whatever Host the request names.
    let (st, head, _) = request_raw(
        &s.addr,
        "POST",
        "/mcp",
        None,
        Some(INITIALIZE.as_bytes()),
        &[("X-Forwarded-Host", "evil.example")],
    );
    assert_eq!(st, 401);
    assert!(
        head.contains("www-authenticate: bearer resource_metadata=\"https://hcp.example.com/.well-known/oauth-protected-resource/mcp\"\r"),
        "{head}"
    );
    let (st, head, _) = request_raw(&s.addr, "GET", "/v1/packs", Some("a.b.c"), None, &[]);
    assert_eq!(st, 401);
    assert!(head.contains("error=\"invalid_token\""), "{head}");
    // Without issuers the metadata is not there and the 401 is as before.
    let bare = Home::new();
    let s2 = Server::start(&bare, &[]);
    let (st, _, _) = request_raw(&s2.addr, "GET", "/.well-known/oauth-protected-resource", None, None, &[]);
    assert_eq!(st, 404);
    let (_, head, _) = request_raw(&s2.addr, "GET", "/v1/packs", None, None, &[]);
    assert!(head.contains("www-authenticate: bearer\r"), "{head}");
}

#[test]
fn the_sdks_oauth_client_gets_a_token_steps_up_its_scope_and_calls_tools() {
    if provider_unavailable() || sdk_unavailable() {
        return;
    }
    let w = World::new();
    let read_token = w.token("acme-es", "hcp.read");
    let out = Command::new("python3")
        .arg(repo().join("tests/mcp/oauth.py"))
        .arg(env!("CARGO_BIN_EXE_hcpx"))
        .arg(w.h.store())
        .args([&w.audience, &w.issuer, "acme-es", &read_token])
        .env("SSL_CERT_FILE", &w.w.ca_file)
        .current_dir(w.h.t.path())
        .output()
        .expect("python3 (scripts/setup.sh installs the mcp package)");
    assert!(
        out.status.success(),
        "the OAuth client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    // With nothing stored: 401 → the metadata it names → the issuer's metadata → a token → the call.
    assert_eq!(r["fresh"]["is_error"], json!(false), "{r}");
    assert_eq!(r["fresh"]["result"]["notes"], json!(0), "{r}");
    let urls: Vec<(String, u64)> = r["fresh_exchanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["url"].as_str().unwrap().to_string(), e["status"].as_u64().unwrap()))
        .collect();
    let metadata = w.audience.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    assert_eq!(urls.first(), Some(&(w.audience.clone(), 401)), "{urls:?}");
    assert_eq!(urls.get(1), Some(&(metadata.clone(), 200)), "{urls:?}");
    assert!(urls.iter().any(|(u, s)| u == &format!("{}/token", w.issuer) && *s == 200), "{urls:?}");
    assert_eq!(urls.last().map(|u| u.1), Some(200), "{urls:?}");
    // Holding a read token: the reads only are listed and run; the write meets 403 insufficient_scope, the SDK
    // asks the issuer for the scope named, and the write runs once.
    assert_eq!(r["tools"], json!(["notes__look"]), "a read token lists the reads: {r}");
    assert_eq!(r["read"]["is_error"], json!(false), "{r}");
    assert_eq!(r["write"]["is_error"], json!(false), "{r}");
    assert_eq!(r["write"]["result"]["notes"], json!(1), "{r}");
    assert!(r["final_scope"].as_str().unwrap().split(' ').any(|s| s == "hcp.write"), "{r}");
    let ex = r["exchanges"].as_array().unwrap();
    assert!(
        ex.iter().any(|e| e["status"] == json!(403)
            && e["www_authenticate"]
                .as_str()
                .unwrap_or_default()
                .contains("error=\"insufficient_scope\", scope=\"hcp.write\"")),
        "{ex:?}"
    );
    assert_eq!(w.notes_saved(), 1, "the stepped-up write ran once");
    // Downstream it is an ordinary Principal: the write's audit line names it, its tenant and invoker mcp.
    let audit = w.h.audit_log();
    assert!(
        audit.lines().any(|l| l.contains("\"principal\":\"acme-es\"")
            && l.contains("\"tenant\":\"acme\"")
            && l.contains("\"invoker\":\"mcp\"")),
        "{audit}"
    );
}

#[test]
fn a_jwt_principals_sense_stream_ends_when_its_issuer_is_removed() {
    if provider_unavailable() {
        return;
    }
    let w = World::new();
    let reader = w.token("acme-ed", "hcp.read");
    let feeder = principal(&w.h, "feeder", "acme", &["sense.announce:notes"], false);
    let (addr, token) = (w.server.addr.clone(), reader.clone());
    let wait = Duration::from_secs(20);
    let watching = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let got = crate::sense::sse(&addr, &token, "", None, 2, wait);
        (got, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    let post = |n: u64| w.post("/v1/sense/notes/note.saved", &feeder, &json!({ "n": n })).0;
    assert_eq!(post(1), 200);
    std::thread::sleep(Duration::from_millis(500));
    // The issuer is removed while the JWT Principal's stream is open: nothing more reaches it, and it ends.
    assert!(w.h.run(&["auth", "issuer", "remove", &w.issuer]).status.success());
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(post(2), 200);
    let ((status, got), took) = watching.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(got.iter().map(|e| e["payload"]["n"].clone()).collect::<Vec<_>>(), [json!(1)], "{got:?}");
    assert!(took < wait, "the stream of a removed issuer's Principal stayed open");
}

#[test]
fn on_the_postgres_store_the_issuer_is_a_document_every_replica_reads_and_export_keeps_private() {
    if provider_unavailable() || crate::pg::unavailable() {
        return;
    }
    let w = World::on(Home::postgres());
    let t = w.token("acme-rs", "hcp.read hcp.write");
    let [v1, mcp] = w.both("save", &t);
    assert_eq!(v1.0, 200, "{v1:?}");
    assert_ne!(mcp.0, 401, "{mcp:?}");
    let reader = w.token("acme-rs", "hcp.read");
    assert_eq!(w.both("save", &reader)[0].0, 403);
    let out_dir = w.h.t.join("export");
    let out = w.h.run(&["store", "export", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let exported = out_dir.join("issuers.json");
    let rows: Value = serde_json::from_str(&std::fs::read_to_string(&exported).unwrap()).unwrap();
    assert_eq!(rows[0]["issuer"], json!(w.issuer), "{rows}");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&exported).unwrap().permissions().mode() & 0o777, 0o600);
}
