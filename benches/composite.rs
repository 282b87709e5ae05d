//! Calls in-process, measured side by side in one run: a bare wasmtime instantiate+call of the transit component
//! (the baseline) against a full warm `Runtime::exec` of the same read through the whole pipeline, and against
//! `Runtime::exec_async` awaited on a tokio runtime of the caller's (what a served face pays); and a trivial
//! wrap bin spawned directly against the same bin through a warm `Runtime::exec`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hcpx_model::grants::Grants;
use hcpx_model::{Envelope, Invoker, Principal};
use hcpx_runtime::adapter::composite::bindings::hcp::adapter::types::CallContext;
use hcpx_runtime::adapter::composite::bindings::{Composite, CompositePre};
use hcpx_runtime::adapter::composite::host::{CallLimits, CallState};
use hcpx_runtime::adapter::composite::http::Outgoing;
use hcpx_runtime::adapter::composite::CompositeAdapter;
use hcpx_runtime::{self as runtime, Runtime};
use hcpx_store::Store;
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};

fn bench(c: &mut Criterion) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&tmp.path().join("home")).expect("store");
    store.install(&repo.join("packs/transit-composite")).expect("install");
    store.set_activated(&["transit-composite".to_string()], true, None).expect("activate");
    let rt = Arc::new(Runtime::new(store));
    let principal = Principal::local(Grants::All, Invoker::Json);
    let args = json!({ "from": "A", "to": "B" }).as_object().cloned().expect("object");
    let env = Envelope::new("transit-composite", "plan", args);
    assert!(rt.exec(&principal, &env).ok, "warm-up call");

    // The baselines: the same engine and component, nothing but a fresh Store, instantiate and call. The sync one
    // is the cheapest way wasmtime can run it; the async ones are the same under the tokio runtime the adapter
    // uses for synchronous callers, and on a served face's own runtime (one worker; `block_on` polls the call
    // on the bench's thread, as `exec_async` is polled).
    let adapter = CompositeAdapter::new();
    let (engine, pooled) = adapter.engine().expect("engine");
    eprintln!("pooling allocator: {pooled}");
    let component =
        Component::from_file(engine, repo.join("packs/transit-composite/adapter.wasm")).expect("component");
    let mut linker: Linker<CallState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
    Composite::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s).expect("host");
    let pre = CompositePre::new(linker.instantiate_pre(&component).expect("pre")).expect("pre");
    let mut sync_linker: Linker<bare::State> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut sync_linker).expect("wasi");
    bare::Composite::add_to_linker::<bare::State, HasSelf<bare::State>>(&mut sync_linker, |s| s)
        .expect("host");
    let sync_pre =
        bare::CompositePre::new(sync_linker.instantiate_pre(&component).expect("pre")).expect("pre");
    let ctx = CallContext {
        principal: "bench".into(),
        tenant: "local".into(),
        workspace_mode: "none".into(),
        credentials: vec![],
    };
    let sync_ctx = bare::hcp::adapter::types::CallContext {
        principal: "bench".into(),
        tenant: "local".into(),
        workspace_mode: "none".into(),
        credentials: vec![],
    };
    let args_json = r#"{"from":"A","to":"B"}"#;
    let new_state = || {
        CallState::new(
            wasmtime_wasi::WasiCtxBuilder::new().build(),
            CallLimits::new(64 << 20),
            vec![],
            Outgoing::none(),
        )
    };

    let mut group = c.benchmark_group("composite read");
    group.bench_function("bare wasmtime instantiate+call (sync)", |b| {
        b.iter(|| {
            let state = bare::State {
                wasi: wasmtime_wasi::WasiCtxBuilder::new().build(),
                table: ResourceTable::new(),
            };
            let mut s = wasmtime::Store::new(engine, state);
            s.set_epoch_deadline(1_000_000);
            let inst = sync_pre.instantiate(&mut s).expect("instantiate");
            inst.call_exec(&mut s, &sync_ctx, "plan", args_json).expect("call").expect("ok")
        })
    });
    let new_store = || {
        let mut s = wasmtime::Store::new(engine, new_state());
        s.limiter(|st| &mut st.limits);
        s.set_epoch_deadline(1_000_000);
        s
    };
    group.bench_function("bare wasmtime instantiate+call (async)", |b| {
        b.iter(|| {
            let mut s = new_store();
            adapter.block_on(bare_call(&pre, &mut s, &ctx, args_json)).expect("tokio")
        })
    });
    let served =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio");
    group.bench_function("bare wasmtime instantiate+call (async, caller's runtime)", |b| {
        b.iter(|| {
            let mut s = new_store();
            served.block_on(bare_call(&pre, &mut s, &ctx, args_json))
        })
    });
    group.bench_function("Runtime::exec (full pipeline, warm)", |b| {
        b.iter(|| {
            let out = rt.exec(&principal, &env);
            assert!(out.ok);
            out
        })
    });
    // What a served face hands over per call (its own Principal, envelope and context) is made outside the
    // timing, one call at a time (a batch made ahead, as `iter_batched` does, measures the allocator's
    // consolidation of the whole batch instead); taking them apart and dropping the answer are timed, as the
    // other rows' are.
    group.bench_function("Runtime::exec_async (full pipeline, warm, caller's runtime)", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let (rt, principal, env, ctx) =
                    (rt.clone(), principal.clone(), env.clone(), runtime::CallContext::default());
                let start = std::time::Instant::now();
                let out = served.block_on(rt.exec_async(principal, env, ctx));
                assert!(out.ok);
                drop(out);
                spent += start.elapsed();
            }
            spent
        })
    });
    group.finish();

    // A trivial wrap: `#!/bin/sh` printing a JSON object, run directly (same argv, env and cwd as hcpx
    // gives it) against a warm `Runtime::exec`, the pipeline a long-lived runtime runs per call.
    let pack = tmp.path().join("trivial");
    std::fs::create_dir_all(pack.join("bin")).expect("mkdir");
    std::fs::write(pack.join("surface.json"), r#"{"id":"trivial","kind":"wrap","cliBin":"trivial","binding":{"mode":"public"},"wrap":{"bin":"./bin/trivial","json_flag":[]},"verbs":{"ping":{"description":"Ping.","cli":["trivial","ping"]}}}"#).expect("write");
    std::fs::write(
        pack.join("policy.json"),
        r#"{"surface_id":"trivial","verbs":{"ping":{"operation":"read"}}}"#,
    )
    .expect("write");
    std::fs::write(pack.join("HARNESS.md"), "# Trivial\n\nA trivial pack for benchmarks.\n").expect("write");
    std::fs::write(pack.join("bin/trivial"), "#!/bin/sh\nprintf '{\"ok\":true}\\n'\n").expect("write");
    std::fs::set_permissions(pack.join("bin/trivial"), std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    rt.store().install(&pack).expect("install trivial");
    rt.store().set_activated(&["trivial".to_string()], true, None).expect("activate");
    let ping = Envelope::new("trivial", "ping", serde_json::Map::new());
    assert!(rt.exec(&principal, &ping).ok, "warm-up ping");
    let installed = rt.store().pack_dir("trivial");
    let home = rt.store().path("workspaces").join("trivial");
    let mut group = c.benchmark_group("trivial wrap");
    group.bench_function("direct spawn", |b| {
        b.iter(|| {
            let out = std::process::Command::new(installed.join("bin/trivial"))
                .arg("ping")
                .current_dir(&installed)
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("HOME", &home)
                .env("HCP_SANDBOX", "native-local")
                .stdin(std::process::Stdio::null())
                .output()
                .expect("spawn");
            assert!(out.status.success());
            out
        })
    });
    // The same call under each sandbox.json setting, side by side: every layer, every layer off, and each
    // costly layer off alone (docs/perf-log.md). The store's read cache sees each rewrite of sandbox.json.
    let all_off = r#"{ "disable": ["landlock", "landlock-net", "landlock-scope", "seccomp", "capabilities", "no-new-privs", "pid-namespace", "mount-namespace", "rlimits", "process-limit"] }"#;
    let settings = [
        ("Runtime::exec (full pipeline, warm, every layer)", "{}"),
        ("Runtime::exec (full pipeline, warm, every layer off)", all_off),
        ("Runtime::exec (every layer but landlock)", r#"{ "disable": ["landlock"] }"#),
        ("Runtime::exec (every layer but seccomp)", r#"{ "disable": ["seccomp"] }"#),
        (
            "Runtime::exec (every layer but the PID namespace)",
            r#"{ "disable": ["pid-namespace", "process-limit"] }"#,
        ),
        ("Runtime::exec (every layer but capabilities)", r#"{ "disable": ["capabilities"] }"#),
    ];
    for (label, sandbox) in settings {
        rt.store().write_atomic("sandbox.json", sandbox.as_bytes()).expect("sandbox.json");
        assert!(rt.exec(&principal, &ping).ok, "warm-up {label}");
        group.bench_function(label, |b| {
            b.iter(|| {
                let out = rt.exec(&principal, &ping);
                assert!(out.ok);
                out
            })
        });
    }
    group.finish();
}

/// The baseline's async instantiate+call, under a deadline as a call is.
async fn bare_call(
    pre: &CompositePre<CallState>,
    s: &mut wasmtime::Store<CallState>,
    ctx: &CallContext,
    args: &str,
) -> String {
    let call = async {
        let inst = pre.instantiate_async(&mut *s).await.expect("instantiate");
        inst.call_exec(&mut *s, ctx, "plan", args).await.expect("call").expect("ok")
    };
    tokio::time::timeout(Duration::from_secs(60), call).await.expect("in time")
}

/// Sync bindings of the same world, for the cheapest baseline (the library's are async).
mod bare {
    wasmtime::component::bindgen!({ world: "composite", path: "wit/0.1.0" });

    pub struct State {
        pub wasi: wasmtime_wasi::WasiCtx,
        pub table: wasmtime::component::ResourceTable,
    }

    impl wasmtime_wasi::WasiView for State {
        fn ctx(&mut self) -> wasmtime_wasi::WasiCtxView<'_> {
            wasmtime_wasi::WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
        }
    }

    impl hcp::adapter::host::Host for State {
        fn log(&mut self, _level: hcp::adapter::host::Level, _message: String) {}

        fn credential(&mut self, _handle: u32) -> Option<String> {
            None
        }
    }

    impl hcp::adapter::types::Host for State {}
}

criterion_group!(benches, bench);
criterion_main!(benches);
