//! The proxy end to end with real parts: a TLS server whose certificate a test CA made at start, a plain HTTP
//! server, TLS clients that trust only that CA, names routed to 127.0.0.1 through the policy's fixed answers.
//! Each case checks what the client saw and the one event the request produced.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hcpx_egress::{EgressEvent, Limits, Policy, Proxy, ProxyHandle, RefusalKind, Rule, Scheme};
use support::{connect_via, events, http_server, https_get, pki, raw, tls_server, Events, Pki};
use tokio::io::AsyncWriteExt;

const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

struct World {
    pki: Pki,
    tls: SocketAddr,
    web: SocketAddr,
    proxy: ProxyHandle,
    events: Events,
}

fn rule(s: &str) -> Rule {
    s.parse().unwrap()
}

async fn world(limits: Limits) -> World {
    let pki = pki();
    let tls = tls_server(pki.acceptor.clone()).await;
    let web = http_server().await;
    let lo = vec![IpAddr::from(LOOPBACK)];
    let policy = Policy::new(vec![
        rule(&format!("https://api.test:{}", tls.port())),
        rule(&format!("https://local.test:{}", tls.port())),
        rule(&format!("http://web.test:{}", web.port())),
        rule("https://meta.test:443"),
    ])
    .with_host("api.test", lo.clone())
    .with_host("local.test", lo.clone())
    .with_host("web.test", lo)
    .with_host("meta.test", vec!["169.254.169.254".parse().unwrap()])
    .allow_internal("api.test")
    .allow_internal("web.test")
    .allow_internal("meta.test");
    let (sink, events) = events();
    let proxy = Proxy::start(policy, limits, sink).await.unwrap();
    World { pki, tls, web, proxy, events }
}

/// Sends `request` to the proxy; the answer's status line and body, and the request's one event.
async fn refused(w: &mut World, request: &str) -> (String, EgressEvent) {
    let answer = String::from_utf8(raw(w.proxy.addr(), request).await).unwrap();
    (answer, w.events.only().await)
}

fn assert_refused(answer: &str, event: &EgressEvent, status: u16, kind: RefusalKind) {
    assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{answer}");
    assert!(answer.contains(&format!("egress {kind}: ")), "{answer}");
    assert_eq!(event.status, Some(status), "{event:?}");
    assert_eq!(event.refused.as_ref().map(|r| r.kind), Some(kind), "{event:?}");
    assert_eq!((event.bytes_up, event.bytes_down), (0, 0), "nothing reached an origin: {event:?}");
}

#[tokio::test]
async fn an_allowed_https_request_goes_through_connect_with_a_verified_handshake() {
    let mut w = world(Limits::default()).await;
    let (tcp, head) = connect_via(w.proxy.addr(), &format!("api.test:{}", w.tls.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let response = https_get(&w.pki.connector, tcp, "api.test").await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK") && response.ends_with("hello over tls"), "{response}");
    let e = w.events.only().await;
    assert_eq!((e.host.as_str(), e.port, e.scheme), ("api.test", w.tls.port(), Some(Scheme::Https)));
    assert_eq!((e.method.as_str(), e.status, &e.refused), ("CONNECT", Some(200), &None));
    assert!(e.bytes_up > 200 && e.bytes_down > response.len() as u64, "{e:?}");
    assert_eq!(e.rule, Some(format!("https://api.test:{}", w.tls.port())));
}

#[tokio::test]
async fn an_allowed_plain_request_is_forwarded_in_origin_form() {
    let mut w = world(Limits::default()).await;
    let port = w.web.port();
    let request = format!(
        "GET http://web.test:{port}/echo HTTP/1.1\r\nHost: web.test:{port}\r\nProxy-Connection: keep-alive\r\n\r\n"
    );
    let answer = String::from_utf8(raw(w.proxy.addr(), &request).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    let (_, echoed) = answer.split_once("\r\n\r\n").unwrap();
    assert_eq!(echoed, format!("GET /echo HTTP/1.1\r\nHost: web.test:{port}\r\nConnection: close\r\n\r\n"));
    let e = w.events.only().await;
    assert_eq!((e.host.as_str(), e.scheme, e.method.as_str()), ("web.test", Some(Scheme::Http), "GET"));
    assert_eq!((e.status, e.refused, e.bytes_down), (Some(200), None, answer.len() as u64));
}

#[tokio::test]
async fn a_host_no_rule_names_is_refused() {
    let mut w = world(Limits::default()).await;
    let (answer, e) = refused(&mut w, "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n").await;
    assert_refused(&answer, &e, 403, RefusalKind::NotAllowed);
    assert!(answer.contains("no rule names host evil.test"), "{answer}");
    assert_eq!((e.host.as_str(), e.port, e.method.as_str()), ("evil.test", 443, "CONNECT"));
    assert_eq!(e.rule, None);
}

#[tokio::test]
async fn another_port_of_an_allowed_host_is_refused_naming_the_rule() {
    let mut w = world(Limits::default()).await;
    let (port, other) = (w.tls.port(), w.tls.port().wrapping_add(1).max(1));
    let (answer, e) = refused(&mut w, &format!("CONNECT api.test:{other} HTTP/1.1\r\n\r\n")).await;
    assert_refused(&answer, &e, 403, RefusalKind::NotAllowed);
    assert!(
        answer.contains(&format!("rule https://api.test:{port} allows port {port}, not {other}")),
        "{answer}"
    );
}

#[tokio::test]
async fn an_ip_literal_is_refused_on_connect_and_on_plain_http() {
    let mut w = world(Limits::default()).await;
    for target in [format!("127.0.0.1:{}", w.tls.port()), "[::1]:443".to_string()] {
        let (answer, e) = refused(&mut w, &format!("CONNECT {target} HTTP/1.1\r\n\r\n")).await;
        assert_refused(&answer, &e, 403, RefusalKind::IpLiteral);
    }
    let port = w.web.port();
    let request = format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let (answer, e) = refused(&mut w, &request).await;
    assert_refused(&answer, &e, 403, RefusalKind::IpLiteral);
    assert_eq!(e.scheme, Some(Scheme::Http));
}

#[tokio::test]
async fn a_clienthello_for_another_name_than_the_connect_host_is_cut() {
    let mut w = world(Limits::default()).await;
    let (tcp, head) = connect_via(w.proxy.addr(), &format!("api.test:{}", w.tls.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    // other.test is on the server's certificate too: only the proxy can make this handshake fail.
    let err = https_get(&w.pki.connector, tcp, "other.test").await.unwrap_err();
    let e = w.events.only().await;
    assert_eq!(e.refused.as_ref().map(|r| r.kind), Some(RefusalKind::SniMismatch), "{e:?} ({err})");
    assert!(e.refused.unwrap().reason.contains("names other.test, the connect target is api.test"));
    assert_eq!((e.bytes_up, e.bytes_down), (0, 0), "no byte of the hello reached the origin");
}

#[tokio::test]
async fn a_clienthello_with_no_server_name_is_cut() {
    let mut w = world(Limits::default()).await;
    let (tcp, head) = connect_via(w.proxy.addr(), &format!("api.test:{}", w.tls.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(https_get(&w.pki.no_sni, tcp, "api.test").await.is_err());
    let e = w.events.only().await;
    assert_eq!(e.refused.as_ref().map(|r| r.kind), Some(RefusalKind::SniMismatch), "{e:?}");
    assert!(e.refused.unwrap().reason.contains("names no server (sni)"));
    assert_eq!((e.bytes_up, e.bytes_down), (0, 0));
}

#[tokio::test]
async fn a_name_resolving_to_loopback_is_refused_unless_internal() {
    let mut w = world(Limits::default()).await;
    let request = format!("CONNECT local.test:{} HTTP/1.1\r\n\r\n", w.tls.port());
    let (answer, e) = refused(&mut w, &request).await;
    assert_refused(&answer, &e, 403, RefusalKind::PrivateAddress);
    assert!(answer.contains("local.test resolves to 127.0.0.1 (loopback)"), "{answer}");
}

#[tokio::test]
async fn a_name_mapped_to_the_metadata_address_is_refused_even_when_internal() {
    let mut w = world(Limits::default()).await;
    let (answer, e) = refused(&mut w, "CONNECT meta.test:443 HTTP/1.1\r\n\r\n").await;
    assert_refused(&answer, &e, 403, RefusalKind::PrivateAddress);
    assert!(answer.contains("169.254.169.254 (cloud metadata); no name may reach"), "{answer}");
}

#[tokio::test]
async fn an_origin_form_request_and_a_wrong_method_are_refused() {
    let mut w = world(Limits::default()).await;
    let (answer, e) = refused(&mut w, "GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_refused(&answer, &e, 400, RefusalKind::BadRequest);
    assert!(answer.contains("origin-form"), "{answer}");
    let (answer, e) = refused(&mut w, "GET api.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n").await;
    assert_refused(&answer, &e, 405, RefusalKind::BadRequest);
    let (answer, e) = refused(&mut w, "GET http://web.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n").await;
    assert_refused(&answer, &e, 403, RefusalKind::NotAllowed);
    let port = w.web.port();
    let (answer, e) =
        refused(&mut w, &format!("GET http://web.test:{port}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n")).await;
    assert_refused(&answer, &e, 400, RefusalKind::BadRequest);
    assert!(answer.contains("does not name the target"), "{answer}");
}

#[tokio::test]
async fn a_request_head_over_the_bound_is_refused() {
    let mut w = world(Limits { max_head: 1024, ..Limits::default() }).await;
    let padding = "x".repeat(2048);
    let (answer, e) =
        refused(&mut w, &format!("CONNECT api.test:443 HTTP/1.1\r\nX-Pad: {padding}\r\n\r\n")).await;
    assert_refused(&answer, &e, 431, RefusalKind::Limit);
}

#[tokio::test]
async fn a_response_bigger_than_the_byte_limit_is_cut_off() {
    let cap = 64 * 1024;
    let mut w = world(Limits { max_bytes_down: cap, ..Limits::default() }).await;
    let port = w.web.port();
    let request = format!("GET http://web.test:{port}/big HTTP/1.1\r\nHost: web.test:{port}\r\n\r\n");
    let answer = raw(w.proxy.addr(), &request).await;
    assert_eq!(answer.len() as u64, cap, "the client got exactly the limit");
    let e = w.events.only().await;
    assert_eq!(e.refused.as_ref().map(|r| r.kind), Some(RefusalKind::Limit), "{e:?}");
    assert_eq!((e.status, e.bytes_down), (Some(200), cap));
}

#[tokio::test]
async fn a_connection_past_the_limit_is_answered_503() {
    let mut w = world(Limits { max_connections: 1, ..Limits::default() }).await;
    let (tcp, head) = connect_via(w.proxy.addr(), &format!("api.test:{}", w.tls.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    let (answer, e) = refused(&mut w, "CONNECT api.test:443 HTTP/1.1\r\n\r\n").await;
    assert_refused(&answer, &e, 503, RefusalKind::Limit);
    drop(tcp);
    assert_eq!(w.events.only().await.refused.map(|r| r.kind), Some(RefusalKind::SniMismatch));
}

#[tokio::test]
async fn a_connection_past_its_deadline_is_cut() {
    let mut w = world(Limits { deadline: Duration::from_millis(300), ..Limits::default() }).await;
    let mut s = tokio::net::TcpStream::connect(w.proxy.addr()).await.unwrap();
    s.write_all(b"CONNECT api.test:").await.unwrap();
    let e = w.events.only().await;
    assert_eq!((e.status, e.refused.map(|r| r.kind)), (Some(408), Some(RefusalKind::Limit)));
}

#[tokio::test]
async fn stopping_the_proxy_reports_the_open_request() {
    let mut w = world(Limits::default()).await;
    let (_tcp, head) = connect_via(w.proxy.addr(), &format!("api.test:{}", w.tls.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    drop(w.proxy);
    let e = w.events.only().await;
    assert_eq!((e.status, e.refused.map(|r| r.kind)), (Some(200), Some(RefusalKind::Limit)));
}
