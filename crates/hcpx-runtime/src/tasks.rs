//! Served calls that outlive their request: a call still running after the operator's bound (`sandbox.json`
//! `tasks.after_ms`), or at once for a command its pack marks `long`, becomes a task kept in the store
//! (hcpx-store's `tasks`), so any replica answers for it. The call itself goes on here, on the process that
//! started it, through the same pipeline (`exec_async`): its grants, arguments, confirm gate and audit are those
//! of any call. This process looks for cancellations recorded in the store every [`POLL`] and sets the call's
//! cancel flag, so a wrap's whole process group is killed and a composite stopped, and the call ends as a
//! cancelled call always does (answered and audited `cancelled`). Its result envelope is recorded when it ends.
//! A process that dies leaves its tasks working; the store's sweep settles them as failed, outcome unknown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::model::{Cancel, Code, Envelope, Principal, ResultEnvelope};
use crate::store::tasks::{now_ms, NewTask, TaskRecord, TaskStatus};
use crate::{CallContext, Runtime};

/// How often this process looks for cancellations of the tasks it runs.
const POLL: Duration = Duration::from_millis(200);
/// How often this process sweeps the file store's tasks (a PostgreSQL replica sweeps on its own).
const SWEEP_EVERY: u32 = 10;
/// How many times the end of a task is offered to a store that does not answer, and how long apart.
const FINISH_TRIES: u32 = 8;
const FINISH_RETRY: Duration = Duration::from_millis(500);

/// A call's run, as `exec_async` makes it.
type Work = std::pin::Pin<Box<dyn std::future::Future<Output = ResultEnvelope> + Send>>;

/// What the tokio task that took a call past its bound tells its caller.
enum Handoff {
    /// The task, recorded.
    Task(Box<TaskRecord>),
    /// The store did not record it: the call, for its caller to wait for.
    Unrecorded(Work),
}

/// What a call that may become a task answered.
#[derive(Debug)]
pub enum Started {
    /// It ended within the bound: its result envelope, as `exec_async` answers it.
    Answered(Box<ResultEnvelope>),
    /// It runs on as this task.
    Task(Box<TaskRecord>),
}

/// The tasks this process runs, each with its call's cancel flag; and whether the loop that looks after them
/// runs.
#[derive(Debug, Default)]
pub(crate) struct Running {
    calls: Mutex<HashMap<String, (String, Cancel)>>,
    looking: AtomicBool,
}

impl Running {
    fn add(&self, rec: &TaskRecord, cancel: Cancel) {
        if let Ok(mut m) = self.calls.lock() {
            m.insert(rec.id.clone(), (rec.tenant.clone(), cancel));
        }
    }

    fn remove(&self, id: &str) {
        if let Ok(mut m) = self.calls.lock() {
            m.remove(id);
        }
    }

    fn ids(&self) -> Vec<(String, String)> {
        self.calls
            .lock()
            .map(|m| m.iter().map(|(id, (tenant, _))| (tenant.clone(), id.clone())).collect())
            .unwrap_or_default()
    }

    fn cancel(&self, id: &str) {
        if let Some((_, c)) = self.calls.lock().ok().and_then(|m| m.get(id).cloned()) {
            c.cancel();
        }
    }
}

/// The task a call's answer makes of `rec` (as its owner knew it): `cancelled` when a cancellation stopped it,
/// else `completed` with its result envelope (a denial or a failed command is a completed call too).
fn ended(rec: TaskRecord, out: ResultEnvelope) -> TaskRecord {
    let now = now_ms();
    let status =
        if out.code == Some(Code::Cancelled) { TaskStatus::Cancelled } else { TaskStatus::Completed };
    TaskRecord { status, finished_at_ms: Some(now), updated_at_ms: now, result: Some(out), ..rec }
}

impl Runtime {
    /// How long a call of `env` runs before it becomes a task (at once for a command its pack marks `long`), and
    /// how long a task is kept once it ended.
    fn task_bound(&self, env: &Envelope) -> (Duration, u64) {
        let settings = self.store.sandbox().ok().and_then(|s| s.tasks.clone()).unwrap_or_default();
        let long = self
            .installed_pack(&env.pack_id)
            .ok()
            .and_then(|p| p.command(&env.verb_key).map(|c| c.long))
            .unwrap_or(false);
        (if long { Duration::ZERO } else { settings.after() }, settings.keep_ms())
    }

    /// A served call whose caller takes tasks: run as `exec_async` runs it, answered as it is when it ends
    /// within the bound ([`Runtime::task_bound`]; a call refused before it runs is answered even for a `long`
    /// command), else recorded as a task of `principal` that runs on here; its answer and its cancellation go
    /// through the store. A task the store cannot record is not made: the call is then waited for as any call.
    /// Once the bound passed, the call is handed to a tokio task of its own, which records the task and then
    /// the call's end: a caller that goes away meanwhile never leaves a task that stays `working` (a task whose id
    /// its caller never learnt is stopped, and ends `cancelled`).
    pub async fn exec_or_task(
        self: Arc<Self>,
        principal: Principal,
        env: Envelope,
        ctx: CallContext,
    ) -> Started {
        let (after, keep_ms) = self.task_bound(&env);
        let cancel = ctx.cancel.clone();
        let mut work: Work = Box::pin(self.clone().exec_async(principal.clone(), env.clone(), ctx));
        tokio::select! {
            biased;
            out = &mut work => return Started::Answered(Box::new(out)),
            () = tokio::time::sleep(after) => {}
        }
        let (tx, rx) = tokio::sync::oneshot::channel::<Handoff>();
        let (pack_id, verb_key) = (env.pack_id.clone(), env.verb_key.clone());
        tokio::spawn(self.clone().run_task(principal, env, keep_ms, cancel, work, tx));
        match rx.await {
            Ok(Handoff::Task(rec)) => Started::Task(rec),
            Ok(Handoff::Unrecorded(work)) => Started::Answered(Box::new(work.await)),
            Err(_) => Started::Answered(Box::new(ResultEnvelope::denied(
                &pack_id,
                &verb_key,
                Code::AdapterFailed,
                "the call's task stopped before it was recorded",
            ))),
        }
    }

    /// Records the task of a call past its bound, tells its caller (`tx`), runs the call to its end and records
    /// how it ended.
    async fn run_task(
        self: Arc<Self>,
        principal: Principal,
        env: Envelope,
        keep_ms: u64,
        cancel: Cancel,
        work: Work,
        tx: tokio::sync::oneshot::Sender<Handoff>,
    ) {
        let store = self.store.clone();
        let made = tokio::task::spawn_blocking(move || {
            store.task_create(&NewTask {
                tenant: &principal.tenant,
                principal: &principal.id,
                invoker: principal.invoker,
                pack_id: &env.pack_id,
                verb_key: &env.verb_key,
                keep_ms,
            })
        })
        .await;
        let Ok(Ok(rec)) = made else {
            // Its caller waits for it as for any call (dropped with the caller when it went away).
            let _ = tx.send(Handoff::Unrecorded(work));
            return;
        };
        self.running.add(&rec, cancel.clone());
        self.clone().look_after_tasks();
        if tx.send(Handoff::Task(Box::new(rec.clone()))).is_err() {
            cancel.cancel();
        }
        let out = work.await;
        self.running.remove(&rec.id);
        let done = ended(rec, out);
        for _ in 0..FINISH_TRIES {
            let (store, done) = (self.store.clone(), done.clone());
            if let Ok(Ok(_)) = tokio::task::spawn_blocking(move || store.task_finish(&done)).await {
                return;
            }
            tokio::time::sleep(FINISH_RETRY).await;
        }
    }

    /// How many tasks this process runs now (a server shutting down waits for them, within its grace).
    pub fn tasks_running(&self) -> usize {
        self.running.calls.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Starts (once) the loop that stops the calls of tasks whose cancellation the store records, and sweeps the
    /// file store's tasks (those of a process that is gone, and expired ones) every 2 s. A served face calls it
    /// as it starts, so the tasks a dead process left are settled even before this one runs a task; it needs a
    /// tokio runtime.
    pub fn look_after_tasks(self: Arc<Self>) {
        if self.running.looking.swap(true, Ordering::SeqCst) || tokio::runtime::Handle::try_current().is_err()
        {
            return;
        }
        // The loop holds the runtime only weakly: it ends once the runtime is dropped.
        let rt = Arc::downgrade(&self);
        let sweeps = self.store.db().is_none();
        tokio::spawn(async move {
            let mut n: u32 = 0;
            loop {
                let Some(rt) = rt.upgrade() else { return };
                let ids = rt.running.ids();
                let store = rt.store.clone();
                let sweep = sweeps && n.is_multiple_of(SWEEP_EVERY);
                let found = tokio::task::spawn_blocking(move || {
                    if sweep {
                        let _ = store.tasks_sweep();
                    }
                    store.tasks_cancelled(&ids)
                })
                .await;
                if let Ok(Ok(cancelled)) = found {
                    for id in cancelled {
                        rt.running.cancel(&id);
                    }
                }
                drop(rt);
                n = n.wrapping_add(1);
                tokio::time::sleep(POLL).await;
            }
        });
    }
}
