//! Edits of `grants.json`, the local Principal's grants (docs/spec.md §7), for `hcpx grant` and `hcpx revoke`.

use super::{Store, StoreError};
use crate::model::grants::{add_grant, every_grant, remove_grant, Grant};

/// What a grants edit left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantsEdit {
    /// The grants now in `grants.json`.
    pub grants: Vec<Grant>,
    /// True when there was no `grants.json` before (the local Principal held every grant).
    pub created: bool,
    /// The grants held before that are held no more (only `--only` takes any away).
    pub lost: Vec<Grant>,
    /// `--only` replaced a `grants.json` that did not parse.
    pub replaced: bool,
}

impl Store {
    /// Adds `grants` to `grants.json`; a grant only ever adds. Without the file the local Principal held every
    /// grant: those are written out first (`CAPABILITY:*` for each capability, as `revoke_local` does), so the
    /// new file takes nothing away, which `created` reports.
    ///
    /// `only`: the file holds exactly `grants` afterwards, and `lost` names what was held before and is not
    /// now. A file that does not parse is replaced (its grants are unknown, so `lost` is empty): that is the
    /// safe way out of a damaged `grants.json`, where removing it would grant everything.
    pub fn grant_local(&self, grants: &[Grant], only: bool) -> Result<GrantsEdit, StoreError> {
        let _lock = self.lock()?;
        let mut replaced = false;
        let before: Option<Vec<Grant>> = match self.read_json("grants.json") {
            Err(StoreError::Corrupt { .. }) if only => {
                replaced = true;
                Some(Vec::new())
            }
            read => read?,
        };
        let created = before.is_none();
        let held = before.unwrap_or_else(every_grant);
        let mut list = if only { Vec::new() } else { held.clone() };
        for g in grants {
            add_grant(&mut list, g);
        }
        let lost = held.into_iter().filter(|g| !list.contains(g)).collect();
        self.write_json("grants.json", &list)?;
        Ok(GrantsEdit { grants: list, created, lost, replaced })
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
        Ok(GrantsEdit { grants: list, created, lost: Vec::new(), replaced: false })
    }
}
