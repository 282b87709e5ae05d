//! Tasks: served calls that outlive their request (MCP's `io.modelcontextprotocol/tasks` extension, and
//! `Prefer: respond-async` on `/v1/exec`). A task is a record in the store — owner-only files under
//! `[tenants/T/]tasks/` on the file store, rows of `hcpx_tasks` on PostgreSQL — so that any replica answers for
//! it: its status, its result envelope once it ended, a cancellation asked for from anywhere, and what is known
//! when the process running it died (`outcome: unknown`, as the audit says of a write whose replica stopped).
//!
//! A task belongs to the tenant and the Principal that made it: every read and cancel names both, and a task of
//! another is not found, exactly as one that never existed. A task ended more than its `keep_ms` ago is gone.

use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::audit::Outcome;
use crate::model::{Invoker, ResultEnvelope};

/// The prefix of every task id.
const ID_PREFIX: &str = "tk_";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The call runs.
    Working,
    /// The call ended with its result envelope (a denial or a failed command too).
    Completed,
    /// The process running it stopped before it ended: `outcome` says what is known.
    Failed,
    /// A cancellation stopped the call.
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status written as `as_str` gives it.
    pub fn parse(s: &str) -> Option<TaskStatus> {
        [TaskStatus::Working, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled]
            .into_iter()
            .find(|t| t.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        self != TaskStatus::Working
    }
}

/// One task as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecord {
    pub id: String,
    /// The tenant and the Principal whose call it is: nobody else finds it.
    pub tenant: String,
    pub principal: String,
    /// The face that made it (`mcp` or `http`).
    pub invoker: Invoker,
    pub pack_id: String,
    pub verb_key: String,
    pub status: TaskStatus,
    /// When it was made, last changed and ended, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at_ms: Option<u64>,
    /// How long it is kept once it ended.
    pub keep_ms: u64,
    /// The process that runs it (a replica of the PostgreSQL store, a process of the file store).
    pub owner: String,
    /// Someone asked for it to stop; its owner stops the call when it sees this.
    #[serde(default)]
    pub cancel_requested: bool,
    /// For a `failed` task: what is known of the call (its owner stopped before it ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The call's result envelope, once it ended (completed or cancelled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ResultEnvelope>,
}

impl TaskRecord {
    /// When it stops being kept, once it ended.
    pub fn expires_at_ms(&self) -> Option<u64> {
        self.finished_at_ms.map(|f| f.saturating_add(self.keep_ms))
    }

    /// Whether it ended more than `keep_ms` ago at `now_ms` (it is then as if it never existed).
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms().is_some_and(|e| now_ms >= e)
    }

    /// When it was made, as RFC 3339.
    pub fn created_at(&self) -> String {
        rfc3339(self.created_at_ms)
    }

    /// When it last changed, as RFC 3339.
    pub fn updated_at(&self) -> String {
        rfc3339(self.updated_at_ms)
    }

    /// How long after it was made it may be gone: its run and its keep time, once it ended; `None` while it works
    /// (a working task is not dropped).
    pub fn ttl_ms(&self) -> Option<u64> {
        self.finished_at_ms.map(|f| f.saturating_sub(self.created_at_ms).saturating_add(self.keep_ms))
    }

    /// This record settled as its owner's death leaves it: failed, outcome unknown.
    pub fn settled_unknown(mut self, now_ms: u64) -> TaskRecord {
        self.status = TaskStatus::Failed;
        self.outcome = Some(Outcome::Unknown);
        self.finished_at_ms = Some(now_ms);
        self.updated_at_ms = now_ms;
        self
    }
}

/// What makes a task: who, which command, how long it is kept once it ended.
#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    pub tenant: &'a str,
    pub principal: &'a str,
    pub invoker: Invoker,
    pub pack_id: &'a str,
    pub verb_key: &'a str,
    pub keep_ms: u64,
}

/// Default for `sandbox.json` `tasks.after_ms`: a served call still running 10 s in becomes a task (past what a
/// person or an agent host waits on one request without wondering, well under the 60 s call deadline).
pub const DEFAULT_AFTER_MS: u64 = 10_000;
/// Default for `tasks.keep_ms`: a task's result is kept an hour after it ended (long enough for a client that
/// polls, or one that reconnects after a restart; short enough that results do not pile up).
pub const DEFAULT_KEEP_MS: u64 = 3_600_000;
/// The least a task is kept: a result kept for less could be gone before the client's next poll.
pub const MIN_KEEP_MS: u64 = 1_000;

/// `sandbox.json` `tasks`: when a served call becomes a task (MCP, for a client that declared the tasks
/// extension; HTTP, for a request with `Prefer: respond-async`), and how long a task is kept once it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSettings {
    /// Milliseconds a served call runs before it becomes a task (a command its pack marks `long` becomes one at
    /// once); a call that ends sooner answers as it always did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_AFTER_MS))]
    pub after_ms: Option<u64>,
    /// Milliseconds a task (and its result) is kept once it ended, at least 1000; then it is gone, as if it never
    /// existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_KEEP_MS))]
    pub keep_ms: Option<u64>,
}

impl TaskSettings {
    /// How long a call runs before it becomes a task.
    pub fn after(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.after_ms.unwrap_or(DEFAULT_AFTER_MS))
    }

    /// How long a task is kept once it ended, in milliseconds.
    pub fn keep_ms(&self) -> u64 {
        self.keep_ms.unwrap_or(DEFAULT_KEEP_MS).max(MIN_KEEP_MS)
    }
}

/// `ms` since the Unix epoch as RFC 3339 with milliseconds, in UTC.
pub fn rfc3339(ms: u64) -> String {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(at).to_string()
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    crate::approvals::now_ms()
}

/// Whether `id` is a task id: `tk_` and 32 lowercase hex digits (only then is it joined to a path or queried).
pub fn is_task_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX)
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// Where the tasks of `tenant` live on the file store, relative to the store (`""` tenant dir for `local`).
pub(crate) fn dir_of(tenant: &str) -> Result<std::path::PathBuf, StoreError> {
    Ok(crate::tenant_dir(tenant)?.join("tasks"))
}

impl Store {
    /// Sets `sandbox.json` `tasks` (each value given; the others kept) and returns the settings now. A `keep_ms`
    /// under [`MIN_KEEP_MS`] is refused.
    pub fn edit_tasks(
        &self,
        after_ms: Option<u64>,
        keep_ms: Option<u64>,
    ) -> Result<TaskSettings, StoreError> {
        if let Some(k) = keep_ms.filter(|k| *k < MIN_KEEP_MS) {
            return Err(StoreError::Refused(format!(
                "--keep-ms {k} is under {MIN_KEEP_MS}: a result kept for less could be gone before the client asks for it; give at least {MIN_KEEP_MS}"
            )));
        }
        let _lock = self.lock()?;
        let mut cfg: crate::config::SandboxConfig = self.read_json("sandbox.json")?.unwrap_or_default(); // uncached: under the lock
        let mut t = cfg.tasks.clone().unwrap_or_default();
        if after_ms.is_some() {
            t.after_ms = after_ms;
        }
        if keep_ms.is_some() {
            t.keep_ms = keep_ms;
        }
        cfg.tasks = (t != TaskSettings::default()).then(|| t.clone());
        self.write_json("sandbox.json", &cfg)?;
        Ok(t)
    }

    /// Records a new task for `new`, `working`, owned by this process; its record.
    pub fn task_create(&self, new: &NewTask<'_>) -> Result<TaskRecord, StoreError> {
        crate::tenant_dir(new.tenant)?;
        let bytes = super::random_bytes::<16>()?;
        let id = format!("{ID_PREFIX}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let now = now_ms();
        let rec = TaskRecord {
            id,
            tenant: new.tenant.to_string(),
            principal: new.principal.to_string(),
            invoker: new.invoker,
            pack_id: new.pack_id.to_string(),
            verb_key: new.verb_key.to_string(),
            status: TaskStatus::Working,
            created_at_ms: now,
            updated_at_ms: now,
            finished_at_ms: None,
            keep_ms: new.keep_ms,
            owner: self.backend.task_owner()?,
            cancel_requested: false,
            outcome: None,
            result: None,
        };
        self.backend.task_create(&rec)?;
        Ok(rec)
    }

    /// Task `id` of `principal` in `tenant`; `None` when there is none, it is another's, or it expired.
    pub fn task(&self, tenant: &str, principal: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        if !is_task_id(id) || crate::tenant_dir(tenant).is_err() {
            return Ok(None);
        }
        let found = self.backend.task_read(tenant, id)?;
        Ok(found.filter(|t| t.tenant == tenant && t.principal == principal && !t.expired(now_ms())))
    }

    /// Records a cancellation of task `id` of `principal` in `tenant` (nothing changes once it ended); the task
    /// after it, `None` as [`Store::task`].
    pub fn task_cancel(
        &self,
        tenant: &str,
        principal: &str,
        id: &str,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let Some(t) = self.task(tenant, principal, id)? else { return Ok(None) };
        if t.status == TaskStatus::Working && !t.cancel_requested {
            self.backend.task_cancel(tenant, id)?;
        }
        self.task(tenant, principal, id)
    }

    /// Records how task `rec` ended (`rec` as its owner last knew it, with the final status and result); a task
    /// already settled (by a sweep that took its owner for dead) is left as it is. Whether it was recorded.
    pub fn task_finish(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        self.backend.task_finish(rec)
    }

    /// Of the tasks `ids` (of `tenant`, each), those someone asked to cancel.
    pub fn tasks_cancelled(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.backend.tasks_cancelled(ids)
    }

    /// Settles the tasks of owners that are gone (failed, outcome unknown) and removes those past their keep
    /// time; how many it changed. The PostgreSQL store's replicas also do this on their own every 2 s.
    pub fn tasks_sweep(&self) -> Result<usize, StoreError> {
        self.backend.tasks_sweep()
    }

    /// How many tasks each tenant has in each state, tenants in order (`/metrics`' `hcp_tasks`).
    pub fn task_counts(&self) -> Result<Vec<(String, TaskStatus, u64)>, StoreError> {
        let mut counts = self.backend.task_counts()?;
        counts.sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new<'a>(principal: &'a str) -> NewTask<'a> {
        NewTask {
            tenant: "acme",
            principal,
            invoker: Invoker::Mcp,
            pack_id: "slow",
            verb_key: "wait",
            keep_ms: 60_000,
        }
    }

    #[test]
    fn the_operator_sets_the_bound_and_the_keep_time() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let d = store.sandbox().unwrap().tasks.clone().unwrap_or_default();
        assert_eq!((d.after().as_millis(), d.keep_ms()), (10_000, 3_600_000));
        let s = store.edit_tasks(Some(250), None).unwrap();
        assert_eq!((s.after_ms, s.keep_ms), (Some(250), None));
        let s = store.edit_tasks(None, Some(5_000)).unwrap();
        assert_eq!((s.after_ms, s.keep_ms), (Some(250), Some(5_000)));
        assert_eq!(store.sandbox().unwrap().tasks, Some(s));
        let refused = store.edit_tasks(None, Some(10)).unwrap_err().to_string();
        assert!(refused.contains("at least 1000"), "{refused}");
    }

    #[test]
    fn a_task_is_its_principals_alone_and_ends_once() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let rec = store.task_create(&new("ana")).unwrap();
        assert!(is_task_id(&rec.id), "{}", rec.id);
        assert_eq!(store.task("acme", "ana", &rec.id).unwrap().unwrap().status, TaskStatus::Working);
        // Another Principal, another tenant, a made-up or malformed id: the same nothing.
        assert!(store.task("acme", "bob", &rec.id).unwrap().is_none());
        assert!(store.task("beta", "ana", &rec.id).unwrap().is_none());
        assert!(store.task("acme", "ana", "tk_00000000000000000000000000000000").unwrap().is_none());
        assert!(store.task("acme", "ana", "tk_../../principals").unwrap().is_none());
        assert!(store.task_cancel("acme", "bob", &rec.id).unwrap().is_none());
        assert!(store.tasks_cancelled(&[("acme".into(), rec.id.clone())]).unwrap().is_empty());
        // The file is the owner's alone.
        use std::os::unix::fs::PermissionsExt;
        let file = t.path().join("tenants/acme/tasks").join(format!("{}.json", rec.id));
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let c = store.task_cancel("acme", "ana", &rec.id).unwrap().unwrap();
        assert!(c.cancel_requested);
        assert_eq!(store.tasks_cancelled(&[("acme".into(), rec.id.clone())]).unwrap(), vec![rec.id.clone()]);
        let done =
            TaskRecord { status: TaskStatus::Cancelled, finished_at_ms: Some(now_ms()), ..rec.clone() };
        assert!(store.task_finish(&done).unwrap());
        assert!(!store.task_finish(&TaskRecord { status: TaskStatus::Completed, ..done.clone() }).unwrap());
        assert_eq!(store.task("acme", "ana", &rec.id).unwrap().unwrap().status, TaskStatus::Cancelled);
    }

    #[test]
    fn the_tasks_of_a_process_that_is_gone_are_settled_unknown_and_old_ones_expire() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let mine = store.task_create(&new("ana")).unwrap();
        // A task whose owner never held its lock (a process that is gone).
        let orphan = TaskRecord {
            id: format!("{ID_PREFIX}{}", "a".repeat(32)),
            owner: "1-dead".into(),
            ..mine.clone()
        };
        store.backend.task_create(&orphan).unwrap();
        let old = TaskRecord {
            id: format!("{ID_PREFIX}{}", "b".repeat(32)),
            status: TaskStatus::Completed,
            finished_at_ms: Some(now_ms() - 120_000),
            ..mine.clone()
        };
        store.backend.task_create(&old).unwrap();
        assert!(store.task("acme", "ana", &old.id).unwrap().is_none(), "past its keep time it is not found");
        assert_eq!(store.tasks_sweep().unwrap(), 2);
        let settled = store.task("acme", "ana", &orphan.id).unwrap().unwrap();
        assert_eq!((settled.status, settled.outcome), (TaskStatus::Failed, Some(Outcome::Unknown)));
        assert_eq!(store.task("acme", "ana", &mine.id).unwrap().unwrap().status, TaskStatus::Working);
        assert!(!t.path().join("tenants/acme/tasks").join(format!("{}.json", old.id)).exists());
    }
}
