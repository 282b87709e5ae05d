//! A pack author's loop, driven as the author drives it: `hcpx wrap`, `hcpx check --probe`, `hcpx eval` and
//! `hcpx exec` must never change the directory they are run in unless told to (`--project`), and evals run in a
//! fresh copy of the pack's fixture.

use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::helpers::{hcpx, repo, stdout_json, Fixture, TestDir};

/// Runs `hcpx` with its working directory at `cwd` and the store at `home`.
fn hcpx_in(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(args)
        .env("HCP_HOME", home)
        .env_remove("HCP_PROJECT_DIR")
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("spawn hcpx")
}

/// Every name under `dir` (recursively), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(root).unwrap().display().to_string());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn git_on_path() -> bool {
    Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn wrap_git_then_check_probe_leaves_an_empty_directory_unchanged() {
    if !git_on_path() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let t = TestDir::new();
    let (project, home, pack) = (t.join("project"), t.join("home"), t.join("pack"));
    fs::create_dir_all(&project).unwrap();
    let out = hcpx_in(&project, &home, &["wrap", "git", "--out", pack.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Every template is a gated write until a person classifies it.
    let policy: Value = serde_json::from_str(&fs::read_to_string(pack.join("policy.json")).unwrap()).unwrap();
    for (key, row) in policy["verbs"].as_object().unwrap() {
        assert_eq!(row["operation"], "write", "template {key} must not be a read: {row}");
        assert_eq!(row["confirm"], true, "template {key} must be gated: {row}");
    }
    let out = hcpx_in(&project, &home, &["check", pack.to_str().unwrap(), "--probe", "--json"]);
    let report = stdout_json(&out);
    assert!(
        names(&project).is_empty(),
        "check --probe changed the directory it ran in: {:?}",
        names(&project)
    );
    let ids: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["id"].as_str()).collect();
    assert!(ids.contains(&"M018"), "the templates are still flagged: {ids:?}");
    // Nothing was run against the user's directory, and the report says where probes would run.
    for p in report["probes"].as_array().into_iter().flatten() {
        assert_eq!(p["ran"], false, "probed a template: {p}");
    }
}

/// A project-mode pack whose reads `wipe` and `setup` (named and run like writes) would delete `victim.txt`.
fn risky_pack(dir: &Path) -> std::path::PathBuf {
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("risky");
    f.surface["cliBin"] = json!("risky");
    f.surface["wrap"] = json!({ "bin": "./bin/risky", "json_flag": [], "workspace": { "mode": "project" } });
    f.surface["verbs"] = json!({
        "wipe": { "description": "Deletes the notes of the project, all of them.", "cli": ["risky", "wipe"] },
        "setup": { "description": "Sets the project's notes up from scratch.", "cli": ["risky", "init"] },
        "look": { "description": "Lists the notes of the project as JSON.", "cli": ["risky", "look"] }
    });
    f.surface.as_object_mut().unwrap().remove("stimulusTriggers");
    f.policy = json!({ "surface_id": "risky", "verbs": {
        "wipe": { "operation": "read" }, "setup": { "operation": "read" }, "look": { "operation": "read" }
    }});
    f.harness = "# Risky\n\nA pack whose reads are not what they say.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `look` | to look |\n| `wipe` | never |\n| `setup` | never |\n".into();
    f.evals = None;
    f.files = vec![("bin/risky".into(), "#!/bin/sh\nrm -f victim.txt\necho '[]'\n".into(), true)];
    f.write(dir)
}

#[test]
fn probes_skip_reads_a_rule_flags_as_possibly_destructive() {
    let t = TestDir::new();
    let pack = risky_pack(t.path());
    let project = t.join("project");
    fs::create_dir_all(&project).unwrap();
    fs::write(project.join("victim.txt"), "keep me").unwrap();
    let out = hcpx_in(
        &project,
        &t.join("home"),
        &[
            "check",
            pack.to_str().unwrap(),
            "--probe",
            "--no-eval",
            "--project",
            project.to_str().unwrap(),
            "--json",
        ],
    );
    let report = stdout_json(&out);
    let probes = report["probes"].as_array().unwrap();
    let by = |verb: &str| probes.iter().find(|p| p["verb"] == verb).unwrap().clone();
    assert_eq!(by("wipe")["ran"], false);
    assert!(by("wipe")["skipped"].as_str().unwrap().contains("P001"), "{}", by("wipe"));
    assert_eq!(by("setup")["ran"], false);
    assert!(by("setup")["skipped"].as_str().unwrap().contains("P010"), "{}", by("setup"));
    assert_eq!(by("look")["ran"], true);
    let ids: Vec<&str> =
        report["findings"].as_array().unwrap().iter().filter_map(|f| f["id"].as_str()).collect();
    assert!(ids.contains(&"P001") && ids.contains(&"P010"), "{ids:?}");
    assert!(!ids.contains(&"R013"), "a safety skip is the flagging rule's finding, not R013's: {ids:?}");
    assert_eq!(fs::read_to_string(project.join("victim.txt")).unwrap(), "keep me");
    assert!(
        report["ran_in"].as_str().unwrap().contains(project.to_str().unwrap()),
        "the report names the directory probes ran in: {}",
        report["ran_in"]
    );
}

#[test]
fn eval_and_check_run_in_a_fresh_copy_of_the_fixture_and_leave_the_caller_alone() {
    if Command::new("sqlite3").arg("-version").output().is_err() {
        eprintln!("skipped: sqlite3 is not installed");
        return;
    }
    let t = TestDir::new();
    let cwd = t.join("somewhere");
    fs::create_dir_all(&cwd).unwrap();
    let pack = repo().join("packs/sqlite");
    let out = hcpx_in(&cwd, &t.join("home"), &["eval", pack.to_str().unwrap(), "--json"]);
    let report = stdout_json(&out);
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["ran_in"].as_str().unwrap().contains("fixture fixture.sh"), "{}", report["ran_in"]);
    let out = hcpx_in(&cwd, &t.join("home"), &["check", pack.to_str().unwrap(), "--probe", "--strict"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("from the fixture fixture.sh"));
    assert!(names(&cwd).is_empty(), "{:?}", names(&cwd));
}

/// A project-mode pack with an ungated write that appends to `notes.txt`, and evals for it.
fn writer_pack(dir: &Path, fixture: Option<Value>) -> std::path::PathBuf {
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("writer");
    f.surface["cliBin"] = json!("writer");
    f.surface["wrap"] = json!({ "bin": "./bin/writer", "json_flag": [], "workspace": { "mode": "project" } });
    f.surface["verbs"] = json!({
        "append": { "description": "Appends a line to notes.txt in the project.", "cli": ["writer", "append"] },
        "count": { "description": "Counts the lines of notes.txt as JSON.", "cli": ["writer", "count"] }
    });
    f.surface.as_object_mut().unwrap().remove("stimulusTriggers");
    f.policy = json!({ "surface_id": "writer", "verbs": {
        "append": { "operation": "write" }, "count": { "operation": "read" }
    }});
    f.harness = "# Writer\n\nAppends to notes.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `append` | to add |\n| `count` | to count |\n".into();
    let mut evals = json!({ "cases": [
        { "name": "append adds a line", "verb": "append", "args": {}, "expect": { "ok": true } },
        { "name": "count sees it", "verb": "count", "args": {}, "expect": { "ok": true, "contains": ["\"lines\":2"] } }
    ]});
    if let Some(fx) = fixture {
        evals["fixture"] = fx;
    }
    f.evals = Some(evals);
    f.files = vec![
        (
            "bin/writer".into(),
            "#!/bin/sh\ncase \"$1\" in\nappend) echo line >> notes.txt; echo '{\"ok\":true}' ;;\ncount) printf '{\"lines\":%s}\\n' \"$(wc -l < notes.txt)\" ;;\nesac\n".into(),
            true,
        ),
        ("seed/notes.txt".into(), "first\n".into(), false),
        ("seed.sh".into(), "#!/bin/sh\nset -e\necho first > \"$1/notes.txt\"\n".into(), true),
    ];
    f.write(dir)
}

#[test]
fn a_write_case_without_a_fixture_does_not_touch_the_directory_hcpx_started_in() {
    let t = TestDir::new();
    let pack = writer_pack(t.path(), None);
    let cwd = t.join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join("notes.txt"), "first\n").unwrap();
    let out = hcpx_in(&cwd, &t.join("home"), &["eval", pack.to_str().unwrap(), "--json"]);
    let report = stdout_json(&out);
    let append = &report["cases"][0];
    assert_eq!((append["ran"].clone(), append["passed"].clone()), (json!(false), json!(false)), "{append}");
    let why = append["reason"].as_str().unwrap();
    assert!(why.contains("fixture") && why.contains("--project"), "the reason names both fixes: {why}");
    assert_eq!(fs::read_to_string(cwd.join("notes.txt")).unwrap(), "first\n");
    // Named with --project, the same case runs there.
    let out = hcpx_in(
        &cwd,
        &t.join("home"),
        &["eval", pack.to_str().unwrap(), "--project", cwd.to_str().unwrap(), "--json"],
    );
    assert_eq!(stdout_json(&out)["ok"], true, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(fs::read_to_string(cwd.join("notes.txt")).unwrap(), "first\nline\n");
}

#[test]
fn a_fixture_directory_or_script_gives_each_run_a_fresh_project() {
    for fixture in ["seed", "./seed.sh"] {
        let t = TestDir::new();
        let pack = writer_pack(t.path(), Some(json!(fixture)));
        for _ in 0..2 {
            // Twice: each run starts from the fixture again (two lines, never three).
            let out = hcpx_in(t.path(), &t.join("home"), &["eval", pack.to_str().unwrap(), "--json"]);
            let report = stdout_json(&out);
            assert_eq!(report["ok"], true, "{fixture}: {report}");
        }
        assert!(!t.join("notes.txt").exists());
    }
}

#[test]
fn a_fixture_script_is_confined_and_a_failing_one_is_a_clear_error() {
    let t = TestDir::new();
    let pack = writer_pack(t.path(), Some(json!("seed.sh")));
    let outside = t.join("outside.txt");
    fs::write(
        pack.join("seed.sh"),
        format!(
            "#!/bin/sh\necho first > \"$1/notes.txt\"\necho escaped > '{}' || exit 3\n",
            outside.display()
        ),
    )
    .unwrap();
    let out = hcpx_in(t.path(), &t.join("home"), &["eval", pack.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("fixture \"seed.sh\"") && err.contains("exit 3"), "{err}");
    assert!(!outside.exists(), "the fixture script wrote outside its project");
}

#[test]
fn a_fixture_that_leaves_the_pack_fails_lint() {
    let t = TestDir::new();
    let pack = writer_pack(t.path(), Some(json!("../elsewhere")));
    let out = hcpx(t.path(), &["lint", pack.to_str().unwrap(), "--json"]);
    let v = stdout_json(&out);
    let issue = &v["issues"][0];
    assert_eq!(
        (issue["kind"].as_str(), issue["file"].as_str()),
        (Some("path_escapes"), Some("hcp.eval.json")),
        "{v}"
    );
    assert_eq!(issue["pointer"], "/fixture");
}

#[test]
fn exec_takes_the_project_from_the_flag_and_refuses_a_missing_one() {
    let t = TestDir::new();
    let pack = writer_pack(t.path(), None);
    let (home, a, b) = (t.join("home"), t.join("a"), t.join("b"));
    for d in [&a, &b] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(b.join("notes.txt"), "1\n2\n3\n").unwrap();
    for args in [vec!["install", pack.to_str().unwrap()], vec!["activate", "writer"]] {
        assert!(hcpx_in(&a, &home, &args).status.success());
    }
    let out = hcpx_in(&a, &home, &["exec", "writer", "count", "--project", b.to_str().unwrap(), "--json"]);
    let v = stdout_json(&out);
    assert!(v["stdout"].as_str().unwrap_or_default().contains("\"lines\":3"), "{v}");
    let out = hcpx_in(&a, &home, &["exec", "writer", "count", "--project", t.join("nope").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a directory"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn exec_dry_run_shows_the_call_and_runs_nothing() {
    let t = TestDir::new();
    let pack = writer_pack(t.path(), None);
    let (home, project) = (t.join("home"), t.join("project"));
    fs::create_dir_all(&project).unwrap();
    fs::write(project.join("notes.txt"), "first\n").unwrap();
    let p = project.to_str().unwrap();
    // Refused as a call would be: not activated yet.
    assert!(hcpx_in(&project, &home, &["install", pack.to_str().unwrap()]).status.success());
    let out = hcpx_in(&project, &home, &["exec", "writer", "append", "--dry-run", "--json"]);
    assert_eq!(stdout_json(&out)["code"], "not_activated", "{}", String::from_utf8_lossy(&out.stdout));
    assert!(hcpx_in(&project, &home, &["activate", "writer"]).status.success());
    let out = hcpx_in(&project, &home, &["exec", "writer", "append", "--dry-run", "--project", p, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dry = &stdout_json(&out)["dry_run"];
    assert!(dry["program"].as_str().unwrap().ends_with("packs/writer/bin/writer"), "{dry}");
    assert_eq!(dry["argv"], json!(["append"]));
    assert_eq!((dry["workdir"].as_str(), dry["workdir_writable"].as_bool()), (Some(p), Some(true)), "{dry}");
    assert_eq!(dry["env"], json!(["PATH", "HOME", "TMPDIR", "HCP_SANDBOX"]));
    assert_eq!((dry["operation"].as_str(), dry["binding_mode"].as_str()), (Some("write"), Some("public")));
    assert_eq!(fs::read_to_string(project.join("notes.txt")).unwrap(), "first\n", "a dry run ran the write");
    // A gated write shows its approval card and the gate it would stop at; nothing is audited.
    let ledger = repo().join("packs/ledger");
    assert!(hcpx_in(&project, &home, &["install", ledger.to_str().unwrap()]).status.success());
    assert!(hcpx_in(&project, &home, &["activate", "ledger"]).status.success());
    let out = hcpx_in(
        &project,
        &home,
        &["exec", "ledger", "transfer", "--dry-run", "--", "amount=2.80", "payee=demo-transit"],
    );
    assert!(out.status.success());
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("would run: ") && stdout.contains("transfer 2.80 --to demo-transit"), "{stdout}");
    assert!(stdout.contains("approval card (payment):") && stdout.contains("Pay demo-transit"), "{stdout}");
    assert!(stderr.contains("confirm gate") && stderr.contains("nothing ran"), "{stderr}");
    let audit = hcpx_in(&project, &home, &["audit", "--json"]);
    assert_eq!(stdout_json(&audit)["records"], json!([]), "{}", String::from_utf8_lossy(&audit.stdout));
}

#[test]
fn wrap_stops_at_column_lists_finds_the_json_flag_and_writes_the_starters() {
    if Command::new("findmnt").arg("--version").output().is_err() {
        eprintln!("skipped: findmnt is not installed");
        return;
    }
    let t = TestDir::new();
    let out =
        hcpx_in(t.path(), &t.join("home"), &["wrap", "findmnt", "--id", "mounts", "--out", "m", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = &stdout_json(&out)["scaffold"];
    assert_eq!(s["pack_id"], "mounts");
    let commands: Vec<&str> = s["commands"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for column in ["action", "avail", "fsroot", "fstype", "target", "source"] {
        assert!(
            !commands.contains(&column),
            "took the output column {column} for a subcommand: {commands:?}"
        );
    }
    assert_eq!(s["json_flag"], json!(["--json"]));
    assert!(
        s["options"].as_array().unwrap().iter().any(|o| o.as_str().unwrap().starts_with("-J, --json")),
        "{s}"
    );
    let dir = t.join("m");
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(dir.join("surface.json")).unwrap()).unwrap();
    assert_eq!(
        (surface["id"].clone(), surface["wrap"]["json_flag"].clone()),
        (json!("mounts"), json!(["--json"]))
    );
    use std::os::unix::fs::PermissionsExt;
    assert!(fs::metadata(dir.join("proof.sh")).unwrap().permissions().mode() & 0o111 != 0);
    let evals: Value = serde_json::from_str(&fs::read_to_string(dir.join("hcp.eval.json")).unwrap()).unwrap();
    assert!(!evals["cases"].as_array().unwrap().is_empty(), "{evals}");
    let lint = hcpx(t.path(), &["lint", dir.to_str().unwrap(), "--json"]);
    assert_eq!(stdout_json(&lint)["ok"], true, "{}", String::from_utf8_lossy(&lint.stdout));
    // The starter evals pass as written: every template is refused without confirm.
    let eval = hcpx_in(t.path(), &t.join("home"), &["eval", dir.to_str().unwrap(), "--json"]);
    assert_eq!(stdout_json(&eval)["ok"], true, "{}", String::from_utf8_lossy(&eval.stdout));
}

#[test]
fn wrap_warns_about_an_interpreter_and_a_missing_json_flag() {
    let t = TestDir::new();
    let out = hcpx_in(t.path(), &t.join("home"), &["wrap", "sh", "--out", "shpack"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning: `sh` is an interpreter"), "{err}");
    assert!(err.contains("names no JSON output flag"), "{err}");
    let bad = hcpx_in(t.path(), &t.join("home"), &["wrap", "sh", "--id", "Not An Id", "--out", "x"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("is not a pack id"));
}

/// A pack whose bin refuses `--json` (the flag the runtime appends when wrap.json_flag is unset) and prints
/// its argv otherwise.
fn flag_pack(dir: &Path, json_flag: Option<Value>, cli: Value) -> std::path::PathBuf {
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("flags");
    f.surface["cliBin"] = json!("flags");
    f.surface["wrap"] = json!({ "bin": "./bin/flags" });
    if let Some(j) = json_flag {
        f.surface["wrap"]["json_flag"] = j;
    }
    f.surface["verbs"] =
        json!({ "list": { "description": "Lists the things this tool knows as JSON.", "cli": cli } });
    f.surface.as_object_mut().unwrap().remove("stimulusTriggers");
    f.policy = json!({ "surface_id": "flags", "verbs": { "list": { "operation": "read" } } });
    f.harness = "# Flags\n\nA tool with its own JSON flag.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `list` | to list |\n".into();
    f.evals = None;
    f.files = vec![(
        "bin/flags".into(),
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --json ] && { echo \"flags: unrecognized option '--json'\" >&2; exit 2; }; done\necho '[]'\n".into(),
        true,
    )];
    f.write(dir)
}

#[test]
fn the_json_flag_is_never_passed_twice_and_a_refused_default_is_named() {
    let t = TestDir::new();
    let home = t.join("home");
    // A pack whose cli[] already holds its own JSON flag: the runtime does not append it again.
    let pack = flag_pack(t.path(), Some(json!(["-J"])), json!(["flags", "list", "-J"]));
    for args in [vec!["install", pack.to_str().unwrap()], vec!["activate", "flags"]] {
        assert!(hcpx_in(t.path(), &home, &args).status.success());
    }
    let out = hcpx_in(t.path(), &home, &["exec", "flags", "list", "--dry-run", "--json"]);
    assert_eq!(
        stdout_json(&out)["dry_run"]["argv"],
        json!(["list", "-J"]),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Without wrap.json_flag the runtime appends `--json`; a CLI that refuses it gets R001 at wrap.json_flag.
    let t2 = TestDir::new();
    let pack = flag_pack(t2.path(), None, json!(["flags", "list"]));
    let out = hcpx_in(
        t2.path(),
        &t2.join("home"),
        &["check", pack.to_str().unwrap(), "--probe", "--no-eval", "--json"],
    );
    let report = stdout_json(&out);
    let r001 = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "R001")
        .cloned()
        .unwrap_or_default();
    assert_eq!(r001["pointer"], "/wrap/json_flag", "{report}");
    assert!(r001["fix"].as_str().unwrap().contains("appends `--json`"), "{r001}");
}
