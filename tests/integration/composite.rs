//! Composite packs: WASI components in-process. The example's twin face, guests that misbehave on purpose,
//! tampered components and cache files, and the component allow-list.

use serde_json::{json, Map, Value};
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::helpers::{repo, stdout_json, Fixture, Home};
use hcpx_model::grants::Grants;
use hcpx_model::{Code, Envelope, Invoker, Principal};
use hcpx_runtime::Runtime;
use hcpx_store::Store;

/// A guest built by `scripts/test.sh` (cargo build --release --target wasm32-wasip2 in guest-adapters/).
pub(crate) fn guest(name: &str) -> PathBuf {
    let p = repo()
        .join("guest-adapters/target/wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")));
    assert!(p.exists(), "{} is not built: run scripts/test.sh, or `cargo build --release --target wasm32-wasip2` in guest-adapters/", p.display());
    p
}

/// Installs and activates a composite pack around guest `name`, with commands `verbs`.
pub(crate) fn install_guest(h: &Home, name: &str, verbs: &[&str], mode: Option<&str>) -> String {
    install_guest_with(h, name, verbs, mode, |_| {})
}

/// The same, with `edit` applied to the pack's fixture before it is written (its hosts, say).
pub(crate) fn install_guest_with(
    h: &Home,
    name: &str,
    verbs: &[&str],
    mode: Option<&str>,
    edit: impl FnOnce(&mut Fixture),
) -> String {
    let id = name.to_string();
    let mut f = Fixture::wrap();
    let cmds: Map<String, Value> =
        verbs.iter().map(|v| (v.to_string(), json!({ "description": format!("{v}.") }))).collect();
    f.surface =
        json!({ "id": id, "kind": "composite", "component": { "path": "./adapter.wasm" }, "verbs": cmds });
    if let Some(m) = mode {
        f.surface["wrap"] = json!({ "workspace": { "mode": m } });
    }
    let rows: Map<String, Value> =
        verbs.iter().map(|v| (v.to_string(), json!({ "operation": "read" }))).collect();
    f.policy = json!({ "surface_id": id, "verbs": rows });
    f.harness = format!("# {name}\n\nA test guest.\n");
    f.files.clear();
    edit(&mut f);
    let src = h.t.join(&format!("src-{name}"));
    fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    fs::copy(guest(name), dir.join("adapter.wasm")).unwrap();
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(h.run(&["activate", &id]).status.code(), Some(0));
    id
}

fn runtime(h: &Home) -> Runtime {
    Runtime::new(Store::open(&h.store()).unwrap())
}

fn principal() -> Principal {
    Principal::local(Grants::All, Invoker::Json)
}

fn call(rt: &Runtime, id: &str, verb: &str) -> hcpx_model::ResultEnvelope {
    rt.exec(&principal(), &Envelope::new(id, verb, Map::new()))
}

/// The evidence that a call was stopped at its `timeout_ms` deadline: `timeout`, no result, and the runtime's
/// own account (the deadline it applied, and that it stopped the component). The guests used here never return
/// by themselves, so a call that was not stopped would never end: no wall-clock bound is needed to see it.
fn assert_stopped_at_deadline(out: &hcpx_model::ResultEnvelope, timeout_ms: u64, verb: &str) {
    assert_eq!((out.ok, out.code, &out.result), (false, Some(Code::Timeout), &None), "{verb}: {out:?}");
    let error = out.error.as_deref().unwrap_or("");
    assert!(
        error.starts_with(&format!("timed out after {timeout_ms} ms")) && error.contains("stopped"),
        "{verb}: {out:?}"
    );
}

/// Calls `verb` (which never returns by itself) under a 300 ms `timeout_ms`: it must end in `timeout`, not
/// before the deadline, and the next call on the same runtime must succeed.
fn assert_times_out_then_goes_on(rt: &Runtime, id: &str, verb: &str) {
    let started = Instant::now();
    let out = call(rt, id, verb);
    let took = started.elapsed();
    assert_stopped_at_deadline(&out, 300, verb);
    // A lower bound only: the deadline was not cut short. How long past it the call ended is for benches/.
    assert!(took >= Duration::from_millis(290), "{verb} ended before its deadline: {took:?}");
    assert!(call(rt, id, "ok").ok, "the call after {verb}");
}

/// The CLI face of the same: the `hcpx exec` process ends with exit 1 and a `timeout` envelope that says the
/// component was stopped at the 300 ms deadline, not when the guest would have returned (never).
fn assert_cli_times_out(h: &Home, id: &str, verb: &str) {
    let (rc, env) = h.exec(id, verb, &[]);
    assert_eq!((rc, env["ok"].as_bool(), env["code"].as_str()), (1, Some(false), Some("timeout")), "{env}");
    assert!(env.get("result").is_none(), "{env}");
    let error = env["error"].as_str().unwrap_or("");
    assert!(error.starts_with("timed out after 300 ms") && error.contains("stopped"), "{env}");
}

#[test]
fn the_example_component_is_reproducible_from_source() {
    for pack in ["transit-composite", "tickets-composite"] {
        let committed = fs::read(repo().join(format!("packs/{pack}/adapter.wasm"))).unwrap();
        let built = fs::read(guest(pack)).unwrap();
        assert!(committed == built, "packs/{pack}/adapter.wasm differs from the guest build; run scripts/build-guests.sh and commit it");
    }
}

#[test]
fn transit_composite_proof_and_twin_face_with_the_wrap_pack() {
    let t = crate::helpers::TestDir::new();
    let out = std::process::Command::new("bash")
        .arg(repo().join("packs/transit-composite/proof.sh"))
        .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
        .env("HCP_HOME", t.join("home"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "proof failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The same twin face, asserted here too, through the library.
    let h = Home::new();
    for p in ["transit", "transit-composite"] {
        assert_eq!(
            h.run(&["install", repo().join("packs").join(p).to_str().unwrap()]).status.code(),
            Some(0)
        );
    }
    assert_eq!(h.run(&["activate", "transit", "transit-composite"]).status.code(), Some(0));
    let rt = runtime(&h);
    for (verb, args) in [
        ("plan", json!({"from": "A", "to": "B"})),
        ("find", json!({"query": "Central"})),
        ("show", json!({"option": "opt-4"})),
        ("follow", json!({"option": "opt-1"})),
        ("status", json!({})),
    ] {
        let a = args.as_object().cloned().unwrap();
        let wrap = rt.exec(&principal(), &Envelope::new("transit", verb, a.clone()));
        let comp = rt.exec(&principal(), &Envelope::new("transit-composite", verb, a));
        assert!(wrap.ok && comp.ok, "{verb}: {wrap:?} {comp:?}");
        assert_eq!(wrap.result, comp.result, "{verb}");
        assert_eq!(wrap.title, comp.title, "{verb}");
    }
    // A failing command fails on both faces.
    let bad = json!({ "option": "nope" }).as_object().cloned().unwrap();
    let comp = rt.exec(&principal(), &Envelope::new("transit-composite", "show", bad));
    assert_eq!((comp.ok, comp.code), (false, Some(Code::ExitNonzero)));
    assert!(comp.error.unwrap().contains("not like opt-1"));
}

#[test]
fn an_endless_loop_times_out_near_the_deadline_and_the_runtime_goes_on() {
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 300 }"#);
    let rt = runtime(&h);
    assert!(call(&rt, &id, "ok").ok, "warm up");
    assert_times_out_then_goes_on(&rt, &id, "run");
}

#[test]
fn a_spinning_guest_is_stopped_at_its_deadline_in_a_one_shot_cli_call() {
    // `hcpx exec` runs one call and exits (a one-shot runtime, a store that never watches, an engine made for the
    // one call). A guest spinning in wasm never yields to the host: only epoch interruption stops it, so the
    // call can end only because the epoch reached the deadline.
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 300 }"#);
    let (rc, env) = h.exec(&id, "ok", &[]);
    assert_eq!((rc, env["ok"].as_bool()), (0, Some(true)), "warm up (fills the compile cache): {env}");
    assert_cli_times_out(&h, &id, "run");
}

#[test]
fn a_guest_blocked_in_a_host_call_times_out_too_and_the_runtime_goes_on() {
    // Epoch interruption stops wasm code, not a host call: an hour's sleep on the WASI clock must still
    // end in `timeout` at the deadline.
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok", "sleep"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 300 }"#);
    let rt = runtime(&h);
    assert_times_out_then_goes_on(&rt, &id, "sleep");
    assert_cli_times_out(&h, &id, "sleep");
}

#[test]
fn a_guest_blocked_on_a_fifo_in_its_preopen_times_out_and_the_runtime_goes_on() {
    // Opening a FIFO no one writes blocks inside the host's file code, not in wasm and not on a clock: the
    // call must still end in `timeout` at the deadline, in the library and in the CLI.
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok", "sleep", "fifo"], Some("workspace"));
    h.write_store("sandbox.json", r#"{ "timeout_ms": 300 }"#);
    let rt = runtime(&h);
    assert!(call(&rt, &id, "ok").ok, "warm up (creates the workspace)");
    let pipe = h.store().join("workspaces").join(&id).join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status().unwrap();
    assert!(made.success());
    assert_times_out_then_goes_on(&rt, &id, "fifo");
    drop(rt);
    assert_cli_times_out(&h, &id, "fifo");
}

/// On `rt`, from threads of their own: `id`'s `run` spinning in wasm and `sleep` sleeping in a host call, while
/// two threads make 20 quick calls each: every quick call answers, and each slow call is stopped at its own
/// 400 ms deadline (`timeout_ms` in sandbox.json), not before it.
fn slow_and_quick_calls_at_once(rt: &Runtime, id: &str) {
    std::thread::scope(|s| {
        let timed = |verb: &'static str| {
            s.spawn(move || {
                let started = Instant::now();
                let out = call(rt, id, verb);
                (out, started.elapsed())
            })
        };
        let (spin, sleep) = (timed("run"), timed("sleep"));
        let quick: Vec<_> = (0..2).map(|_| s.spawn(|| (0..20).all(|_| call(rt, id, "ok").ok))).collect();
        for q in quick {
            assert!(q.join().unwrap(), "a quick call failed");
        }
        for (name, handle) in [("run", spin), ("sleep", sleep)] {
            let (out, took) = handle.join().unwrap();
            assert_stopped_at_deadline(&out, 400, name);
            assert!(took >= Duration::from_millis(390), "{name} ended before its deadline: {took:?}");
        }
    });
}

#[test]
fn concurrent_calls_on_one_runtime_each_keep_their_own_deadline() {
    // A long-lived runtime is called from many threads. While one call spins in wasm until its deadline and
    // another sleeps in a host call, quick calls on other threads still answer, and both slow calls end at
    // their deadlines.
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok", "sleep"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 400 }"#);
    let rt = runtime(&h);
    assert!(call(&rt, &id, "ok").ok, "warm up");
    slow_and_quick_calls_at_once(&rt, &id);
    assert!(call(&rt, &id, "ok").ok);
}

#[test]
fn one_shot_calls_each_keep_their_own_deadline_whichever_thread_drives_them() {
    // A one-shot runtime's engine has no ticker thread: a call driven on its own thread gets a timer that signals
    // that thread at its deadline, and an async caller's call gets the ticker, started then. Any of them only makes
    // a store look at the clock, so a spinning call's timer must not stop a quick call, nor a sleeping call, early.
    let h = Home::new();
    let id = install_guest(&h, "test-loop", &["run", "ok", "sleep"], None);
    h.write_store("sandbox.json", r#"{ "timeout_ms": 400 }"#);
    let rt = Runtime::new(Store::open(&h.store()).unwrap()).one_shot();
    assert!(call(&rt, &id, "ok").ok, "warm up");
    slow_and_quick_calls_at_once(&rt, &id);
    // The same runtime from async code: the call may move between the caller's threads, so it has no timer of
    // its own; the ticker stops it at its deadline.
    let rt = std::sync::Arc::new(rt);
    let tokio_rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let started = Instant::now();
    let out = tokio_rt.block_on(rt.clone().exec_async(
        principal(),
        Envelope::new(&id, "run", Map::new()),
        hcpx_runtime::CallContext::default(),
    ));
    assert_stopped_at_deadline(&out, 400, "run, async");
    assert!(
        started.elapsed() >= Duration::from_millis(390),
        "ended before its deadline: {:?}",
        started.elapsed()
    );
    assert!(call(&rt, &id, "ok").ok, "the call after");
}

#[test]
fn a_memory_bomb_ends_in_a_clean_error_and_the_runtime_goes_on() {
    let h = Home::new();
    let id = install_guest(&h, "test-bomb", &["run", "ok"], None);
    h.write_store("sandbox.json", r#"{ "memory_mb": 32 }"#);
    let rt = runtime(&h);
    let out = call(&rt, &id, "run");
    assert_eq!((out.ok, out.code), (false, Some(Code::AdapterFailed)), "{out:?}");
    // Found by the limiter's error type, not its words: the message names the operator's cap.
    assert!(out.error.as_deref().unwrap_or("").contains("exceeded its memory cap of 32 MiB"), "{out:?}");
    assert!(call(&rt, &id, "ok").ok);
}

/// Nothing the guest found lies outside its preopen: no file read outside it, no host directory listed.
/// (WASI resolves `/` to the preopen itself, so listing `/` shows the guest's own directory.)
fn assert_contained(r: &Value) {
    for e in r["escaped"].as_array().unwrap() {
        let e = e.as_str().unwrap();
        assert!(!e.starts_with("read "), "read outside the preopen: {e}");
        for host in ["\"etc\"", "\"usr\"", "\"proc\"", "\"root\"", "\"tmp\"", "\"hcp-home\""] {
            assert!(!e.contains(host), "listed a host directory: {e}");
        }
    }
}

#[test]
fn a_path_escape_finds_nothing_outside_the_preopen() {
    let h = Home::new();
    let id = install_guest(&h, "test-escape", &["run"], Some("ephemeral"));
    let out = call(&runtime(&h), &id, "run");
    assert!(out.ok, "{out:?}");
    let r = out.result.unwrap();
    assert_contained(&r);
    assert_eq!(r["wrote_inside"], json!(true), "its own workspace is writable: {r}");
    // In mode none the preopen is the installed pack, read-only.
    let h = Home::new();
    let id = install_guest(&h, "test-escape", &["run"], None);
    let r = call(&runtime(&h), &id, "run").result.unwrap();
    assert_contained(&r);
    assert_eq!(r["wrote_inside"], json!(false), "{r}");
    assert!(!h.store().join("packs/test-escape/inside.txt").exists());
}

#[test]
fn an_env_reader_sees_only_hcp_sandbox() {
    let h = Home::new();
    let id = install_guest(&h, "test-env", &["run"], None);
    let out = call(&runtime(&h), &id, "run");
    let r = out.result.unwrap();
    assert_eq!(r, json!({ "vars": ["HCP_SANDBOX=sandbox"], "argv": [] }));
}

#[test]
fn a_panic_is_adapter_failed_and_the_runtime_goes_on() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    let rt = runtime(&h);
    let out = call(&rt, &id, "run");
    assert_eq!((out.ok, out.code), (false, Some(Code::AdapterFailed)), "{out:?}");
    assert!(call(&rt, &id, "ok").ok);
}

#[test]
fn a_component_that_lacks_a_declared_command_is_refused() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok", "extra"], None);
    let out = call(&runtime(&h), &id, "ok");
    assert_eq!(out.code, Some(Code::AdapterFailed));
    assert!(out.error.unwrap().contains("does not implement command extra"));
}

/// The commands file of the installed component's digest in the store's compile cache, if any.
fn remembered_commands(h: &Home) -> Option<std::path::PathBuf> {
    fs::read_dir(h.store().join("cache"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(".commands.json")))
}

#[test]
fn a_component_is_asked_what_it_implements_once_per_digest_and_a_missing_command_is_still_refused() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    assert!(call(&runtime(&h), &id, "ok").ok);
    // The answer is remembered beside the compiled component, so the next process starts no instance to ask.
    let file = remembered_commands(&h).expect("the describe answer is remembered in the compile cache");
    let names: Vec<String> = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert!(names.contains(&"ok".to_string()) && names.contains(&"run".to_string()), "{names:?}");
    // The same component under a manifest that declares more: refused from the remembered answer.
    install_guest(&h, "test-panic", &["run", "ok", "extra"], None);
    let out = call(&runtime(&h), &id, "ok");
    assert_eq!(out.code, Some(Code::AdapterFailed), "{out:?}");
    assert!(out.error.unwrap().contains("does not implement command extra"));
    // A remembered answer that does not parse is not trusted: the component is asked again.
    install_guest(&h, "test-panic", &["run", "ok"], None);
    fs::write(&file, b"not json").unwrap();
    assert!(call(&runtime(&h), &id, "ok").ok);
    let again: Vec<String> = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(again, names);
}

#[test]
fn a_tampered_component_is_refused_never_loaded() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    let installed = h.store().join("packs/test-panic/adapter.wasm");
    // Swap in another valid component: it would run, so only the digest check stops it.
    fs::copy(guest("test-loop"), &installed).unwrap();
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    // The digest of every file of the installed pack sees it first; the component's own digest stands behind it.
    assert_eq!(v["code"], "unknown_pack");
    assert!(v["error"].as_str().unwrap().contains("changed since install"), "{v}");
}

#[test]
fn a_tampered_cache_file_is_refused_and_replaced() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let cache = h.store().join("cache");
    let cwasm: Vec<PathBuf> = fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert_eq!(cwasm.len(), 1, "one cache file per component");
    let mut bytes = fs::read(&cwasm[0]).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0xff;
    }
    fs::write(&cwasm[0], &bytes).unwrap();
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "recompiled from the verified component: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_ne!(fs::read(&cwasm[0]).unwrap(), bytes, "the tampered file was replaced, not loaded");

    // Once settled, the cache file and the component are checked by the kernel's word on them (their digests
    // remembered, store/memo.rs); a change of the same size is still seen, and refused or replaced.
    std::thread::sleep(std::time::Duration::from_millis(2200));
    for _ in 0..2 {
        assert_eq!(h.run(&["exec", &id, "ok", "--json"]).status.code(), Some(0));
    }
    assert!(h.store().join("cache/digests").read_dir().unwrap().count() >= 2, "digests remembered");
    let mut bytes = fs::read(&cwasm[0]).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0xff;
    }
    fs::write(&cwasm[0], &bytes).unwrap();
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_ne!(
        fs::read(&cwasm[0]).unwrap(),
        bytes,
        "the settled, then tampered, file was replaced, not loaded"
    );
    let installed = h.store().join("packs").join(&id).join("adapter.wasm");
    let mut component = fs::read(&installed).unwrap();
    let last = component.len() - 1;
    component[last] ^= 0x01;
    fs::write(&installed, &component).unwrap();
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout_json(&out)["error"].as_str().unwrap().contains("changed since install"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn the_component_allow_list_fails_closed() {
    let h = Home::new();
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    h.write_store("sandbox.json", r#"{ "allow_components": [] }"#);
    let out = h.run(&["exec", &id, "ok", "--json"]);
    assert_eq!(out.status.code(), Some(127));
    let v = stdout_json(&out);
    let digest = hcpx_model::digest::sha256_hex(&fs::read(guest("test-panic")).unwrap());
    assert_eq!(
        v["error"],
        format!("sandbox: component {digest} not allowlisted; add it to allow_components in sandbox.json")
    );
    h.write_store("sandbox.json", &format!(r#"{{ "allow_components": ["{digest}"] }}"#));
    assert_eq!(h.run(&["exec", &id, "ok", "--json"]).status.code(), Some(0));
}
