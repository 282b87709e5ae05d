//! The transit pack's `plan` in three guest languages (Rust, Python, JavaScript), measured side by side in one run:
//! per language, a bare wasmtime instantiate+call of the component (the same engine, a fresh Store, the async path
//! the adapter takes) against a full warm `Runtime::exec` of the same read. The Python and JavaScript components are
//! built by scripts/build-lang-guests.sh. Sizes, first compiles and whole-process `hcpx exec` are
//! benches/lang_exec.sh's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

use hcpx_model::grants::Grants;
use hcpx_model::{Envelope, Invoker, Principal};
use hcpx_runtime::adapter::composite::bindings::hcp::adapter::types::CallContext;
use hcpx_runtime::adapter::composite::bindings::{Composite, CompositePre};
use hcpx_runtime::adapter::composite::host::{CallLimits, CallState};
use hcpx_runtime::adapter::composite::http::Outgoing;
use hcpx_runtime::adapter::composite::CompositeAdapter;
use hcpx_runtime::Runtime;
use hcpx_store::Store;
use wasmtime::component::{Component, HasSelf, Linker};

fn bench(c: &mut Criterion) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = Store::open(&tmp.path().join("home")).expect("store");
    let packs = ["transit-composite", "transit-py", "transit-js"];
    for p in packs {
        let wasm = repo.join("packs").join(p).join("adapter.wasm");
        assert!(wasm.exists(), "{} is missing: run scripts/build-lang-guests.sh", wasm.display());
        store.install(&repo.join("packs").join(p)).expect("install");
    }
    store.set_activated(&packs.map(String::from), true, None).expect("activate");
    let rt = Runtime::new(store);
    let principal = Principal::local(Grants::All, Invoker::Json);
    let args = json!({ "from": "A", "to": "B" }).as_object().cloned().expect("object");

    let adapter = CompositeAdapter::new();
    let (engine, pooled) = adapter.engine().expect("engine");
    eprintln!("pooling allocator: {pooled}");
    let mut linker: Linker<CallState> = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("wasi");
    Composite::add_to_linker::<CallState, HasSelf<CallState>>(&mut linker, |s| s).expect("host");
    let ctx = CallContext {
        principal: "bench".into(),
        tenant: "local".into(),
        workspace_mode: "none".into(),
        credentials: vec![],
    };
    let args_json = r#"{"from":"A","to":"B"}"#;

    let mut group = c.benchmark_group("plan by guest language");
    group.sample_size(50).measurement_time(Duration::from_secs(8));
    for (lang, id) in [("rust", packs[0]), ("python", packs[1]), ("js", packs[2])] {
        let env = Envelope::new(id, "plan", args.clone());
        assert!(rt.exec(&principal, &env).ok, "warm-up call of {id}");
        let component = Component::from_file(engine, repo.join("packs").join(id).join("adapter.wasm"))
            .expect("component");
        let pre = CompositePre::new(linker.instantiate_pre(&component).expect("pre")).expect("pre");
        group.bench_function(format!("{lang}: bare wasmtime instantiate+call"), |b| {
            b.iter(|| {
                let state = CallState::new(
                    wasmtime_wasi::WasiCtxBuilder::new().build(),
                    CallLimits::new(64 << 20),
                    vec![],
                    Outgoing::none(),
                );
                let mut s = wasmtime::Store::new(engine, state);
                s.limiter(|st| &mut st.limits);
                s.set_epoch_deadline(1_000_000);
                adapter.block_on(bare_call(&pre, &mut s, &ctx, args_json)).expect("tokio")
            })
        });
        group.bench_function(format!("{lang}: Runtime::exec (full pipeline, warm)"), |b| {
            b.iter(|| {
                let out = rt.exec(&principal, &env);
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

criterion_group!(benches, bench);
criterion_main!(benches);
