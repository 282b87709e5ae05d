//! The file back end of the store (the embedded default, `HCP_STORE` unset or `files`): every document a JSON
//! file under `$HCP_HOME`, written atomically (temp file, fsync, rename) and read through a read cache; the
//! audit chain and each tenant's Sense events are append-only logs beside them. Every read-modify-write runs
//! under an exclusive file lock (`.lock`), so concurrent `hcpx` processes neither lose nor tear anything.

mod audit;
mod cache;
mod docs;
mod sense;
mod tasks;

use std::any::TypeId;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::audit::{AuditHead, AuditRecord, AuditRow};
use crate::backend::{Backend, Parse, Parsed, SenseVersion};
use crate::chain::{ChainVerdict, Verified};
use crate::mcp_sessions::McpSession;
use crate::pg::seal::Sealer;
use crate::sense::{NewEvent, SenseEvent};
use crate::tasks::TaskRecord;
use crate::turns::Turn;
use crate::workspaces::{Listed, Stored};
use crate::{pg, PoolStats, StoreError, StoreLock};

/// How often a call waiting for a workspace turn looks again.
const POLL: Duration = Duration::from_millis(5);

/// The files under one `$HCP_HOME`, and the cache of the documents read there.
#[derive(Debug)]
pub(crate) struct Files {
    home: PathBuf,
    cache: cache::ReadCache,
    /// This process as the owner of the tasks it runs, once it runs one (`tasks.rs`).
    owner: std::sync::OnceLock<tasks::Owner>,
}

impl Files {
    /// The files at `home` (which exists), with a read cache that may watch it.
    pub(crate) fn new(home: &Path) -> Files {
        Files { home: home.to_path_buf(), cache: Default::default(), owner: Default::default() }
    }

    /// A path inside the store.
    fn path(&self, rel: &str) -> PathBuf {
        crate::join(&self.home, rel)
    }
}

impl Backend for Files {
    fn kind(&self) -> &'static str {
        "files"
    }

    #[cfg(test)]
    fn watching(&self) -> bool {
        self.cache.watching()
    }

    /// A readable home whose `state.json`, if any, parses (through the same cached, typed read every call
    /// makes: cheap while the file is unchanged).
    fn health(&self) -> Result<(), StoreError> {
        fs::read_dir(&self.home).map_err(|e| StoreError::io(&self.home, e))?;
        crate::backend::read_cached(self, crate::packs::STATE, |v: crate::packs::State| Ok(v)).map(|_| ())
    }

    fn pool_stats(&self) -> Option<PoolStats> {
        None
    }

    fn db(&self) -> Option<&Arc<pg::Db>> {
        None
    }

    /// The read cache never watches the store's directory: closing the watch at exit would hold the
    /// process's end for milliseconds (see `cache`).
    fn one_shot(self: Arc<Self>) -> Arc<dyn Backend> {
        Arc::new(Files {
            home: self.home.clone(),
            cache: cache::ReadCache::unwatched(),
            owner: Default::default(),
        })
    }

    fn lock(&self) -> Result<StoreLock, StoreError> {
        let p = self.path(".lock");
        let file = crate::lock_file(&p)?;
        file.lock().map_err(|e| StoreError::io(&p, e))?;
        Ok(StoreLock::held(file))
    }

    /// No other replica could finish a write's line: nothing is recorded before it runs.
    fn records_intents(&self) -> bool {
        false
    }

    fn doc_place(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    fn doc_text(&self, rel: &str) -> Result<Option<String>, StoreError> {
        self.text(rel)
    }

    fn doc_cached(&self, rel: &str, ty: TypeId, parse: Parse<'_>) -> Result<Option<Parsed>, StoreError> {
        self.cached(rel, ty, parse)
    }

    fn doc_put(&self, rel: &str, text: String, mode: u32) -> Result<(), StoreError> {
        let target = self.path(rel);
        crate::write_atomic(&target, text.as_bytes(), mode).map_err(|e| StoreError::io(&target, e))
    }

    fn doc_delete(&self, rel: &str) -> Result<bool, StoreError> {
        let p = self.path(rel);
        match fs::remove_file(&p) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io(&p, e)),
        }
    }

    fn doc_names(&self, rel: &Path) -> Result<Vec<String>, StoreError> {
        self.names(rel)
    }

    fn doc_dir(&self, rel: &Path, private: bool) -> Result<(), StoreError> {
        self.dir(rel, private)
    }

    /// Documents are the owner's files: nothing is sealed.
    fn sealer(&self) -> Option<&Sealer> {
        None
    }

    /// The pack's files at `packs/<id>` are its only copy: nothing else to keep.
    fn pack_publish(&self, _id: &str, _digest: &str, _dir: &Path) -> Result<(), StoreError> {
        Ok(())
    }

    fn pack_retire(&self, _id: &str, _keep: Option<&str>) -> Result<(), StoreError> {
        Ok(())
    }

    fn pack_fetch(&self, _id: &str, _digest: &str) -> Result<bool, StoreError> {
        Ok(false)
    }

    /// No other replica could write the line: nothing to record.
    fn audit_intent(&self, _rec: &AuditRecord) -> Result<Option<i64>, StoreError> {
        Ok(None)
    }

    fn audit_append(&self, rec: &AuditRecord, _intent: Option<i64>) -> Result<(), StoreError> {
        self.append_audit(std::slice::from_ref(rec))
    }

    fn audit_append_all(&self, recs: &[AuditRecord]) -> Result<(), StoreError> {
        self.append_audit(recs)
    }

    fn audit_head(&self) -> Result<Option<AuditHead>, StoreError> {
        self.head()
    }

    fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        self.rows(tenant)
    }

    fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        self.records(tenant)
    }

    fn verify_audit(&self, tenant: Option<&str>, anchor: Option<&str>) -> Result<Verified, StoreError> {
        self.verify(tenant, anchor)
    }

    fn sense_append(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError> {
        self.append_event(tenant, new, dedupe)
    }

    fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        self.events(tenant, after)
    }

    fn sense_version(&self, tenant: &str) -> Result<Option<SenseVersion>, StoreError> {
        self.events_version(tenant)
    }

    /// Watchers poll [`Backend::sense_version`].
    fn sense_wake(&self) -> Option<Arc<pg::Live>> {
        None
    }

    fn task_owner(&self) -> Result<String, StoreError> {
        self.owner()
    }

    fn task_create(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        self.task_put(rec)
    }

    fn task_read(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        self.task_get(tenant, id)
    }

    fn task_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        self.task_mark_cancel(tenant, id)
    }

    fn task_finish(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        self.task_end(rec)
    }

    fn tasks_cancelled(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        self.task_cancels(ids)
    }

    fn tasks_sweep(&self) -> Result<usize, StoreError> {
        self.task_sweep()
    }
    fn task_counts(&self) -> Result<Vec<(String, crate::tasks::TaskStatus, u64)>, StoreError> {
        Ok(self.task_tally())
    }

    fn mcp_session_put(&self, key: &str, s: &McpSession) -> Result<(), StoreError> {
        crate::mcp_sessions::files::put(self, key, s)
    }

    fn mcp_session_use(&self, key: &str, idle: Duration) -> Result<Option<McpSession>, StoreError> {
        crate::mcp_sessions::files::take_up(self, key, idle)
    }

    fn mcp_session_delete(&self, key: &str) -> Result<bool, StoreError> {
        crate::mcp_sessions::files::delete(self, key)
    }

    fn mcp_sessions_prune(&self, idle: Duration) -> Result<(), StoreError> {
        crate::mcp_sessions::files::prune(self, idle)
    }

    fn mcp_answer_put(&self, key: &str, question: &str, body: &str) -> Result<bool, StoreError> {
        crate::mcp_answers::files::put(self, key, question, body)
    }

    fn mcp_answer_take(&self, key: &str, question: &str) -> Result<Option<String>, StoreError> {
        crate::mcp_answers::files::take(self, key, question)
    }

    /// A file lock beside the workspace, not in it: the call itself cannot reach (or remove) it.
    fn workspace_turn(
        &self,
        workspaces: &Path,
        _tenant: &str,
        pack: &str,
        wait: Duration,
    ) -> Result<Option<Turn>, StoreError> {
        let p = workspaces.join(format!(".{pack}.lock"));
        fs::create_dir_all(workspaces).map_err(|e| StoreError::io(workspaces, e))?;
        let file = crate::lock_file(&p)?;
        let deadline = Instant::now() + wait;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Some(Turn::held(file))),
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(POLL),
                Err(fs::TryLockError::WouldBlock) => return Ok(None),
                Err(fs::TryLockError::Error(e)) => return Err(StoreError::io(&p, e)),
            }
        }
    }
    fn verify_chains(&self) -> Result<Vec<ChainVerdict>, StoreError> {
        Ok(vec![ChainVerdict::of(None, self.verify_audit(None, None)?)])
    }
    /// Whether workspaces are kept here (`crate::workspaces`) and a call's directory is a copy of one; the
    /// file store's directory is the workspace itself, and it keeps none of the rest.
    fn keeps_workspaces(&self) -> bool {
        false
    }
    /// The head of `tenant`'s stored workspace of `pack`.
    fn workspace_head(&self, _tenant: &str, _pack: &str) -> Result<Option<Stored>, StoreError> {
        Ok(None)
    }
    /// `tenant`'s stored workspace of `pack`, whole.
    fn workspace_get(&self, _tenant: &str, _pack: &str) -> Result<Option<(Stored, Vec<u8>)>, StoreError> {
        Ok(None)
    }
    /// Stores `archive` as the version after `after`; the new version.
    fn workspace_put(
        &self,
        _tenant: &str,
        pack: &str,
        _after: i64,
        _archive: Vec<u8>,
        _digest: &str,
    ) -> Result<i64, StoreError> {
        Err(StoreError::Refused(format!(
            "this store keeps pack {pack}'s workspace as a directory, not a row"
        )))
    }
    /// The stored workspaces (of `pack`, or all).
    fn workspace_list(&self, _pack: Option<&str>) -> Result<Vec<Listed>, StoreError> {
        Ok(Vec::new())
    }
    /// Forgets every tenant's stored workspace of `pack`.
    fn workspace_forget(&self, _pack: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;
    use std::fs::OpenOptions;
    use std::io::Write;

    /// Whether the store's read cache watches its directory.
    fn watching(store: &Store) -> bool {
        store.backend.watching()
    }

    #[test]
    fn a_one_shot_store_never_watches_and_still_sees_every_change() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap().one_shot();
        let other = Store::open(t.path()).unwrap();
        let read = || store.read_json_cached::<serde_json::Value>("x.json").unwrap().map(|v| v["n"].clone());
        other.write_atomic("x.json", br#"{"n":1}"#).unwrap();
        for _ in 0..3 {
            assert_eq!(read(), Some(1.into()));
        }
        assert!(!watching(&store), "a one-shot store opened an inotify watch");
        other.write_atomic("x.json", br#"{"n":2}"#).unwrap();
        assert_eq!(read(), Some(2.into()), "a change is seen by the next read, through its stat");
    }

    #[test]
    fn the_read_cache_sees_every_change_at_once_while_it_watches() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let other = Store::open(t.path()).unwrap(); // another process's handle: a cache of its own
        let read = || store.read_json_cached::<serde_json::Value>("x.json").unwrap().map(|v| v["n"].clone());
        assert_eq!(read(), None);
        other.write_atomic("x.json", br#"{"n":1}"#).unwrap();
        assert_eq!(read(), Some(1.into()));
        assert_eq!(read(), Some(1.into())); // a second read of the same file: the cache starts watching
        assert!(watching(&store));
        assert_eq!(read(), Some(1.into()));
        assert_eq!(read(), Some(1.into())); // trusted without a stat now
        other.write_atomic("x.json", br#"{"n":2}"#).unwrap();
        assert_eq!(read(), Some(2.into()), "a rename is seen by the very next read");
        assert_eq!(read(), Some(2.into()));
        fs::write(t.path().join("x.json"), br#"{"n":3}"#).unwrap();
        assert_eq!(read(), Some(3.into()), "so is a write in place");
        fs::remove_file(t.path().join("x.json")).unwrap();
        assert_eq!(read(), None, "and a removal");
        assert_eq!(read(), None);
        fs::write(t.path().join("x.json"), br#"{"n":4}"#).unwrap();
        assert_eq!(read(), Some(4.into()), "and a creation");
        // A file the watch cannot see change (written through a hard link in another directory): trusted for
        // at most `cache::TRUST`, then checked again.
        let elsewhere = t.path().join("packs/x.json");
        fs::hard_link(t.path().join("x.json"), &elsewhere).unwrap();
        assert_eq!(read(), Some(4.into()));
        let since = std::time::Instant::now();
        let mut f = OpenOptions::new().write(true).open(&elsewhere).unwrap();
        f.write_all(br#"{"n":5}"#).unwrap();
        drop(f);
        let stale = read();
        if since.elapsed() < cache::TRUST {
            assert_eq!(
                stale,
                Some(4.into()),
                "within the bound a value the watch vouches for is used unchecked"
            );
        }
        std::thread::sleep(cache::TRUST);
        assert_eq!(read(), Some(5.into()), "after it, checked again");
    }
}
