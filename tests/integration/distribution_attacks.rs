//! The registry attacks of docs/security.md (Distribution): each refused with a clear error, nothing installed,
//! the store as it was. A real registry serves the pack; crafted manifests are pushed with the library's own
//! client, and a misbehaving proxy (tests/integration/registry.rs) corrupts, inflates or stalls answers.

use serde_json::Value;
use std::fs;
use std::time::{Duration, Instant};

use crate::distribution::{example, key, publish, reference, run_json, store_snapshot, trust};
use crate::helpers::Home;
use crate::registry::{registry, unavailable, Attack, Proxy};
use hcpx_registry::artifact::{Descriptor, Manifest, TITLE};
use hcpx_registry::registry::{Options, Registry};
use hcpx_registry::PackRef;

fn client(r: &str) -> (Registry, PackRef) {
    let r = PackRef::parse(r).unwrap();
    (Registry::new(&r, &Options::default()).unwrap(), r)
}

/// The manifest `r` names, parsed.
fn manifest(r: &str) -> Manifest {
    let (reg, r) = client(r);
    let (bytes, _) = reg.manifest(&r).unwrap().unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Pushes `blobs` and `m` as `r` (the tag moves to it).
fn push(r: &str, blobs: &[(Descriptor, Vec<u8>)], m: &Manifest) -> String {
    let (reg, r) = client(r);
    let bytes = serde_json::to_vec(m).unwrap();
    let refs: Vec<(&Descriptor, &[u8])> = blobs.iter().map(|(d, b)| (d, b.as_slice())).collect();
    reg.push(&r, &refs, &bytes).unwrap();
    format!("sha256:{}", hcpx_model::digest::sha256_hex(&bytes))
}

fn blob(bytes: &[u8], title: &str, media_type: &str) -> (Descriptor, Vec<u8>) {
    let d = Descriptor {
        media_type: media_type.into(),
        digest: format!("sha256:{}", hcpx_model::digest::sha256_hex(bytes)),
        size: bytes.len() as i64,
        annotations: [(TITLE.to_string(), title.to_string())].into_iter().collect(),
    };
    (d, bytes.to_vec())
}

fn layer<'a>(m: &'a mut Manifest, title: &str) -> &'a mut Descriptor {
    m.layers.iter_mut().find(|l| l.annotations.get(TITLE).map(String::as_str) == Some(title)).unwrap()
}

/// Installs `r` with `extra` flags and asserts it is refused with an error containing `want`, leaving the
/// store as it was.
fn refused(h: &Home, r: &str, extra: &[&str], want: &str) -> String {
    let before = store_snapshot(h);
    let mut args = vec!["install", r];
    args.extend_from_slice(extra);
    let v = run_json(h, &args, 1);
    let err = v["error"].as_str().unwrap().to_string();
    assert!(err.contains(want), "wanted {want:?} in: {err}");
    assert_eq!(store_snapshot(h), before, "the store changed");
    err
}

/// A signed transit pack published and its key trusted for the registry; (home, reference, digest).
fn signed(test: &str) -> (Home, String, String) {
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let (private, public) = key(&h, "k.pem");
    let r = reference(test, "1");
    let digest = publish(&h, &dir, &r, Some(&private));
    trust(&h, "k", &public, &registry().addr);
    (h, r, digest)
}

#[test]
fn attack_a_tampered_layer_is_refused_by_its_digest() {
    if unavailable() {
        return;
    }
    let (h, r, _) = signed("tampered");
    let mut m = manifest(&r);
    let policy = layer(&mut m, "policy.json").digest.clone();
    let proxy = Proxy::start(&format!("/blobs/{policy}"), Attack::Corrupt);
    let via = r.replace(&registry().addr, &proxy.addr);
    trust(&h, "k-proxy", &h.t.join("k.pem.pub"), &proxy.addr);
    refused(&h, &via, &[], "the registry served other bytes");
}

#[test]
fn attack_a_swapped_policy_with_the_manifest_re_pushed_is_unsigned() {
    if unavailable() {
        return;
    }
    let (h, r, digest) = signed("swapped");
    let mut m = manifest(&r);
    let mut policy: Value =
        serde_json::from_str(&fs::read_to_string(h.t.join("src-transit-composite/policy.json")).unwrap())
            .unwrap();
    policy["verbs"]["show"] =
        serde_json::json!({ "operation": "write", "confirm": false, "privacy": { "land": "public" } });
    let evil = blob(&serde_json::to_vec(&policy).unwrap(), "policy.json", hcpx_registry::artifact::POLICY);
    *layer(&mut m, "policy.json") = evil.0.clone();
    let moved = push(&r, &[evil], &m);
    assert_ne!(moved, digest);
    let err = refused(&h, &r, &[], "is not signed");
    assert!(err.contains(&moved), "{err}");
    // Copying the old signature image to the new digest's tag signs nothing: its payload names the old digest.
    let sig = manifest(&r.replace(":1", &format!(":{}", hcpx_registry::signature_tag(&digest))));
    let (reg, pr) = client(&r.replace(":1", &format!(":{}", hcpx_registry::signature_tag(&moved))));
    reg.push(&pr, &[], &serde_json::to_vec(&sig).unwrap()).unwrap();
    refused(&h, &r, &[], "is not signed");
}

#[test]
fn attack_a_signature_from_an_untrusted_key_is_refused() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let (evil, _) = key(&h, "evil.pem");
    let (_, good_pub) = key(&h, "good.pem");
    let r = reference("untrusted", "1");
    publish(&h, &dir, &r, Some(&evil));
    trust(&h, "good", &good_pub, &registry().addr);
    refused(&h, &r, &[], "signed only by keys not trusted");
    // A key trusted for another prefix does not count either.
    trust(&h, "elsewhere", &h.t.join("evil.pem.pub"), &format!("{}/someone-else", registry().addr));
    refused(&h, &r, &[], "signed only by keys not trusted");
}

#[test]
fn attack_a_tag_moved_after_locking_is_refused() {
    if unavailable() {
        return;
    }
    let (h, r, _) = signed("moved");
    run_json(&h, &["install", &r], 0);
    run_json(&h, &["lock"], 0);
    // The publisher (same key) moves the tag to other content.
    let dir = h.t.join("src-transit-composite");
    let skill = fs::read_to_string(dir.join("HARNESS.md")).unwrap();
    fs::write(dir.join("HARNESS.md"), format!("{skill}\nAlso plans trips at night.\n")).unwrap();
    let moved = publish(&h, &dir, &r, Some(&h.t.join("k.pem")));
    let err = refused(&h, &r, &["--locked"], "the lock file pins that digest");
    assert!(err.contains(&moved), "{err}");
}

#[test]
fn attack_layer_sizes_that_lie_are_refused() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    for (test, delta) in [("smaller", -10i64), ("larger", 10)] {
        let r = reference(&format!("sizes-{test}"), "1");
        publish(&h, &dir, &r, None);
        let mut m = manifest(&r);
        layer(&mut m, "surface.json").size += delta;
        push(&r, &[], &m);
        refused(&h, &r, &["--allow-unsigned"], "declares");
    }
}

#[test]
fn attack_a_layer_bomb_is_cut_at_its_declared_size() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    let r = reference("bomb", "1");
    publish(&h, &dir, &r, None);
    // A 1 KiB fixture layer, served by the proxy as 1 GiB.
    let mut m = manifest(&r);
    let small = blob(&[b'x'; 1024], "fixtures/small.txt", hcpx_registry::artifact::FILE);
    m.layers.push(small.0.clone());
    push(&r, std::slice::from_ref(&small), &m);
    let proxy = Proxy::start(&format!("/blobs/{}", small.0.digest), Attack::Bomb);
    let via = r.replace(&registry().addr, &proxy.addr);
    refused(&h, &via, &["--allow-unsigned"], "declares 1024 bytes");
    std::thread::sleep(Duration::from_millis(200));
    let sent = proxy.bomb_sent.load(std::sync::atomic::Ordering::SeqCst);
    assert!(sent < 64 << 20, "the client read on: the proxy sent {sent} bytes");
}

#[test]
fn attack_a_layer_named_with_a_path_traversal_is_refused_before_any_layer_is_fetched() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "transit-composite");
    for (i, name) in
        ["../../escaped.txt", "/tmp/escaped.txt", "fixtures/../../escaped.txt"].iter().enumerate()
    {
        let r = reference(&format!("traversal{i}"), "1");
        publish(&h, &dir, &r, None);
        let mut m = manifest(&r);
        let evil = blob(b"owned", name, hcpx_registry::artifact::FILE);
        m.layers.push(evil.0.clone());
        push(&r, &[evil], &m);
        refused(&h, &r, &["--allow-unsigned"], "not a plain relative path");
        assert!(!h.t.join("escaped.txt").exists() && !h.store().join("escaped.txt").exists());
    }
}

#[test]
fn attack_a_registry_that_stalls_times_out_with_a_clear_error() {
    if unavailable() {
        return;
    }
    let (h, r, _) = signed("slow");
    let proxy = Proxy::start("/manifests/", Attack::Stall);
    let via = r.replace(&registry().addr, &proxy.addr);
    let start = Instant::now();
    let err = refused(&h, &via, &["--registry-timeout", "1000"], "did not finish");
    assert!(err.contains("--registry-timeout"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(20), "the deadline did not hold: {:?}", start.elapsed());
}

/// Points tag `to` at exactly the manifest `from` names (its bytes, so its digest and signatures), as a
/// registry that serves an older build under a tag would.
fn retag(from: &str, to: &str) -> String {
    let (reg, r) = client(from);
    let (bytes, digest) = reg.manifest(&r).unwrap().unwrap();
    let (reg, to) = client(to);
    reg.push(&to, &[], &bytes).unwrap();
    digest
}

/// `transit-composite` changed so that its build differs (a line of its Skill), in a directory of its own.
fn variant(h: &Home, name: &str, line: &str) -> std::path::PathBuf {
    let dir = h.t.join(name);
    crate::helpers::copy_tree(&h.t.join("src-transit-composite"), &dir);
    let skill = fs::read_to_string(dir.join("HARNESS.md")).unwrap();
    fs::write(dir.join("HARNESS.md"), format!("{skill}\n{line}\n")).unwrap();
    dir
}

/// #34.5: a validly signed build served under a tag it was not signed for is refused (the signature covers the
/// tag); by its digest it still installs, since that names the build itself.
#[test]
fn attack_a_signed_build_served_under_a_tag_it_was_not_signed_for_is_refused() {
    if unavailable() {
        return;
    }
    let (h, old, old_digest) = signed("retagged");
    let new = old.replace(":1", ":2");
    publish(&h, &variant(&h, "src-v2", "Version two."), &new, Some(&h.t.join("k.pem")));
    // The registry now serves the build signed for tag 1 under tag 2.
    assert_eq!(retag(&old, &new), old_digest);
    let err = refused(&h, &new, &[], "no signature names tag 2");
    assert!(err.contains("signed for tag 1") && err.contains(&old_digest), "{err}");
    let by_digest = format!("{}@{old_digest}", old.rsplit_once(':').unwrap().0);
    run_json(&h, &["install", &by_digest], 0);
}

/// #34.5: once a newer build is installed, the registry moving the tag back to an older build (signed for that
/// same tag) is refused by `update` and by `install`, unless the operator asks for the rollback.
#[test]
fn attack_a_tag_moved_back_to_an_older_signed_build_is_refused_without_allow_downgrade() {
    if unavailable() {
        return;
    }
    let (h, r, first) = signed("rollback");
    let key = h.t.join("k.pem");
    run_json(&h, &["install", &r], 0);
    run_json(&h, &["activate", "transit-composite"], 0);
    let older_copy = r.replace(":1", ":old");
    retag(&r, &older_copy);
    let second = publish(&h, &variant(&h, "src-v1b", "A fix."), &r, Some(&key));
    let v = run_json(&h, &["update", "transit-composite", "--yes"], 0);
    assert_eq!(v["update"]["to_digest"], second.as_str(), "{v}");
    // The registry serves the first build under tag 1 again: its signature names tag 1, but it is older.
    assert_eq!(retag(&older_copy, &r), first);
    let before = store_snapshot(&h);
    let v = run_json(&h, &["update", "transit-composite", "--yes"], 1);
    assert!(v["error"].as_str().unwrap().contains("--allow-downgrade"), "{v}");
    refused(&h, &r, &["--yes"], "a move to an older one is refused");
    assert_eq!(store_snapshot(&h), before);
    let v = run_json(&h, &["update", "transit-composite", "--yes", "--allow-downgrade"], 0);
    assert_eq!(v["update"]["to_digest"], first.as_str(), "{v}");
}

/// #34.5: a plain `hcpx install` of a pack already installed from the same repository, with other content, is
/// an update: it shows what widens (here the workspace mode becoming `project` and a new `agent_env` name, which
/// `update` reviewed as "none" before) and installs nothing without `--yes`; the pack stays active either way.
#[test]
fn a_reinstall_with_other_content_is_reviewed_and_needs_yes() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let v1 = example(&h, "ledger");
    let (private, public) = key(&h, "k.pem");
    let r = reference("reinstall", "1");
    let d1 = publish(&h, &v1, &r, Some(&private));
    trust(&h, "k", &public, &registry().addr);
    run_json(&h, &["install", &r], 0);
    run_json(&h, &["activate", "ledger"], 0);
    let v2 = h.t.join("src-ledger-v2");
    crate::helpers::copy_tree(&v1, &v2);
    let path = v2.join("surface.json");
    let mut surface: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    surface["wrap"]["workspace"]["mode"] = "project".into();
    surface["wrap"]["agent_env"] = serde_json::json!({ "LEDGER_COLOR": "never" });
    fs::write(&path, serde_json::to_string_pretty(&surface).unwrap()).unwrap();
    let d2 = publish(&h, &v2, &r, Some(&private));
    let v = run_json(&h, &["update", "ledger"], 0);
    let kinds: Vec<&str> =
        v["update"]["changes"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["workspace_mode_changed", "agent_env"], "{v}");
    let err = refused(&h, &r, &[], "run again with --yes");
    assert!(
        err.contains("workspace mode workspace -> project") && err.contains("agent_env LEDGER_COLOR"),
        "{err}"
    );
    let v = run_json(&h, &["install", &r, "--yes"], 0);
    assert_eq!(v["digest"], d2.as_str(), "{v}");
    let list = run_json(&h, &["list"], 0);
    assert_eq!(
        (&list["packs"][0]["digest"], &list["packs"][0]["activated"]),
        (&Value::String(d2.clone()), &Value::Bool(true))
    );
    assert_ne!(d1, d2);
}
