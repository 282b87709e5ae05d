//! `connect`: a pack's connect command runs through the pipeline with `pack.connect`, and its outcome (linked,
//! failed, revoked) decides `availability.bound` and whether calls of the family mint; every Binding mode's
//! denial names the command that fixes it.

use serde_json::{json, Value};

use crate::helpers::{hcpx_with, stdout_json, Fixture, Home};

/// A `local`-Binding pack whose `connect` succeeds for `provider=good` only, and whose `status` read prints
/// whether it got its token.
fn linker() -> Fixture {
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("linker");
    f.surface["cliBin"] = json!("linker");
    f.surface["binding"] = json!({ "mode": "local", "hub": "local-credential", "family": "linker" });
    f.surface["wrap"] = json!({ "bin": "./bin/linker", "json_flag": [], "agent_env": { "LINKER_TOKEN": "{{binding.token}}" } });
    f.surface["verbs"] = json!({
        "connect": {
            "description": "Link a provider account through the local credential hub.",
            "cli": ["linker", "connect", "{{provider}}"],
            "args": { "type": "object", "properties": { "provider": { "type": "string", "description": "Provider", "examples": ["good"] } }, "required": ["provider"] }
        },
        "status": { "description": "Whether the provider link works, as JSON.", "cli": ["linker", "status"] }
    });
    f.surface.as_object_mut().unwrap().remove("stimulusTriggers");
    f.policy = json!({ "surface_id": "linker", "verbs": {
        "connect": { "operation": "write" }, "status": { "operation": "read" }
    }});
    f.harness = "# Linker\n\nLinks a provider.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `connect` | first |\n| `status` | to check |\n".into();
    f.files = vec![(
        "bin/linker".into(),
        "#!/bin/sh\ncase \"$1\" in\nconnect) [ \"$2\" = good ] && echo '{\"linked\":true}' || { echo 'provider refused' >&2; exit 3; } ;;\nstatus) printf '{\"token\":\"%s\"}\\n' \"${LINKER_TOKEN:+set}\" ;;\nesac\n".into(),
        true,
    )];
    f
}

fn availability(h: &Home) -> Value {
    stdout_json(&h.run(&["availability", "linker", "--json"]))
}

fn connect(h: &Home, words: &[&str]) -> (i32, Value) {
    let mut args = vec!["connect", "linker", "--json"];
    if !words.is_empty() {
        args.push("--");
        args.extend_from_slice(words);
    }
    let out = h.run(&args);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

#[test]
fn connect_links_fails_and_revokes_and_availability_follows() {
    let h = Home::new();
    h.install(&linker(), "linker");
    // Not linked yet: the mint names both ways to bind.
    let a = availability(&h);
    assert_eq!(a["bound"], false, "{a}");
    let note = a["notes"]["bound"].as_str().unwrap();
    assert!(
        note.contains("hcpx credential set linker token") && note.contains("hcpx connect linker"),
        "{note}"
    );
    let (code, out) = h.exec("linker", "status", &[]);
    assert_eq!((code, out["code"].as_str()), (1, Some("binding_failed")), "{out}");
    assert!(out["error"].as_str().unwrap().contains("hcpx connect linker"), "{out}");

    // A failed connect is recorded: nothing binds, even with a token stored, until a connect succeeds.
    let (code, out) = connect(&h, &["provider=bad"]);
    assert_ne!(code, 0, "{out}");
    let put = hcpx_with(h.t.path(), &["credential", "set", "linker", "token"], &[], Some("tok-1\n"));
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let a = availability(&h);
    assert_eq!(a["bound"], false, "{a}");
    assert!(
        a["notes"]["bound"].as_str().unwrap().contains("failed")
            && a["notes"]["bound"].as_str().unwrap().contains("hcpx connect linker"),
        "{a}"
    );

    // Linked.
    let (code, out) = connect(&h, &["provider=good"]);
    assert_eq!((code, out["ok"].clone()), (0, json!(true)), "{out}");
    assert_eq!(availability(&h)["bound"], true);
    let (code, out) = h.exec("linker", "status", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out["stdout"].as_str().unwrap().contains("\"token\":\"set\""), "{out}");

    // Revoked: refused again, naming the connect command; the stored credential is kept.
    let out = h.run(&["connect", "linker", "--revoke", "--json"]);
    assert_eq!(stdout_json(&out)["state"], "revoked");
    let a = availability(&h);
    assert_eq!(a["bound"], false, "{a}");
    assert!(a["notes"]["bound"].as_str().unwrap().contains("revoked"), "{a}");
    let (_, out) = h.exec("linker", "status", &[]);
    assert_eq!(out["code"], "binding_failed");
    assert!(out["error"].as_str().unwrap().contains("`hcpx connect linker`"), "{out}");
    let (code, _) = connect(&h, &["provider=good"]);
    assert_eq!(code, 0);
    assert_eq!(availability(&h)["bound"], true);
}

#[test]
fn connect_needs_pack_connect_and_a_connect_command() {
    let h = Home::new();
    h.install(&linker(), "linker");
    // Grants without pack.connect: the connect is denied naming the capability.
    assert!(h.run(&["grant", "--only", "verb.exec.read:*", "verb.exec.write:*"]).status.success());
    let (code, out) = connect(&h, &["provider=good"]);
    assert_ne!(code, 0);
    assert_eq!(out["code"], "denied", "{out}");
    assert!(out["error"].as_str().unwrap().contains("pack.connect"), "{out}");
    assert!(h.run(&["grant", "pack.connect:linker"]).status.success());
    assert_eq!(connect(&h, &["provider=good"]).0, 0);
    // A pack without a connect command says how to bind it instead.
    let mut f = Fixture::wrap();
    f.surface["binding"] = json!({ "mode": "local", "hub": "local-credential", "family": "demo" });
    h.install(&f, "demo");
    let out = h.run(&["connect", "demo"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no `connect` command"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn each_binding_mode_denial_names_its_fix() {
    let cases = [
        (
            json!({ "mode": "local", "hub": "local-credential", "family": "demo" }),
            "hcpx credential set demo token",
        ),
        (
            json!({ "mode": "user", "hub": "local-credential", "family": "demo" }),
            "hcpx credential set demo token --principal",
        ),
        (json!({ "mode": "mock" }), "--mode mock"),
        (json!({ "mode": "local", "hub": "keyring", "family": "demo" }), "\"hub\": \"local-credential\""),
        (json!({ "mode": "mothership", "family": "demo" }), "no mothership hub"),
    ];
    for (binding, want) in cases {
        let h = Home::new();
        let mut f = Fixture::wrap();
        f.surface["binding"] = binding.clone();
        f.surface["wrap"]["agent_env"] = json!({ "DEMO_TOKEN": "{{binding.token}}" });
        h.install(&f, "demo");
        let (code, out) = h.exec("demo", "list", &[]);
        assert_eq!((code, out["code"].as_str()), (1, Some("binding_failed")), "{binding}: {out}");
        assert!(out["error"].as_str().unwrap().contains(want), "{binding}: {out}");
    }
}

#[test]
fn only_a_connect_that_ran_is_an_outcome_and_a_failed_relink_keeps_the_link() {
    let h = Home::new();
    h.install(&linker(), "linker");
    assert!(hcpx_with(h.t.path(), &["credential", "set", "linker", "token"], &[], Some("tok\n"))
        .status
        .success());
    // Refused before it ran (an argument that renders to nothing): no outcome is recorded.
    let (code, out) = connect(&h, &["provider="]);
    assert_ne!(code, 0, "{out}");
    assert!(!h.store().join("connections.json").exists(), "{out}");
    assert_eq!(availability(&h)["bound"], true, "never connected: the hub mints as before");
    // Linked, then a re-link the provider refuses: the working link stays.
    assert_eq!(connect(&h, &["provider=good"]).0, 0);
    assert_ne!(connect(&h, &["provider=bad"]).0, 0);
    assert_eq!(availability(&h)["bound"], true);
    let links: Value =
        serde_json::from_str(&std::fs::read_to_string(h.store().join("connections.json")).unwrap()).unwrap();
    assert_eq!(links["linker"]["local"]["state"], "linked", "{links}");
}
