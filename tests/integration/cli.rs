//! The CLI face: one JSON document on stdout with --json, messages on stderr, proof scripts, the twin face,
//! and titles on a terminal.

use serde_json::Value;
use std::process::Command;

use crate::helpers::{hcpx, repo, stdout_json, Home, TestDir};

fn setup_examples(h: &Home) {
    for p in ["ledger", "transit"] {
        let out = h.run(&["install", repo().join("packs").join(p).to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0));
    }
    assert_eq!(h.run(&["activate", "ledger", "transit"]).status.code(), Some(0));
}

#[test]
fn every_command_prints_exactly_one_json_document() {
    let h = Home::new();
    setup_examples(&h);
    let ledger = repo().join("packs/ledger");
    let calls: Vec<Vec<&str>> = vec![
        vec!["lint", ledger.to_str().unwrap()],
        vec!["install", ledger.to_str().unwrap()],
        vec!["activate", "ledger"],
        vec!["deactivate", "transit"],
        vec!["activate", "transit"],
        vec!["list"],
        vec!["availability", "ledger"],
        vec!["commands", "ledger"],
        vec!["skill", "ledger"],
        vec!["skill", "ledger", "--full"],
        vec!["exec", "transit", "plan", "A", "B"],
        vec!["exec", "nope", "x"],
        vec!["title", "ledger", "transfer", "amount=2.80", "payee=x"],
        vec!["allow", "jq"],
        vec!["disallow", "jq"],
        vec!["audit"],
        vec!["doctor"],
        vec!["credential", "list"],
        vec!["uninstall", "nope"],
        vec!["grant"],
        vec!["revoke", "verb.exec.write:*"],
        vec!["grant", "verb.exec.write:*"],
        vec!["completions", "bash"],
        vec!["commands", "ledger", "transfer"],
        vec!["commands", "hcp-cli"],
        vec!["skill", "hcp-cli"],
        vec!["availability", "hcp-cli"],
        vec!["audit", "--pack", "ledger", "--since", "1d", "--limit", "5"],
        vec!["nosuch"],
        vec!["exec"],
    ];
    for mut c in calls {
        c.push("--json");
        let out = h.run(&c);
        let v = stdout_json(&out);
        assert!(v.is_object(), "{c:?}");
        assert!(v.get("ok").is_some(), "{c:?}: {v}");
    }
}

#[test]
fn proof_scripts_pass_with_a_temp_home() {
    // The real-CLI packs' proofs also run `hcpx check --probe` (--strict where the CLI prints JSON).
    for p in ["ledger", "transit", "jq", "sqlite", "ip", "git"] {
        let t = TestDir::new();
        let out = Command::new("bash")
            .arg(repo().join("packs").join(p).join("proof.sh"))
            .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
            .env("HCP_HOME", t.join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{p} proof failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{p} proof: ok")));
    }
}

#[test]
fn twin_face_holds_on_both_example_packs() {
    let h = Home::new();
    setup_examples(&h);
    let direct = |pack: &str, bin: &str, argv: &[&str]| -> Value {
        let cwd = h.t.join(&format!("direct-{pack}"));
        std::fs::create_dir_all(&cwd).unwrap();
        let out = Command::new(repo().join("packs").join(pack).join("bin").join(bin))
            .args(argv)
            .current_dir(&cwd)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (_, v) = h.exec("transit", "plan", &["from=A", "to=B"]);
    assert_eq!(v["result"], direct("transit", "transit.mjs", &["plan", "A", "B", "--json"]));
    let (_, v) = h.exec("transit", "find", &["Central"]);
    assert_eq!(v["result"], direct("transit", "transit.mjs", &["find", "Central", "--json"]));
    let (_, v) = h.exec("ledger", "status", &[]);
    assert_eq!(v["result"], direct("ledger", "ledger.mjs", &["status", "--json"]));
    let (_, v) = h.exec("ledger", "transfer", &["amount=2.80", "payee=demo-transit", "confirm=true"]);
    assert_eq!(
        v["result"],
        direct("ledger", "ledger.mjs", &["transfer", "2.80", "--to", "demo-transit", "--confirm", "--json"])
    );
}

#[test]
fn human_output_goes_to_the_right_stream() {
    let h = Home::new();
    setup_examples(&h);
    let out = h.run(&["exec", "transit", "plan", "A", "B"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["optionId"], "opt-1");
    assert!(out.stderr.is_empty(), "no title without a TTY: {}", String::from_utf8_lossy(&out.stderr));
    let out = h.run(&["exec", "ledger", "transfer", "amount=2.80", "payee=demo-transit"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: confirm required (confirm_required)"));
    let out = h.run(&["title", "ledger", "list"]);
    assert_eq!(
        (out.status.code(), out.stdout.is_empty()),
        (Some(0), true),
        "no title declared: nothing, exit 0"
    );
    let out =
        h.run(&["title", "ledger", "transfer", "--result", "{}", "--", "amount=2.80", "payee=demo-transit"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Paid 2.80 to demo-transit");
    let out = h.run(&["commands", "transit", "--json"]);
    let v = stdout_json(&out);
    assert_eq!(v["commands"][1]["exec"], "hcpx exec transit plan -- from=A to=B");
    let out = h.run(&["skill", "transit"]);
    let lead = String::from_utf8_lossy(&out.stdout);
    assert!(lead.starts_with("# Transit") && !lead.contains("## Hot path"), "{lead}");
}

#[test]
fn usage_errors_exit_2_and_never_prompt() {
    let t = TestDir::new();
    let out = hcpx(t.path(), &["exec"]);
    assert_eq!(out.status.code(), Some(2));
    let out = hcpx(t.path(), &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_terminal_shows_the_live_then_the_done_title() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("util-linux `script` is needed for the TTY test (scripts/setup.sh installs it)");
    }
    let h = Home::new();
    setup_examples(&h);
    let bin = env!("CARGO_BIN_EXE_hcpx");
    let cmd =
        format!("{bin} exec ledger transfer -- amount=2.80 payee=demo-transit confirm=true 2>&1 >/dev/null");
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("HCP_HOME", h.store())
        .env("TERM", "xterm")
        .current_dir(h.t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("… Paying 2.80 to demo-transit"), "{text:?}");
    assert!(text.contains("✓ Paid 2.80 to demo-transit"), "{text:?}");
    assert!(!text.contains("ledger.mjs"), "the command line stays one flag away: {text:?}");
    let verbose = format!("{bin} exec ledger list --verbose 2>&1 >/dev/null");
    let out = Command::new("script")
        .args(["-qec", &verbose, "/dev/null"])
        .env("HCP_HOME", h.store())
        .current_dir(h.t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ledger.mjs list --json"), "--verbose shows the exact command: {text:?}");
}
