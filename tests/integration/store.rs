//! The store: install copies only a linted pack, writes are atomic, and parallel `hcpx` processes lose nothing.

use serde_json::{json, Value};
use std::fs;
use std::process::Command;

use crate::helpers::{probe_fixture, stdout_json, Fixture, Home};

#[test]
fn install_refuses_a_pack_that_fails_lint_and_names_each_issue() {
    let h = Home::new();
    let mut f = Fixture::wrap();
    f.policy["verbs"]["list"]["confrim"] = json!(true);
    let dir = f.write(h.t.path());
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert_eq!(v["ok"], json!(false));
    assert_eq!(v["issues"][0]["kind"], "unknown_field");
    assert!(!h.store().join("packs/demo").exists());
    let text = h.run(&["install", dir.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&text.stderr).contains("[unknown_field]"));
}

#[test]
fn install_copies_only_the_pack_and_refuses_links_out() {
    let h = Home::new();
    let f = probe_fixture(&h.marker);
    let dir = f.write(h.t.path());
    fs::create_dir_all(dir.join("data/.git")).unwrap();
    fs::write(dir.join("data/notes.txt"), "inside").unwrap();
    fs::write(dir.join("data/.git/HEAD"), "vcs").unwrap();
    fs::write(h.t.join("beside-the-pack.txt"), "outside").unwrap();
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let installed = h.store().join("packs/probe");
    assert!(installed.join("data/notes.txt").exists());
    assert!(!installed.join("data/.git").exists());
    assert!(!h.store().join("packs/beside-the-pack.txt").exists());
    use std::os::unix::fs::PermissionsExt;
    assert_ne!(fs::metadata(installed.join("bin/probe")).unwrap().permissions().mode() & 0o111, 0);
    // A link that leads out of the pack is refused, and the old install stays.
    std::os::unix::fs::symlink("/etc/passwd", dir.join("data/passwd")).unwrap();
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"].as_str().unwrap().contains("leads out of the pack"));
    assert!(installed.join("data/notes.txt").exists());
    assert!(!installed.join("data/passwd").exists());
}

#[test]
fn reinstall_keeps_activation_and_uninstall_removes() {
    let h = Home::new();
    let id = h.install(&probe_fixture(&h.marker), "probe");
    // The same source again, without activating: the activation is kept.
    let again = h.run(&["install", h.t.join("src-probe/pack").to_str().unwrap(), "--json"]);
    assert_eq!((again.status.code(), stdout_json(&again)["pack_id"].as_str()), (Some(0), Some(id.as_str())));
    let list = stdout_json(&h.run(&["list", "--json"]));
    assert_eq!(list["packs"][0]["activated"], json!(true));
    assert_eq!(list["packs"][0]["commands"], json!(3));
    assert_eq!(h.run(&["uninstall", "probe"]).status.code(), Some(0));
    assert_eq!(stdout_json(&h.run(&["list", "--json"]))["packs"], json!([]));
    assert!(!h.store().join("packs/probe").exists());
    let out = h.run(&["uninstall", "probe", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"].as_str().unwrap().contains("not installed"));
    assert_eq!(h.run(&["activate", "../x"]).status.code(), Some(1));
}

#[test]
fn parallel_processes_lose_nothing_and_tear_nothing() {
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");
    let n = 16;
    let mut children = Vec::new();
    for i in 0..n {
        let store = h.store();
        let bin = env!("CARGO_BIN_EXE_hcpx");
        children.push(
            Command::new(bin).args(["allow", &format!("tool{i}")]).env("HCP_HOME", &store).spawn().unwrap(),
        );
        children.push(
            Command::new(bin)
                .args(["exec", "probe", "put", "--json", "--", "confirm=true"])
                .env("HCP_HOME", &store)
                .spawn()
                .unwrap(),
        );
        children.push(
            Command::new(bin).args(["allow", &format!("par{i}")]).env("HCP_HOME", &store).spawn().unwrap(),
        );
        children.push(Command::new(bin).args(["activate", "probe"]).env("HCP_HOME", &store).spawn().unwrap());
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let sandbox: Value =
        serde_json::from_str(&fs::read_to_string(h.store().join("sandbox.json")).unwrap()).unwrap();
    let allow: Vec<&str> = sandbox["allow"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    for i in 0..n {
        assert!(allow.contains(&format!("par{i}").as_str()), "par{i} lost: {allow:?}");
        assert!(allow.contains(&format!("tool{i}").as_str()), "tool{i} lost");
    }
    let log = fs::read_to_string(h.store().join("audit.log")).unwrap();
    assert_eq!(log.lines().count(), n, "one line per write");
    for line in log.lines() {
        let rec: Value = serde_json::from_str(line).expect("every audit line is whole JSON");
        assert_eq!(rec["ok"], json!(true));
    }
    let state: Value =
        serde_json::from_str(&fs::read_to_string(h.store().join("state.json")).unwrap()).unwrap();
    assert_eq!(state["packs"]["probe"]["activated"], json!(true));
    assert_eq!(h.runs(), n);
    let leftovers: Vec<_> = fs::read_dir(h.store().join("tmp")).unwrap().collect();
    assert!(leftovers.is_empty(), "temp files left behind: {leftovers:?}");
}

#[test]
fn a_corrupt_store_file_is_a_clear_error() {
    let h = Home::new();
    h.install(&probe_fixture(&h.marker), "probe");
    h.write_store("sandbox.json", "{ \"allow\": [\"git\"], \"alow\": [] }");
    let out = h.run(&["exec", "probe", "look", "--json"]);
    assert_eq!(out.status.code(), Some(127));
    let v = stdout_json(&out);
    assert!(v["error"].as_str().unwrap().contains("sandbox.json"), "{v}");
    assert_eq!(h.runs(), 0);
    let doc = h.run(&["doctor", "--json"]);
    assert_eq!(doc.status.code(), Some(1));
    assert_eq!(stdout_json(&doc)["ok"], json!(false));
}

#[test]
fn another_pack_under_an_installed_id_needs_replace_and_starts_deactivated() {
    let h = Home::new();
    let first = probe_fixture(&h.marker);
    h.install(&first, "first");
    fs::create_dir_all(h.store().join("workspaces/probe")).unwrap();
    fs::write(h.store().join("workspaces/probe/state.txt"), "the first pack's data").unwrap();
    // Another directory declaring the same id.
    let mut other = probe_fixture(&h.marker);
    other.harness = "# Probe\n\nSomeone else's pack with the same id.\n".into();
    let src = h.t.join("src-other");
    fs::create_dir_all(&src).unwrap();
    let dir = other.write(&src);
    let out = h.run(&["install", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    assert!(v["error"].as_str().unwrap().contains("--replace"), "{v}");
    let state: Value =
        serde_json::from_str(&fs::read_to_string(h.store().join("state.json")).unwrap()).unwrap();
    assert_eq!(state["packs"]["probe"]["activated"], true, "nothing changed: {state}");
    assert!(state["packs"]["probe"]["source"].as_str().unwrap().contains("src-first"), "{state}");
    // --replace --keep-workspace: replaced, deactivated, the workspace kept.
    let out = h.run(&["install", dir.to_str().unwrap(), "--replace", "--keep-workspace", "--json"]);
    let v = stdout_json(&out);
    assert_eq!(
        (out.status.code(), v["deactivated"].clone(), v["workspace_removed"].clone()),
        (Some(0), json!(true), json!(false)),
        "{v}"
    );
    assert!(h.store().join("workspaces/probe/state.txt").exists());
    // Back to the first: --replace alone removes the other's workspace.
    let first_dir = h.t.join("src-first/pack");
    let out = h.run(&["install", first_dir.to_str().unwrap(), "--replace", "--json"]);
    let v = stdout_json(&out);
    assert_eq!((out.status.code(), v["workspace_removed"].clone()), (Some(0), json!(true)), "{v}");
    assert!(!h.store().join("workspaces/probe/state.txt").exists());
    // The same source again is an ordinary reinstall that keeps the activation.
    assert_eq!(h.run(&["activate", "probe"]).status.code(), Some(0));
    let out = h.run(&["install", first_dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let state: Value =
        serde_json::from_str(&fs::read_to_string(h.store().join("state.json")).unwrap()).unwrap();
    assert_eq!(state["packs"]["probe"]["activated"], true);
}
