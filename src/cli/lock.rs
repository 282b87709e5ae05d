//! `hcpx lock`: writes hcp.lock from the packs installed from registries (reference, digest, signer).

use serde_json::json;

use super::{exit, fail, open_store, LockArgs};
use crate::output::Printer;
use hcpx_registry::lock;

/// Runs `hcpx lock`.
pub fn run(p: &Printer, a: &LockArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let (file, skipped) = match lock::from_store(&store) {
        Ok(x) => x,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if let Err(e) = lock::write(&a.file, &file) {
        return Ok(fail(p, &e.to_string()));
    }
    if p.json {
        p.json_doc(&json!({ "ok": true, "file": a.file, "packs": file.packs, "not_locked": skipped }));
    } else {
        for e in &file.packs {
            p.message(&format!(
                "{} {}@{} signed by {}",
                e.id,
                e.reference,
                e.digest,
                e.signer.as_deref().unwrap_or("nobody (installed with --allow-unsigned)")
            ));
        }
        if !skipped.is_empty() {
            p.message(&format!(
                "not locked (installed from a directory, not a registry): {}",
                skipped.join(", ")
            ));
        }
        p.message(&format!("wrote {} with {} pack(s)", a.file.display(), file.packs.len()));
    }
    Ok(exit::OK)
}
