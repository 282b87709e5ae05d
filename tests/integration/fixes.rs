//! Issue #14 point 5: every denial names its fix, and the fix it names works. A pack author installs a pack,
//! mistypes, forgets to activate, locks themselves out with grants.json, and runs a gated write at the
//! terminal; each time the message gives the exact `hcpx` line, and running that line lets the call through.

use serde_json::{json, Value};
use std::fs;

use crate::helpers::{probe_fixture, stdout_json, Home};

fn error(v: &Value) -> String {
    v["error"].as_str().unwrap_or("").to_string()
}

/// The command between backticks after `marker` in `message`, as words.
fn named_line<'a>(message: &'a str, marker: &str) -> Vec<&'a str> {
    let start =
        message.find(marker).unwrap_or_else(|| panic!("{marker:?} not in {message:?}")) + marker.len();
    let rest = &message[start..];
    rest[..rest.find('`').unwrap()].split(' ').collect()
}

#[test]
fn denials_name_the_fix_and_the_fix_works() {
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");

    // A mistyped pack id and command: did you mean, and where to look.
    let (rc, out) = h.exec("prob", "look", &[]);
    assert_eq!((rc, out["code"].as_str()), (1, Some("unknown_pack")));
    assert_eq!(
        error(&out),
        "unknown pack prob; did you mean `probe`? otherwise install it with `hcpx install DIR`"
    );
    let (_, out) = h.exec("probe", "lok", &[]);
    assert_eq!(out["code"], "no_policy");
    assert_eq!(
        error(&out),
        "no policy for lok; pack probe has no command `lok`; did you mean `look`? `hcpx commands probe` lists them"
    );
    let (_, out) = h.exec("hcp-cli", "hcp.lst", &[]);
    assert!(error(&out).contains("did you mean `hcp.list`?"), "{out}");

    // Not activated: the message names `hcpx activate probe`, and running it is the fix.
    assert_eq!(h.run(&["deactivate", "probe"]).status.code(), Some(0));
    let (_, out) = h.exec("probe", "look", &[]);
    assert_eq!(out["code"], "not_activated");
    let message = error(&out);
    let fix = named_line(&message, "activate it with `hcpx ");
    assert_eq!(fix, ["activate", "probe"]);
    assert_eq!(h.run(&fix).status.code(), Some(0));
    assert_eq!(h.exec("probe", "look", &[]).0, 0);

    // Text mode carries the same message and the stable code.
    let text = h.run(&["exec", "probe", "lok"]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(stderr.contains("did you mean `look`? `hcpx commands probe` lists them (no_policy)"), "{stderr}");
}

#[test]
fn grant_and_revoke_edit_the_local_grants_file() {
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");
    // No grants.json: every grant, and `hcpx grant` says so.
    let listed = stdout_json(&h.run(&["grant", "--json"]));
    assert_eq!((listed["all"].as_bool(), listed["grants"].clone()), (Some(true), json!([])));

    // Locked out: the denial names the grant line; running it lets the read through, and only the read.
    h.write_store("grants.json", "[]");
    let (_, out) = h.exec("probe", "look", &[]);
    assert_eq!(out["code"], "denied");
    let message = error(&out);
    let fix = named_line(&message, "grant it with `hcpx ");
    assert_eq!(fix, ["grant", "verb.exec.read:probe:look"]);
    let granted = h.run(&[fix[0], fix[1], "--json"]);
    assert_eq!(granted.status.code(), Some(0));
    assert_eq!(
        stdout_json(&granted)["grants"],
        json!([{ "capability": "verb.exec.read", "pack_id": "probe", "verb_keys": ["look"] }])
    );
    assert_eq!(h.exec("probe", "look", &[]).0, 0);
    assert_eq!(h.exec("probe", "echo", &["word=hi"]).1["code"], "denied");

    // Grants of one capability and pack merge; the file is the docs/spec.md §7 array.
    assert_eq!(h.run(&["grant", "verb.exec.read:probe:echo", "verb.exec.write:*"]).status.code(), Some(0));
    let file: Value =
        serde_json::from_str(&fs::read_to_string(h.store().join("grants.json")).unwrap()).unwrap();
    assert_eq!(
        file,
        json!([
            { "capability": "verb.exec.read", "pack_id": "probe", "verb_keys": ["look", "echo"] },
            { "capability": "verb.exec.write", "pack_id": "*" }
        ])
    );
    assert_eq!(h.exec("probe", "echo", &["word=hi"]).0, 0);
    let text = h.run(&["grant"]);
    assert_eq!(String::from_utf8_lossy(&text.stdout), "verb.exec.read:probe:look,echo\nverb.exec.write:*\n");

    // Revoke one command, then a grant not held as such (refused, naming the wider grant), then a whole one.
    assert_eq!(h.run(&["revoke", "verb.exec.read:probe:look"]).status.code(), Some(0));
    assert_eq!(h.exec("probe", "look", &[]).1["code"], "denied");
    let refused = h.run(&["revoke", "verb.exec.write:probe", "--json"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(error(&stdout_json(&refused)).contains("revoke verb.exec.write:*"), "{refused:?}");
    assert_eq!(h.run(&["revoke", "verb.exec.write:*"]).status.code(), Some(0));
    let bad = h.run(&["grant", "verb.exec.nope:probe"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown capability \"verb.exec.nope\"; use one of")
    );

    // Revoking from "every grant" (no grants.json) writes out the rest.
    fs::remove_file(h.store().join("grants.json")).unwrap();
    assert_eq!(h.run(&["revoke", "verb.exec.write:*"]).status.code(), Some(0));
    assert_eq!(h.exec("probe", "look", &[]).0, 0);
    assert_eq!(h.exec("probe", "put", &["confirm=true"]).1["code"], "denied");
}

#[test]
fn a_bare_bin_not_allowlisted_names_hcpx_allow() {
    let h = Home::new();
    let fake = h.t.join("fakebin");
    fs::create_dir_all(&fake).unwrap();
    fs::write(fake.join("probe-bare"), "#!/bin/sh\necho '{\"ok\":true}'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(fake.join("probe-bare"), fs::Permissions::from_mode(0o755)).unwrap();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["bin"] = json!("probe-bare");
    f.files.clear();
    h.install(&f, "probe");
    let path = format!("{}:/usr/bin:/bin", fake.display());
    let (rc, out) = h.exec_env("probe", "look", &[], &[("PATH", &path)]);
    assert_eq!((rc, out["code"].as_str()), (127, Some("sandbox_denied")));
    let message = error(&out);
    let fix = named_line(&message, "allow it with `hcpx ");
    assert_eq!(fix, ["allow", "probe-bare"]);
    assert_eq!(h.run(&fix).status.code(), Some(0));
    assert_eq!(h.exec_env("probe", "look", &[], &[("PATH", &path)]).0, 0);
}

#[test]
fn a_gated_write_at_the_terminal_shows_the_card_and_the_rerun_line() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["verbs"]["put"]["cli"] = json!(["probe", "put", "{{note}}", "--confirm"]);
    f.surface["verbs"]["put"]["args"] = json!({
        "type": "object",
        "properties": { "note": { "type": "string", "description": "What to put", "examples": ["hi"] } },
        "required": ["note"]
    });
    f.surface["verbs"]["put"]["preview"] =
        json!({ "kind": "record", "title": "Put {{note}}", "fields": { "note": "{{note}}" } });
    h.install(&f, "probe");
    let out = h.run(&["exec", "probe", "put", "--", "note=two words"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error: confirm required (confirm_required)"), "{stderr}");
    assert!(stderr.contains("approval card (record):\n  Put two words\n  note: two words\n"), "{stderr}");
    let rerun = "hcpx exec probe put -- 'note=two words' confirm=true";
    assert!(stderr.contains(&format!("once the person agrees, run:\n  {rerun}\n")), "{stderr}");
    assert_eq!(h.runs(), 0);
    // --json carries the same line as the hint; the code and message stay those of the gate.
    let (_, v) = h.exec("probe", "put", &["note=two words", "confirm=false"]);
    assert_eq!(
        (v["code"].as_str(), v["error"].as_str()),
        (Some("confirm_required"), Some("confirm required"))
    );
    assert_eq!(v["hint"], format!("once the person agrees, run: {rerun}"));
    // The rerun line, as a shell splits it, runs the write.
    let words = shlex::split(rerun).unwrap();
    let words: Vec<&str> = words.iter().skip(1).map(String::as_str).collect();
    assert_eq!(h.run(&words).status.code(), Some(0));
    assert_eq!(h.runs(), 1);
}
