//! Issue #14 point 6: the conventions users of gh, cargo and uv expect, driven through the real binary as a
//! pack author would: completions, one JSON document for every `--json` run (usage errors too), `list`
//! columns, `commands ID [VERB]` with arguments, `audit` filters, and the bootstrap pack `hcp-cli` saying
//! exactly what `exec` accepts. (Examples in every `--help` are asserted over the whole help tree in golden.rs.)

use serde_json::{json, Value};

use crate::helpers::{repo, stdout_json, Home};

fn install_examples(h: &Home) {
    for p in ["ledger", "transit"] {
        let out = h.run(&["install", repo().join("packs").join(p).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(h.run(&["activate", "transit"]).status.code(), Some(0));
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    let h = Home::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = h.run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = stdout(&out);
        for sub in ["exec", "grant", "revoke", "completions", "credential"] {
            assert!(script.contains(sub), "{shell} completions lack {sub}");
        }
    }
    let bad = h.run(&["completions", "tcsh", "--json"]);
    assert_eq!(bad.status.code(), Some(2));
    let v = stdout_json(&bad);
    assert_eq!((v["ok"].clone(), v["code"].clone()), (json!(false), json!("usage")));
    assert!(v["error"].as_str().unwrap().contains("'tcsh'"), "{v}");
}

#[test]
fn every_json_run_prints_one_document_even_a_usage_error() {
    let h = Home::new();
    let usage_errors: &[&[&str]] = &[
        &["--json", "nosuch"],
        &["exec", "--json"],
        &["exec", "ledger", "x", "--bogus", "--json"],
        &["audit", "--limit", "many", "--json"],
        &["credential", "set", "--json"],
        &["--json"],
    ];
    for args in usage_errors {
        let out = h.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stderr.is_empty(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v = stdout_json(&out);
        assert_eq!((v["ok"].clone(), v["code"].clone()), (json!(false), json!("usage")), "{args:?}");
        assert!(v["error"].as_str().unwrap().contains("--help`"), "{args:?}: {v}");
    }
    let v = stdout_json(&h.run(&["exec", "--json"]));
    assert_eq!(
        v["error"],
        "the following required arguments were not provided: <ID>; see `hcpx exec --help`"
    );
    // `--json` after `--` is a command's word, not the flag: a usage error there stays text.
    let out = h.run(&["nosuch", "--", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty() && String::from_utf8_lossy(&out.stderr).contains("error:"));
    // Help under --json is a document too.
    let help = stdout_json(&h.run(&["grant", "--help", "--json"]));
    assert!(help["help"].as_str().unwrap().contains("Examples:"), "{help}");
    for args in
        [&["grant", "--json"][..], &["completions", "bash", "--json"], &["audit", "--pack", "x", "--json"]]
    {
        assert_eq!(stdout_json(&h.run(args))["ok"], json!(true), "{args:?}");
    }
}

#[test]
fn list_shows_the_documented_columns() {
    let h = Home::new();
    install_examples(&h);
    let text = stdout(&h.run(&["list"]));
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[0], ["ID", "NAME", "KIND", "ACTIVATED", "COMMANDS", "INSTALLED", "SOURCE"]);
    let ledger = lines.iter().find(|l| l[0] == "ledger").unwrap();
    let source = repo().join("packs/ledger");
    assert_eq!(&ledger[..5], ["ledger", "Ledger", "wrap", "no", "6"]);
    assert!(ledger[5].ends_with('Z'), "{text}");
    assert_eq!(ledger[6], source.to_str().unwrap());
    let transit = lines.iter().find(|l| l[0] == "transit").unwrap();
    assert_eq!(transit[3], "yes");
    // Every column is also a field of --json.
    let v = stdout_json(&h.run(&["list", "--json"]));
    let row = v["packs"].as_array().unwrap().iter().find(|r| r["id"] == "ledger").unwrap().clone();
    for k in ["id", "name", "kind", "activated", "commands", "source", "installed_at"] {
        assert!(row.get(k).is_some(), "{k}: {row}");
    }
}

#[test]
fn commands_lists_argument_names_types_and_descriptions() {
    let h = Home::new();
    install_examples(&h);
    let v = stdout_json(&h.run(&["commands", "ledger", "transfer", "--json"]));
    let cmds = v["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 1);
    let args = cmds[0]["arguments"].as_array().unwrap();
    let amount = args.iter().find(|a| a["name"] == "amount").unwrap();
    assert_eq!((amount["required"].clone(), amount["type"].is_string()), (json!(true), true), "{amount}");
    assert!(amount["description"].is_string(), "{amount}");
    // Text: the command, its exec line, and one line per argument with its type and description.
    let text = stdout(&h.run(&["commands", "ledger", "transfer"]));
    assert!(text.starts_with("transfer (write, needs confirm): "), "{text}");
    let line = text.lines().find(|l| l.trim_start().starts_with("amount ")).unwrap();
    assert!(line.contains("required") && line.contains(amount["description"].as_str().unwrap()), "{text}");
    // A mistyped command: no_policy's message, naming the closest one.
    let out = h.run(&["commands", "ledger", "transfr", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"].as_str().unwrap().contains("did you mean `transfer`?"));
}

#[test]
fn audit_filters_by_pack_time_and_count() {
    let h = Home::new();
    install_examples(&h);
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
    // Writes are audited: two deferred bootstrap writes and a denied ledger write.
    h.exec("hcp-cli", "hcp.activate", &["pack_id=ledger"]);
    h.exec("hcp-cli", "hcp.allow", &["bin=jq"]);
    h.exec("ledger", "transfer", &["amount=2.80", "payee=demo-transit"]);
    let all = stdout_json(&h.run(&["audit", "--json"]))["records"].as_array().unwrap().len();
    assert_eq!(all, 3);
    let records = |args: &[&str]| -> Vec<Value> {
        let mut a = vec!["audit", "--json"];
        a.extend_from_slice(args);
        stdout_json(&h.run(&a))["records"].as_array().unwrap().clone()
    };
    assert_eq!(records(&["--pack", "ledger"]).len(), 1);
    assert_eq!(records(&["--pack", "hcp-cli", "--limit", "1"])[0]["verb_key"], "hcp.allow");
    assert_eq!(records(&["--since", "1h"]).len(), 3);
    assert_eq!(records(&["--since", "2999-01-01"]).len(), 0);
    assert_eq!(records(&["--since", "2000-01-01T00:00:00Z", "--limit", "2"]).len(), 2);
    let bad = h.run(&["audit", "--since", "yesterday", "--json"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stdout_json(&bad)["error"].as_str().unwrap().contains("--since \"yesterday\""));
    let text = stdout(&h.run(&["audit", "--pack", "ledger"]));
    assert_eq!(text.lines().count(), 1);
    assert!(text.contains("ledger.transfer  confirm_required"), "{text}");
}

/// `commands hcp-cli`, `skill hcp-cli` and `availability hcp-cli` agree with what `exec hcp-cli` accepts: every
/// listed command's exec line runs, every argument it lists is taken, and nothing else is.
#[test]
fn the_bootstrap_pack_is_described_as_exec_accepts_it() {
    let h = Home::new();
    install_examples(&h);
    let av = stdout_json(&h.run(&["availability", "hcp-cli", "--json"]));
    for flag in ["installed", "activated", "bound", "runnable"] {
        assert_eq!(av[flag], json!(true), "{av}");
    }
    let skill =
        stdout_json(&h.run(&["skill", "hcp-cli", "--full", "--json"]))["text"].as_str().unwrap().to_string();
    let report = stdout_json(&h.run(&["commands", "hcp-cli", "--json"]));
    let rows = report["commands"].as_array().unwrap();
    assert_eq!(rows.len(), 11);
    for row in rows {
        let verb = row["verb_key"].as_str().unwrap();
        assert!(skill.contains(&format!("`{verb}`")), "the skill does not name {verb}");
        // The exec line `commands` gives runs (a deferred write answers ok with the hcpx line to run).
        let line = row["exec"].as_str().unwrap();
        let mut words: Vec<String> = shlex::split(line).unwrap().into_iter().skip(1).collect();
        words.insert(3, "--json".into());
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let out = h.run(&words);
        let v = stdout_json(&out);
        assert_eq!((out.status.code(), v["ok"].clone()), (Some(0), json!(true)), "{line}: {v}");
        // Each listed argument is accepted; one not listed is refused, naming the ones it takes.
        let names: Vec<&str> =
            row["arguments"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
        let (_, v) = h.exec("hcp-cli", verb, &["nosuch=1"]);
        assert_eq!(v["code"], "invalid_args", "{verb}: {v}");
        if !names.is_empty() {
            assert!(v["error"].as_str().unwrap().contains(&names.join(", ")), "{verb}: {v}");
        }
    }
    // A write's hint is filled from the call, and `commands hcp-cli VERB` gives one row.
    let (_, v) = h.exec("hcp-cli", "hcp.activate", &["pack_id=ledger"]);
    assert!(v["hint"].as_str().unwrap().contains("`hcpx activate ledger`"), "{v}");
    let one = stdout_json(&h.run(&["commands", "hcp-cli", "hcp.skill", "--json"]));
    assert_eq!(
        one["commands"][0]["arguments"][1],
        json!({ "name": "full", "type": "boolean", "required": false, "description": "The whole Skill, not only its lead." })
    );
    let (_, v) = h.exec("hcp-cli", "hcp.skill", &["pack_id=transit", "full=true"]);
    assert!(v["result"]["text"].is_string(), "{v}");
    // `title` knows the bootstrap pack too: no declared titles, and a mistyped command named as such.
    assert_eq!(
        stdout_json(&h.run(&["title", "hcp-cli", "hcp.list", "--json"])),
        json!({ "ok": true, "title": null })
    );
    let out = h.run(&["title", "hcp-cli", "hcp.lst", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"].as_str().unwrap().contains("did you mean `hcp.list`?"));
}
