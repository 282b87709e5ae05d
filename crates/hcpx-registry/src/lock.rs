//! `hcp.lock`: the packs a deployment runs, each pinned to its reference, manifest digest and signer, written
//! by `hcpx lock` from the store and read by `hcpx install --locked`, which installs exactly those digests.

use serde::{Deserialize, Serialize};
use std::path::Path;

use super::DistError;
use crate::store::Store;

/// The lock file's name.
pub const LOCK_FILE: &str = "hcp.lock";

/// `hcp.lock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    #[serde(default)]
    pub packs: Vec<LockEntry>,
}

/// One pinned pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockEntry {
    pub id: String,
    /// The reference it was installed from (`oci://host/repo:tag`).
    pub reference: String,
    /// The manifest digest it must have.
    pub digest: String,
    /// The fingerprint of the key that must have signed it; `None`: installed with --allow-unsigned.
    pub signer: Option<String>,
}

/// The lock of every pack in the store installed from a registry (directory installs cannot be pinned).
pub fn from_store(store: &Store) -> Result<(LockFile, Vec<String>), DistError> {
    let mut packs = Vec::new();
    let mut skipped = Vec::new();
    for (id, st) in &store.state()?.packs {
        match (&st.digest, st.source.starts_with("oci://")) {
            (Some(d), true) => packs.push(LockEntry {
                id: id.clone(),
                reference: st.source.clone(),
                digest: d.clone(),
                signer: st.signer.as_ref().and_then(|s| s.split_whitespace().last().map(str::to_string)),
            }),
            _ => skipped.push(id.clone()),
        }
    }
    Ok((LockFile { version: 1, packs }, skipped))
}

/// Reads and checks a lock file.
pub fn read(path: &Path) -> Result<LockFile, DistError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        DistError::Lock(format!("cannot read {} ({e}); write one with hcpx lock", path.display()))
    })?;
    let lock: LockFile = serde_json::from_str(&text).map_err(|e| {
        DistError::Lock(format!(
            "{} is not a valid lock file: {e}; write it again with hcpx lock",
            path.display()
        ))
    })?;
    if lock.version != 1 {
        return Err(DistError::Lock(format!(
            "{} has version {}; this hcpx reads version 1",
            path.display(),
            lock.version
        )));
    }
    for e in &lock.packs {
        if !super::reference::is_sha256_digest(&e.digest) {
            return Err(DistError::Lock(format!(
                "{}: pack {} has digest {:?}, not sha256:<64 hex>",
                path.display(),
                e.id,
                e.digest
            )));
        }
    }
    Ok(lock)
}

/// Writes a lock file (atomically).
pub fn write(path: &Path, lock: &LockFile) -> Result<(), DistError> {
    let mut text = serde_json::to_string_pretty(lock).map_err(|e| DistError::Lock(e.to_string()))?;
    text.push('\n');
    crate::store::write_atomic(path, text.as_bytes(), 0o644)
        .map_err(|e| DistError::Io { path: path.display().to_string(), source: e })
}
