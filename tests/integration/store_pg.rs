//! The PostgreSQL store (docs/hosting.md) through the real `hcpx`: state the CLI writes in one home is what
//! another replica's home reads, credentials are sealed (a dump shows no secret and no token), keys rotate,
//! stores move between files and the database with their audit chains intact, a newer schema is refused, and a
//! replica whose database is away answers 503 and never falls back to local files.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::{hcpx_with, repo, stdout_json, TestDir};

/// One database, a seal key, and as many homes (replicas' local caches) as a test wants.
pub struct PgStore {
    pub t: TestDir,
    pub url: String,
    pub key: PathBuf,
}

impl PgStore {
    /// A fresh database and key; `None` (the test returns) when PostgreSQL is not installed outside CI.
    pub fn new() -> Option<PgStore> {
        if crate::pg::unavailable() {
            return None;
        }
        let url = crate::pg::fresh_database();
        let t = TestDir::new();
        let key = t.join("seal.key");
        write_key(&key, 1);
        Some(PgStore { t, url, key })
    }

    /// The directory a home `name` runs in (`hcp-home` inside it is its HCP_HOME).
    pub fn home(&self, name: &str) -> PathBuf {
        let d = self.t.join(name);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `hcpx serve` on the database in home `name` (its HCP_HOME `hcp-home` inside), holding the seal key in
    /// `key` (`self.key`, or another to play a replica started with the wrong one).
    pub fn serve(&self, name: &str, key: &Path) -> crate::serve::Server {
        let home = self.home(name);
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--store", &self.url])
            .env("HCP_HOME", home.join("hcp-home"))
            .env("HCP_SEAL_KEY_FILE", key)
            .env_remove("HCP_STORE")
            .current_dir(&home);
        if let Some(dir) = crate::helpers::shared_compile_cache() {
            cmd.env("HCP_CACHE_DIR", dir);
        }
        crate::serve::Server::launch(cmd)
    }

    /// `hcpx principal add ARGS` by the operator (home `admin`): the new Principal's token.
    pub fn added(&self, args: &[&str]) -> String {
        self.ok("admin", &[&["principal", "add"][..], args].concat())["token"].as_str().unwrap().to_string()
    }

    pub fn env(&self) -> Vec<(&str, String)> {
        vec![("HCP_STORE", self.url.clone()), ("HCP_SEAL_KEY_FILE", self.key.display().to_string())]
    }

    /// `hcpx ARGS` in home `name` against the database.
    pub fn run(&self, name: &str, args: &[&str]) -> Output {
        self.run_with(name, args, &[], None)
    }

    pub fn run_with(&self, name: &str, args: &[&str], extra: &[(&str, &str)], stdin: Option<&str>) -> Output {
        let env = self.env();
        let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        all.extend_from_slice(extra);
        hcpx_with(&self.home(name), args, &all, stdin)
    }

    pub fn ok(&self, name: &str, args: &[&str]) -> Value {
        let out = self.run(name, &[args, &["--json"]].concat());
        assert_eq!(
            out.status.code(),
            Some(0),
            "hcpx {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        stdout_json(&out)
    }

    /// Runs SQL through `psql` against the test database; its output.
    pub fn psql(&self, sql: &str) -> String {
        crate::pg::cluster().psql(crate::pg::database_of(&self.url), sql)
    }
}

impl PgStore {
    /// `transit-db` installed and activated from home `a`, and the token of Principal alice (tenant acme, every read).
    pub fn serving_alice(&self) -> String {
        let pack = write_pack(self.t.path());
        self.ok("a", &["install", pack.to_str().unwrap()]);
        self.ok("a", &["activate", "transit-db"]);
        let added =
            self.ok("a", &["principal", "add", "alice", "--tenant", "acme", "--grant", "verb.exec.read:*"]);
        added["token"].as_str().unwrap().to_string()
    }
}

pub fn write_key(path: &Path, byte: u8) {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f =
        std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path).unwrap();
    // Not random: a test key. The store only needs 32 bytes the database never sees.
    f.write_all(&[byte; 32]).unwrap();
}

/// `packs/transit-composite` with `follow` a confirm-gated write and a declared trigger, as pack `transit-db`.
pub fn write_pack(dir: &Path) -> PathBuf {
    let src = repo().join("packs/transit-composite");
    let dst = dir.join("transit-db");
    crate::helpers::copy_tree(&src, &dst);
    let edit = |file: &str, f: &dyn Fn(&mut Value)| {
        let p = dst.join(file);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    };
    edit("surface.json", &|v| {
        v["id"] = json!("transit-db");
        v["stimulusTriggers"] = json!([{ "ref": "trip.changed" }]);
    });
    edit("policy.json", &|v| {
        v["surface_id"] = json!("transit-db");
        v["verbs"]["follow"] =
            json!({ "operation": "write", "confirm": true, "privacy": { "land": "public" } });
        v["stimuli"] = json!({ "trip.changed": { "delivery": "announce" } });
    });
    let _ = std::fs::remove_file(dst.join("hcp.eval.json"));
    dst
}

#[test]
fn what_one_home_writes_in_the_database_every_other_home_reads() {
    let Some(db) = PgStore::new() else { return };
    let token = db.serving_alice();
    assert_eq!(token.len(), 64);
    let out = db.run_with("a", &["credential", "set", "github", "token"], &[], Some("gh-secret-value"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    // Home b never saw the pack's directory: it reads the record and the files from the database.
    let list = db.ok("b", &["list"]);
    assert_eq!(list["packs"][0]["id"], "transit-db", "{list}");
    let (code, env) = exec(&db, "b", &["exec", "transit-db", "plan", "--json", "--", "A", "B"]);
    assert_eq!((code, env["ok"].as_bool()), (0, Some(true)), "{env}");
    assert!(db.home("b").join("hcp-home/packs/transit-db/surface.json").exists());
    let names = db.ok("b", &["principal", "list"]);
    assert!(names.to_string().contains("alice"), "{names}");
    let fams = db.ok("b", &["credential", "list"]);
    assert_eq!(fams["families"]["github"], json!(["token"]), "{fams}");

    // Nothing of that is a file of either home.
    for h in ["a", "b"] {
        let home = db.home(h).join("hcp-home");
        for f in ["state.json", "principals.json", "credentials/github.json", "audit.log"] {
            assert!(!home.join(f).exists(), "{h}: {f} was written to local files");
        }
    }

    // A write confirmed in b is audited in the database; a denied one too; the tenant's chain verifies.
    let (code, denied) = exec(&db, "b", &["exec", "transit-db", "follow", "--json", "--", "opt-1"]);
    assert_eq!((code, denied["code"].as_str()), (1, Some("confirm_required")), "{denied}");
    let (code, ran) =
        exec(&db, "a", &["exec", "transit-db", "follow", "--json", "--", "opt-1", "confirm=true"]);
    assert_eq!((code, ran["ok"].as_bool()), (0, Some(true)), "{ran}");
    let rows = db.ok("a", &["audit"]);
    assert_eq!(rows["records"].as_array().unwrap().len(), 2, "{rows}");
    let v = db.ok("b", &["audit", "verify"]);
    assert_eq!((v["ok"].as_bool(), v["lines"].as_u64()), (Some(true), Some(2)), "{v}");
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_audit WHERE tenant = 'local'").trim(), "2");

    // Editing a row in the database breaks the chain, and verify names it.
    db.psql("UPDATE hcpx_audit SET line = replace(line, '\"ok\":true', '\"ok\":false') WHERE n = 2");
    let out = db.run("b", &["audit", "verify", "--json"]);
    let v = stdout_json(&out);
    assert_eq!((out.status.code(), v["broken"]["kind"].as_str()), (Some(1), Some("head")), "{v}");
}

fn exec(db: &PgStore, home: &str, args: &[&str]) -> (i32, Value) {
    let out = db.run(home, args);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

#[test]
fn the_database_dump_holds_no_credential_and_no_bearer_token() {
    let Some(db) = PgStore::new() else { return };
    let secret = "s3cret-credential-value-7f1e";
    let out = db.run_with("a", &["credential", "set", "github", "token"], &[], Some(secret));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = db.run_with(
        "a",
        &["credential", "set", "github", "token", "--tenant", "acme", "--principal", "alice"],
        &[],
        Some(secret),
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let token =
        db.ok("a", &["principal", "add", "alice", "--tenant", "acme"])["token"].as_str().unwrap().to_string();

    let dump = Command::new(crate::pg::cluster().bin("pg_dump"))
        .args(["--data-only", "-d", &db.url])
        .output()
        .expect("pg_dump");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    let text = String::from_utf8_lossy(&dump.stdout);
    assert!(text.contains("hcpx_documents"), "the dump is of the store");
    assert!(!text.contains(secret), "a credential value is in the dump");
    assert!(!text.contains(&token), "a bearer token is in the dump");
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(!text.contains(&hex), "a credential value is in the dump, as hex");
    assert_eq!(
        db.psql("SELECT count(*) FROM hcpx_documents WHERE path LIKE '%credentials/%' AND body IS NULL")
            .trim(),
        "2"
    );

    // Without the key a credential is neither written nor read; another key is named, not mis-read.
    let out = hcpx_with(&db.home("a"), &["credential", "list"], &[("HCP_STORE", &db.url)], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("HCP_SEAL_KEY_FILE is not set"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let other = db.t.join("other.key");
    write_key(&other, 9);
    let out =
        db.run_with("a", &["credential", "list"], &[("HCP_SEAL_KEY_FILE", other.to_str().unwrap())], None);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.code() == Some(1) && err.contains("is sealed with key"), "{err}");
}

#[test]
fn rotate_key_reseals_every_credential_under_the_new_key() {
    let Some(db) = PgStore::new() else { return };
    let out = db.run_with("a", &["credential", "set", "github", "token"], &[], Some("v1"));
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let before = db.psql("SELECT key_id FROM hcpx_documents WHERE path = 'credentials/github.json'");
    let new = db.t.join("new.key");
    write_key(&new, 2);
    let v = db.ok("a", &["credential", "rotate-key", "--to", new.to_str().unwrap()]);
    assert_eq!(v["resealed"], 1, "{v}");
    let after = db.psql("SELECT key_id FROM hcpx_documents WHERE path = 'credentials/github.json'");
    assert_ne!(before, after);
    assert_eq!(after.trim(), v["key_id"].as_str().unwrap());
    // The old key no longer opens it; the new one does.
    let out = db.run("a", &["credential", "list"]);
    assert_eq!(out.status.code(), Some(1), "the old key still opens a resealed row");
    let out = db.run_with(
        "a",
        &["credential", "list", "--json"],
        &[("HCP_SEAL_KEY_FILE", new.to_str().unwrap())],
        None,
    );
    assert_eq!(stdout_json(&out)["families"]["github"], json!(["token"]));
}

#[test]
fn a_store_moves_from_files_to_the_database_and_back_with_its_chains_intact() {
    let Some(db) = PgStore::new() else { return };
    // A file store with a pack, a Principal, a credential, audit rows and a Sense event.
    let files = db.home("files");
    let run_files = |args: &[&str], stdin: Option<&str>| {
        let out = hcpx_with(&files, args, &[], stdin);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let pack = write_pack(db.t.path());
    run_files(&["install", pack.to_str().unwrap()], None);
    run_files(&["activate", "transit-db"], None);
    run_files(&["principal", "add", "alice", "--tenant", "acme", "--grant", "sense.announce:*"], None);
    run_files(&["credential", "set", "github", "token"], Some("moved-secret"));
    run_files(&["exec", "transit-db", "follow", "--json", "--", "opt-1", "confirm=true"], None);
    run_files(&["sense", "emit", "transit-db", "trip.changed", "--json"], Some("{\"n\":1}"));

    let v = db.ok("db", &["store", "import", files.join("hcp-home").to_str().unwrap()]);
    assert_eq!(v["moved"]["packs"], 1, "{v}");
    assert_eq!(v["moved"]["credentials"], 1, "{v}");
    // The confirmed write and the Sense push: both audited.
    assert_eq!(v["moved"]["audit_lines"], 2, "{v}");
    assert_eq!(v["moved"]["sense_events"], 1, "{v}");
    assert_eq!(db.ok("db", &["audit", "verify"])["ok"], true);
    assert_eq!(db.ok("db", &["list"])["packs"][0]["activated"], true);
    // A second import into the same database is refused, and changes nothing.
    let out = db.run("db", &["store", "import", files.join("hcp-home").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds a store"));

    // More rows in the database, then out again: each tenant's chain verbatim, and it verifies.
    let (code, _) =
        exec(&db, "db", &["exec", "transit-db", "follow", "--json", "--", "opt-2", "confirm=true"]);
    assert_eq!(code, 0);
    let out_dir = db.t.join("exported");
    db.ok("db", &["store", "export", out_dir.to_str().unwrap()]);
    let cred = std::fs::read_to_string(out_dir.join("credentials/github.json")).unwrap();
    assert!(cred.contains("moved-secret"));
    assert!(out_dir.join("packs/transit-db/surface.json").exists());
    let log = out_dir.join("audit/local.log");
    let out =
        hcpx_with(&db.home("x"), &["audit", "verify", "--json", "--log", log.to_str().unwrap()], &[], None);
    let v = stdout_json(&out);
    // Two writes and the Sense push.
    assert_eq!((v["ok"].as_bool(), v["lines"].as_u64()), (Some(true), Some(3)), "{v}");
    // The exported chain is the database's, line for line: an edit to it is found.
    let text = std::fs::read_to_string(&log).unwrap().replacen("\"ok\":true", "\"ok\":false", 1);
    std::fs::write(&log, text).unwrap();
    let out =
        hcpx_with(&db.home("x"), &["audit", "verify", "--json", "--log", log.to_str().unwrap()], &[], None);
    assert_eq!(out.status.code(), Some(1));

    // And back into a new database: the chain kept verbatim (its genesis and head too).
    let Some(db2) = PgStore::new() else { return };
    std::fs::write(&log, std::fs::read_to_string(&log).unwrap().replacen("\"ok\":false", "\"ok\":true", 1))
        .unwrap();
    let env2 = [("HCP_SEAL_KEY_FILE", db.key.to_str().unwrap())];
    let out = db2.run_with("db2", &["store", "import", out_dir.to_str().unwrap(), "--json"], &env2, None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let heads = |d: &PgStore| d.psql("SELECT genesis || head FROM hcpx_audit_heads WHERE tenant = 'local'");
    assert_eq!(heads(&db), heads(&db2));
}

#[test]
fn a_database_with_a_newer_schema_is_refused() {
    let Some(db) = PgStore::new() else { return };
    let v = db.ok("a", &["store", "migrate"]);
    assert_eq!(v["schema_version"], v["latest"], "{v}");
    db.psql("UPDATE hcpx_schema SET version = 999");
    let out = db.run("a", &["list"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("store schema version 999, newer than this hcpx knows"), "{err}");
}

/// A loopback TCP proxy to the database that a test can cut (every connection closed, new ones refused) and
/// mend: a database that goes away and comes back, without stopping the shared test cluster.
pub struct Cut {
    pub port: u16,
    down: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Cut {
    pub fn to(target: u16) -> Cut {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let down = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (d, c) = (down.clone(), conns.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if d.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else { continue };
                c.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                for (mut from, mut to) in
                    [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)]
                {
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        while let Ok(n) = from.read(&mut buf) {
                            if n == 0 || to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Cut { port, down, conns }
    }

    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for s in self.conns.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    pub fn mend(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

/// The database URL with its port replaced.
pub fn via_port(url: &str, port: u16) -> String {
    let (head, tail) = url.rsplit_once('/').unwrap();
    let (hostpart, _) = head.rsplit_once(':').unwrap();
    format!("{hostpart}:{port}/{tail}")
}

#[test]
fn a_replica_without_its_database_answers_503_and_never_reads_local_files() {
    let Some(db) = PgStore::new() else { return };
    let token = db.serving_alice();
    let port: u16 = db.url.rsplit_once(':').unwrap().1.split('/').next().unwrap().parse().unwrap();
    let cut = Cut::to(port);
    let url = via_port(&db.url, cut.port);
    let s = crate::store_pg_replicas::Replica::start(&db, "r", &url);
    let plan = json!({ "from": "A", "to": "B" });
    let (st, v) = s.post("/v1/exec/transit-db/plan", &token, &plan);
    assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    // A principals.json in the replica's home would let a token in if it were read: it must not be.
    std::fs::write(s.home.join("hcp-home/principals.json"), "[]").unwrap();

    cut.cut();
    let start = Instant::now();
    let mut status = 0;
    while start.elapsed() < Duration::from_secs(10) {
        status = s.post("/v1/exec/transit-db/plan", &token, &plan).0;
        if status == 503 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status, 503, "a replica without its database must answer 503");
    let (st, _, _) = crate::serve::request(&s.addr, "GET", "/healthz", None, None);
    assert_eq!(st, 503, "healthz says the database is unreachable");

    cut.mend();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        status = s.post("/v1/exec/transit-db/plan", &token, &plan).0;
        if status == 200 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, 200, "the replica serves again once its database is back");
}

/// A write waits for its audit line's commit without holding one of the server's workers: while the tenant's
/// chain is locked in the database (another replica's long commit, here a psql session), the writes queue for
/// the lock and a read on the same replica still answers at once; once the lock goes, every write commits
/// with its line. (Before: each waiting write blocked a tokio worker, so a 2-core replica with two writes
/// waiting answered nothing, and concurrent writes never reached the database together to share a commit.)
#[test]
fn writes_waiting_on_the_database_never_stall_other_calls_on_the_replica() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("a", &["install", pack.to_str().unwrap()]);
    db.ok("a", &["activate", "transit-db"]);
    let added = db.ok(
        "a",
        &[
            "principal",
            "add",
            "alice",
            "--tenant",
            "acme",
            "--grant",
            "verb.exec.read:*",
            "--grant",
            "verb.exec.write:*",
        ],
    );
    let token = added["token"].as_str().unwrap().to_string();
    let s = crate::store_pg_replicas::Replica::start(&db, "r", &db.url);
    let write = |i: usize| json!({ "option": format!("opt-{i}"), "confirm": true });
    let (st, v) = s.post("/v1/exec/transit-db/follow", &token, &write(0));
    assert_eq!(st, 200, "{v}");

    // Another session holds acme's chain for a few seconds.
    let hold = crate::pg::cluster()
        .psql_command(crate::pg::database_of(&db.url))
        .args([
            "-c",
            "BEGIN; SELECT 1 FROM hcpx_audit_heads WHERE tenant = 'acme' FOR UPDATE; SELECT pg_sleep(6); COMMIT;",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let held = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let writers: Vec<_> = (1..=6)
        .map(|i| {
            let (addr, token, body) = (s.addr.clone(), token.clone(), write(i));
            std::thread::spawn(move || {
                crate::serve::request(
                    &addr,
                    "POST",
                    "/v1/exec/transit-db/follow",
                    Some(&token),
                    Some(body.to_string().as_bytes()),
                )
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let (st, v) = s.post("/v1/exec/transit-db/plan", &token, &json!({ "from": "A", "to": "B" }));
    assert_eq!(st, 200, "{v}");
    assert!(
        held.elapsed() < Duration::from_secs(5),
        "the read waited for the writes' lock: {:?}",
        held.elapsed()
    );
    for w in writers {
        let (st, _, v) = w.join().unwrap();
        assert_eq!(st, 200, "{v}");
    }
    let mut hold = hold;
    assert!(hold.wait().unwrap().success());
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_audit WHERE tenant = 'acme'"), "7");
    let out = db.run("a", &["audit", "verify", "--tenant", "acme"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
