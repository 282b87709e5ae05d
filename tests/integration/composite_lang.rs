//! Composites written in Python and JavaScript, built from their lock files by `scripts/build-lang-guests.sh`:
//! the transit pack three times over (Rust, Python, JavaScript) and its wrap twin give the same envelopes; guests
//! that loop, allocate 1 GiB or recurse without end stop with a clear error and leave the runtime serving; a
//! component of tens of MiB compiles once and later processes read the cache; `hcpx check` names each
//! language's own fix.

use serde_json::{json, Map, Value};
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::helpers::{repo, shared_compile_cache, stdout_json, Fixture, Home, TestDir};
use hcpx_model::grants::Grants;
use hcpx_model::{Code, Envelope, Invoker, Principal, ResultEnvelope};
use hcpx_runtime::Runtime;
use hcpx_store::Store;

const LANGS: [&str; 2] = ["py", "js"];

fn built(p: PathBuf) -> PathBuf {
    assert!(
        p.exists(),
        "{} is not built: run scripts/build-lang-guests.sh (scripts/test.sh does)",
        p.display()
    );
    p
}

/// The misbehaving guest of `lang`, built by `scripts/build-lang-guests.sh`.
fn misbehave(lang: &str) -> PathBuf {
    built(repo().join(format!("guest-adapters/target/lang/test_misbehave_{lang}.wasm")))
}

fn transit(lang: &str) -> PathBuf {
    let dir = repo().join(format!("packs/transit-{lang}"));
    built(dir.join("adapter.wasm"));
    dir
}

/// An in-process runtime on `h`'s store, compiling into the cache `h`'s hcpx runs use.
fn runtime(h: &Home) -> Runtime {
    Runtime::new(Store::open(&h.store()).unwrap().with_compile_cache(h.compile_cache()))
}

fn call(rt: &Runtime, id: &str, verb: &str, args: Value) -> ResultEnvelope {
    let principal = Principal::local(Grants::All, Invoker::Json);
    rt.exec(&principal, &Envelope::new(id, verb, args.as_object().cloned().unwrap_or_default()))
}

/// A composite pack around the component at `wasm`, with read commands `verbs`, written under `h`'s test dir.
fn guest_pack(h: &Home, id: &str, wasm: &PathBuf, verbs: &[&str]) -> PathBuf {
    let mut f = Fixture::wrap();
    let cmds: Map<String, Value> =
        verbs.iter().map(|v| (v.to_string(), json!({ "description": format!("{v}.") }))).collect();
    f.surface =
        json!({ "id": id, "kind": "composite", "component": { "path": "./adapter.wasm" }, "verbs": cmds });
    let rows: Map<String, Value> =
        verbs.iter().map(|v| (v.to_string(), json!({ "operation": "read" }))).collect();
    f.policy = json!({ "surface_id": id, "verbs": rows });
    f.harness = format!("# {id}\n\nA test guest.\n");
    f.files.clear();
    let src = h.t.join(&format!("src-{id}"));
    fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    fs::copy(wasm, dir.join("adapter.wasm")).unwrap();
    dir
}

fn install(h: &Home, dir: &std::path::Path, id: &str) {
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(h.run(&["activate", id]).status.code(), Some(0));
}

#[test]
fn transit_in_python_and_javascript_gives_the_envelopes_of_the_rust_composite_and_the_wrap() {
    let h = Home::sharing_compiles();
    install(&h, &repo().join("packs/transit"), "transit");
    install(&h, &repo().join("packs/transit-composite"), "transit-composite");
    for lang in LANGS {
        install(&h, &transit(lang), &format!("transit-{lang}"));
    }
    // A long-lived runtime: the pooling allocator holds the Python and JavaScript components too.
    let rt = runtime(&h);
    let calls = [
        ("plan", json!({"from": "A", "to": "B"})),
        ("plan", json!({"from": "Harbour", "to": "North Gate"})),
        ("find", json!({"query": "Central"})),
        ("find", json!({"query": "park"})),
        ("find", json!({"query": "zzz"})),
        ("show", json!({"option": "opt-4"})),
        ("show", json!({"option": "opt-12"})),
        ("follow", json!({"option": "opt-1"})),
        ("status", json!({})),
    ];
    for (verb, args) in &calls {
        let wrap = call(&rt, "transit", verb, args.clone());
        assert!(wrap.ok, "{verb} {args}: {wrap:?}");
        for id in ["transit-composite", "transit-py", "transit-js"] {
            let comp = call(&rt, id, verb, args.clone());
            assert!(comp.ok, "{id} {verb} {args}: {comp:?}");
            assert_eq!((&comp.result, &comp.title), (&wrap.result, &wrap.title), "{id} {verb} {args}");
        }
    }
    // Failures: the three composites refuse the same calls with the same code and message (a bad option id from
    // the component, a missing or mistyped argument from the manifest's schema before it).
    for (verb, args) in [
        ("show", json!({"option": "one"})),
        ("follow", json!({"option": "opt-x"})),
        ("show", json!({})),
        ("find", json!({"query": 7})),
    ] {
        let rust = call(&rt, "transit-composite", verb, args.clone());
        assert!(!rust.ok && rust.error.is_some(), "{verb} {args}: {rust:?}");
        for id in ["transit-py", "transit-js"] {
            let comp = call(&rt, id, verb, args.clone());
            // The same words, but for the pack id a schema refusal names.
            let said = comp.error.map(|e| e.replace(id, "transit-composite"));
            assert_eq!((comp.ok, comp.code, &said), (rust.ok, rust.code, &rust.error), "{id} {verb} {args}");
        }
    }
}

#[test]
fn transit_py_and_transit_js_proofs_pass() {
    for lang in LANGS {
        let t = TestDir::new();
        transit(lang);
        let out = Command::new("bash")
            .arg(repo().join(format!("packs/transit-{lang}/proof.sh")))
            .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
            .env("HCP_HOME", t.join("home"))
            .envs(shared_compile_cache().map(|d| ("HCP_CACHE_DIR", d)))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "transit-{lang} proof failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Each misbehaviour ends its call with a clear error, and the same runtime answers the next call.
#[test]
fn python_and_javascript_guests_that_loop_allocate_or_recurse_end_cleanly_and_the_runtime_goes_on() {
    for lang in LANGS {
        let h = Home::sharing_compiles();
        let id = format!("misbehave-{lang}");
        let dir = guest_pack(&h, &id, &misbehave(lang), &["spin", "bomb", "deep", "cdeep", "ok"]);
        install(&h, &dir, &id);
        // Long enough for a million-deep recursion to reach its limit on a busy machine; `spin` never ends.
        h.write_store("sandbox.json", r#"{ "timeout_ms": 3000 }"#);
        let rt = runtime(&h);
        assert!(call(&rt, &id, "ok", json!({})).ok, "{lang}");

        let out = call(&rt, &id, "spin", json!({}));
        assert_eq!((out.ok, out.code), (false, Some(Code::Timeout)), "{lang}: {out:?}");
        assert!(out.error.as_deref().unwrap().starts_with("timed out after 3000 ms"), "{lang}: {out:?}");
        assert!(call(&rt, &id, "ok", json!({})).ok, "{lang} after spin");

        // 1 GiB asked of a 64 MiB cap (the default): the limiter refuses the growth, the call traps.
        let out = call(&rt, &id, "bomb", json!({}));
        assert_eq!((out.ok, out.code), (false, Some(Code::AdapterFailed)), "{lang}: {out:?}");
        assert!(
            out.error.as_deref().unwrap().contains("exceeded its memory cap of 64 MiB"),
            "{lang}: {out:?}"
        );
        assert!(call(&rt, &id, "ok", json!({})).ok, "{lang} after bomb");

        // Recursion the language guards (RecursionError, InternalError) escapes `exec`: the call traps.
        let out = call(&rt, &id, "deep", json!({}));
        assert_eq!((out.ok, out.code), (false, Some(Code::AdapterFailed)), "{lang}: {out:?}");
        assert!(out.error.as_deref().unwrap().contains("reached `unreachable`"), "{lang}: {out:?}");
        assert!(call(&rt, &id, "ok", json!({})).ok, "{lang} after deep");

        // Recursion through the interpreter's own C: Python's exhausts the wasm stack, JavaScript's (a million
        // nested arrays) the memory cap first.
        let out = call(&rt, &id, "cdeep", json!({}));
        assert_eq!((out.ok, out.code), (false, Some(Code::AdapterFailed)), "{lang}: {out:?}");
        let want = if lang == "py" { "exhausted its call stack" } else { "exceeded its memory cap" };
        assert!(out.error.as_deref().unwrap().contains(want), "{lang}: {out:?}");
        assert!(call(&rt, &id, "ok", json!({})).ok, "{lang} after cdeep");

        // The CLI face, one process per call, allocating on demand.
        for (verb, code, says) in [
            ("spin", "timeout", "timed out after 3000 ms"),
            ("bomb", "adapter_failed", "exceeded its memory cap of 64 MiB"),
        ] {
            let (rc, env) = h.exec(&id, verb, &[]);
            assert_eq!((rc, env["code"].as_str()), (1, Some(code)), "{lang} {verb}: {env}");
            assert!(env["error"].as_str().unwrap().contains(says), "{lang} {verb}: {env}");
        }
        assert_eq!(h.exec(&id, "ok", &[]).1["result"], json!({ "fine": true }), "{lang}");
    }
}

/// A component of tens of MiB is compiled by the first process that runs it; later processes read the cache.
#[test]
fn a_large_component_compiles_once_and_later_processes_read_the_cache() {
    for lang in LANGS {
        let h = Home::new();
        let id = format!("transit-{lang}");
        install(&h, &transit(lang), &id);
        assert!(fs::metadata(transit(lang).join("adapter.wasm")).unwrap().len() > 8 << 20, "{lang}");
        let (rc, env) = h.exec(&id, "plan", &["A", "B"]);
        assert_eq!((rc, &env["result"]["optionId"]), (0, &json!("opt-1")), "{env}");
        let cache = h.store().join("cache");
        let cwasm: Vec<PathBuf> = fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .collect();
        assert_eq!(cwasm.len(), 1, "{lang}: {cwasm:?}");
        let written = fs::metadata(&cwasm[0]).unwrap().modified().unwrap();
        let (rc, env) = h.exec(&id, "status", &[]);
        assert_eq!((rc, env["ok"].as_bool()), (0, Some(true)), "{env}");
        assert_eq!(
            fs::metadata(&cwasm[0]).unwrap().modified().unwrap(),
            written,
            "{lang}: the cache was rewritten"
        );
    }
}

/// `hcpx check` recognises the guest's language from its component and words its fixes in that language.
#[test]
fn check_advice_names_the_python_and_javascript_way_to_fix() {
    for (lang, log, json_how, err_how, build) in [
        (
            "py",
            "from wit_world.imports import host",
            "json.dumps",
            "componentize_py_types.Err",
            "componentize-py",
        ),
        ("js", "hcp:adapter/host@0.2.0", "JSON.stringify", "throw a string", "componentize-js"),
    ] {
        let h = Home::sharing_compiles();
        let dir = guest_pack(&h, &format!("advice-{lang}"), &misbehave(lang), &["noisy", "deep"]);
        let out = h.run(&["check", dir.to_str().unwrap(), "--probe", "--json"]);
        let report = stdout_json(&out);
        let fix = |id: &str| -> String {
            let f = report["findings"].as_array().unwrap().iter().find(|f| f["id"] == id);
            f.unwrap_or_else(|| panic!("{lang}: no {id}: {report}"))["fix"].as_str().unwrap().to_string()
        };
        let (r010, r002, r001) = (fix("R010"), fix("R002"), fix("R001"));
        assert!(r010.contains(log) && !r010.contains("quiet flag"), "{lang}: {r010}");
        assert!(
            r002.contains(json_how) && r002.contains(build) && !r002.contains("serde_json"),
            "{lang}: {r002}"
        );
        assert!(r001.contains(err_how) && r001.contains(build), "{lang}: {r001}");
    }
}
