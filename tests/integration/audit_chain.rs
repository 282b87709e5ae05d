//! The tamper-evident audit log, attacked as someone with write access to `$HCP_HOME` would: every edit,
//! deletion, insertion, reordering, cut tail and emptying is named by `hcpx audit verify`, across rotation.

use serde_json::{json, Value};
use std::fs;

use crate::helpers::{repo, stdout_json, Home};

/// A store with ledger installed and `n` audited (denied) writes.
fn home_with_writes(n: usize, env: &[(&str, &str)]) -> Home {
    let h = Home::new();
    let ledger = repo().join("packs/ledger");
    assert!(h.run(&["install", ledger.to_str().unwrap()]).status.success());
    assert!(h.run(&["activate", "ledger"]).status.success());
    for i in 0..n {
        let amount = format!("amount={}.00", i + 1);
        let (code, out) = h.exec_env("ledger", "transfer", &[&amount, "payee=demo-transit"], env);
        assert_eq!((code, out["code"].as_str()), (1, Some("confirm_required")), "{out}");
    }
    h
}

fn verify(h: &Home, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["audit", "verify", "--json"];
    args.extend_from_slice(extra);
    let out = h.run(&args);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

fn lines(h: &Home) -> Vec<String> {
    fs::read_to_string(h.store().join("audit.log")).unwrap().lines().map(String::from).collect()
}

fn write_lines(h: &Home, lines: &[String]) {
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    fs::write(h.store().join("audit.log"), text).unwrap();
}

fn broken(v: &Value) -> (String, u64) {
    (v["broken"]["kind"].as_str().unwrap_or("none").to_string(), v["broken"]["line"].as_u64().unwrap_or(0))
}

#[test]
fn an_intact_chain_verifies_and_names_its_head() {
    let h = home_with_writes(4, &[]);
    let (code, v) = verify(&h, &[]);
    assert_eq!((code, v["ok"].clone(), v["lines"].clone()), (0, json!(true), json!(4)), "{v}");
    let head = v["head"].as_str().unwrap().to_string();
    assert_eq!(head.len(), 64);
    // Each line names the one before.
    let recs: Vec<Value> = lines(&h).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(recs.iter().all(|r| r["prev"].as_str().is_some_and(|p| p.len() == 64)));
    // A head kept elsewhere still verifies after more writes.
    let (code, out) = h.exec("ledger", "transfer", &["amount=9.00", "payee=demo-transit"]);
    assert_eq!(code, 1, "{out}");
    let (code, v) = verify(&h, &["--head", &head]);
    assert_eq!((code, v["lines"].clone()), (0, json!(5)), "{v}");
    let text = h.run(&["audit", "verify"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("audit chain intact: 5 line(s)"));
}

#[test]
fn verify_names_an_edited_a_deleted_an_inserted_and_a_reordered_line() {
    type Tamper = Box<dyn Fn(&mut Vec<String>)>;
    let cases: Vec<(&str, Tamper, (&str, u64))> = vec![
        (
            "edited",
            Box::new(|l: &mut Vec<String>| l[1] = l[1].replace("\"ok\":false", "\"ok\":true")),
            ("link", 3),
        ),
        ("deleted", Box::new(|l: &mut Vec<String>| drop(l.remove(1))), ("link", 2)),
        ("inserted", Box::new(|l: &mut Vec<String>| l.insert(2, l[0].clone())), ("link", 3)),
        ("reordered", Box::new(|l: &mut Vec<String>| l.swap(1, 2)), ("link", 2)),
        ("garbage", Box::new(|l: &mut Vec<String>| l.insert(1, "{}".into())), ("not_a_record", 2)),
        ("first removed", Box::new(|l: &mut Vec<String>| drop(l.remove(0))), ("genesis", 1)),
        (
            "last edited",
            Box::new(|l: &mut Vec<String>| l[3] = l[3].replace("\"ok\":false", "\"ok\":true")),
            ("head", 4),
        ),
        ("tail cut", Box::new(|l: &mut Vec<String>| drop(l.pop())), ("truncated", 3)),
        ("emptied", Box::new(|l: &mut Vec<String>| l.clear()), ("emptied", 0)),
    ];
    for (what, tamper, want) in cases {
        let h = home_with_writes(4, &[]);
        let mut l = lines(&h);
        tamper(&mut l);
        write_lines(&h, &l);
        let (code, v) = verify(&h, &[]);
        assert_eq!((code, broken(&v)), (1, (want.0.to_string(), want.1)), "{what}: {v}");
        assert!(!v["broken"]["message"].as_str().unwrap().is_empty());
    }
}

#[test]
fn a_removed_log_or_head_is_caught() {
    let h = home_with_writes(2, &[]);
    fs::remove_file(h.store().join("audit.log")).unwrap();
    let (code, v) = verify(&h, &[]);
    assert_eq!((code, broken(&v).0.as_str()), (1, "emptied"), "{v}");
    let h = home_with_writes(2, &[]);
    fs::remove_file(h.store().join("audit.head")).unwrap();
    let (code, v) = verify(&h, &[]);
    assert_eq!((code, broken(&v).0.as_str()), (1, "no_head"), "{v}");
    // A chain rewritten from scratch (log and head both replaced) verifies on its own, but not against a head
    // kept elsewhere.
    let h = home_with_writes(2, &[]);
    let old = verify(&h, &[]).1["head"].as_str().unwrap().to_string();
    fs::remove_file(h.store().join("audit.log")).unwrap();
    fs::remove_file(h.store().join("audit.head")).unwrap();
    let (code, out) = h.exec("ledger", "transfer", &["amount=1.00", "payee=demo-transit"]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(verify(&h, &[]).0, 0);
    let (code, v) = verify(&h, &["--head", &old]);
    assert_eq!((code, broken(&v).0.as_str()), (1, "anchor"), "{v}");
}

#[test]
fn rotation_keeps_the_chain_across_files() {
    let env = [("HCP_AUDIT_ROTATE_BYTES", "600")];
    let h = home_with_writes(6, &env);
    let (code, v) = verify(&h, &[]);
    assert_eq!((code, v["lines"].clone()), (0, json!(6)), "{v}");
    let files = v["files"].as_array().unwrap().len();
    assert!(files >= 3, "rotated into several files: {v}");
    // `hcpx audit` lists every file's lines, oldest first.
    let list = stdout_json(&h.run(&["audit", "--json"]));
    assert_eq!(list["records"].as_array().unwrap().len(), 6);
    // The first line of a new file points at the last line of the file before; a missing part is named.
    fs::remove_file(h.store().join("audit.log.1")).unwrap();
    let (code, v) = verify(&h, &[]);
    assert_eq!((code, broken(&v)), (1, ("missing_file".to_string(), 0)), "{v}");
}

#[test]
fn a_project_mode_write_records_its_project() {
    let h = Home::new();
    let pack = repo().join("packs/sqlite");
    for args in
        [vec!["install", pack.to_str().unwrap()], vec!["activate", "sqlite"], vec!["allow", "sqlite3"]]
    {
        assert!(h.run(&args).status.success());
    }
    let project = h.t.join("project");
    fs::create_dir_all(&project).unwrap();
    let out = h.run(&[
        "exec",
        "sqlite",
        "table.drop",
        "--project",
        project.to_str().unwrap(),
        "--json",
        "--",
        "database=shop.db",
        "table=scratch",
    ]);
    assert_eq!(stdout_json(&out)["code"], "confirm_required");
    let rec: Value = serde_json::from_str(&lines(&h)[0]).unwrap();
    assert_eq!(rec["project_dir"], json!(project.to_str().unwrap()), "{rec}");
    // A workspace-mode pack's line has none.
    let h = home_with_writes(1, &[]);
    let rec: Value = serde_json::from_str(&lines(&h)[0]).unwrap();
    assert!(rec.get("project_dir").is_none(), "{rec}");
}

#[test]
fn doctor_reports_the_chain() {
    let h = home_with_writes(2, &[]);
    let check = |h: &Home| {
        let v = stdout_json(&h.run(&["doctor", "--json"]));
        v["checks"].as_array().unwrap().iter().find(|c| c["check"] == "audit").cloned().unwrap_or_default()
    };
    let ok = check(&h);
    assert_eq!(ok["status"], "ok", "{ok}");
    assert!(ok["detail"].as_str().unwrap().contains("2 line(s)"), "{ok}");
    let mut l = lines(&h);
    l.swap(0, 1);
    write_lines(&h, &l);
    let broken = check(&h);
    assert_eq!(broken["status"], "error", "{broken}");
    assert!(broken["detail"].as_str().unwrap().contains("hcpx audit verify"), "{broken}");
}

crate::serve::on_both_stores! {
    /// #34 point 9: `--tenant` naming a tenant with no audited call is an error, not "intact: 0 lines"; the
    /// tenant that has lines verifies as before.
    fn verify_of_a_tenant_with_no_chain_is_an_error / verify_of_a_tenant_with_no_chain_is_an_error_postgres (h) {
        let ledger = repo().join("packs/ledger");
        assert!(h.run(&["install", ledger.to_str().unwrap()]).status.success());
        assert!(h.run(&["activate", "ledger"]).status.success());
        let (code, out) = h.exec("ledger", "transfer", &["amount=1.00", "payee=demo-transit"]);
        assert_eq!((code, out["code"].as_str()), (1, Some("confirm_required")), "{out}");
        let rows = stdout_json(&h.run(&["audit", "--json"]));
        let tenant = rows["records"][0]["tenant"].as_str().unwrap_or_else(|| panic!("{rows}")).to_string();
        let out = h.run(&["audit", "verify", "--tenant", "no-such-tenant"]);
        let said = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("\"no-such-tenant\" has no audit chain") && !said.contains("intact"), "{said}");
        let out = h.run(&["audit", "verify", "--tenant", &tenant]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("intact: 1 line(s)"));
    }
}
