//! A client's answers to the questions a replica asked it in an MCP session (before protocol 2026-07-28: an
//! `elicitation/create` sent in a call's response stream, answered by a POST of its own). The balancer may send
//! that POST to another replica than the one waiting for it; that replica leaves the answer here, and the one that
//! asked takes it (docs/hosting.md). An answer is kept under its session's key and its JSON-RPC id, for
//! [`KEEP`] at most, and a session has at most [`MAX_WAITING`] answers waiting: a client cannot fill the store
//! with answers nobody asked for. On the file store each is an owner-only file under `mcp-sessions/answers/`; on
//! PostgreSQL a row of `hcpx_mcp_answers` (pg/sessions.rs).

use std::time::Duration;

use super::{Store, StoreError};
use crate::mcp_sessions::session_key;
use crate::model::digest::sha256_hex;

/// How long an answer waits for the replica that asked.
pub const KEEP: Duration = Duration::from_secs(10 * 60);

/// The most answers one session may have waiting.
pub const MAX_WAITING: usize = 16;

/// The key of the question with JSON-RPC id `rpc_id` (its JSON text: `0`, `"a"`).
fn question_key(rpc_id: &str) -> String {
    sha256_hex(rpc_id.as_bytes())
}

impl Store {
    /// Leaves `body`, the answer to question `rpc_id` of session `id`, for the replica that asked it; false when
    /// the session already has [`MAX_WAITING`] answers waiting (or `id` is no session id), and nothing is kept.
    pub fn mcp_answer_put(&self, id: &str, rpc_id: &str, body: &str) -> Result<bool, StoreError> {
        let Some(key) = session_key(id) else { return Ok(false) };
        self.backend.mcp_answer_put(&key, &question_key(rpc_id), body)
    }

    /// Takes (and removes) the answer to question `rpc_id` of session `id`, if one is waiting.
    pub fn mcp_answer_take(&self, id: &str, rpc_id: &str) -> Result<Option<String>, StoreError> {
        let Some(key) = session_key(id) else { return Ok(None) };
        self.backend.mcp_answer_take(&key, &question_key(rpc_id))
    }
}

/// The file store's answers: `mcp-sessions/answers/<session key>-<question key>.json`, each `{at_ms, body}`.
pub(crate) mod files {
    use super::{KEEP, MAX_WAITING};
    use crate::backend::Backend;
    use crate::mcp_sessions::SESSIONS_DIR;
    use crate::StoreError;
    use serde::{Deserialize, Serialize};
    use std::path::Path;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Answer {
        at_ms: u64,
        body: String,
    }

    fn dir() -> String {
        format!("{SESSIONS_DIR}/answers")
    }

    fn rel(name: &str) -> String {
        format!("{}/{name}", dir())
    }

    pub(crate) fn put(b: &dyn Backend, key: &str, question: &str, body: &str) -> Result<bool, StoreError> {
        b.doc_dir(Path::new(SESSIONS_DIR), true)?;
        b.doc_dir(Path::new(&dir()), true)?;
        let _lock = b.lock()?;
        let now = crate::approvals::now_ms();
        let stale = now.saturating_sub(KEEP.as_millis() as u64);
        let mut waiting = 0;
        for name in b.doc_names(Path::new(&dir()))? {
            let old = match b.doc_text(&rel(&name))? {
                Some(t) => serde_json::from_str::<Answer>(&t).map(|a| a.at_ms < stale).unwrap_or(true),
                None => continue,
            };
            if old {
                b.doc_delete(&rel(&name))?;
            } else if name.starts_with(&format!("{key}-")) {
                waiting += 1;
            }
        }
        if waiting >= MAX_WAITING {
            return Ok(false);
        }
        let a = Answer { at_ms: now, body: body.to_string() };
        crate::backend::write(b, &rel(&format!("{key}-{question}.json")), &a, 0o600)?;
        Ok(true)
    }

    pub(crate) fn take(b: &dyn Backend, key: &str, question: &str) -> Result<Option<String>, StoreError> {
        let path = rel(&format!("{key}-{question}.json"));
        if b.doc_text(&path)?.is_none() {
            return Ok(None);
        }
        let _lock = b.lock()?;
        let Some(text) = b.doc_text(&path)? else { return Ok(None) };
        b.doc_delete(&path)?;
        let stale = crate::approvals::now_ms().saturating_sub(KEEP.as_millis() as u64);
        Ok(serde_json::from_str::<Answer>(&text).ok().filter(|a| a.at_ms >= stale).map(|a| a.body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_taken_once_and_a_session_keeps_few() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let body = r#"{"jsonrpc":"2.0","id":0,"result":{"action":"accept"}}"#;
        assert!(store.mcp_answer_put("s1", "0", body).unwrap());
        assert_eq!(store.mcp_answer_take("s1", "1").unwrap(), None, "another question's");
        assert_eq!(store.mcp_answer_take("s2", "0").unwrap(), None, "another session's");
        assert_eq!(store.mcp_answer_take("s1", "0").unwrap().as_deref(), Some(body));
        assert_eq!(store.mcp_answer_take("s1", "0").unwrap(), None, "taken once");
        for i in 0..MAX_WAITING {
            assert!(store.mcp_answer_put("s1", &i.to_string(), body).unwrap());
        }
        assert!(!store.mcp_answer_put("s1", "99", body).unwrap(), "a session keeps at most MAX_WAITING");
        assert!(store.mcp_answer_put("s2", "99", body).unwrap(), "another session is not held to s1's");
        assert!(!store.mcp_answer_put("a b", "0", body).unwrap(), "no session id");
        let dir = t.path().join("mcp-sessions/answers");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o077, 0);
    }
}
