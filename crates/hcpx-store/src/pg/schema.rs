//! The database schema, as numbered migrations applied in order at open under a transaction-scoped advisory
//! lock (so replicas starting together apply each once). A database whose schema is newer than this hcpx
//! knows is refused: an older replica must not write rows it does not understand.

use deadpool_postgres::Pool;

use super::db_error;
use crate::StoreError;

/// Each migration, in order; `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`. Never edit one that
/// has shipped: add the next.
const MIGRATIONS: &[&str] = &[
    // 1: documents, packs' files, audit chains, Sense logs.
    r#"
    CREATE TABLE hcpx_documents (
        path text PRIMARY KEY,
        body text,
        sealed bytea,
        nonce bytea,
        key_id text,
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((body IS NULL) <> (sealed IS NULL))
    );
    CREATE TABLE hcpx_pack_files (
        pack_id text NOT NULL,
        digest text NOT NULL,
        path text NOT NULL,
        kind char(1) NOT NULL CHECK (kind IN ('d', 'f', 'x')),
        bytes bytea,
        PRIMARY KEY (pack_id, digest, path)
    );
    CREATE TABLE hcpx_audit_heads (
        tenant text PRIMARY KEY,
        genesis text NOT NULL,
        lines bigint NOT NULL,
        head text NOT NULL
    );
    CREATE TABLE hcpx_audit (
        seq bigserial PRIMARY KEY,
        tenant text NOT NULL,
        n bigint NOT NULL,
        line text NOT NULL,
        UNIQUE (tenant, n)
    );
    CREATE TABLE hcpx_audit_intents (
        id bigserial PRIMARY KEY,
        replica integer NOT NULL,
        record text NOT NULL,
        recorded timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE hcpx_sense_heads (
        tenant text PRIMARY KEY,
        last_id bigint NOT NULL
    );
    CREATE TABLE hcpx_sense (
        tenant text NOT NULL,
        id bigint NOT NULL,
        recorded timestamptz NOT NULL DEFAULT now(),
        event text NOT NULL,
        PRIMARY KEY (tenant, id)
    );
    "#,
    // 2: tasks (served calls that outlive their request), each bound to its tenant and Principal, with the
    // replica that runs it; the record is the whole task as JSON, the columns what is queried.
    r#"
    CREATE TABLE hcpx_tasks (
        id text PRIMARY KEY,
        tenant text NOT NULL,
        principal text NOT NULL,
        replica integer NOT NULL,
        status text NOT NULL,
        cancel boolean NOT NULL DEFAULT false,
        expires_ms bigint,
        record text NOT NULL
    );
    CREATE INDEX hcpx_tasks_working ON hcpx_tasks (replica) WHERE status = 'working';
    CREATE INDEX hcpx_tasks_expiring ON hcpx_tasks (expires_ms) WHERE expires_ms IS NOT NULL;
    "#,
    // 3: the MCP sessions of clients before protocol 2026-07-28 (mcp_sessions.rs), each under its id's SHA-256,
    // and their answers to a replica's questions that reached another replica (mcp_answers.rs).
    r#"
    CREATE TABLE hcpx_mcp_sessions (
        id_sha256 text PRIMARY KEY,
        principal text NOT NULL,
        tenant text NOT NULL,
        init text NOT NULL,
        last_used timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX hcpx_mcp_sessions_last_used ON hcpx_mcp_sessions (last_used);
    CREATE TABLE hcpx_mcp_answers (
        id_sha256 text NOT NULL,
        question text NOT NULL,
        body text NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (id_sha256, question)
    );
    "#,
    // 4: the replicas of `hcpx serve` on this database (fleet.rs): each notes itself at start and every 10 s, so
    // `hcpx doctor` names the ones seen lately and the seal key each holds.
    r#"
    CREATE TABLE hcpx_replicas (
        id integer PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        listen text NOT NULL,
        version text NOT NULL,
        seal_key_id text,
        started timestamptz NOT NULL DEFAULT now(),
        last_seen timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX hcpx_replicas_last_seen ON hcpx_replicas (last_seen);
    "#,
    // 5: workspaces kept in the database (crate::workspaces): one archive of a `workspace`-mode pack's
    // directory per tenant and pack, replaced only by a committed transaction that moves `version` on by one.
    r#"
    CREATE TABLE IF NOT EXISTS hcpx_workspaces (
        tenant text NOT NULL,
        pack text NOT NULL,
        version bigint NOT NULL,
        digest text NOT NULL,
        size bigint NOT NULL,
        bytes bytea NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant, pack)
    );
    "#,
];

/// The schema version this hcpx writes.
pub const LATEST: i32 = MIGRATIONS.len() as i32;

const MIGRATE_LOCK: i64 = 0x6863_7078_0000;

/// Brings the database to [`LATEST`], or refuses one that is ahead of it; the version it was at before.
pub(super) async fn migrate(pool: Pool, shown: String) -> Result<i32, StoreError> {
    let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
    let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
        .await
        .map_err(|e| db_error(&shown, e))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS hcpx_schema (version integer NOT NULL)")
        .await
        .map_err(|e| db_error(&shown, e))?;
    let row = tx.query_opt("SELECT version FROM hcpx_schema", &[]).await.map_err(|e| db_error(&shown, e))?;
    let at: i32 = match row {
        Some(r) => r.get(0),
        None => {
            tx.execute("INSERT INTO hcpx_schema (version) VALUES (0)", &[])
                .await
                .map_err(|e| db_error(&shown, e))?;
            0
        }
    };
    if at > LATEST {
        return Err(StoreError::Refused(format!(
            "the database at {shown} has store schema version {at}, newer than this hcpx knows ({LATEST}); run a newer hcpx against it (an older one could write rows the newer schema does not expect)"
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(at as usize) {
        tx.batch_execute(sql).await.map_err(|e| db_error(&shown, format!("migration {}: {e}", i + 1)))?;
    }
    tx.execute("UPDATE hcpx_schema SET version = $1", &[&LATEST]).await.map_err(|e| db_error(&shown, e))?;
    tx.commit().await.map_err(|e| db_error(&shown, e))?;
    Ok(at)
}

/// The version recorded in the database.
pub(super) async fn version(pool: &Pool, shown: &str) -> Result<i32, StoreError> {
    let c = pool.get().await.map_err(|e| db_error(shown, e))?;
    let row = c.query_one("SELECT version FROM hcpx_schema", &[]).await.map_err(|e| db_error(shown, e))?;
    Ok(row.get(0))
}

/// The version recorded in the database, 0 when it has no schema yet; reads only (`hcpx doctor`).
pub(super) async fn found(pool: &Pool, shown: &str) -> Result<i32, StoreError> {
    let c = pool.get().await.map_err(|e| db_error(shown, e))?;
    let row = c
        .query_one("SELECT to_regclass('hcpx_schema') IS NOT NULL", &[])
        .await
        .map_err(|e| db_error(shown, e))?;
    if !row.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = c.query_opt("SELECT version FROM hcpx_schema", &[]).await.map_err(|e| db_error(shown, e))?;
    Ok(row.map_or(0, |r| r.get(0)))
}
