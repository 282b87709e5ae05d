//! What the egress proxy adds to one HTTPS request, measured side by side in one run: a new TCP connection, a
//! full TLS handshake (no resumption) and a small response, straight to a loopback TLS server, against the same
//! through the proxy (CONNECT, policy, pinned resolution, SNI check, splice). Criterion measures both; then an
//! interleaved run of single requests prints each p50 and the difference (the target is at most 1 ms added).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use criterion::Criterion;
use hcpx_egress::{Limits, Policy, Proxy, ProxyHandle, Rule};
use tokio::net::TcpStream;
use tokio::runtime::Runtime;
use tokio_rustls::TlsConnector;

struct Bench {
    rt: Runtime,
    connector: TlsConnector,
    server: SocketAddr,
    proxy: ProxyHandle,
}

fn setup() -> Bench {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let pki = support::pki();
    let (server, proxy) = rt.block_on(async {
        let server = support::tls_server(pki.acceptor.clone()).await;
        let rule: Rule = format!("https://api.test:{}", server.port()).parse().unwrap();
        let policy = Policy::new(vec![rule])
            .with_host("api.test", vec![IpAddr::from([127, 0, 0, 1])])
            .allow_internal("api.test");
        let proxy = Proxy::start(policy, Limits::default(), |_| {}).await.unwrap();
        (server, proxy)
    });
    Bench { rt, connector: pki.connector, server, proxy }
}

async fn direct(b: &Bench) {
    let tcp = TcpStream::connect(b.server).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let body = support::https_get(&b.connector, tcp, "api.test").await.unwrap();
    assert!(body.ends_with("hello over tls"));
}

async fn proxied(b: &Bench) {
    let (tcp, head) = support::connect_via(b.proxy.addr(), &format!("api.test:{}", b.server.port())).await;
    assert!(head.starts_with("HTTP/1.1 200 "));
    let body = support::https_get(&b.connector, tcp, "api.test").await.unwrap();
    assert!(body.ends_with("hello over tls"));
}

fn p50(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let b = setup();
    let mut c = Criterion::default().configure_from_args().sample_size(50);
    let mut group = c.benchmark_group("https_request");
    group.bench_function("direct", |it| it.iter(|| b.rt.block_on(direct(&b))));
    group.bench_function("via_proxy", |it| it.iter(|| b.rt.block_on(proxied(&b))));
    group.finish();
    c.final_summary();
    // The p50s from one interleaved run, so both see the same machine load; only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let n = 400;
    let (mut d, mut p) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let t = Instant::now();
        b.rt.block_on(direct(&b));
        d.push(t.elapsed());
        let t = Instant::now();
        b.rt.block_on(proxied(&b));
        p.push(t.elapsed());
    }
    let (d, p) = (p50(d), p50(p));
    let added = p.as_secs_f64() - d.as_secs_f64();
    println!(
        "https request p50 over {n} interleaved: direct {:.0} us, via proxy {:.0} us, added {:.0} us, ratio {:.2}",
        d.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6,
        added * 1e6,
        p.as_secs_f64() / d.as_secs_f64()
    );
}
