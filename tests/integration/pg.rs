//! A real PostgreSQL for the tests: one throwaway cluster per run of this test binary, started on first use
//! and shared by every test that asks, each test with a fresh empty database of its own
//! (`fresh_database()`). The server is a direct child that gets SIGKILL when this process dies (even on a
//! panic=abort or a kill), is stopped cleanly at a normal exit, and runs as the `postgres` user when the
//! tests run as root (CI), since initdb and postgres refuse root. Connections use trust auth, but for the roles
//! of `fresh_database_with_password()`, which log in over TCP with their password only.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The role every test connects as (trust auth on loopback and the socket: the server is this run's alone).
const ROLE: &str = "hcpx";
/// The group whose members may log in over TCP only with their password (scram-sha-256, the first rule of
/// pg_hba.conf): the roles of `fresh_database_with_password`.
const PASSWORD_GROUP: &str = "hcpx_password";

/// The running cluster.
pub struct Cluster {
    bin: PathBuf,
    pub port: u16,
}

static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
static POSTMASTER: AtomicU32 = AtomicU32::new(0);
static CLUSTER_DIR: OnceLock<PathBuf> = OnceLock::new();

/// The newest Debian server binaries, `/usr/lib/postgresql/<version>/bin` (found, never assumed).
fn server_bin() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            (bin.join("postgres").is_file() && bin.join("initdb").is_file() && bin.join("psql").is_file())
                .then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// Whether the pg tests cannot run here. Under `CI=true` missing binaries are a failure (setup.sh installs
/// them); elsewhere the test says why and the caller returns early.
pub fn unavailable() -> bool {
    if server_bin().is_some() {
        return false;
    }
    let why = "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin; run `bash scripts/setup.sh`";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    true
}

/// The uid and gid to run the server as: ours, or the `postgres` user's when we are root.
fn server_user() -> Result<Option<(libc::uid_t, libc::gid_t)>, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = c"postgres";
    // SAFETY: getpwnam with a NUL-terminated name; the record is read at once, before any other call.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err("running as root and there is no `postgres` user to run the server as; run `bash scripts/setup.sh` (Debian's postgresql package makes it)".into());
    }
    // SAFETY: pw is a valid passwd record (checked non-null above).
    Ok(Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) }))
}

/// Makes `cmd` run as `user` (when given), and die with this process when `tie` is set.
fn confine(cmd: &mut Command, user: Option<(libc::uid_t, libc::gid_t)>, tie: bool) {
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((uid, gid)) = user {
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if tie {
                // After the uid change, which clears the parent-death signal.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

fn chown(path: &Path, user: Option<(libc::uid_t, libc::gid_t)>) {
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown the cluster directory");
    }
}

/// Removes the directories of earlier runs whose process is gone (a run killed before its exit handler).
fn sweep_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) =
            name.to_str().and_then(|n| n.strip_prefix("hcpx-pg-")).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks that the process exists.
        if pid != std::process::id() && unsafe { libc::kill(pid as libc::pid_t, 0) } != 0 {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

/// Stops the server at a normal exit (fast shutdown, bounded) and removes its files.
extern "C" fn stop_at_exit() {
    let pid = POSTMASTER.load(Ordering::SeqCst) as libc::pid_t;
    if pid > 0 {
        // SAFETY: signals and reaps the postmaster this process started.
        unsafe {
            libc::kill(pid, libc::SIGINT);
            let start = Instant::now();
            let mut status = 0;
            while libc::waitpid(pid, &mut status, libc::WNOHANG) == 0 {
                if start.elapsed() > Duration::from_secs(10) {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    if let Some(dir) = CLUSTER_DIR.get() {
        let _ = fs::remove_dir_all(dir);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

fn start() -> Result<Cluster, String> {
    let bin = server_bin().ok_or("no PostgreSQL server binaries; run `bash scripts/setup.sh`")?;
    let user = server_user()?;
    let parent = std::env::temp_dir();
    sweep_stale(&parent);
    let dir = parent.join(format!("hcpx-pg-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("sock")).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
    let _ = CLUSTER_DIR.set(dir.clone());
    chown(&dir, user);
    chown(&dir.join("sock"), user);
    let data = dir.join("data");
    let mut init = Command::new(bin.join("initdb"));
    init.arg("-D").arg(&data).args(["-U", ROLE, "--auth=trust", "-E", "UTF8", "--no-sync", "--no-locale"]);
    init.current_dir(&dir).stdin(Stdio::null());
    confine(&mut init, user, false);
    let out = init.output().map_err(|e| format!("cannot run initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // Members of PASSWORD_GROUP give their password on loopback TCP; everyone else stays on trust.
    let hba = data.join("pg_hba.conf");
    let rules = fs::read_to_string(&hba).map_err(|e| format!("read {}: {e}", hba.display()))?;
    fs::write(&hba, format!("host all +{PASSWORD_GROUP} 127.0.0.1/32 scram-sha-256\n{rules}"))
        .map_err(|e| format!("write {}: {e}", hba.display()))?;
    // Another process may take the free port before the server binds it: then it exits, and a new port is tried.
    let mut why = String::new();
    for _ in 0..3 {
        let port = free_port();
        match launch(&bin, &dir, port, user) {
            Ok(()) => {
                let cluster = Cluster { bin, port };
                cluster.psql("postgres", &format!("CREATE ROLE {PASSWORD_GROUP} NOLOGIN"));
                return Ok(cluster);
            }
            Err(e) => why = e,
        }
    }
    Err(why)
}

/// Starts the postmaster on `port` and waits until it accepts connections; an error if it exits first.
fn launch(bin: &Path, dir: &Path, port: u16, user: Option<(libc::uid_t, libc::gid_t)>) -> Result<(), String> {
    let log_path = dir.join("server.log");
    let log = fs::File::create(&log_path).map_err(|e| e.to_string())?;
    chown(&log_path, user);
    let (data, sock) = (dir.join("data"), dir.join("sock"));
    let (tx, rx) = std::sync::mpsc::channel();
    let server = bin.join("postgres");
    // The server's parent is this thread, which never ends: the parent-death signal follows the spawning
    // thread, so a test's own thread (which ends with the test) must not spawn it.
    std::thread::Builder::new()
        .name("pg-postmaster".into())
        .spawn(move || {
            let mut cmd = Command::new(server);
            cmd.arg("-D").arg(&data).arg("-k").arg(&sock);
            cmd.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
            // fsync off: a throwaway cluster; synchronous_commit stays on (durability semantics are tested).
            for setting in ["fsync=off", "max_connections=200", "shared_buffers=32MB", "full_page_writes=off"]
            {
                cmd.args(["-c", setting]);
            }
            cmd.current_dir(data.parent().unwrap_or(Path::new("/")))
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            cmd.stderr(log);
            confine(&mut cmd, user, true);
            match cmd.spawn() {
                Ok(child) => {
                    let _ = tx.send(Ok(child.id()));
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot start postgres: {e}")));
                }
            }
        })
        .map_err(|e| e.to_string())?;
    let pid = rx.recv().map_err(|e| e.to_string())??;
    POSTMASTER.store(pid, Ordering::SeqCst);
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain extern "C" function to run at exit.
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(stop_at_exit);
    });
    let start = Instant::now();
    loop {
        let ready = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", ROLE, "-d", "postgres", "-q"])
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            return Ok(());
        }
        let mut status = 0;
        // SAFETY: reaps the postmaster if it has exited (it is this process's child).
        let exited = unsafe { libc::waitpid(pid as libc::pid_t, &mut status, libc::WNOHANG) } != 0;
        if exited || start.elapsed() > Duration::from_secs(60) {
            POSTMASTER.store(0, Ordering::SeqCst);
            let log = fs::read_to_string(&log_path).unwrap_or_default();
            return Err(format!("postgres did not come up on port {port}:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The shared cluster, started on first use.
pub fn cluster() -> &'static Cluster {
    match CLUSTER.get_or_init(start) {
        Ok(c) => c,
        Err(e) => panic!("the test PostgreSQL did not start: {e}"),
    }
}

impl Cluster {
    /// Runs `sql` with psql against `db` and returns its unaligned, tuples-only output.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = self.psql_command(db).args(["-c", sql]).stdin(Stdio::null()).output().expect("run psql");
        assert!(out.status.success(), "psql {sql:?} on {db}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `psql` connected to `db` (quiet, unaligned, stopping at the first error); the caller adds `-c SQL`.
    pub fn psql_command(&self, db: &str) -> Command {
        let mut c = Command::new(self.bin.join("psql"));
        c.args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", ROLE, "-d", db]).args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
        ]);
        c
    }

    /// A client binary of the cluster's version (`psql`, `pg_dump`).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    /// The URL of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{ROLE}@127.0.0.1:{}/{db}", self.port)
    }
}

/// A newly created, empty database of the shared cluster, as a `postgres://` URL: one per test, so tests
/// stay apart. Check `unavailable()` first.
pub fn fresh_database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let c = cluster();
    let name = format!("t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    c.psql("postgres", &format!("CREATE DATABASE {name}"));
    c.url(&name)
}

/// A database of its own whose owner logs in only with a password, over loopback TCP.
pub struct PasswordDb {
    /// `postgres://ROLE@127.0.0.1:PORT/DB`, without the password.
    pub url: String,
    pub role: String,
    pub database: String,
    /// Holds a `:` and a `\`, which a password file escapes.
    pub password: String,
    pub port: u16,
}

impl PasswordDb {
    /// The URL with the password as its userinfo's.
    pub fn url_with_userinfo(&self) -> String {
        format!("postgres://{}:{}@127.0.0.1:{}/{}", self.role, self.password, self.port, self.database)
    }
}

/// A newly created, empty database owned by a new role that logs in with a password only (scram-sha-256 for
/// loopback TCP, pg_hba.conf): the tests of PGPASSWORD, password files and masking. Check `unavailable()`
/// first.
pub fn fresh_database_with_password() -> PasswordDb {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let c = cluster();
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    let (role, database) = (format!("r{}_{n}", std::process::id()), format!("p{}_{n}", std::process::id()));
    let password = format!("s3cret{}x{n}:a\\b", std::process::id());
    c.psql("postgres", &format!("CREATE ROLE {role} LOGIN PASSWORD '{password}' IN ROLE {PASSWORD_GROUP}"));
    c.psql("postgres", &format!("CREATE DATABASE {database} OWNER {role}"));
    let url = format!("postgres://{role}@127.0.0.1:{}/{database}", c.port);
    PasswordDb { url, role, database, password, port: c.port }
}

/// The database name of a URL `fresh_database` gave.
pub fn database_of(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or_default()
}

#[test]
fn the_test_cluster_gives_each_test_a_fresh_empty_database() {
    if unavailable() {
        return;
    }
    let (a, b) = (fresh_database(), fresh_database());
    assert_ne!(a, b);
    assert!(a.starts_with("postgres://") && a.contains("@127.0.0.1:"), "{a}");
    let c = cluster();
    for url in [&a, &b] {
        let db = database_of(url);
        assert_eq!(c.psql(db, "select current_database()"), db);
        let tables = c.psql(
            db,
            "select count(*) from pg_tables where schemaname not in ('pg_catalog','information_schema')",
        );
        assert_eq!(tables, "0", "{db} is not empty");
    }
    // What one test writes, another's database does not see.
    c.psql(database_of(&a), "create table mark (n int); insert into mark values (1)");
    assert_eq!(c.psql(database_of(&a), "select count(*) from mark"), "1");
    assert_eq!(c.psql(database_of(&b), "select count(*) from pg_tables where tablename = 'mark'"), "0");
    // Durability semantics stay real: commits wait for the WAL flush; only fsync is off.
    assert_eq!(c.psql(database_of(&a), "show synchronous_commit"), "on");
    assert_eq!(c.psql(database_of(&a), "show max_connections"), "200");
    // The server listens on loopback only and runs as an unprivileged user.
    assert_eq!(c.psql(database_of(&a), "show listen_addresses"), "127.0.0.1");
    let pid = POSTMASTER.load(Ordering::SeqCst);
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().to_string();
    assert!(!uid.split_whitespace().skip(1).any(|u| u == "0"), "the server runs as root: {uid}");
}

/// Whether process `pid` is gone (or a zombie nobody reaped: no longer running).
fn gone(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Run by `a_test_process_that_dies_takes_its_server_with_it` in a child process of its own: starts the
/// cluster, says the postmaster's pid, and aborts (no exit handler runs).
#[test]
#[ignore = "run only as the child of a_test_process_that_dies_takes_its_server_with_it"]
fn pg_child_starts_a_cluster_then_aborts() {
    if std::env::var("HCPX_PG_ABORT_CHILD").is_err() || unavailable() {
        return;
    }
    let _ = cluster();
    println!("postmaster={}", POSTMASTER.load(Ordering::SeqCst));
    std::process::abort();
}

#[test]
fn a_test_process_that_dies_takes_its_server_with_it() {
    if unavailable() {
        return;
    }
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["pg::pg_child_starts_a_cluster_then_aborts", "--exact", "--ignored", "--nocapture"])
        .env("HCPX_PG_ABORT_CHILD", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child_dir = std::env::temp_dir().join(format!("hcpx-pg-{}", child.id()));
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let pid: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("postmaster="))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| {
            panic!("the child said no pid:\n{text}\n{}", String::from_utf8_lossy(&out.stderr))
        });
    assert!(!out.status.success(), "the child was to abort");
    let start = Instant::now();
    while !gone(pid) {
        assert!(start.elapsed() < Duration::from_secs(20), "postgres {pid} outlived its test process");
        std::thread::sleep(Duration::from_millis(50));
    }
    // What an aborted run leaves, the next run's start sweeps; this one is swept here.
    assert!(child_dir.is_dir(), "{} is not where the child's cluster was", child_dir.display());
    sweep_stale(&std::env::temp_dir());
    assert!(!child_dir.exists(), "the stale cluster directory was not swept");
}
