//! No call pays a compile: install and activate compile a composite's component into the compile cache before
//! any call, a component that does not compile is refused with nothing installed, `hcpx check` compiles once
//! into the operator's cache, and a served store compiles what another process installs in the background, once,
//! however many calls arrive during that compile. Proved by the cache file (a compile writes a new file, so an
//! unchanged inode and modification time mean none happened) and by the server's log, never by a clock.

use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::compile_cache::cwasm_in;
use crate::helpers::{copy_tree, repo, stdout_json, Home};
use crate::serve::{on_both_stores, principal, Server, ALL};

/// What a compile would change of a cache file: a compile writes a new file and renames it into place.
fn identity(p: &Path) -> (u64, i64, i64) {
    let m = fs::metadata(p).unwrap();
    (m.ino(), m.mtime(), m.mtime_nsec())
}

fn transit() -> PathBuf {
    repo().join("packs/transit-composite")
}

fn plan(h: &Home) -> Value {
    let (rc, env) = h.exec("transit-composite", "plan", &["A", "B"]);
    assert_eq!((rc, &env["result"]["optionId"]), (0, &json!("opt-1")), "{env}");
    env
}

#[test]
fn install_compiles_a_composite_into_the_cache_before_any_call() {
    let h = Home::new();
    let out = h.run(&["install", transit().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // Nothing beyond today's document under --json, and no progress on a pipe.
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let cache = h.store().join("cache");
    let cached = cwasm_in(&cache);
    assert_eq!(cached.len(), 1, "install compiled the component: {cached:?}");
    let before = identity(&cached[0]);
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    assert_eq!(identity(&cached[0]), before, "activate found it compiled");
    plan(&h);
    assert_eq!((cwasm_in(&cache), identity(&cached[0])), (cached, before), "the first call did not compile");
}

#[test]
fn activate_compiles_a_pack_whose_cache_entry_was_removed() {
    let h = Home::new();
    assert_eq!(h.run(&["install", transit().to_str().unwrap()]).status.code(), Some(0));
    let cache = h.store().join("cache");
    fs::remove_dir_all(&cache).unwrap();
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    let cached = cwasm_in(&cache);
    assert_eq!(cached.len(), 1, "activate compiled it again: {cached:?}");
    let before = identity(&cached[0]);
    plan(&h);
    assert_eq!(identity(&cached[0]), before, "the first call did not compile");
}

/// What the digest memo holds: each entry's name and identity (a rewrite makes a new file).
fn memo_entries(h: &Home) -> Vec<(String, (u64, i64, i64))> {
    let dir = h.store().join("cache/digests");
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .map(|d| {
            d.flatten().map(|e| (e.file_name().to_string_lossy().into_owned(), identity(&e.path()))).collect()
        })
        .unwrap_or_default();
    entries.sort();
    entries
}

/// The first call right after an install reads and hashes nothing its hundredth does not: install remembers the
/// digests of what it has just written (the pack's files, its component, the compiled component) as soon as the
/// kernel's clock has moved past those writes, instead of leaving every call within two seconds of it to hash
/// them again (tens of MiB for a Python component). Proved by the memo's files: there after the install, and
/// neither rewritten nor added to by the activate and the first call (a call that hashed would write them).
#[test]
fn install_remembers_what_it_wrote_so_the_first_call_hashes_nothing() {
    let h = Home::new();
    assert_eq!(h.run(&["install", transit().to_str().unwrap()]).status.code(), Some(0));
    let remembered = memo_entries(&h);
    // The pack's tree (the store's check), its component and the compiled file (the compile cache's).
    assert_eq!(remembered.len(), 3, "install remembered the three digests a call checks: {remembered:?}");
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    plan(&h);
    assert_eq!(memo_entries(&h), remembered, "activate and the first call found every digest remembered");
    // A changed file is still seen: the component, same size, other bytes, is refused by the next call.
    let component = h.store().join("packs/transit-composite/adapter.wasm");
    let mut bytes = fs::read(&component).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(&component, &bytes).unwrap();
    let (rc, env) = h.exec("transit-composite", "plan", &["A", "B"]);
    assert_ne!(rc, 0, "{env}");
    assert!(env.to_string().contains("changed since install"), "{env}");
}

/// A wrap pack installed from a registry has its files' digest remembered by the install too (it has no
/// component, so nothing is compiled): its first call does not hash the tree again.
#[test]
fn a_wrap_installed_from_a_registry_is_remembered_at_install() {
    use crate::distribution::{example, publish, reference, run_json};
    let h = Home::new();
    let r = reference("remember-wrap", "1.0.0");
    publish(&h, &example(&h, "transit"), &r, None);
    run_json(&h, &["install", &r, "--allow-unsigned"], 0);
    let remembered = memo_entries(&h);
    assert_eq!(remembered.len(), 1, "install remembered the pack tree's digest: {remembered:?}");
}

/// A component that cannot compile is refused at install, naming the pack and the fix: no pack, no record, no
/// cache entry, and a pack it would have replaced keeps running.
#[test]
fn install_refuses_a_component_that_does_not_compile_and_installs_nothing() {
    let h = Home::new();
    let src = h.t.join("broken");
    copy_tree(&transit(), &src);
    let good = fs::read(src.join("adapter.wasm")).unwrap();
    // A component's header, then bytes no compiler accepts.
    fs::write(src.join("adapter.wasm"), b"\0asm\x0d\x00\x01\x00not a component at all").unwrap();
    let out = h.run(&["install", src.to_str().unwrap(), "--json"]);
    let doc = stdout_json(&out);
    assert_eq!((out.status.code(), doc["code"].as_str()), (Some(1), Some("adapter_failed")), "{doc}");
    let msg = doc["error"].as_str().unwrap();
    assert!(
        msg.starts_with("pack transit-composite is not installed: the component does not compile"),
        "{msg}"
    );
    assert!(msg.contains("rebuild it for wasm32-wasip2, and install again"), "{msg}");
    assert!(!h.store().join("packs/transit-composite").exists());
    let listed = stdout_json(&h.run(&["list", "--json"]));
    assert!(!listed.to_string().contains("transit-composite"), "{listed}");
    assert!(cwasm_in(&h.store().join("cache")).is_empty());
    let leftovers: Vec<_> = fs::read_dir(h.store().join("tmp")).map(|d| d.count()).into_iter().collect();
    assert!(leftovers.iter().all(|n| *n == 0), "nothing staged is left: {leftovers:?}");

    // The same source, good: installed and running; then broken again: refused, and the installed one stays.
    fs::write(src.join("adapter.wasm"), &good).unwrap();
    assert_eq!(h.run(&["install", src.to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    fs::write(src.join("adapter.wasm"), b"\0asm\x0d\x00\x01\x00still not a component").unwrap();
    let out = h.run(&["install", src.to_str().unwrap(), "--json"]);
    assert_eq!(stdout_json(&out)["code"], "adapter_failed");
    assert_eq!(fs::read(h.store().join("packs/transit-composite/adapter.wasm")).unwrap(), good);
    plan(&h);
}

/// `hcpx check` of a composite compiles its component into the operator's cache, keyed as a call's is, even for
/// the `describe` it asks before any trial (which compiled in memory, again at every check): a second check (with
/// its eval cases this time), an install and a call of the same component find it there.
#[test]
fn check_twice_compiles_at_most_once() {
    let h = Home::new();
    let out = h.run(&["check", transit().to_str().unwrap(), "--no-eval", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let cache = h.store().join("cache");
    let cached = cwasm_in(&cache);
    assert_eq!(cached.len(), 1, "check compiled into the operator's cache: {cached:?}");
    let before = identity(&cached[0]);
    let out = h.run(&["check", transit().to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(h.run(&["install", transit().to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    plan(&h);
    assert_eq!(
        (cwasm_in(&cache), identity(&cached[0])),
        (cached, before),
        "compiled once, by the first check"
    );
}

/// `hcpx serve` with its compile cache in `cache` (empty: nothing compiled for it yet).
fn serve_with_cache(h: &Home, cache: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .envs(h.store_env())
        .env("HCP_CACHE_DIR", cache)
        .current_dir(h.t.path());
    Server::launch(cmd)
}

/// The server's compile lines for `pack`: (compiling, compiled).
fn compiles(s: &Server, pack: &str) -> (usize, usize) {
    let lines: Vec<Value> = s.log().lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let count = |event: &str| lines.iter().filter(|v| v["event"] == event && v["pack"] == pack).count();
    (count("compiling"), count("compiled"))
}

/// Several first calls at once: each succeeds, and the pack is compiled once.
fn calls_at_once(s: &Server, token: &str, n: usize) {
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let (addr, token) = (s.addr.clone(), token.to_string());
            std::thread::spawn(move || {
                let env = json!({ "pack_id": "transit-composite", "verb_key": "plan", "args": { "from": "A", "to": "B" } });
                crate::serve::request(&addr, "POST", "/v1/exec", Some(&token), Some(env.to_string().as_bytes()))
            })
        })
        .collect();
    for t in threads {
        let (st, _, v) = t.join().unwrap();
        assert_eq!((st, v["result"]["optionId"].as_str()), (200, Some("opt-1")), "{v}");
    }
}

on_both_stores! {
    /// A pack installed and activated by another process (with a compile cache of its own, as another host's
    /// would be) is compiled by the server in the background before any call; calls then find it ready.
    fn a_served_store_compiles_what_another_process_installs_before_any_call / a_served_store_compiles_what_another_process_installs_before_any_call_postgres (h) {
        let alice = principal(&h, "alice", "acme", ALL, false);
        let cache = h.t.join("server-cache");
        let s = serve_with_cache(&h, &cache);
        let elsewhere = h.t.join("installer-cache");
        let env = [("HCP_CACHE_DIR", elsewhere.to_str().unwrap())];
        let out = h.run_env(&["install", transit().to_str().unwrap(), "--json"], &env);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(h.run_env(&["activate", "transit-composite"], &env).status.code(), Some(0));
        let began = Instant::now();
        // Its log line comes as the compile ends; the cache file right after.
        let done = || compiles(&s, "transit-composite").1 > 0 && !cwasm_in(&cache).is_empty();
        while !done() && began.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(compiles(&s, "transit-composite"), (1, 1), "compiled in the background: {}", s.log());
        assert_eq!(cwasm_in(&cache).len(), 1, "into the server's cache");
        assert!(!s.log().contains("/v1/exec"), "before any call: {}", s.log());
        calls_at_once(&s, &alice, 4);
        assert_eq!(compiles(&s, "transit-composite"), (1, 1), "no call compiled: {}", s.log());
    }
}

/// Calls that arrive while the server compiles a pack (it starts with the pack activated and its cache empty)
/// wait for that compile: one compile, however many calls.
#[test]
fn first_calls_during_a_compile_wait_for_that_one_compile() {
    let h = Home::new();
    crate::serve::install_repo_packs(&h, &["transit-composite"]);
    let alice = principal(&h, "alice", "acme", ALL, false);
    let cache = h.t.join("server-cache");
    let s = serve_with_cache(&h, &cache);
    calls_at_once(&s, &alice, 6);
    assert_eq!(compiles(&s, "transit-composite"), (1, 1), "{}", s.log());
}
