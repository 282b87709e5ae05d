//! `hcpx key generate PATH`: a P-256 signing key for `hcpx publish --sign` (PKCS#8 PEM, owner-only) and its
//! public key at `PATH.pub` for `hcpx trust add` and `cosign verify --key`.

use serde::Serialize;
use std::path::{Path, PathBuf};

use super::KeyCmd;
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_registry::sign::PrivateKey;

/// Runs `hcpx key …`.
pub fn run(p: &Printer, c: &KeyCmd) -> anyhow::Result<u8> {
    let KeyCmd::Generate { path } = c;
    if path.exists() {
        return Err(CliError::new(format!(
            "{} exists; a key is never overwritten: name a new file",
            path.display()
        ))
        .into());
    }
    let public_path = PathBuf::from(format!("{}.pub", path.display()));
    let (private, public, fingerprint) = PrivateKey::generate()
        .and_then(|k| Ok((k.to_pem()?, k.public().to_pem()?, k.public().fingerprint())))
        .or_fail()?;
    let write = |at: &Path, text: &str, mode| {
        hcpx_store::write_atomic(at, text.as_bytes(), mode).map_err(|e| {
            CliError::new(format!("cannot write {}: {}", at.display(), hcpx_model::io_reason(&e)))
        })
    };
    write(path, &private, 0o600)?;
    write(&public_path, &public, 0o644)?;
    Ok(p.report(&Generated { ok: true, private_key: path, public_key: &public_path, fingerprint }))
}

/// The key pair written.
#[derive(Serialize)]
struct Generated<'a> {
    ok: bool,
    private_key: &'a Path,
    public_key: &'a Path,
    fingerprint: String,
}

impl Report for Generated<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "wrote {} (private, keep it secret) and {} ({})",
            self.private_key.display(),
            self.public_key.display(),
            self.fingerprint
        ));
        out.message(&format!(
            "sign: hcpx publish DIR REF --sign {}; trust: hcpx trust add NAME {} --prefix HOST/REPO",
            self.private_key.display(),
            self.public_key.display()
        ));
    }
}
