//! The built-in bootstrap pack `hcp-cli`: reads answer in-process, store changes are deferred to the CLI.

use serde_json::json;

use crate::helpers::{repo, stdout_json, Fixture, Home, TestDir};

#[test]
fn reads_answer_in_process() {
    let h = Home::new();
    assert_eq!(h.run(&["install", repo().join("packs/transit").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "transit"]).status.code(), Some(0));
    let (rc, out) = h.exec("hcp-cli", "hcp.list", &[]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["result"]["packs"][0]["id"], "transit");
    assert_eq!(out["result"]["packs"][0]["activated"], json!(true));
    let (_, out) = h.exec("hcp-cli", "hcp.availability", &["pack_id=transit"]);
    assert_eq!(out["result"]["runnable"], json!(true), "{out}");
    let (_, out) = h.exec("hcp-cli", "hcp.skill", &["pack_id=transit"]);
    assert!(out["result"]["lead"].as_str().unwrap().starts_with("# Transit"));
    let (_, out) = h.exec("hcp-cli", "hcp.doctor", &[]);
    assert_eq!(out["result"]["ok"], json!(true), "{out}");
    let (rc, out) = h.exec("hcp-cli", "hcp.availability", &[]);
    assert_eq!((rc, out["code"].as_str()), (1, Some("invalid_args")));
    let (_, out) = h.exec("hcp-cli", "hcp.nope", &[]);
    assert_eq!(out["code"], "no_policy");
}

#[test]
fn store_changes_are_deferred_to_the_cli_and_audited() {
    let h = Home::new();
    let (rc, out) = h.exec("hcp-cli", "hcp.install", &["dir=/tmp/x"]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["deferred_to_cli"], json!(true));
    assert!(out["hint"].as_str().unwrap().contains("`hcpx install /tmp/x`"), "{out}");
    assert!(!h.store().join("packs/x").exists());
    let audit = std::fs::read_to_string(h.store().join("audit.log")).unwrap();
    assert!(audit.contains("\"verb_key\":\"hcp.install\""));
    h.write_store("grants.json", r#"[{ "capability": "verb.exec.read", "pack_id": "*" }]"#);
    let (_, out) = h.exec("hcp-cli", "hcp.activate", &[]);
    assert_eq!(out["error"], "denied: missing verb.exec.write for hcp-cli.hcp.activate; grant it with `hcpx grant verb.exec.write:hcp-cli:hcp.activate`");
}

/// The CLI and the bootstrap pack render one typed report each: `hcpx list --json` is `hcp.list`'s result,
/// and so on for skill and doctor.
#[test]
fn the_cli_and_the_bootstrap_pack_give_the_same_reports() {
    let h = Home::new();
    assert_eq!(h.run(&["install", repo().join("packs/transit").to_str().unwrap()]).status.code(), Some(0));
    let cli = |args: &[&str]| -> serde_json::Value {
        let out = h.run(args);
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (_, list) = h.exec("hcp-cli", "hcp.list", &[]);
    assert_eq!(list["result"], cli(&["list", "--json"]));
    let (_, commands) = h.exec("hcp-cli", "hcp.commands", &["pack_id=transit"]);
    assert_eq!(commands["result"], cli(&["commands", "transit", "--json"]));
    let (_, skill) = h.exec("hcp-cli", "hcp.skill", &["pack_id=transit", "full=true"]);
    assert_eq!(skill["result"], cli(&["skill", "transit", "--full", "--json"]));
    let (_, doctor) = h.exec("hcp-cli", "hcp.doctor", &[]);
    let doctor_cli = cli(&["doctor", "--json"]);
    assert_eq!(doctor["result"]["checks"], doctor_cli["checks"]);
    assert_eq!(doctor["result"]["sandbox_layers"], doctor_cli["sandbox_layers"]);
    assert_eq!(doctor["result"]["status"], doctor_cli["status"]);
}

/// `hcp-cli` is a pack the store returns beside the installed ones, so every path that reads a pack reads it:
/// a dry run describes its calls (it answered `unknown_pack` when the id was special-cased only where a call
/// runs), a caller without a grant for it is refused by the ordinary grant step, and no installed pack can take
/// its id (an installed `hcp-cli` was accepted and then never reached).
#[test]
fn the_bootstrap_pack_is_a_pack_the_store_returns() {
    let h = Home::new();
    let out = h.run(&["exec", "--dry-run", "hcp-cli", "hcp.install", "--json", "--", "dir=./x"]);
    let dry = stdout_json(&out)["dry_run"].clone();
    assert_eq!(out.status.code(), Some(0), "{dry}");
    assert_eq!((dry["operation"].as_str(), dry["workdir_writable"].as_bool()), (Some("write"), Some(false)));
    assert!(dry["workdir"].as_str().unwrap().contains("`hcpx install ./x`"), "{dry}");
    assert!(!h.audit_log().contains("hcp.install"), "a dry run audits nothing");

    // Its id cannot be installed over.
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("hcp-cli");
    f.policy["surface_id"] = json!("hcp-cli");
    let src = TestDir::new();
    let dir = f.write(src.path());
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    let v = stdout_json(&out);
    assert!(v["error"].as_str().unwrap().contains("pack id hcp-cli is built into the runtime"), "{v}");
    assert!(!h.store().join("packs/hcp-cli").exists());

    // Grants decide who may call it, as for any pack.
    h.write_store("grants.json", r#"[{ "capability": "verb.exec.read", "pack_id": "ledger" }]"#);
    let (rc, out) = h.exec("hcp-cli", "hcp.list", &[]);
    assert_eq!((rc, out["code"].as_str()), (1, Some("denied")), "{out}");
    assert!(out["error"].as_str().unwrap().contains("hcpx grant verb.exec.read:hcp-cli:hcp.list"), "{out}");
    // And only a caller who may call it is pointed at it by a did-you-mean.
    let (_, out) = h.exec("hcp-clj", "hcp.list", &[]);
    assert_eq!(out["code"], "unknown_pack", "{out}");
    assert!(!out["error"].as_str().unwrap().contains("did you mean"), "{out}");
    h.write_store("grants.json", r#"[{ "capability": "verb.exec.read", "pack_id": "hcp-cli" }]"#);
    let (_, out) = h.exec("hcp-clj", "hcp.list", &[]);
    assert!(out["error"].as_str().unwrap().contains("did you mean `hcp-cli`?"), "{out}");
}
