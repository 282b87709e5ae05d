//! `hcpx lock`: writes hcp.lock from the packs installed from registries (reference, digest, signer).

use serde::Serialize;
use std::path::Path;

use super::{open_store, LockArgs};
use crate::output::Printer;
use crate::report::{OrFail, Report, Text};
use hcpx_registry::lock::{self, LockEntry};

/// Runs `hcpx lock`.
pub fn run(p: &Printer, a: &LockArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let (file, skipped) = lock::from_store(&store).or_fail()?;
    lock::write(&a.file, &file).or_fail()?;
    Ok(p.report(&Locked { ok: true, file: &a.file, packs: &file.packs, not_locked: skipped }))
}

/// The lock file written: the packs it pins, and those installed from a directory, which it cannot.
#[derive(Serialize)]
struct Locked<'a> {
    ok: bool,
    file: &'a Path,
    packs: &'a [LockEntry],
    not_locked: Vec<String>,
}

impl Report for Locked<'_> {
    fn text(&self, out: &Text<'_>) {
        for e in self.packs {
            out.message(&format!(
                "{} {}@{} signed by {}",
                e.id,
                e.reference,
                e.digest,
                e.signer.as_deref().unwrap_or("nobody (installed with --allow-unsigned)")
            ));
        }
        if !self.not_locked.is_empty() {
            out.message(&format!(
                "not locked (installed from a directory, not a registry): {}",
                self.not_locked.join(", ")
            ));
        }
        out.message(&format!("wrote {} with {} pack(s)", self.file.display(), self.packs.len()));
    }
}
