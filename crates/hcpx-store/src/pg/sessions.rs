//! MCP sessions in the database (`crate::mcp_sessions`): rows of `hcpx_mcp_sessions`, keyed by the SHA-256 of
//! the session id, their age measured by the database's clock so every replica agrees on it. A use is one
//! round trip (a second, the touch, once a minute); nothing here notifies, so sessions never disturb the
//! replicas' cached documents. A session's answers that reached another replica than the one that asked are
//! rows of `hcpx_mcp_answers` (`crate::mcp_answers`).

use std::time::Duration;

use super::{db_error, Db};
use crate::mcp_answers::{KEEP, MAX_WAITING};
use crate::mcp_sessions::{McpSession, TOUCH_AFTER};
use crate::StoreError;

fn corrupt(key: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt { path: format!("postgres:hcpx_mcp_sessions/{key}"), reason: e.to_string() }
}

impl Db {
    /// Records session `key` (a session id is never reused: an existing row is replaced).
    pub(crate) fn mcp_session_put(&self, key: &str, s: &McpSession) -> Result<(), StoreError> {
        let init = serde_json::to_string(&s.init).map_err(|e| corrupt(key, e))?;
        let (pool, shown, key) = (self.pool(), self.shown().to_string(), key.to_string());
        let (principal, tenant) = (s.principal.clone(), s.tenant.clone());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute(
                "INSERT INTO hcpx_mcp_sessions (id_sha256, principal, tenant, init) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (id_sha256) DO UPDATE
                 SET principal = $2, tenant = $3, init = $4, last_used = now()",
                &[&key, &principal, &tenant, &init],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }

    /// Session `key`, touched when its last use is older than [`TOUCH_AFTER`]; `None` when there is none or it
    /// was idle past `idle` (removed).
    pub(crate) fn mcp_session_use(
        &self,
        key: &str,
        idle: Duration,
    ) -> Result<Option<McpSession>, StoreError> {
        let (pool, shown, k) = (self.pool(), self.shown().to_string(), key.to_string());
        let (idle_s, touch_s) = (idle.as_secs_f64(), TOUCH_AFTER.as_secs_f64());
        let row = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let st = c
                .prepare_cached(
                    "SELECT principal, tenant, init,
                            floor(extract(epoch FROM last_used) * 1000)::bigint,
                            last_used < now() - make_interval(secs => $2),
                            last_used < now() - make_interval(secs => $3)
                     FROM hcpx_mcp_sessions WHERE id_sha256 = $1",
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            let Some(r) =
                c.query_opt(&st, &[&k, &idle_s, &touch_s]).await.map_err(|e| db_error(&shown, e))?
            else {
                return Ok(None);
            };
            let (expired, stale): (bool, bool) = (r.get(4), r.get(5));
            if expired {
                c.execute("DELETE FROM hcpx_mcp_sessions WHERE id_sha256 = $1", &[&k])
                    .await
                    .map_err(|e| db_error(&shown, e))?;
                return Ok(None);
            }
            let mut last: i64 = r.get(3);
            if stale {
                // A row another replica deleted meanwhile stays deleted: the update then matches nothing.
                let touched = c
                    .query_opt(
                        "UPDATE hcpx_mcp_sessions SET last_used = now() WHERE id_sha256 = $1
                         RETURNING floor(extract(epoch FROM last_used) * 1000)::bigint",
                        &[&k],
                    )
                    .await
                    .map_err(|e| db_error(&shown, e))?;
                match touched {
                    Some(t) => last = t.get(0),
                    None => return Ok(None),
                }
            }
            Ok(Some((r.get::<_, String>(0), r.get::<_, String>(1), r.get::<_, String>(2), last)))
        })?;
        let Some((principal, tenant, init, last)) = row else { return Ok(None) };
        let init = serde_json::from_str(&init).map_err(|e| corrupt(key, e))?;
        Ok(Some(McpSession { principal, tenant, init, last_used_ms: u64::try_from(last).unwrap_or(0) }))
    }

    /// Removes session `key`; whether there was one.
    pub(crate) fn mcp_session_delete(&self, key: &str) -> Result<bool, StoreError> {
        let (pool, shown, key) = (self.pool(), self.shown().to_string(), key.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let n = c
                .execute("DELETE FROM hcpx_mcp_sessions WHERE id_sha256 = $1", &[&key])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(n > 0)
        })
    }

    /// Removes every session idle past `idle`.
    pub(crate) fn mcp_sessions_prune(&self, idle: Duration) -> Result<(), StoreError> {
        let (pool, shown, idle_s) = (self.pool(), self.shown().to_string(), idle.as_secs_f64());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute(
                "DELETE FROM hcpx_mcp_sessions WHERE last_used < now() - make_interval(secs => $1)",
                &[&idle_s],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }

    /// Leaves an answer to question `question` of session `key`; false when the session has [`MAX_WAITING`]
    /// waiting. Answers older than [`KEEP`] are dropped first, in the same transaction.
    pub(crate) fn mcp_answer_put(&self, key: &str, question: &str, body: &str) -> Result<bool, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (key, question, body) = (key.to_string(), question.to_string(), body.to_string());
        let keep_s = KEEP.as_secs_f64();
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            tx.execute(
                "DELETE FROM hcpx_mcp_answers WHERE at < now() - make_interval(secs => $1)",
                &[&keep_s],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            let waiting: i64 = tx
                .query_one("SELECT count(*) FROM hcpx_mcp_answers WHERE id_sha256 = $1", &[&key])
                .await
                .map_err(|e| db_error(&shown, e))?
                .get(0);
            if waiting >= MAX_WAITING as i64 {
                return Ok(false);
            }
            tx.execute(
                "INSERT INTO hcpx_mcp_answers (id_sha256, question, body) VALUES ($1, $2, $3)
                 ON CONFLICT (id_sha256, question) DO UPDATE SET body = $3, at = now()",
                &[&key, &question, &body],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            tx.commit().await.map_err(|e| db_error(&shown, e))?;
            Ok(true)
        })
    }

    /// Takes (removes and returns) the answer to question `question` of session `key`, if one is waiting.
    pub(crate) fn mcp_answer_take(&self, key: &str, question: &str) -> Result<Option<String>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (key, question, keep_s) = (key.to_string(), question.to_string(), KEEP.as_secs_f64());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let row = c
                .query_opt(
                    "DELETE FROM hcpx_mcp_answers WHERE id_sha256 = $1 AND question = $2
                     RETURNING body, at >= now() - make_interval(secs => $3)",
                    &[&key, &question, &keep_s],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(row.filter(|r| r.get::<_, bool>(1)).map(|r| r.get(0)))
        })
    }
}
