//! Conformance (#37 point 5): the official MCP conformance suite (the npm package
//! `@modelcontextprotocol/conformance`, pinned in tests/conformance) run against the real `hcpx serve`'s `/mcp`
//! over the example packs, and the Python SDK's own client at every protocol version hcpx announces, over
//! stdio and over Streamable HTTP (tests/mcp/versions.py). docs/mcp.md, Conformance, lists what runs and why
//! the rest cannot.

use serde_json::{json, Value};
use std::process::Command;

use crate::helpers::{repo, Home};
use crate::serve::{install_repo_packs, principal, Server, ALL};

/// Every protocol version hcpx announces (rmcp's `ProtocolVersion::KNOWN_VERSIONS`: `server/discover` answers
/// them), oldest first. The 2026-07-28 run checks the server still announces exactly these.
const VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
/// The suite's release, and its prerelease that knows protocol 2026-07-28 (package.json names both).
const RELEASE: &str = "@modelcontextprotocol/conformance";
const PRERELEASE: &str = "conformance-2026-07-28";

/// The scenarios that apply to hcpx (docs/mcp.md says why the others cannot): the release's at the version it
/// negotiates, and the prerelease's at each protocol version it can speak (it has no 2024-11-05).
fn plan() -> Vec<Value> {
    let release = [
        "server-initialize",
        "ping",
        "tools-list",
        "server-sse-polling",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ];
    let legacy = ["server-initialize", "server-session-lifecycle", "ping", "tools-list"];
    let at: [(&str, Vec<&str>); 4] = [
        ("2025-03-26", vec!["server-session-lifecycle"]),
        ("2025-06-18", legacy.to_vec()),
        (
            "2025-11-25",
            [&legacy[..], &["server-sse-polling", "server-sse-multiple-streams", "dns-rebinding-protection"]]
                .concat(),
        ),
        (
            "2026-07-28",
            vec![
                "server-stateless",
                "tools-list",
                "server-sse-multiple-streams",
                "dns-rebinding-protection",
                "http-header-validation",
                "caching",
                "input-required-result-unsupported-methods",
            ],
        ),
    ];
    let mut plan: Vec<Value> =
        release.iter().map(|s| json!({"package": RELEASE, "spec_version": null, "scenario": s})).collect();
    for (version, scenarios) in at {
        plan.extend(
            scenarios.iter().map(|s| json!({"package": PRERELEASE, "spec_version": version, "scenario": s})),
        );
    }
    plan
}

/// Checks of the planned scenarios that cannot pass against hcpx, each with what its error must say (so a
/// different failure of the same check still fails the test) and why.
const NOT_APPLICABLE: &[(&str, &str, &str, &str)] = &[
    (
        "server-sse-polling",
        "server-sse-disconnect-resume",
        "did not send tool response after client reconnected",
        "resuming needs a call still running when the stream closes: the suite calls its own tool test_reconnection",
    ),
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability", NO_DIAGNOSTIC_TOOL, NEEDS_TEST_TOOLS),
    ("server-stateless", "sep-2575-missing-capability-http-400", NO_DIAGNOSTIC_TOOL, NEEDS_TEST_TOOLS),
    ("server-stateless", "sep-2575-http-server-no-independent-requests-on-stream", NO_DIAGNOSTIC_TOOL, NEEDS_TEST_TOOLS),
    ("server-stateless", "sep-2575-server-no-log-without-loglevel", NO_DIAGNOSTIC_TOOL, NEEDS_TEST_TOOLS),
    (
        "server-stateless",
        "sep-2575-server-sends-tools-list-changed-on-subscription",
        "Mutated the tool list but no notifications/tools/list_changed arrived",
        "the suite changes the tool list by calling its own tool test_trigger_tool_change; hcpx's list changes when \
         the operator installs or activates a pack (versions.py proves that notification at 2026-07-28)",
    ),
    ("server-stateless", "sep-2575-server-sends-prompts-list-changed-on-subscription", "", "hcpx offers no prompts"),
    ("caching", "sep-2549-prompts-list-caching-hints", "-32601", "hcpx offers no prompts"),
    ("caching", "sep-2549-resources-list-caching-hints", "-32601", "hcpx offers no resources"),
    ("caching", "sep-2549-resources-templates-list-caching-hints", "-32601", "hcpx offers no resources"),
    ("caching", "sep-2549-resources-read-caching-hints", "resources/list failed", "hcpx offers no resources"),
];
const NO_DIAGNOSTIC_TOOL: &str = "Not testable: server does not list the diagnostic tool";
const NEEDS_TEST_TOOLS: &str =
    "the check calls a test tool of the suite's reference server, which hcpx does not have";

/// The suite's Node.js (the package requires Node 22; setup.sh installs it from the registry with the suite).
fn suite_node() -> std::path::PathBuf {
    let node = repo().join("tests/conformance/node_modules/.bin/node");
    assert!(
        node.exists(),
        "{} is missing: scripts/setup.sh installs the conformance suite (npm ci in tests/conformance)",
        node.display()
    );
    node
}

#[test]
fn the_official_conformance_suite_passes_where_it_applies_to_mcp_over_http() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger", "transit-composite"]);
    let token = principal(&h, "suite", "acme", ALL, false);
    let s = Server::start(&h, &[]);
    let out = Command::new(suite_node())
        .arg(repo().join("tests/conformance/run.mjs"))
        .arg(format!("http://{}/mcp", s.addr))
        .arg(h.t.join("conformance"))
        .arg(serde_json::to_string(&plan()).unwrap())
        .env("HCPX_MCP_TOKEN", &token)
        .current_dir(h.t.path())
        .output()
        .expect("the suite's node");
    assert!(
        out.status.success(),
        "run.mjs failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON report");
    assert_eq!(
        report["packages"][RELEASE], "@modelcontextprotocol/conformance@0.1.16",
        "{}",
        report["packages"]
    );
    assert_eq!(report["packages"][PRERELEASE], "@modelcontextprotocol/conformance@0.2.0-alpha.12");

    let mut failures = Vec::new();
    for run in report["runs"].as_array().unwrap() {
        let (scenario, version) = (run["scenario"].as_str().unwrap(), &run["spec_version"]);
        let at = format!("{scenario} ({} at {version})", run["package"]);
        let checks = run["checks"].as_array().unwrap();
        // A scenario that was cut short, or proved nothing, is a failure whatever its checks say.
        if !run["signal"].is_null() || !checks.iter().any(|c| c["status"] == "SUCCESS") {
            failures.push(format!("{at}: no passing check (signal {}):\n{}", run["signal"], run["log"]));
            continue;
        }
        for c in checks {
            let (id, status) = (c["id"].as_str().unwrap(), c["status"].as_str().unwrap());
            if status == "SUCCESS" || status == "INFO" {
                continue;
            }
            let error = c["error"].as_str().unwrap_or("");
            let excused = NOT_APPLICABLE
                .iter()
                .any(|(s, check, says, _)| *s == scenario && *check == id && error.contains(says));
            if !excused {
                failures.push(format!("{at}: {id} {status}: {error}"));
            }
        }
    }
    assert!(failures.is_empty(), "hcpx fails checks of the conformance suite:\n{}", failures.join("\n"));
    // Every version the prerelease speaks was run, each with checks of its own.
    for v in &VERSIONS[1..] {
        assert!(report["runs"].as_array().unwrap().iter().any(|r| r["spec_version"] == *v), "{v} not run");
    }
}

/// What versions.py saw at `version`, checked the same over stdio and HTTP.
fn check_version(r: &Value, version: &str) {
    let at = |key: &str| format!("{version} {key}: {}", r[key]);
    assert_eq!(r["protocol"], version, "{}", at("protocol"));
    assert_eq!(r["server"], "hcpx");
    assert_eq!(r["list_changed_capability"], true, "{}", at("list_changed_capability"));
    let tools = r["tools"].as_array().unwrap();
    for t in ["ledger__transfer", "ledger__list", "transit-composite__plan"] {
        assert!(tools.iter().any(|n| n == t), "{version}: {t} not listed: {tools:?}");
    }
    // A read answers its result.
    assert_eq!(r["read"]["is_error"], false, "{}", at("read"));
    assert_eq!(r["read"]["result"]["optionId"], "opt-1", "{}", at("read"));
    // The gate: refused with the card, then run by `confirm: true`.
    assert_eq!(
        (r["gated"]["is_error"].as_bool(), r["gated"]["code"].as_str()),
        (Some(true), Some("confirm_required"))
    );
    assert_eq!(r["gated"]["preview_title"], "Pay demo-transit", "{}", at("gated"));
    assert_eq!(r["confirmed"]["ok"], true, "{}", at("confirmed"));
    assert_eq!(r["confirmed"]["result"]["paid"]["amount"], r["amounts"]["confirmed"], "{}", at("confirmed"));
    // A pack activated or deactivated meanwhile was announced, and the list follows it.
    assert_eq!(r["list_changed"], true, "{version}: no list change heard: {}", r["listen_error"]);
    assert_ne!(r["transit_before"], r["transit_after"], "{}", at("transit_after"));
    // Where the protocol has elicitation, the person was asked twice: one approval ran, one refusal did not.
    let amounts = &r["amounts"];
    if version >= "2025-06-18" {
        let asked = r["asked"].as_array().unwrap();
        assert_eq!(asked.len(), 2, "{}", at("asked"));
        let first = asked[0].as_str().unwrap();
        assert!(
            first.contains("Pay demo-transit") && first.contains(amounts["approved"].as_str().unwrap()),
            "{first}"
        );
        assert_eq!(r["approved"]["ok"], true, "{}", at("approved"));
        assert_eq!(r["refused"]["code"], "confirm_required", "{}", at("refused"));
        assert_eq!(r["paid"], json!([amounts["confirmed"], amounts["approved"]]), "{}", at("paid"));
    } else {
        assert_eq!(r["asked"], json!([]), "{}", at("asked"));
        assert_eq!(r["paid"], json!([amounts["confirmed"]]), "{}", at("paid"));
    }
    // The gated call without `confirm` never ran.
    assert!(!r["paid"].as_array().unwrap().contains(&amounts["gated"]), "{}", at("paid"));
}

fn every_version(h: &Home, http: Option<(&str, &str)>) {
    for v in VERSIONS {
        let mut args = vec![*v];
        if let Some((url, token)) = http {
            args.extend([url, token]);
        }
        let r = crate::mcp::client(h, "versions.py", &args);
        check_version(&r, v);
        if *v == "2026-07-28" {
            assert_eq!(
                r["supported_versions"],
                json!(VERSIONS),
                "hcpx announces other versions than are tested"
            );
        }
    }
}

fn packs(h: &Home) {
    install_repo_packs(h, &["ledger", "transit-composite"]);
    // Installed, not activated: versions.py flips it to change the tool list.
    let out = h.run(&["install", repo().join("packs/transit").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_sdk_client_works_at_every_protocol_version_hcpx_announces_over_stdio() {
    let h = Home::new();
    packs(&h);
    every_version(&h, None);
}

#[test]
fn the_sdk_client_works_at_every_protocol_version_hcpx_announces_over_http() {
    let h = Home::new();
    packs(&h);
    let token = principal(&h, "agent", "acme", ALL, false);
    let s = Server::start(&h, &[]);
    every_version(&h, Some((&format!("http://{}/mcp", s.addr), &token)));
}
