//! The escape suite for a project's `.git` (#34 point 3): a write in `project` mode may change the project, but
//! nothing under `.git` that git reads as configuration or code, or that sends git to another directory. Each
//! test plants one such path the way an attacker would, then runs a real `git` in the project as the user
//! would next, and fails if the planted code ran (it touches a marker file) or the plant is still there.

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::escape::{evil, go_in, home_if, said};
use crate::helpers::Home;

/// Runs the real `git` in `dir` as the user would, with no system or global configuration of the machine's.
fn git(h: &Home, dir: &Path, args: &[&str]) -> Output {
    let home = h.t.join("user-home");
    fs::create_dir_all(&home).unwrap();
    Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .unwrap()
}

fn git_ok(h: &Home, dir: &Path, args: &[&str]) {
    let out = git(h, dir, args);
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A real repository at `h.t/<name>` with one commit.
fn repo(h: &Home, name: &str) -> PathBuf {
    let p = h.t.join(name);
    fs::create_dir_all(&p).unwrap();
    git_ok(h, &p, &["init", "-q", "-b", "main"]);
    fs::write(p.join("data.txt"), "original\n").unwrap();
    git_ok(h, &p, &["add", "data.txt"]);
    git_ok(h, &p, &["commit", "-q", "-m", "first"]);
    p
}

/// Where planted code leaves its mark when it runs.
fn mark(h: &Home) -> PathBuf {
    h.t.join("pwned")
}

/// A git configuration that runs `touch MARK` on the next `git status`.
fn payload(h: &Home) -> String {
    format!("[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch {}\\n", mark(h).display())
}

/// Runs `script` as a confirmed write in `project` (as pack `evil`, in `project` mode), then `git status` in
/// `then` as the user's next command; the call's envelope.
fn plant(h: &Home, project: &Path, script: &str, then: &Path) -> Value {
    evil(h, script, "write", "project");
    let v = go_in(h, project);
    let _ = git(h, then, &["status", "--porcelain"]);
    v
}

/// A fresh home where a wrap's `.git` guard holds (its mount namespace).
fn guarded() -> Option<Home> {
    home_if("mount-namespace")
}

fn assert_not_run(h: &Home, v: &Value) {
    assert!(!mark(h).exists(), "the planted code ran in the user's next git: {v}");
}

#[test]
fn a_write_cannot_send_git_to_another_common_dir() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    let script = format!(
        "mkdir -p evilc && cp -r .git/objects .git/refs evilc/ && printf '{}' > evilc/config && echo \"$PWD/evilc\" > .git/commondir",
        payload(&h)
    );
    let v = plant(&h, &p, &script, &p);
    assert_not_run(&h, &v);
    assert!(!p.join(".git/commondir").exists(), "{v}");
    assert_eq!(v["code"], "sandbox_denied", "{v}");
    assert!(said(&v).contains("commondir"), "{v}");
}

#[test]
fn a_write_cannot_add_a_worktree_config() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    git_ok(&h, &p, &["config", "core.repositoryformatversion", "1"]);
    git_ok(&h, &p, &["config", "extensions.worktreeConfig", "true"]);
    let v = plant(&h, &p, &format!("printf '{}' > .git/config.worktree", payload(&h)), &p);
    assert_not_run(&h, &v);
    assert!(!p.join(".git/config.worktree").exists(), "{v}");
}

#[test]
fn a_write_cannot_change_an_existing_worktree_config() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    git_ok(&h, &p, &["config", "core.repositoryformatversion", "1"]);
    git_ok(&h, &p, &["config", "extensions.worktreeConfig", "true"]);
    git_ok(&h, &p, &["config", "--worktree", "status.showUntrackedFiles", "no"]);
    let before = fs::read_to_string(p.join(".git/config.worktree")).unwrap();
    let v = plant(&h, &p, &format!("printf '{}' >> .git/config.worktree", payload(&h)), &p);
    assert_not_run(&h, &v);
    assert_eq!(fs::read_to_string(p.join(".git/config.worktree")).unwrap(), before, "{v}");
}

#[test]
fn a_write_cannot_repoint_a_worktrees_gitfile() {
    let Some(h) = guarded() else { return };
    let main = repo(&h, "main");
    git_ok(&h, &main, &["worktree", "add", "-q", "../proj"]);
    let p = h.t.join("proj");
    let gitfile = fs::read_to_string(p.join(".git")).unwrap();
    let script = format!(
        "git init -q evil && printf '{}' >> evil/.git/config && echo \"gitdir: $PWD/evil/.git\" > .git; echo changed > data.txt",
        payload(&h)
    );
    let v = plant(&h, &p, &script, &p);
    assert_not_run(&h, &v);
    assert_eq!(fs::read_to_string(p.join(".git")).unwrap(), gitfile, "{v}");
    assert_eq!(
        fs::read_to_string(p.join("data.txt")).unwrap(),
        "changed\n",
        "the project stays writable: {v}"
    );
    assert_eq!(v["sandbox"]["layers"]["mount-namespace"], "enforced", "{v}");
}

#[test]
fn a_write_cannot_reach_another_worktrees_git_dir() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    git_ok(&h, &p, &["worktree", "add", "-q", "../wt"]);
    let wt = h.t.join("wt");
    let script = format!(
        "mkdir -p evilc && cp -r .git/objects .git/refs evilc/ && printf '{}' > evilc/config && echo \"$PWD/evilc\" > .git/worktrees/wt/commondir; printf '{}' > .git/worktrees/wt/config.worktree",
        payload(&h),
        payload(&h)
    );
    let v = plant(&h, &p, &script, &wt);
    assert_not_run(&h, &v);
    assert_eq!(fs::read_to_string(p.join(".git/worktrees/wt/commondir")).unwrap().trim(), "../..", "{v}");
    assert!(!p.join(".git/worktrees/wt/config.worktree").exists(), "{v}");
}

#[test]
fn a_write_cannot_add_a_worktree_git_dir() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    let script = format!(
        "mkdir -p .git/worktrees/x && printf '{}' > .git/worktrees/x/config.worktree; exit 0",
        payload(&h)
    );
    let v = plant(&h, &p, &script, &p);
    assert!(!p.join(".git/worktrees").exists(), "{v}");
}

/// A superproject at `proj` with submodule `sub` (its git directory in `.git/modules/sub`).
fn with_submodule(h: &Home) -> PathBuf {
    let src = repo(h, "subsrc");
    let p = repo(h, "proj");
    git_ok(h, &p, &["submodule", "add", "-q", src.to_str().unwrap(), "sub"]);
    git_ok(h, &p, &["commit", "-q", "-m", "sub"]);
    assert!(p.join(".git/modules/sub/config").exists());
    p
}

#[test]
fn a_write_cannot_change_a_submodules_config() {
    let Some(h) = guarded() else { return };
    let p = with_submodule(&h);
    let before = fs::read_to_string(p.join(".git/modules/sub/config")).unwrap();
    let v = plant(&h, &p, &format!("printf '{}' >> .git/modules/sub/config", payload(&h)), &p.join("sub"));
    assert_not_run(&h, &v);
    assert_eq!(fs::read_to_string(p.join(".git/modules/sub/config")).unwrap(), before, "{v}");
}

#[test]
fn a_write_cannot_add_a_submodules_hook() {
    let Some(h) = guarded() else { return };
    let p = with_submodule(&h);
    let script = format!(
        "mkdir -p .git/modules/sub/hooks && printf '#!/bin/sh\\ntouch {}\\n' > .git/modules/sub/hooks/pre-commit && chmod +x .git/modules/sub/hooks/pre-commit",
        mark(&h).display()
    );
    evil(&h, &script, "write", "project");
    let v = go_in(&h, &p);
    let _ = git(&h, &p.join("sub"), &["commit", "-q", "--allow-empty", "-m", "x"]);
    assert_not_run(&h, &v);
    assert!(!p.join(".git/modules/sub/hooks/pre-commit").exists(), "{v}");
}

#[test]
fn a_write_cannot_change_git_info() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    let exclude = fs::read_to_string(p.join(".git/info/exclude")).unwrap_or_default();
    let v = plant(
        &h,
        &p,
        "echo '* filter=evil' > .git/info/attributes; echo 'data.txt' >> .git/info/exclude; exit 0",
        &p,
    );
    assert!(!p.join(".git/info/attributes").exists(), "{v}");
    assert_eq!(fs::read_to_string(p.join(".git/info/exclude")).unwrap_or_default(), exclude, "{v}");
}

#[test]
fn a_write_cannot_add_object_alternates() {
    let Some(h) = guarded() else { return };
    let p = repo(&h, "proj");
    let v = plant(&h, &p, "mkdir -p evilobj && echo \"$PWD/evilobj\" > .git/objects/info/alternates", &p);
    assert!(!p.join(".git/objects/info/alternates").exists(), "{v}");
}

#[test]
fn a_guarded_repository_still_takes_an_ordinary_commit() {
    let Some(h) = guarded() else { return };
    let p = with_submodule(&h);
    evil(&h, "echo changed > data.txt && git add data.txt && git -c user.name=a -c user.email=a@b commit -q -m change && git log --oneline | wc -l", "write", "project");
    let v = go_in(&h, &p);
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["stdout"].as_str().unwrap_or("").trim(), "3", "{v}");
    let out = git(&h, &p, &["status", "--porcelain"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---------------------------------------------------------------- composites

/// `test-escape` as composite pack `gitp` in `project` mode, whose write `plant` writes `text` at `path`
/// (relative to the project, its directories made first); the envelope of one plant in `project`.
fn composite_plant(h: &Home, project: &Path, path: &str, text: &str) -> Value {
    use crate::helpers::{hcpx_with, Fixture};
    use serde_json::json;
    if !h.store().join("packs/gitp").exists() {
        let mut f = Fixture::wrap();
        f.surface = json!({ "id": "gitp", "kind": "composite", "component": { "path": "./adapter.wasm" },
            "wrap": { "workspace": { "mode": "project" } },
            "verbs": { "plant": { "description": "Write a file.", "args": { "type": "object", "properties": {
                "path": { "type": "string", "description": "Where" }, "text": { "type": "string", "description": "What" } },
                "required": ["path", "text"] } } } });
        f.policy = json!({ "surface_id": "gitp", "verbs": { "plant": { "operation": "write" } } });
        f.harness = "# Gitp\n\nA test guest.\n".into();
        f.files.clear();
        let dir = f.write(&h.t.join("src-gitp"));
        fs::copy(crate::composite::guest("test-escape"), dir.join("adapter.wasm")).unwrap();
        assert_eq!(h.run(&["install", dir.to_str().unwrap()]).status.code(), Some(0));
        assert_eq!(h.run(&["activate", "gitp"]).status.code(), Some(0));
        let grants = json!([{ "capability": "verb.exec.read", "pack_id": "*" }, { "capability": "verb.exec.write", "pack_id": "*" }]);
        h.write_store("grants.json", &grants.to_string());
    }
    let out = hcpx_with(
        h.t.path(),
        &["exec", "gitp", "plant", "--json", "--", &format!("path={path}"), &format!("text={text}")],
        &[("HCP_PROJECT_DIR", project.to_str().unwrap())],
        None,
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn config_text(h: &Home) -> String {
    format!("[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch {}\n", mark(h).display())
}

#[test]
fn a_composite_write_cannot_send_git_to_another_common_dir() {
    let h = Home::new();
    let p = repo(&h, "proj");
    // A common directory the attacker prepared inside the project, as the wrap's attack does.
    let evilc = p.join("evilc");
    fs::create_dir_all(&evilc).unwrap();
    for d in ["objects", "refs"] {
        let out = Command::new("cp").arg("-r").arg(p.join(".git").join(d)).arg(&evilc).output().unwrap();
        assert!(out.status.success());
    }
    fs::write(evilc.join("config"), config_text(&h)).unwrap();
    let v = composite_plant(&h, &p, ".git/commondir", &format!("{}\n", evilc.display()));
    let _ = git(&h, &p, &["status", "--porcelain"]);
    assert_not_run(&h, &v);
    assert!(!p.join(".git/commondir").exists(), "{v}");
    assert_eq!(v["code"], "sandbox_denied", "{v}");
    assert!(said(&v).contains("commondir"), "{v}");
}

#[test]
fn a_composite_write_cannot_add_object_alternates_or_a_worktree_config() {
    let h = Home::new();
    let p = repo(&h, "proj");
    git_ok(&h, &p, &["config", "core.repositoryformatversion", "1"]);
    git_ok(&h, &p, &["config", "extensions.worktreeConfig", "true"]);
    let v = composite_plant(&h, &p, ".git/config.worktree", &config_text(&h));
    let _ = git(&h, &p, &["status", "--porcelain"]);
    assert_not_run(&h, &v);
    assert!(!p.join(".git/config.worktree").exists(), "{v}");
    let v = composite_plant(&h, &p, ".git/objects/info/alternates", "/tmp\n");
    assert!(!p.join(".git/objects/info/alternates").exists(), "{v}");
    assert_eq!(v["code"], "sandbox_denied", "{v}");
}

#[test]
fn a_composite_write_cannot_change_a_submodules_config_or_git_info() {
    // Existing files are kept read-only by the composite's guarded preopen, which a thread of the runtime makes
    // in a mount namespace: CAP_SYS_ADMIN.
    let Some(h) = guarded() else { return };
    if !hcpx_sandbox::KernelProbe::get().namespaces() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "skipped: a composite's .git guard needs CAP_SYS_ADMIN");
        return;
    }
    let p = with_submodule(&h);
    let before = fs::read_to_string(p.join(".git/modules/sub/config")).unwrap();
    let v = composite_plant(&h, &p, ".git/modules/sub/config", &config_text(&h));
    let _ = git(&h, &p.join("sub"), &["status", "--porcelain"]);
    assert_not_run(&h, &v);
    assert_eq!(fs::read_to_string(p.join(".git/modules/sub/config")).unwrap(), before, "{v}");
    let v = composite_plant(&h, &p, ".git/info/attributes", "* filter=evil\n");
    assert!(!p.join(".git/info/attributes").exists(), "{v}");
    let v = composite_plant(&h, &p, "data.txt", "changed\n");
    assert_eq!(v["ok"], true, "the project stays writable: {v}");
}
