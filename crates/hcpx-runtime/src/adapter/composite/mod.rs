//! The composite adapter: a pack's WASI component run in-process under wasmtime with no ambient authority.
//! Compiled once (on-disk cache), `InstancePre` cached per component, a fresh `Store` per call with a memory cap
//! and a deadline. The component's only preopen is its workspace directory.
//!
//! A call is one future (`call.rs`), under a tokio timeout: epoch interruption stops running wasm code at the
//! deadline, and the timeout drops a call that is blocked in a WASI host call (a sleep, a FIFO read), which
//! unwinds its fiber. An async caller awaits it on its own tokio runtime (`run_async`); a synchronous caller
//! drives the same future on the adapter's runtime (`run`). Blocking file work goes to tokio's blocking pool,
//! and so does loading a component for an async caller, so nothing holds a worker of the caller's runtime.

mod ahead;
pub mod bindings;
pub(crate) use hcpx_sandbox::compile_cache as cache;
mod call;
pub mod host;
pub mod http;
mod load;
mod send;
mod wasi_link;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::component::Component;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store as WStore, Trap,
    UpdateDeadline,
};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::{Adapter, AdapterResult, Call, Env, NoHooks, OwnedCall, RunFuture};
use crate::model::{Code, Denial};
use crate::pack::Pack;
use crate::sandbox::epoch_clock;
use bindings::CompositePre;
use host::CallState;
use load::{link, Source};

pub use ahead::{precompile, Precompiled};
pub use cache::Step;

/// A compile this process did (or began, or failed), for whoever reports them: `hcpx serve`'s log, the progress a
/// terminal shows at install.
#[derive(Debug, Clone, Copy)]
pub struct CompileEvent<'a> {
    pub pack_id: &'a str,
    /// The component's SHA-256.
    pub component_sha256: &'a str,
    pub step: Step,
}

/// Told of every compile an adapter does.
pub type CompileObserver = Arc<dyn Fn(&CompileEvent<'_>) + Send + Sync>;

/// How often the engine's epoch advances; deadlines are counted in these ticks.
const TICK: Duration = Duration::from_millis(2);
/// Largest component file the runtime reads.
pub const MAX_COMPONENT_BYTES: u64 = 64 * 1024 * 1024;
/// Memory cap of the one-off instance that answers `describe`.
const DESCRIBE_MEMORY_MB: u64 = 64;
/// Deadline of the one-off instance that answers `describe`.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(1);
/// Largest memory the pooling allocator reserves per instance; `memory_mb` is capped to it.
const POOL_MAX_MEMORY: usize = 512 * 1024 * 1024;

struct Prepared {
    pre: CompositePre<CallState>,
    /// The component imports `wasi:filesystem/preopens`, the one way to reach a file: one that does not is
    /// given no preopen (nor a `.git` guard), since it could not use them.
    files: bool,
    /// The component imports `wasi:http/outgoing-handler` (world `hcp:adapter@0.2.0`): its calls get the
    /// command's egress policy; one that does not could send nothing, and gets none.
    http: bool,
}

/// The WASI interface that hands a component its directories.
const PREOPENS: &str = "wasi:filesystem/preopens";
/// The WASI interface a component sends HTTP requests through.
const OUTGOING_HTTP: &str = "wasi:http/outgoing-handler";

/// What drives a synchronous caller's calls: tokio's clock for the deadline and WASI sleeps, and its pool for
/// blocking file work.
fn make_tokio(pooling: bool) -> Result<tokio::runtime::Runtime, String> {
    let built = if pooling {
        // A long-lived runtime may be called from many threads at once: one worker thread drives the timers,
        // so one caller's deadline fires even while another caller's wasm is running.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hcpx-wasi")
            .enable_time()
            .enable_io()
            .build()
    } else {
        // One call per process: its own thread drives the timers while it waits.
        tokio::runtime::Builder::new_current_thread().enable_time().enable_io().build()
    };
    built.map_err(|e| format!("cannot start the async runtime for components: {e}"))
}

/// Where a call does the work that blocks (loading a component, guarding a project's `.git`).
#[derive(Debug, Clone, Copy)]
enum Blocking {
    /// On the calling thread: a synchronous caller, which waits for the call anyway.
    Inline,
    /// On tokio's blocking pool: an async caller, whose worker must not be held.
    Pool,
}

impl Blocking {
    async fn run<T: Send + 'static>(self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        match self {
            Blocking::Inline => Ok(work()),
            Blocking::Pool => tokio::task::spawn_blocking(work)
                .await
                .map_err(|e| format!("the component's loading thread failed: {e}")),
        }
    }
}

/// Runs `kind: composite` packs. Keep one per runtime: it holds the engine and the instance caches.
pub struct CompositeAdapter {
    /// Use the pooling allocator where the machine allows it (long-lived runtimes); a one-shot process
    /// allocates on demand, since reserving and tearing down the pool costs more than its one call saves.
    pooling: bool,
    engine: OnceLock<Result<(Engine, bool), String>>,
    /// Drives the calls of synchronous callers (made on first use; an async caller's calls never need it).
    tokio: OnceLock<Result<tokio::runtime::Runtime, String>>,
    /// Each pack's prepared component, with the digest it was prepared from.
    prepared: Mutex<HashMap<String, (String, Arc<Prepared>)>>,
    /// Told of each compile (`hcpx serve` logs them).
    pub(crate) compiles: Option<CompileObserver>,
    /// Whether the runtime's background compile loop runs (`Runtime::keep_compiled`).
    pub(crate) warming: std::sync::atomic::AtomicBool,
}

impl Default for CompositeAdapter {
    fn default() -> Self {
        CompositeAdapter::new()
    }
}

impl CompositeAdapter {
    /// An adapter with no engine yet (it is made on first use).
    pub fn new() -> CompositeAdapter {
        CompositeAdapter::with_pooling(true)
    }

    fn with_pooling(pooling: bool) -> CompositeAdapter {
        CompositeAdapter {
            pooling,
            engine: OnceLock::new(),
            tokio: OnceLock::new(),
            prepared: Mutex::new(HashMap::new()),
            compiles: None,
            warming: Default::default(),
        }
    }

    /// Tells `observer` of every compile this adapter does.
    pub fn observe_compiles(&mut self, observer: Option<CompileObserver>) {
        self.compiles = observer;
    }

    /// Whether the pack's component, at `sha`, is prepared in this adapter.
    pub fn is_prepared(&self, pack_id: &str, sha: &str) -> bool {
        self.prepared.lock().is_ok_and(|m| m.get(pack_id).is_some_and(|(have, _)| have == sha))
    }

    /// An adapter for a process that runs one call and exits: on-demand instance allocation.
    pub fn one_shot() -> CompositeAdapter {
        CompositeAdapter::with_pooling(false)
    }

    /// The engine, and whether it uses the pooling allocator. A one-shot adapter's is the process's one-shot
    /// engine, shared by every one-shot adapter (`epoch_clock`: what advances its epoch must reach it).
    pub fn engine(&self) -> Result<(&Engine, bool), String> {
        if !self.pooling {
            return epoch_clock::engine(|| make_engine(false).map(|(e, _)| e)).map(|e| (e, false));
        }
        match self.engine.get_or_init(|| make_engine(true)) {
            Ok((e, pooled)) => Ok((e, *pooled)),
            Err(msg) => Err(msg.clone()),
        }
    }

    /// What advances the epoch while a call of up to `timeout` runs, until the guard drops. A long-lived
    /// adapter's engine has its ticker thread (`None`). A one-shot adapter's call driven on the calling thread
    /// (`Blocking::Inline`: `run`, `runnable`) gets a timer that signals this thread at the deadline only; an
    /// async caller's, which may move between threads, the ticker thread, started then.
    fn epoch(&self, blocking: Blocking, timeout: Duration) -> Result<Option<epoch_clock::Deadline>, String> {
        match (self.pooling, blocking) {
            (true, _) => Ok(None),
            (false, Blocking::Inline) => epoch_clock::arm(timeout, TICK).map(Some),
            (false, Blocking::Pool) => epoch_clock::ticking(TICK).map(|()| None),
        }
    }

    /// Drives `fut` to its end on the calling thread, inside the adapter's own tokio runtime (its clock and its
    /// blocking pool): how a synchronous caller runs what an async caller awaits. A deadline is the future's own
    /// (`tokio::time::timeout` inside it).
    ///
    /// Blocking: call it from a plain thread (in async code, from `spawn_blocking`), never from a task.
    pub fn block_on<F: Future>(&self, fut: F) -> Result<F::Output, String> {
        match self.tokio.get_or_init(|| make_tokio(self.pooling)) {
            Ok(rt) => Ok(rt.block_on(fut)),
            Err(msg) => Err(msg.clone()),
        }
    }

    /// The checks that come before a component is used (its digest recorded, allow-listed), then the prepared
    /// component if this adapter already has it: `Ok(None)` means it must be loaded (`load`).
    fn admitted(&self, pack: &Pack, env: Env<'_>) -> Result<Option<Arc<Prepared>>, Denial> {
        let installed = installed(pack, env)?;
        if let Some(allowed) = &env.sandbox.allow_components {
            if !allowed.iter().any(|a| a == installed) {
                return Err(Denial::new(
                    Code::SandboxDenied,
                    format!("sandbox: component {installed} not allowlisted; add it to allow_components in sandbox.json"),
                ));
            }
        }
        let cached = self
            .prepared
            .lock()
            .ok()
            .and_then(|m| m.get(&pack.id).filter(|(sha, _)| sha == installed).map(|(_, p)| p.clone()));
        Ok(cached)
    }

    /// The pack's prepared component: from this adapter's cache, else loaded, which reads, hashes and compiles
    /// (or reads the compile cache) on `blocking`, then asks the component what it implements.
    async fn ready(&self, pack: &Pack, env: Env<'_>, blocking: Blocking) -> Result<Arc<Prepared>, Denial> {
        match self.admitted(pack, env)? {
            Some(p) => Ok(p),
            None => self.load(pack, env, blocking).await,
        }
    }

    async fn load(&self, pack: &Pack, env: Env<'_>, blocking: Blocking) -> Result<Arc<Prepared>, Denial> {
        let fail = |msg: String| Denial::new(Code::AdapterFailed, msg);
        let installed = installed(pack, env)?.to_string();
        let (engine, _) = self.engine().map_err(fail)?;
        let source = Source {
            id: pack.id.clone(),
            dir: pack.dir.clone(),
            component: pack.component.clone(),
            cache: env.layout.cache.clone(),
            installed: installed.clone(),
        };
        let owned = engine.clone();
        let observer = self.compiles.clone();
        let (prepared, remembered) = blocking
            .run(move || {
                let on = |step: Step| {
                    if let Some(o) = &observer {
                        o(&CompileEvent { pack_id: &source.id, component_sha256: &source.installed, step });
                    }
                };
                let compiled = source.compile(&owned, &on);
                compiled.map(|c| (c, cache::remembered_commands(&source.cache, &source.installed)))
            })
            .await
            .map_err(fail)?
            .map_err(fail)?;
        let names = match remembered {
            Some(names) => names,
            None => {
                let names = describe(self, &prepared.pre, blocking).await.map_err(fail)?;
                let (cache, sha, kept) = (env.layout.cache.clone(), installed.clone(), names.clone());
                blocking.run(move || cache::remember_commands(&cache, &sha, &kept)).await.map_err(fail)?;
                names
            }
        };
        check_commands(&names, pack).map_err(fail)?;
        let prepared = Arc::new(prepared);
        if let Ok(mut m) = self.prepared.lock() {
            m.insert(pack.id.clone(), (installed, prepared.clone()));
        }
        Ok(prepared)
    }
}

/// The component must implement every command the manifest declares: `names` is its `describe` answer, asked of
/// a one-off instance once per component digest and store (`cache::remembered_commands`).
fn check_commands(names: &[String], pack: &Pack) -> Result<(), String> {
    if let Some(missing) = pack.commands.keys().find(|k| !names.contains(k)) {
        return Err(format!(
            "the component does not implement command {missing} (it describes: {})",
            names.join(", ")
        ));
    }
    Ok(())
}

/// The command names a one-off instance of the component answers `describe` with, under its own memory cap
/// and deadline.
async fn describe(
    adapter: &CompositeAdapter,
    pre: &CompositePre<CallState>,
    blocking: Blocking,
) -> Result<Vec<String>, String> {
    let (engine, _) = adapter.engine()?;
    let mut wstore = new_store(
        engine,
        adapter.pooling,
        DESCRIBE_MEMORY_MB,
        DESCRIBE_TIMEOUT.as_millis() as u64,
        Vec::new(),
        None,
        http::Outgoing::none(),
    )?;
    let _epoch = adapter.epoch(blocking, DESCRIBE_TIMEOUT)?;
    let described = tokio::time::timeout(DESCRIBE_TIMEOUT, async {
        let inst = pre
            .instantiate_async(&mut wstore)
            .await
            .map_err(|e| format!("the component cannot start: {e:#}"))?;
        inst.call_describe(&mut wstore).await.map_err(|e| format!("describe failed: {e:#}"))
    })
    .await;
    described.map_err(|_| format!("describe did not answer within {} ms", DESCRIBE_TIMEOUT.as_millis()))?
}

/// What the component of the pack in `pack.dir` (not installed: `hcpx check` reads the author's directory) says
/// it implements: read through a capability on the pack, compiled (or found compiled) in `cache`, the
/// operator's compile cache, keyed by its digest as every call's is (without a cache: compiled afresh), linked
/// as the runtime links it, and asked `describe` once. Blocks.
pub fn describe_pack(pack: &Pack, cache: Option<&Path>) -> Result<Vec<String>, String> {
    let adapter = CompositeAdapter::one_shot();
    let (engine, _) = adapter.engine()?;
    let source = Source::of_pack(pack, PathBuf::new());
    let bytes = source.read()?;
    let component = match cache {
        Some(dir) => {
            let sha = crate::model::digest::sha256_hex(&bytes);
            cache::load(dir, engine, &sha, &cache::memo(dir), || Ok(bytes), &|_| {})?.component
        }
        None => {
            Component::new(engine, &bytes).map_err(|e| format!("the component does not compile: {e:#}"))?
        }
    };
    let linked = link(engine, &component)?;
    adapter.block_on(describe(&adapter, &linked.pre, Blocking::Inline))?
}

/// The component digest recorded at install, without which nothing is loaded.
fn installed<'a>(pack: &Pack, env: Env<'a>) -> Result<&'a str, Denial> {
    env.component_sha256.ok_or_else(|| {
        Denial::new(
            Code::AdapterFailed,
            format!("pack {} has no component digest recorded at install; reinstall it", pack.id),
        )
    })
}

fn make_engine(pooling: bool) -> Result<(Engine, bool), String> {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true).epoch_interruption(true);
    let mut pool = PoolingAllocationConfig::default();
    // Only a pooled engine resets memories in place; asking opens `/proc/self/pagemap` once.
    let scan = pooling && PoolingAllocationConfig::is_pagemap_scan_available();
    pool.total_component_instances(64)
        .total_core_instances(256)
        .total_memories(64)
        .total_tables(256)
        .max_memory_size(POOL_MAX_MEMORY)
        .total_stacks(64)
        // Resetting a reused memory. Where the kernel has `PAGEMAP_SCAN` (Linux 6.7+), the pages the last call
        // dirtied are found and copied back or zeroed in place, up to 1 MiB of them, and only the rest is returned
        // with madvise: the next call of the component faults no page in and no other core's TLB is flushed (a
        // served transit `plan` 1.4x as fast; docs/perf-log.md, #39). Without it, the first 64 KiB are zeroed in
        // place and the rest returned (for the transit component 64 KiB beat both 0 and 1 MiB then: zeroing a
        // whole MiB blindly cost more than the page faults it saved). Either way nothing of one call is left for
        // the next (tests/integration/composite_residue.rs).
        .linear_memory_keep_resident(if scan { 1 << 20 } else { 64 << 10 })
        .pagemap_scan(if scan { wasmtime::Enabled::Yes } else { wasmtime::Enabled::No })
        .table_keep_resident(1 << 16)
        .decommit_batch_size(16);
    let mut pooled_cfg = cfg.clone();
    pooled_cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let (engine, pooled) = match pooling.then(|| Engine::new(&pooled_cfg).ok()).flatten() {
        Some(e) => (e, true),
        // The machine may refuse the pool's address-space reservation: fall back to on-demand allocation.
        None => {
            (Engine::new(&cfg).map_err(|e| format!("cannot start the WebAssembly engine: {e:#}"))?, false)
        }
    };
    if !pooling {
        // A one-shot engine's epoch is advanced per call (`CompositeAdapter::epoch`), not by a thread of its own.
        return Ok((engine, pooled));
    }
    let ticker = engine.weak();
    std::thread::Builder::new()
        .name("hcpx-epoch".into())
        .spawn(move || loop {
            std::thread::sleep(TICK);
            match ticker.upgrade() {
                Some(e) => e.increment_epoch(),
                None => return,
            }
        })
        .map_err(|e| format!("cannot start the epoch ticker: {e}"))?;
    Ok((engine, pooled))
}

/// A call's Store. Its deadline, `timeout_ms` from now: on a long-lived engine, counted in the ticker's ticks;
/// on the one-shot engine, a time the epoch callback compares with the clock at each advance of the epoch (which
/// comes from this call's timer, another call's, or the ticker), so no advance but a late one stops it.
#[allow(clippy::too_many_arguments)]
fn new_store(
    engine: &Engine,
    pooling: bool,
    memory_mb: u64,
    timeout_ms: u64,
    credentials: Vec<String>,
    preopen: Option<(&Path, bool)>,
    outgoing: http::Outgoing,
) -> Result<WStore<CallState>, String> {
    let mut wasi = WasiCtxBuilder::new();
    wasi.env("HCP_SANDBOX", crate::model::SandboxMode::Sandbox.as_str());
    // No sockets and no name lookups of its own: a composite's only way out is the host's HTTP, under the
    // command's egress policy (http.rs). These are wasmtime's defaults, said here so no change of them goes
    // unseen (tests/integration/escape_composite_net.rs).
    wasi.allow_tcp(false).allow_udp(false).allow_ip_name_lookup(false);
    if let Some((dir, writable)) = preopen {
        let perms = if writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
        wasi.preopened_dir(dir, ".", perms)
            .map_err(|e| format!("cannot open the workspace {}: {e:#}", dir.display()))?;
    }
    let memory = (memory_mb as usize).saturating_mul(1 << 20).min(POOL_MAX_MEMORY);
    let limits = host::CallLimits::new(memory);
    let state = CallState::new(wasi.build(), limits, credentials, outgoing);
    let mut store = WStore::new(engine, state);
    store.limiter(|s| &mut s.limits);
    if pooling {
        store.set_epoch_deadline(timeout_ms / TICK.as_millis() as u64 + 1);
    } else {
        let deadline = Instant::now() + Duration::from_millis(timeout_ms);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(Trap::Interrupt.into())
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
    }
    Ok(store)
}

impl Drop for CompositeAdapter {
    fn drop(&mut self) {
        // A call dropped at its deadline may have left a file operation blocked on tokio's blocking pool (a FIFO
        // no one writes); dropping the runtime normally would wait for it forever.
        if let Some(Ok(rt)) = self.tokio.take() {
            rt.shutdown_background();
        }
    }
}

impl Adapter for CompositeAdapter {
    /// The component and the `exec` inputs it would get; its one preopen (when it imports preopens at all).
    fn plan(&self, call: &Call<'_>) -> Result<crate::adapter::Plan, Denial> {
        let component = call.pack.component.as_deref().map(|c| call.pack.dir.join(c)).unwrap_or_default();
        let args = serde_json::to_string(call.args)
            .map_err(|e| Denial::new(Code::AdapterFailed, format!("cannot encode the arguments: {e}")))?;
        let (workdir, workdir_writable) = crate::adapter::workdir_words(call, call.pack.workspace);
        Ok(crate::adapter::Plan {
            program: component.display().to_string(),
            argv: vec![call.verb_key.to_string(), args],
            workdir,
            workdir_writable,
            env: vec!["HCP_SANDBOX".to_string()],
        })
    }

    /// Checks that the pack's component can run: unchanged since install, allow-listed, and loadable with
    /// every command it declares.
    fn runnable(&self, pack: &Pack, env: Env<'_>) -> Result<(), Denial> {
        if self.admitted(pack, env)?.is_some() {
            return Ok(());
        }
        match self.block_on(self.load(pack, env, Blocking::Inline)) {
            Ok(loaded) => loaded.map(|_| ()),
            Err(e) => Err(Denial::new(Code::AdapterFailed, e)),
        }
    }

    fn run(&self, call: &Call<'_>) -> AdapterResult {
        match self.block_on(self.execute(call, Blocking::Inline)) {
            Ok(out) => out,
            Err(e) => AdapterResult::fail(Code::AdapterFailed, e),
        }
    }

    /// The call awaited in place, on the caller's runtime; loading a component it has not yet prepared goes to
    /// the blocking pool.
    fn run_async(&self, call: Arc<dyn OwnedCall>) -> RunFuture<'_> {
        Box::pin(async move { self.execute(&call.call(&NoHooks), Blocking::Pool).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::digest::sha256_hex;

    #[test]
    fn a_component_that_imports_no_preopens_gets_none() {
        let pack =
            Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/transit-composite")).unwrap();
        let bytes = std::fs::read(pack.dir.join(pack.component.as_deref().unwrap())).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let source = Source {
            id: pack.id.clone(),
            dir: pack.dir.clone(),
            component: pack.component.clone(),
            cache: cache.path().to_path_buf(),
            installed: sha256_hex(&bytes),
        };
        let adapter = CompositeAdapter::one_shot();
        let prepared = source.compile(adapter.engine().unwrap().0, &|_| {}).unwrap();
        assert!(!prepared.files, "transit-composite imports no wasi:filesystem/preopens");
        assert!(!prepared.http, "transit-composite is built for hcp:adapter@0.1.0, without wasi:http");
        let changed = Source { installed: "0".repeat(64), ..source };
        let refused = changed.compile(adapter.engine().unwrap().0, &|_| {}).err().unwrap();
        assert!(refused.contains("changed since install"), "{refused}");
    }
}
