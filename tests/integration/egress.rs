//! A wrap's hosts through the call's egress proxy (issue #36 points 3 and 4, docs/security.md Hosts,
//! docs/egress.md), through the real `hcpx`: a plain HTTP server and an HTTPS server whose certificate a test CA
//! made at test time listen on loopback in this process; `sandbox.json` `egress` maps names like `api.test` to
//! 127.0.0.1 (and `meta.test` to the cloud metadata address) and marks some internal; the pack's bin is a
//! python3 script that tries each way out and prints what it got. Allowed requests go through the proxy; a
//! connection that ignores it, UDP, raw sockets, TCP Fast Open, another host, port or tenant's host, an IP
//! literal and a name whose address is not allowed reach nothing, and the servers count what reached them.
//! Every request the proxy saw, allowed or refused, is an audit row of the call (#36 point 6), on both stores,
//! and `/metrics` counts them.

use serde_json::{json, Value};
use std::sync::atomic::Ordering;

use crate::egress_server::{servers, Servers};
use crate::escape::{evil_with, home_if, layer};
use crate::helpers::Home;

/// What the connect supervisor answers a connect to anything but the proxy.
const ECONNREFUSED: i32 = 111;

/// The bin: tries each way out and prints one JSON object of what each got.
fn script(s: &Servers) -> String {
    let (tls, web) = (s.tls, s.web);
    format!(
        r#"#!/usr/bin/python3
import json, os, socket, ssl, urllib.error, urllib.request
here = os.path.dirname(os.path.realpath(__file__))
ctx = ssl.create_default_context(cafile=os.path.join(here, "..", "ca.pem"))
def get(url):
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
            return "ok " + r.read().decode()
    except urllib.error.HTTPError as e:
        return "refused %d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "refused " + repr(e)
def sock(family, kind, addr, fastopen=False):
    try:
        s = socket.socket(family, kind)
    except OSError as e:
        return "no socket %d" % e.errno
    s.settimeout(5)
    try:
        if fastopen:
            s.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, addr)
            return "sent"
        if kind == socket.SOCK_DGRAM:
            s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", addr)
            return "sent"
        s.connect(addr)
        return "connected"
    except OSError as e:
        return "refused %d" % e.errno
def listen():
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.listen(1)
        return "listening on %d" % s.getsockname()[1]
    except OSError as e:
        return "refused %d" % e.errno
out = {{
    "listen": listen(),
    "proxy": os.environ.get("HTTPS_PROXY", "") + " " + os.environ.get("http_proxy", "") + " " + str("NO_PROXY" in os.environ or "no_proxy" in os.environ),
    "https": get("https://api.test:{tls}/"),
    "http": get("http://web.test:{web}/"),
    "direct": sock(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {tls})),
    "direct6": sock(socket.AF_INET6, socket.SOCK_STREAM, ("::1", {tls})),
    "dns_tcp": sock(socket.AF_INET, socket.SOCK_STREAM, ("8.8.8.8", 53)),
    "udp": sock(socket.AF_INET, socket.SOCK_DGRAM, ("8.8.8.8", 53)),
    "udp6": sock(socket.AF_INET6, socket.SOCK_DGRAM, ("2001:4860:4860::8888", 53)),
    "raw": sock(socket.AF_INET, socket.SOCK_RAW, ("127.0.0.1", 0)),
    "fastopen": sock(socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", {tls}), fastopen=True),
    "not_allowed": get("https://other.test:{tls}/"),
    "other_port": get("https://api.test:{web}/"),
    "ip_literal": get("https://127.0.0.1:{tls}/"),
    "not_internal": get("https://private.test:{tls}/"),
    "metadata": get("https://meta.test:{tls}/"),
    "http_other_host": get("http://api.test:{web}/"),
}}
print(json.dumps(out))
"#
    )
}

/// `hcpx ARGS --json` in `h`, asserting it succeeded.
fn ok(h: &Home, args: &[&str]) {
    let out = h.run(&[args, &["--json"]].concat());
    assert_eq!(out.status.code(), Some(0), "hcpx {args:?}: {}", String::from_utf8_lossy(&out.stdout));
}

/// Installs `evil` with the script and hosts (api.test and private.test and meta.test on the TLS port,
/// web.test on the plain port over http, other.test on the TLS port), the CA in the pack; `allow`: whether the
/// operator allows them (all but other.test for every tenant, web.test for tenant `local` only, other.test for
/// tenant `acme` only), with the egress map in `sandbox.json`. `op`: `go`'s operation, `read` or `write`.
pub(crate) fn setup(h: &Home, s: &Servers, allow: bool) {
    setup_op(h, s, allow, "read");
}

fn setup_op(h: &Home, s: &Servers, allow: bool, op: &str) {
    let hosts = [
        format!("api.test:{}", s.tls),
        format!("private.test:{}", s.tls),
        format!("meta.test:{}", s.tls),
        format!("other.test:{}", s.tls),
        format!("http://web.test:{}", s.web),
    ];
    let (py, ca) = (script(s), s.ca_pem.clone());
    evil_with(h, "", op, "none", |f| {
        f.surface["hosts"] = json!(hosts);
        f.files = vec![("bin/evil".into(), py, true), ("ca.pem".into(), ca, false)];
    });
    if !allow {
        return;
    }
    ok(h, &["allow-host", "evil", &hosts[0], &hosts[1], &hosts[2]]);
    ok(h, &["allow-host", "evil", &hosts[4], "--tenant", "local"]);
    ok(h, &["principal", "add", "alice", "--tenant", "acme"]);
    ok(h, &["allow-host", "evil", &hosts[3], "--tenant", "acme"]);
    // Merged into what the operator allowed, on either store.
    let cfg = json!({ "egress": {
        "hosts": {
            "api.test": ["127.0.0.1"],
            "web.test": ["127.0.0.1"],
            "other.test": ["127.0.0.1"],
            "private.test": ["127.0.0.1"],
            "meta.test": ["169.254.169.254"]
        },
        "internal": ["api.test", "web.test", "other.test", "meta.test"]
    }});
    h.write_store("sandbox.json", &cfg.to_string());
}

/// Runs `evil go`; what each try got.
fn tries(h: &Home) -> Value {
    let out = h.run(&["exec", "evil", "go", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["result"].is_object(), "{v}");
    v["result"].clone()
}

fn got<'a>(r: &'a Value, what: &str) -> &'a str {
    r[what].as_str().unwrap_or_else(|| panic!("no {what}: {r}"))
}

#[test]
fn an_allowed_host_is_reached_through_the_proxy_over_https_and_plain_http() {
    let Some(h) = home_if("seccomp") else { return };
    let s = servers();
    setup(&h, &s, true);
    let r = tries(&h);
    let proxy = got(&r, "proxy");
    assert!(proxy.starts_with("http://127.0.0.1:") && proxy.ends_with(" False"), "proxy variables: {r}");
    assert_eq!(got(&r, "https"), "ok hello over tls", "{r}");
    assert_eq!(got(&r, "http"), format!("ok hello plain, host web.test:{}", s.web), "{r}");
    // Exactly the allowed requests reached the servers: one each.
    assert_eq!(s.tls_hits.load(Ordering::SeqCst), 1, "{r}");
    assert_eq!(s.web_hits.load(Ordering::SeqCst), 1, "{r}");
}

#[test]
fn a_wrap_that_ignores_the_proxy_or_leaves_its_hosts_reaches_nothing() {
    let Some(h) = home_if("seccomp") else { return };
    let s = servers();
    setup(&h, &s, true);
    let r = tries(&h);
    let (eperm, refused) = ("no socket 1", format!("refused {ECONNREFUSED}"));
    // The kernel layers: a connect to anything but the proxy is refused by hcpx's supervisor; UDP and raw
    // sockets cannot be made; TCP Fast Open (a connect without `connect`) is refused.
    for what in ["direct", "direct6", "dns_tcp"] {
        assert_eq!(got(&r, what), refused, "{what}: {r}");
    }
    for what in ["udp", "udp6", "raw"] {
        assert_eq!(got(&r, what), eperm, "{what}: {r}");
    }
    assert_eq!(got(&r, "fastopen"), "refused 1", "{r}");
    // Nothing listens for connections from outside either (`listen` would bind a port of its own).
    assert_eq!(got(&r, "listen"), "refused 1", "{r}");
    // The proxy: another tenant's host, another port, an IP literal, a name mapped to loopback but not
    // internal, a name mapped to the metadata address (internal or not), a plain request to an https host.
    for (what, kind) in [
        ("not_allowed", "not_allowed"),
        ("other_port", "not_allowed"),
        ("ip_literal", "ip_literal"),
        ("not_internal", "private_address"),
        ("metadata", "private_address"),
    ] {
        let g = got(&r, what);
        assert!(g.starts_with("refused") && g.contains("403"), "{what} ({kind}): {r}");
    }
    let g = got(&r, "http_other_host");
    assert!(g.starts_with("refused 403") && g.contains("egress not_allowed"), "{r}");
    // Only the two allowed requests reached a server.
    assert_eq!(s.tls_hits.load(Ordering::SeqCst), 1, "{r}");
    assert_eq!(s.web_hits.load(Ordering::SeqCst), 1, "{r}");
}

#[test]
fn hosts_declared_but_not_allowed_give_no_network_and_no_proxy() {
    let Some(h) = home_if("seccomp") else { return };
    let s = servers();
    setup(&h, &s, false);
    let r = tries(&h);
    assert_eq!(got(&r, "proxy"), "  False", "no proxy variables: {r}");
    for what in ["direct", "direct6", "dns_tcp", "udp", "raw", "fastopen"] {
        assert_eq!(got(&r, what), "no socket 1", "{what}: {r}");
    }
    for what in ["https", "http", "not_allowed"] {
        assert!(got(&r, what).starts_with("refused"), "{what}: {r}");
    }
    assert_eq!((s.tls_hits.load(Ordering::SeqCst), s.web_hits.load(Ordering::SeqCst)), (0, 0), "{r}");
    // No proxy, so no request lines.
    assert!(rows(&h).iter().all(|r| r.get("egress").is_none()), "{}", h.audit_log());
}

#[test]
fn a_served_call_reaches_its_own_tenants_hosts_through_its_own_proxy() {
    let Some(h) = home_if("seccomp") else { return };
    let s = servers();
    setup(&h, &s, true);
    let bob = crate::serve::principal(&h, "bob", "acme", crate::serve::ALL, false);
    let server = crate::serve::Server::start(&h, &[]);
    let (status, v) = server.post("/v1/exec/evil/go", &bob, &json!({}));
    assert_eq!(status, 200, "{v}");
    let r = &v["result"];
    // Tenant acme: the pack-wide host and acme's own (other.test), not tenant local's (web.test).
    assert_eq!(got(r, "https"), "ok hello over tls", "{v}");
    assert_eq!(got(r, "not_allowed"), "ok hello over tls", "acme's own host: {v}");
    let web = got(r, "http");
    assert!(web.starts_with("refused 403") && web.contains("egress not_allowed"), "{v}");
    assert_eq!(got(r, "direct"), format!("refused {ECONNREFUSED}"), "{v}");
    assert_eq!((s.tls_hits.load(Ordering::SeqCst), s.web_hits.load(Ordering::SeqCst)), (2, 0), "{v}");
}

/// Both stores where seccomp is enforced: the file store's home, or a PostgreSQL store's.
fn home_on(postgres: bool) -> Option<Home> {
    if !postgres {
        return home_if("seccomp");
    }
    (layer("seccomp") && !crate::pg::unavailable()).then(Home::postgres)
}

/// The audit rows, oldest first.
fn rows(h: &Home) -> Vec<Value> {
    h.audit_log().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn class(r: &Value) -> &str {
    r["egress"]["refused"].as_str().unwrap_or("allowed")
}

/// `hcpx audit verify --json` (the file store's one chain, or a tenant's on PostgreSQL): it holds, with `lines`
/// lines: the tenant's rows on PostgreSQL, every row in the file store.
fn verified(h: &Home, postgres: bool, tenant: &str, all: &[Value]) {
    let (args, lines) = if postgres {
        (
            vec!["audit", "verify", "--tenant", tenant, "--json"],
            all.iter().filter(|r| r["tenant"] == tenant).count(),
        )
    } else {
        (vec!["audit", "verify", "--json"], all.len())
    };
    let out = h.run(&args);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((out.status.code(), v["lines"].as_u64()), (Some(0), Some(lines as u64)), "{v}");
}

/// The 8 rows of `tries` in a home where `local` has web.test: what each records.
fn assert_the_requests(s: &Servers, egress: &[Value]) {
    let all = format!("{egress:#?}");
    assert_eq!(egress.len(), 8, "{all}");
    let mut classes: Vec<&str> = egress.iter().map(class).collect();
    classes.sort_unstable();
    let want = ["allowed", "allowed", "ip_literal", "not_allowed", "not_allowed", "not_allowed"];
    assert_eq!(classes, [&want[..], &["private_address", "private_address"]].concat(), "{all}");
    let find = |host: &str, port: u16| {
        egress
            .iter()
            .find(|r| r["egress"]["host"] == host && r["egress"]["port"] == port)
            .unwrap_or_else(|| panic!("no row for {host}:{port}: {all}"))
    };
    let e = &find("api.test", s.tls)["egress"];
    assert_eq!(
        (e["method"].as_str(), e["status"].as_u64(), e["scheme"].as_str()),
        (Some("CONNECT"), Some(200), Some("https"))
    );
    assert_eq!(e["rule"], format!("https://api.test:{}", s.tls), "{e}");
    assert!(e["bytes_up"].as_u64() > Some(0) && e["bytes_down"].as_u64() > Some(0), "{e}");
    assert!(e.get("refused").is_none(), "{e}");
    let e = &find("web.test", s.web)["egress"];
    assert_eq!(
        (e["method"].as_str(), e["status"].as_u64(), e["scheme"].as_str()),
        (Some("GET"), Some(200), Some("http"))
    );
    assert_eq!(e["rule"], format!("http://web.test:{}", s.web), "{e}");
    // Allowed by a rule, refused after: both, so the row says by what rule and why not.
    let e = &find("private.test", s.tls)["egress"];
    assert_eq!((e["refused"].as_str(), e["status"].as_u64()), (Some("private_address"), Some(403)), "{e}");
    assert_eq!(e["rule"], format!("https://private.test:{}", s.tls), "{e}");
    assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{e}");
    let e = &find("other.test", s.tls)["egress"];
    assert_eq!((e["refused"].as_str(), e.get("rule")), (Some("not_allowed"), None), "{e}");
    let digest = &egress[0]["args_sha256"];
    assert!(digest.as_str().is_some_and(|d| d.len() == 64), "{all}");
    for r in egress {
        assert_eq!((r["pack_id"].as_str(), r["verb_key"].as_str()), (Some("evil"), Some("go")), "{r}");
        assert_eq!(r["ok"], class(r) == "allowed", "{r}");
        assert_eq!(&r["args_sha256"], digest, "{r}");
    }
}

fn every_request_of_a_read_is_an_audit_row(postgres: bool) {
    let Some(h) = home_on(postgres) else { return };
    let s = servers();
    setup(&h, &s, true);
    let before = rows(&h).len();
    let r = tries(&h);
    assert_eq!(got(&r, "https"), "ok hello over tls", "{r}");
    let all = rows(&h);
    let new = &all[before..];
    // Direct, UDP and raw tries never reach the proxy; the read itself is no line.
    assert!(new.iter().all(|r| r["egress"].is_object()), "{new:#?}");
    assert_the_requests(&s, new);
    // The CLI's Principal is the user who runs it (`local` as root in CI, the unprivileged user's name there).
    let who = new[0]["principal"].as_str().unwrap_or_default().to_string();
    assert!(!who.is_empty(), "{new:#?}");
    for r in new {
        assert_eq!((r["tenant"].as_str(), r["invoker"].as_str()), (Some("local"), Some("cli")), "{r}");
        assert_eq!(
            (r["principal"].as_str(), r["operation"].as_str()),
            (Some(who.as_str()), Some("read")),
            "{r}"
        );
    }
    verified(&h, postgres, "local", &all);
    let listed = |pack: &str| {
        let out = h.run(&["audit", "--pack", pack, "--egress", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["records"].as_array().unwrap().len()
    };
    assert_eq!((listed("evil"), listed("other")), (8, 0));
    let text = String::from_utf8_lossy(&h.run(&["audit", "--egress"]).stdout).into_owned();
    assert!(
        text.contains(&format!(
            "evil.go  egress CONNECT https://api.test:{0} 200 allowed by https://api.test:{0}",
            s.tls
        )),
        "{text}"
    );
    assert!(text.contains("https://other.test:") && text.contains(" 403 not_allowed ("), "{text}");
}

#[test]
fn every_request_of_a_read_is_an_audit_row_and_the_read_is_not() {
    every_request_of_a_read_is_an_audit_row(false);
}

#[test]
fn every_request_of_a_read_is_an_audit_row_and_the_read_is_not_postgres() {
    every_request_of_a_read_is_an_audit_row(true);
}

fn a_writes_requests_come_first(postgres: bool) {
    let Some(h) = home_on(postgres) else { return };
    let s = servers();
    setup_op(&h, &s, true, "write");
    let before = rows(&h).len();
    tries(&h);
    let all = rows(&h);
    let new = &all[before..];
    assert_eq!(new.len(), 9, "{new:#?}");
    assert_the_requests(&s, &new[..8]);
    let last = &new[8];
    assert!(last.get("egress").is_none(), "{last}");
    assert_eq!((last["operation"].as_str(), &last["ok"]), (Some("write"), &json!(true)), "{last}");
    assert!(new.iter().all(|r| r["args_sha256"] == last["args_sha256"]), "{new:#?}");
    verified(&h, postgres, "local", &all);
}

#[test]
fn a_writes_requests_come_before_its_own_line() {
    a_writes_requests_come_first(false);
}

#[test]
fn a_writes_requests_come_before_its_own_line_postgres() {
    a_writes_requests_come_first(true);
}

/// One sample of the exposition (0 when the series is absent).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

fn a_served_calls_requests_are_counted(postgres: bool) {
    let Some(h) = home_on(postgres) else { return };
    let s = servers();
    setup(&h, &s, true);
    let bob = crate::serve::principal(&h, "bob", "acme", crate::serve::ALL, false);
    let ops = crate::serve::principal(&h, "ops", "local", &[], true);
    let server = crate::serve::Server::start(&h, &[]);
    let scrape = || {
        let (st, _, text) = crate::serve::request_raw(&server.addr, "GET", "/metrics", Some(&ops), None, &[]);
        assert_eq!(st, 200, "{text}");
        text
    };
    let before = scrape();
    let (status, v) = server.post("/v1/exec/evil/go", &bob, &json!({}));
    assert_eq!(status, 200, "{v}");
    let after = scrape();
    let series = |scheme: &str, class: &str| {
        format!("hcp_egress_requests_total{{pack=\"evil\",scheme=\"{scheme}\",class=\"{class}\"}}")
    };
    for (scheme, class, more) in [
        ("https", "allowed", 2.0),
        ("http", "not_allowed", 2.0),
        ("https", "not_allowed", 1.0),
        ("https", "ip_literal", 1.0),
        ("https", "private_address", 2.0),
    ] {
        let k = series(scheme, class);
        assert_eq!(sample(&after, &k) - sample(&before, &k), more, "{k}:\n{after}");
    }
    assert!(sample(&after, "hcp_egress_bytes_total{pack=\"evil\",direction=\"down\"}") > 0.0, "{after}");

    let (status, v) = server.get("/v1/audit", &bob);
    assert_eq!(status, 200, "{v}");
    let records = v["records"].as_array().unwrap_or_else(|| panic!("{v}"));
    let egress: Vec<&Value> = records.iter().filter(|r| r["egress"].is_object()).collect();
    assert_eq!(egress.len(), 8, "{v}");
    for r in egress {
        assert_eq!((r["tenant"].as_str(), r["principal"].as_str()), (Some("acme"), Some("bob")), "{r}");
        assert_eq!(r["invoker"], "http", "{r}");
    }
    verified(&h, postgres, "acme", &rows(&h));
}

#[test]
fn a_served_calls_requests_are_its_tenants_rows_and_counted() {
    a_served_calls_requests_are_counted(false);
}

#[test]
fn a_served_calls_requests_are_its_tenants_rows_and_counted_postgres() {
    a_served_calls_requests_are_counted(true);
}
