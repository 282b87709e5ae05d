//! OpenTelemetry traces of served calls (issue #38 point 4, docs/hosting.md Traces), against a real OTLP/HTTP
//! receiver started by the test (tests/otlp/receiver.py: the official `opentelemetry-proto` definitions decode
//! every body) on loopback: a served composite call and a served wrap call with egress are a call span with a
//! child per pipeline step and a grandchild per outgoing request; a `traceparent` on /v1 and one in MCP `_meta`
//! become the call's parent; no argument value or credential is ever exported; tracing off sends nothing; a dead
//! collector neither fails nor slows a call; three replicas on one PostgreSQL export to one receiver, told apart by
//! their `service.instance.id`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::helpers::{repo, Home};
use crate::serve::{request_with, Server};

/// The receiver: a python3 process decoding OTLP with the official definitions; killed when dropped.
pub(crate) struct Receiver {
    child: Child,
    pub(crate) port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
}

/// Whether the official definitions are installed (scripts/setup.sh installs them); a failure under `CI=true`.
fn unavailable() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import opentelemetry.proto.collector.trace.v1.trace_service_pb2"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return false;
    }
    let why = "python3 cannot import opentelemetry.proto; run `bash scripts/setup.sh`";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    true
}

impl Receiver {
    pub(crate) fn start() -> Option<Receiver> {
        Receiver::start_with(&[])
    }

    /// The receiver with more arguments (`CERT KEY`: over HTTPS).
    fn start_with(args: &[&std::path::Path]) -> Option<Receiver> {
        if unavailable() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("spans.jsonl");
        let mut child = Command::new("python3")
            .arg(repo().join("tests/otlp/receiver.py"))
            .arg(&out)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let port = first.trim().parse().unwrap_or_else(|_| panic!("the receiver did not start: {first:?}"));
        Some(Receiver { child, port, out, _dir: dir })
    }

    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// Every body received so far, as it arrived.
    fn raw(&self) -> Vec<u8> {
        let mut raw = std::fs::read(self.out.with_extension("jsonl.raw")).unwrap_or_default();
        raw.extend(std::fs::read(self.out.with_extension("jsonl.headers")).unwrap_or_default());
        raw
    }

    /// The spans once `done` holds of them (at most 20 s).
    pub(crate) fn wait_for(&self, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(start.elapsed() < Duration::from_secs(20), "no {what} within 20 s: {spans:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The environment of a traced server exporting to `endpoint`, in batches at most 100 ms apart.
pub(crate) fn traced(endpoint: &str) -> Vec<(String, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), endpoint.into()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
    ]
}

/// `hcpx serve` over `h` with `env` (and the test CA trusted, when given).
fn serve(h: &Home, env: &[(String, String)], ca: Option<&PathBuf>) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .envs(h.store_env())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(h.t.path());
    if let Some(ca) = ca {
        cmd.env("SSL_CERT_FILE", ca);
    }
    Server::launch(cmd)
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

fn traceparent(span: &str) -> String {
    format!("00-{TRACE}-{span}-01")
}

/// `POST path` with `body` and extra headers → (status, JSON).
fn post(s: &Server, path: &str, token: &str, body: &Value, extra: &[(&str, &str)]) -> (u16, Value) {
    let (st, _, v) =
        request_with(&s.addr, "POST", path, Some(token), Some(body.to_string().as_bytes()), extra);
    (st, v)
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// The call of trace `trace` and its children, checked: one `hcp.call` (its parent `parent`), whose children are
/// `steps` in order, each inside it; returns (the call span, the run span, the egress spans).
fn call_tree<'a>(
    spans: &'a [Value],
    trace: &str,
    parent: &str,
    steps: &[&str],
) -> (&'a Value, Option<&'a Value>, Vec<&'a Value>) {
    let mine: Vec<&Value> = spans.iter().filter(|s| s["trace_id"] == trace).collect();
    let calls: Vec<&&Value> = mine.iter().filter(|s| s["name"] == "hcp.call").collect();
    assert_eq!(calls.len(), 1, "{mine:#?}");
    let call = *calls[0];
    assert_eq!(call["parent_span_id"], parent, "{call}");
    assert_eq!(call["kind"], 2, "a server span: {call}");
    let id = call["span_id"].as_str().unwrap();
    let mut children: Vec<&Value> = mine.iter().copied().filter(|s| s["parent_span_id"] == id).collect();
    children.sort_by_key(|s| s["start"].as_u64());
    let names: Vec<&str> = children.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, steps, "{mine:#?}");
    for c in &children {
        assert!(
            c["start"].as_u64() >= call["start"].as_u64() && c["end"].as_u64() <= call["end"].as_u64(),
            "{c}\n{call}"
        );
        assert!(c["start"].as_u64() <= c["end"].as_u64(), "{c}");
    }
    let run = children.iter().copied().find(|s| s["name"] == "hcp.run");
    let egress: Vec<&Value> = match run {
        Some(r) => mine.iter().copied().filter(|s| s["parent_span_id"] == r["span_id"]).collect(),
        None => Vec::new(),
    };
    // Every request span of the call is a child of its run.
    assert_eq!(egress.len(), mine.iter().filter(|s| s["name"] == "hcp.egress").count(), "{mine:#?}");
    (call, run, egress)
}

const STEPS: [&str; 6] = ["hcp.resolve", "hcp.check", "hcp.gate", "hcp.mint", "hcp.run", "hcp.audit"];

#[test]
fn a_served_composite_call_is_a_span_per_step_and_per_request_under_the_callers_span() {
    let Some(rx) = Receiver::start() else { return };
    let w = crate::composite_http::web(true);
    let bob = crate::serve::principal(&w.h, "bob", "acme", crate::serve::ALL, false);
    let server = serve(&w.h, &traced(&rx.endpoint()), Some(&w.ca));
    let tp = traceparent(PARENT);
    let url = format!("https://api.test:{}/", w.s.tls);
    let (st, v) = post(
        &server,
        "/v1/exec/test-http/fetch",
        &bob,
        &json!({ "url": url }),
        &[("traceparent", &tp), ("tracestate", "vendor=abc")],
    );
    assert_eq!((st, &v["result"]["body"]), (200, &json!("hello over tls")), "{v}");
    let spans = rx.wait_for("the call's spans", |s| {
        s.iter().any(|s| s["trace_id"] == TRACE && s["name"] == "hcp.audit")
    });
    // A read: step 7 is its result and the audit rows of its request.
    let (call, run, egress) = call_tree(&spans, TRACE, PARENT, &STEPS);
    for (k, want) in [
        ("hcp.pack", "test-http"),
        ("hcp.command", "fetch"),
        ("hcp.tenant", "acme"),
        ("hcp.invoker", "http"),
        ("hcp.code", "ok"),
    ] {
        assert_eq!(attr(call, k), want, "{k}: {call}");
    }
    assert!(attr(call, "hcp.duration_ms").is_i64() || attr(call, "hcp.duration_ms").is_u64(), "{call}");
    assert_eq!(call["status"]["code"], 0, "unset on ok: {call}");
    assert_eq!(call["trace_state"], "vendor=abc", "{call}");
    assert_eq!(call["resource"]["service.name"], "hcpx", "{call}");
    assert!(call["resource"]["service.instance.id"].as_str().is_some_and(|s| !s.is_empty()), "{call}");
    assert!(run.is_some());
    assert_eq!(egress.len(), 1, "{spans:#?}");
    let e = egress[0];
    assert_eq!(e["kind"], 3, "a client span: {e}");
    assert_eq!(
        (attr(e, "server.address"), attr(e, "server.port"), attr(e, "url.scheme")),
        (&json!("api.test"), &json!(w.s.tls), &json!("https")),
        "{e}"
    );
    assert_eq!(
        (attr(e, "hcp.egress.class"), attr(e, "http.response.status_code")),
        (&json!("allowed"), &json!(200))
    );

    // A request the policy refuses: its span says so, and the call's span is an error with its code.
    let tp2 = traceparent("1111111111111111");
    let other = format!("https://other.test:{}/", w.s.tls);
    let (st, v) =
        post(&server, "/v1/exec/test-http/fetch", &bob, &json!({ "url": other }), &[("traceparent", &tp2)]);
    assert_eq!((st, v["code"].as_str()), (502, Some("exit_nonzero")), "{v}");
    let spans = rx.wait_for("the refused call's spans", |s| {
        s.iter().any(|s| s["parent_span_id"] == "1111111111111111" && s["name"] == "hcp.call")
    });
    let mine: Vec<Value> = {
        let call = spans.iter().find(|s| s["parent_span_id"] == "1111111111111111").unwrap();
        let t = call["trace_id"].as_str().unwrap().to_string();
        let spans = rx.wait_for("its audit span", |s| {
            s.iter().any(|s| {
                s["trace_id"] == t.as_str()
                    && s["name"] == "hcp.audit"
                    && s["start"].as_u64() >= call["start"].as_u64()
            })
        });
        spans
            .into_iter()
            .filter(|s| s["trace_id"] == t.as_str() && s["start"].as_u64() >= call["start"].as_u64())
            .collect()
    };
    let (call, run, egress) = call_tree(&mine, TRACE, "1111111111111111", &STEPS);
    assert_eq!(
        (call["status"]["code"].as_u64(), call["status"]["message"].as_str()),
        (Some(2), Some("exit_nonzero")),
        "{call}"
    );
    assert_eq!(attr(call, "hcp.code"), "exit_nonzero");
    assert_eq!(run.unwrap()["status"]["code"], 2, "{run:?}");
    assert_eq!(egress.len(), 1, "{mine:#?}");
    assert_eq!(attr(egress[0], "hcp.egress.class"), "not_allowed", "{}", egress[0]);
    assert_eq!(egress[0]["status"]["code"], 2, "{}", egress[0]);

    // The collector is the operator's: a pack's code cannot reach it (an IP literal, loopback, in no policy).
    let collector = format!("http://127.0.0.1:{}/v1/traces", rx.port);
    let (_, v) =
        post(&server, "/v1/exec/test-http/fetch", &bob, &json!({ "url": collector, "method": "POST" }), &[]);
    assert_eq!(v["ok"], false, "{v}");
    rx.wait_for("the refused fetch's spans", |s| {
        s.iter().any(|s| s["name"] == "hcp.egress" && s["attributes"]["hcp.egress.class"] == "ip_literal")
    });
    let headers = std::fs::read_to_string(rx.out.with_extension("jsonl.headers")).unwrap();
    for line in headers.lines() {
        let h: Value = serde_json::from_str(line).unwrap();
        assert!(
            h["headers"]["User-Agent"].as_str().is_some_and(|a| a.starts_with("hcpx/")),
            "not hcpx's export: {h}"
        );
    }
}

#[test]
fn a_denied_call_ends_its_trace_at_the_step_that_refused_it_and_a_bad_traceparent_starts_a_new_one() {
    let Some(rx) = Receiver::start() else { return };
    let w = crate::composite_http::web(true);
    // Bob may read, not write: no grant for anything else.
    let bob = crate::serve::principal(&w.h, "bob", "acme", &["verb.exec.read:*"], false);
    let server = serve(&w.h, &traced(&rx.endpoint()), Some(&w.ca));
    // Missing its required `url`: refused by the argument check.
    let (st, v) =
        post(&server, "/v1/exec/test-http/fetch", &bob, &json!({}), &[("traceparent", "00-zz-bad-01")]);
    assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{v}");
    let spans = rx.wait_for("the refused call's spans", |s| s.iter().any(|s| s["name"] == "hcp.check"));
    let call = named(&spans, "hcp.call")[0];
    // A malformed traceparent is ignored: a trace of its own, no parent, no error.
    assert_eq!(call["parent_span_id"], "", "{call}");
    assert_ne!(call["trace_id"], TRACE);
    let t = call["trace_id"].as_str().unwrap();
    let (call, _, _) = call_tree(&spans, t, "", &["hcp.resolve", "hcp.check"]);
    assert_eq!((call["status"]["code"].as_u64(), attr(call, "hcp.code")), (Some(2), &json!("invalid_args")));
    let check = named(&spans, "hcp.check")[0];
    assert_eq!(
        (check["status"]["code"].as_u64(), attr(check, "hcp.code")),
        (Some(2), &json!("invalid_args"))
    );
    // An unknown pack stops at resolve.
    let (st, _) = post(&server, "/v1/exec/made-up-name/word", &bob, &json!({}), &[]);
    assert_eq!(st, 404);
    let spans = rx.wait_for("the unknown pack's spans", |s| named(s, "hcp.call").len() == 2);
    let call = named(&spans, "hcp.call").into_iter().find(|c| attr(c, "hcp.code") == "unknown_pack").unwrap();
    // A name the runtime does not know is the caller's word, not exported.
    assert_eq!((attr(call, "hcp.pack"), attr(call, "hcp.command")), (&json!("_unknown"), &json!("_unknown")));
    assert!(!String::from_utf8_lossy(&rx.raw()).contains("made-up-name"));
    let t = call["trace_id"].as_str().unwrap();
    call_tree(&spans, t, "", &["hcp.resolve"]);
}

/// The secret of the credential and the argument value that must never reach the collector.
const CREDENTIAL: &str = "cred-4b1d-never-exported";
const ARGUMENT: &str = "arg-9f3e-never-exported";

#[test]
fn no_argument_value_credential_or_header_is_ever_exported() {
    let Some(rx) = Receiver::start() else { return };
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let out = h.run_with(&["credential", "set", "ledger", "token"], &[], Some(CREDENTIAL));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    let server = serve(&h, &traced(&rx.endpoint()), None);
    let tp = traceparent(PARENT);
    // Valid and invalid calls carrying the value in arguments (an invalid one's denial names it).
    for body in [
        json!({ "amount": "1.00", "payee": ARGUMENT, "confirm": true }),
        json!({ "amount": { "x": ARGUMENT }, "payee": ARGUMENT, "confirm": true }),
        json!({ "amount": "1.00", "payee": ARGUMENT }),
    ] {
        // A denial, or the command's own failure, whose message names the value (`unknown payee "…"`).
        let (_, v) = post(&server, "/v1/exec/ledger/transfer", &bob, &body, &[("traceparent", &tp)]);
        assert_eq!(v["ok"], false, "{v}");
    }
    let (st, v) = post(&server, "/v1/exec/ledger/status", &bob, &json!({}), &[]);
    assert_eq!(st, 200, "{v}");
    rx.wait_for("every call's spans", |s| named(s, "hcp.call").len() == 4);
    let raw = rx.raw();
    assert!(!raw.is_empty());
    for needle in [CREDENTIAL, ARGUMENT, &bob, "Bearer", "authorization"] {
        let n = needle.as_bytes();
        assert!(!raw.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n)), "{needle:?} was exported");
    }
    // Still, the spans were there and said what happened.
    let spans = rx.spans();
    let codes: Vec<&str> =
        named(&spans, "hcp.call").iter().map(|c| attr(c, "hcp.code").as_str().unwrap()).collect();
    assert!(codes.contains(&"invalid_args") && codes.contains(&"ok"), "{codes:?}");
}

#[test]
fn tracing_off_sends_nothing_and_on_sends_to_the_operators_collector() {
    let Some(rx) = Receiver::start() else { return };
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    let tp = traceparent(PARENT);
    // No endpoint named, or the SDK disabled, or the exporter `none`: nothing is sent, whatever the caller sends.
    let off: [&[(String, String)]; 3] = [
        &[("OTEL_SERVICE_NAME".into(), "hcpx".into())],
        &[traced(&rx.endpoint())[0].clone(), ("OTEL_SDK_DISABLED".into(), "true".into())],
        &[traced(&rx.endpoint())[0].clone(), ("OTEL_TRACES_EXPORTER".into(), "none".into())],
    ];
    for env in off {
        let mut server = serve(&h, env, None);
        let (st, v) = post(&server, "/v1/exec/ledger/status", &bob, &json!({}), &[("traceparent", &tp)]);
        assert_eq!(st, 200, "{v}");
        assert_eq!(server.terminate(), Some(0));
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(rx.raw().is_empty(), "{:?}", rx.spans());
    // On: the collector's headers go with each export; a server stopping sends its last spans first.
    let mut env = traced(&rx.endpoint());
    env.push(("OTEL_EXPORTER_OTLP_HEADERS".into(), "x-collector-key=k%3D1".into()));
    env.push(("OTEL_BSP_SCHEDULE_DELAY".into(), "600000".into()));
    let mut server = serve(&h, &env, None);
    let (st, v) = post(&server, "/v1/exec/ledger/status", &bob, &json!({}), &[("traceparent", &tp)]);
    assert_eq!(st, 200, "{v}");
    assert_eq!(server.terminate(), Some(0));
    assert_eq!(named(&rx.spans(), "hcp.call").len(), 1, "flushed at shutdown");
    let headers = std::fs::read_to_string(rx.out.with_extension("jsonl.headers")).unwrap();
    let first: Value = serde_json::from_str(headers.lines().next().unwrap()).unwrap();
    assert_eq!(first["path"], "/v1/traces");
    assert_eq!(first["headers"]["x-collector-key"], "k=1", "{first}");
    // A setting that does not parse stops the server with the variable named.
    let out = Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("OTEL_EXPORTER_OTLP_PROTOCOL"), "{err}");
}

/// The median of `calls` timed calls.
fn median(mut took: Vec<Duration>) -> Duration {
    took.sort();
    took[took.len() / 2]
}

#[test]
fn a_dead_collector_neither_fails_nor_slows_a_call() {
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    // A collector that takes connections and never answers.
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    let tried = Arc::new(AtomicUsize::new(0));
    let seen = tried.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in dead.incoming().flatten() {
            seen.fetch_add(1, Ordering::SeqCst);
            held.push(c);
        }
    });
    let ops = crate::serve::principal(&h, "ops", "local", &[], true);
    let mut env = traced(&format!("http://127.0.0.1:{port}"));
    env.push(("OTEL_BSP_MAX_QUEUE_SIZE".into(), "64".into()));
    env.push(("OTEL_EXPORTER_OTLP_TIMEOUT".into(), "300".into()));
    let traced_server = serve(&h, &env, None);
    let plain = serve(&h, &[], None);
    let time = |s: &Server| {
        let t = Instant::now();
        let (st, v) = post(s, "/v1/exec/ledger/status", &bob, &json!({}), &[]);
        assert_eq!(st, 200, "{v}");
        t.elapsed()
    };
    let (mut on, mut off) = (Vec::new(), Vec::new());
    for _ in 0..40 {
        on.push(time(&traced_server));
        off.push(time(&plain));
    }
    let (on, off) = (median(on), median(off));
    assert!(on < off * 2 + Duration::from_millis(20), "traced to a dead collector {on:?}, untraced {off:?}");
    // The exporter did try (and waited on its own thread, not on the calls'), and the spans it could not send or
    // queue are counted.
    assert!(tried.load(Ordering::SeqCst) >= 1, "the exporter never tried the collector");
    let (st, _, text) =
        crate::serve::request_raw(&traced_server.addr, "GET", "/metrics", Some(&ops), None, &[]);
    assert_eq!(st, 200, "{text}");
    let dropped = text
        .lines()
        .find_map(|l| l.strip_prefix("hcp_trace_spans_dropped_total "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    // 40 calls of 7 spans each, past a queue of 64 the collector never empties.
    assert!(dropped.is_some_and(|d| d >= 200), "{text}");
    assert!(text.contains("hcp_trace_spans_exported_total 0"), "{text}");
}

#[test]
fn three_replicas_on_one_database_export_to_one_receiver_each_as_itself() {
    if crate::pg::unavailable() {
        return;
    }
    let Some(rx) = Receiver::start() else { return };
    let h = Home::postgres();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    let replicas: Vec<Server> = (0..3).map(|_| serve(&h, &traced(&rx.endpoint()), None)).collect();
    let trace = |i: usize| format!("{:032x}", i + 1);
    for (i, r) in replicas.iter().enumerate() {
        let tp = format!("00-{}-{PARENT}-01", trace(i));
        let (st, v) = post(r, "/v1/exec/ledger/status", &bob, &json!({}), &[("traceparent", &tp)]);
        assert_eq!(st, 200, "{v}");
    }
    let spans = rx.wait_for("three calls' spans", |s| named(s, "hcp.audit").len() == 3);
    let mut ids = Vec::new();
    for i in 0..3 {
        let (call, _, _) = call_tree(&spans, &trace(i), PARENT, &STEPS);
        let id = call["resource"]["service.instance.id"].as_str().unwrap().to_string();
        // Every span of the call carries its replica's id.
        for s in spans.iter().filter(|s| s["parent_span_id"] == call["span_id"]) {
            assert_eq!(s["resource"]["service.instance.id"], id.as_str(), "{s}");
        }
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

#[test]
fn a_served_wrap_calls_requests_through_its_egress_proxy_are_spans_of_its_run() {
    let Some(h) = crate::escape::home_if("seccomp") else { return };
    let Some(rx) = Receiver::start() else { return };
    let s = crate::egress_server::servers();
    crate::egress::setup(&h, &s, true);
    let bob = crate::serve::principal(&h, "bob", "acme", crate::serve::ALL, false);
    let server = serve(&h, &traced(&rx.endpoint()), None);
    let (st, v) =
        post(&server, "/v1/exec/evil/go", &bob, &json!({}), &[("traceparent", &traceparent(PARENT))]);
    assert_eq!(st, 200, "{v}");
    let spans = rx.wait_for("the wrap call's spans", |s| named(s, "hcp.audit").len() == 1);
    let (call, run, egress) = call_tree(&spans, TRACE, PARENT, &STEPS);
    assert_eq!((attr(call, "hcp.pack"), attr(call, "hcp.tenant")), (&json!("evil"), &json!("acme")));
    // A wrap reports the confinement it ran under.
    assert!(attr(call, "hcp.sandbox").is_string(), "{call}");
    assert!(attr(run.unwrap(), "hcp.sandbox").is_string(), "{run:?}");
    let seen: Vec<(String, String, Option<i64>)> = egress
        .iter()
        .map(|e| {
            (
                attr(e, "server.address").as_str().unwrap().to_string(),
                attr(e, "hcp.egress.class").as_str().unwrap().to_string(),
                attr(e, "http.response.status_code").as_i64(),
            )
        })
        .collect();
    // Tenant acme: api.test allowed (200), web.test refused (tenant local's host only).
    assert!(seen.contains(&("api.test".into(), "allowed".into(), Some(200))), "{seen:?}");
    assert!(seen.iter().any(|(h, c, _)| h == "web.test" && c == "not_allowed"), "{seen:?}");
    for e in &egress {
        assert_eq!(e["kind"], 3, "{e}");
        assert!(attr(e, "server.port").is_i64(), "{e}");
        let (rs, re) = (run.unwrap()["start"].as_u64(), run.unwrap()["end"].as_u64());
        assert!(e["start"].as_u64() >= rs && e["end"].as_u64() <= re, "inside its run: {e}");
    }
}

#[test]
fn an_mcp_calls_meta_traceparent_or_its_requests_header_is_its_parent() {
    let Some(rx) = Receiver::start() else { return };
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    let server = serve(&h, &traced(&rx.endpoint()), None);
    let url = format!("http://{}/mcp", server.addr);
    let tp = traceparent(PARENT);
    let r = crate::mcp::client(&h, "traced.py", &[&url, &bob, "ledger__status", &tp, "vendor=mcp", "meta"]);
    assert_eq!(r["is_error"], false, "{r}");
    let spans = rx.wait_for("the MCP call's spans", |s| named(s, "hcp.audit").len() == 1);
    let (call, _, _) = call_tree(&spans, TRACE, PARENT, &STEPS);
    assert_eq!(
        (attr(call, "hcp.invoker"), &call["trace_state"]),
        (&json!("mcp"), &json!("vendor=mcp")),
        "{call}"
    );
    // Without `_meta`, the `/mcp` request's own `traceparent` header.
    let other = "0af7651916cd43dd8448eb211c80319c";
    let tp = format!("00-{other}-b7ad6b7169203331-01");
    let r = crate::mcp::client(&h, "traced.py", &[&url, &bob, "ledger__status", &tp, "vendor=hdr", "header"]);
    assert_eq!(r["is_error"], false, "{r}");
    let spans = rx.wait_for("the second MCP call's spans", |s| named(s, "hcp.audit").len() == 2);
    let (call, _, _) = call_tree(&spans, other, "b7ad6b7169203331", &STEPS);
    assert_eq!(call["trace_state"], "vendor=hdr", "{call}");
}

#[test]
fn an_https_collector_is_reached_only_when_its_certificate_is_trusted() {
    let t = tempfile::tempdir().unwrap();
    let (cert, key) = (t.path().join("cert.pem"), t.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "1",
        ])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        // An end-entity certificate (OpenSSL marks a self-signed one a CA, which a TLS client refuses as a leaf).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (scripts/setup.sh installs it)");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let Some(rx) = Receiver::start_with(&[&cert, &key]) else { return };
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["ledger"]);
    let bob = crate::serve::principal(&h, "bob", "local", crate::serve::ALL, false);
    let ops = crate::serve::principal(&h, "ops", "local", &[], true);
    let env = traced(&format!("https://localhost:{}", rx.port));
    // Its certificate not trusted: nothing is sent (the handshake fails), the calls do not notice, and the spans
    // are counted as dropped.
    let untrusted = serve(&h, &env, None);
    let (st, v) = post(&untrusted, "/v1/exec/ledger/status", &bob, &json!({}), &[]);
    assert_eq!(st, 200, "{v}");
    let start = Instant::now();
    let dropped = loop {
        let (_, _, text) =
            crate::serve::request_raw(&untrusted.addr, "GET", "/metrics", Some(&ops), None, &[]);
        let d =
            text.lines().find_map(|l| l.strip_prefix("hcp_trace_spans_dropped_total ")).map(str::to_string);
        if d.as_deref().is_some_and(|d| d != "0") || start.elapsed() > Duration::from_secs(10) {
            break d;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(dropped.as_deref(), Some("7"), "the read's seven spans");
    assert!(rx.spans().is_empty());
    // Trusted (the hcpx process's SSL_CERT_FILE, as for a pack's origins): the spans arrive.
    let trusted = serve(&h, &env, Some(&cert));
    let (st, v) =
        post(&trusted, "/v1/exec/ledger/status", &bob, &json!({}), &[("traceparent", &traceparent(PARENT))]);
    assert_eq!(st, 200, "{v}");
    let spans = rx.wait_for("the spans over https", |s| named(s, "hcp.audit").len() == 1);
    call_tree(&spans, TRACE, PARENT, &STEPS);
}
