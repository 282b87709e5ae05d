//! What the egress proxy adds to one HTTPS request, measured side by side in one run (issue #36: at most 1 ms
//! added per request). Each request of the first three cases opens a new TCP connection, makes a full TLS
//! handshake (no resumption) and reads a small response from a loopback HTTPS origin:
//! - direct: straight to the origin;
//! - blind tunnel: through the proxy (CONNECT, policy, pinned resolution, SNI check, splice);
//! - terminated: through a proxy with host-bound credentials (a call CA mints the leaf the client sees, the
//!   request's head is rewritten by `Secrets`, and the proxy makes its own verified TLS connection to the origin).
//!
//! Then eight requests on one kept-alive connection, direct and terminated: the cost per request once the
//! handshakes are paid. Criterion measures each; then an interleaved run prints each case's p50 and what the
//! proxy adds over direct.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use hcpx_egress::{placeholder, CallCa, Limits, Policy, Proxy, ProxyHandle, Rule, Secret, Secrets, Slot};
use hyper::body::Body as _;
use hyper_util::rt::TokioIo;
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_rustls::{TlsAcceptor, TlsConnector};

const VALUE: &str = "real-value-0123456789";
/// Requests per kept-alive connection.
const KEPT: usize = 8;

struct Bench {
    rt: Runtime,
    /// Trusts the test CA (the origin's).
    connector: TlsConnector,
    /// Trusts the call CA alone (the terminating proxy's leaves).
    call_connector: TlsConnector,
    origin: SocketAddr,
    blind: ProxyHandle,
    terminating: ProxyHandle,
    token: String,
}

fn setup() -> Bench {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pki = support::pki();
    // The terminating proxy verifies the origin against the process's roots, read once from SSL_CERT_FILE.
    let file = std::env::temp_dir().join(format!("hcpx-egress-bench-{}.pem", std::process::id()));
    std::fs::write(&file, &pki.ca_pem).unwrap();
    std::env::set_var("SSL_CERT_FILE", &file);
    assert!(!hcpx_egress::upstream::roots().is_empty(), "the test CA is read");
    std::fs::remove_file(&file).unwrap();
    let token = placeholder().unwrap();
    let ca = Arc::new(CallCa::new().unwrap());
    let (origin, blind, terminating) = rt.block_on(async {
        let origin = origin(pki.acceptor.clone()).await;
        let rule = format!("https://api.test:{}", origin.port());
        let policy = || {
            Policy::new(vec![rule.parse::<Rule>().unwrap()])
                .with_host("api.test", vec![IpAddr::from([127, 0, 0, 1])])
                .allow_internal("api.test")
        };
        let blind = Proxy::start(policy(), Limits::default(), |_| {}).await.unwrap();
        let secrets = Secrets::new(vec![Secret {
            field: "token".into(),
            placeholder: token.clone(),
            value: VALUE.into(),
            rule: rule.parse().unwrap(),
            slot: Slot::Header("authorization".into()),
        }]);
        let terminating =
            Proxy::start_terminating(policy(), Limits::default(), secrets, Some(ca.clone()), |_| {})
                .await
                .unwrap();
        (origin, blind, terminating)
    });
    Bench {
        rt,
        connector: pki.connector,
        call_connector: call_client(&ca),
        origin,
        blind,
        terminating,
        token,
    }
}

/// A TLS client that trusts the call's CA alone and never resumes a session.
fn call_client(ca: &CallCa) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap()).unwrap();
    let mut config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.resumption = Resumption::disabled();
    TlsConnector::from(Arc::new(config))
}

/// A loopback HTTPS origin (hyper, HTTP/1.1, kept alive) answering every request with a 14-byte body.
async fn origin(acceptor: TlsAcceptor) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service =
                    hyper::service::service_fn(|req: hyper::Request<hyper::body::Incoming>| async move {
                        let told = req
                            .headers()
                            .get("authorization")
                            .is_some_and(|v| v == "Bearer real-value-0123456789");
                        let body = if told { "hello over tls" } else { "no credential" };
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(body.to_string()))
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

/// How a request reaches the origin.
#[derive(Clone, Copy)]
enum Path {
    Direct,
    Blind,
    Terminated,
}

/// A TLS connection to `api.test` the given way, ready for HTTP/1.1.
async fn connect(b: &Bench, path: Path) -> tokio_rustls::client::TlsStream<TcpStream> {
    let target = format!("api.test:{}", b.origin.port());
    let (tcp, connector) = match path {
        Path::Direct => {
            let tcp = TcpStream::connect(b.origin).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            (tcp, &b.connector)
        }
        Path::Blind | Path::Terminated => {
            let (proxy, connector) = match path {
                Path::Blind => (&b.blind, &b.connector),
                _ => (&b.terminating, &b.call_connector),
            };
            let (tcp, head) = support::connect_via(proxy.addr(), &target).await;
            assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
            (tcp, connector)
        }
    };
    connector.connect(ServerName::try_from("api.test").unwrap(), tcp).await.unwrap()
}

/// `n` GETs on one new connection made the given way, each checked; the credential is the real value where the
/// client holds it, the placeholder where the terminating proxy puts the value in.
async fn requests(b: &Bench, path: Path, n: usize) {
    let tls = connect(b, path).await;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    let conn = tokio::spawn(conn);
    let credential = match path {
        Path::Terminated => b.token.as_str(),
        _ => VALUE,
    };
    for _ in 0..n {
        let req = hyper::Request::get("/")
            .header("host", format!("api.test:{}", b.origin.port()))
            .header("authorization", format!("Bearer {credential}"))
            .body(String::new())
            .unwrap();
        send.ready().await.unwrap();
        let resp = send.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        let mut got = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| std::pin::Pin::new(&mut body).poll_frame(cx)).await
        {
            if let Ok(data) = frame.unwrap().into_data() {
                got.extend_from_slice(&data);
            }
        }
        assert_eq!(got, b"hello over tls");
    }
    drop(send);
    let _ = conn.await;
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let b = setup();
    let mut c = Criterion::default().configure_from_args().sample_size(50);
    let mut group = c.benchmark_group("https_request");
    group.bench_function("direct", |it| it.iter(|| b.rt.block_on(requests(&b, Path::Direct, 1))));
    group.bench_function("via_proxy", |it| it.iter(|| b.rt.block_on(requests(&b, Path::Blind, 1))));
    group.bench_function("terminated", |it| it.iter(|| b.rt.block_on(requests(&b, Path::Terminated, 1))));
    group.bench_function("direct_8_kept_alive", |it| {
        it.iter(|| b.rt.block_on(requests(&b, Path::Direct, KEPT)))
    });
    group.bench_function("terminated_8_kept_alive", |it| {
        it.iter(|| b.rt.block_on(requests(&b, Path::Terminated, KEPT)))
    });
    group.finish();
    c.final_summary();
    // The p50s from one interleaved run, so every case sees the same machine load; only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = 300;
    let cases = [
        (Path::Direct, 1),
        (Path::Blind, 1),
        (Path::Terminated, 1),
        (Path::Direct, KEPT),
        (Path::Terminated, KEPT),
    ];
    let mut times: Vec<Vec<Duration>> = cases.iter().map(|_| Vec::with_capacity(n)).collect();
    for _ in 0..n {
        for (i, &(path, k)) in cases.iter().enumerate() {
            let t = Instant::now();
            b.rt.block_on(requests(&b, path, k));
            times[i].push(t.elapsed());
        }
    }
    let p: Vec<Duration> = times.into_iter().map(p50).collect();
    println!("https request p50 over {n} interleaved rounds, a new connection and full handshake each:");
    println!("  direct {:.0} us", us(p[0]));
    for (name, i) in [("blind tunnel", 1), ("terminated", 2)] {
        println!(
            "  {name} {:.0} us, added {:.0} us, ratio {:.2}",
            us(p[i]),
            us(p[i]) - us(p[0]),
            us(p[i]) / us(p[0])
        );
    }
    let per = |d: Duration| us(d) / KEPT as f64;
    println!(
        "{KEPT} requests on one kept-alive connection: direct {:.0} us ({:.0} us a request), terminated {:.0} us \
         ({:.0} us a request), added {:.0} us a request beyond the first",
        us(p[3]),
        per(p[3]),
        us(p[4]),
        per(p[4]),
        ((us(p[4]) - us(p[2])) - (us(p[3]) - us(p[0]))) / (KEPT - 1) as f64
    );
}
