//! `hcpx config` (#38 point 1): the operator settings of `sandbox.json` shown, set and unset by command on the
//! file store and on PostgreSQL, checked by the runtime's own loader before anything is written (a refused value
//! leaves the document byte for byte), shown old → new, audited with the operator Principal; on three replicas
//! of one database a change made with the CLI is in force at every replica's next call, and a stored document
//! that does not load makes `/readyz` answer 503 on every replica until `hcpx config` fixes it.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::helpers::{stdout_json, Home};
use crate::serve::{request, Server};
use crate::store_pg::{write_pack, PgStore};
use crate::store_pg_replicas::Replica;

/// `hcpx ARGS --json` in `h`: (exit code, document).
fn run(h: &Home, args: &[&str]) -> (i32, Value) {
    let out = h.run(&[args, &["--json"]].concat());
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

/// The setting `key` as `hcpx config show KEY --json` lists it: (value, whether it is the default).
fn shown(h: &Home, key: &str) -> (Value, bool) {
    let (code, v) = run(h, &["config", "show", key]);
    assert_eq!(code, 0, "{v}");
    let s = &v["settings"][0];
    (s["value"].clone(), s["default"].as_bool().unwrap())
}

/// The audit records that record a setting's change.
fn setting_lines(h: &Home) -> Vec<Value> {
    h.audit_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("setting").is_some())
        .collect()
}

/// The operator Principal the CLI acts as (`USER`, as `Principal::local` names it).
fn operator() -> String {
    std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "local".into())
}

crate::serve::on_both_stores! {
    /// Show, set and unset on either store: defaults marked, the change shown old → new, the document
    /// holding it, the runtime reading it, and an audit line naming the operator, the key, old and new.
    fn config_sets_shows_and_unsets_every_setting / config_sets_shows_and_unsets_every_setting_postgres(h) {
        let (code, all) = run(&h, &["config", "show"]);
        assert_eq!(code, 0, "{all}");
        let keys: Vec<&str> = all["settings"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
        for k in ["timeout_ms", "max_output_bytes", "memory_mb", "require", "disable", "allow_components",
                  "max_processes", "wrap_memory_mb", "human_approval.commands", "human_approval.ttl_s",
                  "tasks.after_ms", "tasks.keep_ms", "egress.hosts", "egress.internal", "packs"] {
            assert!(keys.contains(&k), "{k} missing from {keys:?}");
        }
        assert_eq!(shown(&h, "timeout_ms"), (json!(60000), true));

        let (code, v) = run(&h, &["config", "set", "timeout_ms", "30000"]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["changes"], json!([{ "key": "timeout_ms", "old": null, "new": 30000, "default": 60000 }]));
        assert_eq!(shown(&h, "timeout_ms"), (json!(30000), false));
        let text = h.run(&["config", "set", "require", "full"]);
        assert_eq!(text.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&text.stdout).trim(), "require: (not set) → \"full\"");
        let (code, v) = run(&h, &["config", "set", "human_approval.commands", r#"[{"pack_id": "ledger", "verb_keys": ["transfer"]}]"#]);
        assert_eq!(code, 0, "{v}");
        let (code, v) = run(&h, &["config", "set", "tasks.after_ms", "2500"]);
        assert_eq!(code, 0, "{v}");
        let (code, v) = run(&h, &["config", "set", "packs.notes.write", r#"["/srv/notes"]"#]);
        assert_eq!(code, 0, "{v}");
        // The other commands read what `config` wrote: `hcpx tasks` reports the new after_ms.
        let (_, tasks) = run(&h, &["tasks"]);
        assert_eq!(tasks["after_ms"], 2500, "{tasks}");
        let (_, ha) = run(&h, &["config", "show", "human_approval"]);
        assert_eq!(ha["settings"][0]["value"], json!([{ "pack_id": "ledger", "verb_keys": ["transfer"] }]), "{ha}");
        assert_eq!(ha["settings"][1], json!({ "key": "human_approval.ttl_s", "value": 900, "default": true }));

        let (code, v) = run(&h, &["config", "unset", "timeout_ms"]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["changes"], json!([{ "key": "timeout_ms", "old": 30000, "new": null, "default": 60000 }]));
        assert_eq!(shown(&h, "timeout_ms"), (json!(60000), true));
        let (code, v) = run(&h, &["config", "unset", "human_approval"]);
        assert_eq!((code, v["changes"][0]["key"].as_str()), (0, Some("human_approval.commands")), "{v}");
        // Unsetting what is not set writes nothing and audits nothing.
        let before = setting_lines(&h).len();
        let (code, v) = run(&h, &["config", "unset", "timeout_ms"]);
        assert_eq!((code, v["changes"].clone()), (0, json!([])), "{v}");

        let lines = setting_lines(&h);
        assert_eq!(lines.len(), before);
        let me = operator();
        let set = &lines[0];
        assert_eq!((set["action"].as_str(), set["principal"].as_str(), set["invoker"].as_str()), (Some("config.set"), Some(me.as_str()), Some("cli")), "{set}");
        assert_eq!(set["setting"], json!({ "document": "sandbox.json", "key": "timeout_ms", "new": 30000 }));
        let unset = lines.iter().find(|l| l["action"] == "config.unset").unwrap();
        assert_eq!(unset["setting"], json!({ "document": "sandbox.json", "key": "timeout_ms", "old": 30000 }));
        let out = h.run(&["audit"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&format!("{me}@local via cli  config set sandbox.json timeout_ms: (not set) → 30000")), "{text}");
        let (code, v) = run(&h, &["audit", "verify"]);
        assert_eq!(code, 0, "{v}");
    }
}

crate::serve::on_both_stores! {
    /// A value the runtime's loader refuses, an unknown key, a key another command owns: refused with a stable
    /// code and a message naming the key and the fix, the document byte for byte as it was, nothing audited.
    fn a_refused_setting_writes_nothing / a_refused_setting_writes_nothing_postgres(h) {
        let (code, v) = run(&h, &["config", "set", "require", "full"]);
        assert_eq!(code, 0, "{v}");
        let stored = || -> String {
            match h.store_env.iter().find(|(k, _)| k == "HCP_STORE") {
                Some((_, url)) => crate::pg::cluster().psql(crate::pg::database_of(url), "SELECT body FROM hcpx_documents WHERE path = 'sandbox.json'"),
                None => std::fs::read_to_string(h.store().join("sandbox.json")).unwrap(),
            }
        };
        let before = stored();
        assert!(before.contains("full"), "{before}");
        let audited = setting_lines(&h).len();
        let cases: &[(&[&str], &str, &[&str])] = &[
            (&["timeout_ms", "fast"], "invalid_setting", &["timeout_ms", "whole number"]),
            (&["max_processes", "-1"], "invalid_setting", &["max_processes"]),
            (&["require", "strict"], "invalid_setting", &["require", "\"full\""]),
            (&["disable", r#"["landlock", "bogus"]"#], "invalid_setting", &["bogus"]),
            (&["human_approval.commands", r#"[{"pack_id": "Ledger"}]"#], "invalid_setting", &["\"Ledger\""]),
            (&["human_approval.elicitation", "false"], "invalid_setting", &["commands"]),
            (&["tasks.keep_ms", "10"], "invalid_setting", &["at least 1000"]),
            (&["timout_ms", "5"], "unknown_setting", &["did you mean timeout_ms"]),
            (&["human_approval.ttl", "5"], "unknown_setting", &["did you mean human_approval.ttl_s"]),
            (&["timeout_ms.x", "5"], "unknown_setting", &["timeout_ms"]),
            (&["packs.notes.hosts", r#"["api.test"]"#], "setting_has_command", &["hcpx allow-host"]),
            (&["allow", r#"["python3"]"#], "setting_has_command", &["hcpx allow"]),
            (&["packs.notes", r#"{"read": ["/"]}"#], "setting_has_command", &["one by one"]),
            (&["packs.notes.write", r#"["/"]"#], "invalid_setting", &["packs.notes.write"]),
        ];
        for (args, code_want, words) in cases {
            let (code, v) = run(&h, &[&["config", "set"][..], args].concat());
            assert_eq!((code, v["code"].as_str()), (1, Some(*code_want)), "{args:?}: {v}");
            let msg = v["error"].as_str().unwrap();
            for w in *words {
                assert!(msg.contains(w), "{args:?}: {msg:?} names {w:?}");
            }
        }
        assert_eq!(stored(), before, "a refused value leaves the document byte for byte");
        assert_eq!(setting_lines(&h).len(), audited, "a refusal changes nothing, so it audits no change");
    }
}

crate::serve::on_both_stores! {
    /// Eight operators setting eight keys at once: every change is in the document (read-modify-write under
    /// the store's lock), and each has its audit line.
    fn concurrent_config_sets_lose_no_change / concurrent_config_sets_lose_no_change_postgres(h) {
        let keys = ["timeout_ms", "max_output_bytes", "memory_mb", "max_processes", "max_open_files", "max_file_mb", "max_disk_mb", "wrap_memory_mb"];
        // The schema is in place before the race (a fresh database gets it at its first command).
        assert_eq!(run(&h, &["config", "show"]).0, 0);
        std::thread::scope(|s| {
            for (i, k) in keys.iter().enumerate() {
                let h = &h;
                s.spawn(move || {
                    let (code, v) = run(h, &["config", "set", k, &(100 + i).to_string()]);
                    assert_eq!(code, 0, "{k}: {v}");
                });
            }
        });
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(shown(&h, k), (json!(100 + i), false), "{k}");
        }
        assert_eq!(setting_lines(&h).len(), keys.len());
    }
}

/// A GET without a token: (status, body).
fn get(addr: &str, path: &str) -> (u16, Value) {
    let (s, _, v) = request(addr, "GET", path, None, None);
    (s, v)
}

/// Waits (at most 3 s) for `/readyz` at `addr` to answer 503: its body, or the last one it answered.
fn unready(addr: &str) -> Result<Value, Value> {
    let mut last = Value::Null;
    let found = within(Duration::from_secs(3), || {
        let (st, v) = get(addr, "/readyz");
        last = v;
        st == 503
    });
    if found {
        Ok(last)
    } else {
        Err(last)
    }
}

/// Polls `f` every 50 ms until it holds, for at most `limit`; whether it did.
fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The file store: a `sandbox.json` written by hand with a typo makes `/readyz` 503 naming the document and
/// the parse error (`/healthz` stays 200), and `hcpx config unset` of the typo brings it back to 200 without a
/// restart.
#[test]
fn a_sandbox_json_that_does_not_load_makes_readyz_503_until_config_fixes_it() {
    let h = Home::new();
    std::fs::create_dir_all(h.store()).unwrap();
    std::fs::write(h.store().join("sandbox.json"), r#"{ "memory_mb": 32 }"#).unwrap();
    let s = Server::start(&h, &[]);
    assert!(
        within(Duration::from_secs(5), || get(&s.addr, "/readyz").0 == 200),
        "ready once its packs are loaded"
    );
    std::fs::write(h.store().join("sandbox.json"), r#"{ "memory_mb": 32, "timout_ms": 5 }"#).unwrap();
    let last = unready(&s.addr).unwrap_or_else(|v| panic!("{v}"));
    assert_eq!(last["document"], "sandbox.json", "{last}");
    assert!(last["reason"].as_str().unwrap().contains("timout_ms"), "{last}");
    assert!(!last.to_string().contains(h.store().to_str().unwrap()), "no host path: {last}");
    assert_eq!(get(&s.addr, "/healthz").0, 200, "/healthz says whether the store answers, as before");

    // Any other change is refused while the typo is there; unsetting the typo fixes it.
    let (code, v) = run(&h, &["config", "set", "timeout_ms", "5000"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("settings_do_not_load")), "{v}");
    let (code, v) = run(&h, &["config", "unset", "timout_ms"]);
    assert_eq!((code, v["changes"][0]["old"].clone()), (0, json!(5)), "{v}");
    assert!(within(Duration::from_secs(3), || get(&s.addr, "/readyz").0 == 200));
    assert_eq!(shown(&h, "memory_mb"), (json!(32), false));

    // Text that is not JSON at all: not ready either; no command can change a key of it, and none says to
    // remove it (the defaults would drop the operator's settings); corrected by hand, ready again.
    let good = std::fs::read_to_string(h.store().join("sandbox.json")).unwrap();
    std::fs::write(h.store().join("sandbox.json"), "{ not json").unwrap();
    assert!(within(Duration::from_secs(3), || get(&s.addr, "/readyz").0 == 503));
    let (code, v) = run(&h, &["config", "unset", "memory_mb"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("settings_do_not_load")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("never remove it"), "{v}");
    std::fs::write(h.store().join("sandbox.json"), good).unwrap();
    assert!(within(Duration::from_secs(3), || get(&s.addr, "/readyz").0 == 200));
}

/// The file store: `principals.json` or `issuers.json` damaged by hand makes every token fail, so `/readyz` is
/// 503 naming that document (no host path) until it is restored, without a restart.
#[test]
fn a_principals_or_issuers_document_that_does_not_load_makes_readyz_503_until_restored() {
    let h = Home::new();
    let (code, v) = run(&h, &["principal", "add", "alice", "--tenant", "acme"]);
    assert_eq!(code, 0, "{v}");
    let s = Server::start(&h, &[]);
    assert!(within(Duration::from_secs(5), || get(&s.addr, "/readyz").0 == 200), "ready");
    for doc in ["principals.json", "issuers.json"] {
        let path = h.store().join(doc);
        let good = std::fs::read_to_string(&path).ok();
        std::fs::write(&path, "{ \"principals\": [ broken").unwrap();
        let last = unready(&s.addr).unwrap_or_else(|v| panic!("{doc}: {v}"));
        assert_eq!(last["document"], doc, "{last}");
        assert!(!last.to_string().contains(h.store().to_str().unwrap()), "no host path: {last}");
        match good {
            Some(text) => std::fs::write(&path, text).unwrap(),
            None => std::fs::remove_file(&path).unwrap(),
        }
        assert!(within(Duration::from_secs(3), || get(&s.addr, "/readyz").0 == 200), "{doc} restored");
    }
}

/// Three replicas of one database: `hcpx config set human_approval…` made with the CLI is in force at every
/// replica's next call (the write's notification makes each read the document again; no restart), and a stored
/// `sandbox.json` corrupted by hand (no notification) makes every replica's `/readyz` 503 until `hcpx config`
/// fixes it.
#[test]
fn config_on_postgres_reaches_every_replica_and_a_bad_document_unreadies_them_all() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("admin", &["install", pack.to_str().unwrap()]);
    db.ok("admin", &["activate", "transit-db"]);
    let alice = db.added(&["alice", "--tenant", "acme", "--grant", "verb.exec.write:*"]);
    let replicas: Vec<Replica> = (0..3).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    let follow = |r: &Replica, n: usize| {
        r.post(
            "/v1/exec/transit-db/follow",
            &alice,
            &json!({ "option": format!("opt-{n}"), "confirm": true }),
        )
    };
    for (i, r) in replicas.iter().enumerate() {
        let (st, v) = follow(r, i);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "before: {v}");
        assert!(within(Duration::from_secs(5), || get(&r.addr, "/readyz").0 == 200), "replica {i} ready");
    }

    let set = db.ok(
        "admin",
        &[
            "config",
            "set",
            "human_approval.commands",
            r#"[{"pack_id": "transit-db", "verb_keys": ["follow"]}]"#,
        ],
    );
    assert_eq!(set["store"], "postgres", "{set}");
    assert_eq!(set["changes"][0]["key"], "human_approval.commands", "{set}");
    // No call in between: each replica's next call after the set. The pause lets the write's notification
    // (sent at its commit) reach each replica's listener on a loaded machine (1 s); no replica is restarted.
    std::thread::sleep(Duration::from_millis(1000));
    let set_at = Instant::now();
    for (i, r) in replicas.iter().enumerate() {
        let (st, v) = follow(r, 10 + i);
        assert_eq!(
            (st, v["code"].as_str()),
            (428, Some("approval_pending")),
            "replica {i}, {:?} after the set: {v}",
            set_at.elapsed()
        );
    }
    let lines = db.ok("admin", &["audit"]);
    let line =
        lines["records"].as_array().unwrap().iter().find(|r| r["action"] == "config.set").unwrap().clone();
    assert_eq!(line["setting"]["key"], "human_approval.commands", "{line}");
    assert_eq!(line["principal"], operator().as_str(), "{line}");

    // A typo written by hand into the row, with no notification: every replica stops being ready.
    db.psql("UPDATE hcpx_documents SET body = '{\"human_approval\": {\"commands\": [], \"ttl\": 5}}' WHERE path = 'sandbox.json'");
    for (i, r) in replicas.iter().enumerate() {
        let last = unready(&r.addr).unwrap_or_else(|v| panic!("replica {i}: {v}"));
        assert_eq!(last["document"], "sandbox.json", "{last}");
        assert!(last["reason"].as_str().unwrap().contains("ttl"), "{last}");
        assert_eq!(get(&r.addr, "/healthz").0, 200);
    }
    let (code, v) = {
        let out = db.run("admin", &["config", "show", "--json"]);
        (out.status.code(), stdout_json(&out))
    };
    assert_eq!((code, v["code"].as_str()), (Some(1), Some("settings_do_not_load")), "{v}");
    db.ok("admin", &["config", "unset", "human_approval.ttl"]);
    for (i, r) in replicas.iter().enumerate() {
        assert!(within(Duration::from_secs(3), || get(&r.addr, "/readyz").0 == 200), "replica {i}");
    }
}
