//! The PostgreSQL back end of the store (`HCP_STORE=postgres://…`): every piece of shared state in one database,
//! so N replicas of `hcpx serve` act as one runtime (docs/hosting.md). The store's JSON documents (state,
//! principals, grants, sandbox, families, connections, credentials — sealed) are rows of `hcpx_documents`;
//! installed packs' files, the per-tenant audit chains and Sense logs have tables of their own. `backend.rs`
//! puts it behind the store's one interface (`crate::backend`), beside the files (`crate::files`).
//!
//! The store's interface is synchronous (the pipeline runs on blocking threads); this back end runs the async
//! driver and its pool on a small runtime of its own and waits for each operation on a channel, which works
//! from any thread, async or not. A LISTEN connection turns the database's notifications into cache
//! invalidation and Sense wake-ups; while it is down nothing is served from a cache.

mod audit;
mod backend;
pub mod conninfo;
mod docs;
pub mod fleet;
mod live;
mod packs;
mod password;
mod schema;
pub mod seal;
mod sense;
mod sessions;
mod tasks;
pub mod transfer;
mod workspaces;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

use super::{PoolStats, StoreError};

pub(crate) use backend::Postgres;
pub use conninfo::redact;
pub use live::Live;
pub use schema::LATEST as SCHEMA_VERSION;

/// The longest one store operation may take before it is given up as unreachable.
const OP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a caller waits for a pooled connection, and for a new one to be made.
const POOL_WAIT: Duration = Duration::from_secs(5);
/// Connections per replica (`HCP_STORE_POOL` overrides it).
const POOL_SIZE: usize = 16;
/// The advisory lock that stands for the file store's `.lock`: read-modify-writes of documents, across replicas.
const STORE_LOCK: i64 = 0x6863_7078_0001;

/// A connection to the database: its pool, the runtime that drives it, and what the LISTEN connection learns.
pub struct Db {
    rt: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    pool: Pool,
    /// Connections whose commits do not wait for their WAL flush (`synchronous_commit = off`), for write
    /// intents only: one statement each, no transaction around it (pg/audit.rs says why that is safe).
    intents: Pool,
    /// The connection string with every password masked (`conninfo::redact`): the only form of it any
    /// message, log line or response holds.
    shown: String,
    seal: Option<seal::Sealer>,
    live: Arc<Live>,
    docs: docs::Cache,
    appender: tokio::sync::mpsc::UnboundedSender<audit::Pending>,
    /// This process's id among the replicas: its liveness lock, the tag of its write intents, its
    /// `hcpx_replicas` row.
    replica: i32,
    /// Where the database is (no password).
    place: fleet::DbPlace,
    /// The schema version the database was at before this process's migrations.
    migrated_from: i32,
    /// The task that notes this replica every `fleet::BEAT`, once it announced itself.
    beat: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("url", &self.shown).finish_non_exhaustive()
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // Never blocks: a store dropped inside an async context (a server's last handle) must not panic.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// A pool of at most `size` connections made from `config`, each wait bounded by [`POOL_WAIT`].
fn make_pool(config: tokio_postgres::Config, size: usize, shown: &str) -> Result<Pool, StoreError> {
    let manager =
        Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager)
        .max_size(size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(POOL_WAIT))
        .create_timeout(Some(POOL_WAIT))
        .recycle_timeout(Some(POOL_WAIT))
        .build()
        .map_err(|e| StoreError::Database(format!("{shown}: cannot make a connection pool: {e}")))
}

pub(crate) fn db_error(shown: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Database(format!("{shown}: {e}"))
}

impl Db {
    /// Connects to `url` (a `postgres://` URL or a key=value connection string; without a password, the one
    /// `PGPASSWORD` or the password file gives), applies the schema migrations this hcpx knows (refusing a
    /// database whose schema is newer), reads the seal key named by `HCP_SEAL_KEY_FILE` when set, and starts
    /// listening for changes.
    pub fn open(url: &str) -> Result<Db, StoreError> {
        Db::open_with(url, true)
    }

    /// As [`Db::open`], for a process that only reads (`hcpx doctor`): no migration is applied (a database at an
    /// older or a newer schema is opened as it is, and [`Db::migrated_from`] is its version, 0 with none), and
    /// this process neither holds a replica's liveness lock nor settles the writes of replicas that are gone.
    pub fn open_to_read(url: &str) -> Result<Db, StoreError> {
        Db::open_with(url, false)
    }

    fn open_with(url: &str, migrate: bool) -> Result<Db, StoreError> {
        let shown = redact(url);
        let mut config = url.parse::<tokio_postgres::Config>().map_err(|e| {
            StoreError::Refused(format!(
                "HCP_STORE {shown} is not a PostgreSQL connection string ({}); write it as postgres://USER@HOST:PORT/DB",
                conninfo::scrub(&e.to_string(), url)
            ))
        })?;
        password::fill(&mut config)?;
        let seal = seal::Sealer::from_env()?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hcpx-store")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Database(format!("cannot start the store's runtime: {e}")))?;
        let handle = rt.handle().clone();
        let size = std::env::var("HCP_STORE_POOL").ok().and_then(|v| v.parse().ok()).unwrap_or(POOL_SIZE);
        let pool = make_pool(config.clone(), size.max(2), &shown)?;
        let mut asynchronous = config.clone();
        let options = match config.get_options() {
            Some(o) if !o.trim().is_empty() => format!("{o} -c synchronous_commit=off"),
            _ => "-c synchronous_commit=off".to_string(),
        };
        asynchronous.options(&options);
        let intents = make_pool(asynchronous, (size / 4).max(2), &shown)?;
        let live = Arc::new(Live::default());
        let shown_place = shown.clone();
        let appender = audit::spawn_appender(&handle, pool.clone(), shown.clone());
        let replica = (u32::from_le_bytes(crate::random_bytes::<4>()?) >> 1) as i32;
        let mut db = Db {
            rt: Some(rt),
            handle,
            pool,
            intents,
            shown,
            seal,
            live,
            docs: Default::default(),
            appender,
            replica,
            place: fleet::DbPlace::of(&config, &shown_place),
            migrated_from: 0,
            beat: Default::default(),
        };
        let no_password = config.get_password().is_none();
        let opened = if migrate {
            db.run(schema::migrate(db.pool.clone(), db.shown.clone()))
        } else {
            let (pool, shown) = (db.pool.clone(), db.shown.clone());
            db.run(async move { schema::found(&pool, &shown).await })
        };
        db.migrated_from = opened.map_err(|e| match e {
            // What the driver says when the server asks for a password it was not given.
            StoreError::Database(m) if no_password && m.ends_with("invalid configuration") => {
                StoreError::Database(format!(
                    "{m} (the server asks for a password and none was given: set PGPASSWORD or write a password file, PGPASSFILE or ~/.pgpass)"
                ))
            }
            e => e,
        })?;
        live::spawn_listener(&db.handle, config.clone(), db.live.clone());
        if migrate {
            live::spawn_liveness(&db.handle, config, replica, db.pool.clone(), db.shown.clone());
        }
        Ok(db)
    }

    /// Runs `fut` on the store's runtime and waits for it, from any thread; past [`OP_TIMEOUT`] the database is
    /// taken as unreachable.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(tokio::time::timeout(OP_TIMEOUT, fut).await);
        });
        match rx.recv() {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(StoreError::Database(format!(
                "{}: no answer within {} s",
                self.shown,
                OP_TIMEOUT.as_secs()
            ))),
            Err(_) => Err(StoreError::Database(format!("{}: the store's runtime stopped", self.shown))),
        }
    }

    pub(crate) fn pool(&self) -> Pool {
        self.pool.clone()
    }

    pub(crate) fn intents_pool(&self) -> Pool {
        self.intents.clone()
    }

    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    pub(crate) fn sealer(&self) -> Option<&seal::Sealer> {
        self.seal.as_ref()
    }

    /// What the LISTEN connection learns: whether it is up, the document generation, Sense heads.
    pub fn live(&self) -> &Arc<Live> {
        &self.live
    }

    /// Whether the database answers now (a round trip, at most 2 s).
    pub fn health(&self) -> Result<(), StoreError> {
        let (pool, shown) = (self.pool(), self.shown.clone());
        self.run(async move {
            let probe = async {
                let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
                c.simple_query("SELECT 1").await.map_err(|e| db_error(&shown, e))?;
                Ok::<(), StoreError>(())
            };
            tokio::time::timeout(Duration::from_secs(2), probe)
                .await
                .map_err(|_| db_error(&shown, "no answer within 2 s"))?
        })
    }

    /// The pool's use now.
    pub fn pool_stats(&self) -> PoolStats {
        let s = self.pool.status();
        PoolStats { size: s.size, idle: s.available, max: s.max_size, waiting: s.waiting }
    }

    /// The schema version the database is at now, 0 when it has no schema yet (read only).
    pub fn schema_found(&self) -> Result<i32, StoreError> {
        let (pool, shown) = (self.pool(), self.shown.clone());
        self.run(async move { schema::found(&pool, &shown).await })
    }

    /// The schema version the database is at.
    pub fn schema_version(&self) -> Result<i32, StoreError> {
        let (pool, shown) = (self.pool(), self.shown.clone());
        self.run(async move { schema::version(&pool, &shown).await })
    }

    /// Takes the store's exclusive lock across every replica: a session advisory lock held on a connection of
    /// its own until the guard drops.
    pub fn lock(self: &Arc<Db>) -> Result<DbLock, StoreError> {
        let (pool, shown) = (self.pool(), self.shown.clone());
        let conn = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute("SELECT pg_advisory_lock($1)", &[&STORE_LOCK])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(c)
        })?;
        Ok(DbLock { db: self.clone(), conn: Some(conn) })
    }
}

/// The advisory-lock class of workspace turns (the two-key form; the key is the tenant's and pack's hash).
const WORKSPACE_TURN: i32 = 0x6863_7079;

impl Db {
    /// Waits up to `wait` for the workspace turn `key` across every replica: a session advisory lock held on a
    /// connection of its own until the turn drops; `None` when another call still holds it then.
    pub fn workspace_turn(self: &Arc<Db>, key: i32, wait: Duration) -> Result<Option<DbTurn>, StoreError> {
        let (pool, shown) = (self.pool(), self.shown.clone());
        let mut conn = self.run(async move { pool.get().await.map_err(|e| db_error(&shown, e)) })?;
        // Each try is one bounded operation (the wait may be longer than OP_TIMEOUT), on the same session.
        let deadline = std::time::Instant::now() + wait;
        loop {
            let shown = self.shown.clone();
            let (c, got) = self.run(async move {
                let got: bool = conn
                    .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&WORKSPACE_TURN, &key])
                    .await
                    .map_err(|e| db_error(&shown, e))?
                    .get(0);
                Ok((conn, got))
            })?;
            if got {
                return Ok(Some(DbTurn { db: self.clone(), conn: Some(c), key }));
            }
            if std::time::Instant::now() >= deadline {
                return Ok(None);
            }
            conn = c;
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A workspace turn in the database, released when dropped.
pub struct DbTurn {
    db: Arc<Db>,
    conn: Option<deadpool_postgres::Object>,
    key: i32,
}

impl Drop for DbTurn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let key = self.key;
        let _ = self.db.run(async move {
            if conn.execute("SELECT pg_advisory_unlock($1, $2)", &[&WORKSPACE_TURN, &key]).await.is_err() {
                // The session may still hold the lock: close it rather than hand it back to the pool.
                drop(deadpool_postgres::Object::take(conn));
            }
            Ok(())
        });
    }
}

/// The store's lock in the database, released when dropped.
pub struct DbLock {
    db: Arc<Db>,
    conn: Option<deadpool_postgres::Object>,
}

impl Drop for DbLock {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        let _ = self.db.run(async move {
            if conn.execute("SELECT pg_advisory_unlock($1)", &[&STORE_LOCK]).await.is_err() {
                // The session may still hold the lock: close it rather than hand it back to the pool.
                drop(deadpool_postgres::Object::take(conn));
            }
            Ok(())
        });
    }
}
