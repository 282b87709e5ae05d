//! Where compiled components are kept: `hcpx check` and `hcpx eval` compile into the operator's cache, not a
//! throw-away one; homes that share `HCP_CACHE_DIR` compile a component once; a cache directory that others
//! can write is never read, since what it holds is native code.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::composite::install_guest;
use crate::helpers::{repo, stdout_json, Home};
use hcpx_model::digest::sha256_hex;

/// The compiled components (`.cwasm`) in `dir`.
pub(crate) fn cwasm_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "cwasm")).collect();
    files.sort();
    files
}

fn modified(p: &Path) -> std::time::SystemTime {
    fs::metadata(p).unwrap().modified().unwrap()
}

#[test]
fn check_and_eval_compile_a_component_once_into_the_operator_s_cache() {
    let h = Home::new();
    let pack = repo().join("packs/transit-composite");
    let out = h.run(&["check", pack.to_str().unwrap(), "--probe", "--json"]);
    let report = stdout_json(&out);
    assert_eq!((out.status.code(), report["score"].as_u64()), (Some(0), Some(100)), "{report}");
    // The probes and the evals each ran in a throw-away store; the component was compiled once, into the
    // operator's cache.
    let cached = cwasm_in(&h.store().join("cache"));
    assert_eq!(cached.len(), 1, "{cached:?}");
    let written = modified(&cached[0]);
    let out = h.run(&["eval", pack.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    h.run(&["install", pack.to_str().unwrap()]);
    h.run(&["activate", "transit-composite"]);
    let (rc, env) = h.exec("transit-composite", "plan", &["A", "B"]);
    assert_eq!((rc, &env["result"]["optionId"]), (0, &serde_json::json!("opt-1")), "{env}");
    assert_eq!(cwasm_in(&h.store().join("cache")), cached);
    assert_eq!(modified(&cached[0]), written, "the eval and the call read the cache the check wrote");
}

#[test]
fn homes_that_share_hcp_cache_dir_compile_a_component_once() {
    let (a, b) = (Home::new(), Home::new());
    let shared = a.t.join("shared/compiled");
    let env = [("HCP_CACHE_DIR", shared.to_str().unwrap())];
    let id = install_guest(&a, "test-panic", &["run", "ok"], None);
    install_guest(&b, "test-panic", &["run", "ok"], None);
    // The installs ran without HCP_CACHE_DIR: each compiled into its home's own cache. The calls use the shared one.
    for h in [&a, &b] {
        assert_eq!(cwasm_in(&h.store().join("cache")).len(), 1);
        fs::remove_dir_all(h.store().join("cache")).unwrap();
    }
    assert_eq!(a.exec_env(&id, "ok", &[], &env).0, 0);
    let cached = cwasm_in(&shared);
    assert_eq!(cached.len(), 1, "{cached:?}");
    assert!(cwasm_in(&a.store().join("cache")).is_empty(), "compiled into HCP_CACHE_DIR, not the home");
    // Made private to its user, whatever the umask.
    assert_eq!(fs::metadata(&shared).unwrap().permissions().mode() & 0o777, 0o700);
    let written = modified(&cached[0]);
    assert_eq!(b.exec_env(&id, "ok", &[], &env).0, 0);
    assert_eq!((cwasm_in(&shared), modified(&cached[0])), (cached, written), "the second home read it");
    assert!(cwasm_in(&b.store().join("cache")).is_empty());

    let out = a.run_env(&["exec", &id, "ok", "--json"], &[("HCP_CACHE_DIR", "relative/cache")]);
    let env = stdout_json(&out);
    assert_eq!((out.status.code(), &env["ok"]), (Some(1), &serde_json::json!(false)), "{env}");
    assert!(
        env["error"].as_str().unwrap().starts_with(
            "HCP_CACHE_DIR is \"relative/cache\", not an absolute path; set it to an absolute directory"
        ),
        "{env}"
    );
}

/// A compiled component is mapped and run as native code. A component planted in the cache under another's key
/// runs when the directory is its owner's alone (the owner chose it); once others can write the directory, the
/// cache is neither read nor written, and the genuine component answers.
#[test]
fn attack_a_component_planted_in_a_cache_directory_others_can_write_never_runs() {
    let h = Home::new();
    // The genuine component's `run` panics; the planted one's `run` loops until the deadline.
    h.write_store("sandbox.json", r#"{ "timeout_ms": 1000 }"#);
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    let looper = install_guest(&h, "test-loop", &["run", "ok"], None);
    let (genuine, other) = (h.t.join("genuine"), h.t.join("other"));
    let (rc, env) = h.exec_env(&id, "run", &[], &[("HCP_CACHE_DIR", genuine.to_str().unwrap())]);
    assert_eq!((rc, env["code"].as_str()), (1, Some("adapter_failed")), "{env}");
    h.exec_env(&looper, "ok", &[], &[("HCP_CACHE_DIR", other.to_str().unwrap())]);
    let key = cwasm_in(&genuine)[0].file_name().unwrap().to_owned();
    let bytes = fs::read(&cwasm_in(&other)[0]).unwrap();

    let planted = h.t.join("planted");
    fs::create_dir(&planted).unwrap();
    fs::set_permissions(&planted, fs::Permissions::from_mode(0o700)).unwrap();
    let file = planted.join(&key);
    fs::write(&file, &bytes).unwrap();
    fs::write(file.with_extension("sha256"), sha256_hex(&bytes)).unwrap();
    let env_planted = [("HCP_CACHE_DIR", planted.to_str().unwrap())];
    let (_, env) = h.exec_env(&id, "run", &[], &env_planted);
    assert_eq!(env["code"], "timeout", "the planted component ran from its owner's cache: {env}");

    fs::set_permissions(&planted, fs::Permissions::from_mode(0o777)).unwrap();
    let listed = |d: &Path| {
        let mut names: Vec<_> = fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        names
    };
    let before = listed(&planted);
    let (rc, env) = h.exec_env(&id, "run", &[], &env_planted);
    assert_eq!(
        (rc, env["code"].as_str()),
        (1, Some("adapter_failed")),
        "the genuine component answered: {env}"
    );
    assert_eq!(fs::read(&file).unwrap(), bytes, "the planted file was neither loaded nor replaced");
    assert_eq!(listed(&planted), before, "nothing written to a directory others can write");
    assert_eq!(h.exec_env(&id, "ok", &[], &env_planted).0, 0);
}

/// A compile cache hcpx will not use is named by `hcpx doctor`, with the fix, instead of every call quietly
/// compiling again.
#[test]
fn doctor_names_a_compile_cache_others_can_write() {
    let h = Home::new();
    let dir = h.t.join("team-cache");
    fs::create_dir(&dir).unwrap();
    let check = |mode: u32| {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
        let out = h.run_env(&["doctor", "--json"], &[("HCP_CACHE_DIR", dir.to_str().unwrap())]);
        let v = stdout_json(&out);
        let c =
            v["checks"].as_array().unwrap().iter().find(|c| c["check"] == "compile cache").unwrap().clone();
        (out.status.code(), c)
    };
    let (_, c) = check(0o700);
    assert_eq!(c["status"], "ok", "{c}");
    let (code, c) = check(0o770);
    assert_eq!((code, c["status"].as_str()), (Some(2), Some("warning")), "{c}");
    let detail = c["detail"].as_str().unwrap();
    assert!(detail.contains("team-cache") && detail.contains("chmod go-w"), "{detail}");
}

/// A replica on PostgreSQL compiles into `HCP_CACHE_DIR` as one on the files does, and refuses a relative one
/// the same way: the store the cache sits beside does not choose where compiled code goes.
#[test]
fn a_postgres_store_compiles_into_hcp_cache_dir_too() {
    if crate::pg::unavailable() {
        return;
    }
    let h = Home::postgres();
    let shared = h.t.join("shared/compiled");
    let env = [("HCP_CACHE_DIR", shared.to_str().unwrap())];
    let id = install_guest(&h, "test-panic", &["run", "ok"], None);
    // The install ran without HCP_CACHE_DIR, so it compiled into the home's cache; the call uses the shared one.
    fs::remove_dir_all(h.store().join("cache")).unwrap();
    assert_eq!(h.exec_env(&id, "ok", &[], &env).0, 0);
    assert_eq!(cwasm_in(&shared).len(), 1, "compiled into HCP_CACHE_DIR");
    assert!(cwasm_in(&h.store().join("cache")).is_empty(), "not into the home");

    let out = h.run_with(&["exec", &id, "ok", "--json"], &[("HCP_CACHE_DIR", "relative/cache")], None);
    let env = stdout_json(&out);
    assert_eq!((out.status.code(), &env["ok"]), (Some(1), &serde_json::json!(false)), "{env}");
    assert!(env["error"].as_str().unwrap().starts_with("HCP_CACHE_DIR is \"relative/cache\""), "{env}");
}
