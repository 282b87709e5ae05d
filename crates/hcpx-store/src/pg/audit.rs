//! The audit log in the database: one hash chain per tenant. An append locks its tenant's head row
//! (`SELECT … FOR UPDATE`), so two replicas appending at once are serialized by the database and the chain
//! never forks; the line, its number and the new head commit together. Lines are stored as the exact text
//! that was hashed, so an exported chain verifies as it did in the database.
//!
//! A write records an intent before it runs (`hcpx_audit_intents`, tagged with its replica), cleared in the
//! commit of its line. Each replica holds a session advisory lock for its life; a sweep on every replica
//! turns the intents of a replica whose lock is free (it died) into `cancelled` lines, so a replica killed
//! mid-call leaves no write without a line.

use super::{db_error, Db};
use crate::audit::{AuditHead, AuditRecord};
use crate::model::digest::sha256_hex;
use crate::StoreError;

/// One tenant's chain as stored: its head and its lines, oldest first.
#[derive(Debug, Clone)]
pub struct Chain {
    pub tenant: String,
    pub head: AuditHead,
    pub lines: Vec<String>,
}

pub(crate) fn new_genesis() -> Result<String, StoreError> {
    Ok(sha256_hex(&crate::random_bytes::<32>()?))
}

/// One append waiting for the next batch.
pub(crate) struct Pending {
    rec: AuditRecord,
    intent: Option<i64>,
    reply: std::sync::mpsc::SyncSender<Result<String, StoreError>>,
}

/// The most lines one batch commits.
const BATCH: usize = 512;

/// Commits audit appends in batches: every append that arrives while a batch commits joins the next one, so
/// one tenant's appends share a commit (and its WAL flush) instead of queueing one by one on the tenant's head
/// row. Each caller is answered only after the commit that holds its line.
pub(crate) fn spawn_appender(
    handle: &tokio::runtime::Handle,
    pool: deadpool_postgres::Pool,
    shown: String,
) -> tokio::sync::mpsc::UnboundedSender<Pending> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Pending>();
    handle.spawn(async move {
        while let Some(first) = rx.recv().await {
            let mut batch = vec![first];
            while batch.len() < BATCH {
                match rx.try_recv() {
                    Ok(p) => batch.push(p),
                    Err(_) => break,
                }
            }
            // One transaction per tenant, the tenants in parallel; order within a tenant is arrival order.
            let mut by_tenant: Vec<(String, Vec<Pending>)> = Vec::new();
            for p in batch {
                match by_tenant.iter_mut().find(|(t, _)| *t == p.rec.tenant) {
                    Some((_, v)) => v.push(p),
                    None => by_tenant.push((p.rec.tenant.clone(), vec![p])),
                }
            }
            let mut running = Vec::new();
            for (tenant, items) in by_tenant {
                let (pool, shown) = (pool.clone(), shown.clone());
                running.push(tokio::spawn(async move {
                    let recs: Vec<AuditRecord> = items.iter().map(|p| p.rec.clone()).collect();
                    let intents: Vec<i64> = items.iter().filter_map(|p| p.intent).collect();
                    match append_batch(&pool, &shown, &tenant, recs, &intents).await {
                        Ok(lines) => {
                            for (p, line) in items.into_iter().zip(lines) {
                                let _ = p.reply.send(Ok(line));
                            }
                        }
                        Err(e) => {
                            let msg = e.to_string();
                            for p in items {
                                let _ = p.reply.send(Err(StoreError::Database(msg.clone())));
                            }
                        }
                    }
                }));
            }
            for r in running {
                let _ = r.await;
            }
        }
    });
    tx
}

/// Appends `recs` to `tenant`'s chain in one transaction, under the lock of its head row, clearing `intents`.
async fn append_batch(
    pool: &deadpool_postgres::Pool,
    shown: &str,
    tenant: &str,
    recs: Vec<AuditRecord>,
    intents: &[i64],
) -> Result<Vec<String>, StoreError> {
    let mut c = pool.get().await.map_err(|e| db_error(shown, e))?;
    let tx = c.transaction().await.map_err(|e| db_error(shown, e))?;
    let lines = append_in(&tx, shown, tenant, recs).await?;
    if !intents.is_empty() {
        let ids = intents.to_vec();
        tx.execute("DELETE FROM hcpx_audit_intents WHERE id = ANY($1)", &[&ids])
            .await
            .map_err(|e| db_error(shown, e))?;
    }
    tx.commit().await.map_err(|e| db_error(shown, e))?;
    Ok(lines)
}

/// Appends `recs` to `tenant`'s chain inside `tx`, under the lock of its head row; the lines as recorded.
async fn append_in(
    tx: &deadpool_postgres::Transaction<'_>,
    shown: &str,
    tenant: &str,
    recs: Vec<AuditRecord>,
) -> Result<Vec<String>, StoreError> {
    let sel = tx
        .prepare_cached("SELECT lines, head FROM hcpx_audit_heads WHERE tenant = $1 FOR UPDATE")
        .await
        .map_err(|e| db_error(shown, e))?;
    let row = match tx.query_opt(&sel, &[&tenant]).await.map_err(|e| db_error(shown, e))? {
        Some(r) => r,
        None => {
            let genesis = new_genesis()?;
            tx.execute(
                "INSERT INTO hcpx_audit_heads (tenant, genesis, lines, head) VALUES ($1, $2, 0, $2)
                 ON CONFLICT (tenant) DO NOTHING",
                &[&tenant, &genesis],
            )
            .await
            .map_err(|e| db_error(shown, e))?;
            tx.query_one(&sel, &[&tenant]).await.map_err(|e| db_error(shown, e))?
        }
    };
    let (mut n, mut head): (i64, String) = (row.get(0), row.get(1));
    let (mut ns, mut lines) = (Vec::with_capacity(recs.len()), Vec::with_capacity(recs.len()));
    for rec in recs {
        let rec = AuditRecord { prev: Some(head), ..rec };
        let line = serde_json::to_string(&rec)
            .map_err(|e| StoreError::Corrupt { path: "audit".into(), reason: e.to_string() })?;
        head = sha256_hex(line.as_bytes());
        n += 1;
        ns.push(n);
        lines.push(line);
    }
    let add = tx
        .prepare_cached(
            "INSERT INTO hcpx_audit (tenant, n, line) SELECT $1, u.n, u.line FROM UNNEST($2::bigint[], $3::text[]) AS u(n, line)",
        )
        .await
        .map_err(|e| db_error(shown, e))?;
    tx.execute(&add, &[&tenant, &ns, &lines]).await.map_err(|e| db_error(shown, e))?;
    let up = tx
        .prepare_cached("UPDATE hcpx_audit_heads SET lines = $2, head = $3 WHERE tenant = $1")
        .await
        .map_err(|e| db_error(shown, e))?;
    tx.execute(&up, &[&tenant, &n, &head]).await.map_err(|e| db_error(shown, e))?;
    Ok(lines)
}

/// The advisory-lock class every replica's liveness lock is taken in (the two-key form, apart from the
/// store's one-key locks).
pub(crate) const LIVENESS: i32 = 0x6863_7078;

/// Whether `replica` is gone: its liveness lock is free (taken here for a moment, and given back).
pub(crate) async fn replica_gone(
    c: &deadpool_postgres::Object,
    shown: &str,
    replica: i32,
) -> Result<bool, StoreError> {
    let free: bool = c
        .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&LIVENESS, &replica])
        .await
        .map_err(|e| db_error(shown, e))?
        .get(0);
    if free {
        c.execute("SELECT pg_advisory_unlock($1, $2)", &[&LIVENESS, &replica])
            .await
            .map_err(|e| db_error(shown, e))?;
    }
    Ok(free)
}

/// Turns the intents of every replica that is gone (its liveness lock is free) into `cancelled` lines, one
/// intent per transaction, each taken only by the replica whose transaction deletes it.
pub(crate) async fn sweep(pool: &deadpool_postgres::Pool, shown: &str, me: i32) -> Result<usize, StoreError> {
    let c = pool.get().await.map_err(|e| db_error(shown, e))?;
    let rows = c
        .query("SELECT DISTINCT replica FROM hcpx_audit_intents WHERE replica <> $1", &[&me])
        .await
        .map_err(|e| db_error(shown, e))?;
    let mut gone = Vec::new();
    for r in rows {
        let replica: i32 = r.get(0);
        if replica_gone(&c, shown, replica).await? {
            gone.push(replica);
        }
    }
    drop(c);
    let mut done = 0;
    for replica in gone {
        let mut c = pool.get().await.map_err(|e| db_error(shown, e))?;
        let ids: Vec<i64> = c
            .query("SELECT id FROM hcpx_audit_intents WHERE replica = $1 ORDER BY id", &[&replica])
            .await
            .map_err(|e| db_error(shown, e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
        for id in ids {
            let tx = c.transaction().await.map_err(|e| db_error(shown, e))?;
            let taken = tx
                .query_opt("DELETE FROM hcpx_audit_intents WHERE id = $1 RETURNING record", &[&id])
                .await
                .map_err(|e| db_error(shown, e))?;
            let Some(row) = taken else { continue };
            let rec: AuditRecord = serde_json::from_str(row.get(0)).map_err(|e| StoreError::Corrupt {
                path: format!("audit intent {id}"),
                reason: e.to_string(),
            })?;
            let tenant = rec.tenant.clone();
            append_in(&tx, shown, &tenant, vec![rec]).await?;
            tx.commit().await.map_err(|e| db_error(shown, e))?;
            done += 1;
        }
    }
    Ok(done)
}

impl Db {
    /// Appends `rec` to its tenant's chain (with the appends that arrive meanwhile, in one commit); returns
    /// the line as recorded, once it is committed.
    pub fn audit_append(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<String, StoreError> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.appender
            .send(Pending { rec: rec.clone(), intent, reply })
            .map_err(|_| StoreError::Database(format!("{}: the audit appender stopped", self.shown())))?;
        match answer.recv_timeout(super::OP_TIMEOUT) {
            Ok(r) => r,
            Err(_) => Err(StoreError::Database(format!(
                "{}: the audit line was not confirmed within {} s",
                self.shown(),
                super::OP_TIMEOUT.as_secs()
            ))),
        }
    }

    /// Records what a write about to run will be audited as if it never finishes; its id.
    pub fn audit_intent(&self, rec: &AuditRecord) -> Result<i64, StoreError> {
        let text = serde_json::to_string(rec)
            .map_err(|e| StoreError::Corrupt { path: "audit intent".into(), reason: e.to_string() })?;
        let (pool, shown, me) = (self.intents_pool(), self.shown().to_string(), self.replica);
        self.run(async move {
            // One statement on a connection of the intents pool, committed without waiting for its WAL flush:
            // what an intent guards against is its replica dying, which cannot lose it; only a crash of the
            // database itself within the WAL writer's delay could, and that crash fails the write's own audit
            // line too (the write is then reported failed).
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let st = c
                .prepare_cached(
                    "INSERT INTO hcpx_audit_intents (replica, record) VALUES ($1, $2) RETURNING id",
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            let id: i64 = c.query_one(&st, &[&me, &text]).await.map_err(|e| db_error(&shown, e))?.get(0);
            Ok(id)
        })
    }

    /// Every audit line, oldest first (in the order they were committed), of one tenant or of all.
    pub fn audit_lines(&self, tenant: Option<&str>) -> Result<Vec<String>, StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.map(str::to_string));
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = match tenant {
                Some(t) => c.query("SELECT line FROM hcpx_audit WHERE tenant = $1 ORDER BY n", &[&t]).await,
                None => c.query("SELECT line FROM hcpx_audit ORDER BY seq", &[]).await,
            }
            .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    /// `tenant`'s head alone (no lines read), when its chain was started.
    pub fn audit_head(&self, tenant: &str) -> Result<Option<AuditHead>, StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let row = c
                .query_opt("SELECT genesis, lines, head FROM hcpx_audit_heads WHERE tenant = $1", &[&tenant])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(row.map(|h| AuditHead {
                genesis: h.get(0),
                lines: h.get::<_, i64>(1) as u64,
                head: h.get(2),
                rotated: 0,
            }))
        })
    }

    /// Each tenant's chain (head and lines), for `verify` and export; one tenant's when named.
    pub fn audit_chains(&self, tenant: Option<&str>) -> Result<Vec<Chain>, StoreError> {
        let (pool, shown, tenant) = (self.pool(), self.shown().to_string(), tenant.map(str::to_string));
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let heads = c
                .query("SELECT tenant, genesis, lines, head FROM hcpx_audit_heads ORDER BY tenant", &[])
                .await
                .map_err(|e| db_error(&shown, e))?;
            let mut out = Vec::new();
            for h in heads {
                let t: String = h.get(0);
                if tenant.as_ref().is_some_and(|want| *want != t) {
                    continue;
                }
                let lines: i64 = h.get(2);
                let rows = c
                    .query("SELECT line FROM hcpx_audit WHERE tenant = $1 ORDER BY n", &[&t])
                    .await
                    .map_err(|e| db_error(&shown, e))?;
                out.push(Chain {
                    head: AuditHead { genesis: h.get(1), lines: lines as u64, head: h.get(3), rotated: 0 },
                    tenant: t,
                    lines: rows.iter().map(|r| r.get(0)).collect(),
                });
            }
            Ok(out)
        })
    }

    /// Puts a whole chain in place verbatim (an import of an exported chain); refused when the tenant has one.
    pub fn audit_put_chain(&self, chain: &Chain) -> Result<(), StoreError> {
        let (pool, shown, chain) = (self.pool(), self.shown().to_string(), chain.clone());
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            let lines = chain.head.lines as i64;
            let n = tx
                .execute(
                    "INSERT INTO hcpx_audit_heads (tenant, genesis, lines, head) VALUES ($1, $2, $3, $4)
                     ON CONFLICT (tenant) DO NOTHING",
                    &[&chain.tenant, &chain.head.genesis, &lines, &chain.head.head],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            if n == 0 {
                return Err(StoreError::Refused(format!(
                    "tenant {} already has an audit chain in the database; import into an empty database",
                    chain.tenant
                )));
            }
            for (i, line) in chain.lines.iter().enumerate() {
                let n = i as i64 + 1;
                tx.execute(
                    "INSERT INTO hcpx_audit (tenant, n, line) VALUES ($1, $2, $3)",
                    &[&chain.tenant, &n, line],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            }
            tx.commit().await.map_err(|e| db_error(&shown, e))
        })
    }
}
