//! What `hcpx doctor` tells an operator of a fleet on one database: where the database is (host, port, name,
//! user; never a password), the replicas of `hcpx serve` that noted themselves in `hcpx_replicas` (schema 4)
//! and the seal key each holds, and whether the seal key of this process opens every sealed row. A replica
//! notes itself when it starts and every [`BEAT`] after; one not seen for [`QUIET_AFTER`] went quiet.

use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

use super::seal::Sealed;
use super::{db_error, Db};
use crate::StoreError;

/// How often a replica notes that it is still serving.
pub const BEAT: Duration = Duration::from_secs(10);
/// A replica not seen for this long went quiet (it stopped, or cannot reach the database).
pub const QUIET_AFTER: Duration = Duration::from_secs(60);
/// Rows of replicas quiet this long are removed by the next beat of any replica.
const FORGET_AFTER: &str = "1 day";

/// Where the database is, as the connection string names it (the password never kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DbPlace {
    /// The connection string with every password masked.
    pub url: String,
    pub host: String,
    pub port: u16,
    pub dbname: String,
    pub user: String,
}

impl DbPlace {
    /// The place `config` names, with libpq's defaults (port 5432, the database named as the user).
    pub(crate) fn of(config: &tokio_postgres::Config, shown: &str) -> DbPlace {
        use tokio_postgres::config::Host;
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(name)) => name.clone(),
            Some(Host::Unix(dir)) => dir.display().to_string(),
            None => "localhost".into(),
        };
        let user = config.get_user().unwrap_or_default().to_string();
        DbPlace {
            url: shown.to_string(),
            host,
            port: config.get_ports().first().copied().unwrap_or(5432),
            dbname: config.get_dbname().map_or_else(|| user.clone(), str::to_string),
            user,
        }
    }
}

/// What a replica says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Announce {
    /// The address it listens on.
    pub listen: String,
    /// The hcpx version it runs.
    pub version: String,
}

/// One replica as `hcpx_replicas` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplicaRow {
    pub id: i32,
    pub host: String,
    pub pid: i32,
    pub listen: String,
    pub version: String,
    /// The id of the seal key it holds (`None`: it has no `HCP_SEAL_KEY_FILE`).
    pub seal_key_id: Option<String>,
    /// RFC 3339, UTC.
    pub started: String,
    pub last_seen: String,
    /// Seconds since it was last seen.
    pub seen_s_ago: i64,
}

/// A sealed row the seal key of this process does not open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealFailure {
    pub path: String,
    pub key_id: String,
    pub reason: String,
}

/// How the sealed rows fare under the seal key of this process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SealCheck {
    /// The id of `HCP_SEAL_KEY_FILE`'s key (a digest, never the key); `None` when it is not set.
    pub key_id: Option<String>,
    pub sealed: usize,
    pub opened: usize,
    pub failed: usize,
    /// The ids of the keys the rows were sealed with.
    pub row_keys: Vec<String>,
    /// The first few rows that do not open, and why.
    pub failures: Vec<SealFailure>,
}

/// The host name of this machine (the kernel's), or `unknown`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

impl Db {
    /// Notes this process as a replica (now, then every [`BEAT`] for the life of the store), so `hcpx doctor`
    /// lists it; the first note is written before this returns.
    pub fn announce(self: &Arc<Db>, me: Announce) -> Result<(), StoreError> {
        let (pool, shown, id) = (self.pool(), self.shown().to_string(), self.replica);
        let key = self.sealer().map(|s| s.id().to_string());
        let row = (host_name(), std::process::id() as i32, me.listen, me.version, key);
        let beat = move |pool: deadpool_postgres::Pool,
                         shown: String,
                         row: (String, i32, String, String, Option<String>)| async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute(
                "INSERT INTO hcpx_replicas (id, host, pid, listen, version, seal_key_id)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (id) DO UPDATE SET last_seen = now(), seal_key_id = EXCLUDED.seal_key_id",
                &[&id, &row.0, &row.1, &row.2, &row.3, &row.4],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            c.execute(
                &format!("DELETE FROM hcpx_replicas WHERE last_seen < now() - interval '{FORGET_AFTER}'"),
                &[],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            Ok::<(), StoreError>(())
        };
        self.run(beat(pool.clone(), shown.clone(), row.clone()))?;
        let beating = self.handle.spawn(async move {
            loop {
                tokio::time::sleep(BEAT).await;
                let _ =
                    tokio::time::timeout(super::OP_TIMEOUT, beat(pool.clone(), shown.clone(), row.clone()))
                        .await;
            }
        });
        if let Ok(mut b) = self.beat.lock() {
            if let Some(old) = b.replace(beating) {
                old.abort();
            }
        }
        Ok(())
    }

    /// Removes this replica's row (it stops serving on purpose: it did not go quiet).
    pub fn withdraw(&self) -> Result<(), StoreError> {
        if let Some(b) = self.beat.lock().ok().and_then(|mut b| b.take()) {
            b.abort();
        }
        let (pool, shown, id) = (self.pool(), self.shown().to_string(), self.replica);
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute("DELETE FROM hcpx_replicas WHERE id = $1", &[&id])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }

    /// Every replica noted, most recently seen first.
    pub fn replicas(&self) -> Result<Vec<ReplicaRow>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT id, host, pid, listen, version, seal_key_id,
                       to_char(started AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                       to_char(last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                       floor(extract(epoch FROM now() - last_seen))::bigint
                     FROM hcpx_replicas ORDER BY last_seen DESC, id",
                    &[],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows
                .iter()
                .map(|r| ReplicaRow {
                    id: r.get(0),
                    host: r.get(1),
                    pid: r.get(2),
                    listen: r.get(3),
                    version: r.get(4),
                    seal_key_id: r.get(5),
                    started: r.get(6),
                    last_seen: r.get(7),
                    seen_s_ago: r.get(8),
                })
                .collect())
        })
    }

    /// Tries the seal key of this process on every sealed row.
    pub fn seal_check(&self) -> Result<SealCheck, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let rows = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT path, sealed, nonce, key_id FROM hcpx_documents WHERE sealed IS NOT NULL ORDER BY path",
                    &[],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows
                .iter()
                .map(|r| {
                    let path: String = r.get(0);
                    let sealed = Sealed {
                        bytes: r.get::<_, Option<Vec<u8>>>(1).unwrap_or_default(),
                        nonce: r.get::<_, Option<Vec<u8>>>(2).unwrap_or_default(),
                        key_id: r.get::<_, Option<String>>(3).unwrap_or_default(),
                    };
                    (path, sealed)
                })
                .collect::<Vec<_>>())
        })?;
        let sealer = self.sealer();
        let mut check = SealCheck {
            key_id: sealer.map(|s| s.id().to_string()),
            sealed: rows.len(),
            opened: 0,
            failed: 0,
            row_keys: Vec::new(),
            failures: Vec::new(),
        };
        for (path, sealed) in &rows {
            if !check.row_keys.contains(&sealed.key_id) {
                check.row_keys.push(sealed.key_id.clone());
            }
            let opened = match sealer {
                Some(s) => s.open(path, sealed).map(|_| ()).map_err(|e| e.to_string()),
                None => Err("HCP_SEAL_KEY_FILE is not set".to_string()),
            };
            match opened {
                Ok(()) => check.opened += 1,
                Err(reason) => {
                    check.failed += 1;
                    if check.failures.len() < 5 {
                        check.failures.push(SealFailure {
                            path: path.clone(),
                            key_id: sealed.key_id.clone(),
                            reason,
                        });
                    }
                }
            }
        }
        check.row_keys.sort();
        Ok(check)
    }

    /// Where the database is.
    pub fn place(&self) -> &DbPlace {
        &self.place
    }

    /// The schema version the database was at when this process opened it (before its migrations).
    pub fn migrated_from(&self) -> i32 {
        self.migrated_from
    }
}
