//! The store's JSON documents as rows of `hcpx_documents`, keyed by the path the file store would use
//! (`state.json`, `principals.json`, `tenants/acme/connections.json`, …). Credential documents are sealed. A
//! read through the cache is trusted while the LISTEN connection is up, no document changed since (the
//! generation), and for at most [`TRUST`] — the bound that holds even if a notification were lost.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::live::CHANNEL;
use super::seal::{is_secret, Sealed};
use super::{db_error, Db};
use crate::backend::{is_type, Parse, Parsed};
use crate::StoreError;

/// The longest a cached document is used without asking the database, whatever the notifications say.
pub const TRUST: Duration = Duration::from_secs(1);

/// A cached document: the generation it was read at, when, and its parsed value (`None`: no such document).
type Entry = (u64, Instant, Option<Parsed>);

/// Documents read before, each with the generation it was read at.
#[derive(Default)]
pub(crate) struct Cache {
    map: Mutex<HashMap<String, Entry>>,
}

/// A document row as read.
enum Row {
    Plain(String),
    Sealed(Sealed),
}

impl Db {
    /// The text of the document at `path` (opened when sealed); `None` when there is none.
    pub fn doc_text(&self, path: &str) -> Result<Option<String>, StoreError> {
        let (pool, shown, p) = (self.pool(), self.shown().to_string(), path.to_string());
        let row = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let st = c
                .prepare_cached("SELECT body, sealed, nonce, key_id FROM hcpx_documents WHERE path = $1")
                .await
                .map_err(|e| db_error(&shown, e))?;
            let Some(r) = c.query_opt(&st, &[&p]).await.map_err(|e| db_error(&shown, e))? else {
                return Ok(None);
            };
            let body: Option<String> = r.get(0);
            Ok(Some(match body {
                Some(b) => Row::Plain(b),
                None => Row::Sealed(Sealed {
                    bytes: r.get::<_, Option<Vec<u8>>>(1).unwrap_or_default(),
                    nonce: r.get::<_, Option<Vec<u8>>>(2).unwrap_or_default(),
                    key_id: r.get::<_, Option<String>>(3).unwrap_or_default(),
                }),
            }))
        })?;
        match row {
            None => Ok(None),
            Some(Row::Plain(t)) => Ok(Some(t)),
            Some(Row::Sealed(s)) => {
                let sealer = self.sealer().ok_or_else(|| no_key(path))?;
                let plain = sealer.open(path, &s)?;
                String::from_utf8(plain)
                    .map(Some)
                    .map_err(|_| StoreError::Corrupt { path: path.into(), reason: "not UTF-8".into() })
            }
        }
    }

    /// The document at `path` parsed by `parse` as `ty`, through the cache (secret documents are never cached).
    pub(crate) fn doc_cached(
        &self,
        path: &str,
        ty: TypeId,
        parse: Parse<'_>,
    ) -> Result<Option<Parsed>, StoreError> {
        let (generation, up) = self.live().generation();
        let cacheable = up && !is_secret(path);
        if cacheable {
            let hit = self.docs.map.lock().ok().and_then(|m| {
                m.get(path)
                    .filter(|(g, at, _)| *g == generation && at.elapsed() < TRUST)
                    .map(|(_, _, v)| v.clone())
            });
            match hit {
                Some(None) => return Ok(None),
                Some(Some(v)) if is_type(&v, ty) => return Ok(Some(v)),
                Some(Some(_)) | None => {}
            }
        }
        let value = match self.doc_text(path)? {
            Some(text) => Some(parse(&text)?),
            None => None,
        };
        if cacheable {
            if let Ok(mut m) = self.docs.map.lock() {
                m.insert(path.to_string(), (generation, Instant::now(), value.clone()));
            }
        }
        Ok(value)
    }

    /// Writes the document at `path` (sealed when it holds credentials) and announces the change, in one
    /// transaction.
    pub fn doc_put(&self, path: &str, text: String) -> Result<(), StoreError> {
        let sealed = if is_secret(path) {
            Some(self.sealer().ok_or_else(|| no_key(path))?.seal(path, text.as_bytes())?)
        } else {
            None
        };
        let body = sealed.is_none().then_some(text);
        let (pool, shown, p) = (self.pool(), self.shown().to_string(), path.to_string());
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            let (bytes, nonce, key_id) = match sealed {
                Some(s) => (Some(s.bytes), Some(s.nonce), Some(s.key_id)),
                None => (None, None, None),
            };
            tx.execute(
                "INSERT INTO hcpx_documents (path, body, sealed, nonce, key_id, updated_at)
                 VALUES ($1, $2, $3, $4, $5, now())
                 ON CONFLICT (path) DO UPDATE SET body = EXCLUDED.body, sealed = EXCLUDED.sealed,
                   nonce = EXCLUDED.nonce, key_id = EXCLUDED.key_id, updated_at = now()",
                &[&p, &body, &bytes, &nonce, &key_id],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            tx.execute("SELECT pg_notify($1, 'doc')", &[&CHANNEL]).await.map_err(|e| db_error(&shown, e))?;
            tx.commit().await.map_err(|e| db_error(&shown, e))
        })?;
        self.forget(path);
        Ok(())
    }

    /// Removes the document at `path`; whether there was one.
    pub fn doc_delete(&self, path: &str) -> Result<bool, StoreError> {
        let (pool, shown, p) = (self.pool(), self.shown().to_string(), path.to_string());
        let n = self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            let n = tx
                .execute("DELETE FROM hcpx_documents WHERE path = $1", &[&p])
                .await
                .map_err(|e| db_error(&shown, e))?;
            tx.execute("SELECT pg_notify($1, 'doc')", &[&CHANNEL]).await.map_err(|e| db_error(&shown, e))?;
            tx.commit().await.map_err(|e| db_error(&shown, e))?;
            Ok(n)
        })?;
        self.forget(path);
        Ok(n > 0)
    }

    /// The paths of the documents under `prefix` (a directory, ending in `/`), in order.
    pub fn doc_list(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let pattern = format!("{}%", prefix.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query("SELECT path FROM hcpx_documents WHERE path LIKE $1 ORDER BY path", &[&pattern])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Re-seals every sealed document under `to`, in one transaction under the store lock; how many.
    pub fn reseal(self: &Arc<Db>, to: &super::seal::Sealer) -> Result<usize, StoreError> {
        let from = self.sealer().ok_or_else(|| no_key("the credentials"))?.clone();
        let _lock = self.lock()?;
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let to = to.clone();
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            let rows = tx
                .query(
                    "SELECT path, sealed, nonce, key_id FROM hcpx_documents WHERE sealed IS NOT NULL FOR UPDATE",
                    &[],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            let mut n = 0;
            for r in rows {
                let path: String = r.get(0);
                let sealed = Sealed { bytes: r.get(1), nonce: r.get(2), key_id: r.get(3) };
                let plain = if sealed.key_id == to.id() { to.open(&path, &sealed)? } else { from.open(&path, &sealed)? };
                let s = to.seal(&path, &plain)?;
                tx.execute(
                    "UPDATE hcpx_documents SET sealed = $2, nonce = $3, key_id = $4, updated_at = now() WHERE path = $1",
                    &[&path, &s.bytes, &s.nonce, &s.key_id],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
                n += 1;
            }
            tx.execute("SELECT pg_notify($1, 'doc')", &[&CHANNEL]).await.map_err(|e| db_error(&shown, e))?;
            tx.commit().await.map_err(|e| db_error(&shown, e))?;
            Ok(n)
        })
    }

    fn forget(&self, path: &str) {
        if let Ok(mut m) = self.docs.map.lock() {
            m.remove(path);
        }
    }
}

fn no_key(path: &str) -> StoreError {
    StoreError::Refused(format!(
        "{path}: a PostgreSQL store keeps credentials sealed, and HCP_SEAL_KEY_FILE is not set; point it at the operator's key file (32 random bytes: `head -c 32 /dev/urandom > FILE && chmod 600 FILE`)"
    ))
}
