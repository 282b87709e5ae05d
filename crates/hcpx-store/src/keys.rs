//! The key that seals what the runtime hands a client to bring back (an MCP `requestState`): a PostgreSQL store
//! with a seal key uses that key (every replica holds it, never the database); otherwise 32 random bytes kept in
//! the store itself (`request-state-key.json`, mode 0600), made once under the store lock, so every process and
//! replica on the store opens what another sealed. Values sealed with it are bound to their use by their
//! associated data, so they never open as a sealed document.

use serde::{Deserialize, Serialize};

use super::pg::seal::Sealer;
use super::{Store, StoreError};

/// The document that holds the key when the store has no seal key.
pub const KEY_DOC: &str = "request-state-key.json";

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyDoc {
    /// 64 hex digits.
    key: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse(doc: &KeyDoc) -> Option<[u8; 32]> {
    let t = doc.key.as_str();
    if t.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(t.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

impl Store {
    /// The sealer of request states (see the module's text), made on first use.
    pub fn state_sealer(&self) -> Result<Sealer, StoreError> {
        if let Some(s) = self.state_key.get() {
            return Ok(s.clone());
        }
        let sealer = match self.backend.sealer() {
            Some(s) => s.clone(),
            None => Sealer::from_key(&self.stored_state_key()?),
        };
        Ok(self.state_key.get_or_init(|| sealer).clone())
    }

    fn stored_state_key(&self) -> Result<[u8; 32], StoreError> {
        let bad = || {
            StoreError::Corrupt {
            path: KEY_DOC.into(),
            reason: "its key is not 64 hex digits; remove it to make a new one (request states already handed out stop opening)".into(),
        }
        };
        if let Some(doc) = self.read_json::<KeyDoc>(KEY_DOC)? {
            return parse(&doc).ok_or_else(bad);
        }
        let _lock = self.lock()?;
        if let Some(doc) = self.read_json::<KeyDoc>(KEY_DOC)? {
            return parse(&doc).ok_or_else(bad);
        }
        let key = super::random_bytes::<32>()?;
        self.write_json_mode(KEY_DOC, &KeyDoc { key: hex(&key) }, 0o600)?;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_key_per_store_kept_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let a = Store::open(t.path()).unwrap().state_sealer().unwrap();
        let b = Store::open(t.path()).unwrap().state_sealer().unwrap();
        assert_eq!(a.id(), b.id(), "another process on the store reads the same key");
        let mode = std::fs::metadata(t.path().join(KEY_DOC)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(Store::open(other.path()).unwrap().state_sealer().unwrap().id(), a.id());
    }
}
