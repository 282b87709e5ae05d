//! Tasks in the database (`hcpx_tasks`): one row per task, the whole record as JSON beside the columns that are
//! queried (tenant, Principal, the replica that runs it, its status, a cancellation asked for, when it expires).
//! A cancellation is one `UPDATE` any replica makes; the owner polls for it. The sweep every replica runs every
//! 2 s (beside the write intents', `live.rs`) settles the working tasks of replicas whose liveness lock is free
//! as failed with outcome unknown, and deletes the tasks past their keep time.

use super::audit::replica_gone;
use super::{db_error, Db};
use crate::tasks::{now_ms, TaskRecord, TaskStatus};
use crate::StoreError;

fn to_text(rec: &TaskRecord) -> Result<String, StoreError> {
    serde_json::to_string(rec)
        .map_err(|e| StoreError::Corrupt { path: format!("task {}", rec.id), reason: e.to_string() })
}

fn from_row(id: &str, record: &str, cancel: bool) -> Result<TaskRecord, StoreError> {
    let mut t: TaskRecord = serde_json::from_str(record)
        .map_err(|e| StoreError::Corrupt { path: format!("postgres:task {id}"), reason: e.to_string() })?;
    t.cancel_requested = cancel;
    Ok(t)
}

fn expires(rec: &TaskRecord) -> Option<i64> {
    rec.expires_at_ms().map(|e| i64::try_from(e).unwrap_or(i64::MAX))
}

impl Db {
    /// This replica as the owner of the tasks it runs.
    pub(crate) fn task_owner(&self) -> String {
        format!("replica-{}", self.replica)
    }

    pub(crate) fn task_insert(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        let (pool, shown, me) = (self.pool(), self.shown().to_string(), self.replica);
        let (text, rec) = (to_text(rec)?, rec.clone());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute(
                "INSERT INTO hcpx_tasks (id, tenant, principal, replica, status, expires_ms, record)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                &[&rec.id, &rec.tenant, &rec.principal, &me, &rec.status.as_str(), &expires(&rec), &text],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }

    pub(crate) fn task_select(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let row = c
                .query_opt(
                    "SELECT record, cancel FROM hcpx_tasks WHERE id = $1 AND tenant = $2",
                    &[&id, &tenant],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            row.map(|r| from_row(&id, r.get(0), r.get(1))).transpose()
        })
    }

    pub(crate) fn task_set_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (tenant, id) = (tenant.to_string(), id.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute(
                "UPDATE hcpx_tasks SET cancel = true WHERE id = $1 AND tenant = $2 AND status = 'working'",
                &[&id, &tenant],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }

    pub(crate) fn task_end(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let (text, rec) = (to_text(rec)?, rec.clone());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let n = c
                .execute(
                    "UPDATE hcpx_tasks SET status = $3, expires_ms = $4, record = $5
                     WHERE id = $1 AND tenant = $2 AND status = 'working'",
                    &[&rec.id, &rec.tenant, &rec.status.as_str(), &expires(&rec), &text],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(n == 1)
        })
    }

    pub(crate) fn task_cancels(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        let ids: Vec<String> = ids.iter().map(|(_, id)| id.clone()).collect();
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT id FROM hcpx_tasks WHERE id = ANY($1) AND cancel AND status = 'working'",
                    &[&ids],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// How many tasks each tenant has in each state (a status no release writes is left out).
    pub(crate) fn task_tally(&self) -> Result<Vec<(String, TaskStatus, u64)>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query("SELECT tenant, status, count(*) FROM hcpx_tasks GROUP BY tenant, status", &[])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows
                .iter()
                .filter_map(|r| {
                    let status = TaskStatus::parse(r.get(1))?;
                    Some((r.get::<_, String>(0), status, u64::try_from(r.get::<_, i64>(2)).unwrap_or(0)))
                })
                .collect())
        })
    }

    pub(crate) fn task_sweep(&self) -> Result<usize, StoreError> {
        let (pool, shown, me) = (self.pool(), self.shown().to_string(), self.replica);
        self.run(async move { sweep(&pool, &shown, me).await })
    }
}

/// Deletes the tasks past their keep time and settles the working tasks of every replica that is gone as
/// failed, outcome unknown (each in one `UPDATE` that only a still-working task matches, so two replicas
/// sweeping at once settle it once); how many rows it changed.
pub(crate) async fn sweep(pool: &deadpool_postgres::Pool, shown: &str, me: i32) -> Result<usize, StoreError> {
    let now = now_ms();
    let now_i = i64::try_from(now).unwrap_or(i64::MAX);
    let c = pool.get().await.map_err(|e| db_error(shown, e))?;
    let mut done = c
        .execute("DELETE FROM hcpx_tasks WHERE expires_ms IS NOT NULL AND expires_ms <= $1", &[&now_i])
        .await
        .map_err(|e| db_error(shown, e))? as usize;
    let rows = c
        .query("SELECT DISTINCT replica FROM hcpx_tasks WHERE status = 'working' AND replica <> $1", &[&me])
        .await
        .map_err(|e| db_error(shown, e))?;
    for r in rows {
        let replica: i32 = r.get(0);
        if !replica_gone(&c, shown, replica).await? {
            continue;
        }
        let tasks = c
            .query(
                "SELECT id, record, cancel FROM hcpx_tasks WHERE replica = $1 AND status = 'working'",
                &[&replica],
            )
            .await
            .map_err(|e| db_error(shown, e))?;
        for t in tasks {
            let id: String = t.get(0);
            let settled = from_row(&id, t.get(1), t.get(2))?.settled_unknown(now);
            let n = c
                .execute(
                    "UPDATE hcpx_tasks SET status = $2, expires_ms = $3, record = $4
                     WHERE id = $1 AND status = 'working'",
                    &[&id, &TaskStatus::Failed.as_str(), &expires(&settled), &to_text(&settled)?],
                )
                .await
                .map_err(|e| db_error(shown, e))?;
            done += n as usize;
        }
    }
    Ok(done)
}
