//! One composite call as a future, start to end: what `run` drives on the adapter's runtime and `run_async`
//! awaits on the caller's. The same code for both, so a served call and a CLI call cannot drift apart.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Store as WStore, Trap};

use super::bindings::hcp::adapter::types::{CallContext, Credential};
use super::host::{self, CallState};
use super::http::{self, Outgoing};
use super::{new_store, Blocking, CompositeAdapter, Prepared};
use crate::adapter::{egress, workspace, AdapterResult, Call};
use crate::model::Code;
use crate::sandbox::gitguard::{GitGuardError, GuardedDir};
use crate::store::config::Limits;

impl CompositeAdapter {
    /// Runs `call`: the prepared component (loaded on `blocking` if this adapter does not have it yet) in a fresh
    /// Store, under the call's deadline and its cancellation.
    pub(super) async fn execute(&self, call: &Call<'_>, blocking: Blocking) -> AdapterResult {
        let fail = |msg: String| AdapterResult::fail(Code::AdapterFailed, msg);
        let prepared = match self.ready(call.pack, call.env, blocking).await {
            Ok(p) => p,
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
        // The same rule as a wrap's working directory (docs/spec.md §14): a read gets the project read-only.
        let writable = crate::sandbox::workdir_writable(call.pack.workspace, call.write);
        let creds: Vec<Credential> = call
            .binding
            .fields
            .keys()
            .enumerate()
            .map(|(i, k)| Credential { field: k.clone(), handle: i as u32 })
            .collect();
        // A host-bound field's handle gives the call's random placeholder, never the value (docs/egress.md
        // Placeholders): the send hook puts the value into requests to its host only. Other fields as before.
        let placeholders = match egress::placeholders(call.pack, call.binding) {
            Ok(p) => p,
            Err(d) => return d.into(),
        };
        let secrets = match egress::secrets(call.pack, call.binding, &placeholders) {
            Ok(s) => s,
            Err(d) => return d.into(),
        };
        let values: Vec<String> =
            call.binding.fields.iter().map(|(k, v)| placeholders.get(k).unwrap_or(v).clone()).collect();
        // A write in the caller's project sees it through a namespace where .git/config and .git/hooks are
        // read-only (a preopen has no per-path permissions), where the kernel allows namespaces.
        let guard_wanted = prepared.files
            && writable
            && call.pack.workspace == crate::pack::WorkspaceMode::Project
            && crate::sandbox::KernelProbe::get().namespaces()
            && !call.env.sandbox.disable.contains(&crate::model::LayerName::MountNamespace);
        // A project without `.git` must not be given one, nor a `.git` what git reads as code (checked after the
        // call, as for a wrap).
        let in_project =
            prepared.files && writable && call.pack.workspace == crate::pack::WorkspaceMode::Project;
        if in_project {
            crate::sandbox::ready_git_guard(&work.path);
        }
        let git_watch = in_project.then(|| crate::sandbox::gitguard::GitWatch::before(&work.path));
        let guard = if guard_wanted {
            let project = work.path.clone();
            match blocking.run(move || crate::sandbox::gitguard::guard_git(&project)).await {
                Ok(Ok(g)) => Guard(g),
                Ok(Err(e)) => return AdapterResult::fail(Code::SandboxDenied, format!("sandbox: {e}")),
                Err(e) => return fail(e),
            }
        } else {
            Guard(None)
        };
        // The workspace is the component's only preopen, when it can open files at all.
        let preopen = match &guard.0 {
            Some(g) => Some(g.path()),
            None => prepared.files.then(|| work.path.clone()),
        };
        // The command's egress policy, the wrap's own (egress.rs), for a component that can send HTTP at all.
        let policy = if prepared.http {
            match egress::call_policy(call.pack, call.verb_key, call.env.sandbox, &call.principal.tenant) {
                Ok(p) => p,
                Err(d) => return d.into(),
            }
        } else {
            hcpx_egress::Policy::default()
        };
        let deadline = tokio::time::Instant::now() + Duration::from_millis(limits.timeout_ms);
        let (outgoing, rows) = Outgoing::new(policy, secrets, &call.pack.id, call.verb_key, deadline);
        let store = match new_store(
            engine,
            self.pooling,
            limits.memory_mb,
            limits.timeout_ms,
            values,
            preopen.as_deref().map(|p| (p, writable)),
            outgoing,
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
        let args = match serde_json::to_string(call.args) {
            Ok(a) => a,
            Err(e) => return fail(format!("the arguments cannot be encoded as JSON: {e}")),
        };
        if call.hooks.watching() {
            let sha = call.env.component_sha256.unwrap_or_default();
            call.hooks.started(
                call.live_title,
                &format!("{} {} (component {})", call.pack.id, call.verb_key, sha.get(..12).unwrap_or(sha)),
            );
        }
        // The call ends when the component answers, the deadline passes, or the caller cancels (the future is
        // dropped at its next await; a guest that never awaits is stopped by its epoch deadline). The component
        // is polled first, so a call that answers without waiting never starts the cancellation's timer.
        let running = async {
            tokio::select! {
                biased;
                a = call_component(prepared, store, ctx, call.verb_key, &args) => Some(a),
                () = cancelled(call.cancel) => None,
            }
        };
        let timeout = Duration::from_millis(limits.timeout_ms);
        let epoch = match self.epoch(blocking, timeout) {
            Ok(e) => e,
            Err(e) => return fail(e),
        };
        let answer = tokio::time::timeout(timeout, running).await;
        // The call's timer, if it has one, is deleted as soon as the component is done with.
        drop(epoch);
        // The Store is gone, and every request with it: each one's row, in the order they ended.
        let egress = rows.collect().await;
        let mut out = conclude(answer, guard, git_watch, work, &limits);
        let notes = http::refusal_notes(&egress);
        if !notes.is_empty() {
            let mut stderr = out.stderr.take().unwrap_or_default();
            stderr.push_str(&notes);
            out.stderr = Some(stderr);
        }
        out.egress = egress;
        out
    }
}

/// The call's result once its component answered, timed out or was cancelled (`None` inside `Ok`), its `.git`
/// guard ended and checked.
fn conclude(
    answer: Result<Option<Outcome>, tokio::time::error::Elapsed>,
    guard: Guard,
    git_watch: Option<crate::sandbox::gitguard::GitWatch>,
    work: workspace::Workdir,
    limits: &Limits,
) -> AdapterResult {
    let answer = match answer {
        Ok(Some(a)) => Some(a),
        Ok(None) => {
            let _ = guard.finish();
            if let Some(e) = git_watch.and_then(|w| w.after().err()) {
                return AdapterResult::fail(Code::SandboxDenied, format!("sandbox: {e}"));
            }
            return AdapterResult::fail(
                Code::Cancelled,
                "cancelled: the caller cancelled the call; the component was stopped",
            );
        }
        Err(_) => None,
    };
    let restored = guard.finish();
    let planted = git_watch.and_then(|w| w.after().err());
    drop(work);
    if let Err(e) = restored {
        return AdapterResult::fail(Code::AdapterFailed, e.to_string());
    }
    if let Some(e) = planted {
        return AdapterResult::fail(Code::SandboxDenied, format!("sandbox: {e}"));
    }
    match answer {
        Some((outcome, log)) => shape(outcome, log, limits),
        None => AdapterResult::fail(
            Code::Timeout,
            format!("timed out after {} ms while the component waited in a host call; it was stopped (raise timeout_ms in sandbox.json if it needs longer: `hcpx config set timeout_ms MS`)", limits.timeout_ms),
        ),
    }
}

/// A project's `.git` guard for one call, checked when the call ends, or when its future is dropped first (a
/// caller that went away), so a `.git` the component moved is put back either way.
struct Guard(Option<GuardedDir>);

impl Guard {
    /// Ends the guard: what the component did to `.git`, if anything.
    fn finish(mut self) -> Result<(), GitGuardError> {
        self.0.take().map(|g| g.restore()).unwrap_or(Ok(()))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Only a dropped call gets here with the guard still on; nobody is left to tell.
        if let Some(g) = self.0.take() {
            let _ = g.restore();
        }
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

/// The adapter's result of a component's answer. The answer is capped like a wrap's output: past
/// `max_output_bytes` it is cut (and, cut, no longer parsed as JSON) and the result says `truncated`.
fn shape(outcome: wasmtime::Result<Result<String, String>>, log: String, limits: &Limits) -> AdapterResult {
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

fn classify_trap(e: &wasmtime::Error, timeout_ms: u64, memory_mb: u64) -> AdapterResult {
    if e.downcast_ref::<Trap>() == Some(&Trap::Interrupt) {
        return AdapterResult::fail(Code::Timeout, format!("timed out after {timeout_ms} ms; the component was stopped (raise timeout_ms in sandbox.json if it needs longer: `hcpx config set timeout_ms MS`)"));
    }
    if e.chain().any(|c| c.downcast_ref::<host::MemoryCapReached>().is_some()) {
        return AdapterResult::fail(
            Code::AdapterFailed,
            format!("the component exceeded its memory cap of {memory_mb} MiB (memory_mb in sandbox.json: `hcpx config set memory_mb MIB`)"),
        );
    }
    // The trap itself, not the backtrace wasmtime puts first: that is all a Python or JavaScript guest's
    // failure says (their exceptions end in `unreachable`, their deep recursion in an exhausted stack).
    match e.downcast_ref::<Trap>() {
        Some(Trap::StackOverflow) => AdapterResult::fail(
            Code::AdapterFailed,
            "the component failed: it exhausted its call stack (recursion too deep or endless)",
        ),
        Some(Trap::UnreachableCodeReached) => AdapterResult::fail(
            Code::AdapterFailed,
            "the component failed: it reached `unreachable` (a Rust panic, or an exception a Python or JavaScript guest did not turn into an `err`)",
        ),
        Some(trap) => AdapterResult::fail(Code::AdapterFailed, format!("the component failed: {trap}")),
        None => {
            let text = format!("{e:#}");
            let first = text.lines().next().unwrap_or("trap").to_string();
            AdapterResult::fail(Code::AdapterFailed, format!("the component failed: {first}"))
        }
    }
}

/// Resolves once `cancel` is set, looking every 20 ms.
async fn cancelled(cancel: &crate::model::Cancel) {
    while !cancel.is_cancelled() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
