//! `hcpx serve`'s operations endpoints driven over loopback as a load balancer and a scraper drive them:
//! `/healthz` follows the store, `/readyz` turns 503 while a SIGTERM drains the server, and `/metrics` is for
//! operator tokens only and counts the calls that were made, through every face.

use serde_json::json;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::helpers::{probe_fixture, Home, TestDir};
use crate::serve::{on_both_stores, principal, request, request_raw, Server};

/// The store kind a Home's server should report.
fn kind(h: &Home) -> &'static str {
    if h.store_env.is_empty() {
        "files"
    } else {
        "postgres"
    }
}

/// Polls `path` without a token until it answers `status` (at most 10 s); the last answer.
fn until(s: &Server, path: &str, status: u16) -> (u16, serde_json::Value) {
    let start = Instant::now();
    loop {
        let (st, _, v) = request(&s.addr, "GET", path, None, None);
        if st == status || start.elapsed() > Duration::from_secs(10) {
            return (st, v);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the one exposition line that starts with `series` (labels included), or 0 when absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.trim().parse().unwrap_or_else(|_| panic!("{series}: {v:?} is no number")))
}

on_both_stores! {
    fn healthz_and_readyz_answer_without_a_token_and_follow_the_store / healthz_and_readyz_answer_without_a_token_and_follow_the_store_postgres (h) {
        h.install(&probe_fixture(&h.marker), "probe");
        let s = Server::start(&h, &[]);
        let (st, v) = until(&s, "/healthz", 200);
        assert_eq!((st, v), (200, json!({ "ok": true, "store": kind(&h) })));
        let (st, v) = until(&s, "/readyz", 200);
        assert_eq!((st, v), (200, json!({ "ok": true, "store": kind(&h) })));
        if kind(&h) == "files" {
            // A store that cannot be read: both answer 503 with the reason, and recover with it.
            let state = h.store().join("state.json");
            let good = std::fs::read(&state).unwrap();
            std::fs::write(&state, b"{not json").unwrap();
            for path in ["/healthz", "/readyz"] {
                let (st, v) = until(&s, path, 503);
                assert_eq!((st, v["ok"].as_bool()), (503, Some(false)), "{path}: {v}");
                assert!(v["error"].as_str().unwrap().contains("state.json"), "{path}: {v}");
            }
            std::fs::write(&state, good).unwrap();
            assert_eq!(until(&s, "/readyz", 200).0, 200);
        }
    }
}

on_both_stores! {
    fn readyz_turns_503_while_a_sigterm_drains_the_server_then_it_stops / readyz_turns_503_while_a_sigterm_drains_the_server_then_it_stops_postgres (h) {
        h.install(&probe_fixture(&h.marker), "probe");
        let alice = principal(&h, "alice", "acme", &["verb.exec.read:*"], false);
        let mut s = Server::start(&h, &["--drain-ms", "3000"]);
        assert_eq!(until(&s, "/readyz", 200).0, 200);
        s.signal(libc::SIGTERM);
        let (st, v) = until(&s, "/readyz", 503);
        assert_eq!(st, 503, "{v}");
        assert!(v["error"].as_str().unwrap().contains("shutting down"), "{v}");
        // Draining, it still serves: the balancer's last calls are answered, not cut.
        let (st, v) = s.post("/v1/exec/probe/look", &alice, &json!({}));
        assert_eq!(st, 200, "{v}");
        assert_eq!(request(&s.addr, "GET", "/healthz", None, None).0, 200);
        // Then it stops on its own, exiting 0.
        assert_eq!(s.terminate(), Some(0), "{}", s.log());
        assert!(std::net::TcpStream::connect(&s.addr).is_err(), "still listening after the drain");
    }
}

on_both_stores! {
    fn metrics_are_for_operators_and_count_reads_and_denied_writes / metrics_are_for_operators_and_count_reads_and_denied_writes_postgres (h) {
        h.install(&probe_fixture(&h.marker), "probe");
        let alice = principal(&h, "alice", "acme", &["verb.exec.read:*", "verb.exec.write:*"], false);
        let ops = principal(&h, "ops", "acme", &[], true);
        let s = Server::start(&h, &[]);

        // No token, a wrong one: 401. A Principal that is no operator: 403 naming the fix.
        for token in [None, Some("not-a-token")] {
            let (st, head, _) = request_raw(&s.addr, "GET", "/metrics", token, None, &[]);
            assert_eq!(st, 401, "{token:?}");
            assert!(head.contains("www-authenticate: bearer"), "{head}");
        }
        let (st, v) = s.get("/metrics", &alice);
        assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
        assert!(v["error"].as_str().unwrap().contains("--operator"), "{v}");

        let scrape = || {
            let (st, head, text) = request_raw(&s.addr, "GET", "/metrics", Some(&ops), None, &[]);
            assert_eq!(st, 200, "{text}");
            assert!(head.contains("content-type: text/plain; version=0.0.4"), "{head}");
            text
        };
        let read = "hcp_calls_total{tenant=\"acme\",invoker=\"http\",pack=\"probe\",verb=\"look\",code=\"ok\"}";
        let denied_write =
            "hcp_calls_total{tenant=\"acme\",invoker=\"http\",pack=\"probe\",verb=\"put\",code=\"confirm_required\"}";
        let denials = "hcp_denials_total{tenant=\"acme\",code=\"confirm_required\"}";
        let count = "hcp_call_duration_seconds_count{tenant=\"acme\"}";
        let before = scrape();
        assert_eq!((sample(&before, read), sample(&before, denied_write)), (0.0, 0.0), "{before}");
        assert!(before.contains("# TYPE hcp_call_duration_seconds histogram"), "{before}");

        // A read, and a write the confirm gate refuses.
        let (st, v) = s.post("/v1/exec/probe/look", &alice, &json!({}));
        assert_eq!(st, 200, "{v}");
        let (st, v) = s.post("/v1/exec/probe/put", &alice, &json!({}));
        assert_eq!((st, v["code"].as_str()), (428, Some("confirm_required")), "{v}");

        let after = scrape();
        assert_eq!(sample(&after, read), 1.0, "{after}");
        assert_eq!(sample(&after, denied_write), 1.0, "{after}");
        assert_eq!(sample(&after, denials) - sample(&before, denials), 1.0, "{after}");
        assert_eq!(sample(&after, count) - sample(&before, count), 2.0, "{after}");
        let inf = "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"+Inf\"}";
        assert_eq!(sample(&after, inf), sample(&after, count), "{after}");
        assert_eq!(sample(&after, "hcp_calls_in_flight"), 0.0, "{after}");
        // The file store has no pool; a PostgreSQL store reports its own.
        assert_eq!(after.contains("hcp_store_pool_max"), kind(&h) == "postgres", "{after}");
        // An unknown pack is counted without its made-up name becoming a series.
        let (st, _) = s.post("/v1/exec/made-up-pack/x", &alice, &json!({}));
        assert_eq!(st, 404);
        let last = scrape();
        assert!(!last.contains("made-up-pack"), "{last}");
        assert_eq!(sample(&last, "hcp_denials_total{tenant=\"acme\",code=\"unknown_pack\"}"), 1.0, "{last}");
    }
}

/// A client that connects and sends half a request head, then stalls (slowloris), is dropped after
/// `--header-timeout-ms` (#34.9); while it stalls, and after, other clients are served.
#[test]
fn a_client_stalling_in_its_request_head_is_dropped_after_the_bound() {
    use std::io::{Read, Write};
    let h = Home::new();
    let s = Server::start(&h, &["--header-timeout-ms", "700"]);
    let mut stalled = Vec::new();
    for head in ["", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "] {
        let mut c = std::net::TcpStream::connect(&s.addr).unwrap();
        c.write_all(head.as_bytes()).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
        stalled.push((head, c, Instant::now()));
    }
    assert_eq!(request(&s.addr, "GET", "/healthz", None, None).0, 200, "served while others stall");
    for (head, mut c, began) in stalled {
        let mut buf = [0u8; 512];
        let r = c.read(&mut buf);
        let waited = began.elapsed();
        // Dropped: the connection ends (perhaps after a 408), rather than the read timing out.
        match r {
            Ok(n) => assert!(
                n == 0 || String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 408"),
                "{head:?}: {}",
                String::from_utf8_lossy(&buf[..n])
            ),
            Err(e) => assert_eq!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset,
                "{head:?}: held after {waited:?}: {e}"
            ),
        }
        assert!(waited < Duration::from_secs(5), "{head:?}: dropped only after {waited:?}");
    }
    assert_eq!(request(&s.addr, "GET", "/healthz", None, None).0, 200);
}

/// `hcpx-serve` run by hand takes the flags of `hcpx serve`, parsed by the same type: clap's usage errors, the
/// store named by `--store` chosen as `HCP_STORE` would be, and a descriptor of flags it cannot read refused.
#[test]
fn hcpx_serve_run_directly_takes_the_same_flags_as_hcpx_serve() {
    let t = TestDir::new();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hcpx-serve"))
            .args(args)
            .env("HCP_HOME", t.path().join("hcp-home"))
            .env_remove("HCP_STORE")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(&["--max-calls", "many"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("invalid value 'many' for '--max-calls <MAX_CALLS>'"), "{err}");

    let out = run(&["--listen", "127.0.0.1:0", "--store", "mysql://db"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--store is \"mysql://db\"; set it to a postgres://"), "{err}");

    for fd in ["0", "9"] {
        let out = run(&["--args-fd", fd]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("cannot read the flags `hcpx serve` handed over on descriptor {fd}")),
            "{err}"
        );
    }
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).to_string();
    assert!(help.contains("--header-timeout-ms") && help.contains("--store <URL>"), "{help}");
}
