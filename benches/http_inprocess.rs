//! The in-process side of `benches/http.sh`: the same calls `hcpx serve` answers, made on a store the script
//! prepared, straight through `Runtime` — sequentially (per-call latency) and from concurrent tasks on a tokio
//! runtime (throughput), so the script can put the server's numbers beside them from one run.
//!
//! Env: HTTP_BENCH_HOME (the store), HTTP_BENCH_N (calls), HTTP_BENCH_C (concurrent tasks); HTTP_BENCH_ONLY (a
//! word: only the calls whose label starts with it). Without the first three it says so and exits (so
//! `cargo bench` over every bench passes it by).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hcpx_model::grants::Grants;
use hcpx_model::{Envelope, Invoker, Principal};
use hcpx_runtime::{CallContext, Runtime};
use hcpx_store::Store;

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn main() {
    let (Ok(home), Ok(n), Ok(c)) =
        (std::env::var("HTTP_BENCH_HOME"), std::env::var("HTTP_BENCH_N"), std::env::var("HTTP_BENCH_C"))
    else {
        eprintln!(
            "http_inprocess: run by benches/http.sh (HTTP_BENCH_HOME, HTTP_BENCH_N, HTTP_BENCH_C unset)"
        );
        return;
    };
    let (n, c): (usize, usize) = (n.parse().unwrap(), c.parse().unwrap());
    let rt = Arc::new(Runtime::new(Store::open(home.as_ref()).unwrap()));
    // As `hcpx serve` does: emptied wrap TMPDIRs are reused, and removed at the end.
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(true);
    // The server's Principal for the same calls: tenant `bench`, through the HTTP face.
    let principal =
        Principal { id: "bench".into(), tenant: "bench".into(), grants: Grants::All, invoker: Invoker::Http };
    let calls = [
        (
            "composite read",
            Envelope::new(
                "transit-composite",
                "plan",
                json!({ "from": "A", "to": "B" }).as_object().cloned().unwrap(),
            ),
        ),
        ("wrap read", Envelope::new("trivial", "ping", serde_json::Map::new())),
    ];
    let only = std::env::var("HTTP_BENCH_ONLY").unwrap_or_default();
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    for (label, env) in calls.iter().filter(|(label, _)| label.starts_with(only.as_str())) {
        let n = if label.starts_with("wrap") { n / 10 } else { n };
        for _ in 0..50 {
            assert!(rt.exec(&principal, env).ok);
        }
        // Sequential: each call's latency.
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            let t = Instant::now();
            let out = rt.exec(&principal, env);
            lat.push(t.elapsed());
            assert!(out.ok, "{out:?}");
        }
        lat.sort();
        // Sequential through exec_async on a multi-thread runtime: what one request of the server awaits.
        let mut alat = Vec::with_capacity(n);
        tokio.block_on(async {
            for _ in 0..n {
                let t = Instant::now();
                let out = rt.clone().exec_async(principal.clone(), env.clone(), CallContext::default()).await;
                alat.push(t.elapsed());
                assert!(out.ok);
            }
        });
        alat.sort();
        println!(
            "{{\"call\":\"{label}\",\"face\":\"in-process exec_async c=1\",\"n\":{n},\"p50_us\":{:.1},\"p99_us\":{:.1}}}",
            pct(&alat, 0.5),
            pct(&alat, 0.99)
        );
        // Concurrent: `c` tasks through exec_async, as the server's handlers call it.
        let started = Instant::now();
        tokio.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..c {
                let (rt, p, e) = (rt.clone(), principal.clone(), env.clone());
                let share = n / c + usize::from(i < n % c);
                tasks.push(tokio::spawn(async move {
                    for _ in 0..share {
                        let out = rt.clone().exec_async(p.clone(), e.clone(), CallContext::default()).await;
                        assert!(out.ok);
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        });
        let rps = n as f64 / started.elapsed().as_secs_f64();
        println!(
            "{{\"call\":\"{label}\",\"face\":\"in-process exec\",\"n\":{n},\"p50_us\":{:.1},\"p99_us\":{:.1},\"rps_c{c}\":{rps:.0}}}",
            pct(&lat, 0.5),
            pct(&lat, 0.99)
        );
    }
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(false);
}
