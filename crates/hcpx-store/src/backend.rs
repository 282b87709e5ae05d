//! The one interface the store's two back ends share: the files under `$HCP_HOME` ([`crate::files`]) and
//! PostgreSQL ([`crate::pg`]). [`crate::Store`] holds one of them, chosen once when it opens
//! ([`crate::Store::open`], [`crate::Store::open_db`]), and calls it for everything that differs between them;
//! nothing else in the store asks which one it holds.
//!
//! A trait object (`Arc<dyn Backend>`), not an enum: the store's interface is synchronous (the pipeline runs
//! on blocking threads, and the PostgreSQL back end waits for its own runtime on a channel), so no method is
//! `async` and every one is object-safe. What is generic in the store's interface (a document read as the
//! caller's type) stays in `Store` and crosses this interface as text, or as a parsed value behind
//! `Arc<dyn Any>` with the [`TypeId`] it was parsed as, so a back end caches values it never names.

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::any::{Any, TypeId};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::{AuditHead, AuditRecord, AuditRow};
use crate::chain::{ChainVerdict, Verified};
use crate::mcp_sessions::McpSession;
use crate::pg::seal::Sealer;
use crate::sense::{NewEvent, SenseEvent};
use crate::tasks::TaskRecord;
use crate::turns::Turn;
use crate::workspaces::{Listed, Stored};
use crate::{pg, PoolStats, StoreError, StoreLock};

/// A parsed document, of the type its reader asked for.
pub(crate) type Parsed = Arc<dyn Any + Send + Sync>;

/// Parses a document's text into the caller's type (called at most once per read).
pub(crate) type Parse<'a> = &'a mut dyn FnMut(&str) -> Result<Parsed, StoreError>;

/// What identifies a Sense log's current content: a watcher reads it again only when this changed.
pub(crate) type SenseVersion = (u64, u64, i64, i64);

/// Whether `v` was parsed as the type `ty`.
pub(crate) fn is_type(v: &Parsed, ty: TypeId) -> bool {
    (**v).type_id() == ty
}

/// Everything the store does differently on files and on PostgreSQL.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    /// `files` or `postgres`.
    fn kind(&self) -> &'static str;
    /// Whether a read cache watches the store's directory now (the files').
    #[cfg(test)]
    fn watching(&self) -> bool {
        false
    }
    /// Whether the store answers now.
    fn health(&self) -> Result<(), StoreError>;
    /// The connection pool's use; `None` without one.
    fn pool_stats(&self) -> Option<PoolStats>;
    /// The database, for the commands that act on it alone (`hcpx store`, re-sealing); `None` for the files.
    fn db(&self) -> Option<&Arc<pg::Db>>;
    /// This back end for a process that makes one call and exits (nothing it keeps outlives the call).
    fn one_shot(self: Arc<Self>) -> Arc<dyn Backend>;
    /// Takes the store's exclusive lock (blocking).
    fn lock(&self) -> Result<StoreLock, StoreError>;
    /// Whether a write records its intent before it runs, so another replica can finish its audit line.
    fn records_intents(&self) -> bool;

    /// How a message names the document at `rel`.
    fn doc_place(&self, rel: &str) -> String;
    /// The text of the document at `rel`; `None` when there is none.
    fn doc_text(&self, rel: &str) -> Result<Option<String>, StoreError>;
    /// The document at `rel` parsed by `parse` as `ty`, through the back end's cache.
    fn doc_cached(&self, rel: &str, ty: TypeId, parse: Parse<'_>) -> Result<Option<Parsed>, StoreError>;
    /// Writes the document at `rel` atomically (`mode` where it is a file).
    fn doc_put(&self, rel: &str, text: String, mode: u32) -> Result<(), StoreError>;
    /// Removes the document at `rel`; whether there was one.
    fn doc_delete(&self, rel: &str) -> Result<bool, StoreError>;
    /// The names (with their `.json`) of the documents directly in the directory `rel`.
    fn doc_names(&self, rel: &Path) -> Result<Vec<String>, StoreError>;
    /// Makes the directory `rel` documents are written into, owner-only when `private` (files only).
    fn doc_dir(&self, rel: &Path, private: bool) -> Result<(), StoreError>;
    /// The operator's seal key, when the back end has one.
    fn sealer(&self) -> Option<&Sealer>;

    /// Keeps the files of install `digest` of pack `id` (laid out at `dir`) before its record names them.
    fn pack_publish(&self, id: &str, digest: &str, dir: &Path) -> Result<(), StoreError>;
    /// Drops the files of pack `id`'s installs but `keep`, once its record moved on.
    fn pack_retire(&self, id: &str, keep: Option<&str>) -> Result<(), StoreError>;
    /// Brings this process's copy of pack `id` to install `digest`; false when there is nowhere to bring it
    /// from (the local copy is the only one).
    fn pack_fetch(&self, id: &str, digest: &str) -> Result<bool, StoreError>;

    /// Records, before a write runs, the line it gets if it never finishes; `None` when nothing is recorded.
    fn audit_intent(&self, rec: &AuditRecord) -> Result<Option<i64>, StoreError>;
    /// Appends `rec` to the chain, clearing `intent` with it.
    fn audit_append(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<(), StoreError>;
    /// Appends `recs` in order, each chained to the one before, with no intent to clear; a back end that can
    /// pays its durability once for all of them (the file store: one sync of the log, one of its head).
    fn audit_append_all(&self, recs: &[AuditRecord]) -> Result<(), StoreError> {
        recs.iter().try_for_each(|r| self.audit_append(r, None))
    }
    /// The recorded head of the (local tenant's) chain.
    fn audit_head(&self) -> Result<Option<AuditHead>, StoreError>;
    /// Every row of the log (one tenant's, or all), oldest first, damaged lines in their place.
    fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError>;
    /// Every record of the log (one tenant's, or all), oldest first.
    fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError>;
    /// Walks the chain (or each tenant's), checking it against `anchor`.
    fn verify_audit(&self, tenant: Option<&str>, anchor: Option<&str>) -> Result<Verified, StoreError>;
    /// Walks each chain on its own: one for the files, one per tenant in the database.
    fn verify_chains(&self) -> Result<Vec<ChainVerdict>, StoreError>;

    /// Appends a Sense event to `tenant`'s log with the next id (see `Store::append_sense`).
    fn sense_append(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError>;
    /// `tenant`'s events past `after`, oldest first.
    fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError>;
    /// What identifies `tenant`'s log now; `None` when there is none.
    fn sense_version(&self, tenant: &str) -> Result<Option<SenseVersion>, StoreError>;
    /// Woken when an event is recorded anywhere; `None` when watchers poll.
    fn sense_wake(&self) -> Option<Arc<pg::Live>>;

    /// What names this process as the owner of the tasks it runs (taking what shows it alive, once).
    fn task_owner(&self) -> Result<String, StoreError>;
    /// Records a new task.
    fn task_create(&self, rec: &TaskRecord) -> Result<(), StoreError>;
    /// Task `id` of `tenant` as stored, whoever made it (the store checks the Principal).
    fn task_read(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError>;
    /// Records a cancellation of task `id` of `tenant`, if it still works.
    fn task_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError>;
    /// Records how task `rec` ended, if it still works; whether it did.
    fn task_finish(&self, rec: &TaskRecord) -> Result<bool, StoreError>;
    /// Of the tasks `ids` (tenant, id), those with a cancellation recorded.
    fn tasks_cancelled(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError>;
    /// Settles the tasks of owners that are gone and removes expired ones; how many it changed.
    fn tasks_sweep(&self) -> Result<usize, StoreError>;
    /// How many tasks each tenant has in each state (for `/metrics`).
    fn task_counts(&self) -> Result<Vec<(String, crate::tasks::TaskStatus, u64)>, StoreError>;
    /// Records MCP session `key` (the SHA-256 of its id, `crate::mcp_sessions`).
    fn mcp_session_put(&self, key: &str, s: &McpSession) -> Result<(), StoreError>;
    /// MCP session `key`, its last use brought up to now when older than `mcp_sessions::TOUCH_AFTER`; `None`
    /// when there is none, or it was idle past `idle` (it is then removed).
    fn mcp_session_use(&self, key: &str, idle: Duration) -> Result<Option<McpSession>, StoreError>;
    /// Removes MCP session `key`; whether there was one.
    fn mcp_session_delete(&self, key: &str) -> Result<bool, StoreError>;
    /// Removes every MCP session idle past `idle`.
    fn mcp_sessions_prune(&self, idle: Duration) -> Result<(), StoreError>;
    /// Leaves an answer to question `question` of MCP session `key` (`crate::mcp_answers`); false when the
    /// session has `mcp_answers::MAX_WAITING` waiting already.
    fn mcp_answer_put(&self, key: &str, question: &str, body: &str) -> Result<bool, StoreError>;
    /// Takes the answer to question `question` of MCP session `key`, if one is waiting.
    fn mcp_answer_take(&self, key: &str, question: &str) -> Result<Option<String>, StoreError>;

    /// Waits up to `wait` for `tenant`'s turn at the workspace of `pack` (in `workspaces`).
    fn workspace_turn(
        &self,
        workspaces: &Path,
        tenant: &str,
        pack: &str,
        wait: Duration,
    ) -> Result<Option<Turn>, StoreError>;

    /// Whether workspaces are kept here (`crate::workspaces`) and a call's directory is a copy of one; the
    /// file store's directory is the workspace itself, and it keeps none of the rest.
    fn keeps_workspaces(&self) -> bool;
    /// The head of `tenant`'s stored workspace of `pack`.
    fn workspace_head(&self, tenant: &str, pack: &str) -> Result<Option<Stored>, StoreError>;
    /// `tenant`'s stored workspace of `pack`, whole.
    fn workspace_get(&self, tenant: &str, pack: &str) -> Result<Option<(Stored, Vec<u8>)>, StoreError>;
    /// Stores `archive` as the version after `after`; the new version.
    fn workspace_put(
        &self,
        tenant: &str,
        pack: &str,
        after: i64,
        archive: Vec<u8>,
        digest: &str,
    ) -> Result<i64, StoreError>;
    /// The stored workspaces (of `pack`, or all).
    fn workspace_list(&self, pack: Option<&str>) -> Result<Vec<Listed>, StoreError>;
    /// Forgets every tenant's stored workspace of `pack`.
    fn workspace_forget(&self, pack: &str) -> Result<(), StoreError>;
}

/// The document at `rel` read as `T`; `None` when there is none.
pub(crate) fn read<T: DeserializeOwned, B: Backend + ?Sized>(
    b: &B,
    rel: &str,
) -> Result<Option<T>, StoreError> {
    match b.doc_text(rel)? {
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError::Corrupt { path: b.doc_place(rel), reason: e.to_string() }),
        None => Ok(None),
    }
}

/// The document at `rel` read as `R` through the back end's cache, keeping `check`'s validated value; a value
/// `check` refuses is `Corrupt` (with its reason) and not kept.
pub(crate) fn read_cached<R: DeserializeOwned, T: Send + Sync + 'static, B: Backend + ?Sized>(
    b: &B,
    rel: &str,
    check: impl FnOnce(R) -> Result<T, String>,
) -> Result<Option<Arc<T>>, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt { path: b.doc_place(rel), reason };
    let mut check = Some(check);
    let mut parse = |text: &str| -> Result<Parsed, StoreError> {
        let raw: R = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        let check = check.take().ok_or_else(|| corrupt("read twice in one call".into()))?;
        Ok(Arc::new(check(raw).map_err(corrupt)?) as Parsed)
    };
    match b.doc_cached(rel, TypeId::of::<T>(), &mut parse)? {
        None => Ok(None),
        Some(v) => v.downcast::<T>().map(Some).map_err(|_| corrupt("cached as another type".into())),
    }
}

/// Writes `value` as the document at `rel`: pretty JSON and a newline.
pub(crate) fn write<T: Serialize, B: Backend + ?Sized>(
    b: &B,
    rel: &str,
    value: &T,
    mode: u32,
) -> Result<(), StoreError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| StoreError::Corrupt { path: rel.to_string(), reason: e.to_string() })?;
    text.push('\n');
    b.doc_put(rel, text, mode)
}
