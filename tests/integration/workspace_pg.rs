//! A workspace is one workspace (#38 point 3): three `hcpx serve` replicas on one PostgreSQL keep one state
//! of a `workspace`-mode pack's directory, not one each. A write through one replica is read through the
//! others; concurrent writes through different replicas lose nothing; a replica killed in the middle of a
//! writing call leaves the last committed state, on the others and on its own restart; composites (a
//! preopened directory) share it as wraps do; a workspace past `max_workspace_mb` is refused at the call, at
//! activation and at `store import`, and workspaces move in and out of the database with the store.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::helpers::{repo, stdout_json, Fixture, Home};
use crate::store_pg::PgStore;
use crate::store_pg_replicas::Replica;

const GRANTS: [&str; 2] = ["verb.exec.read:*", "verb.exec.write:*"];

/// Principal `id` of `tenant` with every read and write; its token.
fn principal(db: &PgStore, id: &str, tenant: &str) -> String {
    let mut args = vec![id, "--tenant", tenant];
    for g in GRANTS {
        args.extend(["--grant", g]);
    }
    db.added(&args)
}

fn exec(r: &Replica, token: &str, pack: &str, verb: &str, args: Value) -> Value {
    let (st, v) = r.post(&format!("/v1/exec/{pack}/{verb}"), token, &args);
    assert!(st == 200 || v["ok"] == false, "{st}: {v}");
    v
}

fn balance(r: &Replica, token: &str) -> String {
    let v = exec(r, token, "ledger", "status", json!({}));
    assert_eq!(v["ok"], true, "{v}");
    v["result"]["balance"].as_str().unwrap_or("not set up").to_string()
}

fn transfer(r: &Replica, token: &str, amount: &str) -> Value {
    exec(
        r,
        token,
        "ledger",
        "transfer",
        json!({ "amount": amount, "payee": "demo-transit", "confirm": true }),
    )
}

fn ledger(db: &PgStore) -> String {
    db.ok("admin", &["install", repo().join("packs/ledger").to_str().unwrap()]);
    db.ok("admin", &["activate", "ledger"]);
    principal(db, "alice", "acme")
}

fn three(db: &PgStore) -> Vec<Replica> {
    (1..=3).map(|i| Replica::start(db, &format!("r{i}"), &db.url)).collect()
}

/// Writes `sandbox.json` into the database, announced as hcpx announces a change.
fn sandbox(db: &PgStore, body: &str) {
    db.psql(&format!(
        "INSERT INTO hcpx_documents (path, body) VALUES ('sandbox.json', $hcpx${body}$hcpx$)
         ON CONFLICT (path) DO UPDATE SET body = EXCLUDED.body, sealed = NULL, updated_at = now();
         SELECT pg_notify('hcpx', 'doc')"
    ));
}

#[test]
fn a_ledger_write_on_one_replica_is_read_on_the_other_two() {
    let Some(db) = PgStore::new() else { return };
    let alice = ledger(&db);
    // Every Principal is there before the replicas start (a replica's cache of them lags a change by up to 1 s).
    let bo = principal(&db, "bo", "beta");
    let r = three(&db);
    for x in &r {
        assert_eq!(balance(x, &alice), "not set up", "a fresh ledger");
    }
    let paid = transfer(&r[0], &alice, "1.00");
    assert_eq!(paid["ok"], true, "{paid}");
    assert_eq!(balance(&r[1], &alice), "99.00", "replica 2 reads replica 1's write");
    assert_eq!(balance(&r[2], &alice), "99.00", "replica 3 reads replica 1's write");
    // And back: replica 1's copy is older than what replica 3 then writes.
    assert_eq!(transfer(&r[2], &alice, "2.00")["ok"], true);
    assert_eq!(balance(&r[0], &alice), "97.00");
    let list = exec(&r[1], &alice, "ledger", "list", json!({}));
    assert_eq!(list["result"]["entries"].as_array().map(Vec::len), Some(2), "{list}");
    // One row, at the version of its two writes (reads store nothing).
    assert_eq!(db.psql("SELECT tenant, pack, version FROM hcpx_workspaces").trim(), "acme|ledger|2");
    // Another tenant's ledger is its own, on every replica.
    assert_eq!(balance(&r[0], &bo), "not set up");
    assert_eq!(balance(&r[1], &bo), "not set up");
}

#[test]
fn concurrent_transfers_through_three_replicas_lose_nothing() {
    let Some(db) = PgStore::new() else { return };
    let alice = ledger(&db);
    let r = three(&db);
    const N: usize = 12;
    let answers: Vec<Value> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..N)
            .map(|i| {
                let (x, a) = (&r[i % 3], &alice);
                s.spawn(move || transfer(x, a, "1.00"))
            })
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    for v in &answers {
        assert_eq!(v["ok"], true, "{v}");
    }
    for x in &r {
        assert_eq!(balance(x, &alice), "88.00", "{N} transfers answered ok; every replica shows all of them");
    }
    let list = exec(&r[0], &alice, "ledger", "list", json!({}));
    assert_eq!(list["result"]["entries"].as_array().map(Vec::len), Some(N), "{list}");
}

/// A wrap pack `tally` in `workspace` mode: `add` counts up in the file `count`, `crash` writes 999 there and
/// then sleeps (the replica is killed meanwhile), `grow` writes `mb` MiB beside it, `link` plants a symbolic
/// link to a file of the replica's host, `get` reads it.
fn tally(db: &PgStore) {
    let mut f = Fixture::wrap();
    let verb = |d: &str, cli: Value| json!({ "description": d, "cli": cli });
    f.surface = json!({
        "id": "tally", "name": "Tally", "kind": "wrap", "cliBin": "tally",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/tally", "json_flag": [], "workspace": { "mode": "workspace" } },
        "verbs": {
            "add": verb("Count one more.", json!(["tally", "add"])),
            "get": verb("Read the count.", json!(["tally", "get"])),
            "crash": verb("Write, then hang.", json!(["tally", "crash"])),
            "link": verb("Plant a link to a file of the replica.", json!(["tally", "link"])),
            "grow": {
                "description": "Write a large file.", "cli": ["tally", "grow", "{{mb}}"],
                "args": { "type": "object", "properties": { "mb": { "type": "string", "description": "MiB" } }, "required": ["mb"] }
            }
        }
    });
    f.policy = json!({ "surface_id": "tally", "verbs": {
        "add": { "operation": "write" }, "crash": { "operation": "write" }, "link": { "operation": "write" },
        "grow": { "operation": "write" }, "get": { "operation": "read" } } });
    f.harness = "# Tally\n\nCounts in its workspace.\n".into();
    let script = r#"#!/bin/sh
n=$(cat count 2>/dev/null || echo 0)
case "$1" in
  add) n=$((n + 1)); echo "$n" > count ;;
  crash) echo 999 > count; sleep 30 ;;
  link) ln -s /etc/passwd stolen ;;
  grow) head -c $(($2 * 1048576)) /dev/zero > big ;;
esac
echo "{\"count\":$n}"
"#;
    f.files = vec![("bin/tally".into(), script.into(), true)];
    let src = db.t.join("src-tally");
    std::fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    db.ok("admin", &["install", dir.to_str().unwrap()]);
    db.ok("admin", &["activate", "tally"]);
}

fn count(r: &Replica, token: &str) -> Value {
    let v = exec(r, token, "tally", "get", json!({}));
    assert_eq!(v["ok"], true, "{v}");
    v["result"]["count"].clone()
}

/// Where replica `r` keeps its copy of tenant acme's workspace of `pack`.
fn local_copy(r: &Replica, pack: &str) -> PathBuf {
    r.home.join("hcp-home/tenants/acme/workspaces").join(pack)
}

#[test]
fn a_replica_killed_mid_write_leaves_the_last_committed_state() {
    let Some(db) = PgStore::new() else { return };
    tally(&db);
    let ana = principal(&db, "ana", "acme");
    let mut r = three(&db);
    assert_eq!(exec(&r[0], &ana, "tally", "add", json!({}))["result"]["count"], 1);
    assert_eq!(exec(&r[1], &ana, "tally", "add", json!({}))["result"]["count"], 2);
    // Replica 1 starts a write that changes the count, then hangs: killed while it runs.
    let (addr, token) = (r[0].addr.clone(), ana.clone());
    let caller = std::thread::spawn(move || {
        crate::serve::request(&addr, "POST", "/v1/exec/tally/crash", Some(&token), Some(b"{}")).0
    });
    let half = local_copy(&r[0], "tally").join("count");
    let start = Instant::now();
    while std::fs::read_to_string(&half).map(|s| s.trim().to_string()).ok().as_deref() != Some("999") {
        assert!(start.elapsed() < Duration::from_secs(20), "the write never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    r[0].kill();
    let _ = caller.join();
    // The others see the last committed state (and wait no longer than the dead replica's session).
    assert_eq!(count(&r[1], &ana), 2);
    assert_eq!(count(&r[2], &ana), 2);
    // Restarted on its own home, whose copy holds the half-written 999, it takes the committed state too.
    r[0].restart();
    assert_eq!(count(&r[0], &ana), 2);
    assert_eq!(std::fs::read_to_string(&half).unwrap().trim(), "2", "the half-written copy was replaced");
    assert_eq!(exec(&r[0], &ana, "tally", "add", json!({}))["result"]["count"], 3);
    assert_eq!(count(&r[2], &ana), 3);
}

#[test]
fn a_call_past_max_workspace_mb_is_refused_and_the_stored_state_stays() {
    let Some(db) = PgStore::new() else { return };
    tally(&db);
    let ana = principal(&db, "ana", "acme");
    // Set before the replicas start, so none serves a call under the default first.
    sandbox(&db, r#"{ "max_workspace_mb": 1 }"#);
    let r: Vec<Replica> = (1..=2).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    assert_eq!(exec(&r[0], &ana, "tally", "add", json!({}))["result"]["count"], 1);
    let (st, v) = r[0].post("/v1/exec/tally/grow", &ana, &json!({ "mb": "2" }));
    assert_eq!(
        (st, v["ok"].as_bool(), v["code"].as_str()),
        (403, Some(false), Some("sandbox_denied")),
        "{v}"
    );
    let error = v["error"].as_str().unwrap();
    assert!(error.contains("max_workspace_mb (1 MiB)") && error.contains("raise max_workspace_mb"), "{v}");
    assert!(error.contains("not kept"), "{v}");
    // Nothing of it was kept: not in the database, not on the replica that ran it.
    assert!(!local_copy(&r[0], "tally").join("big").exists(), "the refused call's file stayed");
    assert_eq!(db.psql("SELECT version, size < 1048576 FROM hcpx_workspaces").trim(), "1|t");
    assert_eq!(exec(&r[1], &ana, "tally", "add", json!({}))["result"]["count"], 2);
    assert_eq!(count(&r[0], &ana), 2);
}

#[test]
fn a_workspace_past_the_cap_is_refused_at_activation_not_at_the_first_call() {
    let Some(db) = PgStore::new() else { return };
    tally(&db);
    let ana = principal(&db, "ana", "acme");
    sandbox(&db, r#"{ "max_workspace_mb": 4 }"#);
    let r = Replica::start(&db, "r1", &db.url);
    let grown = exec(&r, &ana, "tally", "grow", json!({ "mb": "2" }));
    assert_eq!(grown["ok"], true, "{grown}");
    // `hcpx config` will not lower the cap below what a stored workspace holds: it says so now, naming the
    // workspace, not at its next call; the setting stays.
    let out = db.run("admin", &["config", "set", "max_workspace_mb", "1", "--json"]);
    let refused = stdout_json(&out);
    assert_eq!(
        (out.status.code(), refused["code"].as_str()),
        (Some(1), Some("invalid_setting")),
        "{refused}"
    );
    let said = refused["error"].as_str().unwrap_or_default();
    assert!(
        said.contains("tally's workspace of tenant acme") && said.contains("at least 3 MiB"),
        "{refused}"
    );
    let shown = db.ok("admin", &["config", "show", "max_workspace_mb"]);
    assert_eq!(shown["settings"][0]["value"], 4, "{shown}");
    db.ok("admin", &["config", "set", "max_workspace_mb", "3"]);
    // Written by hand below what acme's workspace holds, the operator then re-activates the pack.
    sandbox(&db, r#"{ "max_workspace_mb": 1 }"#);
    db.ok("admin", &["deactivate", "tally", "--tenant", "acme"]);
    for args in [&["activate", "tally", "--tenant", "acme"][..], &["activate", "tally"][..]] {
        let out = db.run("admin", args);
        let said = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("tally's workspace of tenant acme")
                && said.contains("max_workspace_mb (1 MiB)")
                && said.contains("at least 3 MiB"),
            "{said}"
        );
    }
    // Another tenant's activation is not held up by acme's workspace.
    principal(&db, "bo", "beta");
    db.ok("admin", &["activate", "tally", "--tenant", "beta"]);
    sandbox(&db, r#"{ "max_workspace_mb": 3 }"#);
    db.ok("admin", &["activate", "tally", "--tenant", "acme"]);
}

/// A file store (an `HCP_HOME`) with `tally` installed and acme's workspace holding `count` and `mb` MiB.
fn file_store_with_workspace(mb: usize, cap_mb: u64) -> Home {
    let h = Home::new();
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "tally", "name": "Tally", "kind": "wrap", "cliBin": "tally",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/tally", "json_flag": [], "workspace": { "mode": "workspace" } },
        "verbs": { "get": { "description": "Read the count.", "cli": ["tally", "get"] } }
    });
    f.policy = json!({ "surface_id": "tally", "verbs": { "get": { "operation": "read" } } });
    f.harness = "# Tally\n\nCounts in its workspace.\n".into();
    f.files = vec![("bin/tally".into(), "#!/bin/sh\necho \"{\\\"count\\\":$(cat count)}\"\n".into(), true)];
    h.install(&f, "tally");
    let ws = h.store().join("tenants/acme/workspaces/tally");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("count"), "41\n").unwrap();
    std::fs::write(ws.join("big"), vec![7u8; mb << 20]).unwrap();
    h.write_store("sandbox.json", &json!({ "max_workspace_mb": cap_mb }).to_string());
    h
}

fn import(db: &PgStore, from: &Path) -> std::process::Output {
    db.run("admin", &["store", "import", from.to_str().unwrap(), "--json"])
}

#[test]
fn store_import_refuses_a_workspace_past_the_cap_and_moves_the_others_in_and_out() {
    let Some(db) = PgStore::new() else { return };
    let h = file_store_with_workspace(2, 1);
    let out = import(&db, &h.store());
    let said = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("max_workspace_mb (1 MiB)") && said.contains("nothing was imported"), "{said}");
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_documents").trim(), "0", "refused, nothing was written");
    // Under the cap it moves in, and a replica serves it.
    h.write_store("sandbox.json", r#"{ "max_workspace_mb": 4 }"#);
    let out = import(&db, &h.store());
    let said = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["moved"]["workspaces"], 1, "{v}");
    let ana = principal(&db, "ana", "acme");
    db.ok("admin", &["activate", "tally", "--tenant", "acme"]);
    let r = Replica::start(&db, "r1", &db.url);
    assert_eq!(count(&r, &ana), 41, "the imported workspace is the one served");
    // And out again.
    let out_dir = db.t.join("exported");
    let v = db.ok("admin", &["store", "export", out_dir.to_str().unwrap()]);
    assert_eq!(v["moved"]["workspaces"], 1, "{v}");
    let ws = out_dir.join("tenants/acme/workspaces/tally");
    assert_eq!(std::fs::read_to_string(ws.join("count")).unwrap(), "41\n");
    assert_eq!(std::fs::metadata(ws.join("big")).unwrap().len(), 2 << 20);
}

#[test]
fn a_composite_shares_its_preopened_workspace_across_replicas() {
    let Some(db) = PgStore::new() else { return };
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "esc", "kind": "composite", "component": { "path": "./adapter.wasm" },
        "wrap": { "workspace": { "mode": "workspace" } },
        "verbs": {
            "run": { "description": "List the workspace." },
            "plant": { "description": "Write a file.", "args": { "type": "object", "properties": {
                "path": { "type": "string", "description": "Where" }, "text": { "type": "string", "description": "What" } },
                "required": ["path", "text"] } }
        }
    });
    f.policy = json!({ "surface_id": "esc", "verbs": {
        "run": { "operation": "read" }, "plant": { "operation": "write" } } });
    f.files.clear();
    f.harness = "# Esc\n\nA guest that writes its workspace.\n".into();
    if let Some(o) = f.surface.as_object_mut() {
        o.remove("stimulusTriggers");
    }
    let src = db.t.join("src-esc");
    std::fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    let wasm = repo().join("guest-adapters/target/wasm32-wasip2/release/test_escape.wasm");
    std::fs::copy(wasm, dir.join("adapter.wasm")).unwrap();
    db.ok("admin", &["install", dir.to_str().unwrap()]);
    db.ok("admin", &["activate", "esc"]);
    let ana = principal(&db, "ana", "acme");
    let r: Vec<Replica> = (1..=2).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    let planted = exec(&r[0], &ana, "esc", "plant", json!({ "path": "notes/a.txt", "text": "hello" }));
    assert_eq!(
        (planted["ok"].as_bool(), planted["result"]["wrote"].as_bool()),
        (Some(true), Some(true)),
        "{planted}"
    );
    let listed = exec(&r[1], &ana, "esc", "run", json!({}));
    assert_eq!(listed["ok"], true, "{listed}");
    let inside: Vec<&str> =
        listed["result"]["inside"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(inside.contains(&"notes"), "replica 2's composite sees replica 1's file: {listed}");
    assert_eq!(std::fs::read_to_string(local_copy(&r[1], "esc").join("notes/a.txt")).unwrap(), "hello");
}

#[test]
fn a_link_planted_in_a_workspace_is_never_stored_nor_handed_to_another_replica() {
    let Some(db) = PgStore::new() else { return };
    tally(&db);
    let ana = principal(&db, "ana", "acme");
    let r: Vec<Replica> = (1..=2).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    assert_eq!(exec(&r[0], &ana, "tally", "add", json!({}))["result"]["count"], 1);
    // A link to the host's /etc/passwd: stored, it would carry the file of replica 1's host to every replica.
    let (st, v) = r[0].post("/v1/exec/tally/link", &ana, &json!({}));
    assert_eq!((st, v["code"].as_str()), (403, Some("sandbox_denied")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("stolen is neither a file nor a directory"), "{v}");
    assert_eq!(db.psql("SELECT version FROM hcpx_workspaces").trim(), "1", "the link's state was not stored");
    assert!(std::fs::symlink_metadata(local_copy(&r[0], "tally").join("stolen")).is_err(), "the link stayed");
    assert_eq!(exec(&r[1], &ana, "tally", "add", json!({}))["result"]["count"], 2);
    assert!(std::fs::symlink_metadata(local_copy(&r[1], "tally").join("stolen")).is_err());
}

#[test]
fn a_pack_installed_from_another_source_starts_with_an_empty_workspace_on_every_replica() {
    let Some(db) = PgStore::new() else { return };
    tally(&db);
    let ana = principal(&db, "ana", "acme");
    let r: Vec<Replica> = (1..=2).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    assert_eq!(exec(&r[0], &ana, "tally", "add", json!({}))["result"]["count"], 1);
    assert_eq!(count(&r[1], &ana), 1);
    // The same files from another directory: another source, which does not inherit the old pack's state.
    let other = db.t.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let cp = std::process::Command::new("cp").arg("-r").arg(db.t.join("src-tally/pack")).arg(&other).status();
    assert!(cp.unwrap().success());
    let v = db.ok("admin", &["install", other.join("pack").to_str().unwrap(), "--replace"]);
    assert_eq!(v["workspace_removed"], true, "{v}");
    db.ok("admin", &["activate", "tally"]);
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_workspaces").trim(), "0");
    // Each replica answers from the new install once it has seen the change (at most about a second).
    let settled = |x: &Replica| {
        let start = Instant::now();
        loop {
            let v = exec(x, &ana, "tally", "get", json!({}));
            if v["ok"] == true || start.elapsed() > Duration::from_secs(5) {
                return v;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let v = settled(&r[0]);
    assert_eq!(v["result"]["count"], 0, "replica 1's copy of the old pack's workspace is not served: {v}");
    assert_eq!(settled(&r[1])["result"]["count"], 0);
}
