//! Three `hcpx serve` replicas on one PostgreSQL store, as a hosted platform runs them: 2,000 calls (reads and
//! confirmed writes of three tenants) spread over them at concurrency 32 while one replica is killed with
//! SIGKILL and restarted. Afterwards every acknowledged write has its audit row, every tenant's chain verifies,
//! a Sense watcher that reconnected through another replica saw every event once, and a grant revoked mid-run
//! was refused by all three replicas within one second.

use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::store_pg::{write_pack, PgStore};

/// One `hcpx serve` replica with its own home (its local cache) on the shared database.
pub struct Replica {
    server: crate::serve::Server,
    pub addr: String,
    pub home: PathBuf,
    url: String,
    key: PathBuf,
}

impl Replica {
    pub fn start(db: &PgStore, name: &str, url: &str) -> Replica {
        let home = db.home(name);
        Replica::spawn(home, url.to_string(), db.key.clone())
    }

    fn spawn(home: PathBuf, url: String, key: PathBuf) -> Replica {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--max-calls", "64", "--store", &url])
            .env("HCP_HOME", home.join("hcp-home"))
            .env("HCP_SEAL_KEY_FILE", &key)
            .env_remove("HCP_STORE")
            .current_dir(&home);
        let server = crate::serve::Server::launch(cmd);
        Replica { addr: server.addr.clone(), server, home, url, key }
    }

    pub fn post(&self, path: &str, token: &str, body: &Value) -> (u16, Value) {
        self.server.post(path, token, body)
    }

    /// SIGKILL: no shutdown, no flush, nothing it held released but by the kernel and the database.
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// The same replica (same home) started again, on a new port.
    pub fn restart(&mut self) {
        self.kill();
        *self = Replica::spawn(self.home.clone(), self.url.clone(), self.key.clone());
    }
}

/// A POST that a killed replica may refuse or cut: `None` instead of a panic.
fn try_post(addr: &str, path: &str, token: &str, body: &Value) -> Option<(u16, Value)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer {token}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, serde_json::from_str(body).ok()?))
}

const CALLS: usize = 2000;
const CONCURRENCY: usize = 32;
const TENANTS: [&str; 3] = ["acme", "beta", "gamma"];

#[test]
fn three_replicas_lose_nothing_when_one_is_killed_mid_run() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("admin", &["install", pack.to_str().unwrap()]);
    db.ok("admin", &["activate", "transit-db"]);
    let grants = ["verb.exec.read:*", "verb.exec.write:*", "sense.announce:*"];
    let mut tokens = BTreeMap::new();
    for t in TENANTS {
        let mut args = vec!["principal", "add", t, "--tenant", t];
        for g in grants {
            args.extend(["--grant", g]);
        }
        tokens.insert(t, db.ok("admin", &args)["token"].as_str().unwrap().to_string());
    }
    let dave = db.added(&["dave", "--tenant", "acme", "--grant", "verb.exec.read:*"]);

    let replicas: Vec<Arc<Mutex<Replica>>> =
        (0..3).map(|i| Arc::new(Mutex::new(Replica::start(&db, &format!("r{i}"), &db.url)))).collect();
    let addrs: Arc<Mutex<Vec<String>>> =
        Arc::new(Mutex::new(replicas.iter().map(|r| r.lock().unwrap().addr.clone()).collect()));
    let plan = json!({ "from": "A", "to": "B" });

    // A Sense watcher of tenant acme on replica 0; it will reconnect through replica 2.
    let acme = tokens["acme"].clone();
    let first_addr = addrs.lock().unwrap()[0].clone();
    let (a2, t2) = (first_addr.clone(), acme.clone());
    let first_half =
        std::thread::spawn(move || crate::sense::sse(&a2, &t2, "", None, 20, Duration::from_secs(60)));

    let next = Arc::new(AtomicUsize::new(0));
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default(); // (tenant, option) of acknowledged writes
    let emitted = Arc::new(AtomicUsize::new(0));
    let outcomes: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let mut workers = Vec::new();
    for w in 0..CONCURRENCY {
        let (next, acked, emitted, outcomes, addrs, tokens, plan) = (
            next.clone(),
            acked.clone(),
            emitted.clone(),
            outcomes.clone(),
            addrs.clone(),
            tokens.clone(),
            plan.clone(),
        );
        workers.push(std::thread::spawn(move || loop {
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= CALLS {
                break;
            }
            let tenant = TENANTS[(i / 7 + w) % 3];
            let token = &tokens[tenant];
            let addr = addrs.lock().unwrap()[i % 3].clone();
            let (path, body, write) = match i % 10 {
                0..=5 => ("/v1/exec/transit-db/plan".to_string(), plan.clone(), None),
                6..=8 => {
                    let option = format!("opt-{i}");
                    let body = json!({ "option": option, "confirm": true });
                    ("/v1/exec/transit-db/follow".to_string(), body, Some(option))
                }
                _ if tenant == "acme" => {
                    let body = json!({ "n": i });
                    ("/v1/sense/transit-db/trip.changed".to_string(), body, None)
                }
                _ => ("/v1/exec/transit-db/plan".to_string(), plan.clone(), None),
            };
            let got = try_post(&addr, &path, token, &body);
            let key = match &got {
                None => "cut".to_string(),
                Some((s, v)) => format!("{s} {}", v["code"].as_str().unwrap_or("ok")),
            };
            *outcomes.lock().unwrap().entry(key).or_default() += 1;
            if let Some((200, v)) = got {
                if let Some(option) = write.filter(|_| v["ok"] == true) {
                    acked.lock().unwrap().push((tenant.to_string(), option));
                }
                if path.starts_with("/v1/sense") {
                    emitted.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }

    // A third of the way in, replica 1 is killed with SIGKILL, then started again on its own home.
    while next.load(Ordering::SeqCst) < CALLS / 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    replicas[1].lock().unwrap().kill();
    std::thread::sleep(Duration::from_millis(300));
    replicas[1].lock().unwrap().restart();
    addrs.lock().unwrap()[1] = replicas[1].lock().unwrap().addr.clone();

    // Two thirds in, dave's read grant is revoked through the CLI: every replica refuses him within 1 s.
    while next.load(Ordering::SeqCst) < 2 * CALLS / 3 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let now: Vec<String> = addrs.lock().unwrap().clone();
    for a in &now {
        let (st, _, v) = crate::serve::request(
            a,
            "POST",
            "/v1/exec/transit-db/plan",
            Some(&dave),
            Some(plan.to_string().as_bytes()),
        );
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "dave reads before the revoke: {v}");
    }
    db.ok("admin", &["principal", "revoke", "dave", "verb.exec.read:*"]);
    let revoked = Instant::now();
    let dave_reads = |a: &str| {
        let body = plan.to_string();
        crate::serve::request(a, "POST", "/v1/exec/transit-db/plan", Some(&dave), Some(body.as_bytes())).0
    };
    // How soon each replica refused him (for the log), then the bound itself: a call that starts a second
    // after the revoke is refused by every replica, however slow the calls are on a loaded machine.
    let mut seen = Vec::new();
    for a in &now {
        while revoked.elapsed() < Duration::from_secs(1) && dave_reads(a) != 403 {
            std::thread::sleep(Duration::from_millis(10));
        }
        seen.push(revoked.elapsed());
    }
    std::thread::sleep(Duration::from_secs(1).saturating_sub(revoked.elapsed()));
    for a in &now {
        assert_eq!(dave_reads(a), 403, "replica {a} still served dave a second after the revoke");
    }
    let all_refused = seen.iter().max().copied().unwrap_or_default();

    for w in workers {
        w.join().unwrap();
    }
    let outcomes = outcomes.lock().unwrap().clone();
    eprintln!("outcomes: {outcomes:?}; revoked everywhere after {all_refused:?}");

    // Every acknowledged write has its audit row (matched by its arguments' digest), in its tenant's chain.
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > CALLS / 5, "too few writes were acknowledged: {outcomes:?}");
    let rows = db.ok("admin", &["audit"]);
    let mut have: BTreeSet<(String, String)> = BTreeSet::new();
    for r in rows["records"].as_array().unwrap() {
        if r["ok"] == true && r["verb_key"] == "follow" {
            have.insert((
                r["tenant"].as_str().unwrap().to_string(),
                r["args_sha256"].as_str().unwrap().to_string(),
            ));
        }
    }
    for (tenant, option) in &acked {
        let digests = [json!({ "option": option, "confirm": true }), json!({ "option": option })]
            .map(|v| hcpx_model::digest::args_digest(v.as_object().unwrap()));
        assert!(
            digests.iter().any(|d| have.contains(&(tenant.clone(), d.clone()))),
            "acknowledged write {option} of {tenant} has no audit row"
        );
    }
    let v = db.ok("admin", &["audit", "verify"]);
    assert_eq!(v["ok"], true, "{v}");
    for t in TENANTS {
        let v = db.ok("admin", &["audit", "verify", "--tenant", t]);
        assert_eq!(v["ok"], true, "{t}: {v}");
    }

    // The watcher: the first events through replica 0, then the rest through replica 2 after the last id it saw.
    let emitted = emitted.load(Ordering::SeqCst);
    let (st, first) = first_half.join().unwrap();
    assert_eq!(st, 200);
    let last = first.last().and_then(|e| e["id"].as_u64()).unwrap_or(0);
    let other = addrs.lock().unwrap()[2].clone();
    let want = emitted.saturating_sub(first.len());
    let (st, rest) = crate::sense::sse(&other, &acme, "", Some(last), want, Duration::from_secs(30));
    assert_eq!(st, 200);
    let ids: Vec<u64> = first.iter().chain(rest.iter()).map(|e| e["id"].as_u64().unwrap()).collect();
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "an event was delivered twice: {ids:?}");
    assert!(ids.len() >= emitted, "events were lost: saw {} of {emitted} acknowledged", ids.len());
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>(), "ids are not 1..n in order: {ids:?}");
}

#[test]
fn a_write_whose_replica_is_killed_mid_call_still_gets_its_audit_line() {
    let Some(db) = PgStore::new() else { return };
    // A write that takes a while, so the kill lands while it runs.
    let mut f = crate::helpers::Fixture::wrap();
    f.surface = json!({
        "id": "slow", "name": "Slow", "kind": "wrap", "cliBin": "slow",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/slow", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": { "save": { "description": "Save slowly.", "cli": ["slow", "save"] } }
    });
    f.policy = json!({ "surface_id": "slow", "verbs": { "save": { "operation": "write" } } });
    f.harness = "# Slow\n\nSaves slowly.\n".into();
    f.files = vec![("bin/slow".into(), "#!/bin/sh\nsleep 30\necho '{\"saved\":true}'\n".into(), true)];
    let src = db.t.join("src-slow");
    std::fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    db.ok("admin", &["install", dir.to_str().unwrap()]);
    db.ok("admin", &["activate", "slow"]);
    let token = db.added(&["ana", "--tenant", "acme", "--grant", "verb.exec.write:*"]);
    let mut doomed = Replica::start(&db, "doomed", &db.url);
    let _witness = Replica::start(&db, "witness", &db.url);
    let addr = doomed.addr.clone();
    let caller = std::thread::spawn(move || try_post(&addr, "/v1/exec/slow/save", &token, &json!({})));
    // The write is admitted and running once its intent is in the database.
    let start = Instant::now();
    while db.psql("SELECT count(*) FROM hcpx_audit_intents").trim() != "1" {
        assert!(start.elapsed() < Duration::from_secs(20), "the write never recorded its intent");
        std::thread::sleep(Duration::from_millis(50));
    }
    doomed.kill();
    assert!(caller.join().unwrap().is_none(), "the killed replica answered");
    // The surviving replica finds the dead one's intent and writes its line in acme's chain: its outcome is
    // unknown (the command may have run), never `cancelled` (#34).
    let start = Instant::now();
    let rows = loop {
        let rows = db.ok("admin", &["audit"]);
        if !rows["records"].as_array().unwrap().is_empty() {
            break rows;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no audit line for the killed write");
        std::thread::sleep(Duration::from_millis(200));
    };
    let r = &rows["records"][0];
    assert_eq!(
        (r["verb_key"].as_str(), r["ok"].as_bool(), r["code"].as_str(), r["outcome"].as_str()),
        (Some("save"), Some(false), None, Some("unknown")),
        "{rows}"
    );
    assert_eq!((r["tenant"].as_str(), r["principal"].as_str()), (Some("acme"), Some("ana")));
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_audit_intents").trim(), "0");
    assert_eq!(db.ok("admin", &["audit", "verify"])["ok"], true);
}
