//! `hcpx mcp` driven by the official MCP Python SDK over stdio, as an agent host drives it: tool names,
//! schemas and annotations, a read, bad arguments, a confirm-gated write without and with `confirm`, an
//! unknown tool, a long call the client cancels (its processes are gone afterwards), and the list-changed
//! notification after an install.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

use crate::helpers::{repo, Fixture, Home};

/// A wrap whose command (and a child of it) sleeps far past any test, named by `tok` in its command line;
/// its deadline is far away, so only a cancellation stops it.
pub(crate) fn slow_pack(h: &Home, tok: &str) {
    let mut f = Fixture::wrap();
    f.surface = serde_json::json!({
        "id": "slow", "name": "Slow", "kind": "wrap", "cliBin": "slow",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/slow", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": { "wait": { "description": "Wait a long time.", "cli": ["slow", "wait"] } }
    });
    f.policy = serde_json::json!({ "surface_id": "slow", "verbs": { "wait": { "operation": "read" } } });
    f.harness = "# Slow\n\nWaits.\n".into();
    f.files = vec![("bin/slow".into(), format!("#!/bin/sh\nsleep {tok} &\nsleep {tok}\n"), true)];
    h.install(&f, "slow");
    h.write_store("sandbox.json", r#"{ "timeout_ms": 600000 }"#);
}

fn session(h: &Home, tok: &str) -> Value {
    slow_pack(h, tok);
    for p in ["packs/ledger", "packs/transit-composite"] {
        assert_eq!(h.run(&["install", repo().join(p).to_str().unwrap()]).status.code(), Some(0));
    }
    assert_eq!(h.run(&["activate", "ledger", "transit-composite"]).status.code(), Some(0));
    client(h, "client.py", &[repo().join("packs/transit").to_str().unwrap()])
}

/// Runs `tests/mcp/SCRIPT HCPX HCP_HOME ARGS…` (the official MCP Python SDK against `hcpx mcp`) and returns
/// the JSON report it prints.
pub(crate) fn client(h: &Home, script: &str, args: &[&str]) -> Value {
    client_with(h, script, args, &[], None)
}

/// `client` with `env` added to the script's environment and, with `bound_s`, killed past that many seconds
/// (a client whose answer is lost would otherwise wait for its SDK's read timeout).
pub(crate) fn client_with(
    h: &Home,
    script: &str,
    args: &[&str],
    env: &[(&str, &Path)],
    bound_s: Option<u32>,
) -> Value {
    let mut cmd = match bound_s {
        Some(s) => {
            let mut c = Command::new("timeout");
            c.args([s.to_string().as_str(), "python3"]);
            c
        }
        None => Command::new("python3"),
    };
    let out = cmd
        .arg(repo().join("tests/mcp").join(script))
        .arg(env!("CARGO_BIN_EXE_hcpx"))
        .arg(h.store())
        .args(args)
        .envs(h.store_env())
        .envs(env.iter().copied())
        .current_dir(h.t.path())
        .output()
        .expect("python3 (scripts/setup.sh installs the mcp package)");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON report")
}

#[test]
fn an_agent_host_sees_the_packs_as_tools_and_the_pipeline_decides() {
    let h = Home::new();
    let tok = crate::escape::token();
    let r = session(&h, &tok);
    check_session(&h, &r, &tok);
}

/// What client.py saw, checked the same for stdio and Streamable HTTP.
pub(crate) fn check_session(h: &Home, r: &Value, tok: &str) {
    assert_eq!(r["server"], "hcpx");
    assert_eq!(r["list_changed_capability"], true);

    // Names, titles, schemas and every annotation.
    let tools = r["tools"].as_object().unwrap();
    assert!(
        tools.contains_key("ledger__setup_status") && tools.contains_key("transit-composite__plan"),
        "{tools:?}"
    );
    let transfer = &tools["ledger__transfer"];
    assert_eq!(
        transfer["annotations"],
        serde_json::json!({"title": "Paying a payee", "readOnlyHint": false, "destructiveHint": true,
                           "idempotentHint": false, "openWorldHint": false})
    );
    assert_eq!(transfer["input_schema"]["properties"]["confirm"]["type"], "boolean");
    assert_eq!(transfer["input_schema"]["required"], serde_json::json!(["amount", "payee"]));
    let status = &tools["ledger__status"]["annotations"];
    assert_eq!(
        (status["readOnlyHint"].as_bool(), status["destructiveHint"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(status["idempotentHint"], true);

    // A read: structured content (the command's result), a text block, and the envelope in `_meta`.
    assert_eq!(r["read"]["is_error"], false, "{}", r["read"]);
    assert_eq!(r["read"]["structured"]["optionId"], "opt-1");
    assert_eq!(r["read"]["envelope"]["pack_id"], "transit-composite", "{}", r["read"]);
    assert!(r["read"]["text"][0].as_str().unwrap().contains("opt-1"));

    // Bad arguments: a denial the model can read, with its code.
    assert_eq!(r["bad_args"]["is_error"], true);
    assert_eq!(r["bad_args"]["structured"]["code"], "invalid_args");

    // The confirm gate: refused with the card and the instruction, then run with confirm.
    let gated = &r["gated"];
    assert_eq!(
        (gated["is_error"].as_bool(), gated["structured"]["code"].as_str()),
        (Some(true), Some("confirm_required"))
    );
    assert_eq!(gated["structured"]["preview"]["title"], "Pay demo-transit");
    let text = gated["text"][0].as_str().unwrap();
    assert!(text.contains("Pay demo-transit") && text.contains("\"confirm\": true"), "{text}");
    assert_eq!(r["confirmed"]["is_error"], false, "{}", r["confirmed"]);
    assert!(r["confirmed"]["text"][0].as_str().unwrap().contains("97.20"), "{}", r["confirmed"]);

    // An unknown tool is a protocol error (invalid params), not a crash.
    assert_eq!(r["unknown_tool"]["code"], -32602, "{}", r["unknown_tool"]);

    // Installing and activating a pack mid-session announces a new tool list.
    assert_eq!(r["list_changed"], true, "{r}");
    assert!(
        r["tools_after"].as_array().unwrap().iter().any(|t| t == "transit__plan"),
        "{}",
        r["tools_after"]
    );

    // The client gave up on a long call: the server stopped it, and none of its processes is left.
    assert!(r["cancelled"]["raised"].is_string(), "{}", r["cancelled"]);
    let start = std::time::Instant::now();
    while !crate::escape::survivors(tok).is_empty() && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(crate::escape::survivors(tok).is_empty(), "a cancelled call left its processes running");

    // The write was audited with the MCP invoker.
    let audit = h.audit_log();
    assert!(
        audit.lines().any(|l| l.contains("\"invoker\":\"mcp\"") && l.contains("\"verb_key\":\"transfer\"")),
        "{audit}"
    );
}

#[test]
fn one_hcp_tool_with_a_command_language_for_hosts_with_many_packs() {
    let h = Home::new();
    for p in ["packs/ledger", "packs/transit-composite"] {
        assert_eq!(h.run(&["install", repo().join(p).to_str().unwrap()]).status.code(), Some(0));
    }
    assert_eq!(h.run(&["activate", "ledger", "transit-composite"]).status.code(), Some(0));
    let r = client(&h, "single.py", &[]);
    assert_eq!(r["tools"], serde_json::json!(["hcp"]));
    assert_eq!(r["annotations"]["destructiveHint"], true, "it can run writes: {}", r["annotations"]);
    let ids: Vec<&str> = r["list"]["structured"]["packs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert!(ids.contains(&"ledger") && ids.contains(&"transit-composite"), "{ids:?}");
    assert!(r["commands"]["text"].as_str().unwrap().contains("transfer"));
    assert!(r["skill"]["text"].as_str().unwrap().contains("Ledger"), "{}", r["skill"]);
    assert_eq!(r["read"]["structured"]["optionId"], "opt-1", "{}", r["read"]);
    // The same confirm gate as one tool per command.
    assert_eq!(r["gated"]["structured"]["code"], "confirm_required");
    assert_eq!(r["confirmed"]["is_error"], false, "{}", r["confirmed"]);
    assert_eq!(
        (r["nonsense"]["is_error"].as_bool(), r["nonsense"]["structured"]["code"].as_str()),
        (Some(true), Some("invalid_args"))
    );
}

#[test]
fn a_client_that_can_ask_its_user_shows_the_card_and_runs_only_on_approval() {
    let h = Home::new();
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
    let r = client(&h, "elicit.py", &[]);
    check_elicitation(&h, &r);
}

/// What elicit.py saw, checked the same for stdio and Streamable HTTP: the card asked twice, one payment.
pub(crate) fn check_elicitation(h: &Home, r: &Value) {
    let asked = r["asked"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{r}");
    assert!(
        asked[0].as_str().unwrap().contains("Pay demo-transit")
            && asked[0].as_str().unwrap().contains("2.80")
    );
    assert_eq!(r["approved"]["is_error"], false, "{}", r["approved"]);
    assert!(r["approved"]["text"].as_str().unwrap().contains("97.20"), "{}", r["approved"]);
    assert_eq!(r["refused"]["is_error"], true);
    assert_eq!(r["refused"]["structured"]["code"], "confirm_required");
    // One payment only: the refused call never ran.
    let audit = h.audit_log();
    let paid = audit
        .lines()
        .filter(|l| {
            l.contains("\"verb_key\":\"transfer\"")
                && l.contains("\"ok\":true")
                && !l.contains("\"decision\"")
        })
        .count();
    assert_eq!(paid, 1, "{audit}");
}
