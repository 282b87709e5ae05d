//! `hcpx key generate PATH`: a P-256 signing key for `hcpx publish --sign` (PKCS#8 PEM, owner-only) and its
//! public key at `PATH.pub` for `hcpx trust add` and `cosign verify --key`.

use serde_json::json;

use super::{exit, fail, KeyCmd};
use crate::output::Printer;
use hcpx_registry::sign::PrivateKey;

/// Runs `hcpx key …`.
pub fn run(p: &Printer, c: &KeyCmd) -> anyhow::Result<u8> {
    let KeyCmd::Generate { path } = c;
    if path.exists() {
        return Ok(fail(
            p,
            &format!("{} exists; a key is never overwritten: name a new file", path.display()),
        ));
    }
    let public_path = std::path::PathBuf::from(format!("{}.pub", path.display()));
    let made = PrivateKey::generate()
        .and_then(|k| Ok((k.to_pem()?, k.public().to_pem()?, k.public().fingerprint())));
    let (private, public, fingerprint) = match made {
        Ok(m) => m,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if let Err(e) = hcpx_store::write_atomic(path, private.as_bytes(), 0o600) {
        return Ok(fail(p, &format!("cannot write {}: {}", path.display(), hcpx_model::io_reason(&e))));
    }
    if let Err(e) = hcpx_store::write_atomic(&public_path, public.as_bytes(), 0o644) {
        return Ok(fail(
            p,
            &format!("cannot write {}: {}", public_path.display(), hcpx_model::io_reason(&e)),
        ));
    }
    if p.json {
        p.json_doc(&json!({ "ok": true, "private_key": path, "public_key": public_path, "fingerprint": fingerprint }));
    } else {
        p.message(&format!(
            "wrote {} (private, keep it secret) and {} ({fingerprint})",
            path.display(),
            public_path.display()
        ));
        p.message(&format!(
            "sign: hcpx publish DIR REF --sign {}; trust: hcpx trust add NAME {} --prefix HOST/REPO",
            path.display(),
            public_path.display()
        ));
    }
    Ok(exit::OK)
}
