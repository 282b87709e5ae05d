//! Edits of `grants.json`, the local Principal's grants (decisions.md §4), for `hcpx grant` and `hcpx revoke`.

use super::{Store, StoreError};
use crate::model::grants::{add_grant, every_grant, remove_grant, Grant};

/// What a grants edit left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantsEdit {
    /// The grants now in `grants.json`.
    pub grants: Vec<Grant>,
    /// True when there was no `grants.json` before (the local Principal held every grant).
    pub created: bool,
}

impl Store {
    /// Adds `grants` to `grants.json`. Without the file the local Principal held every grant; the new file
    /// holds only these, which `created` reports.
    pub fn grant_local(&self, grants: &[Grant]) -> Result<GrantsEdit, StoreError> {
        let _lock = self.lock()?;
        let before: Option<Vec<Grant>> = self.read_json("grants.json")?;
        let created = before.is_none();
        let mut list = before.unwrap_or_default();
        for g in grants {
            add_grant(&mut list, g);
        }
        self.write_json("grants.json", &list)?;
        Ok(GrantsEdit { grants: list, created })
    }

    /// Takes `grants` from `grants.json`. Without the file, every grant is written out (`CAPABILITY:*` for
    /// each capability) first, so a whole capability can be revoked; nothing changes when one cannot be.
    pub fn revoke_local(&self, grants: &[Grant]) -> Result<GrantsEdit, StoreError> {
        let _lock = self.lock()?;
        let before: Option<Vec<Grant>> = self.read_json("grants.json")?;
        let created = before.is_none();
        let mut list = before.unwrap_or_else(every_grant);
        for g in grants {
            remove_grant(&mut list, g).map_err(|e| StoreError::Refused(e.0))?;
        }
        self.write_json("grants.json", &list)?;
        Ok(GrantsEdit { grants: list, created })
    }
}
