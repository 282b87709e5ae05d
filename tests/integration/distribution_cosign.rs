//! The signature format is cosign's, checked from outside hcpx: the signature image sits at the tag cosign
//! looks for (`sha256-<hex>.sig`), its layer is a simple-signing payload with cosign's media type and
//! annotation, the payload names the manifest digest, and OpenSSL (an independent ECDSA implementation)
//! verifies the signature over the payload with the public key and refuses another key. Keys OpenSSL makes
//! sign packs hcpx installs. And cosign's own verification logic, as the sigstore project's Rust library
//! (sigstore-rs) implements it, accepts what `hcpx publish --sign` pushed: tests/cosign-verify is that
//! verifier, built apart from hcpx (its openssl backend stays out of hcpx's build).

use base64::Engine as _;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::distribution::{example, key, publish, reference, run_json, trust};
use crate::helpers::{repo, Home};
use crate::registry::{registry, unavailable};
use hcpx_registry::artifact::{Descriptor, Manifest};
use hcpx_registry::registry::{Options, Registry};
use hcpx_registry::{signature_tag, PackRef};

fn openssl(args: &[&str]) -> std::process::Output {
    Command::new("openssl").args(args).output().expect("run openssl (scripts/setup.sh installs it)")
}

fn openssl_verifies(public: &Path, signature: &Path, payload: &Path) -> bool {
    let out = openssl(&[
        "dgst",
        "-sha256",
        "-verify",
        public.to_str().unwrap(),
        "-signature",
        signature.to_str().unwrap(),
        payload.to_str().unwrap(),
    ]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("Verified OK")
}

#[test]
fn an_hcpx_signature_is_in_cosign_s_layout_and_openssl_verifies_it() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let dir = example(&h, "ledger");
    let (private, public) = key(&h, "signer.pem");
    let (_, stranger) = key(&h, "stranger.pem");
    let r = reference("cosign", "1");
    let digest = publish(&h, &dir, &r, Some(&private));
    // The signature image, where cosign looks for it.
    let pr = PackRef::parse(&r).unwrap();
    let sig_ref = pr.at_tag(&signature_tag(&digest));
    assert_eq!(sig_ref.tag.as_deref(), Some(format!("sha256-{}.sig", &digest[7..]).as_str()));
    let reg = Registry::new(&pr, &Options::default()).unwrap();
    let (bytes, sig_digest) = reg.manifest(&sig_ref).unwrap().expect("a signature image");
    let m: Manifest = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(m.media_type, "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(m.config.media_type, "application/vnd.oci.image.config.v1+json");
    assert_eq!(m.layers.len(), 1);
    let layer: &Descriptor = &m.layers[0];
    assert_eq!(layer.media_type, "application/vnd.dev.cosign.simplesigning.v1+json");
    let signature = layer.annotations.get("dev.cosignproject.cosign/signature").expect("cosign's annotation");
    // The payload: cosign's simple signing, naming this manifest.
    let payload = h.t.join("payload.json");
    reg.blob_to(&sig_ref.at_digest(&sig_digest), layer, &payload).unwrap();
    let p: Value = serde_json::from_slice(&fs::read(&payload).unwrap()).unwrap();
    assert_eq!(p["critical"]["type"], "cosign container image signature");
    assert_eq!(p["critical"]["image"]["docker-manifest-digest"], digest.as_str());
    assert_eq!(p["critical"]["identity"]["docker-reference"], pr.name().as_str());
    // OpenSSL verifies the DER signature over the payload with the public key, and only with it.
    let der = h.t.join("sig.der");
    fs::write(&der, base64::engine::general_purpose::STANDARD.decode(signature).unwrap()).unwrap();
    assert!(openssl_verifies(&public, &der, &payload), "openssl refused the hcpx signature");
    assert!(!openssl_verifies(&stranger, &der, &payload), "openssl accepted another key");
    // A second signer adds a layer; the first one stays.
    let (second, _) = key(&h, "second.pem");
    publish(&h, &dir, &r, Some(&second));
    let (bytes, _) = reg.manifest(&sig_ref).unwrap().unwrap();
    assert_eq!(serde_json::from_slice::<Manifest>(&bytes).unwrap().layers.len(), 2);
}

#[test]
fn a_key_openssl_made_signs_packs_hcpx_installs() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let private = h.t.join("openssl.pem");
    let public = h.t.join("openssl.pub");
    let made = openssl(&[
        "genpkey",
        "-algorithm",
        "EC",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-out",
        private.to_str().unwrap(),
    ]);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let out =
        openssl(&["pkey", "-in", private.to_str().unwrap(), "-pubout", "-out", public.to_str().unwrap()]);
    assert!(out.status.success());
    let r = reference("openssl-key", "1");
    publish(&h, &example(&h, "transit-composite"), &r, Some(&private));
    trust(&h, "ops", &public, &registry().addr);
    let v = run_json(&h, &["install", &r], 0);
    assert_eq!(v["signer"]["name"], "ops");
}

/// `cosign verify --key KEY --insecure-ignore-tlog --allow-http-registry IMAGE`, by sigstore-rs's cosign
/// verification (tests/cosign-verify: the build `HCPX_COSIGN_VERIFY` names, which scripts/test.sh makes and keeps
/// between runs, else built here on first use).
fn cosign_verify(key: &Path, image: &str) -> Output {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let bin = BUILT.get_or_init(|| {
        if let Some(built) = std::env::var_os("HCPX_COSIGN_VERIFY").map(PathBuf::from) {
            assert!(built.is_file(), "HCPX_COSIGN_VERIFY names {}, which is not a file", built.display());
            return built;
        }
        let dir = repo().join("tests/cosign-verify");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .args(["build", "--locked", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(dir.join("target"))
            .output()
            .expect("run cargo to build tests/cosign-verify");
        assert!(
            out.status.success(),
            "tests/cosign-verify did not build (scripts/setup.sh installs libssl-dev): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.join("target/debug/cosign-verify")
    });
    Command::new(bin)
        .args(["--key", key.to_str().unwrap(), "--allow-http-registry", image])
        .output()
        .expect("run cosign-verify")
}

#[test]
fn cosign_s_verification_in_sigstore_rs_accepts_an_hcpx_signature_and_refuses_another_key_or_digest() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let (private, public) = key(&h, "signer.pem");
    let (_, stranger) = key(&h, "stranger.pem");
    let r = reference("sigstore", "1");
    let digest = publish(&h, &example(&h, "transit-composite"), &r, Some(&private));
    let name = PackRef::parse(&r).unwrap().name();
    // By digest and by tag: sigstore-rs resolves the image, reads `sha256-<hex>.sig`, and the key verifies the
    // simple-signing payload, which names this digest.
    for image in [format!("{name}@{digest}"), format!("{name}:1")] {
        let out = cosign_verify(&public, &image);
        assert!(
            out.status.success(),
            "cosign verification refused {image}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v[0]["critical"]["image"]["docker-manifest-digest"], digest.as_str(), "{v}");
        assert_eq!(v[0]["critical"]["type"], "cosign container image signature");
    }
    // Another key: the signature layer names the digest, but no key of the caller's verifies it.
    let out = cosign_verify(&stranger, &format!("{name}@{digest}"));
    assert!(!out.status.success(), "cosign verification accepted another key");
    assert!(String::from_utf8_lossy(&out.stderr).contains("(1 signature layer(s) name that digest)"));
    // A changed digest: another manifest in the same repository (unsigned), given a copy of the first one's
    // signature image at its own signature tag, as a registry that moves signatures would. The payload names
    // the first digest, so cosign's check refuses it even with the right key.
    let other = publish(&h, &example(&h, "ledger"), &reference("sigstore", "2"), None);
    assert_ne!(other, digest);
    let pr = PackRef::parse(&r).unwrap();
    let reg = Registry::new(&pr, &Options::default()).unwrap();
    let (sig_manifest, _) = reg.manifest(&pr.at_tag(&signature_tag(&digest))).unwrap().unwrap();
    reg.push(&pr.at_tag(&signature_tag(&other)), &[], &sig_manifest).unwrap();
    let out = cosign_verify(&public, &format!("{name}@{other}"));
    assert!(!out.status.success(), "cosign verification accepted a signature over another digest");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&other) && err.contains("(0 signature layer(s) name that digest)"), "{err}");
    // The same signature image still verifies the digest it names.
    assert!(cosign_verify(&public, &format!("{name}@{digest}")).status.success());
}
