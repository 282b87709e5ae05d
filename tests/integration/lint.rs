//! `hcpx lint`: the example packs are clean, and every lint kind has a fixture that triggers exactly that kind.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use crate::helpers::{hcpx, remove, repo, set, stdout_json, Fixture, TestDir};

struct Row {
    kind: &'static str,
    prep: fn(&mut Fixture),
    after: fn(&Path),
}

fn none(_: &Path) {}

fn simple_skill(f: &mut Fixture) {
    f.harness = "# Demo\n\nA demo pack.\n".into();
}

const ROWS: &[Row] = &[
    Row { kind: "missing_file", prep: |_| {}, after: |p| fs::remove_file(p.join("HARNESS.md")).unwrap() },
    Row {
        kind: "file_unreadable",
        prep: |_| {},
        after: |p| fs::write(p.join("HARNESS.md"), b"# Demo\n\nbad \xff byte\n").unwrap(),
    },
    Row {
        kind: "invalid_json",
        prep: |_| {},
        after: |p| fs::write(p.join("surface.json"), "{\"id\": \"demo\",").unwrap(),
    },
    Row {
        kind: "invalid_field",
        prep: |f| set(&mut f.policy, "/verbs/list/operation", json!("delete")),
        after: none,
    },
    Row {
        kind: "unknown_field",
        prep: |f| set(&mut f.policy, "/verbs/list/confrim", json!(true)),
        after: none,
    },
    Row {
        kind: "agent_env_denied",
        prep: |f| set(&mut f.surface, "/wrap/agent_env/LD_PRELOAD", json!("./lib/hook.so")),
        after: none,
    },
    Row {
        kind: "bad_name",
        prep: |f| {
            set(&mut f.surface, "/id", json!("Demo"));
            set(&mut f.policy, "/surface_id", json!("Demo"));
        },
        after: none,
    },
    Row {
        kind: "surface_id_mismatch",
        prep: |f| set(&mut f.policy, "/surface_id", json!("other")),
        after: none,
    },
    Row {
        kind: "hcp_mismatch",
        prep: |f| set(&mut f.surface, "/hcp", json!({ "hcp": 1, "pack_id": "other" })),
        after: none,
    },
    Row { kind: "wrap_missing", prep: |f| remove(&mut f.surface, "/wrap/bin"), after: none },
    Row {
        kind: "wrap_no_commands",
        prep: |f| {
            set(&mut f.surface, "/verbs", json!({}));
            set(&mut f.policy, "/verbs", json!({}));
            simple_skill(f);
        },
        after: none,
    },
    Row { kind: "control_binding", prep: |f| set(&mut f.surface, "/plane", json!("control")), after: none },
    Row { kind: "openapi_missing", prep: |f| set(&mut f.surface, "/kind", json!("openapi")), after: none },
    Row {
        kind: "sense_no_trigger",
        prep: |f| {
            set(&mut f.surface, "/kind", json!("sense_only"));
            remove(&mut f.surface, "/stimulusTriggers");
            remove(&mut f.policy, "/stimuli");
        },
        after: none,
    },
    Row { kind: "component_missing", prep: |f| remove(&mut f.surface, "/kind"), after: none },
    Row {
        kind: "path_escapes",
        prep: |f| set(&mut f.surface, "/wrap/bin", json!("../outside/demo")),
        after: none,
    },
    Row {
        kind: "path_missing",
        prep: |f| set(&mut f.surface, "/wrap/bin", json!("./bin/nope")),
        after: none,
    },
    Row { kind: "bin_not_executable", prep: |f| f.files[0].2 = false, after: none },
    Row { kind: "policy_missing", prep: |f| remove(&mut f.policy, "/verbs/list"), after: none },
    Row {
        kind: "policy_extra",
        prep: |f| set(&mut f.policy, "/verbs/extra", json!({ "operation": "read" })),
        after: none,
    },
    Row { kind: "stimulus_missing", prep: |f| remove(&mut f.policy, "/stimuli"), after: none },
    Row {
        kind: "stimulus_extra",
        prep: |f| set(&mut f.policy, "/stimuli/other.thing", json!({ "delivery": "announce" })),
        after: none,
    },
    Row {
        kind: "confirm_on_read",
        prep: |f| set(&mut f.policy, "/verbs/list/confirm", json!(true)),
        after: none,
    },
    Row {
        kind: "skill_no_lead",
        prep: |f| f.harness = "## Hot path\n\nNothing before the first heading.\n".into(),
        after: none,
    },
    Row { kind: "skill_unknown_command", prep: |f| f.harness.push_str("| `nope` | never |\n"), after: none },
    Row {
        kind: "cli_bin_mismatch",
        prep: |f| set(&mut f.surface, "/verbs/list/cli", json!(["other", "list"])),
        after: none,
    },
    Row {
        kind: "bad_placeholder",
        prep: |f| set(&mut f.surface, "/verbs/list/cli", json!(["demo", "list", "{{oops"])),
        after: none,
    },
    Row {
        kind: "unknown_placeholder",
        prep: |f| set(&mut f.surface, "/verbs/list/cli", json!(["demo", "list", "--page={{page}}"])),
        after: none,
    },
    Row {
        kind: "invalid_schema",
        prep: |f| set(&mut f.surface, "/verbs/show/args/required", json!(["id", "missing"])),
        after: none,
    },
    Row {
        kind: "schema_ref",
        prep: |f| {
            set(
                &mut f.surface,
                "/verbs/show/args/properties/format",
                json!({ "$ref": "https://example.com/format.json" }),
            )
        },
        after: none,
    },
    Row {
        kind: "bad_pass_through",
        prep: |f| set(&mut f.surface, "/pass_through", json!({ "allowedSubcommands": [], "maxArgv": 2 })),
        after: none,
    },
    Row {
        kind: "host_malformed",
        prep: |f| set(&mut f.surface, "/hosts", json!(["localhost"])),
        after: none,
    },
    Row {
        kind: "host_ip_literal",
        prep: |f| set(&mut f.surface, "/hosts", json!(["169.254.169.254"])),
        after: none,
    },
    Row {
        kind: "host_not_bare",
        prep: |f| set(&mut f.surface, "/verbs/list/hosts", json!(["https://api.example.com/v1?key=x"])),
        after: none,
    },
    Row {
        kind: "host_port_range",
        prep: |f| set(&mut f.surface, "/hosts", json!(["api.example.com:0"])),
        after: none,
    },
    Row {
        kind: "inject_invalid",
        prep: |f| {
            set(&mut f.surface, "/hosts", json!(["api.example.com"]));
            set(&mut f.surface, "/wrap/agent_env/TOKEN", json!("{{binding.token}}"));
            set(
                &mut f.surface,
                "/binding",
                json!({ "mode": "local", "inject": [{ "field": "token", "host": "api.example.com" }] }),
            )
        },
        after: none,
    },
    Row {
        kind: "inject_host_undeclared",
        prep: |f| {
            set(&mut f.surface, "/wrap/agent_env/TOKEN", json!("{{binding.token}}"));
            set(
                &mut f.surface,
                "/binding",
                json!({ "mode": "local", "inject": [{ "field": "token", "host": "api.example.com", "header": "authorization" }] }),
            )
        },
        after: none,
    },
    Row {
        kind: "eval_unknown_command",
        prep: |f| {
            f.evals =
                Some(json!({ "cases": [{ "name": "nope works", "verb": "nope", "expect": { "ok": true } }] }))
        },
        after: none,
    },
];

fn lint_json(t: &TestDir, dir: &Path) -> (i32, Value) {
    let out = hcpx(t.path(), &["lint", dir.to_str().unwrap(), "--json"]);
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

fn kinds(report: &Value) -> BTreeSet<String> {
    report["issues"].as_array().unwrap().iter().map(|i| i["kind"].as_str().unwrap().to_string()).collect()
}

#[test]
fn example_packs_are_clean() {
    let t = TestDir::new();
    for name in ["ledger", "transit"] {
        let dir = repo().join("packs").join(name);
        let (code, report) = lint_json(&t, &dir);
        assert_eq!(code, 0, "{name}: {report}");
        assert_eq!(report, json!({ "ok": true, "pack_id": name, "issues": [] }));
    }
}

#[test]
fn the_base_fixture_is_clean() {
    let t = TestDir::new();
    let dir = Fixture::wrap().write(t.path());
    let (code, report) = lint_json(&t, &dir);
    assert_eq!((code, report["ok"].clone()), (0, json!(true)), "{report}");
}

#[test]
fn every_kind_has_a_fixture_that_triggers_exactly_it() {
    let registry: BTreeSet<&str> = hcpx_pack::lint::KINDS.iter().map(|k| k.id).collect();
    let covered: BTreeSet<&str> = ROWS.iter().map(|r| r.kind).collect();
    assert_eq!(registry, covered, "every lint kind needs a row in ROWS");
    for row in ROWS {
        let t = TestDir::new();
        let mut f = Fixture::wrap();
        (row.prep)(&mut f);
        let dir = f.write(t.path());
        (row.after)(&dir);
        let (code, report) = lint_json(&t, &dir);
        assert_eq!(code, 1, "{}: {report}", row.kind);
        assert_eq!(report["ok"], json!(false));
        assert_eq!(kinds(&report), BTreeSet::from([row.kind.to_string()]), "{}: {report:#}", row.kind);
        for issue in report["issues"].as_array().unwrap() {
            for field in ["message", "fix", "file"] {
                assert!(!issue[field].as_str().unwrap().is_empty(), "{}: empty {field}", row.kind);
            }
            assert!(issue["pointer"].is_string());
            let msg = issue["message"].as_str().unwrap();
            let starts_lower =
                msg.starts_with("HARNESS.md") || msg.chars().next().is_some_and(|c| !c.is_uppercase());
            assert!(starts_lower, "messages are lower-case: {msg}");
        }
        // In `hcpx check` the same fixture is exactly `L-<kind>`, an error, and stops the other layers.
        let out = hcpx(t.path(), &["check", dir.to_str().unwrap(), "--probe", "--json"]);
        let check = stdout_json(&out);
        let ids: BTreeSet<String> = check["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids, BTreeSet::from([format!("L-{}", row.kind)]), "{}: {check:#}", row.kind);
        assert_eq!(
            (out.status.code(), check["grade"].as_str()),
            (Some(1), Some("D")),
            "{}: {check}",
            row.kind
        );
    }
}

#[test]
fn text_output_names_kind_file_and_fix() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    set(&mut f.policy, "/verbs/list/confrim", json!(true));
    let dir = f.write(t.path());
    let out = hcpx(t.path(), &["lint", dir.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(text.contains("error[unknown_field] policy.json /verbs/list/confrim"), "{text}");
    assert!(text.contains("fix: remove `confrim`"), "{text}");
    assert!(text.contains("demo: 1 lint issue(s)"), "{text}");
}

#[test]
fn unknown_fields_name_their_pointer() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    set(&mut f.surface, "/verbs/show/titel", json!("x"));
    let (_, report) = lint_json(&t, &f.write(t.path()));
    assert_eq!(report["issues"][0]["kind"], "unknown_field");
    assert_eq!(report["issues"][0]["file"], "surface.json");
    assert_eq!(report["issues"][0]["pointer"], "/verbs/show/titel");
}

#[test]
fn a_repeated_policy_row_is_refused() {
    let t = TestDir::new();
    let dir = Fixture::wrap().write(t.path());
    let text = fs::read_to_string(dir.join("policy.json")).unwrap();
    let doubled =
        text.replacen("\"remove\": {", "\"remove\": { \"operation\": \"write\" },\n    \"remove\": {", 1);
    assert_ne!(text, doubled);
    fs::write(dir.join("policy.json"), doubled).unwrap();
    let (code, report) = lint_json(&t, &dir);
    assert_eq!(code, 1);
    assert_eq!(kinds(&report), BTreeSet::from(["invalid_field".to_string()]));
    assert!(report["issues"][0]["message"].as_str().unwrap().contains("duplicate key `remove`"), "{report}");
}

#[test]
fn a_bin_linked_out_of_the_pack_escapes() {
    let t = TestDir::new();
    let outside = t.join("outside-tool");
    fs::write(&outside, "#!/bin/sh\necho hi\n").unwrap();
    let mut f = Fixture::wrap();
    f.files.clear();
    set(&mut f.surface, "/wrap/bin", json!("./bin/demo"));
    let dir = f.write(t.path());
    fs::create_dir_all(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("bin/demo")).unwrap();
    let (code, report) = lint_json(&t, &dir);
    assert_eq!(code, 1);
    assert_eq!(kinds(&report), BTreeSet::from(["path_escapes".to_string()]), "{report}");
    // An absolute path is refused the same way.
    set(&mut f.surface, "/wrap/bin", json!("/bin/sh"));
    let dir2 = t.join("second");
    fs::create_dir_all(&dir2).unwrap();
    let (_, report) = lint_json(&t, &f.write(&dir2));
    assert_eq!(kinds(&report), BTreeSet::from(["path_escapes".to_string()]), "{report}");
}

#[test]
fn pack_files_linked_out_of_the_pack_are_not_read() {
    let t = TestDir::new();
    let dir = Fixture::wrap().write(t.path());
    let secret = t.join("secret.md");
    fs::write(&secret, "# Secret\n\nnot part of the pack\n").unwrap();
    fs::remove_file(dir.join("HARNESS.md")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("HARNESS.md")).unwrap();
    let (code, report) = lint_json(&t, &dir);
    assert_eq!(code, 1);
    assert_eq!(kinds(&report), BTreeSet::from(["file_unreadable".to_string()]), "{report}");
}

#[test]
fn schema_refs_to_files_and_urls_are_refused_but_local_ones_work() {
    for target in ["file:///etc/passwd", "other.json", "https://example.com/x.json#/a"] {
        let t = TestDir::new();
        let mut f = Fixture::wrap();
        set(&mut f.surface, "/verbs/show/args/properties/format", json!({ "$ref": target }));
        let (_, report) = lint_json(&t, &f.write(t.path()));
        assert_eq!(kinds(&report), BTreeSet::from(["schema_ref".to_string()]), "{target}: {report}");
        assert_eq!(report["issues"][0]["pointer"], "/verbs/show/args/properties/format/$ref");
    }
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    set(
        &mut f.surface,
        "/verbs/show/args/$defs",
        json!({ "fmt": { "type": "string", "enum": ["short", "long"] } }),
    );
    set(&mut f.surface, "/verbs/show/args/properties/format", json!({ "$ref": "#/$defs/fmt" }));
    let (code, report) = lint_json(&t, &f.write(t.path()));
    assert_eq!(code, 0, "{report}");
}

#[test]
fn adapter_kind_alias_and_a_matching_hcp_object_are_accepted() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    remove(&mut f.surface, "/kind");
    set(&mut f.surface, "/adapter_kind", json!("wrap"));
    set(
        &mut f.surface,
        "/hcp",
        json!({ "hcp": 1, "pack_id": "demo", "adapter_kind": "wrap", "binding": { "mode": "public" }, "wrap": { "bin": "./bin/demo" }, "plane": "runtime" }),
    );
    let (code, report) = lint_json(&t, &f.write(t.path()));
    assert_eq!(code, 0, "{report}");
}

#[test]
fn the_hcp_object_is_strict() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    set(&mut f.surface, "/hcp", json!({ "hcp": 1, "pack_id": "demo", "extra": true }));
    let (_, report) = lint_json(&t, &f.write(t.path()));
    assert_eq!(kinds(&report), BTreeSet::from(["unknown_field".to_string()]), "{report}");
    assert_eq!(report["issues"][0]["pointer"], "/hcp/extra");
}

#[test]
fn a_missing_directory_is_an_issue_not_a_crash() {
    let t = TestDir::new();
    let (code, report) = lint_json(&t, &t.join("nope"));
    assert_eq!(code, 1);
    assert_eq!(report["pack_id"], Value::Null);
    assert_eq!(kinds(&report), BTreeSet::from(["missing_file".to_string()]));
}

#[test]
fn a_wrap_pack_that_forgot_its_kind_is_told_why() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    remove(&mut f.surface, "/kind");
    let (_, report) = lint_json(&t, &f.write(t.path()));
    let msg = report["issues"][0]["message"].as_str().unwrap();
    assert!(msg.contains("\"kind\": \"wrap\""), "{msg}");
}

#[test]
fn the_loaded_pack_derives_its_hcp_object() {
    let t = TestDir::new();
    let pack = Fixture::wrap().load(&t);
    let meta = serde_json::to_value(&pack.meta).unwrap();
    assert_eq!(
        meta,
        json!({ "hcp": 1, "pack_id": "demo", "adapter_kind": "wrap", "binding": { "mode": "public" }, "wrap": { "bin": "./bin/demo" }, "plane": "runtime" })
    );
    assert_eq!(pack.binding.family, "demo");
    assert_eq!(pack.command("remove").map(|c| c.policy.confirm), Some(true));
    assert_eq!(pack.skill.hot_path, vec!["list", "show", "remove"]);
}

#[test]
fn agent_env_names_that_load_or_run_code_are_refused() {
    // One name of each family of docs/security.md, and the names the review (#34) got past lint, each alone in
    // an otherwise clean pack.
    for (name, family) in [
        ("http_proxy", "lower-case"),
        ("PATH", "the runtime's own"),
        ("LD_PRELOAD", "the dynamic loader and libc"),
        ("BASH_ENV", "shells"),
        ("NODE_OPTIONS", "language runtimes and their package managers"),
        ("GIT_CONFIG_COUNT", "git, except who and how it asks"),
        ("PAGER", "programs a CLI hands work to"),
        ("XDG_CONFIG_HOME", "configuration"),
        ("OPENSSL_CONF", "configuration"),
        ("TAR_OPTIONS", "programs a CLI hands work to"),
        ("RSYNC_RSH", "programs a CLI hands work to"),
        ("MAKEFILES", "programs a CLI hands work to"),
        ("EXINIT", "configuration"),
        ("GNUPGHOME", "paths to code or configuration"),
        ("HTTPS_PROXY", "trust, keys and proxies"),
    ] {
        let t = TestDir::new();
        let mut f = Fixture::wrap();
        set(&mut f.surface, &format!("/wrap/agent_env/{name}"), json!("x"));
        let dir = f.write(t.path());
        let (code, report) = lint_json(&t, &dir);
        assert_eq!(
            (code, kinds(&report)),
            (1, BTreeSet::from(["agent_env_denied".to_string()])),
            "{name}: {report}"
        );
        let msg = report["issues"][0]["message"].as_str().unwrap();
        assert!(msg.contains(name) && msg.contains(family), "{name}: {msg}");
        // Install refuses it too, so no call ever starts with it.
        let out = hcpx(t.path(), &["install", dir.to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{name}");
    }
}

#[test]
fn the_documented_environment_deny_list_is_the_one_in_the_code() {
    let doc = fs::read_to_string(repo().join("docs/security.md")).unwrap();
    for d in hcpx_pack::pack::env_deny::DENIED_ENV {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", d.family)))
            .unwrap_or_else(|| panic!("no row for {}", d.family));
        assert!(
            row.contains(&format!("`{}`", d.pattern)),
            "docs/security.md lacks {} under {}",
            d.pattern,
            d.family
        );
    }
}
