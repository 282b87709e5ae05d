//! The exec pipeline through the real binary: every denial (and that the bin did not run), the grant-deny and
//! sandbox-deny checks, the workspace modes, the child's environment, timeouts, output caps and audit.

use serde_json::{json, Value};
use std::fs;
use std::time::Duration;

use crate::helpers::{probe_fixture, stdout_json, Home};

fn code(v: &Value) -> &str {
    v["code"].as_str().unwrap_or("")
}

fn probe(h: &Home) -> String {
    h.install(&probe_fixture(&h.marker), "probe")
}

#[test]
fn a_read_runs_and_returns_the_parsed_result() {
    let h = Home::new();
    probe(&h);
    let (rc, out) = h.exec("probe", "echo", &["word=hello"]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["ok"], json!(true));
    assert_eq!(out["result"]["argv"], "echo hello");
    assert_eq!(out["stderr"], "");
    assert_eq!(out["truncated"], json!(false));
    assert_eq!(h.runs(), 1);
}

#[test]
fn unknown_pack_not_activated_and_no_policy_deny_before_anything_runs() {
    let h = Home::new();
    probe(&h);
    let (rc, out) = h.exec("nope", "look", &[]);
    assert_eq!(
        (rc, code(&out), out["error"].as_str()),
        (1, "unknown_pack", Some("unknown pack nope; install it with `hcpx install DIR`"))
    );
    let (_, out) = h.exec("probe", "nope", &[]);
    assert_eq!(
        (code(&out), out["error"].as_str()),
        (
            "no_policy",
            Some("no policy for nope; pack probe has no command `nope`; `hcpx commands probe` lists them")
        )
    );
    assert_eq!(h.run(&["deactivate", "probe"]).status.code(), Some(0));
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!(
        (rc, code(&out), out["error"].as_str()),
        (1, "not_activated", Some("pack probe not activated; activate it with `hcpx activate probe`"))
    );
    // Hostile ids never reach the file system.
    let (_, out) = h.exec("../../etc", "look", &[]);
    assert_eq!(code(&out), "unknown_pack");
    assert_eq!(h.runs(), 0);
}

#[test]
fn land_brain_requires_a_project_id() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.policy["verbs"]["look"]["privacy"] = json!({ "land": "brain" });
    h.install(&f, "probe");
    let (_, out) = h.exec("probe", "look", &[]);
    assert_eq!(
        (code(&out), out["error"].as_str()),
        ("project_required", Some("privacy.land brain requires project_id"))
    );
    assert_eq!(h.runs(), 0);
    let out = h.run(&["exec", "probe", "look", "--json", "--project-id", "p1"]);
    assert_eq!(out.status.code(), Some(0));
    let (rc, _) = h.exec_env("probe", "look", &[], &[("HCP_PROJECT_ID", "p2")]);
    assert_eq!(rc, 0);
    assert_eq!(h.runs(), 2);
}

#[test]
fn grant_deny_names_the_missing_capability() {
    let h = Home::new();
    probe(&h);
    h.write_store("grants.json", "[]");
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!((rc, code(&out)), (1, "denied"));
    assert_eq!(
        out["error"],
        "denied: missing verb.exec.read for probe.look; grant it with `hcpx grant verb.exec.read:probe:look`"
    );
    // Reads granted on every pack; the write is still denied and audited.
    h.write_store("grants.json", r#"[{ "capability": "verb.exec.read", "pack_id": "*" }]"#);
    assert_eq!(h.exec("probe", "look", &[]).0, 0);
    let (_, out) = h.exec("probe", "put", &["confirm=true"]);
    assert_eq!(
        out["error"],
        "denied: missing verb.exec.write for probe.put; grant it with `hcpx grant verb.exec.write:probe:put`"
    );
    let audit = fs::read_to_string(h.store().join("audit.log")).unwrap();
    assert!(audit.contains("\"code\":\"denied\""), "{audit}");
    // A grant scoped to other commands does not cover this one.
    h.write_store(
        "grants.json",
        r#"[{ "capability": "verb.exec.read", "pack_id": "probe", "verb_keys": ["echo"] }]"#,
    );
    assert_eq!(code(&h.exec("probe", "look", &[]).1), "denied");
    assert_eq!(h.runs(), 1);
}

#[test]
fn a_broken_grants_file_fails_closed() {
    let h = Home::new();
    probe(&h);
    h.write_store("grants.json", "[{\"capability\": \"verb.exec.everything\", \"pack_id\": \"*\"}]");
    let out = h.run(&["exec", "probe", "look", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], json!(false));
    assert!(v["error"].as_str().unwrap().contains("grants.json"), "{v}");
    assert_eq!(h.runs(), 0);
}

#[test]
fn confirm_gate_refuses_then_runs_with_confirm_or_apply() {
    let h = Home::new();
    probe(&h);
    let (rc, out) = h.exec("probe", "put", &[]);
    assert_eq!((rc, code(&out), out["error"].as_str()), (1, "confirm_required", Some("confirm required")));
    assert_eq!(h.runs(), 0);
    assert_eq!(h.exec("probe", "put", &["confirm=false"]).1["code"], "confirm_required");
    assert_eq!(h.exec("probe", "put", &["confirm=true"]).0, 0);
    assert_eq!(h.exec("probe", "put", &["apply=true"]).0, 0);
    assert_eq!(h.runs(), 2);
}

#[test]
fn invalid_args_are_refused_before_anything_runs() {
    let h = Home::new();
    probe(&h);
    for words in [vec!["word=a", "extra=1"], vec![], vec!["word=--help"], vec!["word:=[1"]] {
        let (rc, out) = h.exec("probe", "echo", &words);
        assert_eq!((rc, code(&out)), (1, "invalid_args"), "{words:?}: {out}");
        assert!(
            out["error"].as_str().unwrap().contains("word")
                || out["error"].as_str().unwrap().contains("extra"),
            "{out}"
        );
    }
    assert_eq!(h.runs(), 0);
}

#[test]
fn sandbox_deny_never_falls_back_to_path() {
    let h = Home::new();
    // A `ledger` on PATH that must never run.
    let fake = h.t.join("fakebin");
    fs::create_dir_all(&fake).unwrap();
    let trap = format!("#!/bin/sh\necho ran >> '{}'\necho '{{\"ok\":true}}'\n", h.marker.display());
    fs::write(fake.join("ledger"), trap).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(fake.join("ledger"), fs::Permissions::from_mode(0o755)).unwrap();
    let mut f = probe_fixture(&h.marker);
    f.surface["id"] = json!("ledger");
    f.policy["surface_id"] = json!("ledger");
    f.surface["cliBin"] = json!("ledger");
    f.surface["wrap"]["bin"] = json!("ledger");
    for v in ["look", "echo", "put"] {
        f.surface["verbs"][v]["cli"][0] = json!("ledger");
    }
    f.files.clear();
    h.install(&f, "ledger");
    let path = format!("{}:/usr/bin:/bin", fake.display());
    let (rc, out) = h.exec_env("ledger", "look", &[], &[("PATH", &path)]);
    assert_eq!(rc, 127, "{out}");
    assert_eq!(out["ok"], json!(false));
    assert_eq!(out["code"], "sandbox_denied");
    assert_eq!(out["error"], "sandbox: bin \"ledger\" not allowlisted; allow it with `hcpx allow ledger`");
    assert_eq!(h.runs(), 0);
    // Once allow-listed, the bare name runs from PATH.
    assert_eq!(h.run(&["allow", "ledger"]).status.code(), Some(0));
    let (rc, _) = h.exec_env("ledger", "look", &[], &[("PATH", &path)]);
    assert_eq!(rc, 0);
    assert_eq!(h.runs(), 1);
    assert_eq!(h.run(&["disallow", "ledger"]).status.code(), Some(0));
    assert_eq!(h.exec_env("ledger", "look", &[], &[("PATH", &path)]).0, 127);
    // Allow-listed but missing from PATH is a sandbox denial too.
    assert_eq!(h.run(&["allow", "ledger"]).status.code(), Some(0));
    let (rc, out) = h.exec_env("ledger", "look", &[], &[("PATH", "/usr/bin:/bin")]);
    assert_eq!((rc, code(&out)), (127, "sandbox_denied"), "{out}");
    // The allow-list takes bare names only.
    assert_eq!(h.run(&["allow", "/bin/sh"]).status.code(), Some(1));
}

#[test]
fn binding_mint_failure_never_falls_back_to_the_environment() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["binding"] = json!({ "mode": "local", "hub": "local-credential", "family": "probe" });
    f.surface["wrap"]["agent_env"] = json!({ "PROBE_TOKEN": "{{binding.token}}" });
    f.files[0].1 = f.files[0]
        .1
        .replace("printf '{", "printf '{\"token\":\"%s\",")
        .replace("\"$(pwd -P)\"", "\"$PROBE_TOKEN\" \"$(pwd -P)\"");
    h.install(&f, "probe");
    let (rc, out) =
        h.exec_env("probe", "look", &[], &[("PROBE_TOKEN", "from-host-env"), ("TOKEN", "from-host-env")]);
    assert_eq!((rc, code(&out)), (1, "binding_failed"), "{out}");
    assert!(out["error"].as_str().unwrap().contains("hcpx credential set probe token"), "{out}");
    assert_eq!(h.runs(), 0);
    // With the credential stored, it reaches the child, and its value is scrubbed from what comes back.
    let set = crate::helpers::hcpx_with(
        h.t.path(),
        &["credential", "set", "probe", "token"],
        &[],
        Some("s3cret-value\n"),
    );
    assert_eq!(set.status.code(), Some(0));
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["result"]["token"], "[redacted]");
    assert!(!out.to_string().contains("s3cret-value"));
    let list = h.run(&["credential", "list", "--json"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("s3cret"));
    // Mock Binding only when asked for.
    let out = h.run(&["exec", "probe", "look", "--json", "--mode", "mock"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["token"], "mock-token");
}

#[test]
fn a_mock_binding_pack_needs_an_explicit_mock_call() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["binding"] = json!({ "mode": "mock" });
    h.install(&f, "probe");
    assert_eq!(code(&h.exec("probe", "look", &[]).1), "binding_failed");
    assert_eq!(h.runs(), 0);
    assert_eq!(h.exec("probe", "look", &["mode=mock"]).0, 0);
}

fn look(h: &Home, env: &[(&str, &str)]) -> Value {
    let (rc, out) = h.exec_env("probe", "look", &[], env);
    assert_eq!(rc, 0, "{out}");
    out["result"].clone()
}

#[test]
fn workspace_mode_none_runs_in_the_installed_pack() {
    let h = Home::new();
    probe(&h);
    let r = look(&h, &[]);
    let pack = fs::canonicalize(h.store().join("packs/probe")).unwrap();
    assert_eq!(r["cwd"], pack.display().to_string());
    assert_eq!(r["sandbox"], crate::escape::expected_mode());
}

#[test]
fn workspace_mode_project_runs_in_the_callers_project() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["workspace"] = json!({ "mode": "project" });
    h.install(&f, "probe");
    // The caller's cwd (a directory of the test that does not hold the store) …
    let work = h.t.join("work");
    fs::create_dir_all(&work).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(["exec", "probe", "look", "--json"])
        .env("HCP_HOME", h.store())
        .env_remove("HCP_PROJECT_DIR")
        .current_dir(&work)
        .output()
        .unwrap();
    let r = &crate::helpers::stdout_json(&out)["result"];
    assert_eq!(r["cwd"], fs::canonicalize(&work).unwrap().display().to_string(), "{r}");
    // … but never one that holds the store …
    assert_eq!(h.exec("probe", "look", &[]).1["code"], "no_project");
    // … unless HCP_PROJECT_DIR says otherwise.
    let proj = h.t.join("project");
    fs::create_dir_all(&proj).unwrap();
    let r = look(&h, &[("HCP_PROJECT_DIR", proj.to_str().unwrap())]);
    assert_eq!(r["cwd"], fs::canonicalize(&proj).unwrap().display().to_string());
}

#[test]
fn workspace_mode_workspace_has_its_own_dir_and_home() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["workspace"] = json!({ "mode": "workspace" });
    h.install(&f, "probe");
    let r = look(&h, &[("HOME", "/root")]);
    let ws = fs::canonicalize(h.store().join("workspaces/probe")).unwrap().display().to_string();
    assert_eq!(r["cwd"], ws);
    assert_eq!(fs::canonicalize(r["home"].as_str().unwrap()).unwrap().display().to_string(), ws);
    assert_ne!(r["home"], "/root");
}

#[test]
fn workspace_mode_ephemeral_is_fresh_per_call_and_removed() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["workspace"] = json!({ "mode": "ephemeral" });
    h.install(&f, "probe");
    let a = look(&h, &[]);
    let b = look(&h, &[]);
    assert_ne!(a["cwd"], b["cwd"]);
    for r in [&a, &b] {
        assert!(!std::path::Path::new(r["cwd"].as_str().unwrap()).exists(), "ephemeral dir left behind: {r}");
        assert!(!std::path::Path::new(r["tmp"].as_str().unwrap()).exists(), "TMPDIR left behind: {r}");
    }
}

#[test]
fn project_mode_without_a_project_is_refused_by_a_served_runtime() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["workspace"] = json!({ "mode": "project" });
    h.install(&f, "probe");
    let store = hcpx_store::Store::open(&h.store()).unwrap();
    let rt = hcpx_runtime::Runtime::new(store);
    let principal = hcpx_model::Principal::local(hcpx_model::grants::Grants::All, hcpx_model::Invoker::Http);
    let out = rt.exec(&principal, &hcpx_model::Envelope::new("probe", "look", Default::default()));
    assert_eq!(out.code, Some(hcpx_model::Code::NoProject));
    assert_eq!(h.runs(), 0);
}

#[test]
fn the_host_environment_does_not_reach_the_child() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["wrap"]["agent_env"] = json!({ "PROBE_MODE": "agent" });
    h.install(&f, "probe");
    let r = look(&h, &[("AWS_SECRET_ACCESS_KEY", "leak"), ("GH_TOKEN", "leak"), ("LD_PRELOAD", "/tmp/x.so")]);
    let names: Vec<&str> = r["env"].as_str().unwrap().split_whitespace().collect();
    assert_eq!(names, vec!["HCP_SANDBOX", "HOME", "PATH", "PROBE_MODE", "TMPDIR"], "{r}");
}

#[test]
fn a_timeout_kills_the_child_and_everything_it_started() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    let token = crate::escape::token();
    f.files[0].1 = format!("#!/bin/sh\nsleep {token} &\nsh -c 'sleep {token}' &\nwait\n");
    h.install(&f, "probe");
    h.write_store("sandbox.json", r#"{ "timeout_ms": 500 }"#);
    // The bin waits for two sleeps of over 3000 s: the call can only end because the runtime killed them at
    // the 500 ms deadline, which its envelope says, and nothing it started is left.
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!((rc, code(&out)), (1, "timeout"), "{out}");
    assert!(out.get("result").is_none(), "{out}");
    let error = out["error"].as_str().unwrap_or("");
    assert!(
        error.starts_with("timed out after 500 ms") && error.contains("everything it started were killed"),
        "{out}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(crate::escape::survivors(&token), Vec::<i32>::new(), "a grandchild survived the timeout");
}

#[test]
fn a_call_that_returns_leaves_nothing_it_started_running() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    let token = crate::escape::token();
    // The bin answers at once and leaves two sleeps of over 3000 s behind, in its process group: the call's
    // return must not wait for them, and must not leave them running.
    f.files[0].1 = format!(
        "#!/bin/sh\nsleep {token} >/dev/null 2>&1 </dev/null &\nsh -c 'sleep {token}' >/dev/null 2>&1 </dev/null &\necho '{{\"done\":true}}'\n"
    );
    h.install(&f, "probe");
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!(
        (rc, out["ok"].as_bool(), out["result"]["done"].as_bool()),
        (0, Some(true), Some(true)),
        "{out}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(crate::escape::survivors(&token), Vec::<i32>::new(), "a process the call started outlived it");
}

#[test]
fn an_output_flood_is_capped_and_marked_truncated() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.files[0].1 =
        "#!/bin/sh\nhead -c 3000000 /dev/zero | tr '\\0' a\nhead -c 500000 /dev/zero | tr '\\0' b >&2\n"
            .into();
    h.install(&f, "probe");
    h.write_store("sandbox.json", r#"{ "max_output_bytes": 100000 }"#);
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!(rc, 0, "the command itself succeeded");
    assert_eq!(out["truncated"], json!(true));
    assert_eq!(out["stdout"].as_str().unwrap().len(), 100_000);
    assert_eq!(out["stderr"].as_str().unwrap().len(), 100_000);
}

#[test]
fn a_failing_bin_returns_stderr_or_exit_n() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.files[0].1 =
        "#!/bin/sh\nif [ \"$1\" = look ]; then echo 'no such thing' >&2; exit 3; fi\nexit 4\n".into();
    h.install(&f, "probe");
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!((rc, code(&out), out["error"].as_str()), (1, "exit_nonzero", Some("no such thing")));
    let (_, out) = h.exec("probe", "put", &["confirm=true"]);
    assert_eq!(out["error"], "exit 4");
}

#[test]
fn writes_are_audited_with_the_argument_digest_only() {
    let h = Home::new();
    probe(&h);
    h.exec("probe", "look", &[]);
    h.exec("probe", "put", &[]);
    h.exec("probe", "put", &["confirm=true"]);
    let out = h.run(&["audit", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let recs = v["records"].as_array().unwrap();
    assert_eq!(recs.len(), 2, "reads are not audited: {v}");
    assert_eq!(recs[0]["code"], "confirm_required");
    assert_eq!(recs[0]["ok"], json!(false));
    assert_eq!(recs[1]["ok"], json!(true));
    for r in recs {
        for k in ["at", "principal", "tenant", "invoker", "pack_id", "verb_key", "operation", "args_sha256"] {
            assert!(r[k].is_string(), "{k} missing: {r}");
        }
        assert_eq!(r["invoker"], "cli");
        assert_eq!(r["operation"], "write");
        assert_eq!(r["args_sha256"].as_str().unwrap().len(), 64);
    }
    assert_ne!(recs[0]["args_sha256"], recs[1]["args_sha256"]);
    let raw = fs::read_to_string(h.store().join("audit.log")).unwrap();
    assert!(!raw.contains("confirm\":true"), "arguments must not be logged: {raw}");
}

#[test]
fn pass_through_runs_only_allowed_subcommands_within_max_argv() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["verbs"] = json!({});
    f.surface["pass_through"] = json!({ "allowedSubcommands": ["status"], "maxArgv": 2 });
    f.policy["verbs"] = json!({ "status": { "operation": "read" } });
    h.install(&f, "probe");
    let (rc, out) = h.exec("probe", "status", &["a", "b"]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["result"]["argv"], "status a b");
    let (_, out) = h.exec("probe", "status", &["a", "b", "c"]);
    assert_eq!(code(&out), "invalid_args", "{out}");
    let (_, out) = h.exec("probe", "rm", &["-rf"]);
    assert_eq!(code(&out), "no_policy");
    assert_eq!(h.runs(), 1);
}

#[test]
fn openapi_and_sense_only_packs_install_but_do_not_execute() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["kind"] = json!("openapi");
    f.surface["openapi"] = json!({ "url": "https://api.example.com/openapi.json" });
    h.install(&f, "probe");
    let (rc, out) = h.exec("probe", "look", &[]);
    assert_eq!((rc, code(&out)), (1, "adapter_failed"), "{out}");
    assert!(out["error"].as_str().unwrap().contains("openapi"));
    let mut s = probe_fixture(&h.marker);
    s.surface["id"] = json!("sense");
    s.policy["surface_id"] = json!("sense");
    s.surface["kind"] = json!("sense_only");
    s.surface["stimulusTriggers"] = json!([{ "ref": "new_item" }]);
    s.policy["stimuli"] = json!({ "new_item": { "delivery": "announce" } });
    h.install(&s, "sense");
    assert_eq!(code(&h.exec("sense", "look", &[]).1), "adapter_failed");
    assert_eq!(h.runs(), 0);
}

#[test]
fn the_envelope_alias_surface_id_is_accepted() {
    let env: hcpx_model::Envelope =
        serde_json::from_value(json!({ "surface_id": "ledger", "verb_key": "list" })).unwrap();
    assert_eq!(env.pack_id, "ledger");
    assert!(serde_json::from_value::<hcpx_model::Envelope>(
        json!({ "pack_id": "a", "verb_key": "b", "argz": {} })
    )
    .is_err());
}

#[test]
fn pass_through_refuses_option_words_the_pack_does_not_list() {
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    f.surface["verbs"] = json!({});
    f.surface["pass_through"] =
        json!({ "allowedSubcommands": ["log"], "maxArgv": 3, "allowedOptions": ["--oneline", "--format="] });
    f.policy["verbs"] = json!({ "log": { "operation": "read" } });
    h.install(&f, "probe");
    // The attack: a read row forwarding `log --output=FILE` to git, which writes a file.
    for bad in ["--output=notes.txt", "-o", "--one", "--formats"] {
        let (rc, out) = h.exec("probe", "log", &[bad]);
        assert_eq!((rc, code(&out)), (1, "invalid_args"), "{bad}: {out}");
        assert!(out["error"].as_str().unwrap().contains("allowedOptions"), "{out}");
    }
    assert_eq!(h.runs(), 0);
    let (rc, out) = h.exec("probe", "log", &["--oneline", "--format=%h", "main"]);
    assert_eq!(rc, 0, "{out}");
    assert_eq!(out["result"]["argv"], "log --oneline --format=%h main");
    // An allowed option must be an option word.
    let t = crate::helpers::TestDir::new();
    let mut g = probe_fixture(&h.marker);
    g.surface["verbs"] = json!({});
    g.surface["pass_through"] =
        json!({ "allowedSubcommands": ["log"], "maxArgv": 3, "allowedOptions": ["oneline"] });
    g.policy["verbs"] = json!({ "log": { "operation": "read" } });
    let out = crate::helpers::hcpx(t.path(), &["lint", g.write(t.path()).to_str().unwrap(), "--json"]);
    assert_eq!(stdout_json(&out)["issues"][0]["kind"], "bad_pass_through");
}
