//! Verified registry content under `$HCP_HOME/cache/oci`, addressed by digest: manifests, blobs and the
//! signatures found for a manifest. Everything is checked again when read (a cached file whose bytes no longer
//! match its name is ignored), so the cache can only save a download, never change what is installed.

use std::path::{Path, PathBuf};

use super::artifact::Descriptor;
use super::reference::{is_sha256_digest, PackRef};
use super::registry::Registry;
use super::{DistError, FoundSignature};
use crate::model::digest::sha256_hex;
use crate::store::Store;

pub struct Cache {
    root: PathBuf,
}

fn io(path: &Path, e: std::io::Error) -> DistError {
    DistError::Io { path: path.display().to_string(), source: e }
}

impl Cache {
    pub fn new(store: &Store) -> Cache {
        Cache { root: store.path("cache/oci") }
    }

    fn at(&self, kind: &str, digest: &str) -> Option<PathBuf> {
        is_sha256_digest(digest).then(|| self.root.join(kind).join(digest.replacen(':', "-", 1)))
    }

    /// A temp directory on the cache's file system (renames into the cache stay atomic).
    pub fn tmp(&self) -> Result<PathBuf, DistError> {
        let t = self.root.join("tmp");
        std::fs::create_dir_all(&t).map_err(|e| io(&t, e))?;
        Ok(t)
    }

    fn put(&self, kind: &str, digest: &str, bytes: &[u8]) -> Result<(), DistError> {
        let Some(p) = self.at(kind, digest) else { return Ok(()) };
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        crate::store::write_atomic(&p, bytes, 0o644).map_err(|e| io(&p, e))
    }

    /// The cached manifest `digest`, when its bytes still hash to it.
    pub fn manifest(&self, digest: &str) -> Option<(Vec<u8>, String)> {
        let bytes = std::fs::read(self.at("manifests", digest)?).ok()?;
        (format!("sha256:{}", sha256_hex(&bytes)) == digest).then(|| (bytes, digest.to_string()))
    }

    pub fn put_manifest(&self, digest: &str, bytes: &[u8]) -> Result<(), DistError> {
        self.put("manifests", digest, bytes)
    }

    /// The signatures last found for manifest `digest` (verified against the trusted keys on every use).
    pub fn signatures(&self, digest: &str) -> Vec<FoundSignature> {
        self.at("signatures", digest)
            .and_then(|p| std::fs::read(p).ok())
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    pub fn put_signatures(&self, digest: &str, sigs: &[FoundSignature]) -> Result<(), DistError> {
        let bytes = serde_json::to_vec(sigs).map_err(|e| DistError::Signature(e.to_string()))?;
        self.put("signatures", digest, &bytes)
    }

    /// The cached blob `digest` of `size` bytes, when its bytes still hash to it.
    pub fn blob(&self, digest: &str, size: i64) -> Option<PathBuf> {
        let p = self.at("blobs", digest)?;
        let meta = std::fs::metadata(&p).ok()?;
        if i64::try_from(meta.len()).ok()? != size {
            return None;
        }
        let bytes = std::fs::read(&p).ok()?;
        (format!("sha256:{}", sha256_hex(&bytes)) == digest).then_some(p)
    }

    /// Streams blob `d` of `r` from the registry into the cache (bounded and digest-checked on the way).
    pub fn fetch_blob(&self, reg: &Registry, r: &PackRef, d: &Descriptor) -> Result<PathBuf, DistError> {
        let target = self.at("blobs", &d.digest).ok_or_else(|| {
            DistError::Artifact(format!("layer digest {:?} is not sha256:<64 hex>", d.digest))
        })?;
        let tmp = self.tmp()?.join(crate::store::unique_name("blob"));
        if let Err(e) = reg.blob_to(r, d, &tmp) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        std::fs::rename(&tmp, &target).map_err(|e| io(&target, e))?;
        Ok(target)
    }
}
