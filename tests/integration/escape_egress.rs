//! The wrap escapes of issue #36 that egress.rs does not try, through the real `hcpx` and a python3 client in
//! the call: a redirect the client follows to a host the call may not reach (another host, an IP literal, a
//! name resolving to loopback, the cloud metadata address), and a tunnel whose TLS ClientHello names another
//! host than its CONNECT, or none (docs/security.md, Hosts). The servers log every connection and every request
//! they serve, so each test fails if the proxy lets the escape through. The rebinding tests are in
//! escape_rebind.rs.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::escape::{evil_with, home_if};
use crate::helpers::Home;

/// What reached a server: `accept` per connection, then `SNI METHOD PATH` per request served (`-` for plain
/// HTTP, `none` for a ClientHello without a name).
pub(crate) type Log = Arc<Mutex<Vec<String>>>;

pub(crate) fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub(crate) fn entries(l: &Log) -> Vec<String> {
    l.lock().unwrap().clone()
}

/// Reads up to the end of an HTTP head (or EOF, or the read timeout).
fn read_head(s: &mut impl Read) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") && buf.len() < 8192 {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Answers `GET /302/URL` with a redirect to URL, anything else with 200 and `body`.
fn answer(s: &mut impl Write, head: &str, body: &str) {
    let path = head.split(' ').nth(1).unwrap_or("/");
    let _ = match path.strip_prefix("/302/") {
        Some(to) => write!(
            s,
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        None => {
            write!(s, "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
        }
    };
    let _ = s.flush();
}

/// Serves each connection of `l` on a thread of its own, logging it in `log`.
fn serve_each(l: TcpListener, log: Log, serve: impl Fn(TcpStream, Log) + Send + Sync + 'static) {
    let serve = Arc::new(serve);
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            log.lock().unwrap().push("accept".into());
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let (serve, log) = (serve.clone(), log.clone());
            std::thread::spawn(move || serve(conn, log));
        }
    });
}

/// A plain HTTP server on `l`: `- METHOD PATH` per request, answered `hello plain from ADDR`.
pub(crate) fn plain(l: TcpListener) -> Log {
    let (log, here) = (log(), l.local_addr().unwrap());
    serve_each(l, log.clone(), move |mut tcp, log| {
        let head = read_head(&mut tcp);
        let line: Vec<&str> = head.split(' ').take(2).collect();
        if line.len() == 2 {
            // What is not a request (a ClientHello) logged as a short printable line.
            let line: String = line
                .join(" ")
                .chars()
                .take(80)
                .map(|c| if c.is_ascii_graphic() || c == ' ' { c } else { '.' })
                .collect();
            log.lock().unwrap().push(format!("- {line}"));
            answer(&mut tcp, &head, &format!("hello plain from {here}"));
        }
    });
    log
}

/// A TLS server on `l` whose certificate (of a test CA made now, returned as PEM) names api.test, other.test
/// and private.test: `SNI METHOD PATH` per request, answered `hello over tls`.
pub(crate) fn tls(l: TcpListener) -> (Log, String) {
    let ca = crate::test_ca::test_ca("hcpx escape test ca");
    let config = ca.server(&["api.test", "other.test", "private.test"], true);
    let log = log();
    serve_each(l, log.clone(), move |tcp, log| {
        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { return };
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        let head = read_head(&mut stream);
        let line: Vec<&str> = head.split(' ').take(2).collect();
        if line.len() == 2 {
            let sni = stream.conn.server_name().unwrap_or("none").to_string();
            log.lock().unwrap().push(format!("{sni} {}", line.join(" ")));
            answer(&mut stream, &head, "hello over tls");
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    });
    (log, ca.pem)
}

/// The python3 helpers every client script starts with: `get(url)` (urllib through the proxy variables,
/// following redirects, trusting `ca.pem` beside the bin, or the system's roots when it is empty) and `tunnel(host, port, sni, path)` (a CONNECT by hand,
/// then TLS with server name `sni`, `None` for no name).
pub(crate) const CLIENT: &str = r#"#!/usr/bin/python3
import json, os, socket, ssl, urllib.error, urllib.parse, urllib.request
here = os.path.dirname(os.path.realpath(__file__))
ca = os.path.join(here, "..", "ca.pem")
ctx = ssl.create_default_context(cafile=ca) if os.path.getsize(ca) else ssl.create_default_context()
def get(url):
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
            return "ok %s %s" % (r.geturl(), r.read().decode())
    except urllib.error.HTTPError as e:
        return "refused %d %s" % (e.code, e.read().decode().strip())
    except Exception as e:
        return "refused " + repr(e)
def tunnel(host, port, sni, path):
    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    try:
        s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            b = s.recv(1)
            if not b:
                break
            head += b
        if not head.startswith(b"HTTP/1.1 200"):
            return "refused " + head.decode().split("\r\n")[0]
        c = ssl.create_default_context(cafile=ca)
        if sni is None:
            c.check_hostname = False
        t = c.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (path.encode(), host.encode()))
        data = b""
        while len(data) < 65536:
            b = t.recv(4096)
            if not b:
                break
            data += b
        return "ok " + data.decode().split("\r\n\r\n")[-1]
    except Exception as e:
        return "refused " + repr(e)
"#;

/// `hcpx ARGS --json` in `h`, asserting it succeeded.
pub(crate) fn ok(h: &Home, args: &[&str]) {
    let out = h.run(&[args, &["--json"]].concat());
    assert_eq!(out.status.code(), Some(0), "hcpx {args:?}: {}", String::from_utf8_lossy(&out.stdout));
}

/// Installs `evil` whose bin is `CLIENT` then `tries` (python printing one JSON object), with `ca` beside it,
/// declaring `hosts` and allowing `allowed` of them for every tenant.
pub(crate) fn install(h: &Home, tries: &str, ca: &str, hosts: &[String], allowed: &[String]) {
    let py = format!("{CLIENT}{tries}");
    evil_with(h, "", "read", "none", |f| {
        f.surface["hosts"] = json!(hosts);
        f.files = vec![("bin/evil".into(), py, true), ("ca.pem".into(), ca.to_string(), false)];
    });
    let mut args = vec!["allow-host", "evil"];
    args.extend(allowed.iter().map(String::as_str));
    ok(h, &args);
}

/// Runs `evil go`; what each try got.
pub(crate) fn tries(h: &Home) -> Value {
    let out = h.run(&["exec", "evil", "go", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["ok"], true, "{v}");
    assert!(v["result"].is_object(), "{v}");
    v["result"].clone()
}

pub(crate) fn got<'a>(r: &'a Value, what: &str) -> &'a str {
    r[what].as_str().unwrap_or_else(|| panic!("no {what}: {r}"))
}

/// The call's egress audit rows as `HOST:PORT KIND` (`allowed` when not refused), in the order they ended.
pub(crate) fn requests(h: &Home) -> Vec<String> {
    h.audit_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["egress"].is_object())
        .map(|r| {
            let e = &r["egress"];
            format!(
                "{}:{} {}",
                e["host"].as_str().unwrap_or(""),
                e["port"],
                e["refused"].as_str().unwrap_or("allowed")
            )
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort_unstable();
    v
}

/// The TLS and plain servers on loopback, `sandbox.json` mapping api.test, other.test, private.test and web.test
/// to 127.0.0.1 with all but private.test internal; the pack declares https api.test, other.test, private.test
/// on the TLS port and http web.test on the plain one, and the operator allows all but other.test.
fn world(h: &Home, tries: impl Fn(u16, u16) -> String) -> (Log, Log, u16, u16) {
    let (t, w) = (TcpListener::bind("127.0.0.1:0").unwrap(), TcpListener::bind("127.0.0.1:0").unwrap());
    let (tp, wp) = (t.local_addr().unwrap().port(), w.local_addr().unwrap().port());
    let ((tls_log, ca), web_log) = (tls(t), plain(w));
    let hosts = [
        format!("api.test:{tp}"),
        format!("private.test:{tp}"),
        format!("http://web.test:{wp}"),
        format!("other.test:{tp}"),
    ];
    install(h, &tries(tp, wp), &ca, &hosts, &hosts[..3]);
    let cfg = json!({ "egress": {
        "hosts": {
            "api.test": ["127.0.0.1"],
            "other.test": ["127.0.0.1"],
            "private.test": ["127.0.0.1"],
            "web.test": ["127.0.0.1"]
        },
        "internal": ["api.test", "other.test", "web.test"]
    }});
    h.write_store("sandbox.json", &cfg.to_string());
    (tls_log, web_log, tp, wp)
}

#[test]
fn a_redirect_the_client_follows_reaches_only_hosts_the_call_may_reach() {
    let Some(h) = home_if("seccomp") else { return };
    let (tls_log, web_log, tp, wp) = world(&h, |tp, wp| {
        let to = |from: &str, url: String| format!("get(\"{from}/302/{url}\")");
        let (a, w) = (format!("https://api.test:{tp}"), format!("http://web.test:{wp}"));
        format!(
            "print(json.dumps({{ \"same\": {}, \"denied\": {}, \"ip\": {}, \"private\": {}, \"http_denied\": {}, \"metadata\": {} }}))\n",
            to(&a, format!("https://api.test:{tp}/landed")),
            to(&a, format!("https://other.test:{tp}/landed")),
            to(&a, format!("https://127.0.0.1:{tp}/landed")),
            to(&a, format!("https://private.test:{tp}/landed")),
            to(&w, format!("http://other.test:{wp}/landed")),
            to(&w, "http://169.254.169.254/latest/meta-data/".to_string()),
        )
    });
    let r = tries(&h);
    // The client follows redirects: to an allowed host it lands.
    assert_eq!(got(&r, "same"), format!("ok https://api.test:{tp}/landed hello over tls"), "{r}");
    // To a host the call may not reach, an IP literal, a name resolving to loopback that is not internal, or the
    // metadata address, the followed request is refused at the proxy (a CONNECT's 403 is the tunnel's failure).
    for what in ["denied", "ip", "private"] {
        let g = got(&r, what);
        assert!(g.starts_with("refused") && g.contains("403"), "{what}: {r}");
    }
    assert!(got(&r, "http_denied").starts_with("refused 403 egress not_allowed"), "{r}");
    assert!(got(&r, "metadata").starts_with("refused 403 egress ip_literal"), "{r}");
    let want = |v: &[&str]| sorted(v.iter().map(|s| s.to_string()).collect());
    assert_eq!(
        sorted(requests(&h)),
        want(&[
            &format!("127.0.0.1:{tp} ip_literal"),
            "169.254.169.254:80 ip_literal",
            &format!("api.test:{tp} allowed"),
            &format!("api.test:{tp} allowed"),
            &format!("api.test:{tp} allowed"),
            &format!("api.test:{tp} allowed"),
            &format!("api.test:{tp} allowed"),
            &format!("other.test:{tp} not_allowed"),
            &format!("other.test:{wp} not_allowed"),
            &format!("private.test:{tp} private_address"),
            &format!("web.test:{wp} allowed"),
            &format!("web.test:{wp} allowed"),
        ]),
    );
    // Nothing the redirects pointed at but the allowed landing reached the servers.
    let tls_served: Vec<String> = entries(&tls_log).into_iter().filter(|e| e != "accept").collect();
    let landed: Vec<&String> = tls_served.iter().filter(|e| e.split(' ').nth(2) == Some("/landed")).collect();
    assert_eq!(landed, [&"api.test GET /landed".to_string()], "{tls_served:?}");
    assert_eq!(entries(&tls_log).iter().filter(|e| *e == "accept").count(), 5, "{:?}", entries(&tls_log));
    let web = entries(&web_log);
    assert_eq!(web.iter().filter(|e| *e == "accept").count(), 2, "{web:?}");
    assert!(web.iter().filter(|e| *e != "accept").all(|e| e.starts_with("- GET /302/")), "{web:?}");
}

#[test]
fn a_tunnel_whose_tls_names_another_host_or_none_reaches_no_origin() {
    let Some(h) = home_if("seccomp") else { return };
    let (tls_log, _, tp, _) = world(&h, |tp, _| {
        format!(
            "print(json.dumps({{ \"same\": tunnel(\"api.test\", {tp}, \"api.test\", \"/same\"), \"other\": tunnel(\"api.test\", {tp}, \"other.test\", \"/other\"), \"none\": tunnel(\"api.test\", {tp}, None, \"/none\") }}))\n"
        )
    });
    let r = tries(&h);
    assert_eq!(got(&r, "same"), "ok hello over tls", "{r}");
    // other.test is on the same address and in the server's certificate: only the proxy's check of the
    // ClientHello against the CONNECT host stops it (domain fronting), and a ClientHello without a name.
    for what in ["other", "none"] {
        assert!(got(&r, what).starts_with("refused"), "{what}: {r}");
    }
    assert_eq!(
        sorted(requests(&h)),
        [
            format!("api.test:{tp} allowed"),
            format!("api.test:{tp} sni_mismatch"),
            format!("api.test:{tp} sni_mismatch")
        ]
    );
    // The origin is connected before the tunnel's 200 (so three connections), but no byte of a refused
    // ClientHello reached it: one request was served, by its own name.
    let served: Vec<String> = entries(&tls_log).into_iter().filter(|e| e != "accept").collect();
    assert_eq!(served, ["api.test GET /same"], "{:?}", entries(&tls_log));
}
