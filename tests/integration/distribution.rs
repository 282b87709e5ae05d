//! Publishing packs to and installing them from a real OCI registry (tests/integration/registry.rs), through the
//! real `hcpx` binary: composite and wrap, by tag and by digest, signed and unsigned, on the file store and
//! the PostgreSQL store, locked, updated, and again from the cache with no registry.

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

use crate::helpers::{copy_tree, repo, stdout_json, Home};
use crate::registry::{registry, unavailable};

/// A repository name of its own for each test (the registry is shared by the run).
pub fn reference(test: &str, tag: &str) -> String {
    format!("oci://{}/t{}/{test}:{tag}", registry().addr, std::process::id())
}

/// `hcpx … --json`, asserting the exit code; the JSON document.
pub fn run_json(h: &Home, args: &[&str], code: i32) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = h.run(&all);
    assert_eq!(
        out.status.code(),
        Some(code),
        "hcpx {args:?}: stdout {} stderr {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

/// A new key pair in the Home's temp dir: (private, public).
pub fn key(h: &Home, name: &str) -> (PathBuf, PathBuf) {
    let path = h.t.join(name);
    run_json(h, &["key", "generate", path.to_str().unwrap()], 0);
    (path.clone(), PathBuf::from(format!("{}.pub", path.display())))
}

/// Publishes `dir` as `reference`, signed with `key` when given; the digest.
pub fn publish(h: &Home, dir: &Path, reference: &str, key: Option<&Path>) -> String {
    let mut args = vec!["publish", dir.to_str().unwrap(), reference];
    if let Some(k) = key {
        args.extend(["--sign", k.to_str().unwrap()]);
    }
    let v = run_json(h, &args, 0);
    v["digest"].as_str().unwrap().to_string()
}

/// Trusts `public` for the test registry's whole address.
pub fn trust(h: &Home, name: &str, public: &Path, prefix: &str) {
    run_json(h, &["trust", "add", name, public.to_str().unwrap(), "--prefix", prefix], 0);
}

/// The store's state and installed packs, to show an attack left it as it was.
pub fn store_snapshot(h: &Home) -> (Value, Vec<String>) {
    let list = run_json(h, &["list"], 0);
    let mut packs: Vec<String> = fs::read_dir(h.store().join("packs"))
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default();
    packs.retain(|p| !p.starts_with('.'));
    packs.sort();
    (list["packs"].clone(), packs)
}

/// A copy of example pack `name` in the Home's temp dir (with the composites' built component).
pub fn example(h: &Home, name: &str) -> PathBuf {
    let dst = h.t.join(&format!("src-{name}"));
    copy_tree(&repo().join("packs").join(name), &dst);
    dst
}

#[test]
fn a_signed_composite_installs_by_tag_and_by_digest_and_again_from_the_cache_with_no_registry() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let (private, public) = key(&h, "acme.pem");
    let r = reference("transit", "1.0");
    let digest = publish(&h, &dir, &r, Some(&private));
    assert!(digest.starts_with("sha256:") && digest.len() == 71);
    // Nothing is trusted yet: refused, nothing installed.
    let v = run_json(&h, &["install", &r], 1);
    assert!(v["error"].as_str().unwrap().contains("hcpx trust add"), "{v}");
    assert_eq!(store_snapshot(&h).1, Vec::<String>::new());
    trust(&h, "acme", &public, &registry().addr);
    let v = run_json(&h, &["install", &r], 0);
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(v["signer"]["name"], "acme");
    assert_eq!(v["from_cache"], false);
    // Installed exactly as a directory install: the same files, and it runs.
    for f in ["surface.json", "policy.json", "HARNESS.md", "adapter.wasm"] {
        assert_eq!(
            fs::read(h.store().join("packs/transit-composite").join(f)).unwrap(),
            fs::read(dir.join(f)).unwrap(),
            "{f}"
        );
    }
    let list = run_json(&h, &["list"], 0);
    assert_eq!(list["packs"][0]["source"], r.as_str());
    assert_eq!(list["packs"][0]["digest"], digest.as_str());
    assert!(list["packs"][0]["signer"].as_str().unwrap().starts_with("acme sha256:"));
    let text = String::from_utf8_lossy(&h.run(&["list"]).stdout).to_string();
    assert!(text.contains("DIGEST") && text.contains(&digest[..19]) && text.contains(&r), "{text}");
    run_json(&h, &["activate", "transit-composite"], 0);
    let (code, out) = h.exec("transit-composite", "plan", &["A", "B"]);
    assert_eq!((code, &out["ok"]), (0, &Value::Bool(true)), "{out}");
    // By digest: the same pack, the activation kept (same repository).
    let pinned = format!("{}@{digest}", r.rsplit_once(':').unwrap().0);
    let v = run_json(&h, &["install", &pinned], 0);
    assert_eq!(v["digest"], digest.as_str());
    assert_eq!(run_json(&h, &["list"], 0)["packs"][0]["activated"], true);
    // No registry at all: a port where nothing listens, the digest from the cache (uninstalled first: another
    // registry's copy would be another source).
    run_json(&h, &["uninstall", "transit-composite"], 0);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let offline = pinned.replace(&registry().addr, &format!("127.0.0.1:{dead}"));
    trust(&h, "acme-offline", &public, &format!("127.0.0.1:{dead}"));
    let v = run_json(&h, &["install", &offline], 0);
    assert_eq!((&v["from_cache"], &v["digest"]), (&Value::Bool(true), &Value::String(digest.clone())));
    // A wrong digest is no pack at all.
    let wrong = format!("{}@sha256:{}", r.rsplit_once(':').unwrap().0, "0".repeat(64));
    let v = run_json(&h, &["install", &wrong], 1);
    assert!(v["error"].as_str().unwrap().contains("not in the registry"), "{v}");
}

#[test]
fn an_unsigned_wrap_pack_installs_only_with_allow_unsigned_and_that_is_audited() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "ledger");
    let r = reference("ledger", "1");
    let digest = publish(&h, &dir, &r, None);
    let before = store_snapshot(&h);
    let v = run_json(&h, &["install", &r], 1);
    let err = v["error"].as_str().unwrap();
    assert!(err.contains("not signed") && err.contains("--allow-unsigned"), "{err}");
    assert_eq!(store_snapshot(&h), before);
    let v = run_json(&h, &["install", &r, "--allow-unsigned"], 0);
    assert_eq!((&v["digest"], &v["signer"]), (&Value::String(digest), &Value::Null));
    // The wrap's script keeps its executable bit; the artifact names no native bin of the host.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(h.store().join("packs/ledger/bin/ledger.mjs")).unwrap().permissions().mode();
    assert_ne!(mode & 0o111, 0);
    let audit = run_json(&h, &["audit"], 0);
    let recs = audit["records"].as_array().unwrap();
    assert!(
        recs.iter().any(|r| r["verb_key"] == "hcpx.install.unsigned" && r["pack_id"] == "ledger"),
        "{audit}"
    );
}

#[test]
fn publish_refuses_a_pack_below_the_minimum_score_and_pushes_nothing() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let r = reference("low", "1");
    let v = run_json(&h, &["publish", dir.to_str().unwrap(), &r, "--min-score", "101"], 1);
    assert!(v["error"].as_str().unwrap().contains("below the 101"), "{v}");
    let v = run_json(&h, &["install", &r, "--allow-unsigned"], 1);
    assert!(v["error"].as_str().unwrap().contains("not in the registry"), "{v}");
    // A pack that fails lint is refused before anything else.
    fs::remove_file(dir.join("policy.json")).unwrap();
    let v = run_json(&h, &["publish", dir.to_str().unwrap(), &r], 1);
    assert!(v["error"].as_str().unwrap().contains("fails lint"), "{v}");
}

#[test]
fn the_postgres_store_keeps_trusted_keys_and_registry_installs() {
    if unavailable() || crate::pg::unavailable() {
        return;
    }
    let h = Home::postgres();
    let dir = example(&h, "transit-composite");
    let (private, public) = key(&h, "k.pem");
    let r = reference("pgtransit", "1");
    let digest = publish(&h, &dir, &r, Some(&private));
    trust(&h, "team", &public, &registry().addr);
    assert_eq!(run_json(&h, &["trust", "list"], 0)["keys"][0]["name"], "team");
    let v = run_json(&h, &["install", &r], 0);
    assert_eq!(v["signer"]["name"], "team");
    let list = run_json(&h, &["list"], 0);
    assert_eq!(
        (&list["packs"][0]["source"], &list["packs"][0]["digest"]),
        (&Value::String(r), &Value::String(digest))
    );
    assert!(!h.store().join("trust.json").exists(), "the keys live in the database, not the file store");
}

/// `transit-composite` with `show` turned into a write that does not ask to confirm.
fn transit_v2(h: &Home) -> PathBuf {
    let dst = h.t.join("src-transit-v2");
    copy_tree(&repo().join("packs/transit-composite"), &dst);
    let p = dst.join("policy.json");
    let mut policy: Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
    policy["verbs"]["show"] =
        serde_json::json!({ "operation": "write", "confirm": false, "privacy": { "land": "public" } });
    fs::write(&p, serde_json::to_string_pretty(&policy).unwrap()).unwrap();
    dst
}

#[test]
fn update_shows_the_policy_changes_and_applies_only_with_yes_and_the_same_signer() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let v1 = example(&h, "transit-composite");
    let v2 = transit_v2(&h);
    let (private, public) = key(&h, "a.pem");
    let (other, other_pub) = key(&h, "b.pem");
    let r1 = reference("upd", "1");
    let d1 = publish(&h, &v1, &r1, Some(&private));
    let d2 = publish(&h, &v2, &reference("upd", "2"), Some(&private));
    // Tag 3: other content (the same bytes would be the same digest, which key a signed), signed by key b only.
    let v3 = h.t.join("src-transit-v3");
    copy_tree(&v2, &v3);
    let skill = fs::read_to_string(v3.join("HARNESS.md")).unwrap();
    fs::write(v3.join("HARNESS.md"), format!("{skill}\nVersion three.\n")).unwrap();
    publish(&h, &v3, &reference("upd", "3"), Some(&other));
    trust(&h, "a", &public, &registry().addr);
    trust(&h, "b", &other_pub, &registry().addr);
    run_json(&h, &["install", &r1], 0);
    run_json(&h, &["activate", "transit-composite"], 0);
    // Shown, not applied.
    let v = run_json(&h, &["update", "transit-composite", "--tag", "2"], 0);
    let changes = v["update"]["changes"].as_array().unwrap();
    assert!(changes.iter().any(|c| c["kind"] == "read_became_write" && c["verb"] == "show"), "{v}");
    assert_eq!(v["update"]["applied"], false);
    assert_eq!(run_json(&h, &["list"], 0)["packs"][0]["digest"], d1.as_str());
    let text =
        String::from_utf8_lossy(&h.run(&["update", "transit-composite", "--tag", "2"]).stderr).to_string();
    assert!(text.contains("show: a read became a write") && text.contains("--yes"), "{text}");
    // Another signer (trusted, but not the one that signed the installed pack) is refused.
    let v = run_json(&h, &["update", "transit-composite", "--tag", "3", "--yes"], 1);
    assert!(v["error"].as_str().unwrap().contains("keep its signer"), "{v}");
    assert_eq!(run_json(&h, &["list"], 0)["packs"][0]["digest"], d1.as_str());
    // Applied with --yes: the new digest, still active.
    let v = run_json(&h, &["update", "transit-composite", "--tag", "2", "--yes"], 0);
    assert_eq!(v["update"]["applied"], true);
    let list = run_json(&h, &["list"], 0);
    assert_eq!(
        (&list["packs"][0]["digest"], &list["packs"][0]["activated"]),
        (&Value::String(d2), &Value::Bool(true))
    );
}

#[test]
fn lock_pins_digest_and_signer_and_locked_installs_exactly_those() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let (private, public) = key(&h, "a.pem");
    let r = reference("locked", "1");
    let digest = publish(&h, &dir, &r, Some(&private));
    trust(&h, "a", &public, &registry().addr);
    run_json(&h, &["install", &r], 0);
    let v = run_json(&h, &["lock"], 0);
    assert_eq!(v["packs"][0]["digest"], digest.as_str());
    let lock: Value = serde_json::from_str(&fs::read_to_string(h.t.join("hcp.lock")).unwrap()).unwrap();
    assert_eq!(lock["packs"][0]["reference"], r.as_str());
    assert!(lock["packs"][0]["signer"].as_str().unwrap().starts_with("sha256:"));
    let v = run_json(&h, &["install", &r, "--locked"], 0);
    assert_eq!(v["digest"], digest.as_str());
    // A reference the lock does not pin is refused.
    let v = run_json(&h, &["install", &reference("other", "1"), "--locked"], 1);
    assert!(v["error"].as_str().unwrap().contains("pins no pack"), "{v}");
}

#[test]
fn a_private_registry_is_reached_with_the_docker_config_credentials_and_its_helpers() {
    if unavailable() {
        return;
    }
    use base64::Engine as _;
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let r = reference("private", "1");
    publish(&h, &dir, &r, None);
    let proxy = crate::registry::Proxy::with_basic_auth("ci", "s3cret");
    let via = r.replace(&registry().addr, &proxy.addr);
    let docker = h.t.join("docker");
    let bin = h.t.join("helpers");
    fs::create_dir_all(&docker).unwrap();
    fs::create_dir_all(&bin).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let env = [("DOCKER_CONFIG", docker.to_str().unwrap()), ("PATH", path.as_str())];
    let install = |code: i32| {
        let out = h.run_env(&["install", &via, "--allow-unsigned", "--json"], &env);
        assert_eq!(out.status.code(), Some(code), "{}", String::from_utf8_lossy(&out.stdout));
        stdout_json(&out)
    };
    // No credentials: refused, naming the fix.
    let v = install(1);
    assert!(v["error"].as_str().unwrap().contains("log in to"), "{v}");
    // An `auths` entry.
    let auth = base64::engine::general_purpose::STANDARD.encode("ci:s3cret");
    fs::write(
        docker.join("config.json"),
        format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, proxy.addr),
    )
    .unwrap();
    install(0);
    run_json(&h, &["uninstall", "transit-composite"], 0);
    // A credential helper named for the registry (docker-credential-<name> get, the server on stdin).
    let helper = bin.join("docker-credential-hcpxtest");
    fs::write(
        &helper,
        "#!/bin/sh\nserver=$(cat)\nprintf '{\"ServerURL\":\"%s\",\"Username\":\"ci\",\"Secret\":\"s3cret\"}' \"$server\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&helper, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(docker.join("config.json"), format!(r#"{{"credHelpers": {{"{}": "hcpxtest"}}}}"#, proxy.addr))
        .unwrap();
    install(0);
    // A wrong password from the helper is refused.
    run_json(&h, &["uninstall", "transit-composite"], 0);
    fs::write(&helper, "#!/bin/sh\ncat >/dev/null\necho '{\"Username\":\"ci\",\"Secret\":\"wrong\"}'\n")
        .unwrap();
    install(1);
}

#[test]
fn a_cached_install_by_tag_asks_the_registry_only_for_the_tag_s_digest_and_sees_a_moved_tag() {
    if unavailable() {
        return;
    }
    use crate::registry::{Attack, Proxy};
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let (private, public) = key(&h, "k.pem");
    let r = reference("head", "1");
    let digest = publish(&h, &dir, &r, Some(&private));
    // A proxy in front of the registry that never answers a GET of the tag's manifest (a HEAD passes).
    let proxy = Proxy::start("/manifests/1", Attack::Stall);
    let via = r.replace(&registry().addr, &proxy.addr);
    trust(&h, "k", &public, &registry().addr);
    trust(&h, "k-proxy", &public, &proxy.addr);
    run_json(&h, &["install", &r], 0);
    run_json(&h, &["uninstall", "transit-composite"], 0);
    // Cached: the tag is resolved with a HEAD, and the manifest it names comes from the cache.
    let v = run_json(&h, &["install", &via, "--registry-timeout", "3000"], 0);
    assert_eq!(
        (&v["digest"], &v["from_cache"]),
        (&Value::String(digest.clone()), &Value::Bool(false)),
        "{v}"
    );
    run_json(&h, &["uninstall", "transit-composite"], 0);
    // The tag moves: the HEAD names a digest the cache does not hold, so the manifest is fetched (the proxy
    // stalls that GET: refused, not served from the old cache), and straight from the registry the new one installs.
    let skill = fs::read_to_string(dir.join("HARNESS.md")).unwrap();
    fs::write(dir.join("HARNESS.md"), format!("{skill}\nAlso plans trips at night.\n")).unwrap();
    let moved = publish(&h, &dir, &r, Some(&private));
    // The bound leaves the HEAD before it room on a loaded machine; the stalled GET never ends within it.
    let v = run_json(&h, &["install", &via, "--registry-timeout", "4000"], 1);
    assert!(v["error"].as_str().unwrap().contains("did not finish the manifest request"), "{v}");
    assert_eq!(store_snapshot(&h).1, Vec::<String>::new());
    let v = run_json(&h, &["install", &r], 0);
    assert_eq!(v["digest"], moved.as_str());
}
