//! CLI output as a user sees it, pinned by insta snapshots in `tests/integration/snapshots/`. Each snapshot is
//! one run of the real `hcpx`: its command line, exit code, stdout and stderr, with what varies between
//! machines and runs redacted (see [`settings`]).
//!
//! A change in output fails the test. To accept one, run `cargo insta review` (with cargo-insta installed) or
//! `INSTA_UPDATE=always cargo test --test integration golden`, then read the diff before committing. Under CI
//! (`CI=true`) insta writes nothing, and a missing or different snapshot fails the test; scripts/gates.sh
//! refuses `INSTA_UPDATE` and `INSTA_FORCE_PASS` there.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::helpers::{hcpx, repo, set, stdout_json, Fixture, TestDir};

/// `s` as a regex that matches it literally.
fn literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The filters every snapshot goes through, for a run whose temp dir (and `HCP_HOME` inside it) is `tmp`.
fn settings(tmp: &Path) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_omit_expression(true);
    // Paths: the test's temp dir (as given and canonical), the checkout, and the throw-away store of
    // `hcpx check` and `hcpx eval` (in the system temp dir, named by pid and time).
    let mut dirs = vec![tmp.to_path_buf()];
    dirs.extend(tmp.canonicalize().ok().filter(|c| c != tmp));
    for d in dirs {
        s.add_filter(&literal(&d.display().to_string()), "[TMP]");
    }
    s.add_filter(&literal(&repo().display().to_string()), "[REPO]");
    s.add_filter(r"/[^\s\x22]*hcpx-trial-[A-Za-z0-9]+", "[TRIAL STORE]");
    // Times: install and audit timestamps, and every duration a probe, eval case or report gives.
    s.add_filter(r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z\b", "[TIME]");
    s.add_filter(r#""(ms|p50_ms|p95_ms)": [0-9]+"#, r#""${1}": "[MS]""#);
    // The audit chain's links: hashes over lines that hold a time and a random genesis.
    s.add_filter(r#""prev": "[0-9a-f]{64}""#, r#""prev": "[HASH]""#);
    s.add_filter(r"\b(p50|p95) [0-9]+ ms\b", "${1} [MS] ms");
    s.add_filter(r"\([0-9]+ ms, ~", "([MS] ms, ~");
    // The component digest `--verbose` shows: pinned by the_example_component_is_reproducible_from_source, and
    // it changes with every rebuild of the guest, which is no change in what hcpx prints.
    s.add_filter(r"\(component [0-9a-f]{12}\)", "(component [DIGEST])");
    // What this kernel enforces: a wrap's sandbox mode and each layer's status (docs/security.md).
    s.add_filter(r#""mode": "(sandbox|native-local)""#, r#""mode": "[SANDBOX MODE]""#);
    s.add_filter(r#""([a-z-]+)": "(enforced|partial|unavailable)""#, r#""${1}": "[LAYER STATUS]""#);
    s
}

/// A run as the snapshot shows it.
fn shown(args: &[&str], out: &Output) -> String {
    let code = match out.status.code() {
        Some(c) => c.to_string(),
        None => out.status.to_string(),
    };
    let line: String = ["hcpx"].iter().chain(args).copied().collect::<Vec<_>>().join(" ");
    let mut s = format!("$ {line}\nexit: {code}\n");
    for (label, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        if text.is_empty() {
            s.push_str(&format!("--- {label}: empty\n"));
            continue;
        }
        s.push_str(&format!("--- {label}\n{text}"));
        if !text.ends_with('\n') {
            s.push_str("\n[no newline at the end]\n");
        }
    }
    s
}

/// Runs `hcpx args` in `dir` (its store in `dir/hcp-home`) and checks the run against snapshot `name`.
fn snap(name: &str, dir: &Path, args: &[&str]) -> Output {
    let out = hcpx(dir, args);
    settings(dir).bind(|| insta::assert_snapshot!(name, shown(args, &out)));
    if args.contains(&"--json") {
        // Whatever the snapshot says, the JSON face prints exactly one document.
        stdout_json(&out);
    }
    out
}

/// The path of an example pack, as a CLI argument.
fn pack(name: &str) -> String {
    repo().join("packs").join(name).display().to_string()
}

/// The names under `Commands:` in a clap help text, but `help`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect()
}

/// Snapshots `hcpx <path> --help` and, below it, every subcommand's.
fn help_tree(t: &TestDir, path: &[String]) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let name = if path.is_empty() { "help".to_string() } else { format!("help-{}", path.join("-")) };
    let out = snap(&name, t.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{name}");
    // Every argument says what it is: no line of help ends in the blank an undocumented one leaves.
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(!help.lines().any(|l| l.ends_with(' ')), "{name}: an argument without help text:\n{help}");
    // Every subcommand shows how it is used (issue #14: an EXAMPLES section via `after_help`).
    if !path.is_empty() {
        assert!(help.contains("\nExamples:\n  "), "{name}: no Examples section:\n{help}");
    }
    for sub in subcommands(&String::from_utf8_lossy(&out.stdout)) {
        help_tree(t, &[path, &[sub]].concat());
    }
}

#[test]
fn help_of_hcpx_and_of_every_subcommand() {
    let t = TestDir::new();
    help_tree(&t, &[]);
    // The list of commands is read from the help itself, so a new one cannot go without a snapshot.
    let top = String::from_utf8_lossy(&hcpx(t.path(), &["--help"]).stdout).to_string();
    assert!(subcommands(&top).len() >= 20, "{top}");
    // And without a command: the usage, on stderr, as a usage error.
    assert_eq!(snap("no-command", t.path(), &[]).status.code(), Some(2));
}

/// The demo fixture with two lint errors: a gated read and a cli[] that does not start with the pack's bin.
fn two_issues(t: &TestDir) -> PathBuf {
    let mut f = Fixture::wrap();
    set(&mut f.policy, "/verbs/list/confirm", serde_json::json!(true));
    set(&mut f.surface, "/verbs/list/cli", serde_json::json!(["other", "list"]));
    f.write(t.path())
}

#[test]
fn lint_text_and_json() {
    let t = TestDir::new();
    let dir = two_issues(&t);
    let dir = dir.to_str().unwrap();
    assert_eq!(snap("lint-two-issues", t.path(), &["lint", dir]).status.code(), Some(1));
    snap("lint-two-issues-json", t.path(), &["lint", dir, "--json"]);
    assert_eq!(snap("lint-ledger", t.path(), &["lint", &pack("ledger")]).status.code(), Some(0));
    snap("lint-ledger-json", t.path(), &["lint", &pack("ledger"), "--json"]);
}

#[test]
fn check_text_json_and_agent() {
    let t = TestDir::new();
    // An example pack: static layers and evals, then with probes as JSON. The composite needs nothing on
    // PATH and no sandbox layer, so its report is the same on every machine.
    let composite = pack("transit-composite");
    assert_eq!(snap("check-transit-composite", t.path(), &["check", &composite]).status.code(), Some(0));
    snap("check-transit-composite-probe-json", t.path(), &["check", &composite, "--probe", "--json"]);
    // A pack that fails lint: L- findings, grade and exit, in each face.
    let dir = two_issues(&t);
    let dir = dir.to_str().unwrap();
    assert_eq!(snap("check-two-issues", t.path(), &["check", dir]).status.code(), Some(1));
    snap("check-two-issues-json", t.path(), &["check", dir, "--json"]);
    snap("check-two-issues-agent", t.path(), &["check", dir, "--agent"]);
}

#[test]
fn eval_text_and_json() {
    let t = TestDir::new();
    let composite = pack("transit-composite");
    assert_eq!(snap("eval-transit-composite", t.path(), &["eval", &composite]).status.code(), Some(0));
    snap("eval-transit-composite-json", t.path(), &["eval", &composite, "--json"]);
}

#[test]
fn store_views_of_the_example_packs() {
    let t = TestDir::new();
    let p = t.path();
    assert_eq!(snap("install-ledger", p, &["install", &pack("ledger")]).status.code(), Some(0));
    snap("install-transit-composite-json", p, &["install", &pack("transit-composite"), "--json"]);
    assert_eq!(hcpx(p, &["activate", "transit-composite"]).status.code(), Some(0));
    snap("list", p, &["list"]);
    snap("list-json", p, &["list", "--json"]);
    snap("commands-ledger", p, &["commands", "ledger"]);
    snap("commands-ledger-json", p, &["commands", "ledger", "--json"]);
    snap("skill-ledger", p, &["skill", "ledger"]);
    snap("skill-ledger-json", p, &["skill", "ledger", "--json"]);
    snap("skill-ledger-full", p, &["skill", "ledger", "--full"]);
    snap("availability-ledger-inactive", p, &["availability", "ledger"]);
    snap("availability-ledger-inactive-json", p, &["availability", "ledger", "--json"]);
    snap("availability-transit-composite", p, &["availability", "transit-composite"]);
    snap("availability-unknown", p, &["availability", "nope"]);
}

#[test]
fn exec_reads_titles_denials_and_the_audit_log() {
    let t = TestDir::new();
    let p = t.path();
    for id in ["transit-composite", "transit", "ledger"] {
        assert_eq!(hcpx(p, &["install", &pack(id), "--json"]).status.code(), Some(0), "{id}");
    }
    assert_eq!(hcpx(p, &["activate", "transit-composite", "transit"]).status.code(), Some(0));
    // A read in-process (a component) and in the wrap sandbox (a Node.js bin): the result, then the envelope.
    let plan = ["exec", "transit-composite", "plan", "A", "B"];
    assert_eq!(snap("exec-composite-plan", p, &plan).status.code(), Some(0));
    snap("exec-composite-plan-json", p, &[&plan[..], &["--json"]].concat());
    snap("exec-composite-plan-verbose", p, &[&plan[..], &["--verbose"]].concat());
    let plan = ["exec", "transit", "plan", "A", "B"];
    assert_eq!(snap("exec-wrap-plan", p, &plan).status.code(), Some(0));
    snap("exec-wrap-plan-json", p, &[&plan[..], &["--json"]].concat());
    // Titles, live and done.
    snap("title-live", p, &["title", "transit-composite", "plan", "A", "B"]);
    snap(
        "title-done-json",
        p,
        &["title", "transit-composite", "plan", "A", "B", "--result", r#"{"optionId":"opt-9"}"#, "--json"],
    );
    // Denials: a pack not activated, a command without a Policy row, and a gated write without confirm,
    // whose envelope carries the approval card.
    assert_eq!(snap("exec-not-activated", p, &["exec", "ledger", "status"]).status.code(), Some(1));
    snap("exec-not-activated-json", p, &["exec", "ledger", "status", "--json"]);
    snap("exec-no-policy-json", p, &["exec", "transit-composite", "nope", "--json"]);
    assert_eq!(hcpx(p, &["activate", "ledger"]).status.code(), Some(0));
    let transfer = ["exec", "ledger", "transfer", "--json", "--", "amount=2.80", "payee=demo-transit"];
    assert_eq!(snap("exec-confirm-required-json", p, &transfer).status.code(), Some(1));
    snap(
        "exec-confirm-required",
        p,
        &["exec", "ledger", "transfer", "--", "amount=2.80", "payee=demo-transit"],
    );
    // What the audit log kept of all that.
    snap("audit", p, &["audit"]);
    snap("audit-json", p, &["audit", "--json"]);
}
