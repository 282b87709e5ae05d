//! The composite adapter: a pack's WASI component run in-process under wasmtime with no ambient authority.
//! Compiled once (on-disk cache), `InstancePre` cached per component, a fresh `Store` per call with a memory cap
//! and a deadline. The component's only preopen is its workspace directory.
//!
//! A call runs on the caller's thread, async under a tokio timeout: epoch interruption stops running wasm code
//! at the deadline, and the timeout drops a call that is blocked in a WASI host call (a sleep, a FIFO read),
//! which unwinds its fiber. Blocking file work goes to tokio's blocking pool, so nothing holds the caller.

pub mod bindings;
mod cache;
pub mod host;

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store as WStore, Trap};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::{workspace, Adapter, AdapterResult, Call, Env};
use crate::model::digest::sha256_hex;
use crate::model::{Code, Denial};
use crate::pack::Pack;
use crate::store::Layout;
use bindings::hcp::adapter::types::{CallContext, Credential};
use bindings::{Composite, CompositePre};
use host::CallState;

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
}

/// What drives async calls: tokio's clock for the deadline and WASI sleeps, and its pool for blocking file work.
fn make_tokio(pooling: bool) -> Result<tokio::runtime::Runtime, String> {
    let built = if pooling {
        // A long-lived runtime may be called from many threads at once: one worker thread drives the timers,
        // so one caller's deadline fires even while another caller's wasm is running.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hcpx-wasi")
            .enable_time()
            .build()
    } else {
        // One call per process: its own thread drives the timers while it waits.
        tokio::runtime::Builder::new_current_thread().enable_time().build()
    };
    built.map_err(|e| format!("cannot start the async runtime for components: {e}"))
}

/// Runs `kind: composite` packs. Keep one per runtime: it holds the engine and the instance caches.
pub struct CompositeAdapter {
    /// Use the pooling allocator where the machine allows it (long-lived runtimes); a one-shot process
    /// allocates on demand, since reserving and tearing down the pool costs more than its one call saves.
    pooling: bool,
    engine: OnceLock<Result<(Engine, bool), String>>,
    tokio: OnceLock<Result<tokio::runtime::Runtime, String>>,
    prepared: Mutex<HashMap<String, Arc<Prepared>>>,
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
        }
    }

    /// An adapter for a process that runs one call and exits: on-demand instance allocation.
    pub fn one_shot() -> CompositeAdapter {
        CompositeAdapter::with_pooling(false)
    }

    /// The engine, and whether it uses the pooling allocator.
    pub fn engine(&self) -> Result<(&Engine, bool), String> {
        match self.engine.get_or_init(|| make_engine(self.pooling)) {
            Ok((e, pooled)) => Ok((e, *pooled)),
            Err(msg) => Err(msg.clone()),
        }
    }

    /// Runs `fut` on the caller's thread, inside the adapter's tokio runtime, for at most `limit`; `Ok(None)`
    /// when it was dropped at the limit.
    ///
    /// Blocking: call it from a plain thread (in async code, from `spawn_blocking`), never from a task.
    pub fn block_on<F: std::future::Future>(
        &self,
        limit: Duration,
        fut: F,
    ) -> Result<Option<F::Output>, String> {
        match self.tokio.get_or_init(|| make_tokio(self.pooling)) {
            // The timer is made inside the runtime: it needs its clock.
            Ok(rt) => Ok(rt.block_on(async { tokio::time::timeout(limit, fut).await.ok() })),
            Err(msg) => Err(msg.clone()),
        }
    }

    fn prepare(
        &self,
        layout: &Layout,
        pack: &Pack,
        bytes: &[u8],
        sha: &str,
    ) -> Result<Arc<Prepared>, String> {
        let (engine, _) = self.engine()?;
        let component = cache::load(&layout.cache, engine, bytes, sha)?;
        let mut linker: Linker<CallState> = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| format!("cannot link WASI: {e:#}"))?;
        Composite::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)
            .map_err(|e| format!("cannot link the host interface: {e:#}"))?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| format!("the component does not fit the hcp:adapter world: {e:#}"))?;
        let pre = CompositePre::new(pre)
            .map_err(|e| format!("the component does not export the hcp:adapter world: {e:#}"))?;
        // The component must implement every command the manifest declares.
        let mut wstore =
            new_store(engine, DESCRIBE_MEMORY_MB, DESCRIBE_TIMEOUT.as_millis() as u64, Vec::new(), None)?;
        let described = self.block_on(DESCRIBE_TIMEOUT, async {
            let inst = pre
                .instantiate_async(&mut wstore)
                .await
                .map_err(|e| format!("the component cannot start: {e:#}"))?;
            inst.call_describe(&mut wstore).await.map_err(|e| format!("describe failed: {e:#}"))
        })?;
        let names = described
            .ok_or_else(|| format!("describe did not answer within {} ms", DESCRIBE_TIMEOUT.as_millis()))??;
        if let Some(missing) = pack.commands.keys().find(|k| !names.contains(k)) {
            return Err(format!(
                "the component does not implement command {missing} (it describes: {})",
                names.join(", ")
            ));
        }
        Ok(Arc::new(Prepared { pre }))
    }
}

fn make_engine(pooling: bool) -> Result<(Engine, bool), String> {
    let mut cfg = Config::new();
    cfg.wasm_component_model(true).epoch_interruption(true);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(64)
        .total_core_instances(256)
        .total_memories(64)
        .total_tables(256)
        .max_memory_size(POOL_MAX_MEMORY)
        .total_stacks(64)
        // Resetting a reused memory: the first 64 KiB are zeroed in place, the rest returned with madvise. For the
        // transit component, 64 KiB beat both 0 and 1 MiB (zeroing a whole MiB costs more than the page faults
        // it saves; docs/perf.md).
        .linear_memory_keep_resident(64 << 10)
        .table_keep_resident(1 << 16);
    let mut pooled_cfg = cfg.clone();
    pooled_cfg.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    let (engine, pooled) = match pooling.then(|| Engine::new(&pooled_cfg).ok()).flatten() {
        Some(e) => (e, true),
        // The machine may refuse the pool's address-space reservation: fall back to on-demand allocation.
        None => {
            (Engine::new(&cfg).map_err(|e| format!("cannot start the WebAssembly engine: {e:#}"))?, false)
        }
    };
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

fn new_store(
    engine: &Engine,
    memory_mb: u64,
    timeout_ms: u64,
    credentials: Vec<String>,
    preopen: Option<(&std::path::Path, bool)>,
) -> Result<WStore<CallState>, String> {
    let mut wasi = WasiCtxBuilder::new();
    wasi.env("HCP_SANDBOX", crate::model::SandboxMode::Sandbox.as_str());
    if let Some((dir, writable)) = preopen {
        let perms = if writable { FsPerms::ReadWrite } else { FsPerms::ReadOnly };
        wasi.preopened_dir(dir, ".", perms)
            .map_err(|e| format!("cannot open the workspace {}: {e:#}", dir.display()))?;
    }
    let memory = (memory_mb as usize).saturating_mul(1 << 20).min(POOL_MAX_MEMORY);
    let limits = host::CallLimits::new(memory);
    let state = CallState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        limits,
        credentials,
        log: String::new(),
    };
    let mut store = WStore::new(engine, state);
    store.limiter(|s| &mut s.limits);
    store.set_epoch_deadline(timeout_ms / TICK.as_millis() as u64 + 1);
    Ok(store)
}

/// Reads the pack's component through a capability on the installed pack directory.
fn read_component(pack: &Pack) -> Result<Vec<u8>, String> {
    let rel = pack.component.as_deref().ok_or_else(|| format!("pack {} names no component", pack.id))?;
    let root = cap_std::fs::Dir::open_ambient_dir(&pack.dir, cap_std::ambient_authority())
        .map_err(|e| format!("the installed pack cannot be opened: {}", crate::model::io_reason(&e)))?;
    let mut bytes = Vec::new();
    root.open(rel)
        .and_then(|f| f.take(MAX_COMPONENT_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("component {rel} cannot be read: {}", crate::model::io_reason(&e)))?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(format!("component {rel} is larger than {} MiB", MAX_COMPONENT_BYTES >> 20));
    }
    Ok(bytes)
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

impl CompositeAdapter {
    /// Checks that the pack's component can run: unchanged since install, allow-listed, and loadable with
    /// every declared command. Returns its digest and the prepared instance.
    ///
    /// The bytes are read and hashed once per process and component; later calls reuse the instance prepared
    /// from those verified bytes, so a file changed afterwards is never loaded.
    fn ready(&self, pack: &Pack, env: Env<'_>) -> Result<(String, Arc<Prepared>), Denial> {
        let (sandbox, installed) = (env.sandbox, env.component_sha256);
        let fail = |msg: String| Denial::new(Code::AdapterFailed, msg);
        let installed = installed.ok_or_else(|| {
            fail(format!("pack {} has no component digest recorded at install; reinstall it", pack.id))
        })?;
        if let Some(allowed) = &sandbox.allow_components {
            if !allowed.iter().any(|a| a == installed) {
                return Err(Denial::new(
                    Code::SandboxDenied,
                    format!("sandbox: component {installed} not allowlisted"),
                ));
            }
        }
        let key = format!("{}:{installed}", pack.id);
        if let Some(p) = self.prepared.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok((installed.to_string(), p));
        }
        let bytes = read_component(pack).map_err(fail)?;
        let sha = sha256_hex(&bytes);
        if sha != installed {
            return Err(fail(format!(
                "component of pack {} changed since install (sha256 {sha}, installed {installed}); it is not loaded: reinstall the pack",
                pack.id
            )));
        }
        let prepared = self.prepare(env.layout, pack, &bytes, &sha).map_err(fail)?;
        if let Ok(mut m) = self.prepared.lock() {
            m.insert(key, prepared.clone());
        }
        Ok((sha, prepared))
    }
}

impl Adapter for CompositeAdapter {
    fn runnable(&self, pack: &Pack, env: Env<'_>) -> Result<(), Denial> {
        self.ready(pack, env).map(|_| ())
    }

    fn run(&self, call: &Call<'_>) -> AdapterResult {
        let fail = |msg: String| AdapterResult::fail(Code::AdapterFailed, msg);
        let (sha, prepared) = match self.ready(call.pack, call.env) {
            Ok(x) => x,
            Err(d) => return d.into(),
        };
        let work = match workspace::prepare(
            call.env.layout,
            call.pack,
            call.pack.workspace,
            call.project_dir,
            false,
        ) {
            Ok(w) => w,
            Err(d) => return d.into(),
        };
        let (engine, _) = match self.engine() {
            Ok(e) => e,
            Err(e) => return fail(e),
        };
        let limits = call.env.sandbox.limits();
        // The same rule as a wrap's working directory (decisions.md §13): a read gets the project read-only.
        let writable = crate::sandbox::workdir_writable(call.pack.workspace, call.write);
        let fields: Vec<(String, String)> =
            call.binding.fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let creds: Vec<Credential> = fields
            .iter()
            .enumerate()
            .map(|(i, (k, _))| Credential { field: k.clone(), handle: i as u32 })
            .collect();
        let values: Vec<String> = fields.into_iter().map(|(_, v)| v).collect();
        // A write in the caller's project sees it through a namespace where .git/config and .git/hooks are
        // read-only (a preopen has no per-path permissions), where the kernel allows namespaces.
        let guard_wanted = writable
            && call.pack.workspace == crate::pack::WorkspaceMode::Project
            && crate::sandbox::KernelProbe::get().namespaces()
            && !call.env.sandbox.disable.contains(&crate::model::LayerName::MountNamespace);
        let guard = match guard_wanted.then(|| crate::sandbox::gitguard::guard_git(&work.path)).transpose() {
            Ok(g) => g.flatten(),
            Err(e) => return AdapterResult::fail(Code::SandboxDenied, format!("sandbox: {e}")),
        };
        let preopen = guard.as_ref().map(|g| g.path()).unwrap_or_else(|| work.path.clone());
        let store = match new_store(
            engine,
            limits.memory_mb,
            limits.timeout_ms,
            values,
            Some((&preopen, writable)),
        ) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let ctx = CallContext {
            principal: call.principal.id.clone(),
            tenant: call.principal.tenant.clone(),
            workspace_mode: call.pack.workspace.as_str().to_string(),
            credentials: creds,
        };
        let args = serde_json::Value::Object(call.args.clone()).to_string();
        if call.hooks.watching() {
            call.hooks.started(
                call.live_title,
                &format!("{} {} (component {})", call.pack.id, call.verb_key, &sha[..12]),
            );
        }
        let timeout = Duration::from_millis(limits.timeout_ms);
        // The call ends when the component answers, the deadline passes, or the caller cancels (the future is
        // dropped at its next await; a guest that never awaits is stopped by its epoch deadline).
        let cancel = call.cancel.clone();
        let running = async {
            tokio::select! {
                a = call_component(prepared, store, ctx, call.verb_key, &args) => Some(a),
                () = cancelled(&cancel) => None,
            }
        };
        let answer = match self.block_on(timeout, running) {
            Ok(Some(None)) => {
                let _ = guard.as_ref().map(|g| g.restore());
                return AdapterResult::fail(
                    Code::Cancelled,
                    "cancelled: the caller cancelled the call; the component was stopped",
                );
            }
            Ok(Some(Some(a))) => Ok(Some(a)),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        let restored = guard.as_ref().map(|g| g.restore()).unwrap_or(Ok(()));
        drop(guard);
        drop(work);
        if let Err(e) = restored {
            return AdapterResult::fail(Code::AdapterFailed, e.to_string());
        }
        let (outcome, log) = match answer {
            Ok(Some(answer)) => answer,
            Ok(None) => {
                return AdapterResult::fail(
                    Code::Timeout,
                    format!("timed out after {} ms while the component waited in a host call; it was stopped (raise timeout_ms in sandbox.json if it needs longer)", limits.timeout_ms),
                )
            }
            Err(e) => return fail(e),
        };
        // A component's answer is capped like a wrap's output: past max_output_bytes it is cut (and, cut, no
        // longer parsed as JSON) and the result says `truncated`.
        let cap = limits.max_output_bytes as usize;
        let mut truncated = false;
        let mut cut = |s: String| -> String {
            if s.len() <= cap {
                return s;
            }
            truncated = true;
            let mut end = cap;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s[..end].to_string()
        };
        let mut out = match outcome {
            Ok(Ok(text)) if text.len() > cap => AdapterResult {
                ok: true,
                result: Some(serde_json::Value::String(cut(text))),
                ..AdapterResult::default()
            },
            Ok(Ok(text)) => AdapterResult {
                ok: true,
                result: Some(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))),
                ..AdapterResult::default()
            },
            Ok(Err(msg)) => AdapterResult::fail(Code::ExitNonzero, cut(msg)),
            Err(e) => classify_trap(&e, limits.timeout_ms, limits.memory_mb),
        };
        if !log.is_empty() {
            out.stderr = Some(cut(log));
        }
        out.truncated = Some(truncated);
        out
    }
}

type Outcome = (wasmtime::Result<Result<String, String>>, String);

/// Instantiates the component and calls it. Run under the call's deadline: epoch interruption stops wasm code at
/// the deadline (a trap); a call still pending then is blocked in a host call, and the timeout drops this future,
/// which unwinds the guest's fiber and frees its Store.
async fn call_component(
    prepared: Arc<Prepared>,
    mut store: WStore<CallState>,
    ctx: CallContext,
    verb: &str,
    args: &str,
) -> Outcome {
    let outcome = match prepared.pre.instantiate_async(&mut store).await {
        Ok(inst) => inst.call_exec(&mut store, &ctx, verb, args).await,
        Err(e) => Err(e),
    };
    let log = std::mem::take(&mut store.data_mut().log);
    (outcome, log)
}

fn classify_trap(e: &wasmtime::Error, timeout_ms: u64, memory_mb: u64) -> AdapterResult {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return AdapterResult::fail(Code::Timeout, format!("timed out after {timeout_ms} ms; the component was stopped (raise timeout_ms in sandbox.json if it needs longer)"));
    }
    if e.chain().any(|c| c.downcast_ref::<host::MemoryCapReached>().is_some()) {
        return AdapterResult::fail(
            Code::AdapterFailed,
            format!("the component exceeded its memory cap of {memory_mb} MiB (memory_mb in sandbox.json)"),
        );
    }
    let text = format!("{e:#}");
    let first = text.lines().next().unwrap_or("trap").to_string();
    AdapterResult::fail(Code::AdapterFailed, format!("the component failed: {first}"))
}

/// Resolves once `cancel` is set, looking every 20 ms.
async fn cancelled(cancel: &crate::model::Cancel) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
