//! hcpx-store: the store — installed packs, activations, grants, the allow-list, credentials, the audit log and
//! Sense. One interface, two back ends behind it ([`backend`], chosen once when the store opens): files under
//! `$HCP_HOME` ([`files`], the embedded default: every write atomic — temp file, fsync, rename — and every
//! read-modify-write under an exclusive lock, so concurrent `hcpx` processes neither lose nor tear anything), or
//! PostgreSQL (`HCP_STORE=postgres://…`, [`pg`]), shared by every replica of a hosted runtime, with `$HCP_HOME`
//! then only a local cache of installed packs, workspaces and temp files.
//!
//! May use: hcpx-model and hcpx-pack (a pack is checked as it is installed), the file system under the store's
//! home, and the database it is given. Must never: run a pack's code, spawn a process, confine one (that is the
//! sandbox's), reach any network but its database, or hold `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::{lint, pack};

pub mod advice;
pub mod approvals;
pub mod audit;
mod backend;
pub mod built_in;
pub mod chain;
pub mod config;
pub mod connections;
pub mod credentials;
mod files;
pub mod grants;
pub mod hosts;
pub mod issuers;
mod keys;
pub mod mcp_answers;
pub mod mcp_sessions;
pub mod memo;
pub use keys::KEY_DOC as REQUEST_STATE_KEY;
pub mod packs;
pub mod pg;
pub mod principals;
pub mod sense;
pub mod settings;
pub mod tasks;
pub mod timing;
pub mod turns;
pub mod workspaces;

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use backend::Backend;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store {path}: {}", crate::model::io_reason(source))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A document or log line that does not parse; the message names the safe fix for it (`advice`).
    #[error("{path} is not valid: {reason}; {}", advice::corrupt_fix(path))]
    Corrupt { path: String, reason: String },
    #[error("{0}")]
    Refused(String),
    /// The PostgreSQL store failed or is unreachable; never answered from local files instead.
    #[error("the store's database {0}; check HCP_STORE and that PostgreSQL is up")]
    Database(String),
    /// The store itself cannot be opened; `reason` is in the message (not a source, so a chain printed with
    /// `{:#}` does not say it twice).
    #[error("cannot open the store at {path}: {reason}; set HCP_HOME to a writable directory")]
    Home { path: String, reason: Box<StoreError> },
}

impl StoreError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> StoreError {
        StoreError::Io { path: path.display().to_string(), source: e }
    }
}

/// The store: files rooted at `$HCP_HOME`, or a PostgreSQL database with `$HCP_HOME` as its local cache.
#[derive(Debug, Clone)]
pub struct Store {
    home: PathBuf,
    /// The back end, chosen when the store opened: [`files::Files`] or [`pg::Postgres`].
    backend: Arc<dyn Backend>,
    /// The key that seals MCP request states, once read (`keys.rs`).
    state_key: Arc<std::sync::OnceLock<pg::seal::Sealer>>,
    /// Where compiled components are cached, when not `$HCP_HOME/cache` (`HCP_CACHE_DIR`, or a trial store
    /// sharing its operator's cache).
    compile_cache: Option<PathBuf>,
    /// Run on each pack staged for install, before it is recorded (`with_install_check`).
    install_check: Option<InstallCheck>,
}

/// What an install runs on the staged pack before it records it (the CLI compiles a composite's component into
/// the layout's compile cache): an `Err` message refuses the install, with nothing installed.
#[derive(Clone)]
pub struct InstallCheck(Arc<CheckFn>);

/// The check an install runs: the staged pack and the store's layout (its compile cache) in, a refusal out.
type CheckFn = dyn Fn(&crate::pack::Pack, &Layout) -> Result<(), String> + Send + Sync;

impl InstallCheck {
    pub fn new(
        check: impl Fn(&crate::pack::Pack, &Layout) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        InstallCheck(Arc::new(check))
    }

    pub(crate) fn run(&self, pack: &crate::pack::Pack, layout: &Layout) -> Result<(), String> {
        (self.0)(pack, layout)
    }
}

impl std::fmt::Debug for InstallCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InstallCheck")
    }
}

/// A connection pool's use (the PostgreSQL store's; `/metrics` reports it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Connections open now.
    pub size: usize,
    /// Of those, idle.
    pub idle: usize,
    /// The most the pool opens.
    pub max: usize,
    /// Callers waiting for a connection.
    pub waiting: usize,
}

/// An exclusive lock on the store, released on drop: what it holds (a file lock, or an advisory lock in the
/// database) is its back end's, and no caller sees which.
pub struct StoreLock(#[allow(dead_code)] Box<dyn Send + Sync>);

impl StoreLock {
    /// The lock a back end took, held as `guard` until dropped.
    pub(crate) fn held(guard: impl Send + Sync + 'static) -> StoreLock {
        StoreLock(Box::new(guard))
    }
}

impl Store {
    /// The store at `home`, created when missing.
    pub fn open(home: &Path) -> Result<Store, StoreError> {
        make_home(home)?;
        Ok(Store::on(home, Arc::new(files::Files::new(home))))
    }

    /// The PostgreSQL store at `url`, with `home` as its local cache (packs' files, workspaces, temp files).
    pub fn open_db(home: &Path, url: &str) -> Result<Store, StoreError> {
        make_home(home)?;
        Ok(Store::on(home, Arc::new(pg::Postgres::new(home, pg::Db::open(url)?))))
    }

    /// The store at `home` (which exists) on `backend`.
    fn on(home: &Path, backend: Arc<dyn Backend>) -> Store {
        Store {
            home: home.to_path_buf(),
            backend: timing::Timed::wrap(backend),
            state_key: Default::default(),
            compile_cache: None,
            install_check: None,
        }
    }

    /// Whether `HCP_STORE` leaves every command on the files under `HCP_HOME` (unset, empty or `files`).
    pub fn default_is_files() -> bool {
        names_files(std::env::var("HCP_STORE").unwrap_or_default().trim())
    }

    /// The store as [`Store::open_default`] opens it, for a command that only reads it (`hcpx doctor`): a database
    /// is opened at whatever schema it has, never migrated (`pg::Db::open_to_read`).
    pub fn open_default_to_read() -> Result<Store, StoreError> {
        Store::open_chosen_with(None, false)
    }

    /// The store every face opens: PostgreSQL when `HCP_STORE` names a database (a `postgres://` URL or a
    /// key=value connection string), else the files at `HCP_HOME` (or `~/.hcp`), created when missing.
    pub fn open_default() -> Result<Store, StoreError> {
        Store::open_chosen(None)
    }

    /// The store a face opens when its operator may name one (`hcpx serve --store`): `store` in place of
    /// `HCP_STORE` when given, chosen by the same rule as [`Store::open_default`].
    pub fn open_chosen(store: Option<&str>) -> Result<Store, StoreError> {
        Store::open_chosen_with(store, true)
    }

    fn open_chosen_with(store: Option<&str>, migrate: bool) -> Result<Store, StoreError> {
        let home = Store::default_home();
        let (chosen, named) = match store {
            Some(s) => (s.to_string(), "--store"),
            None => (std::env::var("HCP_STORE").unwrap_or_default(), "HCP_STORE"),
        };
        let store = match chosen.trim() {
            s if names_files(s) => Store::open(&home)
                .map_err(|e| StoreError::Home { path: home.display().to_string(), reason: Box::new(e) })?,
            url if url.starts_with("postgres://")
                || url.starts_with("postgresql://")
                || pg::conninfo::is_key_value(url) =>
            {
                make_home(&home)?;
                let db = if migrate { pg::Db::open(url)? } else { pg::Db::open_to_read(url)? };
                Store::on(&home, Arc::new(pg::Postgres::new(&home, db)))
            }
            other => {
                return Err(StoreError::Refused(format!(
                    "{named} is {:?}; set it to a postgres://USER@HOST:PORT/DB URL (or a key=value connection string), or to `files` (the default) for the files under HCP_HOME",
                    pg::redact(other)
                )))
            }
        };
        // Where compiled components go is the same on either back end.
        Ok(match Store::cache_dir_from_env()? {
            Some(dir) => store.with_compile_cache(dir),
            None => store,
        })
    }

    /// `HCP_CACHE_DIR`, when set: where compiled components are cached instead of `$HCP_HOME/cache` (a
    /// directory several homes share, or one a CI job keeps between runs). It must be absolute; the cache
    /// trusts it only while it is this user's and no one else can write it (`adapter::composite::cache`).
    pub fn cache_dir_from_env() -> Result<Option<PathBuf>, StoreError> {
        match std::env::var_os("HCP_CACHE_DIR").filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(dir) if Path::new(&dir).is_absolute() => Ok(Some(PathBuf::from(dir))),
            Some(dir) => Err(StoreError::Refused(format!(
                "HCP_CACHE_DIR is {:?}, not an absolute path; set it to an absolute directory (or unset it to cache under HCP_HOME)",
                Path::new(&dir).display().to_string()
            ))),
        }
    }

    /// Where the CLI's stores cache compiled components: `HCP_CACHE_DIR`, else `$HCP_HOME/cache` (or
    /// `~/.hcp/cache`). `hcpx check` and `hcpx eval` give it to their throw-away trial stores, so a component
    /// tried once is not compiled again, by them or by later calls.
    pub fn default_compile_cache() -> Result<PathBuf, StoreError> {
        Ok(Store::cache_dir_from_env()?.unwrap_or_else(|| Store::default_home().join("cache")))
    }

    /// This store running `check` on each pack staged for install, before it is recorded.
    pub fn with_install_check(mut self, check: InstallCheck) -> Store {
        self.install_check = Some(check);
        self
    }

    /// This store with its compiled components cached in `dir` instead of `$HCP_HOME/cache`.
    pub fn with_compile_cache(mut self, dir: PathBuf) -> Store {
        self.compile_cache = Some(dir);
        self
    }

    /// The PostgreSQL back end, when this store is one (for the commands that act on the database alone).
    pub fn db(&self) -> Option<&Arc<pg::Db>> {
        self.backend.db()
    }

    /// `files` or `postgres`.
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// Where the store is, as every message names it: the database with its password masked
    /// (`postgres://hcpx:***@db:5432/hcpx`), or the files' `HCP_HOME`.
    pub fn shown(&self) -> String {
        match self.db() {
            Some(db) => db.place().url.clone(),
            None => self.home.display().to_string(),
        }
    }

    /// Whether the store answers now: the database takes a round trip; the files need a readable home whose
    /// `state.json`, if any, parses.
    pub fn health(&self) -> Result<(), StoreError> {
        self.backend.health()
    }

    /// The database pool's use; `None` for the file store.
    pub fn pool_stats(&self) -> Option<PoolStats> {
        self.backend.pool_stats()
    }

    /// This store, for a process that makes one call and exits: its read cache never watches the store's
    /// directory (closing the watch at exit would hold the process's end for milliseconds; see `files::cache`).
    pub fn one_shot(mut self) -> Store {
        self.backend = self.backend.one_shot();
        self
    }

    /// `HCP_HOME`, or `~/.hcp`.
    pub fn default_home() -> PathBuf {
        if let Some(h) = std::env::var_os("HCP_HOME").filter(|h| !h.is_empty()) {
            return PathBuf::from(h);
        }
        let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
        home.join(".hcp")
    }

    /// The store's root directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// A path inside the store.
    pub fn path(&self, rel: &str) -> PathBuf {
        join(&self.home, rel)
    }

    /// Takes the store's exclusive lock (blocking).
    pub fn lock(&self) -> Result<StoreLock, StoreError> {
        self.backend.lock()
    }

    /// Reads a JSON file of the store through the read cache; `None` when it does not exist.
    pub fn read_json_cached<T: DeserializeOwned + Send + Sync + 'static>(
        &self,
        rel: &str,
    ) -> Result<Option<Arc<T>>, StoreError> {
        self.read_json_cached_with(rel, |v: T| Ok(v))
    }

    /// Reads a JSON file as `R` through the read cache and keeps `check`'s validated value; a value `check`
    /// refuses is `Corrupt` (with its reason) and not kept.
    pub fn read_json_cached_with<R: DeserializeOwned, T: Send + Sync + 'static>(
        &self,
        rel: &str,
        check: impl FnOnce(R) -> Result<T, String>,
    ) -> Result<Option<Arc<T>>, StoreError> {
        backend::read_cached(self.backend.as_ref(), rel, check)
    }

    /// Reads a JSON file of the store; `None` when it does not exist.
    pub fn read_json<T: DeserializeOwned>(&self, rel: &str) -> Result<Option<T>, StoreError> {
        backend::read(self.backend.as_ref(), rel)
    }

    /// Writes a JSON file atomically: a crash leaves the old or the new file, never a torn one.
    pub fn write_json<T: Serialize>(&self, rel: &str, value: &T) -> Result<(), StoreError> {
        self.write_json_mode(rel, value, 0o644)
    }

    /// Writes a JSON file atomically with `mode`.
    pub fn write_json_mode<T: Serialize>(&self, rel: &str, value: &T, mode: u32) -> Result<(), StoreError> {
        backend::write(self.backend.as_ref(), rel, value, mode)
    }

    /// Removes the JSON document at `rel`; whether there was one.
    pub fn remove_json(&self, rel: &str) -> Result<bool, StoreError> {
        self.backend.doc_delete(rel)
    }

    /// Writes bytes atomically at `rel` (mode 0644).
    pub fn write_atomic(&self, rel: &str, bytes: &[u8]) -> Result<(), StoreError> {
        self.write_atomic_mode(rel, bytes, 0o644)
    }

    /// Writes bytes atomically at `rel`; the file has `mode` from the moment it is created.
    pub fn write_atomic_mode(&self, rel: &str, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
        let target = self.path(rel);
        write_atomic(&target, bytes, mode).map_err(|e| StoreError::io(&target, e))
    }

    /// The paths of the store an adapter may use for a call.
    pub fn layout(&self) -> Layout {
        Layout {
            home: self.home.clone(),
            workspaces: self.path("workspaces"),
            tmp: self.path("tmp"),
            cache: self.compile_cache.clone().unwrap_or_else(|| self.path("cache")),
        }
    }

    /// The layout of one tenant's calls: the local tenant's workspaces are the store's own; a served tenant's
    /// are under `tenants/<tenant>/`, so no pack called for one tenant is handed another's files.
    pub fn layout_for(&self, tenant: &str) -> Result<Layout, StoreError> {
        let mut layout = self.layout();
        layout.workspaces = self.home.join(self.tenant_dir(tenant)?).join("workspaces");
        Ok(layout)
    }

    /// Where a tenant's own files live, relative to the store: `""` for the local tenant, else
    /// `tenants/<tenant>`. A tenant name that is not a plain name is refused, never joined to a path.
    pub fn tenant_dir(&self, tenant: &str) -> Result<PathBuf, StoreError> {
        tenant_dir(tenant)
    }

    /// A fresh, unused path under `$HCP_HOME/tmp`.
    pub fn temp_path(&self, prefix: &str) -> PathBuf {
        temp_in(&self.home, prefix)
    }
}

/// Makes the store's home and the directories every back end keeps in it.
fn make_home(home: &Path) -> Result<(), StoreError> {
    for sub in ["", "packs", "workspaces", "tmp"] {
        let p = home.join(sub);
        fs::create_dir_all(&p).map_err(|e| StoreError::io(&p, e))?;
    }
    Ok(())
}

/// `rel` inside `home`. `join` would copy the home, then grow the copy: one allocation instead (every call
/// reads paths here).
pub(crate) fn join(home: &Path, rel: &str) -> PathBuf {
    let mut p = PathBuf::with_capacity(home.as_os_str().len() + 1 + rel.len());
    p.push(home);
    p.push(rel);
    p
}

/// A fresh, unused path under `home`'s `tmp`.
pub(crate) fn temp_in(home: &Path, prefix: &str) -> PathBuf {
    join(home, "tmp").join(unique_name(prefix))
}

/// See [`Store::tenant_dir`].
pub(crate) fn tenant_dir(tenant: &str) -> Result<PathBuf, StoreError> {
    if tenant == principals::LOCAL_TENANT {
        return Ok(PathBuf::new());
    }
    if !crate::model::naming::is_arg_name(tenant) {
        return Err(StoreError::Refused(format!(
            "tenant {tenant:?} is not a name this store can hold; use letters, digits, `_` and `-`"
        )));
    }
    Ok(Path::new("tenants").join(tenant))
}

/// Where an adapter's files live under `$HCP_HOME`: paths only, so an adapter never holds the store (its
/// state, grants, credentials and audit log) while it runs a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `$HCP_HOME` itself: a project that holds it or lies inside it is refused.
    pub home: PathBuf,
    /// Each pack's private `workspace` directory and `HOME`.
    pub workspaces: PathBuf,
    /// Per-call directories (`ephemeral`).
    pub tmp: PathBuf,
    /// Compiled components, trusted only when their recorded digest matches.
    pub cache: PathBuf,
}

/// The file at `p` that a lock is taken on (made when missing, never truncated).
pub(crate) fn lock_file(p: &Path) -> Result<File, StoreError> {
    OpenOptions::new().create(true).truncate(false).write(true).open(p).map_err(|e| StoreError::io(p, e))
}

/// An `HCP_STORE` value that means the file store.
fn names_files(chosen: &str) -> bool {
    matches!(chosen, "" | "files")
}

/// Writes `bytes` to `target` atomically: a temp file beside it (created with `mode`), fsync, rename, then an
/// fsync of the directory so the rename itself survives a crash. A crash leaves the old or the new file.
pub fn write_atomic(target: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".write-")
        .permissions(fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(target).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// `N` random bytes from the kernel: tokens, the audit genesis, seal nonces, replica ids.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], StoreError> {
    use std::io::Read;
    let path = Path::new("/dev/urandom");
    let mut bytes = [0u8; N];
    File::open(path).and_then(|mut f| f.read_exact(&mut bytes)).map_err(|e| StoreError::io(path, e))?;
    Ok(bytes)
}

/// A name unique to this process and call: `prefix-<pid>-<nanos>-<counter>`.
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}-{}-{nanos}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_writes_replace_whole_files_with_their_mode_and_leave_no_temp() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("secret.json");
        write_atomic(&f, b"one", 0o600).unwrap();
        write_atomic(&f, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"two");
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(t.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["secret.json"]);
        // A missing directory is an error that keeps its cause.
        let e = write_atomic(&t.path().join("no/such/file"), b"x", 0o644).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn io_errors_keep_their_source() {
        use std::error::Error as _;
        let e = StoreError::io(Path::new("/x"), std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(e.to_string(), "store /x: not found");
        assert!(e.source().is_some());
    }

    #[test]
    fn the_layout_names_the_adapter_paths_under_the_home() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let l = store.layout();
        assert_eq!(l.home, t.path());
        assert_eq!((l.workspaces.parent(), l.cache.parent()), (Some(t.path()), Some(t.path())));
    }

    #[test]
    fn the_audit_log_round_trips_typed_rows() {
        use crate::model::{Code, Invoker};
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let rec = audit::AuditRecord {
            at: "2026-12-03T00:00:00.000Z".into(),
            principal: "ana".into(),
            tenant: "local".into(),
            invoker: Invoker::Mcp,
            pack_id: "ledger".into(),
            verb_key: "transfer".into(),
            operation: crate::pack::Operation::Write,
            ok: false,
            code: Some(Code::ConfirmRequired),
            args_sha256: crate::model::digest::sha256_hex(b"{}"),
            project_dir: None,
            action: None,
            approval: None,
            decision: None,
            outcome: None,
            egress: None,
            setting: None,
            prev: None,
        };
        store.append_audit(&rec).unwrap();
        let head = store.audit_head().unwrap().unwrap();
        assert_eq!(store.audit().unwrap(), vec![audit::AuditRecord { prev: Some(head.genesis), ..rec }]);
        let line = fs::read_to_string(t.path().join("audit.log")).unwrap();
        assert!(
            line.contains("\"invoker\":\"mcp\"") && line.contains("\"code\":\"confirm_required\""),
            "{line}"
        );
    }
}
