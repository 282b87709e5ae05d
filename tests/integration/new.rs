//! `hcpx new`: from an empty directory to a composite pack whose guest builds to a component, checks at 90+ with
//! no errors under `--probe --strict`, and runs once installed; composite advice in the check's fix texts and a
//! describe() mismatch reported once; a wrap scaffold whose template commands are never reads; a directory that
//! is not empty refused.

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::helpers::{hcpx, hcpx_with, repo, stdout_json, TestDir};

/// Runs the pack's build.sh with a target dir under the repository's `target/`, shared by every run so a rerun
/// (and a warm CI cache) builds only the guest itself.
fn build(pack: &Path) {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hcpx-new-guest");
    let started = Instant::now();
    let out =
        Command::new("bash").arg(pack.join("build.sh")).env("CARGO_TARGET_DIR", &target).output().unwrap();
    assert!(
        out.status.success(),
        "build.sh failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("guest build of {}: {:.1} s", pack.display(), started.elapsed().as_secs_f64());
    assert!(pack.join("adapter.wasm").is_file());
}

fn check(t: &TestDir, pack: &Path) -> (i32, Value) {
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--probe", "--strict", "--json"]);
    (out.status.code().unwrap(), stdout_json(&out))
}

fn ids(report: &Value) -> Vec<String> {
    report["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_string()).collect()
}

fn finding<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {report}"))
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn new_composite_from_an_empty_directory_to_check_90_and_an_exec() {
    let t = TestDir::new();
    let pack = t.join("greeter");
    let out = hcpx(t.path(), &["new", "composite", pack.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let made = stdout_json(&out);
    assert_eq!(made["new"]["pack_id"], "greeter");
    assert_eq!(made["new"]["kind"], "composite");
    // A Rust guest also shows an HTTP request: `fetch`, to the one host its surface declares.
    assert_eq!(made["new"]["commands"], json!(["greet", "count", "fetch"]));
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("surface.json")).unwrap()).unwrap();
    assert_eq!(surface["verbs"]["fetch"]["hosts"], json!(["example.com"]));

    // The guest builds on its own: a workspace of its own, the WIT vendored, wit-bindgen as the repo's guests.
    let wit = fs::read_to_string(pack.join("guest/wit/adapter.wit")).unwrap();
    assert_eq!(wit, fs::read_to_string(repo().join("wit/adapter.wit")).unwrap());
    let cargo = fs::read_to_string(pack.join("guest/Cargo.toml")).unwrap();
    assert!(cargo.contains("\n[workspace]\n"), "{cargo}");
    assert!(
        cargo.contains(&format!("version = \"{}\"", hcpx_author::scaffold::new::wit_bindgen_version())),
        "{cargo}"
    );
    assert!(!fs::read_to_string(pack.join("guest/src/lib.rs")).unwrap().contains("../"));
    for script in ["build.sh", "proof.sh"] {
        let mode = fs::metadata(pack.join(script)).unwrap().permissions().mode();
        assert_ne!(mode & 0o111, 0, "{script} is not executable");
    }

    build(&pack);
    let (exit, report) = check(&t, &pack);
    assert!(report["score"].as_u64().unwrap() >= 90, "{report}");
    assert_eq!((exit, report["errors"].as_u64()), (0, Some(0)), "{report}");
    // `fetch` is not probed: the operator has not allowed example.com, so it could only be refused (and no probe
    // reaches a host outside).
    let probes = report["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 3, "{report}");
    let fetch = probes.iter().find(|p| p["verb"] == "fetch").unwrap();
    assert_eq!(fetch["ran"], false, "{report}");
    assert!(fetch["skipped"].as_str().unwrap().contains("hcpx allow-host greeter example.com"), "{report}");
    assert_eq!(report["evals"]["passed"], 4, "{report}");

    // Installed and activated, it runs.
    let p = pack.to_str().unwrap();
    assert_eq!(hcpx(t.path(), &["install", p]).status.code(), Some(0));
    assert_eq!(hcpx(t.path(), &["activate", "greeter"]).status.code(), Some(0));
    let out = hcpx(t.path(), &["exec", "greeter", "greet", "--json", "--", "name=Ada"]);
    let env = stdout_json(&out);
    assert_eq!(env["ok"], true, "{env}");
    assert_eq!(env["result"], json!({ "name": "Ada", "greeting": "Hello, Ada!" }));
    let out = hcpx(t.path(), &["exec", "greeter", "count", "two words", "--json"]);
    assert_eq!(stdout_json(&out)["result"]["words"], 2);
    // `fetch`'s request goes through wasi:http, and hcpx refuses it: the operator has not allowed example.com (so
    // nothing leaves the machine).
    let env = stdout_json(&hcpx(t.path(), &["exec", "greeter", "fetch", "--json", "--", "path=/"]));
    assert_eq!(env["error"].as_str(), Some("example.com: ErrorCode::HttpRequestDenied"), "{env}");
    assert!(env["stderr"].as_str().unwrap().contains("hcpx allow-host greeter example.com"), "{env}");

    // Its proof script passes against this build of hcpx, in a store of its own.
    let proof = Command::new("bash")
        .arg(pack.join("proof.sh"))
        .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
        .env_remove("HCP_HOME")
        .output()
        .unwrap();
    assert!(proof.status.success(), "{}", String::from_utf8_lossy(&proof.stderr));

    // A guest that logs on success, answers `count` in text, and a command without a title: composite advice,
    // not a CLI's.
    let lib = pack.join("guest/src/lib.rs");
    let src = fs::read_to_string(&lib)
        .unwrap()
        .replace(
            "let name = text(&args, \"name\", \"Ada\")?.trim();",
            "let name = text(&args, \"name\", \"Ada\")?.trim();\n                hcp::adapter::host::log(hcp::adapter::host::Level::Info, \"greeting\");",
        )
        .replace("Ok(out.to_string())", "Ok(if verb_key == \"count\" { format!(\"count: {out}\") } else { out.to_string() })");
    fs::write(&lib, src).unwrap();
    build(&pack);
    edit_json(&pack.join("surface.json"), |s| {
        s["verbs"]["count"].as_object_mut().unwrap().remove("title");
    });
    let (_, report) = check(&t, &pack);
    let r010 = finding(&report, "R010");
    assert!(r010["fix"].as_str().unwrap().contains("host.log"), "{r010}");
    assert!(!r010["fix"].as_str().unwrap().contains("quiet flag"), "{r010}");
    let r002 = finding(&report, "R002");
    assert!(r002["fix"].as_str().unwrap().contains("component's `exec`"), "{r002}");
    assert!(!r002["fix"].as_str().unwrap().contains("json_flag"), "{r002}");
    let m019 = finding(&report, "M019");
    assert!(m019["message"].as_str().unwrap().contains("pack and command name"), "{m019}");
    assert!(!m019["message"].as_str().unwrap().contains("command line"), "{m019}");

    // A command the component does not describe: one S007, and no probe or case repeating it.
    edit_json(&pack.join("surface.json"), |s| {
        s["verbs"]["wave"] = json!({ "description": "Waves at a person by name and returns the wave as JSON.",
                                     "title": { "live": ["Waving"], "done": ["Waved"] } });
    });
    edit_json(&pack.join("policy.json"), |p| p["verbs"]["wave"] = json!({ "operation": "read" }));
    let (exit, report) = check(&t, &pack);
    assert_eq!(exit, 1);
    let found = ids(&report);
    assert_eq!(found.iter().filter(|id| *id == "S007").count(), 1, "{report}");
    assert!(!found.iter().any(|id| id == "R001" || id == "E005"), "{report}");
    assert!(finding(&report, "S007")["message"].as_str().unwrap().contains("`wave`"), "{report}");
    assert!(report["skipped"].to_string().contains("S007"), "{report}");
    assert!(report.get("probes").is_none() && report.get("evals").is_none(), "{report}");
}

#[test]
fn new_wrap_scaffolds_a_pack_whose_templates_are_not_reads() {
    let t = TestDir::new();
    let pack = t.join("mygit");
    let out =
        hcpx(t.path(), &["new", "wrap", pack.to_str().unwrap(), "--bin", "git", "--id", "mygit", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let made = stdout_json(&out);
    assert_eq!(
        (made["new"]["kind"].as_str(), made["new"]["pack_id"].as_str()),
        (Some("wrap"), Some("mygit"))
    );
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(pack.join("surface.json")).unwrap()).unwrap();
    let policy: Value = serde_json::from_str(&fs::read_to_string(pack.join("policy.json")).unwrap()).unwrap();
    assert_eq!((surface["id"].as_str(), policy["surface_id"].as_str()), (Some("mygit"), Some("mygit")));
    let rows = policy["verbs"].as_object().unwrap();
    assert!(!rows.is_empty());
    for (key, row) in rows {
        assert_ne!(row["operation"], "read", "template {key} must not be a read: {policy}");
    }
    assert_eq!(hcpx(t.path(), &["lint", pack.to_str().unwrap()]).status.code(), Some(0));
    // Nothing to probe: a template is never run.
    let out = hcpx(t.path(), &["check", pack.to_str().unwrap(), "--probe", "--json"]);
    let report = stdout_json(&out);
    assert!(report["probes"].as_array().is_none_or(|p| p.is_empty()), "{report}");
}

#[test]
fn new_refuses_a_directory_that_is_not_empty_and_names_the_fix() {
    let t = TestDir::new();
    let dir = t.join("taken");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("notes.txt"), "mine").unwrap();
    for args in [vec!["new", "composite", "taken"], vec!["new", "wrap", "taken", "--bin", "git"]] {
        let out = hcpx_with(t.path(), &args, &[], None);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("taken already exists and is not empty; pass a new directory"), "{err}");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "nothing written");
    }
    let out = hcpx(t.path(), &["new", "composite", "x", "--id", "Not An Id"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --id"));
}

/// `hcpx new composite --lang python|js`: the same pack, its guest in Python or JavaScript, built with the pinned
/// toolchain (installed by build.sh from the lock file it ships), scores 100 under `--probe --strict` with no
/// edits, runs once installed, and its proof passes.
#[test]
fn new_composite_in_python_and_javascript_checks_100_with_no_edits() {
    for (lang, source, lock) in [
        ("python", "guest/app.py", "guest/requirements.txt"),
        ("js", "guest/app.js", "guest/package-lock.json"),
    ] {
        let t = TestDir::new();
        let pack = t.join("greeter");
        let out = hcpx(t.path(), &["new", "composite", pack.to_str().unwrap(), "--lang", lang, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let made = stdout_json(&out);
        assert_eq!(
            (made["new"]["lang"].as_str(), made["new"]["commands"].clone()),
            (Some(lang), json!(["greet", "count", "fetch"]))
        );
        // Both guests' `fetch` sends a request through wasi:http: they vendor world 0.2.0 and its WASI packages.
        let wit = fs::read_to_string(pack.join("guest/wit/adapter.wit")).unwrap();
        assert_eq!(wit, fs::read_to_string(repo().join("wit/adapter.wit")).unwrap(), "{lang}");
        for dep in ["http", "io", "clocks"] {
            let vendored = fs::read_to_string(pack.join(format!("guest/wit/deps/{dep}.wit"))).unwrap();
            assert_eq!(
                vendored,
                fs::read_to_string(repo().join(format!("wit/deps/{dep}.wit"))).unwrap(),
                "{lang}"
            );
        }
        assert!(pack.join(source).is_file() && pack.join(lock).is_file(), "{lang}");
        // The example packs are built with the same toolchain pins and the same build script, but for one
        // thing: transit-js makes no request (world 0.1.0), so its build leaves componentize-js's HTTP out, where
        // the scaffold's `fetch` needs it (only the incoming side, `fetch-event`, is left out).
        let example = repo().join(if lang == "js" { "packs/transit-js" } else { "packs/transit-py" });
        assert_eq!(
            fs::read_to_string(pack.join(lock)).unwrap(),
            fs::read_to_string(example.join(lock)).unwrap()
        );
        let mut example_sh = fs::read_to_string(example.join("build.sh"))
            .unwrap()
            .replace(example.file_name().unwrap().to_str().unwrap(), "ID");
        if lang == "js" {
            let (no_http, fetch) = (
                "# Wizer). The host gives no HTTP, so those WASI features are left out.\n",
                "# Wizer). Its `fetch` goes through wasi:http/outgoing-handler, which the world imports; a composite serves no\n# HTTP, so the incoming side (`fetch-event`) is left out.\n",
            );
            assert!(
                example_sh.contains(no_http) && example_sh.contains("--disable http fetch-event"),
                "{example_sh}"
            );
            example_sh = example_sh
                .replace(no_http, fetch)
                .replace("--disable http fetch-event", "--disable fetch-event");
        }
        assert_eq!(
            fs::read_to_string(pack.join("build.sh")).unwrap().replace("greeter", "ID"),
            example_sh,
            "{lang}: build.sh"
        );

        let started = Instant::now();
        let out = Command::new("bash").arg(pack.join("build.sh")).output().unwrap();
        assert!(out.status.success(), "{lang} build.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
        eprintln!("{lang} guest build: {:.1} s", started.elapsed().as_secs_f64());
        // The build leaves nothing in the pack but adapter.wasm.
        let mut guest: Vec<String> = fs::read_dir(pack.join("guest"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        guest.sort();
        let want: Vec<&str> = if lang == "js" {
            vec!["app.js", "package-lock.json", "package.json", "wit"]
        } else {
            vec!["app.py", "requirements.txt", "wit"]
        };
        assert_eq!(guest, want, "{lang}");

        let (exit, report) = check(&t, &pack);
        assert_eq!((exit, report["score"].as_u64()), (0, Some(100)), "{lang}: {report}");
        assert_eq!(
            (report["errors"].as_u64(), report["warnings"].as_u64()),
            (Some(0), Some(0)),
            "{lang}: {report}"
        );
        assert_eq!(report["evals"]["passed"], 4, "{lang}: {report}");

        let p = pack.to_str().unwrap();
        assert_eq!(hcpx(t.path(), &["install", p]).status.code(), Some(0));
        assert_eq!(hcpx(t.path(), &["activate", "greeter"]).status.code(), Some(0));
        let env = stdout_json(&hcpx(t.path(), &["exec", "greeter", "greet", "--json", "--", "name= Ada "]));
        assert_eq!(env["result"], json!({ "name": "Ada", "greeting": "Hello, Ada!" }), "{lang}: {env}");
        let env = stdout_json(&hcpx(t.path(), &["exec", "greeter", "count", "two  words", "--json"]));
        assert_eq!(
            env["result"],
            json!({ "phrase": "two  words", "characters": 10, "words": 2 }),
            "{lang}: {env}"
        );
        let env = stdout_json(&hcpx(t.path(), &["exec", "greeter", "greet", "--json", "--", "name= "]));
        assert_eq!(
            (env["code"].as_str(), env["error"].as_str()),
            (Some("exit_nonzero"), Some("name is blank; pass a value such as name=\"Ada\"")),
            "{lang}: {env}"
        );
        // Its request goes through wasi:http, and hcpx refuses it: the operator has not allowed example.com (so
        // nothing leaves the machine). JavaScript's `fetch` rejects with its own error, not the wasi:http code;
        // the audit row and the call's stderr say why.
        let env = stdout_json(&hcpx(t.path(), &["exec", "greeter", "fetch", "--json", "--", "path=/"]));
        let error = match lang {
            "python" => "example.com: ErrorCode_HttpRequestDenied()",
            _ => "example.com: NetworkError when attempting to fetch resource",
        };
        assert_eq!(env["error"].as_str(), Some(error), "{env}");
        assert!(env["stderr"].as_str().unwrap().contains("hcpx allow-host greeter example.com"), "{env}");
        let audit = stdout_json(&hcpx(t.path(), &["audit", "--egress", "--json"]));
        let rows = audit["records"].as_array().unwrap();
        assert_eq!(rows.len(), 1, "{lang}: {audit}");
        assert_eq!(
            (rows[0]["egress"]["host"].as_str(), rows[0]["egress"]["refused"].as_str()),
            (Some("example.com"), Some("not_allowed")),
            "{lang}: {audit}"
        );

        let proof = Command::new("bash")
            .arg(pack.join("proof.sh"))
            .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
            .env_remove("HCP_HOME")
            // Its own store, but the component the check compiled into this test's store (`HCP_CACHE_DIR`).
            .env("HCP_CACHE_DIR", t.join("hcp-home/cache"))
            .output()
            .unwrap();
        assert!(proof.status.success(), "{lang}: {}", String::from_utf8_lossy(&proof.stderr));
    }
}
