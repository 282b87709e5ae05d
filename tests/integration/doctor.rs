//! The operator's view of a store (docs/hosting.md, Checking a fleet): `hcpx doctor` on PostgreSQL names the
//! database (its password masked), the schema version, the seal key and whether it opens every sealed row, the
//! replicas seen lately (three, one with the wrong seal key), each tenant's audit chain and `human_approval`;
//! on the files it names the back end and `HCP_HOME`. Beside it: `store migrate` on stdout, `install` and
//! `activate` naming the store they wrote, `audit --tenant`, `store export` naming the credentials it wrote
//! unsealed, the hosting guide's first block run in its order, and `serve` naming its store and its draining.

use serde_json::{json, Value};
use std::process::{Command, Output};

use crate::helpers::{repo, stdout_json, Home};
use crate::serve::Server;
use crate::store_pg::{write_key, write_pack, PgStore};

/// A password the URL carries (the test cluster trusts loopback and ignores it): no output may show it.
const URL_PASSWORD: &str = "pw-never-shown-4711";

/// `url` with `URL_PASSWORD` as its userinfo's password.
fn with_password(url: &str) -> String {
    url.replacen("postgres://hcpx@", &format!("postgres://hcpx:{URL_PASSWORD}@"), 1)
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `hcpx doctor --json` from home `name`, with `extra` environment: (exit code, report).
fn doctor(db: &PgStore, name: &str, extra: &[(&str, &str)]) -> (i32, Value, String) {
    let out = db.run_with(name, &["doctor", "--json"], extra, None);
    (out.status.code().unwrap_or(-1), stdout_json(&out), text(&out))
}

/// The check named `name` of a doctor report.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

/// Checks whose name starts with `prefix`.
fn checks<'a>(report: &'a Value, prefix: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"].as_str().unwrap().starts_with(prefix))
        .collect()
}

#[test]
fn doctor_on_postgres_names_the_database_the_seal_key_three_replicas_and_each_tenants_chain() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("a", &["install", pack.to_str().unwrap()]);
    db.ok("a", &["activate", "transit-db"]);
    let read = ["--grant", "verb.exec.read:*", "--grant", "verb.exec.write:*"];
    let alice = db.ok("a", &[&["principal", "add", "alice", "--tenant", "acme"][..], &read].concat())
        ["token"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = db.ok("a", &[&["principal", "add", "bob", "--tenant", "beta"][..], &read].concat())["token"]
        .as_str()
        .unwrap()
        .to_string();
    let set = db.run_with(
        "a",
        &["credential", "set", "github", "token", "--tenant", "acme"],
        &[],
        Some("gh-value-1"),
    );
    assert_eq!(set.status.code(), Some(0), "{}", text(&set));

    // Three replicas; the third started with another seal key than the store's.
    let wrong_key = db.t.join("wrong.key");
    write_key(&wrong_key, 2);
    let r0 = db.serve("r0", &db.key);
    let r1 = db.serve("r1", &db.key);
    let mut r2 = db.serve("r2", &wrong_key);
    // A confirmed write of each tenant (reads are not audited), each through another replica.
    let follow = json!({ "option": "opt-1", "confirm": true });
    for (server, token) in [(&r0, &alice), (&r1, &bob), (&r2, &alice)] {
        let (st, v) = server.post("/v1/exec/transit-db/follow", token, &follow);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    }

    // The operator's doctor, with the password in the URL it was given.
    let url = with_password(&db.url);
    let (code, report, all) = doctor(&db, "ops", &[("HCP_STORE", &url)]);
    assert!(!all.contains(URL_PASSWORD), "the password was shown: {all}");
    let store = &report["store"];
    assert_eq!(store["backend"], "postgres", "{report}");
    let port = url.rsplit(':').next().unwrap().split('/').next().unwrap().parse::<u64>().unwrap();
    let dbname = crate::pg::database_of(&db.url);
    assert_eq!(
        (
            &store["database"]["host"],
            &store["database"]["port"],
            &store["database"]["dbname"],
            &store["database"]["user"]
        ),
        (&json!("127.0.0.1"), &json!(port), &json!(dbname), &json!("hcpx")),
        "{report}"
    );
    assert!(store["database"]["url"].as_str().unwrap().contains("hcpx:***@"), "{report}");
    assert_eq!(store["schema"]["version"], store["schema"]["latest"], "{report}");
    assert!(store["schema"]["version"].as_i64().unwrap() >= 4, "{report}");
    // The seal key: its id (a digest), never the key; it opens the one sealed row.
    let key_id = store["seal"]["key_id"].as_str().unwrap().to_string();
    assert_eq!(key_id.len(), 16, "{report}");
    assert_eq!(
        (&store["seal"]["sealed"], &store["seal"]["opened"], &store["seal"]["failed"]),
        (&json!(1), &json!(1), &json!(0))
    );
    assert_eq!(check(&report, "seal key")["status"], "ok", "{report}");
    // Three replicas seen, each with its address; the one with the wrong key is a failure naming the fix.
    let recent = store["replicas"]["recent"].as_array().unwrap();
    let mut listens: Vec<&str> = recent.iter().map(|r| r["listen"].as_str().unwrap()).collect();
    listens.sort();
    let mut want = vec![r0.addr.as_str(), r1.addr.as_str(), r2.addr.as_str()];
    want.sort();
    assert_eq!(listens, want, "{report}");
    assert_eq!(store["replicas"]["quiet"], 0);
    let r2_row = recent.iter().find(|r| r["listen"] == r2.addr.as_str()).unwrap();
    assert_eq!(r2_row["pid"].as_u64().unwrap() as u32, r2.pid(), "{report}");
    assert_ne!(r2_row["seal_key_id"].as_str().unwrap(), key_id);
    let wrong = check(&report, &format!("replica {}", r2_row["id"]));
    assert_eq!(wrong["status"], "error", "{report}");
    let why = wrong["detail"].as_str().unwrap();
    assert!(why.contains(&r2.addr) && why.contains("HCP_SEAL_KEY_FILE") && why.contains(&key_id), "{why}");
    assert_eq!(checks(&report, "replica ").iter().filter(|c| c["status"] == "ok").count(), 2, "{report}");
    assert_eq!(code, 1, "a replica that cannot open the credentials is a failure: {report}");
    // Each tenant's chain on its own.
    let chains = store["audit_chains"].as_array().unwrap();
    for t in ["acme", "beta"] {
        let c =
            chains.iter().find(|c| c["tenant"] == t).unwrap_or_else(|| panic!("no chain of {t}: {report}"));
        assert!(c["ok"] == true && c["lines"].as_u64().unwrap() >= 1, "{c}");
    }
    assert!(store["human_approval"].is_null(), "{report}");
    assert!(check(&report, "human_approval")["detail"].as_str().unwrap().contains("not set"), "{report}");

    // The replica with the wrong key stops (killed: it never says so); an hour on, it went quiet.
    r2.kill();
    db.psql(&format!(
        "UPDATE hcpx_replicas SET last_seen = now() - interval '1 hour' WHERE pid = {}",
        r2.pid()
    ));
    // A tenant's chain edited in the database: that chain alone is broken, at its line.
    db.psql("UPDATE hcpx_audit SET line = replace(line, '\"follow\"', '\"FOLLOW\"') WHERE tenant = 'beta' AND n = 1");
    let out = db.run_with("ops", &["doctor"], &[], None);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("2 replica(s) of hcpx serve seen in the last minute; 1 went quiet"), "{said}");
    assert!(said.contains("postgres database postgres://hcpx@127.0.0.1:"), "{said}");
    let beta = said.lines().find(|l| l.contains("audit beta")).unwrap_or_else(|| panic!("{said}"));
    assert!(beta.starts_with("error") && beta.contains("line 1"), "{beta}");
    let acme = said.lines().find(|l| l.contains("audit acme")).unwrap();
    assert!(acme.starts_with("ok") && acme.contains("hash chain intact"), "{acme}");
    assert_eq!(out.status.code(), Some(1));

    // Without a key at all: the sealed row is a failure, and the replicas are held to the rows' key.
    let (code, report, _) = doctor(&db, "ops", &[("HCP_SEAL_KEY_FILE", "")]);
    assert_eq!(
        (&report["store"]["seal"]["key_id"], &report["store"]["seal"]["failed"]),
        (&json!(null), &json!(1))
    );
    let seal = check(&report, "seal key")["detail"].as_str().unwrap().to_string();
    assert!(seal.contains("HCP_SEAL_KEY_FILE is not set") && seal.contains(&key_id), "{seal}");
    assert_eq!(checks(&report, "replica ").iter().filter(|c| c["status"] == "ok").count(), 2, "{report}");
    assert_eq!(code, 1);

    // The operator's own CLI with the wrong key: no sealed row opens, and doctor says which key would.
    let (code, report, _) = doctor(&db, "ops", &[("HCP_SEAL_KEY_FILE", wrong_key.to_str().unwrap())]);
    assert_eq!(
        (&report["store"]["seal"]["opened"], &report["store"]["seal"]["failed"]),
        (&json!(0), &json!(1))
    );
    let seal = check(&report, "seal key")["detail"].as_str().unwrap().to_string();
    assert!(seal.contains(&key_id) && seal.contains("point HCP_SEAL_KEY_FILE"), "{seal}");
    assert_eq!(code, 1);
}

#[test]
fn doctor_on_files_names_the_back_end_and_hcp_home() {
    let h = Home::new();
    h.write_store(
        "sandbox.json",
        r#"{ "human_approval": { "commands": [{ "pack_id": "ledger", "verb_keys": ["transfer"] }], "ttl_s": 120, "elicitation": false } }"#,
    );
    let out = h.run(&["doctor", "--json"]);
    let report = stdout_json(&out);
    assert_eq!(report["store"]["backend"], "files", "{report}");
    assert_eq!(report["store"]["home"], h.store().to_str().unwrap(), "{report}");
    assert!(
        report["store"].get("database").is_none() && report["store"].get("replicas").is_none(),
        "{report}"
    );
    let store = check(&report, "store")["detail"].as_str().unwrap().to_string();
    assert_eq!(store, format!("files under HCP_HOME {}", h.store().display()));
    assert_eq!(check(&report, "audit")["status"], "ok", "{report}");
    assert_eq!(report["store"]["human_approval"]["ttl_s"], 120, "{report}");
    let approval = check(&report, "human_approval")["detail"].as_str().unwrap().to_string();
    assert!(
        approval.contains("ledger (transfer)")
            && approval.contains("120 s")
            && approval.contains("elicitation is off"),
        "{approval}"
    );
}

#[test]
fn store_migrate_says_from_which_version_to_which_on_stdout() {
    let Some(db) = PgStore::new() else { return };
    let first = db.run("a", &["store", "migrate"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let said = String::from_utf8_lossy(&first.stdout).to_string();
    assert!(said.contains("migrated the store's schema from version 0 to "), "{}", text(&first));
    assert!(said.starts_with("postgres://hcpx@127.0.0.1:"), "{said}");
    let again = db.ok("a", &["store", "migrate"]);
    assert_eq!(again["from"], again["schema_version"], "{again}");
    assert_eq!(again["schema_version"], again["latest"], "{again}");
    let third = db.run("a", &["store", "migrate"]);
    let said = String::from_utf8_lossy(&third.stdout).to_string();
    assert!(said.contains(&format!("already at version {}", again["latest"])), "{said}");
    // Migration 4 made the replicas' table.
    assert_eq!(db.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'hcpx_replicas'"), "1");
}

#[test]
fn doctor_reads_the_schema_as_it_is_and_never_migrates_it() {
    let Some(db) = PgStore::new() else { return };
    let tables = "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'hcpx%'";
    // A database no hcpx has opened: doctor says so and leaves it empty.
    let (code, report, _) = doctor(&db, "ops", &[]);
    assert_eq!(report["store"]["schema"]["version"], 0, "{report}");
    let said = check(&report, "schema");
    assert_eq!(said["status"], "warning", "{report}");
    assert!(said["detail"].as_str().unwrap().contains("run hcpx store migrate"), "{said}");
    assert_eq!(db.psql(tables), "0", "doctor wrote to the database it reports on");
    assert_ne!(code, 0);

    // An older schema (3, before the replicas' notes): a warning naming the fix, and it stays at 3.
    db.ok("a", &["store", "migrate"]);
    db.psql("DROP TABLE hcpx_replicas; UPDATE hcpx_schema SET version = 3");
    let (code, report, _) = doctor(&db, "ops", &[]);
    assert_eq!(
        (&report["store"]["schema"]["version"], &check(&report, "schema")["status"]),
        (&json!(3), &json!("warning"))
    );
    let said = check(&report, "schema")["detail"].as_str().unwrap().to_string();
    assert!(said.contains("older than this hcpx's") && said.contains("hcpx store migrate"), "{said}");
    assert!(check(&report, "replicas")["detail"].as_str().unwrap().contains("schema version 4"), "{report}");
    assert_eq!(code, 2, "degraded but usable: {report}");
    assert_eq!(db.psql("SELECT version FROM hcpx_schema"), "3");

    // A newer one: an error, and nothing of it rewritten.
    db.ok("a", &["store", "migrate"]);
    db.psql("UPDATE hcpx_schema SET version = 999");
    let (code, report, _) = doctor(&db, "ops", &[]);
    let said = check(&report, "schema");
    assert_eq!(said["status"], "error", "{report}");
    assert!(said["detail"].as_str().unwrap().contains("999, newer than this hcpx's"), "{said}");
    assert_eq!(code, 1);
    assert_eq!(db.psql("SELECT version FROM hcpx_schema"), "999");
}

#[test]
fn install_and_activate_say_which_store_they_wrote() {
    let Some(db) = PgStore::new() else { return };
    let url = with_password(&db.url);
    let pack = write_pack(db.t.path());
    let env = [("HCP_STORE", url.as_str())];
    let masked = url.replace(URL_PASSWORD, "***");
    let install = db.run_with("a", &["install", pack.to_str().unwrap()], &env, None);
    let said = text(&install);
    assert_eq!(install.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("installed transit-db in {masked}")) && !said.contains(URL_PASSWORD),
        "{said}"
    );
    db.ok("a", &["principal", "add", "alice", "--tenant", "acme"]);
    let activate = db.run_with("a", &["activate", "transit-db", "--tenant", "acme"], &env, None);
    let said = text(&activate);
    assert!(said.contains(&format!("activated transit-db for tenant acme in {masked}")), "{said}");
    assert!(!said.contains(URL_PASSWORD), "{said}");
    let json = db.run_with("a", &["activate", "transit-db", "--json"], &env, None);
    assert_eq!(stdout_json(&json)["store"], masked.as_str());

    // The files: the HCP_HOME path.
    let h = Home::new();
    let out = h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]);
    assert!(
        text(&out).contains(&format!("installed ledger in HCP_HOME {}", h.store().display())),
        "{}",
        text(&out)
    );
    let out = h.run(&["activate", "ledger"]);
    assert!(
        text(&out).contains(&format!("activated ledger in HCP_HOME {}", h.store().display())),
        "{}",
        text(&out)
    );
}

/// Two tenants' confirmed writes through `hcpx serve` on `h`'s store; `hcpx audit --tenant` shows each one's
/// alone and refuses a tenant the store does not know.
fn audit_of_one_tenant(h: &Home) {
    let pack = write_pack(h.t.path());
    for args in [vec!["install", pack.to_str().unwrap()], vec!["activate", "transit-db"]] {
        let out = h.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let all = ["verb.exec.read:*", "verb.exec.write:*"];
    let alice = crate::serve::principal(h, "alice", "acme", &all, false);
    let bob = crate::serve::principal(h, "bob", "beta", &all, false);
    let s = Server::start(h, &[]);
    let follow = json!({ "option": "opt-1", "confirm": true });
    for token in [&alice, &bob, &bob] {
        let (st, v) = s.post("/v1/exec/transit-db/follow", token, &follow);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    }
    for (tenant, n) in [("acme", 1), ("beta", 2)] {
        let out = h.run(&["audit", "--tenant", tenant, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let v = stdout_json(&out);
        let records = v["records"].as_array().unwrap();
        assert_eq!(records.len(), n, "{v}");
        assert!(records.iter().all(|r| r["tenant"] == tenant), "{v}");
    }
    let out = h.run(&["audit", "--tenant", "acme"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("alice@acme"), "{}", text(&out));
    let out = h.run(&["audit", "--tenant", "nobody"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        said.contains("tenant \"nobody\" is not a tenant of this store") && said.contains("acme, beta"),
        "{said}"
    );
}

#[test]
fn audit_of_one_tenant_on_files() {
    audit_of_one_tenant(&Home::sharing_compiles());
}

#[test]
fn audit_of_one_tenant_on_postgres() {
    if crate::pg::unavailable() {
        return;
    }
    let mut h = Home::postgres();
    if let Some(dir) = crate::helpers::shared_compile_cache() {
        h.store_env.push(("HCP_CACHE_DIR".into(), dir.into()));
    }
    audit_of_one_tenant(&h);
}

#[test]
fn store_export_names_each_credential_it_wrote_unsealed_never_its_value() {
    let Some(db) = PgStore::new() else { return };
    db.ok("a", &["principal", "add", "alice", "--tenant", "acme"]);
    for (args, value) in [
        (vec!["credential", "set", "github", "token", "--tenant", "acme"], "acme-secret-value"),
        (vec!["credential", "set", "mail", "password"], "local-secret-value"),
    ] {
        let out = db.run_with("a", &args, &[], Some(value));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let dir = db.t.join("exported");
    let out = db.run("a", &["store", "export", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("2 credential document(s) unsealed"), "{said}");
    assert!(
        said.contains("tenants/acme/credentials/github.json") && said.contains("credentials/mail.json"),
        "{said}"
    );
    assert!(!said.contains("secret-value"), "{said}");
    let json = db.run("b", &["store", "export", db.t.join("again").to_str().unwrap(), "--json"]);
    let v = stdout_json(&json);
    assert_eq!(
        v["moved"]["unsealed"],
        json!(["credentials/mail.json", "tenants/acme/credentials/github.json"]),
        "{v}"
    );
}

/// The hcpx commands of docs/hosting.md's first block, in its order, as an operator types them (the
/// database, its password file and the key the test's own; the server on loopback).
fn first_block() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/hosting.md")).unwrap();
    let start = doc.find("## Running it").unwrap();
    let block = &doc[start..];
    let block = &block[block.find("```sh\n").unwrap() + 6..];
    let block = &block[..block.find("```").unwrap()];
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap().trim())
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .flat_map(|l| l.split(" && ").map(str::to_string).collect::<Vec<_>>())
        .collect()
}

/// A line's words, its single and double quotes taken off.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote) = (Vec::new(), String::new(), None);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[test]
fn the_hosting_guides_first_block_runs_in_its_order_against_postgres() {
    let Some(db) = PgStore::new() else { return };
    let lines = first_block();
    let activate_for_tenant =
        lines.iter().position(|l| l.starts_with("hcpx activate") && l.contains("--tenant"));
    let principal = lines.iter().position(|l| l.starts_with("hcpx principal add"));
    let (Some(activate_for_tenant), Some(principal)) = (activate_for_tenant, principal) else {
        panic!("the first block shows no `hcpx activate … --tenant` step beside its `hcpx principal add`: {lines:#?}")
    };
    assert!(principal < activate_for_tenant, "{lines:#?}");
    let mut tokens = std::collections::HashMap::new();
    let mut served = None;
    for line in &lines {
        let (stdin, cmd) = match line.split_once(" | ") {
            Some((_, cmd)) => (Some("tok-from-the-guide"), cmd.trim()),
            None => (None, line.as_str()),
        };
        let w = words(cmd);
        // `hcpx …`, or `NAME=VALUE … hcpx …`; any other program is the operator's own step.
        let Some(at) = w.iter().position(|x| !x.contains('=')).filter(|&i| w[i] == "hcpx") else { continue };
        let mut args: Vec<String> = w[at + 1..].to_vec();
        if args.first().is_some_and(|a| a == "serve") {
            served = Some(args);
            continue;
        }
        if args.starts_with(&["store".into(), "import".into()]) {
            continue; // optional: there is no one-machine store to move in here
        }
        if let Some(p) = args.iter_mut().find(|a| a.starts_with("packs/")) {
            *p = repo().join(&*p).display().to_string();
        }
        args.push("--json".into());
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = db.run_with("operator", &refs, &[], stdin);
        assert_eq!(out.status.code(), Some(0), "`{line}` failed in the guide's order: {}", text(&out));
        if args[0] == "principal" {
            let t = stdout_json(&out)["token"].as_str().map(str::to_string);
            tokens.insert(args[2].clone(), t.expect("principal add prints the token"));
        }
    }
    let served = served.expect("the block starts a replica");
    assert!(served.iter().any(|a| a == "--allow-host"), "{served:?}");
    let token =
        |id: &str| tokens.get(id).unwrap_or_else(|| panic!("the block adds no Principal {id}")).clone();
    let (alice, bob, ops) = (token("alice"), token("bob"), token("ops"));
    // Three replicas, as the block says "on each replica"; each request goes to the next.
    let fleet: Vec<Server> = (0..3).map(|i| db.serve(&format!("replica-{i}"), &db.key)).collect();
    let plan = json!({ "from": "A", "to": "B" });
    for (who, t) in [("alice of acme", &alice), ("bob of globex", &bob)] {
        let (st, v) = fleet[0].post("/v1/exec/transit-composite/plan", t, &plan);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{who} calls as the guide set them up: {v}");
    }
    let (st, v) = fleet[1].post("/v1/exec/ledger/status", &bob, &json!({}));
    assert_ne!(st, 200, "globex's ledger is not activated: {v}");
    // A payment of acme waits for a person, whatever its caller says; the operator's CLI lists it.
    let pay = json!({ "amount": "2.80", "payee": "demo-transit", "confirm": true });
    let (st, v) = fleet[2].post("/v1/exec/ledger/transfer", &alice, &pay);
    assert_eq!((st, v["code"].as_str()), (428, Some("approval_pending")), "{v}");
    let waiting = stdout_json(&db.run_with("operator", &["approve", "--json"], &[], None));
    assert_eq!(waiting["pending"].as_array().map(Vec::len), Some(1), "{waiting}");
    // ops's token reads each replica's /metrics, which names the tenants whose calls that replica served.
    let scrape = |s: &Server| {
        let (st, _, page) = crate::serve::request_raw(&s.addr, "GET", "/metrics", Some(&ops), None, &[]);
        assert_eq!(st, 200, "{page}");
        page
    };
    let (page0, page1) = (scrape(&fleet[0]), scrape(&fleet[1]));
    let calls = |tenant: &str| format!("hcp_calls_total{{tenant=\"{tenant}\"");
    assert!(page0.contains(&calls("acme")) && page0.contains(&calls("globex")), "{page0}");
    assert!(page1.contains(&calls("globex")) && !page1.contains(&calls("acme")), "{page1}");
    // The payment waiting is the store's, so every replica reports it.
    assert!(page1.contains("hcp_approvals_waiting{tenant=\"acme\"} 1"), "{page1}");
}

/// Waits (at most 10 s) until `s` answers `/readyz` 200: its signal handlers are in place by then.
fn ready(s: &Server) {
    let start = std::time::Instant::now();
    while crate::serve::request(&s.addr, "GET", "/readyz", None, None).0 != 200 {
        assert!(start.elapsed() < std::time::Duration::from_secs(10), "{} never got ready", s.addr);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn serve_says_which_store_it_serves_and_when_it_starts_draining() {
    let Some(db) = PgStore::new() else { return };
    let url = with_password(&db.url);
    let home = db.home("r");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--drain-ms", "1500"])
        .env("HCP_HOME", home.join("hcp-home"))
        .env("HCP_STORE", &url)
        .env("HCP_SEAL_KEY_FILE", &db.key)
        .current_dir(&home);
    let mut s = Server::launch(cmd);
    let masked = url.replace(URL_PASSWORD, "***");
    let start = std::time::Instant::now();
    while !s.log().contains("hcpx serve: store:") && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = s.log();
    assert!(log.contains(&format!("hcpx serve: store: postgres {masked}")), "{log}");
    ready(&s);
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_replicas"), "1", "it notes itself for hcpx doctor");
    assert_eq!(s.terminate(), Some(0));
    let log = s.log();
    assert!(!log.contains(URL_PASSWORD), "{log}");
    let draining: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "draining")
        .unwrap_or_else(|| panic!("no draining line: {log}"));
    let message = draining["message"].as_str().unwrap();
    assert!(
        message.starts_with("draining: SIGTERM received, /readyz answers 503, stopping in 1.5 s"),
        "{message}"
    );
    // Stopped on purpose, it leaves the replicas' table: it did not go quiet.
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_replicas"), "0");

    // The files.
    let h = Home::new();
    let mut s = Server::start(&h, &[]);
    let start = std::time::Instant::now();
    while !s.log().contains("hcpx serve: store:") && start.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        s.log().contains(&format!("hcpx serve: store: files under HCP_HOME {}", h.store().display())),
        "{}",
        s.log()
    );
    ready(&s);
    assert_eq!(s.terminate(), Some(0));
}

#[test]
fn a_served_tenants_hcp_doctor_names_no_database_no_replica_and_no_other_tenant() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("a", &["install", pack.to_str().unwrap()]);
    db.ok("a", &["activate", "transit-db"]);
    let all = ["--grant", "verb.exec.read:*", "--grant", "verb.exec.write:*"];
    let alice = db.ok("a", &[&["principal", "add", "alice", "--tenant", "acme"][..], &all].concat())["token"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = db.ok("a", &[&["principal", "add", "bob", "--tenant", "beta-corp"][..], &all].concat())
        ["token"]
        .as_str()
        .unwrap()
        .to_string();
    let ops = db.ok("a", &["principal", "add", "ops", "--tenant", "acme", "--operator"])["token"]
        .as_str()
        .unwrap()
        .to_string();
    // A served Principal may be in the local tenant too: over HTTP it is no operator's terminal.
    let carol = db.ok("a", &[&["principal", "add", "carol", "--tenant", "local"][..], &all].concat())
        ["token"]
        .as_str()
        .unwrap()
        .to_string();
    let s = db.serve("r0", &db.key);
    let (st, v) = s.post("/v1/exec/transit-db/follow", &bob, &json!({ "option": "opt-1", "confirm": true }));
    assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    // A tenant's own hcp.doctor: the runtime's health, not the fleet's whereabouts nor another tenant's name.
    for token in [&alice, &carol] {
        let (st, v) = s.post("/v1/exec/hcp-cli/hcp.doctor", token, &json!({}));
        assert_eq!(st, 200, "{v}");
        let said = v.to_string();
        assert!(v["result"].get("store").is_none(), "{v}");
        for hidden in ["beta-corp", crate::pg::database_of(&db.url), s.addr.as_str(), "seal key"] {
            assert!(!said.contains(hidden), "a tenant's hcp.doctor shows {hidden:?}: {said}");
        }
    }
    // The operator's GET /v1/doctor has it all.
    let (st, v) = s.get("/v1/doctor", &ops);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["store"]["replicas"]["recent"][0]["listen"], s.addr.as_str(), "{v}");
    assert!(v["store"]["audit_chains"].as_array().unwrap().iter().any(|c| c["tenant"] == "beta-corp"), "{v}");
}
