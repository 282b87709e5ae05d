//! Credentials at rest in PostgreSQL are sealed: XChaCha20-Poly1305 under a key the operator keeps in a file
//! (`HCP_SEAL_KEY_FILE`, 32 random bytes), never in the database. Each sealed row records the key's id, so a
//! row sealed under another key is named, not mis-read, and `hcpx credential rotate-key` can re-seal every row.
//! The row's path is the associated data: a sealed value moved to another row does not open.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::StoreError;

/// A seal key, loaded.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
    id: String,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("id", &self.id).finish_non_exhaustive()
    }
}

/// A sealed value as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub bytes: Vec<u8>,
    pub nonce: Vec<u8>,
    pub key_id: String,
}

/// Sealed documents this process could not open with its key (sealed under another key, altered, or moved):
/// `/metrics`' `hcp_seal_failures_total`. Any is an operator's to look at (a replica given the wrong key file).
static FAILURES: AtomicU64 = AtomicU64::new(0);

/// How many sealed documents this process failed to open.
pub fn failures() -> u64 {
    FAILURES.load(Ordering::Relaxed)
}

fn failed<T>(e: StoreError) -> Result<T, StoreError> {
    FAILURES.fetch_add(1, Ordering::Relaxed);
    Err(e)
}

fn aad(path: &str) -> Vec<u8> {
    format!("hcpx-document:{path}").into_bytes()
}

impl Sealer {
    /// The key named by `HCP_SEAL_KEY_FILE`, or `None` when it is not set.
    pub fn from_env() -> Result<Option<Sealer>, StoreError> {
        match std::env::var_os("HCP_SEAL_KEY_FILE").filter(|v| !v.is_empty()) {
            Some(p) => Sealer::from_file(Path::new(&p)).map(Some),
            None => Ok(None),
        }
    }

    /// The key in `path`: 32 bytes, or 64 hex digits. A key file others may read is refused.
    pub fn from_file(path: &Path) -> Result<Sealer, StoreError> {
        use std::os::unix::fs::MetadataExt;
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| {
            StoreError::Refused(format!(
                "seal key file {shown}: {}; make one with `head -c 32 /dev/urandom > FILE && chmod 600 FILE`",
                crate::model::io_reason(&e)
            ))
        })?;
        if meta.mode() & 0o077 != 0 {
            return Err(StoreError::Refused(format!(
                "seal key file {shown} can be read by others (mode {:o}); run `chmod 600 {shown}`",
                meta.mode() & 0o777
            )));
        }
        let raw = std::fs::read(path).map_err(|e| StoreError::io(path, e))?;
        let key = parse_key(&raw).ok_or_else(|| {
            StoreError::Refused(format!(
                "seal key file {shown} must hold exactly 32 random bytes (or 64 hex digits); make one with `head -c 32 /dev/urandom > FILE`"
            ))
        })?;
        Ok(Sealer::from_key(&key))
    }

    pub fn from_key(key: &[u8; 32]) -> Sealer {
        let mut id_input = b"hcpx-seal-key-id:".to_vec();
        id_input.extend_from_slice(key);
        let id = crate::model::digest::sha256_hex(&id_input)[..16].to_string();
        Sealer { cipher: XChaCha20Poly1305::new(chacha20poly1305::Key::from_slice(key)), id }
    }

    /// The key's id, recorded beside each row it sealed (a digest of the key, which reveals nothing of it).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Seals the document at `path`.
    pub fn seal(&self, path: &str, plain: &[u8]) -> Result<Sealed, StoreError> {
        self.seal_bound(&aad(path), plain).map_err(|_| StoreError::Refused(format!("cannot seal {path}")))
    }

    /// Seals `plain` bound to `context` (the associated data): it opens only with the same context. Callers
    /// give each use its own prefix (documents: `hcpx-document:`), so a value sealed for one never opens as
    /// another.
    pub fn seal_bound(&self, context: &[u8], plain: &[u8]) -> Result<Sealed, StoreError> {
        let nonce = crate::random_bytes::<24>()?;
        let bytes = self
            .cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plain, aad: context })
            .map_err(|_| StoreError::Refused("cannot seal a value".into()))?;
        Ok(Sealed { bytes, nonce: nonce.to_vec(), key_id: self.id.clone() })
    }

    /// Opens what [`Sealer::seal_bound`] sealed with this key and `context`; `None` when it was sealed under
    /// another key or context, or altered.
    pub fn open_bound(&self, context: &[u8], nonce: &[u8], bytes: &[u8]) -> Option<Vec<u8>> {
        if nonce.len() != 24 {
            return None;
        }
        self.cipher.decrypt(XNonce::from_slice(nonce), Payload { msg: bytes, aad: context }).ok()
    }

    /// Opens the sealed document at `path`; a row sealed under another key, or altered, is refused.
    pub fn open(&self, path: &str, sealed: &Sealed) -> Result<Vec<u8>, StoreError> {
        if sealed.key_id != self.id {
            return failed(StoreError::Refused(format!(
                "{path} is sealed with key {}, but HCP_SEAL_KEY_FILE holds key {}; point HCP_SEAL_KEY_FILE at the key it was sealed with (or finish `hcpx credential rotate-key`)",
                sealed.key_id, self.id
            )));
        }
        if sealed.nonce.len() != 24 {
            return failed(StoreError::Refused(format!("{path}: its sealed row is damaged (nonce)")));
        }
        match self
            .cipher
            .decrypt(XNonce::from_slice(&sealed.nonce), Payload { msg: &sealed.bytes, aad: &aad(path) })
        {
            Ok(plain) => Ok(plain),
            Err(_) => failed(StoreError::Refused(format!(
                "{path}: its sealed row does not open with key {} (altered, or moved from another row)",
                self.id
            ))),
        }
    }
}

fn parse_key(raw: &[u8]) -> Option<[u8; 32]> {
    if raw.len() == 32 {
        return raw.try_into().ok();
    }
    let text = std::str::from_utf8(raw).ok()?.trim();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Whether the document at `path` holds credentials (sealed in the database).
pub fn is_secret(path: &str) -> bool {
    let mut parts = path.split('/');
    match parts.next() {
        Some("credentials") => true,
        Some("tenants") => parts.nth(1) == Some("credentials"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_at_its_path() {
        let a = Sealer::from_key(&[7u8; 32]);
        let b = Sealer::from_key(&[8u8; 32]);
        let s = a.seal("credentials/gh.json", b"{\"token\":\"s3cret\"}").unwrap();
        let before = failures();
        assert!(!s.bytes.windows(6).any(|w| w == b"s3cret"));
        assert_eq!(a.open("credentials/gh.json", &s).unwrap(), b"{\"token\":\"s3cret\"}");
        let other_key = b.open("credentials/gh.json", &s).unwrap_err().to_string();
        assert!(other_key.contains(a.id()) && other_key.contains(b.id()), "{other_key}");
        let moved = a.open("credentials/other.json", &s).unwrap_err().to_string();
        assert!(moved.contains("does not open"), "{moved}");
        let mut flipped = s.clone();
        flipped.bytes[0] ^= 1;
        assert!(a.open("credentials/gh.json", &flipped).is_err());
        // Each of the three that did not open is counted (other tests may add theirs meanwhile).
        assert!(failures() - before >= 3, "{}", failures() - before);
    }

    #[test]
    fn only_credential_documents_are_secret() {
        assert!(is_secret("credentials/gh.json"));
        assert!(is_secret("credentials/gh/alice.json"));
        assert!(is_secret("tenants/acme/credentials/gh.json"));
        assert!(!is_secret("tenants/acme/connections.json"));
        assert!(!is_secret("principals.json"));
    }

    #[test]
    fn key_files_are_32_bytes_or_64_hex_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("k");
        std::fs::write(&f, [1u8; 32]).unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(Sealer::from_file(&f).unwrap_err().to_string().contains("chmod 600"));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let raw = Sealer::from_file(&f).unwrap();
        std::fs::write(&f, format!("{}\n", "01".repeat(32))).unwrap();
        assert_eq!(Sealer::from_file(&f).unwrap().id(), raw.id());
        std::fs::write(&f, b"short").unwrap();
        assert!(Sealer::from_file(&f).unwrap_err().to_string().contains("32 random bytes"));
    }
}
