//! The proxy with host-bound credentials, end to end with real parts: HTTPS tunnels terminated with a call CA
//! (the client trusts that CA alone; the proxy trusts the test CA through this process's `SSL_CERT_FILE`), each
//! request's head rewritten by `Secrets` and reported as one event, several requests on one tunnel, and the plain
//! HTTP path rewritten the same way.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

mod support;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use hcpx_egress::{
    placeholder, CallCa, Limits, Policy, Proxy, ProxyHandle, RefusalKind, Scheme, Secret, Secrets, Slot,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use support::{connect_via, events, raw, Events, Pki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const VALUE: &str = "real-value-0123456789";

/// One test CA for the whole process, trusted through `SSL_CERT_FILE` before the proxy first reads its roots.
fn shared_pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let pki = support::pki();
        let file = std::env::temp_dir().join(format!("hcpx-egress-terminate-{}.pem", std::process::id()));
        std::fs::write(&file, &pki.ca_pem).unwrap();
        std::env::set_var("SSL_CERT_FILE", &file);
        pki
    })
}

struct World {
    tls: SocketAddr,
    web: SocketAddr,
    proxy: ProxyHandle,
    events: Events,
    ca: Arc<CallCa>,
    token: String,
}

async fn world() -> World {
    let tls = echo_origin().await;
    let web = plain_origin().await;
    let lo = vec![IpAddr::from([127, 0, 0, 1])];
    let policy = Policy::new(vec![
        format!("https://api.test:{}", tls.port()).parse().unwrap(),
        format!("https://other.test:{}", tls.port()).parse().unwrap(),
        format!("http://web.test:{}", web.port()).parse().unwrap(),
    ])
    .with_host("api.test", lo.clone())
    .with_host("other.test", lo.clone())
    .with_host("web.test", lo)
    .allow_internal("api.test")
    .allow_internal("other.test")
    .allow_internal("web.test");
    let token = placeholder().unwrap();
    let secret = |rule: String| Secret {
        field: "token".into(),
        placeholder: token.clone(),
        value: VALUE.into(),
        rule: rule.parse().unwrap(),
        slot: Slot::Header("authorization".into()),
    };
    let secrets = Secrets::new(vec![
        secret(format!("https://api.test:{}", tls.port())),
        secret(format!("http://web.test:{}", web.port())),
    ]);
    let ca = Arc::new(CallCa::new().unwrap());
    let (sink, events) = events();
    let proxy =
        Proxy::start_terminating(policy, Limits::default(), secrets, Some(ca.clone()), sink).await.unwrap();
    World { tls, web, proxy, events, ca, token }
}

/// A TLS client that trusts the call's CA alone.
fn client(ca: &CallCa) -> tokio_rustls::TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap()).unwrap();
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// Reads one response with a Content-Length body; its head and body.
async fn response<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> (String, String) {
    let head = support::read_head(s).await;
    let len = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|n| n.trim().parse::<usize>().unwrap())
        })
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.unwrap();
    (head, String::from_utf8(body).unwrap())
}

#[tokio::test]
async fn several_requests_on_one_terminated_tunnel_each_get_the_value_and_an_event() {
    let mut w = world().await;
    let target = format!("api.test:{}", w.tls.port());
    let (tcp, answer) = connect_via(w.proxy.addr(), &target).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut tls = client(&w.ca).connect(ServerName::try_from("api.test").unwrap(), tcp).await.unwrap();
    // The origin closes after each answer: the second request goes over a new origin connection, same tunnel.
    for _ in 0..2 {
        let req =
            format!("GET /close HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {}\r\n\r\n", w.token);
        tls.write_all(req.as_bytes()).await.unwrap();
        let (head, echoed) = response(&mut tls).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(echoed.contains("authorization: Bearer [the value]"), "{echoed}");
        assert!(!echoed.contains("hcpx-ph-"), "{echoed}");
    }
    // A placeholder in another header of the same tunnel: refused inside it, the tunnel stays usable.
    let req = format!("GET /echo HTTP/1.1\r\nHost: {target}\r\nX-Leak: {}\r\n\r\n", w.token);
    tls.write_all(req.as_bytes()).await.unwrap();
    let (head, body) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(body.starts_with("egress placeholder: ") && !body.contains(VALUE), "{body}");
    drop(tls);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = w.events.next().await;
        seen.push((e.method.clone(), e.status, e.refused.map(|r| r.kind), e.scheme));
    }
    assert_eq!(
        seen,
        vec![
            ("GET".to_string(), Some(200), None, Some(Scheme::Https)),
            ("GET".to_string(), Some(200), None, Some(Scheme::Https)),
            ("GET".to_string(), Some(403), Some(RefusalKind::Placeholder), Some(Scheme::Https)),
        ]
    );
    // No event for the tunnel itself: its requests were the events.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(w.events.try_next(), None);
}

#[tokio::test]
async fn a_tunnel_to_a_host_without_a_rule_for_the_placeholder_refuses_it() {
    let mut w = world().await;
    let target = format!("other.test:{}", w.tls.port());
    let (tcp, _) = connect_via(w.proxy.addr(), &target).await;
    let mut tls = client(&w.ca).connect(ServerName::try_from("other.test").unwrap(), tcp).await.unwrap();
    let req = format!("GET /echo HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {}\r\n\r\n", w.token);
    tls.write_all(req.as_bytes()).await.unwrap();
    let (head, body) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 403") && body.contains("other.test"), "{head}{body}");
    let e = w.events.next().await;
    assert_eq!((e.host.as_str(), e.refused.map(|r| r.kind)), ("other.test", Some(RefusalKind::Placeholder)));
    // A request whose host header names another host than the tunnel's is refused too.
    let req = "GET /echo HTTP/1.1\r\nHost: api.test\r\n\r\n";
    tls.write_all(req.as_bytes()).await.unwrap();
    let (head, _) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
}

#[tokio::test]
async fn a_plain_http_request_is_rewritten_by_the_same_rules() {
    let mut w = world().await;
    let port = w.web.port();
    let request = format!(
        "GET http://web.test:{port}/echo HTTP/1.1\r\nHost: web.test:{port}\r\nAuthorization: Bearer {}\r\n\r\n",
        w.token
    );
    let answer = String::from_utf8(raw(w.proxy.addr(), &request).await).unwrap();
    assert!(answer.contains("Authorization: Bearer [the value]"), "{answer}");
    assert_eq!(w.events.next().await.status, Some(200));
    let request =
        format!("GET http://web.test:{port}/echo?t={} HTTP/1.1\r\nHost: web.test:{port}\r\n\r\n", w.token);
    let answer = String::from_utf8(raw(w.proxy.addr(), &request).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("egress placeholder"), "{answer}");
    assert_eq!(w.events.next().await.refused.map(|r| r.kind), Some(RefusalKind::Placeholder));
    // A placeholder in a plain request's body: refused before anything reaches the origin.
    let request = format!(
        "POST http://web.test:{port}/echo HTTP/1.1\r\nHost: web.test:{port}\r\nContent-Length: {}\r\n\r\n{}",
        w.token.len(),
        w.token
    );
    let answer = String::from_utf8(raw(w.proxy.addr(), &request).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 403") && answer.contains("in the body"), "{answer}");
    assert_eq!(w.events.next().await.refused.map(|r| r.kind), Some(RefusalKind::Placeholder));
}

/// What an origin says back about a request: the value masked (`[the value]`), unless the path asks for the raw
/// echo (`/raw…`), which an echoing origin would send.
fn told(path: &str, text: String) -> String {
    if path.starts_with("/raw") {
        text
    } else {
        text.replace(VALUE, "[the value]")
    }
}

/// An HTTPS origin (hyper) that answers each request with its method, path, the headers it got and its body,
/// keeping the connection open (`/close`: closing it after the answer; `/header-echo`: the value in a header).
async fn echo_origin() -> SocketAddr {
    use hyper::body::Body as _;
    let acceptor = shared_pki().acceptor.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service =
                    hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                        let (parts, mut body) = req.into_parts();
                        let mut got = Vec::new();
                        while let Some(frame) =
                            std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
                        {
                            if let Ok(data) = frame.unwrap().into_data() {
                                got.extend_from_slice(&data);
                            }
                        }
                        let mut text = format!("{} {}\n", parts.method, parts.uri);
                        for (k, v) in &parts.headers {
                            text.push_str(&format!("{k}: {}\n", v.to_str().unwrap()));
                        }
                        text.push_str(&format!("body {}", String::from_utf8_lossy(&got)));
                        let path = parts.uri.path();
                        let mut resp = hyper::Response::new(told(path, text));
                        if path == "/close" {
                            resp.headers_mut().insert("connection", "close".parse().unwrap());
                        }
                        if path == "/header-echo" {
                            resp.headers_mut().insert("x-echo", VALUE.parse().unwrap());
                        }
                        Ok::<_, std::convert::Infallible>(resp)
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

/// A plain HTTP origin answering each request with its head (masked as `told` says), then closing.
async fn plain_origin() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else { continue };
            tokio::spawn(async move {
                let head = support::read_head(&mut tcp).await;
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let body = told(&path, head);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tcp.write_all(reply.as_bytes()).await;
                let _ = tcp.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn request_bodies_are_relayed_chunked_or_by_length_on_one_tunnel() {
    let origin = echo_origin().await;
    let lo = vec![IpAddr::from([127, 0, 0, 1])];
    let policy = Policy::new(vec![format!("https://api.test:{}", origin.port()).parse().unwrap()])
        .with_host("api.test", lo)
        .allow_internal("api.test");
    let token = placeholder().unwrap();
    let secrets = Secrets::new(vec![Secret {
        field: "token".into(),
        placeholder: token.clone(),
        value: VALUE.into(),
        rule: format!("https://api.test:{}", origin.port()).parse().unwrap(),
        slot: Slot::Header("authorization".into()),
    }]);
    let ca = Arc::new(CallCa::new().unwrap());
    let (sink, mut events) = events();
    let proxy =
        Proxy::start_terminating(policy, Limits::default(), secrets, Some(ca.clone()), sink).await.unwrap();
    let target = format!("api.test:{}", origin.port());
    let (tcp, _) = connect_via(proxy.addr(), &target).await;
    let mut tls = client(&ca).connect(ServerName::try_from("api.test").unwrap(), tcp).await.unwrap();
    let chunked = format!(
        "POST /a HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    );
    tls.write_all(chunked.as_bytes()).await.unwrap();
    let (head, echoed) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(echoed.starts_with("POST /a\n") && echoed.ends_with("body hello world"), "{echoed}");
    assert!(echoed.contains("authorization: Bearer [the value]"), "{echoed}");
    let sized = format!("PUT /b HTTP/1.1\r\nHost: {target}\r\nContent-Length: 3\r\n\r\nabc");
    tls.write_all(sized.as_bytes()).await.unwrap();
    let (_, echoed) = response(&mut tls).await;
    assert!(echoed.starts_with("PUT /b\n") && echoed.ends_with("body abc"), "{echoed}");
    assert!(echoed.contains("content-length: 3"), "{echoed}");
    // A body that carries the placeholder is refused before its head leaves.
    let leak =
        format!("POST /c HTTP/1.1\r\nHost: {target}\r\nContent-Length: {}\r\n\r\n{token}", token.len());
    tls.write_all(leak.as_bytes()).await.unwrap();
    let (head, body) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 403") && body.contains("in the body"), "{head}{body}");
    let kinds: Vec<_> = [events.next().await, events.next().await, events.next().await]
        .into_iter()
        .map(|e| (e.method, e.status, e.refused.map(|r| r.kind), e.bytes_up > 0))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("POST".to_string(), Some(200), None, true),
            ("PUT".to_string(), Some(200), None, true),
            ("POST".to_string(), Some(403), Some(RefusalKind::Placeholder), true),
        ]
    );
}

#[tokio::test]
async fn an_origin_that_echoes_the_value_has_its_response_cut() {
    let mut w = world().await;
    let target = format!("api.test:{}", w.tls.port());
    let (tcp, _) = connect_via(w.proxy.addr(), &target).await;
    let mut tls = client(&w.ca).connect(ServerName::try_from("api.test").unwrap(), tcp).await.unwrap();
    // In a header: the response is replaced by the proxy's refusal.
    let req =
        format!("GET /header-echo HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {}\r\n\r\n", w.token);
    tls.write_all(req.as_bytes()).await.unwrap();
    let (head, body) = response(&mut tls).await;
    assert!(head.starts_with("HTTP/1.1 502") && !head.contains(VALUE), "{head}");
    assert!(body.starts_with("egress credential_echo: ") && body.contains("binding field token"), "{body}");
    let e = w.events.next().await;
    assert_eq!(e.refused.map(|r| r.kind), Some(RefusalKind::CredentialEcho));
    // In the body: cut before the bytes that hold it.
    let req = format!("GET /raw HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {}\r\n\r\n", w.token);
    tls.write_all(req.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), tls.read_to_end(&mut got)).await;
    let got = String::from_utf8_lossy(&got);
    assert!(!got.contains(VALUE) && !got.contains(&VALUE[..VALUE.len() - 1]), "{got}");
    let e = w.events.next().await;
    assert_eq!(e.refused.map(|r| r.kind), Some(RefusalKind::CredentialEcho));
    // The plain path too.
    let port = w.web.port();
    let request = format!(
        "GET http://web.test:{port}/raw HTTP/1.1\r\nHost: web.test:{port}\r\nAuthorization: Bearer {}\r\n\r\n",
        w.token
    );
    let answer = String::from_utf8_lossy(&raw(w.proxy.addr(), &request).await).into_owned();
    assert!(!answer.contains(VALUE) && !answer.contains(&VALUE[..VALUE.len() - 1]), "{answer}");
    assert_eq!(w.events.next().await.refused.map(|r| r.kind), Some(RefusalKind::CredentialEcho));
}
