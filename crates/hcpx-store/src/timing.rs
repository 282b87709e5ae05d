//! How long the store's operations take, for `/metrics` (`hcp_store_operation_duration_seconds`): every back
//! end is wrapped in [`Timed`], which times the operations a call makes (document reads and writes, the store
//! lock, audit appends, tasks, MCP sessions, Sense, the workspace turn) into a process-wide histogram by back end
//! and operation kind. Atomics only: no lock, no allocation per operation.

use std::any::TypeId;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::audit::{AuditHead, AuditRecord, AuditRow};
use crate::backend::{Backend, Parse, Parsed, SenseVersion};
use crate::chain::Verified;
use crate::mcp_sessions::McpSession;
use crate::pg::seal::Sealer;
use crate::sense::{NewEvent, SenseEvent};
use crate::tasks::{TaskRecord, TaskStatus};
use crate::turns::Turn;
use crate::workspaces::{Listed, Stored};
use crate::{pg, PoolStats, StoreError, StoreLock};

/// The histogram's upper bounds, in seconds: 0.1 ms to 5 s.
pub const BUCKETS: [f64; 15] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The kinds of operation timed, as their `op` label says them.
pub const OPS: [&str; 11] = [
    "doc_read",
    "doc_write",
    "doc_list",
    "lock",
    "audit_intent",
    "audit_append",
    "task",
    "mcp_session",
    "sense",
    "workspace_turn",
    "workspace",
];

/// The back ends, as their `store` label says them (`Backend::kind`).
pub const STORES: [&str; 2] = ["files", "postgres"];

#[derive(Clone, Copy)]
enum Op {
    DocRead,
    DocWrite,
    DocList,
    Lock,
    AuditIntent,
    AuditAppend,
    Task,
    McpSession,
    Sense,
    WorkspaceTurn,
    Workspace,
}

/// One histogram: a slot per bucket (the last is `+Inf`) and the sum of what it saw.
struct Hist {
    slots: [AtomicU64; BUCKETS.len() + 1],
    sum_nanos: AtomicU64,
}

impl Hist {
    const fn new() -> Hist {
        Hist { slots: [const { AtomicU64::new(0) }; BUCKETS.len() + 1], sum_nanos: AtomicU64::new(0) }
    }
}

static HISTS: [[Hist; OPS.len()]; STORES.len()] =
    [const { [const { Hist::new() }; OPS.len()] }; STORES.len()];

fn record(store: usize, op: Op, took: Duration) {
    let h = &HISTS[store][op as usize];
    let secs = took.as_secs_f64();
    let slot = BUCKETS.iter().position(|b| secs <= *b).unwrap_or(BUCKETS.len());
    h.slots[slot].fetch_add(1, Ordering::Relaxed);
    h.sum_nanos.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// One operation kind's histogram on one back end, as read now.
#[derive(Debug, Clone, PartialEq)]
pub struct OpLatency {
    pub store: &'static str,
    pub op: &'static str,
    /// Cumulative counts, one per bound of [`BUCKETS`], then `+Inf` (the count).
    pub cumulative: Vec<u64>,
    pub sum_secs: f64,
}

/// Every operation kind this process timed at least once.
pub fn snapshot() -> Vec<OpLatency> {
    let mut out = Vec::new();
    for (s, store) in STORES.iter().enumerate() {
        for (o, op) in OPS.iter().enumerate() {
            let h = &HISTS[s][o];
            let mut total = 0u64;
            let cumulative: Vec<u64> = h
                .slots
                .iter()
                .map(|slot| {
                    total += slot.load(Ordering::Relaxed);
                    total
                })
                .collect();
            if total > 0 {
                let sum_secs = h.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
                out.push(OpLatency { store, op, cumulative, sum_secs });
            }
        }
    }
    out
}

/// A back end whose operations are timed.
#[derive(Debug)]
pub(crate) struct Timed {
    inner: Arc<dyn Backend>,
    store: usize,
}

impl Timed {
    pub(crate) fn wrap(inner: Arc<dyn Backend>) -> Arc<dyn Backend> {
        let store = STORES.iter().position(|s| *s == inner.kind()).unwrap_or(0);
        Arc::new(Timed { inner, store })
    }

    fn time<T>(&self, op: Op, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        record(self.store, op, started.elapsed());
        out
    }
}

// Every method is forwarded, the trait's provided ones too (`watching`, `audit_append_all`): one left to its
// default answers for the wrapper, not for the back end. (`verify_chains` and the workspace methods were
// provided once; left to their defaults here, doctor saw one chain and no replica kept a workspace on
// PostgreSQL. They are required now, so the compiler names any a wrapper misses.)
impl Backend for Timed {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    #[cfg(test)]
    fn watching(&self) -> bool {
        self.inner.watching()
    }
    fn health(&self) -> Result<(), StoreError> {
        self.inner.health()
    }
    fn pool_stats(&self) -> Option<PoolStats> {
        self.inner.pool_stats()
    }
    fn db(&self) -> Option<&Arc<pg::Db>> {
        self.inner.db()
    }
    fn one_shot(self: Arc<Self>) -> Arc<dyn Backend> {
        Timed::wrap(self.inner.clone().one_shot())
    }
    fn lock(&self) -> Result<StoreLock, StoreError> {
        self.time(Op::Lock, || self.inner.lock())
    }
    fn records_intents(&self) -> bool {
        self.inner.records_intents()
    }
    fn doc_place(&self, rel: &str) -> String {
        self.inner.doc_place(rel)
    }
    fn doc_text(&self, rel: &str) -> Result<Option<String>, StoreError> {
        self.time(Op::DocRead, || self.inner.doc_text(rel))
    }
    fn doc_cached(&self, rel: &str, ty: TypeId, parse: Parse<'_>) -> Result<Option<Parsed>, StoreError> {
        self.time(Op::DocRead, || self.inner.doc_cached(rel, ty, parse))
    }
    fn doc_put(&self, rel: &str, text: String, mode: u32) -> Result<(), StoreError> {
        self.time(Op::DocWrite, || self.inner.doc_put(rel, text, mode))
    }
    fn doc_delete(&self, rel: &str) -> Result<bool, StoreError> {
        self.time(Op::DocWrite, || self.inner.doc_delete(rel))
    }
    fn doc_names(&self, rel: &Path) -> Result<Vec<String>, StoreError> {
        self.time(Op::DocList, || self.inner.doc_names(rel))
    }
    fn doc_dir(&self, rel: &Path, private: bool) -> Result<(), StoreError> {
        self.inner.doc_dir(rel, private)
    }
    fn sealer(&self) -> Option<&Sealer> {
        self.inner.sealer()
    }
    fn pack_publish(&self, id: &str, digest: &str, dir: &Path) -> Result<(), StoreError> {
        self.inner.pack_publish(id, digest, dir)
    }
    fn pack_retire(&self, id: &str, keep: Option<&str>) -> Result<(), StoreError> {
        self.inner.pack_retire(id, keep)
    }
    fn pack_fetch(&self, id: &str, digest: &str) -> Result<bool, StoreError> {
        self.inner.pack_fetch(id, digest)
    }
    fn audit_intent(&self, rec: &AuditRecord) -> Result<Option<i64>, StoreError> {
        self.time(Op::AuditIntent, || self.inner.audit_intent(rec))
    }
    fn audit_append(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<(), StoreError> {
        self.time(Op::AuditAppend, || self.inner.audit_append(rec, intent))
    }
    fn audit_append_all(&self, recs: &[AuditRecord]) -> Result<(), StoreError> {
        self.time(Op::AuditAppend, || self.inner.audit_append_all(recs))
    }
    fn audit_head(&self) -> Result<Option<AuditHead>, StoreError> {
        self.inner.audit_head()
    }
    fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        self.inner.audit_rows(tenant)
    }
    fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.audit_of(tenant)
    }
    fn verify_audit(&self, tenant: Option<&str>, anchor: Option<&str>) -> Result<Verified, StoreError> {
        self.inner.verify_audit(tenant, anchor)
    }
    fn verify_chains(&self) -> Result<Vec<crate::chain::ChainVerdict>, StoreError> {
        self.inner.verify_chains()
    }
    fn sense_append(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError> {
        self.time(Op::Sense, || self.inner.sense_append(tenant, new, dedupe))
    }
    fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        self.time(Op::Sense, || self.inner.sense_events(tenant, after))
    }
    fn sense_version(&self, tenant: &str) -> Result<Option<SenseVersion>, StoreError> {
        self.inner.sense_version(tenant)
    }
    fn sense_wake(&self) -> Option<Arc<pg::Live>> {
        self.inner.sense_wake()
    }
    fn task_owner(&self) -> Result<String, StoreError> {
        self.inner.task_owner()
    }
    fn task_create(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        self.time(Op::Task, || self.inner.task_create(rec))
    }
    fn task_read(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.time(Op::Task, || self.inner.task_read(tenant, id))
    }
    fn task_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        self.time(Op::Task, || self.inner.task_cancel(tenant, id))
    }
    fn task_finish(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        self.time(Op::Task, || self.inner.task_finish(rec))
    }
    fn tasks_cancelled(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        self.inner.tasks_cancelled(ids)
    }
    fn tasks_sweep(&self) -> Result<usize, StoreError> {
        self.inner.tasks_sweep()
    }
    fn task_counts(&self) -> Result<Vec<(String, TaskStatus, u64)>, StoreError> {
        self.inner.task_counts()
    }
    fn mcp_session_put(&self, key: &str, s: &McpSession) -> Result<(), StoreError> {
        self.time(Op::McpSession, || self.inner.mcp_session_put(key, s))
    }
    fn mcp_session_use(&self, key: &str, idle: Duration) -> Result<Option<McpSession>, StoreError> {
        self.time(Op::McpSession, || self.inner.mcp_session_use(key, idle))
    }
    fn mcp_session_delete(&self, key: &str) -> Result<bool, StoreError> {
        self.time(Op::McpSession, || self.inner.mcp_session_delete(key))
    }
    fn mcp_sessions_prune(&self, idle: Duration) -> Result<(), StoreError> {
        self.inner.mcp_sessions_prune(idle)
    }
    fn mcp_answer_put(&self, key: &str, question: &str, body: &str) -> Result<bool, StoreError> {
        self.time(Op::McpSession, || self.inner.mcp_answer_put(key, question, body))
    }
    fn mcp_answer_take(&self, key: &str, question: &str) -> Result<Option<String>, StoreError> {
        self.time(Op::McpSession, || self.inner.mcp_answer_take(key, question))
    }
    fn workspace_turn(
        &self,
        workspaces: &Path,
        tenant: &str,
        pack: &str,
        wait: Duration,
    ) -> Result<Option<Turn>, StoreError> {
        self.time(Op::WorkspaceTurn, || self.inner.workspace_turn(workspaces, tenant, pack, wait))
    }
    fn keeps_workspaces(&self) -> bool {
        self.inner.keeps_workspaces()
    }
    fn workspace_head(&self, tenant: &str, pack: &str) -> Result<Option<Stored>, StoreError> {
        self.time(Op::Workspace, || self.inner.workspace_head(tenant, pack))
    }
    fn workspace_get(&self, tenant: &str, pack: &str) -> Result<Option<(Stored, Vec<u8>)>, StoreError> {
        self.time(Op::Workspace, || self.inner.workspace_get(tenant, pack))
    }
    fn workspace_put(
        &self,
        tenant: &str,
        pack: &str,
        after: i64,
        archive: Vec<u8>,
        digest: &str,
    ) -> Result<i64, StoreError> {
        self.time(Op::Workspace, || self.inner.workspace_put(tenant, pack, after, archive, digest))
    }
    fn workspace_list(&self, pack: Option<&str>) -> Result<Vec<Listed>, StoreError> {
        self.inner.workspace_list(pack)
    }
    fn workspace_forget(&self, pack: &str) -> Result<(), StoreError> {
        self.inner.workspace_forget(pack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timed_store_fills_its_back_ends_buckets() {
        let t = tempfile::tempdir().unwrap();
        let store = crate::Store::open(t.path()).unwrap();
        let before: u64 = snapshot()
            .iter()
            .filter(|o| o.store == "files" && o.op == "doc_write")
            .map(|o| o.cumulative[BUCKETS.len()])
            .sum();
        store.write_json("x.json", &serde_json::json!({})).unwrap();
        let after = snapshot();
        let w = after.iter().find(|o| o.store == "files" && o.op == "doc_write").unwrap();
        assert!(w.cumulative[BUCKETS.len()] > before, "{after:?}");
        assert!(w.cumulative.windows(2).all(|p| p[0] <= p[1]), "cumulative: {w:?}");
    }
}
