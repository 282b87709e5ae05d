//! The built-in bootstrap pack `hcp-cli`: reads answer in-process, store changes are deferred to the CLI.

use serde_json::json;

use crate::helpers::{repo, Home};

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
