//! The outcome of each `connect` per credential family and Principal (`<tenant dir>/connections.json`):
//! linked, failed or revoked. The Binding mint reads it, so `availability.bound` and every call follow the
//! last outcome; a pack with no `connect` command is never recorded here and mints as before.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::{Store, StoreError};
use crate::model::wire::wire_enum;
use crate::model::Code;

wire_enum! {
    /// What the last `connect` of a family did for a Principal.
    pub enum LinkState ("link state") {
        /// The connect command succeeded: the Binding is linked.
        Linked = "linked",
        /// The connect command ran and failed: the Binding is not trusted until a connect succeeds.
        Failed = "failed",
        /// A person took the link back (`hcpx connect PACK --revoke`).
        Revoked = "revoked",
    }
}

/// One family's link for one Principal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub state: LinkState,
    /// When (RFC 3339).
    pub at: String,
    /// The pack whose connect command (or revoke) set it.
    pub pack_id: String,
    /// Why a connect failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
}

/// `connections.json`: family → Principal id → link.
type Links = BTreeMap<String, BTreeMap<String, Link>>;

const FILE: &str = "connections.json";

impl Store {
    fn connections_rel(&self, tenant: &str) -> Result<String, StoreError> {
        Ok(self.tenant_dir(tenant)?.join(FILE).display().to_string())
    }

    /// The last outcome of a connect of `family` for `principal` of `tenant`. Every mint of a `local` or `user`
    /// Binding asks, so it is a cached read (no parse while the file is unchanged).
    pub fn link(&self, tenant: &str, family: &str, principal: &str) -> Result<Option<Link>, StoreError> {
        let rel = self.connections_rel(tenant)?;
        Ok(self
            .read_json_cached::<Links>(&rel)?
            .and_then(|m| m.get(family).and_then(|p| p.get(principal)).cloned()))
    }

    /// Records the outcome of a connect (or a revoke), under the store lock.
    pub fn record_link(
        &self,
        tenant: &str,
        family: &str,
        principal: &str,
        link: Link,
    ) -> Result<(), StoreError> {
        let rel = self.connections_rel(tenant)?;
        let _lock = self.lock()?;
        if let Some(parent) = self.path(&rel).parent() {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
        }
        let mut all: Links = self.read_json(&rel)?.unwrap_or_default();
        all.entry(family.to_string()).or_default().insert(principal.to_string(), link);
        self.write_json_mode(&rel, &all, 0o600)
    }
}
