//! Operator safety (#26): a grant never takes access away unasked, no fix text suggests what widens access or
//! loses records, and the small surprises an operator met are gone. Each test drives the real `hcpx`.

use serde_json::{json, Value};
use std::fs;

use crate::helpers::{repo, stdout_json, Home};
use crate::serve::on_both_stores;

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn ledger(h: &Home) {
    let ledger = repo().join("packs/ledger");
    assert!(h.run(&["install", ledger.to_str().unwrap()]).status.success());
    assert!(h.run(&["activate", "ledger"]).status.success());
}

fn grants(h: &Home) -> Value {
    let out = h.run(&["grant", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    stdout_json(&out)
}

on_both_stores! {
    /// On a store without grants.json the local Principal holds every grant: one `hcpx grant` keeps them all
    /// (written out first) and only adds; `--only` is how to hold just the grants named, and it says what goes.
    fn a_grant_without_grants_json_only_adds / a_grant_without_grants_json_only_adds_postgres (h) {
        ledger(&h);
        assert_eq!(grants(&h)["all"], json!(true));
        let out = h.run(&["grant", "verb.exec.write:ledger:transfer"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert!(!said.contains("now holds only"), "{said}");
        assert!(said.contains("nothing was taken away") && said.contains("hcpx grant --only verb.exec.write:ledger:transfer"), "{said}");
        let held: Vec<String> =
            grants(&h)["grants"].as_array().unwrap().iter().map(|g| format!("{}:{}", g["capability"].as_str().unwrap(), g["pack_id"].as_str().unwrap())).collect();
        for every in ["verb.exec.read:*", "verb.exec.write:*", "pack.connect:*", "sense.announce:*"] {
            assert!(held.iter().any(|g| g == every), "{every} was taken away: {held:?}");
        }
        // A read still runs: nothing was taken away.
        let (code, v) = h.exec("ledger", "list", &[]);
        assert_ne!(v["code"], json!("denied"), "{code} {v}");

        // --only holds exactly the grants named and names what the Principal no longer holds.
        let out = h.run(&["grant", "--only", "verb.exec.read:ledger", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let v = stdout_json(&out);
        let lost: Vec<&str> = v["lost"].as_array().unwrap().iter().map(|g| g["capability"].as_str().unwrap()).collect();
        assert!(lost.contains(&"verb.exec.write") && lost.contains(&"pack.connect"), "{v}");
        assert_eq!(v["grants"].as_array().unwrap().len(), 1, "{v}");
        let (_, v) = h.exec("ledger", "transfer", &["amount=1.00", "payee=p", "confirm=true"]);
        assert_eq!(v["code"], json!("denied"), "{v}");
        // A grant on a store with grants.json adds, as before.
        let out = h.run(&["grant", "verb.exec.read:*"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(grants(&h)["grants"].as_array().unwrap().len(), 2);
    }
}

on_both_stores! {
    /// A grants.json that does not parse refuses every call (fail closed), and its message never says to
    /// remove it (which would grant everything): it names `hcpx grant --only`, which replaces it.
    fn a_damaged_grants_json_names_the_safe_fix / a_damaged_grants_json_names_the_safe_fix_postgres (h) {
        ledger(&h);
        h.write_store("grants.json", "[{\"capability\": \"verb.exec.read\",");
        let (code, v) = h.exec("ledger", "list", &[]);
        assert_ne!(code, 0, "{v}");
        let msg = v["error"].as_str().unwrap_or_default().to_string();
        assert!(msg.contains("grants.json is not valid"), "{v}");
        assert!(!msg.contains("remove the file") && !msg.contains("or remove"), "{msg}");
        assert!(msg.contains("never remove it") && msg.contains("hcpx grant --only"), "{msg}");
        let out = h.run(&["grant", "verb.exec.read:ledger"]);
        assert_eq!(out.status.code(), Some(1), "a plain grant must not overwrite grants it cannot read");
        // The fix it names works: --only replaces the damaged file with exactly the grants named.
        let out = h.run(&["grant", "--only", "verb.exec.read:ledger"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(text(&out).contains("replaced a grants.json that did not parse"), "{}", text(&out));
        let (code, v) = h.exec("ledger", "list", &[]);
        assert_ne!(v["code"], json!("denied"), "{code} {v}");
    }
}

/// Cuts the second audit line of `h`'s store in half, in the file or the database row; returns where it is.
fn damage_second_audit_line(h: &Home) -> &'static str {
    match h.store_env.iter().find(|(k, _)| k == "HCP_STORE").map(|(_, v)| v.clone()) {
        Some(url) => {
            let sql = "UPDATE hcpx_audit SET line = left(line, 40) WHERE n = 2";
            crate::pg::cluster().psql(crate::pg::database_of(&url), sql);
            "audit row 2"
        }
        None => {
            let log = h.store().join("audit.log");
            let mut lines: Vec<String> =
                fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
            lines[1] = lines[1][..lines[1].len() / 2].to_string();
            fs::write(&log, lines.join("\n") + "\n").unwrap();
            "audit.log line 2"
        }
    }
}

on_both_stores! {
    /// A damaged audit line: `hcpx audit` lists the readable rows around it and marks it; the advice keeps the log.
    fn a_damaged_audit_line_is_marked_and_the_rest_listed / a_damaged_audit_line_is_marked_and_the_rest_listed_postgres (h) {
        ledger(&h);
        for amount in ["amount=1.00", "amount=2.00", "amount=3.00"] {
            let (code, _) = h.exec("ledger", "transfer", &[amount, "payee=p"]);
            assert_eq!(code, 1);
        }
        let place = damage_second_audit_line(&h);

        let out = h.run(&["audit"]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(stdout.lines().filter(|l| l.contains("ledger.transfer")).count(), 2, "{said}");
        assert!(stdout.lines().nth(1).unwrap().starts_with("UNREADABLE") && stdout.contains(place), "{said}");
        assert!(!said.contains("remove the file"), "{said}");
        assert!(said.contains("never remove it"), "{said}");

        let v = stdout_json(&h.run(&["audit", "--json"]));
        assert_eq!((v["ok"].clone(), v["records"].as_array().unwrap().len()), (json!(false), 2), "{v}");
        assert!(v["unreadable"][0]["place"].as_str().unwrap().ends_with(place), "{v}");
    }
}

/// A `--head` that is not a hash is said to be one, not reported as a rewritten log.
#[test]
fn a_mistyped_head_is_not_a_rewritten_log() {
    let h = Home::new();
    ledger(&h);
    let (code, _) = h.exec("ledger", "transfer", &["amount=1.00", "payee=p"]);
    assert_eq!(code, 1);
    for bad in ["abc123", "head: 1f", &"g".repeat(64)] {
        let out = h.run(&["audit", "verify", "--head", bad]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains("is not a head") && said.contains("64 hex digits"), "{said}");
        assert!(!said.contains("rewritten"), "{said}");
    }
}

/// Every store document's "not valid" message names a fix that neither widens access nor loses records.
#[test]
fn no_damaged_document_advice_says_to_remove_it() {
    let h = Home::new();
    ledger(&h);
    for (file, cmd) in [
        ("sandbox.json", vec!["allow", "jq"]),
        ("principals.json", vec!["principal", "list"]),
        ("state.json", vec!["list"]),
    ] {
        let path = h.store().join(file);
        let before = fs::read(&path).ok();
        fs::write(&path, "{ not json").unwrap();
        let out = h.run(&cmd);
        let said = text(&out);
        assert_ne!(out.status.code(), Some(0), "{file}: {said}");
        assert!(said.contains("is not valid") && said.contains("never remove it"), "{file}: {said}");
        assert!(!said.contains("or remove the file"), "{file}: {said}");
        match before {
            Some(b) => fs::write(&path, b).unwrap(),
            None => fs::remove_file(&path).unwrap(),
        }
    }
    // `hcpx check` reads sandbox.json without the store: the same advice.
    fs::write(h.store().join("sandbox.json"), "{ not json").unwrap();
    let out = h.run(&["check", repo().join("packs/ledger").to_str().unwrap(), "--no-eval"]);
    let said = text(&out);
    assert!(said.contains("never remove it") && !said.contains("or remove the file"), "{said}");
}

/// The HTTP 403 for a missing grant names the command an operator runs, not an edit of principals.json.
#[test]
fn a_served_denial_names_hcpx_principal_grant() {
    let h = Home::new();
    ledger(&h);
    let alice = crate::serve::principal(&h, "alice", "acme", &["verb.exec.read:*"], false);
    let s = crate::serve::Server::start(&h, &[]);
    let (st, v) = s.post(
        "/v1/exec/ledger/transfer",
        &alice,
        &json!({ "amount": "1.00", "payee": "p", "confirm": true }),
    );
    assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
    let msg = v.to_string();
    assert!(msg.contains("hcpx principal grant alice verb.exec.write:ledger:transfer"), "{v}");
    assert!(!msg.contains("principals.json"), "{v}");
    // The command it names lets the call through to the confirm gate.
    let out = h.run(&["principal", "grant", "alice", "verb.exec.write:ledger:transfer"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (st, v) = s.post("/v1/exec/ledger/transfer", &alice, &json!({ "amount": "1.00", "payee": "p" }));
    assert_eq!((st, v["code"].as_str()), (428, Some("confirm_required")), "{v}");
}

/// `hcpx wrap jq`: jq's `-r` prints raw strings, "not JSON texts", so it is never taken as the JSON flag.
#[test]
fn wrap_jq_does_not_take_raw_output_as_the_json_flag() {
    let t = crate::helpers::TestDir::new();
    let out_dir = t.join("jqpack");
    let out = crate::helpers::hcpx(t.path(), &["wrap", "jq", "--out", out_dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let v = stdout_json(&out);
    assert_eq!(v["scaffold"]["json_flag"], json!([]), "{v}");
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(out_dir.join("surface.json")).unwrap()).unwrap();
    assert_eq!(surface["wrap"]["json_flag"], json!([]), "{surface}");
}

/// `hcpx allow` warns about a bin that is not on PATH and about an interpreter or shell, and says nothing
/// about an ordinary CLI that is there.
#[test]
fn allow_warns_on_a_missing_bin_and_on_an_interpreter() {
    let h = Home::new();
    let out = h.run(&["allow", "no-such-cli-hcpx-test"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("warning: `no-such-cli-hcpx-test` is not on PATH"), "{said}");
    assert!(said.contains("hcpx disallow no-such-cli-hcpx-test"), "{said}");
    for shell in ["sh", "python3"] {
        let out = h.run(&["allow", shell, "--json"]);
        let v = stdout_json(&out);
        let w = v["warnings"].to_string();
        assert!(
            w.contains("is an interpreter or shell") && w.contains("runs any code a pack ships"),
            "{shell}: {v}"
        );
    }
    let v = stdout_json(&h.run(&["allow", "jq", "--json"]));
    assert_eq!(v["warnings"], json!([]), "{v}");
}

/// M026's suggested plain titles are English: the words leading to a placeholder are not left dangling.
#[test]
fn bad_title_suggests_english_titles() {
    let t = crate::helpers::TestDir::new();
    let mut f = crate::helpers::Fixture::wrap();
    f.surface["verbs"]["show"]["title"] =
        json!({ "live": ["Finding the filesystem of {{id}}"], "done": ["Listing {{id}}"] });
    let dir = f.write(t.path());
    let out = crate::helpers::hcpx(t.path(), &["check", dir.to_str().unwrap(), "--json", "--no-eval"]);
    let v = stdout_json(&out);
    let fixes: Vec<String> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["id"] == "M026")
        .map(|f| f["fix"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(fixes.len(), 2, "{v}");
    assert!(fixes.iter().any(|f| f.contains("e.g. \"Finding the filesystem\"")), "{fixes:?}");
    assert!(fixes.iter().any(|f| f.contains("e.g. \"Listing the id\"")), "{fixes:?}");
}

/// `--add-evals` on a pack that has hcp.eval.json adds the cases it lacks after its own; `--init-evals` leaves
/// it byte for byte (docs/spec.md §21: it writes the file only when there is none).
#[test]
fn add_evals_adds_missing_cases_to_an_existing_file_and_init_evals_leaves_it() {
    let t = crate::helpers::TestDir::new();
    let mut f = crate::helpers::Fixture::wrap();
    let mine = json!({ "name": "list is JSON", "verb": "list", "args": {}, "expect": { "ok": true } });
    f.evals = Some(json!({ "cases": [mine.clone()] }));
    let dir = f.write(t.path());
    let before = fs::read(dir.join("hcp.eval.json")).unwrap();
    let out = crate::helpers::hcpx(t.path(), &["check", dir.to_str().unwrap(), "--init-evals", "--no-eval"]);
    assert!(text(&out).contains("exists; left as it is"), "{}", text(&out));
    assert_eq!(fs::read(dir.join("hcp.eval.json")).unwrap(), before, "--init-evals changed an existing file");
    let out = crate::helpers::hcpx(t.path(), &["check", dir.to_str().unwrap(), "--add-evals", "--no-eval"]);
    let said = text(&out);
    assert!(said.contains("added 2 missing case(s)"), "{said}");
    let doc: Value = serde_json::from_str(&fs::read_to_string(dir.join("hcp.eval.json")).unwrap()).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases[0], mine, "its own case stays first, unchanged");
    let verbs: Vec<&str> = cases.iter().map(|c| c["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["list", "show", "remove"], "{doc}");
    assert_eq!(cases[2]["expect"]["error"], "confirm required");
    // Run again: nothing is missing, nothing changes.
    let out = crate::helpers::hcpx(t.path(), &["check", dir.to_str().unwrap(), "--add-evals", "--no-eval"]);
    assert!(text(&out).contains("left as it is"), "{}", text(&out));
    let again: Value = serde_json::from_str(&fs::read_to_string(dir.join("hcp.eval.json")).unwrap()).unwrap();
    assert_eq!(again, doc);
}

/// S002's fix no longer sends the author to "mock mode", which still runs the write.
#[test]
fn no_proof_script_fix_does_not_say_mock_mode() {
    let t = crate::helpers::TestDir::new();
    let dir = crate::helpers::Fixture::wrap().write(t.path());
    let out = crate::helpers::hcpx(t.path(), &["check", dir.to_str().unwrap(), "--json", "--no-eval"]);
    let v = stdout_json(&out);
    let s002 = v["findings"].as_array().unwrap().iter().find(|f| f["id"] == "S002").cloned().unwrap();
    let fix = s002["fix"].as_str().unwrap();
    assert!(!fix.contains("mock mode") && fix.contains("--dry-run"), "{fix}");
}

/// `hcpx exec ID` without a command lists the pack's commands (usage exit), with a line to run each.
#[test]
fn exec_without_a_command_lists_the_commands() {
    let h = Home::new();
    ledger(&h);
    let out = h.run(&["exec", "ledger"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("hcpx exec ledger needs a command: one of"), "{said}");
    assert!(said.contains("transfer (write, needs confirm): hcpx exec ledger transfer"), "{said}");
    let v = stdout_json(&h.run(&["exec", "ledger", "--json"]));
    assert_eq!(v["ok"], json!(false));
    assert!(v["commands"].as_array().unwrap().iter().any(|c| c["verb_key"] == "list"), "{v}");
    // An unknown pack is still named as one.
    let out = h.run(&["exec", "ledgr"]);
    assert!(text(&out).contains("did you mean `ledger`"), "{}", text(&out));
}

/// Installing a pack whose bin is a bare name the allow-list lacks says to run `hcpx allow` before activate.
#[test]
fn the_install_hint_names_hcpx_allow_for_an_unlisted_bin() {
    let h = Home::new();
    let jq = repo().join("packs/jq");
    let out = h.run(&["install", jq.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("next: hcpx allow jq, then hcpx activate jq"), "{said}");
    assert!(h.run(&["allow", "jq"]).status.success());
    let out = h.run(&["install", jq.to_str().unwrap(), "--replace"]);
    let said = text(&out);
    assert!(!said.contains("hcpx allow jq"), "{said}");
}

/// A CLI that reads /sys: it lists nothing when it cannot see it, and `disk` fails "Permission denied".
fn sysfs_reader() -> crate::helpers::Fixture {
    let mut f = crate::helpers::Fixture::wrap();
    f.surface["verbs"] = json!({
        "devices": { "description": "List the devices the kernel knows, as JSON.", "cli": ["demo", "devices"] },
        "disk": { "description": "Show the kernel's device classes, as JSON.", "cli": ["demo", "disk"] }
    });
    f.surface["stimulusTriggers"] = json!([]);
    f.policy = json!({ "surface_id": "demo", "verbs": { "devices": { "operation": "read" }, "disk": { "operation": "read" } } });
    f.harness = "# Demo\n\nReads the kernel's devices.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `devices` | first |\n| `disk` | one disk |\n".into();
    f.files = vec![(
        "bin/demo".into(),
        "#!/bin/sh\ncase \"$1\" in\n  devices) if ls /sys/class >/dev/null 2>&1; then echo '{\"devices\":[{\"name\":\"vda\"}]}'; else echo '{\"devices\":[]}'; fi ;;\n  disk) ls /sys/class >/dev/null || exit 1; echo '{\"classes\":[\"block\"]}' ;;\nesac\n".into(),
        true,
    )];
    f
}

/// A wrap's child refused by Landlock: the failed call names the layer and `hcpx allow-read`; `hcpx check
/// --probe` names the very path that brings the data back; a starter eval does not pass on the empty result;
/// and the command it names lends the path.
#[test]
fn a_sandbox_denial_names_the_layer_and_the_path_to_lend() {
    if !crate::escape::layer("landlock") || !std::path::Path::new("/sys/class").is_dir() {
        return;
    }
    let h = Home::new();
    let f = sysfs_reader();
    h.install(&f, "sysfs");
    let (code, v) = h.exec("demo", "devices", &[]);
    assert_eq!((code, v["result"].clone()), (0, json!({ "devices": [] })), "blind under the sandbox: {v}");
    let (code, v) = h.exec("demo", "disk", &[]);
    assert_ne!(code, 0, "{v}");
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("Permission denied") && err.contains("sandbox (landlock)"), "{err}");
    assert!(err.contains("hcpx allow-read demo PATH"), "{err}");

    // check --probe names the path, for the read that says nothing and the one that fails.
    let src = h.t.join("src-check");
    fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    let out = h.run(&["check", dir.to_str().unwrap(), "--probe", "--init-evals", "--json"]);
    let report = stdout_json(&out);
    let r016: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|x| x["id"] == "R016").collect();
    assert_eq!(r016.len(), 2, "{report}");
    for x in &r016 {
        assert!(x["fix"].as_str().unwrap().contains("hcpx allow-read demo /sys"), "{x}");
    }
    assert!(
        !report["findings"].as_array().unwrap().iter().any(|x| x["id"] == "R001"),
        "the fix is the sandbox, not cli[]: {report}"
    );
    // The starter eval of `devices` does not pass on the empty result.
    let case =
        report["evals"]["cases"].as_array().unwrap().iter().find(|c| c["verb"] == "devices").unwrap().clone();
    assert_eq!(case["passed"], json!(false), "{case}");
    assert!(case["reason"].as_str().unwrap().contains("hcpx allow-read demo /sys"), "{case}");

    // The operator lends /sys: the calls see it, and the check is clean of R016.
    let out = h.run(&["allow-read", "demo", "/sys"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (code, v) = h.exec("demo", "devices", &[]);
    assert_eq!((code, v["result"].clone()), (0, json!({ "devices": [{ "name": "vda" }] })), "{v}");
    assert_eq!(h.exec("demo", "disk", &[]).0, 0);
    let report = stdout_json(&h.run(&["check", dir.to_str().unwrap(), "--probe", "--json"]));
    assert!(!report["findings"].as_array().unwrap().iter().any(|x| x["id"] == "R016"), "{report}");
    assert_eq!(report["evals"]["failed"], json!(0), "{report}");
}

/// `hcpx allow-read` lends absolute paths only, never `/` or a directory holding the store, and takes them back.
#[test]
fn allow_read_refuses_what_would_hand_over_the_store() {
    let h = Home::new();
    ledger(&h);
    let store = h.store();
    for bad in ["/", "sys", "/sys/../etc", store.to_str().unwrap(), store.parent().unwrap().to_str().unwrap()]
    {
        let out = h.run(&["allow-read", "ledger", bad]);
        assert_eq!(out.status.code(), Some(1), "{bad}: {}", text(&out));
    }
    let v = stdout_json(&h.run(&["allow-read", "ledger", "/sys", "/run/udev", "--json"]));
    assert_eq!(v["read"], json!(["/sys", "/run/udev"]), "{v}");
    let v = stdout_json(&h.run(&["disallow-read", "ledger", "/run/udev", "--json"]));
    assert_eq!(v["read"], json!(["/sys"]), "{v}");
    let v = stdout_json(&h.run(&["disallow-read", "ledger", "--json"]));
    assert_eq!(v["read"], json!([]), "{v}");
}

/// The pack's own way to ask: `wrap.read` names the path; install and a refused call name it exactly, and
/// nothing is lent until the operator runs the command they name. A path that is not absolute fails lint.
#[test]
fn a_pack_asks_for_a_path_in_wrap_read_and_the_operator_lends_it() {
    let h = Home::new();
    let mut f = sysfs_reader();
    f.surface["wrap"]["read"] = json!(["/sys"]);
    let src = h.t.join("src-asks");
    fs::create_dir_all(&src).unwrap();
    let dir = f.write(&src);
    let out = h.run(&["install", dir.to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("demo asks to read /sys (wrap.read)") && said.contains("hcpx allow-read demo /sys"),
        "{said}"
    );
    assert!(h.run(&["activate", "demo"]).status.success());
    if crate::escape::layer("landlock") && std::path::Path::new("/sys/class").is_dir() {
        let (code, v) = h.exec("demo", "disk", &[]);
        assert_ne!(code, 0, "asked is not lent: {v}");
        let err = v["error"].as_str().unwrap();
        assert!(
            err.contains("the pack asks to read /sys (wrap.read)")
                && err.contains("`hcpx allow-read demo /sys`"),
            "{err}"
        );
        assert!(h.run(&["allow-read", "demo", "/sys"]).status.success());
        assert_eq!(h.exec("demo", "disk", &[]).0, 0);
    }
    let mut bad = sysfs_reader();
    bad.surface["wrap"]["read"] = json!(["sys"]);
    let src = h.t.join("src-bad");
    fs::create_dir_all(&src).unwrap();
    let out = h.run(&["lint", bad.write(&src).to_str().unwrap()]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("/wrap/read/0") && said.contains("not an absolute path"), "{said}");
}
