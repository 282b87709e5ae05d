//! Trusted signing keys (`trust.json` in the store, a row of the PostgreSQL store's documents when that is the
//! back end): each a name, a public key and the registry prefix it may sign for. A key is trusted only for
//! references under its prefix, so a key for one team's repositories signs nothing of another's.

use serde::{Deserialize, Serialize};

use super::sign::PublicKey;
use super::DistError;
use crate::store::Store;

const TRUST: &str = "trust.json";

/// `trust.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustFile {
    #[serde(default)]
    pub keys: Vec<TrustedKey>,
}

/// One trusted key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustedKey {
    pub name: String,
    /// `host`, `host/team` or `host/team/pack`: the references this key may sign.
    pub prefix: String,
    /// SPKI PEM.
    pub public_key: String,
    /// `sha256:` of the key's SPKI DER.
    pub fingerprint: String,
    pub added_at: String,
}

impl TrustedKey {
    /// Whether this key may sign `name` (`host/repo`): the prefix is the name or a whole-component prefix of it.
    pub fn covers(&self, name: &str) -> bool {
        name == self.prefix || name.strip_prefix(&self.prefix).is_some_and(|rest| rest.starts_with('/'))
    }
}

fn check_name(name: &str) -> Result<(), DistError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(DistError::Trust(format!("{name:?} is not a key name; use letters, digits, '-', '_' or '.'")))
    }
}

fn check_prefix(prefix: &str) -> Result<(), DistError> {
    let probe = format!("oci://{prefix}/x:t");
    let host_only = !prefix.contains('/');
    let parsed = if host_only {
        super::reference::PackRef::parse(&probe).ok()
    } else {
        super::reference::PackRef::parse(&format!("oci://{prefix}:t")).ok()
    };
    match parsed {
        Some(_) if !prefix.ends_with('/') => Ok(()),
        _ => Err(DistError::Trust(format!(
            "{prefix:?} is not a registry prefix; use host[:port] or host[:port]/path, e.g. ghcr.io/acme"
        ))),
    }
}

/// The trusted keys.
pub fn list(store: &Store) -> Result<TrustFile, DistError> {
    Ok(store.read_json::<TrustFile>(TRUST)?.unwrap_or_default())
}

/// Adds (or replaces, by name) a trusted key.
pub fn add(store: &Store, name: &str, pem: &str, prefix: &str) -> Result<TrustedKey, DistError> {
    check_name(name)?;
    check_prefix(prefix)?;
    let key = PublicKey::from_pem(pem)?;
    let entry = TrustedKey {
        name: name.to_string(),
        prefix: prefix.to_string(),
        public_key: key.to_pem()?,
        fingerprint: key.fingerprint(),
        added_at: crate::model::clock::now_rfc3339(),
    };
    let _lock = store.lock()?;
    let mut file = list(store)?;
    file.keys.retain(|k| k.name != name);
    file.keys.push(entry.clone());
    store.write_json(TRUST, &file)?;
    Ok(entry)
}

/// Removes a trusted key by name; whether there was one.
pub fn remove(store: &Store, name: &str) -> Result<bool, DistError> {
    let _lock = store.lock()?;
    let mut file = list(store)?;
    let before = file.keys.len();
    file.keys.retain(|k| k.name != name);
    store.write_json(TRUST, &file)?;
    Ok(file.keys.len() != before)
}

/// The keys trusted for `name`, parsed.
pub fn keys_for(store: &Store, name: &str) -> Result<Vec<(TrustedKey, PublicKey)>, DistError> {
    let mut out = Vec::new();
    for k in list(store)?.keys.into_iter().filter(|k| k.covers(name)) {
        let pk = PublicKey::from_pem(&k.public_key).map_err(|_| {
            DistError::Trust(format!(
                "trusted key {} in trust.json does not parse; add it again with hcpx trust add",
                k.name
            ))
        })?;
        out.push((k, pk));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_prefix_covers_whole_components_only() {
        let k = |p: &str| TrustedKey {
            name: "k".into(),
            prefix: p.into(),
            public_key: String::new(),
            fingerprint: String::new(),
            added_at: String::new(),
        };
        assert!(k("reg:5000/acme").covers("reg:5000/acme/ledger"));
        assert!(k("reg:5000").covers("reg:5000/acme/ledger"));
        assert!(!k("reg:5000/acme").covers("reg:5000/acme-evil/ledger"));
        assert!(!k("reg:5000").covers("reg:50001/x"));
        assert!(check_prefix("127.0.0.1:5000").is_ok() && check_prefix("ghcr.io/acme").is_ok());
        assert!(check_prefix("ghcr.io/acme/").is_err() && check_prefix("oci://x").is_err());
    }
}
