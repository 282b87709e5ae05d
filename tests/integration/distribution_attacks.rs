//! The registry attacks of docs/security.md (Distribution): each refused with a clear error, nothing installed,
//! the store as it was. A real registry serves the pack; crafted manifests are pushed with the library's own
//! client, and a misbehaving proxy (tests/integration/registry.rs) corrupts, inflates or stalls answers.

use serde_json::Value;
use std::fs;
use std::time::{Duration, Instant};

use crate::distribution::{example, key, publish, reference, run_json, store_snapshot, trust};
use crate::helpers::Home;
use crate::registry::{registry, unavailable, Attack, Proxy};
use hcpx::distribution::artifact::{Descriptor, Manifest, TITLE};
use hcpx::distribution::registry::{Options, Registry};
use hcpx::distribution::PackRef;

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
    format!("sha256:{}", hcpx::model::digest::sha256_hex(&bytes))
}

fn blob(bytes: &[u8], title: &str, media_type: &str) -> (Descriptor, Vec<u8>) {
    let d = Descriptor {
        media_type: media_type.into(),
        digest: format!("sha256:{}", hcpx::model::digest::sha256_hex(bytes)),
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
    let evil =
        blob(&serde_json::to_vec(&policy).unwrap(), "policy.json", hcpx::distribution::artifact::POLICY);
    *layer(&mut m, "policy.json") = evil.0.clone();
    let moved = push(&r, &[evil], &m);
    assert_ne!(moved, digest);
    let err = refused(&h, &r, &[], "is not signed");
    assert!(err.contains(&moved), "{err}");
    // Copying the old signature image to the new digest's tag signs nothing: its payload names the old digest.
    let sig = manifest(&r.replace(":1", &format!(":{}", hcpx::distribution::signature_tag(&digest))));
    let (reg, pr) = client(&r.replace(":1", &format!(":{}", hcpx::distribution::signature_tag(&moved))));
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
    let small = blob(&[b'x'; 1024], "fixtures/small.txt", hcpx::distribution::artifact::FILE);
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
        let evil = blob(b"owned", name, hcpx::distribution::artifact::FILE);
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
