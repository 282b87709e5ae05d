//! The MCP sessions of clients on protocols before 2026-07-28 (docs/hosting.md): a session is opened by
//! `initialize` on one replica and named by `Mcp-Session-Id` on every later request, which any replica may
//! receive. So what a replica needs to take it up (the client's `initialize` parameters) lives here, in the
//! store, with the Principal that opened it: a session is served to that Principal alone. Sessions end on the
//! client's DELETE or after [`IDLE`] without a request; each is kept under the SHA-256 of its id, so neither a
//! file listing nor a database dump names a live session. On the file store each is an owner-only file
//! `mcp-sessions/<sha256>.json`; on PostgreSQL a row of `hcpx_mcp_sessions` (pg/sessions.rs), never a document,
//! so a session used once a minute does not drop every replica's cached documents.

use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::{Store, StoreError};
use crate::model::digest::sha256_hex;

/// Where the file store keeps sessions, relative to `$HCP_HOME`.
pub const SESSIONS_DIR: &str = "mcp-sessions";

/// How long a session lasts without a request: past it, it is unknown to every replica (and removed).
pub const IDLE: Duration = Duration::from_secs(60 * 60);

/// A session's last use is written again only when it is older than this, so a busy session costs a read per
/// request and a write per minute.
pub(crate) const TOUCH_AFTER: Duration = Duration::from_secs(60);

/// The longest session id taken (rmcp's are UUIDs, 36 characters).
const MAX_ID: usize = 128;

/// One session as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSession {
    /// The Principal that opened it, and its tenant: the only caller it is served to.
    pub principal: String,
    pub tenant: String,
    /// The client's `initialize` parameters, as it sent them (a replica replays them to take the session up).
    pub init: serde_json::Value,
    /// Its last request, in milliseconds since the Unix epoch (to within [`TOUCH_AFTER`]).
    pub last_used_ms: u64,
}

/// The key a session id is kept under: the SHA-256 of the id, or `None` for what is no session id (empty,
/// longer than [`MAX_ID`], or other than visible ASCII), which is then unknown without a look at the store.
pub fn session_key(id: &str) -> Option<String> {
    let plausible = !id.is_empty() && id.len() <= MAX_ID && id.bytes().all(|b| b.is_ascii_graphic());
    plausible.then(|| sha256_hex(id.as_bytes()))
}

/// Now, in milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    crate::approvals::now_ms()
}

impl Store {
    /// Records session `id`, just opened by `principal` of `tenant` with `init`. About one call in 64 also
    /// removes the sessions idle past [`IDLE`], so the store does not grow with clients that never said goodbye.
    pub fn mcp_session_open(
        &self,
        id: &str,
        principal: &str,
        tenant: &str,
        init: serde_json::Value,
    ) -> Result<(), StoreError> {
        let key = session_key(id).ok_or_else(|| {
            StoreError::Refused(format!(
                "{id:?} is not an MCP session id (1 to {MAX_ID} visible ASCII characters)"
            ))
        })?;
        let s = McpSession {
            principal: principal.to_string(),
            tenant: tenant.to_string(),
            init,
            last_used_ms: now_ms(),
        };
        if crate::random_bytes::<1>()?[0] < 4 {
            let _ = self.backend.mcp_sessions_prune(IDLE);
        }
        self.backend.mcp_session_put(&key, &s)
    }

    /// Session `id` as stored, its last use brought up to now; `None` when there is none, or it was idle past
    /// [`IDLE`] (it is then removed).
    pub fn mcp_session(&self, id: &str) -> Result<Option<McpSession>, StoreError> {
        match session_key(id) {
            Some(key) => self.backend.mcp_session_use(&key, IDLE),
            None => Ok(None),
        }
    }

    /// Ends session `id`; whether there was one.
    pub fn mcp_session_end(&self, id: &str) -> Result<bool, StoreError> {
        match session_key(id) {
            Some(key) => self.backend.mcp_session_delete(&key),
            None => Ok(false),
        }
    }
}

/// The file store's sessions, each an owner-only file under [`SESSIONS_DIR`]. Reads take no lock; a write
/// (open, the once-a-minute touch, end) takes the store's, and a touch reads the file again under it, so a
/// session ended by another process is never written back.
pub(crate) mod files {
    use super::{now_ms, McpSession, SESSIONS_DIR, TOUCH_AFTER};
    use crate::backend::Backend;
    use crate::StoreError;
    use std::path::Path;
    use std::time::Duration;

    fn rel(key: &str) -> String {
        format!("{SESSIONS_DIR}/{key}.json")
    }

    /// The session at `key`; one that does not parse is no session (it is removed: the client opens another).
    fn read(b: &dyn Backend, key: &str) -> Result<Option<McpSession>, StoreError> {
        let Some(text) = b.doc_text(&rel(key))? else { return Ok(None) };
        match serde_json::from_str::<McpSession>(&text) {
            Ok(s) => Ok(Some(s)),
            Err(_) => {
                b.doc_delete(&rel(key))?;
                Ok(None)
            }
        }
    }

    pub(crate) fn put(b: &dyn Backend, key: &str, s: &McpSession) -> Result<(), StoreError> {
        b.doc_dir(Path::new(SESSIONS_DIR), true)?;
        let _lock = b.lock()?;
        crate::backend::write(b, &rel(key), s, 0o600)
    }

    pub(crate) fn take_up(
        b: &dyn Backend,
        key: &str,
        idle: Duration,
    ) -> Result<Option<McpSession>, StoreError> {
        let Some(s) = read(b, key)? else { return Ok(None) };
        let age = now_ms().saturating_sub(s.last_used_ms);
        if age >= idle.as_millis() as u64 {
            delete(b, key)?;
            return Ok(None);
        }
        if age < TOUCH_AFTER.as_millis() as u64 {
            return Ok(Some(s));
        }
        let _lock = b.lock()?;
        let Some(mut s) = read(b, key)? else { return Ok(None) };
        s.last_used_ms = now_ms();
        crate::backend::write(b, &rel(key), &s, 0o600)?;
        Ok(Some(s))
    }

    pub(crate) fn delete(b: &dyn Backend, key: &str) -> Result<bool, StoreError> {
        let _lock = b.lock()?;
        b.doc_delete(&rel(key))
    }

    pub(crate) fn prune(b: &dyn Backend, idle: Duration) -> Result<(), StoreError> {
        let stale = now_ms().saturating_sub(idle.as_millis() as u64);
        for name in b.doc_names(Path::new(SESSIONS_DIR))? {
            let Some(key) = name.strip_suffix(".json") else { continue };
            if read(b, key)?.is_some_and(|s| s.last_used_ms < stale) {
                delete(b, key)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn init() -> serde_json::Value {
        serde_json::json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "c", "version": "1" } })
    }

    #[test]
    fn a_session_is_kept_under_a_digest_owner_only_until_it_ends() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let id = "6f1c9a55-0c1e-4e0b-9f44-3d1f0f6b2a77";
        store.mcp_session_open(id, "alice", "acme", init()).unwrap();
        let s = store.mcp_session(id).unwrap().unwrap();
        assert_eq!((s.principal.as_str(), s.tenant.as_str(), &s.init), ("alice", "acme", &init()));
        let dir = t.path().join(SESSIONS_DIR);
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1);
        assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
        let name = files[0].file_name().unwrap().to_string_lossy().to_string();
        assert_eq!(name, format!("{}.json", sha256_hex(id.as_bytes())));
        assert!(!std::fs::read_to_string(&files[0]).unwrap().contains(id));
        assert!(store.mcp_session_end(id).unwrap());
        assert!(store.mcp_session(id).unwrap().is_none());
        assert!(!store.mcp_session_end(id).unwrap());
    }

    #[test]
    fn an_idle_session_expires_and_a_used_one_is_touched() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let (old, busy) = ("old", "busy");
        store.mcp_session_open(old, "alice", "acme", init()).unwrap();
        store.mcp_session_open(busy, "alice", "acme", init()).unwrap();
        let age = |id: &str, ms: u64| {
            let key = session_key(id).unwrap();
            let mut s = files::take_up(store.backend.as_ref(), &key, IDLE).unwrap().unwrap();
            s.last_used_ms = now_ms() - ms;
            crate::backend::write(store.backend.as_ref(), &format!("{SESSIONS_DIR}/{key}.json"), &s, 0o600)
                .unwrap();
        };
        age(old, IDLE.as_millis() as u64 + 1);
        age(busy, IDLE.as_millis() as u64 - 60_000);
        assert!(store.mcp_session(old).unwrap().is_none(), "idle past the bound");
        let s = store.mcp_session(busy).unwrap().unwrap();
        assert!(now_ms() - s.last_used_ms < 5_000, "a use past TOUCH_AFTER brings it up to now");
        assert!(store.mcp_session(busy).unwrap().is_some());
        assert_eq!(
            std::fs::read_dir(t.path().join(SESSIONS_DIR)).unwrap().count(),
            1,
            "the idle one is gone"
        );
        // A prune removes the idle ones no request names any more.
        store.mcp_session_open("gone", "bob", "acme", init()).unwrap();
        age("gone", IDLE.as_millis() as u64 + 1);
        files::prune(store.backend.as_ref(), IDLE).unwrap();
        assert_eq!(std::fs::read_dir(t.path().join(SESSIONS_DIR)).unwrap().count(), 1);
    }

    #[test]
    fn what_is_no_session_id_reaches_no_file() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        for bad in ["", "a b", "é", "a\nb", &"x".repeat(MAX_ID + 1)] {
            assert!(session_key(bad).is_none(), "{bad:?}");
            assert!(store.mcp_session(bad).unwrap().is_none());
            assert!(!store.mcp_session_end(bad).unwrap());
            assert!(store.mcp_session_open(bad, "a", "t", init()).is_err());
        }
        assert!(!t.path().join(SESSIONS_DIR).exists());
        // An id shaped like a path is only ever a digest in a file name.
        let path = "../../principals";
        store.mcp_session_open(path, "a", "t", init()).unwrap();
        let names: Vec<_> =
            std::fs::read_dir(t.path().join(SESSIONS_DIR)).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(format!("{}.json", sha256_hex(path.as_bytes())))]);
        assert!(!t.path().join("principals.json").exists());
    }
}
