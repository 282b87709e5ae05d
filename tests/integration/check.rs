//! `hcpx check`: every rule's fixture triggers exactly that rule, and the score, grade and exit code agree; the
//! probe and eval layers, `--agent`, `--init-evals`, progress and `hcpx wrap`, all through the real binary.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::helpers::{copy_tree, hcpx, hcpx_with, repo, stdout_json, TestDir};

fn base() -> PathBuf {
    repo().join("tests/fixtures/check/base")
}

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let t = target.as_object_mut().unwrap();
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Writes the base pack with the fixture's changes applied into `dir/pack`; returns it and the extra check args.
fn apply(fixture: &Value, dir: &Path) -> (PathBuf, Vec<String>) {
    let pack = dir.join("pack");
    copy_tree(&base(), &pack);
    for (file, patch) in fixture["merge"].as_object().into_iter().flatten() {
        let path = pack.join(file);
        let mut v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        merge(&mut v, patch);
        fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }
    for (file, text) in fixture["write"].as_object().into_iter().flatten() {
        let path = pack.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, text.as_str().unwrap()).unwrap();
    }
    for (file, size) in fixture["sized"].as_object().into_iter().flatten() {
        let path = pack.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::File::create(&path).unwrap().set_len(size.as_u64().unwrap()).unwrap();
    }
    // Files from the repository, by path (a component, which a fixture cannot write as text).
    for (file, from) in fixture["copy"].as_object().into_iter().flatten() {
        fs::copy(repo().join(from.as_str().unwrap()), pack.join(file)).unwrap();
    }
    for file in fixture["remove"].as_array().into_iter().flatten() {
        fs::remove_file(pack.join(file.as_str().unwrap())).unwrap();
    }
    for (file, mode) in fixture["chmod"].as_object().into_iter().flatten() {
        let mode = u32::from_str_radix(mode.as_str().unwrap(), 8).unwrap();
        fs::set_permissions(pack.join(file), fs::Permissions::from_mode(mode)).unwrap();
    }
    if let Some(pad) = fixture.get("pad") {
        let path = pack.join(pad["file"].as_str().unwrap());
        let mut text = fs::read_to_string(&path).unwrap();
        text.push_str(&pad["line"].as_str().unwrap().repeat(pad["times"].as_u64().unwrap() as usize));
        fs::write(&path, text).unwrap();
    }
    let args = match fixture.get("args") {
        Some(a) => a.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect(),
        None => vec!["--probe".to_string()],
    };
    (pack, args)
}

fn check(t: &TestDir, pack: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["check", pack.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = hcpx(t.path(), &args);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

/// `(errors, warnings, --strict)`.
type Counts = (u64, u64, bool);
/// `(score, grade, ready, exit)`.
type Expect = (u64, &'static str, bool, i32);

/// `(errors, warnings, --strict)` → `(score, grade, ready, exit)`, written out by hand from the spec
/// (docs/spec.md §21, HCP's score and exit rules: 100, less 12 per error and 4
/// per warning; any error caps the grade at D (the text report names the grade the score alone has); ready to share at 90 or more with no errors; exit 0 with nothing
/// to fix, 2 on warnings only, 1 on any error, and --strict fails warnings too) and docs/check.md for what the
/// spec leaves open (never below 0; A from 90, B from 80, C from 70, D from 60, else F). Notes cost nothing, so
/// they have no column. A report whose counts have no row fails: add the row, worked out by hand.
const SCORES: &[(Counts, Expect)] = &[
    // Nothing to fix.
    ((0, 0, false), (100, "A", true, 0)),
    ((0, 0, true), (100, "A", true, 0)),
    // Warnings only: 4 points each; exit 2, or 1 under --strict; ready while 90 or more.
    ((0, 1, false), (96, "A", true, 2)),
    ((0, 1, true), (96, "A", true, 1)),
    ((0, 2, false), (92, "A", true, 2)),
    ((0, 2, true), (92, "A", true, 1)),
    ((0, 3, false), (88, "B", false, 2)),
    ((0, 5, false), (80, "B", false, 2)),
    ((0, 6, false), (76, "C", false, 2)),
    ((0, 7, false), (72, "C", false, 2)),
    ((0, 8, false), (68, "D", false, 2)),
    ((0, 10, false), (60, "D", false, 2)),
    ((0, 11, false), (56, "F", false, 2)),
    ((0, 25, false), (0, "F", false, 2)),
    ((0, 30, true), (0, "F", false, 1)),
    // Any error: 12 points each, the grade at most D, never ready, exit 1 with or without --strict.
    ((1, 0, false), (88, "D", false, 1)),
    ((1, 0, true), (88, "D", false, 1)),
    ((1, 1, false), (84, "D", false, 1)),
    ((1, 2, false), (80, "D", false, 1)),
    ((2, 0, false), (76, "D", false, 1)),
    ((2, 1, false), (72, "D", false, 1)),
    ((3, 0, false), (64, "D", false, 1)),
    ((3, 1, false), (60, "D", false, 1)),
    ((3, 2, false), (56, "F", false, 1)),
    ((4, 0, false), (52, "F", false, 1)),
    // The spec's own example: "Score 8/100, grade F. 7 error(s), 2 warning(s)."
    ((7, 2, false), (8, "F", false, 1)),
    ((9, 0, false), (0, "F", false, 1)),
    ((9, 0, true), (0, "F", false, 1)),
];

/// The row of [`SCORES`] for these counts.
fn expected(errors: u64, warnings: u64, strict: bool) -> Expect {
    match SCORES.iter().find(|(k, _)| *k == (errors, warnings, strict)) {
        Some((_, row)) => *row,
        None => panic!(
            "no row for ({errors}, {warnings}, {strict}) in SCORES: add it, worked out by hand from the spec"
        ),
    }
}

fn assert_consistent(report: &Value, exit: i32, strict: bool) {
    let count =
        |v: &Value, sev: &str| v.as_array().unwrap().iter().filter(|f| f["severity"] == sev).count() as u64;
    let (errors, warnings) = (count(&report["findings"], "error"), count(&report["findings"], "warning"));
    let (score, grade, ready, code) = expected(errors, warnings, strict);
    assert_eq!(report["errors"], errors);
    assert_eq!(report["warnings"], warnings);
    assert_eq!(report["score"], score, "{report}");
    assert_eq!(report["grade"], grade, "{report}");
    assert_eq!(report["ready"], ready, "{report}");
    assert_eq!(exit, code, "{report}");
    // Each category is scored the same way from its own findings.
    for c in report["categories"].as_array().unwrap() {
        let (e, w) = (c["errors"].as_u64().unwrap(), c["warnings"].as_u64().unwrap());
        assert_eq!(c["score"], expected(e, w, false).0, "{c}");
    }
}

#[test]
fn every_score_row_is_what_the_library_computes() {
    // Rows no fixture reaches (a floor at 0, each grade band) are checked against the library's functions.
    for &((errors, warnings, _), (score, grade, _, _)) in SCORES {
        let got = hcpx_author::check::score(errors as usize, warnings as usize);
        assert_eq!(got, score as u32, "score of ({errors}, {warnings})");
        let got = hcpx_author::check::grade(got, errors as usize);
        assert_eq!(got.to_string(), grade, "grade of ({errors}, {warnings})");
    }
    // A grade an error capped says so in the text report (golden check-two-issues: 76, a D, the score alone a C).
}

#[test]
fn the_base_fixture_is_clean_under_probe_and_strict() {
    let t = TestDir::new();
    let (exit, report) = check(&t, &base(), &["--probe", "--strict"]);
    assert_eq!(report["findings"], json!([]), "{report}");
    assert_eq!((exit, report["score"].as_u64(), report["grade"].as_str()), (0, Some(100), Some("A")));
    assert_eq!(report["probes"].as_array().unwrap().len(), 2);
    assert_eq!(report["evals"]["passed"], 3);
}

#[test]
fn every_rule_has_a_fixture_that_triggers_exactly_that_rule() {
    let dir = repo().join("tests/fixtures/check/rules");
    let ids: BTreeSet<String> = hcpx_author::check::RULES.iter().map(|r| r.id.to_string()).collect();
    let files: BTreeSet<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".json").to_string())
        .collect();
    assert_eq!(ids, files, "one fixture per rule, and no fixture without a rule");
    assert!(ids.len() >= 60, "about 60 rules: {}", ids.len());
    let mut failures = Vec::new();
    for id in &ids {
        // R016 is what Landlock hides: without the layer there is nothing hidden to find.
        if id == "R016" && !crate::escape::layer("landlock") {
            continue;
        }
        let fixture: Value =
            serde_json::from_str(&fs::read_to_string(dir.join(format!("{id}.json"))).unwrap()).unwrap();
        let t = TestDir::new();
        let (pack, args) = apply(&fixture, t.path());
        let mut argv: Vec<&str> = vec!["check", pack.to_str().unwrap(), "--json"];
        argv.extend(args.iter().map(String::as_str));
        let out = hcpx(t.path(), &argv);
        let report = stdout_json(&out);
        let found: BTreeSet<String> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect();
        if found != BTreeSet::from([id.clone()]) {
            failures.push(format!(
                "{id} ({}): found {found:?}\n{}",
                fixture["about"],
                serde_json::to_string_pretty(&report["findings"]).unwrap()
            ));
            continue;
        }
        let rule = hcpx_author::check::RULES.iter().find(|r| r.id == id).unwrap();
        for f in report["findings"].as_array().unwrap() {
            assert_eq!(f["severity"], rule.severity.as_str(), "{id}");
            assert_eq!(f["category"], rule.category.as_str(), "{id}");
            assert_eq!(f["docs"], format!("docs/rules.md#{}", id.to_lowercase()));
            assert!(
                !f["fix"].as_str().unwrap().is_empty() && !f["message"].as_str().unwrap().is_empty(),
                "{id}: {f}"
            );
        }
        assert_consistent(&report, out.status.code().unwrap(), false);
        // --strict turns warnings into failure, never notes.
        let strict_exit = hcpx(t.path(), &[&argv[..], &["--strict"]].concat()).status.code().unwrap();
        let want = if rule.severity.as_str() == "info" { 0 } else { 1 };
        assert_eq!(strict_exit, want, "{id} --strict");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn lint_failures_are_l_findings_and_stop_the_other_layers() {
    let t = TestDir::new();
    let pack = t.join("pack");
    copy_tree(&base(), &pack);
    fs::write(
        pack.join("policy.json"),
        r#"{ "surface_id": "notes", "verbs": { "list": { "operation": "read", "confrim": true } } }"#,
    )
    .unwrap();
    let (exit, report) = check(&t, &pack, &["--probe"]);
    let ids: BTreeSet<&str> =
        report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|i| i.starts_with("L-")), "{report}");
    assert!(ids.contains("L-unknown_field"), "{report}");
    assert!(report.get("probes").is_none(), "no probe runs on a pack that fails lint");
    assert_eq!(report["findings"][0]["docs"], "docs/lint.md#unknown_field");
    assert_consistent(&report, exit, false);
    // A missing directory is a finding too, never a crash.
    let (exit, report) = check(&t, &t.join("nope"), &[]);
    assert_eq!((exit, report["findings"][0]["id"].as_str()), (1, Some("L-missing_file")));
}

/// A pack whose CLI logs every call to `marks/calls.log` beside the test, so a test can see what ran; the
/// operator's sandbox.json (which `hcpx check` lends its trial store) grants the pack that one directory.
fn logging_pack(t: &TestDir) -> PathBuf {
    let pack = t.join("pack");
    copy_tree(&base(), &pack);
    fs::create_dir_all(t.join("marks")).unwrap();
    fs::create_dir_all(t.join("hcp-home")).unwrap();
    let grant = json!({ "packs": { "notes": { "write": [t.join("marks")] } } });
    fs::write(t.join("hcp-home/sandbox.json"), grant.to_string()).unwrap();
    let log = t.join("marks/calls.log");
    let script = fs::read_to_string(pack.join("bin/notes")).unwrap().replacen(
        "case",
        &format!("echo \"$*\" >> {}\ncase", log.display()),
        1,
    );
    fs::write(pack.join("bin/notes"), script).unwrap();
    pack
}

#[test]
fn probes_never_run_a_write_and_reach_reads_with_arguments() {
    let t = TestDir::new();
    let pack = logging_pack(&t);
    let (exit, report) = check(&t, &pack, &["--probe", "--no-eval"]);
    assert_eq!(exit, 0, "{report}");
    let calls = fs::read_to_string(t.join("marks/calls.log")).unwrap();
    assert!(!calls.contains("remove"), "a probe ran a write: {calls}");
    assert!(
        calls.contains("show n1"),
        "the first eval case that expects success supplies show's arguments: {calls}"
    );
    let probes = report["probes"].as_array().unwrap();
    assert_eq!(probes.iter().map(|p| p["verb"].as_str().unwrap()).collect::<Vec<_>>(), ["list", "show"]);
    for p in probes {
        assert_eq!(
            (p["exit_code"].as_i64(), p["json"].as_bool(), p["ran"].as_bool()),
            (Some(0), Some(true), Some(true)),
            "{p}"
        );
        assert!(p["tokens"].as_u64().unwrap() > 0 && p["ms"].is_u64(), "{p}");
    }
    // Without --probe nothing but the eval layer runs the CLI, and the report says the probe layer was skipped.
    fs::remove_file(t.join("marks/calls.log")).unwrap();
    let (_, report) = check(&t, &pack, &["--no-eval"]);
    assert!(!t.join("marks/calls.log").exists(), "static layers never run the CLI");
    assert!(report["skipped"].to_string().contains("--probe"), "{report}");
}

#[test]
fn project_mode_probes_run_in_the_callers_directory() {
    let t = TestDir::new();
    let pack = t.join("pack");
    copy_tree(&base(), &pack);
    // `list` reads a file only the project holds, and tries to write one there.
    let notes = fs::read_to_string(pack.join("bin/notes")).unwrap().replacen(
        "list) ",
        "list) echo read > last-read.txt; cat here.json; exit $? ;; unused) ",
        1,
    );
    fs::write(pack.join("bin/notes"), notes).unwrap();
    let mut surface: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("surface.json")).unwrap()).unwrap();
    surface["wrap"]["workspace"] = json!({ "mode": "project" });
    fs::write(pack.join("surface.json"), surface.to_string()).unwrap();
    let project = t.join("project");
    fs::create_dir(&project).unwrap();
    fs::write(project.join("here.json"), "[]").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(["check", pack.to_str().unwrap(), "--probe", "--no-eval", "--json"])
        .env("HCP_HOME", t.join("home"))
        .env_remove("HCP_PROJECT_DIR")
        .current_dir(&project)
        .output()
        .unwrap();
    let report = stdout_json(&out);
    let list = report["probes"].as_array().unwrap().iter().find(|p| p["verb"] == "list").cloned().unwrap();
    assert_eq!(
        list["exit_code"], 0,
        "the probe ran in the directory check started from (it read here.json): {report}"
    );
    let canonical = fs::canonicalize(&project).unwrap();
    let ran_in = report["ran_in"].as_str().unwrap();
    assert!(
        ran_in.contains(&canonical.display().to_string()) || ran_in.contains(&project.display().to_string()),
        "check says where probes run: {report}"
    );
    if !crate::escape::layer("landlock") {
        return;
    }
    // The probe ran confined: a read gets the project read-only, so it could not write, and R011 has nothing to say.
    assert!(!project.join("last-read.txt").exists(), "a read probe wrote into the project");
    assert!(report["findings"].as_array().unwrap().iter().all(|f| f["id"] != "R011"), "{report}");
}

#[test]
fn the_eval_and_probe_layers_report_failures_timeouts_text_and_budget() {
    // A CLI whose reads fail, hang, print text and flood: each shows in both layers.
    let t = TestDir::new();
    let pack = t.join("pack");
    copy_tree(&base(), &pack);
    let script = "#!/bin/sh\ncase \"$1\" in\n  list) echo 'n1 First note' ;;\n  show) sleep 30 ;;\n  remove) echo '{}' ;;\nesac\n";
    fs::write(pack.join("bin/notes"), script).unwrap();
    let (exit, report) = check(&t, &pack, &["--probe", "--timeout", "800"]);
    let ids: BTreeSet<&str> =
        report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from(["R002", "R006", "E005"]), "{report}");
    let reasons: Vec<&str> =
        report["evals"]["cases"].as_array().unwrap().iter().filter_map(|c| c["reason"].as_str()).collect();
    assert!(reasons.iter().any(|r| r.contains("expected JSON output")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("timed out")), "{reasons:?}");
    assert!(report["evals"]["p95_ms"].as_u64().unwrap() >= report["evals"]["p50_ms"].as_u64().unwrap());
    assert_consistent(&report, exit, false);
    // A flood over the token budget: R003 in probes, and the case's max_tokens in evals.
    let flood = "#!/bin/sh\ncase \"$1\" in\n  list) printf '[\"n1\",\"'; head -c 120000 /dev/zero | tr '\\0' a; printf '\"]\\n' ;;\n  show) echo '{\"body\":\"Hello\"}' ;;\nesac\n";
    fs::write(pack.join("bin/notes"), flood).unwrap();
    let (_, report) = check(&t, &pack, &["--probe"]);
    let ids: BTreeSet<&str> =
        report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(ids, BTreeSet::from(["R003", "E005"]), "{report}");
    assert!(report["evals"]["cases"][0]["reason"].as_str().unwrap().contains("max_tokens"), "{report}");
}

#[test]
fn init_evals_writes_the_starter_file_then_adds_only_what_it_lacks() {
    let t = TestDir::new();
    let pack = t.join("pack");
    copy_tree(&base(), &pack);
    fs::remove_file(pack.join("hcp.eval.json")).unwrap();
    let mut surface: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("surface.json")).unwrap()).unwrap();
    surface["verbs"]["remove"]["args"]["properties"]["note"].as_object_mut().unwrap().remove("examples");
    fs::write(pack.join("surface.json"), surface.to_string()).unwrap();
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--init-evals", "--json"]);
    let written: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("hcp.eval.json")).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({ "cases": [
            { "name": "list returns JSON", "verb": "list", "args": {}, "expect": { "ok": true, "json": true, "max_ms": 3000, "max_tokens": 5000 } },
            { "name": "show returns JSON", "verb": "show", "args": { "note": "n1" }, "expect": { "ok": true, "json": true, "max_ms": 3000, "max_tokens": 5000 } },
            { "name": "remove is refused without confirm", "verb": "remove", "args": { "note": "TODO note" }, "expect": { "ok": false, "error": "confirm required" } }
        ] })
    );
    // The check then runs the new cases: the TODO case fails without running (E005).
    let report = stdout_json(&out);
    let e005: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|f| f["id"] == "E005").collect();
    assert_eq!(e005.len(), 1, "{report}");
    assert!(e005[0]["message"].as_str().unwrap().contains("TODO"), "{report}");
    assert_eq!(report["evals"]["cases"][2]["ran"], false);
    // A second --init-evals leaves an edited file as it is (#34); --add-evals adds what it lacks (#26), and never
    // overwrites one it cannot read.
    fs::write(pack.join("hcp.eval.json"), r#"{ "cases": [] }"#).unwrap();
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--init-evals"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("exists; left as it is"));
    assert_eq!(fs::read_to_string(pack.join("hcp.eval.json")).unwrap(), r#"{ "cases": [] }"#);
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--add-evals"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("added 3 missing case(s)"));
    let again: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("hcp.eval.json")).unwrap()).unwrap();
    assert_eq!(again, written);
    fs::write(pack.join("hcp.eval.json"), "{ not json").unwrap();
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--add-evals"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not valid JSON"));
    assert_eq!(fs::read_to_string(pack.join("hcp.eval.json")).unwrap(), "{ not json");
}

/// A fake CLI on a PATH of the test's own, with subcommands in its `--help`.
fn fake_cli(t: &TestDir) -> PathBuf {
    let bin = t.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let help = "usage: tasks <command> [options]\n\nCommands:\n  list      List open tasks\n  show      Show one task\n  add       Add a task\n\nOptions:\n  -h, --help   Show this help\n  --json       Print JSON\n";
    let script = format!("#!/bin/sh\nif [ \"$1\" = --help ]; then cat <<'EOF'\n{help}EOF\nexit 0; fi\ncase \"$1\" in\n  list) echo '[{{\"id\":1,\"title\":\"write tests\"}}]' ;;\n  show) echo '{{\"id\":1,\"title\":\"write tests\"}}' ;;\n  *) echo \"tasks: unknown command $1\" >&2; exit 2 ;;\nesac\n");
    fs::write(bin.join("tasks"), script).unwrap();
    fs::set_permissions(bin.join("tasks"), fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn with_path(t: &TestDir, bin: &Path, args: &[&str]) -> Output {
    let path = format!("{}:/usr/bin:/bin", bin.display());
    hcpx_with(t.path(), args, &[("PATH", &path)], None)
}

#[test]
fn wrap_scaffolds_a_pack_that_m018_flags_and_the_check_loop_takes_to_90() {
    let t = TestDir::new();
    let bin = fake_cli(&t);
    let out = with_path(&t, &bin, &["wrap", "tasks", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = stdout_json(&out);
    assert_eq!(v["scaffold"]["commands"], json!(["list", "show", "add"]));
    let pack = t.join("tasks");
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("surface.json")).unwrap()).unwrap();
    assert_eq!(surface["wrap"]["workspace"]["mode"], "project");
    assert_eq!(surface["wrap"]["bin"], "tasks");
    // Never over an existing pack.
    let again = with_path(&t, &bin, &["wrap", "tasks"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let out = with_path(&t, &bin, &["check", "tasks", "--probe", "--agent"]);
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{md}");
    assert!(md.starts_with("# hcpx check: tasks\n\nScore "), "{md}");
    assert!(md.contains("\n## Fix now (errors)\n\n1. **surface.json `/verbs`** (M018): 3 command(s) still carry the scaffold template"), "{md}");
    assert!(
        md.contains("   Do: Replace the template commands with 5 to 12 real commands from \"tasks --help\""),
        "{md}"
    );
    assert!(md.contains("   Why: docs/rules.md#m018"), "{md}");
    assert!(md.contains("## Loop"), "{md}");

    // The loop: replace the templates with real commands, add evals, and the pack reaches 90+ with no errors.
    let mut surface = surface;
    surface["verbs"] = json!({
        "list": { "description": "Open tasks with their ids and titles.", "cli": ["tasks", "list"],
                  "title": { "live": ["Listing tasks"], "done": ["Listed tasks"] } },
        "show": { "description": "One task by its id from list.", "cli": ["tasks", "show", "{{task}}"],
                  "args": { "type": "object", "properties": { "task": { "type": "integer", "description": "Task id from list", "examples": [1] } }, "required": ["task"] },
                  "title": { "live": ["Opening task {{task}}", "Opening a task"], "done": ["Opened task {{task}}", "Opened a task"] } }
    });
    fs::write(pack.join("surface.json"), surface.to_string()).unwrap();
    fs::write(pack.join("policy.json"), r#"{ "surface_id": "tasks", "verbs": { "list": { "operation": "read" }, "show": { "operation": "read" } } }"#).unwrap();
    fs::write(pack.join("HARNESS.md"), "# Tasks\n\nThe project's task list: `list` shows open tasks with ids, `show` one task by id. Both only read.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `list` | Start here. |\n| `show` | One task by id. |\n").unwrap();
    // The starter evals named the templates: with them gone, lint names the stale case; the author starts the
    // evals again from the real commands.
    let stale = with_path(&t, &bin, &["lint", "tasks", "--json"]);
    assert!(String::from_utf8_lossy(&stale.stdout).contains("eval_unknown_command"));
    fs::remove_file(pack.join("hcp.eval.json")).unwrap();
    let out = with_path(&t, &bin, &["check", "tasks", "--probe", "--init-evals", "--json"]);
    let report = stdout_json(&out);
    assert_eq!(report["errors"], 0, "{report}");
    assert!(report["score"].as_u64().unwrap() >= 90, "{report}");
    assert_eq!(report["evals"]["passed"], 2, "{report}");
}

#[test]
fn wrap_refuses_what_is_not_a_cli_on_path() {
    let t = TestDir::new();
    for (bin, says) in [("../evil", "not a bare command name"), ("hcpx-no-such-cli", "not on PATH")] {
        let out = hcpx(t.path(), &["wrap", bin, "--json"]);
        assert_eq!(out.status.code(), Some(1));
        let v = stdout_json(&out);
        assert!(v["error"].as_str().unwrap().contains(says), "{v}");
    }
}

#[test]
fn a_terminal_shows_probe_and_case_progress_on_stderr_only() {
    let t = TestDir::new();
    let bin = env!("CARGO_BIN_EXE_hcpx");
    let cmd = format!("{bin} check {} --probe 2>&1 >/dev/null", base().display());
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("HCP_HOME", t.join("home"))
        .current_dir(t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("probe 2 of 2: Opening note n1"), "{text:?}");
    assert!(text.contains("case 3 of 3: "), "{text:?}");
    // Without a terminal, stderr carries no progress.
    let out = hcpx(t.path(), &["check", base().to_str().unwrap(), "--probe"]);
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains(" of "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("notes: score 100/100, grade A"));
}

#[test]
fn example_and_real_cli_packs_score_90_with_no_errors() {
    // (pack, must have no findings at all under --strict)
    let packs = [
        ("ledger", false),
        ("transit", false),
        ("transit-composite", false),
        ("jq", true),
        ("sqlite", true),
        ("ip", true),
        ("git", false),
    ];
    for (p, strict) in packs {
        let t = TestDir::new();
        let dir = repo().join("packs").join(p);
        let project = t.join("project");
        if dir.join("fixture.sh").exists() {
            let ok = Command::new("bash").arg(dir.join("fixture.sh")).arg(&project).output().unwrap();
            assert!(ok.status.success(), "{p} fixture: {}", String::from_utf8_lossy(&ok.stderr));
        } else {
            fs::create_dir_all(&project).unwrap();
        }
        if p == "ip" {
            // ip reads the network state over netlink, which its manifest declares and the operator grants.
            fs::create_dir_all(t.join("home")).unwrap();
            fs::write(t.join("home/sandbox.json"), r#"{ "packs": { "ip": { "network": ["netlink"] } } }"#)
                .unwrap();
        }
        let mut args = vec!["check", dir.to_str().unwrap(), "--probe", "--json"];
        if strict {
            args.push("--strict");
        }
        let out = Command::new(env!("CARGO_BIN_EXE_hcpx"))
            .args(&args)
            .env("HCP_HOME", t.join("home"))
            .current_dir(&project)
            .output()
            .unwrap();
        let report = stdout_json(&out);
        assert_eq!(report["errors"], 0, "{p}: {report}");
        assert!(report["score"].as_u64().unwrap() >= 90 && report["ready"] == true, "{p}: {report}");
        assert_eq!(report["evals"]["failed"], 0, "{p}: {report}");
        if strict {
            assert_eq!(
                (out.status.code(), report["findings"].as_array().unwrap().len()),
                (Some(0), 0),
                "{p}: {report}"
            );
        }
        assert_consistent(&report, out.status.code().unwrap(), strict);
    }
}

#[test]
fn a_value_spliced_into_sql_is_an_error_and_a_closed_one_is_not() {
    // The issue's attack: a query-language pack that scored 100 while a caller could drop the table through it.
    let t = TestDir::new();
    let mut f = crate::helpers::Fixture::wrap();
    f.surface["cliBin"] = json!("sqlite3");
    f.surface["wrap"] =
        json!({ "bin": "sqlite3", "json_flag": ["-json"], "workspace": { "mode": "project" } });
    f.surface["verbs"] = json!({
        "add": {
            "description": "Add one note with the given body text.",
            "cli": ["sqlite3", "notes.db", "INSERT INTO notes(body) VALUES ('{{body}}')"],
            "args": { "type": "object", "properties": { "body": { "type": "string", "description": "The note's text", "examples": ["hi"] } }, "required": ["body"] }
        },
        "count": {
            "description": "How many rows one table of the notes database holds.",
            "cli": ["sqlite3", "notes.db", "SELECT count(*) FROM \"{{table}}\""],
            "args": { "type": "object", "properties": { "table": { "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "Table name", "examples": ["notes"] } }, "required": ["table"] }
        }
    });
    f.surface.as_object_mut().unwrap().remove("stimulusTriggers");
    f.policy = json!({ "surface_id": "demo", "verbs": { "add": { "operation": "write", "confirm": true }, "count": { "operation": "read" } } });
    f.files.clear();
    f.harness = "# Notes\n\nA notes database.\n".into();
    let dir = f.write(t.path());
    let (_, report) = check(&t, &dir, &["--no-eval"]);
    let m027: Vec<&Value> =
        report["findings"].as_array().unwrap().iter().filter(|x| x["id"] == "M027").collect();
    assert_eq!(m027.len(), 1, "{report}");
    assert!(m027[0]["message"].as_str().unwrap().contains("`add` splices `{{body}}`"), "{report}");
    assert_eq!(m027[0]["severity"], "error");
}
