//! Sense events in the database: ids monotonic per tenant across every replica (the tenant's head row is
//! locked for the append), each append announced with `pg_notify` in its own transaction, so a watcher on any
//! replica wakes at once and a reconnect through another replica replays from the same rows.

use super::live::CHANNEL;
use super::{db_error, Db};
use crate::sense::{NewEvent, SenseEvent};
use crate::StoreError;

impl Db {
    /// Appends `new` to `tenant`'s events with the next id (see `Store::append_sense` for `dedupe`), and drops
    /// what is past the count and age bounds now and then.
    pub fn sense_append(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
        max: u64,
    ) -> Result<Option<SenseEvent>, StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.to_string());
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            tx.execute(
                "INSERT INTO hcpx_sense_heads (tenant, last_id) VALUES ($1, 0) ON CONFLICT (tenant) DO NOTHING",
                &[&tenant],
            )
            .await
            .map_err(|e| db_error(&shown, e))?;
            let row = tx
                .query_one("SELECT last_id FROM hcpx_sense_heads WHERE tenant = $1 FOR UPDATE", &[&tenant])
                .await
                .map_err(|e| db_error(&shown, e))?;
            let last: i64 = row.get(0);
            if dedupe && last > 0 {
                let prev = tx
                    .query_opt("SELECT event FROM hcpx_sense WHERE tenant = $1 AND id = $2", &[&tenant, &last])
                    .await
                    .map_err(|e| db_error(&shown, e))?;
                if let Some(p) = prev.and_then(|r| serde_json::from_str::<SenseEvent>(r.get(0)).ok()) {
                    if p.pack_id == new.pack_id && p.reference == new.reference && p.payload == new.payload {
                        return Ok(None);
                    }
                }
            }
            let id = last + 1;
            let event = SenseEvent {
                id: id as u64,
                at: crate::model::clock::now_rfc3339(),
                pack_id: new.pack_id,
                reference: new.reference,
                payload: new.payload,
                principal: new.principal,
            };
            let text = serde_json::to_string(&event)
                .map_err(|e| StoreError::Corrupt { path: "sense".into(), reason: e.to_string() })?;
            tx.execute("INSERT INTO hcpx_sense (tenant, id, event) VALUES ($1, $2, $3)", &[&tenant, &id, &text])
                .await
                .map_err(|e| db_error(&shown, e))?;
            tx.execute("UPDATE hcpx_sense_heads SET last_id = $2 WHERE tenant = $1", &[&tenant, &id])
                .await
                .map_err(|e| db_error(&shown, e))?;
            let note = format!("sense:{id}:{tenant}");
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &note]).await.map_err(|e| db_error(&shown, e))?;
            // Retention: one bounded delete every so often, never the newest event (ids never restart).
            let slack = (max / 10).max(1) as i64;
            if id % slack == 0 {
                let keep_from = id - max as i64 + 1;
                tx.execute(
                    "DELETE FROM hcpx_sense WHERE tenant = $1 AND id <> $2
                       AND (id < $3 OR recorded < now() - interval '7 days')",
                    &[&tenant, &id, &keep_from],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            }
            tx.commit().await.map_err(|e| db_error(&shown, e))?;
            Ok(Some(event))
        })
    }

    /// `tenant`'s events past `after`, oldest first.
    pub fn sense_after(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.to_string());
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT event FROM hcpx_sense WHERE tenant = $1 AND id > $2 ORDER BY id",
                    &[&tenant, &after],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            rows.iter()
                .map(|r| {
                    serde_json::from_str(r.get(0)).map_err(|e| StoreError::Corrupt {
                        path: format!("sense events of {tenant}"),
                        reason: e.to_string(),
                    })
                })
                .collect()
        })
    }

    /// The newest id of `tenant` (0 when none), from the listener when it is up, else from the database.
    pub fn sense_last(&self, tenant: &str) -> Result<u64, StoreError> {
        if let Some(id) = self.live().sense_head(tenant).filter(|_| self.live().connected()) {
            return Ok(id);
        }
        let (pool, shown, tenant_) = (self.pool(), self.shown().to_string(), tenant.to_string());
        let last = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let row = c
                .query_opt("SELECT last_id FROM hcpx_sense_heads WHERE tenant = $1", &[&tenant_])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(row.map_or(0, |r| r.get::<_, i64>(0)) as u64)
        })?;
        Ok(last)
    }

    /// Puts events in place with their ids (an import); the tenant's head moves to the newest.
    pub fn sense_put(&self, tenant: &str, events: &[SenseEvent]) -> Result<(), StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.to_string());
        let events = events.to_vec();
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            let mut newest = 0i64;
            for e in &events {
                let id = e.id as i64;
                newest = newest.max(id);
                let text = serde_json::to_string(e)
                    .map_err(|x| StoreError::Corrupt { path: "sense".into(), reason: x.to_string() })?;
                tx.execute("INSERT INTO hcpx_sense (tenant, id, event) VALUES ($1, $2, $3)", &[&tenant, &id, &text])
                    .await
                    .map_err(|x| db_error(&shown, x))?;
            }
            tx.execute(
                "INSERT INTO hcpx_sense_heads (tenant, last_id) VALUES ($1, $2)
                 ON CONFLICT (tenant) DO UPDATE SET last_id = GREATEST(hcpx_sense_heads.last_id, EXCLUDED.last_id)",
                &[&tenant, &newest],
            )
            .await
            .map_err(|x| db_error(&shown, x))?;
            tx.commit().await.map_err(|x| db_error(&shown, x))
        })
    }
}

impl Db {
    /// The tenants that have Sense events.
    pub fn sense_tenants(&self) -> Result<Vec<String>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query("SELECT tenant FROM hcpx_sense_heads ORDER BY tenant", &[])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// Whether the database holds no store yet (no document, pack, audit line or Sense event).
    pub fn is_empty(&self) -> Result<bool, StoreError> {
        let (pool, shown) = (self.pool(), self.shown().to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let row = c
                .query_one(
                    "SELECT NOT (EXISTS (SELECT 1 FROM hcpx_documents) OR EXISTS (SELECT 1 FROM hcpx_pack_files)
                       OR EXISTS (SELECT 1 FROM hcpx_audit_heads) OR EXISTS (SELECT 1 FROM hcpx_sense_heads)
                       OR EXISTS (SELECT 1 FROM hcpx_workspaces))",
                    &[],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(row.get(0))
        })
    }
}
