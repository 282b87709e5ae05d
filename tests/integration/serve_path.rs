//! The exec path async code calls (a served face): it works from inside a tokio runtime, for composites
//! and wraps, under a concurrency limit that answers `busy`, with the project directory given per call.

use serde_json::{json, Map};
use std::sync::Arc;

use crate::composite::install_guest;
use crate::helpers::{repo, Home};
use hcpx_model::grants::Grants;
use hcpx_model::{Code, Envelope, Invoker, Principal};
use hcpx_runtime::{CallContext, Runtime};
use hcpx_store::Store;

fn served(h: &Home, max_calls: usize) -> Arc<Runtime> {
    Arc::new(Runtime::new(Store::open(&h.store()).unwrap()).with_max_calls(max_calls))
}

fn agent() -> Principal {
    Principal { id: "svc".into(), tenant: "t1".into(), grants: Grants::All, invoker: Invoker::Http }
}

fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn a_composite_and_a_wrap_run_from_inside_a_tokio_runtime() {
    let h = Home::new();
    assert_eq!(
        h.run(&["install", repo().join("packs/transit-composite").to_str().unwrap()]).status.code(),
        Some(0)
    );
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
    let rt = served(&h, 8);
    let args = json!({"from": "A", "to": "B"}).as_object().cloned().unwrap();
    let (plan, status) = tokio_rt().block_on(async {
        let plan = rt
            .clone()
            .exec_async(agent(), Envelope::new("transit-composite", "plan", args), CallContext::default())
            .await;
        let status = rt
            .clone()
            .exec_async(agent(), Envelope::new("ledger", "status", Map::new()), CallContext::default())
            .await;
        (plan, status)
    });
    assert!(plan.ok, "{plan:?}");
    assert_eq!(plan.result.as_ref().unwrap()["optionId"], "opt-1", "{plan:?}");
    assert!(status.ok, "{status:?}");
    // Availability loads the component too (a fresh runtime, so nothing is prepared yet): also callable from
    // async code.
    let av = tokio_rt().block_on(served(&h, 8).availability_async(agent(), "transit-composite".into()));
    assert!(av.installed && av.activated && av.runnable, "{av:?}");
}

#[test]
fn past_the_concurrency_limit_a_call_is_busy_and_runs_nothing() {
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 1500 }"#);
    let rt = served(&h, 1);
    let outs = tokio_rt().block_on(async {
        let slow = tokio::spawn(rt.clone().exec_async(
            agent(),
            Envelope::new(&id, "run", Map::new()),
            CallContext::default(),
        ));
        // Wait until the slow call holds the one slot.
        while rt.calls_in_flight() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let second = rt
            .clone()
            .exec_async(agent(), Envelope::new(&id, "ok", Map::new()), CallContext::default())
            .await;
        (slow.await.unwrap(), second)
    });
    let (slow, second) = outs;
    assert_eq!(slow.code, Some(Code::Timeout), "{slow:?}");
    assert_eq!((second.ok, second.code), (false, Some(Code::Busy)), "{second:?}");
    assert!(second.error.as_deref().unwrap_or("").contains("retry"), "{second:?}");
    // The slot is free again.
    let again = tokio_rt().block_on(rt.clone().exec_async(
        agent(),
        Envelope::new(&id, "ok", Map::new()),
        CallContext::default(),
    ));
    assert!(again.ok, "{again:?}");
}

#[test]
fn the_project_directory_comes_with_the_call() {
    let h = Home::new();
    assert_eq!(h.run(&["install", repo().join("packs/jq").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "jq"]).status.code(), Some(0));
    h.write_store("sandbox.json", r#"{ "allow": ["jq"] }"#);
    let project = h.t.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("data.json"), r#"{"a": 7}"#).unwrap();
    let rt = served(&h, 4);
    let args = json!({"file": "data.json", "path": "a"}).as_object().cloned().unwrap();
    let none = rt.exec_in(&agent(), &Envelope::new("jq", "get", args.clone()), &CallContext::default());
    assert_eq!(none.code, Some(Code::NoProject), "a served runtime has no project of its own: {none:?}");
    let ctx = CallContext { project_dir: Some(project), ..CallContext::default() };
    let out = rt.exec_in(&agent(), &Envelope::new("jq", "get", args), &ctx);
    assert!(out.ok, "{out:?}");
    assert_eq!(out.result, Some(json!(7)));
}

/// Whether `done` comes true (a hang guard, not a timing bound: the event is expected within milliseconds).
fn eventually(done: impl Fn() -> bool) -> bool {
    let start = std::time::Instant::now();
    while !done() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

#[test]
fn a_call_whose_caller_goes_away_stops_its_process_group() {
    use crate::escape::{survivors, token};
    let h = Home::new();
    let tok = token();
    crate::mcp::slow_pack(&h, &tok);
    let rt = served(&h, 4);
    let tokio = tokio_rt();
    let call = tokio.spawn(rt.clone().exec_async(
        agent(),
        Envelope::new("slow", "wait", Map::new()),
        CallContext::default(),
    ));
    let started = eventually(|| survivors(&tok).len() == 2);
    // The caller goes away: its future is dropped.
    call.abort();
    let gone = eventually(|| survivors(&tok).is_empty());
    let freed = eventually(|| rt.calls_in_flight() == 0);
    // Without waiting for a call that was not stopped (a failure must fail, not hang).
    tokio.shutdown_background();
    assert!(started, "the command never started");
    assert!(gone, "processes of the cancelled call survive: {:?}", survivors(&tok));
    assert!(freed, "the call's slot was not given back");
}

#[test]
fn a_cancelled_composite_call_answers_cancelled() {
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["sleep", "ok"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 600000 }"#);
    let rt = served(&h, 4);
    let ctx = CallContext::default();
    let cancel = ctx.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
    });
    // `sleep` blocks in a WASI host call for an hour; only the cancellation ends it.
    let out = rt.exec_in(&agent(), &Envelope::new(&id, "sleep", Map::new()), &ctx);
    canceller.join().unwrap();
    assert_eq!((out.ok, out.code), (false, Some(Code::Cancelled)), "{out:?}");
    assert!(rt.exec_in(&agent(), &Envelope::new(&id, "ok", Map::new()), &CallContext::default()).ok);
}

fn install_transit(h: &Home) {
    let dir = repo().join("packs/transit-composite");
    assert_eq!(h.run(&["install", dir.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
}

fn plan() -> Envelope {
    Envelope::new("transit-composite", "plan", json!({"from": "A", "to": "B"}).as_object().cloned().unwrap())
}

#[test]
fn a_composite_is_awaited_on_the_callers_runtime() {
    let h = Home::new();
    install_transit(&h);
    let rt = served(&h, 4);
    // Prepared first: loading a component is the one part of a composite call that goes to the blocking pool.
    assert!(rt.exec_in(&agent(), &plan(), &CallContext::default()).ok);
    let flavors =
        [tokio::runtime::Builder::new_current_thread(), tokio::runtime::Builder::new_multi_thread()];
    for mut builder in flavors {
        let tokio = builder.worker_threads(1).max_blocking_threads(1).enable_all().build().unwrap();
        // The runtime's only blocking thread is held for the whole call: a call that needed it would wait.
        let (held, is_held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = tokio.spawn_blocking(move || {
            held.send(()).unwrap();
            released.recv().ok();
        });
        is_held.recv().unwrap();
        let rt = rt.clone();
        let out = tokio.block_on(async move {
            let call = tokio::spawn(rt.exec_async(agent(), plan(), CallContext::default()));
            tokio::time::timeout(std::time::Duration::from_secs(60), call).await
        });
        release.send(()).unwrap();
        tokio.block_on(holder).unwrap();
        let out = out.expect("the call waited for the blocking pool").unwrap();
        assert!(out.ok, "{out:?}");
        assert_eq!(out.result.as_ref().unwrap()["optionId"], "opt-1", "{out:?}");
    }
}

#[test]
fn a_cold_composite_and_the_bootstrap_pack_answer_from_a_task() {
    let h = Home::new();
    install_transit(&h);
    let args = json!({"pack_id": "transit-composite"}).as_object().cloned().unwrap();
    let availability = Envelope::new("hcp-cli", "hcp.availability", args);
    let (plan, av) = tokio_rt().block_on(async {
        // Fresh runtimes: nothing prepared, so each loads the component (on the blocking pool).
        let plan = tokio::spawn(served(&h, 4).exec_async(agent(), plan(), CallContext::default()));
        let av = tokio::spawn(served(&h, 4).exec_async(agent(), availability, CallContext::default()));
        (plan.await.unwrap(), av.await.unwrap())
    });
    assert!(plan.ok, "{plan:?}");
    assert!(av.ok, "{av:?}");
    assert_eq!(av.result.as_ref().unwrap()["runnable"], true, "{av:?}");
}

#[test]
fn a_dropped_composite_call_gives_its_slot_back() {
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["sleep", "ok"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 600000 }"#);
    let rt = served(&h, 1);
    let tokio = tokio_rt();
    // `sleep` blocks in a WASI host call for an hour; the caller goes away meanwhile.
    let call = tokio.spawn(rt.clone().exec_async(
        agent(),
        Envelope::new(&id, "sleep", Map::new()),
        CallContext::default(),
    ));
    let started = eventually(|| rt.calls_in_flight() == 1);
    call.abort();
    let freed = eventually(|| rt.calls_in_flight() == 0);
    tokio.shutdown_background();
    assert!(started && freed, "started {started}, freed {freed}");
    assert!(rt.exec_in(&agent(), &Envelope::new(&id, "ok", Map::new()), &CallContext::default()).ok);
}
