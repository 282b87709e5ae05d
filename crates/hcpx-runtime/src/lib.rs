//! hcpx-runtime: the adapters and the pipeline. `Runtime::exec` runs the seven fail-closed steps of an HCP call
//! (docs/runtime.md), in order, for every face. The steps themselves are in `pipeline.rs` (admission, steps 1–5,
//! and the run of step 6) and `finish.rs` (step 7), one function each. A synchronous call is admit, run
//! blocking, finish; `exec_async` is admit, the run awaited on the caller's tokio runtime, finish. Both adapters
//! sit behind one trait (`adapter`): a wrap spawns its CLI through the sandbox, a composite runs its WASI
//! component in-process under wasmtime.
//!
//! May use: hcpx-model, hcpx-pack, hcpx-store and hcpx-sandbox, and wasmtime. Must never: run a call that did
//! not pass every step, hand a child or a component what the pack and the operator did not grant, or hold
//! `unsafe` code (the compile cache that maps compiled components is the sandbox crate's).

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::{args, pack, render};
use hcpx_sandbox as sandbox;
use hcpx_store as store;

pub mod adapter;

mod approval;
mod availability;
pub mod binding;
mod built_in;
mod compiled;
mod dry_run;
mod finish;
pub mod fix;
pub mod host_paths;
mod job;
mod pass_through;
mod pipeline;
pub mod report;
pub mod report_store;
pub mod scrub;
pub mod sense;
pub mod tasks;
pub mod trace;
mod turn;
pub mod visible;

pub use adapter::egress::{EgressRow, CLASSES as EGRESS_CLASSES};
pub use approval::{DecidedThrough, DecisionRefused, Refusal};
pub use availability::{Availability, Notes};
pub use binding::{mint, required_fields, MintError};
pub use dry_run::DryRun;

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::adapter::composite::CompositeAdapter;
use crate::adapter::wrap::WrapAdapter;
use crate::adapter::{Adapter, AdapterResult, ExecHooks, NoHooks};
use crate::model::{Code, Denial, Envelope, Principal, ResultEnvelope};
use crate::pack::{AdapterKind, Pack};
use crate::store::packs::PackState;
use crate::store::{Store, StoreError};

/// A pack as the store holds it, with its install record (none for a built-in pack).
type Held<'s> = (Arc<Pack>, Option<&'s PackState>);
use pipeline::Admission;

/// The runtime over one store.
pub struct Runtime {
    store: Store,
    project_dir: Option<PathBuf>,
    composite: CompositeAdapter,
    packs: Mutex<HashMap<String, (String, Arc<Pack>)>>,
    /// Each tenant's layout, made once: its paths do not change while the runtime runs.
    layouts: Mutex<HashMap<String, Arc<crate::store::Layout>>>,
    /// At most this many calls at once (0: no limit); past it a call is `busy`.
    max_calls: usize,
    in_flight: Arc<AtomicUsize>,
    /// Told of every call `exec_async` answers (`hcpx serve`'s metrics).
    observer: Option<Arc<dyn CallObserver>>,
    /// Traces the calls `exec_async` answers, when the operator named a collector (`trace`).
    tracer: Option<Arc<trace::Tracer>>,
    /// The store's and the temp directory's paths, which a served caller is never told: found on first use (a
    /// served face's), so a one-shot CLI call does not pay for them.
    host_paths: std::sync::OnceLock<host_paths::HostPaths>,
    /// The tasks this process runs, for their cancellation (`tasks`).
    running: tasks::Running,
}

/// Told of each call the async exec path answers (the served faces, HTTP and MCP over HTTP), after it ended:
/// who, what, the result and how long it took. Called on the caller's task, so it must be cheap (atomics).
pub trait CallObserver: Send + Sync {
    fn observed(
        &self,
        principal: &Principal,
        env: &Envelope,
        out: &ResultEnvelope,
        took: std::time::Duration,
    );

    /// The outgoing requests of a call through its egress proxy, before step 7 audits them. A served call whose
    /// client left is dropped before step 7: its requests are neither audited nor observed.
    fn egress(&self, _principal: &Principal, _env: &Envelope, _rows: &[EgressRow]) {}
}

/// What one call brings with it beyond its envelope. A served runtime serves many projects, or none: the
/// project directory is the call's, not the runtime's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallContext {
    /// The caller's project, for `project`-mode packs; `None` refuses them with `no_project`.
    pub project_dir: Option<PathBuf>,
    /// Set to stop the call (its caller went away or cancelled); `exec_async` sets it when its future is
    /// dropped before the call ended.
    pub cancel: crate::model::Cancel,
    /// The most this call may take, when its caller says (an HTTP request's `Hcp-Timeout-Ms`); the operator's
    /// `timeout_ms` still caps it. Past it the call is stopped and answers `timeout`.
    pub deadline: Option<std::time::Duration>,
    /// The face asks the person itself (an MCP client that can elicit): a confirm-gated write that brings no
    /// approval is held as a pending approval even where the operator requires none (its `confirm_required`
    /// answer then carries the approval's id), so the person's answer is bound to this exact call and spent once.
    pub ask_person: bool,
    /// The caller's span (a W3C `traceparent`), when it sent one: a traced call's span is its child.
    pub trace: Option<trace::Parent>,
}

impl CallContext {
    /// A local face's context (the CLI, `hcpx mcp` over stdio): `HCP_PROJECT_DIR`, else the current
    /// directory.
    pub fn local() -> CallContext {
        let project_dir = std::env::var_os("HCP_PROJECT_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::current_dir().ok());
        CallContext {
            project_dir,
            cancel: crate::model::Cancel::new(),
            deadline: None,
            ask_person: false,
            trace: None,
        }
    }
}

/// One of the runtime's call slots, given back when dropped. Owned, so it stays with the call's inputs for as
/// long as the call runs, even past its caller (a wrap whose process group is being stopped).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The arguments of a call: a JSON object, or command-line words parsed against the command's schema.
#[derive(Clone, Copy)]
pub enum ArgsInput<'a> {
    Json(&'a Map<String, Value>),
    Words(&'a [String]),
}

impl Runtime {
    /// A runtime over `store`, with no project directory (a served runtime).
    pub fn new(store: Store) -> Runtime {
        Runtime {
            host_paths: std::sync::OnceLock::new(),
            store,
            project_dir: None,
            composite: CompositeAdapter::new(),
            packs: Mutex::new(HashMap::new()),
            layouts: Mutex::new(HashMap::new()),
            max_calls: 0,
            in_flight: Arc::new(AtomicUsize::new(0)),
            observer: None,
            tracer: None,
            running: Default::default(),
        }
    }

    /// Tells `observer` of every call `exec_async` answers.
    pub fn with_observer(mut self, observer: Arc<dyn CallObserver>) -> Runtime {
        self.observer = Some(observer);
        self
    }

    /// Traces every call `exec_async` answers with `tracer` (`hcpx serve` with a collector named).
    pub fn with_tracer(mut self, tracer: Arc<trace::Tracer>) -> Runtime {
        self.tracer = Some(tracer);
        self
    }

    /// The tracer, when calls are traced.
    pub fn tracer(&self) -> Option<&Arc<trace::Tracer>> {
        self.tracer.as_ref()
    }

    /// Runs at most `n` calls at once (0: no limit); a call past the limit is refused with `busy` before
    /// anything else, and nothing of it runs.
    pub fn with_max_calls(mut self, n: usize) -> Runtime {
        self.max_calls = n;
        self
    }

    /// How many calls are running now.
    pub fn calls_in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Takes a call slot, or says why not.
    fn slot(&self) -> Result<Slot, Denial> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(self.in_flight.clone());
        if self.max_calls > 0 && now >= self.max_calls {
            return Err(Denial::new(
                Code::Busy,
                format!("busy: this runtime is running its limit of {} call(s); retry later", self.max_calls),
            ));
        }
        Ok(slot)
    }

    /// For a process that runs one call and exits (the `hcpx exec` CLI): composites allocate on demand
    /// instead of reserving the pooling allocator, which only pays off across many calls.
    pub fn one_shot(mut self) -> Runtime {
        let compiles = self.composite.compiles.take();
        self.composite = CompositeAdapter::one_shot();
        self.composite.observe_compiles(compiles);
        self
    }

    /// Sets the project directory of every call made through `exec`, `exec_with` and `exec_words` (the CLI's
    /// one caller); `exec_in` and `exec_async` take theirs with the call.
    pub fn with_project_dir(mut self, dir: Option<PathBuf>) -> Runtime {
        self.project_dir = dir;
        self
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// What a served caller is told in place of the host's paths (`hcpx serve`'s answers).
    pub fn host_paths(&self) -> &host_paths::HostPaths {
        self.host_paths.get_or_init(|| host_paths::HostPaths::of(&self.store))
    }

    /// Runs one call through the pipeline.
    pub fn exec(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        self.exec_with(principal, env, &NoHooks)
    }

    /// Runs one call, telling `hooks` when the adapter starts.
    pub fn exec_with(&self, principal: &Principal, env: &Envelope, hooks: &dyn ExecHooks) -> ResultEnvelope {
        self.pipeline(principal, env, ArgsInput::Json(&env.args), &self.own_context(), hooks)
    }

    /// The context of a call made without one: the runtime's project directory (`with_project_dir`).
    /// The project directory the synchronous entries hand their calls.
    pub fn project_dir(&self) -> Option<&PathBuf> {
        self.project_dir.as_ref()
    }

    fn own_context(&self) -> CallContext {
        CallContext { project_dir: self.project_dir.clone(), ..CallContext::default() }
    }

    /// Runs one call with its own context (a served face: the project directory, if any, is the call's).
    pub fn exec_in(&self, principal: &Principal, env: &Envelope, ctx: &CallContext) -> ResultEnvelope {
        self.pipeline(principal, env, ArgsInput::Json(&env.args), ctx, &NoHooks)
    }

    /// The exec path for async callers (the HTTP and MCP faces), awaited on the caller's tokio runtime, which
    /// must have its time driver enabled (`enable_time` or `enable_all`). Admission (steps 1–5) runs on the
    /// calling task: it is cheap, cached reads of the store's files. The run is a future on the same runtime: a
    /// composite is awaited in place (loading a component not yet prepared goes to the blocking pool), a wrap
    /// waits for its child on the blocking pool, so neither holds one of the caller's workers while it waits.
    /// Dropped before the call ended (a client that went away), the future cancels the call: a wrap's process
    /// group is killed, a composite's instance dropped.
    pub async fn exec_async(
        self: Arc<Self>,
        principal: Principal,
        env: Envelope,
        ctx: CallContext,
    ) -> ResultEnvelope {
        let started = std::time::Instant::now();
        // Off (no collector named), the clock is `None`: no recording, no allocation; each step's mark is a branch
        // that does nothing.
        let mut clock = match &self.tracer {
            Some(t) => t.start_call(ctx.trace.as_ref()),
            None => trace::Clock::off(),
        };
        let out = self.exec_async_unobserved(&principal, &env, ctx, &mut clock).await;
        let took = started.elapsed();
        if let Some(o) = &self.observer {
            o.observed(&principal, &env, &out, took);
        }
        if let Some(t) = &self.tracer {
            t.finish_call(&mut clock, &principal, &env, &out, took);
        }
        out
    }

    async fn exec_async_unobserved(
        self: &Arc<Self>,
        principal: &Principal,
        env: &Envelope,
        ctx: CallContext,
        clock: &mut trace::Clock,
    ) -> ResultEnvelope {
        if tokio::runtime::Handle::try_current().is_err() {
            // Awaited outside tokio: there is no runtime to hand anything to, so the call blocks here.
            return self.exec_in(principal, env, &ctx);
        }
        // Dropped before the call ends (a client that went away), this stops the command.
        let guard = crate::model::CancelOnDrop::new(ctx.cancel.clone());
        let out = match self.admit(principal, env, ArgsInput::Json(&env.args), &ctx, &NoHooks, clock) {
            Admission::Answered(out) => *out,
            Admission::Run(admitted) => {
                // A call that may write its pack's workspace waits for its turn on the blocking pool, and holds it
                // while the adapter runs; any other call never touches the pool for it.
                let turn = if turn::takes_turn(&admitted.job) {
                    let (rt, job) = (self.clone(), admitted.job.clone());
                    match tokio::task::spawn_blocking(move || rt.workspace_turn(&job)).await {
                        Ok(t) => t,
                        Err(e) => Err(Box::new(AdapterResult::fail(
                            Code::AdapterFailed,
                            format!("the call's thread failed: {e}"),
                        ))),
                    }
                } else {
                    Ok(None)
                };
                let held = match turn {
                    Ok(held) => held,
                    Err(refused) => {
                        let out = self.finish(principal, env, admitted, *refused);
                        guard.disarm();
                        return out;
                    }
                };
                let ran = match admitted.runner {
                    pipeline::Runner::Adapter(adapter) => adapter.run_async(admitted.job.clone()).await,
                    // A built-in pack's reports may load a composite to describe it, which blocks: on the
                    // blocking pool, the job (and so the call's slot) held until it ends.
                    pipeline::Runner::BuiltIn => {
                        let (rt, job) = (self.clone(), admitted.job.clone());
                        match tokio::task::spawn_blocking(move || rt.answer_built_in(&job)).await {
                            Ok(ran) => ran,
                            Err(e) => AdapterResult::fail(
                                Code::AdapterFailed,
                                format!("the call's thread failed: {e}"),
                            ),
                        }
                    }
                };
                // Stored (or refused) under the turn, on the blocking pool: archiving and the database wait.
                let ran = match held {
                    None => ran,
                    Some(held) => {
                        let (rt, job) = (self.clone(), admitted.job.clone());
                        match tokio::task::spawn_blocking(move || rt.workspace_done(&job, Some(held), ran))
                            .await
                        {
                            Ok(ran) => ran,
                            Err(e) => AdapterResult::fail(
                                Code::AdapterFailed,
                                format!("the call's thread failed: {e}"),
                            ),
                        }
                    }
                };
                if clock.on() {
                    clock.ran(ran.code, ran.ok, &ran.egress);
                }
                let out = self.finish(principal, env, admitted, ran);
                clock.mark(trace::Step::Audit);
                out
            }
        };
        guard.disarm();
        out
    }

    /// Runs a call whose arguments are command-line words (`k=v`, `k:=json`, bare words); `env.args` is ignored.
    pub fn exec_words(
        &self,
        principal: &Principal,
        env: &Envelope,
        words: &[String],
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        self.pipeline(principal, env, ArgsInput::Words(words), &self.own_context(), hooks)
    }

    /// `availability` for async callers: loading a composite to see that it runs blocks, so it runs on the
    /// blocking pool too.
    pub async fn availability_async(self: Arc<Self>, principal: Principal, pack_id: String) -> Availability {
        let rt = self.clone();
        let id = pack_id.clone();
        match tokio::task::spawn_blocking(move || rt.availability(&principal, &id)).await {
            Ok(a) => a,
            Err(e) => Availability {
                pack_id,
                installed: false,
                activated: false,
                bound: false,
                runnable: false,
                notes: Notes {
                    runnable: Some(format!("the check's thread failed: {e}")),
                    ..Notes::default()
                },
            },
        }
    }

    /// The adapter that runs packs of `kind`, when this runtime has one.
    fn adapter(&self, kind: AdapterKind) -> Option<&dyn Adapter> {
        match kind {
            AdapterKind::Wrap => Some(&WrapAdapter),
            AdapterKind::Composite => Some(&self.composite),
            AdapterKind::Openapi | AdapterKind::SenseOnly => None,
        }
    }

    /// The layout of `tenant`'s calls (`Store::layout_for`), made once per tenant.
    fn layout_for(&self, tenant: &str) -> Result<Arc<crate::store::Layout>, StoreError> {
        if let Some(l) = self.layouts.lock().ok().and_then(|m| m.get(tenant).cloned()) {
            return Ok(l);
        }
        let layout = Arc::new(self.store.layout_for(tenant)?);
        if let Ok(mut m) = self.layouts.lock() {
            m.insert(tenant.to_string(), layout.clone());
        }
        Ok(layout)
    }

    /// Pack `id` as the store holds it (built in, or installed and loaded once per install, shared: the
    /// pipeline's own cache), or `unknown_pack` naming the install command. What the reports, the MCP tools and
    /// `hcpx title` read a pack through.
    pub fn installed_pack(&self, id: &str) -> Result<Arc<Pack>, Denial> {
        let state = self.store.state().map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?;
        let built_in = store::built_in::IDS.iter().copied();
        let unknown =
            || fix::unknown_pack(id, state.packs.keys().map(String::as_str).chain(built_in.clone()));
        let held = self.held(id, &state).map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?;
        held.map(|(pack, _)| pack).ok_or_else(unknown)
    }

    /// Pack `id` as the store holds it, with its install record: a built-in pack has none (nothing was
    /// installed, and every tenant has it activated).
    fn held<'s>(&self, id: &str, state: &'s store::packs::State) -> Result<Option<Held<'s>>, StoreError> {
        if let Some(pack) = self.store.built_in(id) {
            return Ok(Some((pack, None)));
        }
        let Some(record) = state.packs.get(id) else { return Ok(None) };
        Ok(self.pack(id, record)?.map(|pack| (pack, Some(record))))
    }

    /// Who runs step 6 for `pack`: the runtime itself for a built-in pack, else the adapter of its kind, when
    /// this runtime has one.
    fn runner(&self, pack: &Pack) -> Option<pipeline::Runner<'_>> {
        if pack.built_in {
            return Some(pipeline::Runner::BuiltIn);
        }
        self.adapter(pack.kind).map(pipeline::Runner::Adapter)
    }

    /// The installed pack, loaded once per install (keyed by its install time) and shared across calls.
    fn pack(&self, id: &str, record: &PackState) -> Result<Option<Arc<Pack>>, StoreError> {
        let cached = self
            .packs
            .lock()
            .ok()
            .and_then(|m| m.get(id).filter(|(at, _)| *at == record.installed_at).map(|(_, p)| p.clone()));
        if let Some(p) = cached {
            return Ok(Some(p));
        }
        let Some(pack) = self.store.load_pack(id)? else { return Ok(None) };
        let pack = Arc::new(pack);
        if let Ok(mut m) = self.packs.lock() {
            m.insert(id.to_string(), (record.installed_at.clone(), pack.clone()));
        }
        Ok(Some(pack))
    }
}
