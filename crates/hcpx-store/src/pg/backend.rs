//! The PostgreSQL back end behind the store's one interface ([`crate::backend::Backend`]): each operation is the
//! database's ([`Db`]); `$HCP_HOME` is only where this replica writes the packs' files it runs.

use std::any::TypeId;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::seal::Sealer;
use super::{Db, Live};
use crate::audit::{AuditHead, AuditRecord, AuditRow};
use crate::backend::{Backend, Parse, Parsed, SenseVersion};
use crate::chain::{no_chain, verify_lines, ChainVerdict, Verified};
use crate::mcp_sessions::McpSession;
use crate::packs::pack_files_digest;
use crate::principals::LOCAL_TENANT;
use crate::sense::{NewEvent, SenseEvent};
use crate::tasks::TaskRecord;
use crate::turns::Turn;
use crate::workspaces::{Listed, Stored};
use crate::{PoolStats, StoreError, StoreLock};

/// The database, and the local home its packs' files are written into.
#[derive(Debug)]
pub(crate) struct Postgres {
    home: PathBuf,
    db: Arc<Db>,
}

impl Postgres {
    /// The back end on `db`, with `home` (which exists) as its local cache.
    pub(crate) fn new(home: &Path, db: Db) -> Postgres {
        Postgres { home: home.to_path_buf(), db: Arc::new(db) }
    }

    fn path(&self, rel: &str) -> PathBuf {
        crate::join(&self.home, rel)
    }

    /// How a message names audit row `n` (1-based).
    fn row_place(n: usize) -> String {
        format!("postgres:audit row {n}")
    }
}

impl Backend for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn health(&self) -> Result<(), StoreError> {
        self.db.health()
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        Some(self.db.pool_stats())
    }

    fn db(&self) -> Option<&Arc<Db>> {
        Some(&self.db)
    }

    /// Nothing here outlives a call: the same back end.
    fn one_shot(self: Arc<Self>) -> Arc<dyn Backend> {
        self
    }

    fn lock(&self) -> Result<StoreLock, StoreError> {
        self.db.lock().map(StoreLock::held)
    }

    /// Another replica finishes the line of a write whose replica stopped.
    fn records_intents(&self) -> bool {
        true
    }

    fn doc_place(&self, rel: &str) -> String {
        format!("postgres:{rel}")
    }

    fn doc_text(&self, rel: &str) -> Result<Option<String>, StoreError> {
        self.db.doc_text(rel)
    }

    fn doc_cached(&self, rel: &str, ty: TypeId, parse: Parse<'_>) -> Result<Option<Parsed>, StoreError> {
        self.db.doc_cached(rel, ty, parse)
    }

    /// The mode is the file store's: a document's protection here is the database's (and its seal).
    fn doc_put(&self, rel: &str, text: String, _mode: u32) -> Result<(), StoreError> {
        self.db.doc_put(rel, text)
    }

    fn doc_delete(&self, rel: &str) -> Result<bool, StoreError> {
        self.db.doc_delete(rel)
    }

    fn doc_names(&self, rel: &Path) -> Result<Vec<String>, StoreError> {
        let prefix = format!("{}/", rel.display());
        Ok(self
            .db
            .doc_list(&prefix)?
            .iter()
            .filter_map(|p| p.strip_prefix(&prefix))
            .filter(|n| !n.contains('/') && n.ends_with(".json"))
            .map(str::to_string)
            .collect())
    }

    /// Documents are rows: no directory to make.
    fn doc_dir(&self, _rel: &Path, _private: bool) -> Result<(), StoreError> {
        Ok(())
    }

    fn sealer(&self) -> Option<&Sealer> {
        self.db.sealer()
    }

    /// The files go in before the record that names them, so no replica ever finds a record whose files are
    /// not there.
    fn pack_publish(&self, id: &str, digest: &str, dir: &Path) -> Result<(), StoreError> {
        self.db.pack_upload(id, digest, dir)
    }

    fn pack_retire(&self, id: &str, keep: Option<&str>) -> Result<(), StoreError> {
        self.db.pack_remove(id, keep)
    }

    /// Writes install `digest` of pack `id` from the database into this replica's `packs/<id>`: staged beside
    /// it, checked against the digest, then swapped in, under a local lock (two processes sharing one home).
    fn pack_fetch(&self, id: &str, digest: &str) -> Result<bool, StoreError> {
        let lock_path = self.path("packs/.materialize.lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::io(&lock_path, e))?;
        lock.lock().map_err(|e| StoreError::io(&lock_path, e))?;
        let target = self.path("packs").join(id);
        if pack_files_digest(&target) == digest {
            return Ok(true); // another process wrote it meanwhile
        }
        let staged = crate::temp_in(&self.home, &format!("fetch-{id}"));
        let fetched = self.db.pack_fetch(id, digest, &staged);
        if let Err(e) = fetched {
            let _ = fs::remove_dir_all(&staged);
            return Err(e);
        }
        if pack_files_digest(&staged) != digest {
            let _ = fs::remove_dir_all(&staged);
            return Err(StoreError::Refused(format!(
                "the files of pack {id} in the database do not match its recorded digest; it is not loaded: install it again with `hcpx install DIR`"
            )));
        }
        let trash = crate::temp_in(&self.home, &format!("stale-{id}"));
        if target.exists() {
            fs::rename(&target, &trash).map_err(|e| StoreError::io(&target, e))?;
        }
        fs::rename(&staged, &target).map_err(|e| StoreError::io(&target, e))?;
        let _ = fs::remove_dir_all(&trash);
        Ok(true)
    }

    fn audit_intent(&self, rec: &AuditRecord) -> Result<Option<i64>, StoreError> {
        self.db.audit_intent(rec).map(Some)
    }

    /// One chain per tenant, serialized by the database (pg/audit.rs), not by the store lock.
    fn audit_append(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<(), StoreError> {
        self.db.audit_append(rec, intent).map(|_| ())
    }

    /// The local tenant's chain's.
    fn audit_head(&self) -> Result<Option<AuditHead>, StoreError> {
        self.db.audit_head(LOCAL_TENANT)
    }

    fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        Ok(self
            .db
            .audit_lines(tenant)?
            .into_iter()
            .enumerate()
            .map(|(i, l)| match serde_json::from_str::<AuditRecord>(&l) {
                Ok(r) => AuditRow::Record(Box::new(r)),
                Err(e) => AuditRow::Unreadable { place: Postgres::row_place(i + 1), reason: e.to_string() },
            })
            .collect())
    }

    /// Only that tenant's rows are read.
    fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        self.db
            .audit_lines(tenant)?
            .iter()
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| StoreError::Corrupt {
                    path: Postgres::row_place(i + 1),
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// Walks each tenant's chain (one tenant's when named); the first broken one decides.
    fn verify_audit(&self, tenant: Option<&str>, anchor: Option<&str>) -> Result<Verified, StoreError> {
        let chains = self.db.audit_chains(tenant)?;
        if let (Some(t), true) = (tenant, chains.is_empty()) {
            return Err(no_chain(t));
        }
        if anchor.is_some() && chains.len() > 1 {
            return Err(StoreError::Refused(
                "--head names one chain, and this database holds one per tenant; add --tenant NAME".into(),
            ));
        }
        let mut all =
            Verified { ok: true, lines: 0, files: Vec::new(), head: None, unrecorded: 0, broken: None };
        for c in &chains {
            let v = verify_lines(&c.head, &format!("postgres:audit/{}", c.tenant), &c.lines, anchor);
            all.lines += v.lines;
            all.unrecorded += v.unrecorded;
            all.files.extend(v.files);
            if chains.len() == 1 {
                all.head = v.head;
            }
            if v.broken.is_some() && all.broken.is_none() {
                all.broken = v.broken;
            }
        }
        all.ok = all.broken.is_none();
        Ok(all)
    }

    fn verify_chains(&self) -> Result<Vec<ChainVerdict>, StoreError> {
        Ok(self
            .db
            .audit_chains(None)?
            .iter()
            .map(|c| {
                let v = verify_lines(&c.head, &format!("postgres:audit/{}", c.tenant), &c.lines, None);
                ChainVerdict::of(Some(c.tenant.clone()), v)
            })
            .collect())
    }

    fn sense_append(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError> {
        crate::tenant_dir(tenant)?;
        self.db.sense_append(tenant, new, dedupe, crate::sense::max_events())
    }

    fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        self.db.sense_after(tenant, after)
    }

    /// The newest id stands for the log's content: ids only grow, and compaction keeps the newest.
    fn sense_version(&self, tenant: &str) -> Result<Option<SenseVersion>, StoreError> {
        Ok(Some((self.db.sense_last(tenant)?, 0, 0, 0)))
    }

    fn sense_wake(&self) -> Option<Arc<Live>> {
        Some(self.db.live().clone())
    }

    /// This replica: its liveness lock is what shows its tasks' owner alive.
    fn task_owner(&self) -> Result<String, StoreError> {
        Ok(self.db.task_owner())
    }

    fn task_create(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        self.db.task_insert(rec)
    }

    fn task_read(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.db.task_select(tenant, id)
    }

    fn task_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        self.db.task_set_cancel(tenant, id)
    }

    fn task_finish(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        self.db.task_end(rec)
    }

    fn tasks_cancelled(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        self.db.task_cancels(ids)
    }

    /// Every replica also sweeps on its own every 2 s (`live.rs`).
    fn tasks_sweep(&self) -> Result<usize, StoreError> {
        self.db.task_sweep()
    }
    fn task_counts(&self) -> Result<Vec<(String, crate::tasks::TaskStatus, u64)>, StoreError> {
        self.db.task_tally()
    }

    fn mcp_session_put(&self, key: &str, s: &McpSession) -> Result<(), StoreError> {
        self.db.mcp_session_put(key, s)
    }

    fn mcp_session_use(&self, key: &str, idle: Duration) -> Result<Option<McpSession>, StoreError> {
        self.db.mcp_session_use(key, idle)
    }

    fn mcp_session_delete(&self, key: &str) -> Result<bool, StoreError> {
        self.db.mcp_session_delete(key)
    }

    fn mcp_sessions_prune(&self, idle: Duration) -> Result<(), StoreError> {
        self.db.mcp_sessions_prune(idle)
    }

    fn mcp_answer_put(&self, key: &str, question: &str, body: &str) -> Result<bool, StoreError> {
        self.db.mcp_answer_put(key, question, body)
    }

    fn mcp_answer_take(&self, key: &str, question: &str) -> Result<Option<String>, StoreError> {
        self.db.mcp_answer_take(key, question)
    }

    /// An advisory lock in the database, across replicas.
    fn workspace_turn(
        &self,
        _workspaces: &Path,
        tenant: &str,
        pack: &str,
        wait: Duration,
    ) -> Result<Option<Turn>, StoreError> {
        Ok(self.db.workspace_turn(crate::turns::key(tenant, pack), wait)?.map(Turn::held))
    }

    /// Every replica's copy of a workspace is a copy of its row here.
    fn keeps_workspaces(&self) -> bool {
        true
    }

    fn workspace_head(&self, tenant: &str, pack: &str) -> Result<Option<Stored>, StoreError> {
        self.db.workspace_head(tenant, pack)
    }

    fn workspace_get(&self, tenant: &str, pack: &str) -> Result<Option<(Stored, Vec<u8>)>, StoreError> {
        self.db.workspace_get(tenant, pack)
    }

    fn workspace_put(
        &self,
        tenant: &str,
        pack: &str,
        after: i64,
        archive: Vec<u8>,
        digest: &str,
    ) -> Result<i64, StoreError> {
        self.db.workspace_put(tenant, pack, after, archive, digest)
    }

    fn workspace_list(&self, pack: Option<&str>) -> Result<Vec<Listed>, StoreError> {
        self.db.workspace_list(pack)
    }

    fn workspace_forget(&self, pack: &str) -> Result<(), StoreError> {
        self.db.workspace_forget(pack)
    }
}
