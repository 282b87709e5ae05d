//! The CLI face: one JSON document on stdout with --json, messages on stderr, proof scripts, the twin face,
//! and titles on a terminal.

use serde_json::Value;
use std::process::Command;

use crate::helpers::{hcpx, probe_fixture, repo, stdout_json, Home, TestDir};

fn setup_examples(h: &Home) {
    for p in ["ledger", "transit"] {
        let out = h.run(&["install", repo().join("packs").join(p).to_str().unwrap(), "--json"]);
        assert_eq!(out.status.code(), Some(0));
    }
    assert_eq!(h.run(&["activate", "ledger", "transit"]).status.code(), Some(0));
}

#[test]
fn every_command_prints_exactly_one_json_document() {
    let h = Home::new();
    setup_examples(&h);
    let ledger = repo().join("packs/ledger");
    let calls: Vec<Vec<&str>> = vec![
        vec!["lint", ledger.to_str().unwrap()],
        vec!["install", ledger.to_str().unwrap()],
        vec!["activate", "ledger"],
        vec!["deactivate", "transit"],
        vec!["activate", "transit"],
        vec!["list"],
        vec!["availability", "ledger"],
        vec!["commands", "ledger"],
        vec!["skill", "ledger"],
        vec!["skill", "ledger", "--full"],
        vec!["exec", "transit", "plan", "A", "B"],
        vec!["exec", "nope", "x"],
        vec!["title", "ledger", "transfer", "amount=2.80", "payee=x"],
        vec!["allow", "jq"],
        vec!["disallow", "jq"],
        vec!["audit"],
        vec!["doctor"],
        vec!["credential", "list"],
        vec!["uninstall", "nope"],
        vec!["grant"],
        vec!["revoke", "verb.exec.write:*"],
        vec!["grant", "verb.exec.write:*"],
        vec!["completions", "bash"],
        vec!["commands", "ledger", "transfer"],
        vec!["commands", "hcp-cli"],
        vec!["skill", "hcp-cli"],
        vec!["availability", "hcp-cli"],
        vec!["audit", "--pack", "ledger", "--since", "1d", "--limit", "5"],
        vec!["nosuch"],
        vec!["exec"],
    ];
    for mut c in calls {
        c.push("--json");
        let out = h.run(&c);
        let v = stdout_json(&out);
        assert!(v.is_object(), "{c:?}");
        assert!(v.get("ok").is_some(), "{c:?}: {v}");
    }
}

#[test]
fn proof_scripts_pass_with_a_temp_home() {
    // The real-CLI packs' proofs also run `hcpx check --probe` (--strict where the CLI prints JSON).
    for p in ["ledger", "transit", "jq", "sqlite", "ip", "git"] {
        let t = TestDir::new();
        let out = Command::new("bash")
            .arg(repo().join("packs").join(p).join("proof.sh"))
            .env("HCPX", env!("CARGO_BIN_EXE_hcpx"))
            .env("HCP_HOME", t.join("home"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{p} proof failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{p} proof: ok")));
    }
}

#[test]
fn twin_face_holds_on_both_example_packs() {
    let h = Home::new();
    setup_examples(&h);
    let direct = |pack: &str, bin: &str, argv: &[&str]| -> Value {
        let cwd = h.t.join(&format!("direct-{pack}"));
        std::fs::create_dir_all(&cwd).unwrap();
        let out = Command::new(repo().join("packs").join(pack).join("bin").join(bin))
            .args(argv)
            .current_dir(&cwd)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let (_, v) = h.exec("transit", "plan", &["from=A", "to=B"]);
    assert_eq!(v["result"], direct("transit", "transit.mjs", &["plan", "A", "B", "--json"]));
    let (_, v) = h.exec("transit", "find", &["Central"]);
    assert_eq!(v["result"], direct("transit", "transit.mjs", &["find", "Central", "--json"]));
    let (_, v) = h.exec("ledger", "status", &[]);
    assert_eq!(v["result"], direct("ledger", "ledger.mjs", &["status", "--json"]));
    let (_, v) = h.exec("ledger", "transfer", &["amount=2.80", "payee=demo-transit", "confirm=true"]);
    assert_eq!(
        v["result"],
        direct("ledger", "ledger.mjs", &["transfer", "2.80", "--to", "demo-transit", "--confirm", "--json"])
    );
}

#[test]
fn human_output_goes_to_the_right_stream() {
    let h = Home::new();
    setup_examples(&h);
    let out = h.run(&["exec", "transit", "plan", "A", "B"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["optionId"], "opt-1");
    assert!(out.stderr.is_empty(), "no title without a TTY: {}", String::from_utf8_lossy(&out.stderr));
    let out = h.run(&["exec", "ledger", "transfer", "amount=2.80", "payee=demo-transit"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: confirm required (confirm_required)"));
    let out = h.run(&["title", "ledger", "list"]);
    assert_eq!(
        (out.status.code(), out.stdout.is_empty()),
        (Some(0), true),
        "no title declared: nothing, exit 0"
    );
    let out =
        h.run(&["title", "ledger", "transfer", "--result", "{}", "--", "amount=2.80", "payee=demo-transit"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Paid 2.80 to demo-transit");
    let out = h.run(&["commands", "transit", "--json"]);
    let v = stdout_json(&out);
    assert_eq!(v["commands"][1]["exec"], "hcpx exec transit plan -- from=A to=B");
    let out = h.run(&["skill", "transit"]);
    let lead = String::from_utf8_lossy(&out.stdout);
    assert!(lead.starts_with("# Transit") && !lead.contains("## Hot path"), "{lead}");
}

#[test]
fn usage_errors_exit_2_and_never_prompt() {
    let t = TestDir::new();
    let out = hcpx(t.path(), &["exec"]);
    assert_eq!(out.status.code(), Some(2));
    let out = hcpx(t.path(), &["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_terminal_shows_the_live_then_the_done_title() {
    if Command::new("script").arg("--version").output().is_err() {
        panic!("util-linux `script` is needed for the TTY test (scripts/setup.sh installs it)");
    }
    let h = Home::new();
    setup_examples(&h);
    let bin = env!("CARGO_BIN_EXE_hcpx");
    let cmd =
        format!("{bin} exec ledger transfer -- amount=2.80 payee=demo-transit confirm=true 2>&1 >/dev/null");
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("HCP_HOME", h.store())
        .env("TERM", "xterm")
        .current_dir(h.t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("… Paying 2.80 to demo-transit"), "{text:?}");
    assert!(text.contains("✓ Paid 2.80 to demo-transit"), "{text:?}");
    assert!(!text.contains("ledger.mjs"), "the command line stays one flag away: {text:?}");
    let verbose = format!("{bin} exec ledger list --verbose 2>&1 >/dev/null");
    let out = Command::new("script")
        .args(["-qec", &verbose, "/dev/null"])
        .env("HCP_HOME", h.store())
        .current_dir(h.t.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("ledger.mjs list --json"), "--verbose shows the exact command: {text:?}");
}

/// `hcpx exec …` is read by hand when plain, else parsed against the exec subcommand alone (fast paths, #25);
/// `hcpx --json exec …` goes through the whole CLI. Every line means the same either way, with `--json` first
/// or last: the same result, plan or refusal, word for word.
#[test]
fn an_exec_line_means_the_same_to_the_fast_and_the_whole_parser() {
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");
    let lines: &[&[&str]] = &[
        &["probe", "echo", "word=hello"],
        &["probe", "echo", "word=-x", ""],
        &["probe", "look"],
        &["probe", "echo", "-"],
        &["probe", "echo", "-w"],
        &["probe", "echo", "word=hello", "--dry-run"],
        &["probe", "echo", "--dry-run", "--", "word=a b", "--json"],
        // `--` and what follows it, read by hand too (#39): words that look like options, a second `--`.
        &["probe", "echo", "--", "word=hello"],
        &["probe", "echo", "--", "word=-x", "-w"],
        &["probe", "echo", "--", "--json"],
        &["probe", "echo", "--", "--", "word=x"],
        &["probe", "--", "echo", "word=x"],
        &["--", "probe", "echo", "word=x"],
        &["probe", "echo", "--"],
        &["probe", "--"],
        &["--"],
        &["probe", "echo", "--dry-run", "--verbose", "--project-id", "p1", "word=x"],
        &["probe", "echo", "--dry-run", "--project-id=p2", "--mode", "mock", "word=x"],
        &["probe", "echo", "--dry-run", "--project", ".", "word:=\"x\""],
        &["probe", "look", "--dry-run"],
        &["probe"],
        &["nope", "look"],
        &["probe", "echo", "--mode", "real"],
        &["probe", "echo", "--bogus"],
        &["probe", "echo", "--project"],
        &["probe", "echo", "--help"],
        &["probe", "--version"],
        &[],
    ];
    // The probe prints its TMPDIR, made fresh for each call: its random part is masked.
    let masked = |text: &[u8]| {
        let mut t = String::from_utf8_lossy(text).into_owned();
        let mut from = 0;
        while let Some(i) = t[from..].find("hcpx-call-").map(|i| from + i + "hcpx-call-".len()) {
            let end = (i + 6).min(t.len());
            t.replace_range(i..end, "XXXXXX");
            from = end;
        }
        t
    };
    let shown = |o: &std::process::Output| (o.status.code(), masked(&o.stdout), masked(&o.stderr));
    for line in lines {
        let whole: Vec<&str> = ["--json", "exec"].iter().chain(line.iter()).copied().collect();
        let first: Vec<&str> = ["exec", "--json"].iter().chain(line.iter()).copied().collect();
        let want = shown(&h.run(&whole));
        assert_eq!(shown(&h.run(&first)), want, "{line:?}");
        if !line.contains(&"--") {
            let last: Vec<&str> =
                ["exec"].iter().chain(line.iter()).chain(["--json"].iter()).copied().collect();
            assert_eq!(shown(&h.run(&last)), want, "{line:?}, --json last");
        }
    }
    let out = stdout_json(&h.run(&["exec", "probe", "echo", "word=hello", "--json"]));
    assert_eq!(out["result"]["argv"], "echo hello", "{out}");
}

/// hcpx starts at its own entry, not std's (#25): a closed standard descriptor is opened on /dev/null before
/// anything else, so no file it opens takes descriptor 0, 1 or 2, and the child still gets all three.
#[test]
fn a_call_runs_with_its_standard_descriptors_closed() {
    use std::os::unix::process::CommandExt;
    let h = Home::new();
    let mut f = probe_fixture(&h.marker);
    let script = "#!/bin/sh\nfor i in 0 1 2; do [ -e /proc/self/fd/$i ] && printf 'fd%s ' $i; done\necho\n";
    f.files = vec![("bin/probe".into(), script.into(), true)];
    h.install(&f, "probe");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["exec", "probe", "look", "--json"])
        .env("HCP_HOME", h.store())
        .current_dir(h.t.path())
        .stdout(std::process::Stdio::piped());
    // SAFETY: close(2) on the child's own descriptors between fork and exec; no allocation.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(0);
            libc::close(2);
            Ok(())
        });
    }
    let out = cmd.output().expect("run hcpx");
    let v = stdout_json(&out);
    assert_eq!((out.status.code(), v["ok"].as_bool()), (Some(0), Some(true)), "{v}");
    assert_eq!(v["result"].as_str().map(str::trim_end), Some("fd0 fd1 fd2"), "{v}");
}

/// SIGPIPE is ignored as std's start-up would: a reader that goes away makes a write fail, it does not kill hcpx
/// by a signal.
#[test]
fn a_closed_stdout_pipe_is_an_error_not_a_signal() {
    use std::os::unix::process::ExitStatusExt;
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(["exec", "probe", "echo", "word=hi", "--json"])
        .env("HCP_HOME", h.store())
        .current_dir(h.t.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn hcpx");
    drop(child.stdout.take());
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), None, "{status:?}");
    assert_eq!(h.runs(), 1, "the call itself ran");
}
