//! Issue #24 point 1: every denial text the seed spec fixes (docs/spec.md §9's pipeline table, §10's exit
//! rules, §2's project mode) in one table, each driven through the real binary. A message may go on
//! with its fix or a did-you-mean; it must start with the spec's words, so no later change can drop one.

use serde_json::{json, Value};

use crate::helpers::{Fixture, Home};
use crate::serve::{principal, Server, ALL};

/// A pack named like the spec's examples: `ledger.transfer` is a confirm-gated write, `brain` a read on land
/// `brain`, `fail` exits 3 saying nothing, `cry` exits 4 with a line on stderr.
fn ledger() -> Fixture {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "ledger", "name": "Ledger", "kind": "wrap", "cliBin": "ledger",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/ledger", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": {
            "status": { "description": "Show the balance.", "cli": ["ledger", "status"] },
            "transfer": { "description": "Pay a payee.", "cli": ["ledger", "transfer"] },
            "brain": { "description": "Read the brain.", "cli": ["ledger", "brain"] },
            "fail": { "description": "Fail quietly.", "cli": ["ledger", "fail"] },
            "cry": { "description": "Fail loudly.", "cli": ["ledger", "cry"] }
        }
    });
    f.policy = json!({
        "surface_id": "ledger",
        "verbs": {
            "status": { "operation": "read" },
            "transfer": { "operation": "write", "confirm": true },
            "brain": { "operation": "read", "privacy": { "land": "brain" } },
            "fail": { "operation": "read" },
            "cry": { "operation": "read" }
        }
    });
    f.harness = "# Ledger\n\nA ledger for the seed's denial texts.\n".into();
    let script = "#!/bin/sh\ncase \"$1\" in\n  fail) exit 3 ;;\n  cry) echo 'the ledger is locked' >&2; exit 4 ;;\n  *) echo '{\"ok\":true}' ;;\nesac\n";
    f.files = vec![("bin/ledger".into(), script.into(), true)];
    f
}

/// A pack whose bin is a bare name nobody allow-listed.
fn bare_x() -> Fixture {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "xpack", "name": "X", "kind": "wrap", "cliBin": "x",
        "binding": { "mode": "public" },
        "wrap": { "bin": "x", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": { "run": { "description": "Run x.", "cli": ["x", "run"] } }
    });
    f.policy = json!({ "surface_id": "xpack", "verbs": { "run": { "operation": "read" } } });
    f.harness = "# X\n\nRuns x.\n".into();
    f.files = Vec::new();
    f
}

struct Case {
    /// Where the spec fixes the text.
    source: &'static str,
    /// The text as the spec writes it (placeholders filled in).
    text: &'static str,
    code: &'static str,
    exit: i32,
    /// Drives the call through the binary: (exit code, envelope).
    call: fn(&Home) -> (i32, Value),
}

fn error(v: &Value) -> &str {
    v["error"].as_str().unwrap_or("")
}

#[test]
fn every_denial_text_the_seed_fixes_starts_its_message() {
    let cases = [
        Case {
            source: "docs/spec.md §9, step 1",
            text: "unknown pack nosuch",
            code: "unknown_pack",
            exit: 1,
            call: |h| h.exec("nosuch", "status", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 1",
            text: "no policy for nosuch",
            code: "no_policy",
            exit: 1,
            call: |h| h.exec("ledger", "nosuch", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 1 (a near name)",
            text: "no policy for statsu",
            code: "no_policy",
            exit: 1,
            call: |h| h.exec("ledger", "statsu", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 1 (the bootstrap pack)",
            text: "no policy for hcp.lst",
            code: "no_policy",
            exit: 1,
            call: |h| h.exec("hcp-cli", "hcp.lst", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 2",
            text: "privacy.land brain requires project_id",
            code: "project_required",
            exit: 1,
            call: |h| h.exec("ledger", "brain", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 4",
            text: "confirm required",
            code: "confirm_required",
            exit: 1,
            call: |h| h.exec("ledger", "transfer", &[]),
        },
        Case {
            source: "docs/spec.md §9, step 6",
            text: "sandbox: bin \"x\" not allowlisted",
            code: "sandbox_denied",
            exit: 127,
            call: |h| h.exec("xpack", "run", &[]),
        },
        Case {
            source: "docs/spec.md §11, exit codes (no stderr)",
            text: "exit 3",
            code: "exit_nonzero",
            exit: 1,
            call: |h| h.exec("ledger", "fail", &[]),
        },
        Case {
            source: "docs/spec.md §11, exit codes (stderr)",
            text: "the ledger is locked",
            code: "exit_nonzero",
            exit: 1,
            call: |h| h.exec("ledger", "cry", &[]),
        },
        // Last: these change the store.
        Case {
            source: "docs/spec.md §9, step 3",
            text: "denied: missing verb.exec.write for ledger.transfer",
            code: "denied",
            exit: 1,
            call: |h| {
                h.write_store("grants.json", r#"[{"capability":"verb.exec.read","pack_id":"ledger"}]"#);
                h.exec("ledger", "transfer", &["confirm=true"])
            },
        },
        Case {
            source: "docs/spec.md §9, step 1",
            text: "pack ledger not activated",
            code: "not_activated",
            exit: 1,
            call: |h| {
                assert_eq!(h.run(&["deactivate", "ledger"]).status.code(), Some(0));
                h.exec("ledger", "status", &[])
            },
        },
    ];
    let h = Home::new();
    h.install(&ledger(), "ledger");
    h.install(&bare_x(), "xpack");
    let mut wrong = Vec::new();
    for c in &cases {
        let (rc, out) = (c.call)(&h);
        let got = (rc, out["ok"].as_bool(), out["code"].as_str().unwrap_or(""), error(&out));
        if got.0 != c.exit || got.1 != Some(false) || got.2 != c.code || !got.3.starts_with(c.text) {
            wrong.push(format!("{}: want exit {} {} {:?}…, got {got:?}", c.source, c.exit, c.code, c.text));
        }
    }
    assert!(wrong.is_empty(), "denials that lost the seed's text:\n{}", wrong.join("\n"));
}

#[test]
fn the_served_no_project_denial_keeps_its_code() {
    // docs/spec.md §2: a runtime with no project refuses `project`-mode commands with `code: "no_project"`.
    let h = Home::new();
    let mut f = ledger();
    f.surface["wrap"]["workspace"] = json!({ "mode": "project" });
    h.install(&f, "ledger");
    let a = principal(&h, "alice", "acme", ALL, false);
    let s = Server::start(&h, &[]);
    let (st, v) = s.post("/v1/exec/ledger/status", &a, &json!({}));
    assert_eq!((st, v["ok"].as_bool(), v["code"].as_str()), (409, Some(false), Some("no_project")), "{v}");
    // And the served title of a command the pack lacks keeps step 1's text.
    let (_, v) = s.post("/v1/title", &a, &json!({ "pack_id": "ledger", "verb_key": "nosuch", "args": {} }));
    assert!(error(&v).starts_with("no policy for nosuch"), "{v}");
}
