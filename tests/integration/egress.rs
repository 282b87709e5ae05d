//! A wrap's hosts through the call's egress proxy (issue #36 points 3 and 4, docs/security.md Hosts,
//! docs/egress.md), through the real `hcpx`: a plain HTTP server and an HTTPS server whose certificate a test CA
//! made at test time listen on loopback in this process; `sandbox.json` `egress` maps names like `api.test` to
//! 127.0.0.1 (and `meta.test` to the cloud metadata address) and marks some internal; the pack's bin is a
//! python3 script that tries each way out and prints what it got. Allowed requests go through the proxy; a
//! connection that ignores it, UDP, raw sockets, TCP Fast Open, another host, port or tenant's host, an IP
//! literal and a name whose address is not allowed reach nothing, and the servers count what reached them.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::escape::{evil_with, go, home_if};
use crate::helpers::Home;

/// What the connect supervisor answers a connect to anything but the proxy.
const ECONNREFUSED: i32 = 111;

/// The two servers and what reached them.
struct Servers {
    tls: u16,
    web: u16,
    tls_hits: Arc<AtomicUsize>,
    web_hits: Arc<AtomicUsize>,
    ca_pem: String,
}

/// Reads up to the end of an HTTP head (or EOF, or a few seconds).
fn read_head(s: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn answer(s: &mut impl Write, body: &str) {
    let _ = write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = s.flush();
}

/// Serves every connection of `l` on its own thread with `serve`, counting them in `hits`.
fn serve_each(l: TcpListener, hits: Arc<AtomicUsize>, serve: impl Fn(TcpStream) + Send + Sync + 'static) {
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            hits.fetch_add(1, Ordering::SeqCst);
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let serve = serve.clone();
            std::thread::spawn(move || serve(conn));
        }
    });
}

fn servers() -> Servers {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    // Names of their own: OpenSSL takes a leaf whose subject is its issuer's for a self-signed certificate.
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "hcpx egress test ca");
    ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf =
        rcgen::CertificateParams::new(vec!["api.test".to_string(), "other.test".to_string()]).unwrap();
    leaf.distinguished_name.push(rcgen::DnType::CommonName, "api.test");
    let leaf = leaf.signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let config =
        rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), CertificateDer::from(ca_cert.der().to_vec())], key)
            .unwrap();
    let config = Arc::new(config);
    let tls = TcpListener::bind("127.0.0.1:0").unwrap();
    let web = TcpListener::bind("127.0.0.1:0").unwrap();
    let s = Servers {
        tls: tls.local_addr().unwrap().port(),
        web: web.local_addr().unwrap().port(),
        tls_hits: Arc::new(AtomicUsize::new(0)),
        web_hits: Arc::new(AtomicUsize::new(0)),
        ca_pem: ca_cert.pem(),
    };
    serve_each(tls, s.tls_hits.clone(), move |tcp| {
        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { return };
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        if read_head(&mut stream).starts_with("GET / ") {
            answer(&mut stream, "hello over tls");
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    });
    serve_each(web, s.web_hits.clone(), |mut tcp| {
        let head = read_head(&mut tcp);
        let host = head.lines().find_map(|l| l.strip_prefix("Host: ")).unwrap_or("").to_string();
        answer(&mut tcp, &format!("hello plain, host {host}"));
    });
    s
}

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
/// tenant `acme` only), with the egress map in `sandbox.json`.
fn setup(h: &Home, s: &Servers, allow: bool) {
    let hosts = [
        format!("api.test:{}", s.tls),
        format!("private.test:{}", s.tls),
        format!("meta.test:{}", s.tls),
        format!("other.test:{}", s.tls),
        format!("http://web.test:{}", s.web),
    ];
    let (py, ca) = (script(s), s.ca_pem.clone());
    evil_with(h, "", "read", "none", |f| {
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
    let path = h.store().join("sandbox.json");
    let mut cfg: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    cfg["egress"] = json!({
        "hosts": {
            "api.test": ["127.0.0.1"],
            "web.test": ["127.0.0.1"],
            "other.test": ["127.0.0.1"],
            "private.test": ["127.0.0.1"],
            "meta.test": ["169.254.169.254"]
        },
        "internal": ["api.test", "web.test", "other.test", "meta.test"]
    });
    h.write_store("sandbox.json", &cfg.to_string());
}

/// Runs `evil go`; what each try got.
fn tries(h: &Home) -> Value {
    let v = go(h);
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
