//! The local credential hub: `$HCP_HOME/credentials/<family>.json`, written atomically and readable by the owner only.

use std::collections::BTreeMap;

use super::{Store, StoreError};
use crate::model::naming::{is_arg_name, is_pack_id};

type Fields = BTreeMap<String, String>;

impl Store {
    /// Stores `field` of `family`: the family's shared file (`local` Binding), or one Principal's file
    /// (`user` Binding) when `principal` is given.
    pub fn credential_set(
        &self,
        tenant: &str,
        family: &str,
        principal: Option<&str>,
        field: &str,
        value: &str,
    ) -> Result<(), StoreError> {
        check(family, Some(field))?;
        check_principal(principal)?;
        if value.is_empty() {
            return Err(StoreError::Refused("the value is empty; pipe it on stdin, e.g. `printf %s \"$TOKEN\" | hcpx credential set FAMILY FIELD`".into()));
        }
        let _lock = self.lock()?;
        let dir = self.tenant_dir(tenant)?.join("credentials");
        self.backend.doc_dir(&dir, true)?;
        if principal.is_some() {
            self.backend.doc_dir(&dir.join(family), true)?;
        }
        let rel = self.credential_file(tenant, family, principal)?;
        let mut fields: Fields = self.read_json(&rel)?.unwrap_or_default();
        fields.insert(field.to_string(), value.to_string());
        self.write_json_mode(&rel, &fields, 0o600)
    }

    /// Removes one field, or the whole family.
    pub fn credential_rm(
        &self,
        tenant: &str,
        family: &str,
        principal: Option<&str>,
        field: Option<&str>,
    ) -> Result<(), StoreError> {
        check(family, field)?;
        check_principal(principal)?;
        let _lock = self.lock()?;
        let rel = self.credential_file(tenant, family, principal)?;
        let Some(mut fields) = self.read_json::<Fields>(&rel)? else {
            return Err(StoreError::Refused(format!("no credentials stored for family {family}")));
        };
        match field {
            Some(f) => {
                if fields.remove(f).is_none() {
                    return Err(StoreError::Refused(format!("family {family} has no field {f}")));
                }
                self.write_json_mode(&rel, &fields, 0o600)
            }
            None => self.remove_json(&rel).map(|_| ()),
        }
    }

    /// Every family and its field names; never the values.
    pub fn credential_list(&self, tenant: &str) -> Result<BTreeMap<String, Vec<String>>, StoreError> {
        let rel_dir = self.tenant_dir(tenant)?.join("credentials");
        let mut out = BTreeMap::new();
        // The shared documents only (`credentials/<family>.json`, not a Principal's); names, never values.
        for name in self.backend.doc_names(&rel_dir)? {
            if let Some(family) = name.strip_suffix(".json") {
                let fields: Fields =
                    self.read_json(&rel_dir.join(&name).to_string_lossy())?.unwrap_or_default();
                out.insert(family.to_string(), fields.into_keys().collect());
            }
        }
        Ok(out)
    }
}

impl Store {
    /// The file one tenant's credentials of a family live in, shared or per Principal (`runtime::mint` reads
    /// the same paths): `credentials/…` for the local tenant, `tenants/<tenant>/credentials/…` for a served one.
    pub fn credential_file(
        &self,
        tenant: &str,
        family: &str,
        principal: Option<&str>,
    ) -> Result<String, StoreError> {
        let name = match principal {
            Some(p) => format!("credentials/{family}/{p}.json"),
            None => format!("credentials/{family}.json"),
        };
        Ok(self.tenant_dir(tenant)?.join(name).to_string_lossy().into_owned())
    }
}

fn check_principal(principal: Option<&str>) -> Result<(), StoreError> {
    match principal {
        Some(p) if !is_arg_name(p) => Err(StoreError::Refused(format!(
            "{p:?} is not a principal id this hub can hold; use letters, digits, `_` and `-`"
        ))),
        _ => Ok(()),
    }
}

fn check(family: &str, field: Option<&str>) -> Result<(), StoreError> {
    if !is_pack_id(family) {
        return Err(StoreError::Refused(format!(
            "{family:?} is not a family name; families are lower-case words like \"ledger\""
        )));
    }
    if let Some(f) = field {
        if !is_arg_name(f) {
            return Err(StoreError::Refused(format!(
                "{f:?} is not a field name; use letters, digits and `_`, like \"token\""
            )));
        }
    }
    Ok(())
}

/// `$HCP_HOME/families.json`: which packs a person allowed to use each credential family, beyond the pack
/// named like the family, which owns it by default. Declaring a family in a manifest grants nothing.
const FAMILIES: &str = "families.json";

impl Store {
    /// The packs allowed to use `family`: the one named like it, and those allowed with `hcpx credential allow`.
    pub fn family_allowed(&self, family: &str) -> Result<Vec<String>, StoreError> {
        // Every mint of a bound pack asks: a cached read (no parse, and no database round trip, while unchanged).
        let all = self.read_json_cached::<BTreeMap<String, Vec<String>>>(FAMILIES)?.unwrap_or_default();
        let mut out = vec![family.to_string()];
        for p in all.get(family).into_iter().flatten() {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        Ok(out)
    }

    /// Whether pack `id` may receive `family`'s credentials.
    pub fn family_allows(&self, family: &str, id: &str) -> Result<bool, StoreError> {
        Ok(self.family_allowed(family)?.iter().any(|p| p == id))
    }

    /// Allows (`allow = true`) or stops packs from using `family`; returns the packs allowed after the change.
    pub fn edit_family(
        &self,
        family: &str,
        packs: &[String],
        allow: bool,
    ) -> Result<Vec<String>, StoreError> {
        check(family, None)?;
        for p in packs {
            if !is_pack_id(p) {
                return Err(StoreError::Refused(format!("{p:?} is not a pack id")));
            }
            if !allow && p == family {
                return Err(StoreError::Refused(format!("pack {p} owns the family named like it; to stop it, remove the family's credentials with `hcpx credential rm {family}`")));
            }
        }
        let _lock = self.lock()?;
        let mut all: BTreeMap<String, Vec<String>> = self.read_json(FAMILIES)?.unwrap_or_default();
        let entry = all.entry(family.to_string()).or_default();
        for p in packs {
            if allow && !entry.contains(p) && p != family {
                entry.push(p.clone());
            } else if !allow {
                entry.retain(|x| x != p);
            }
        }
        if entry.is_empty() {
            all.remove(family);
        }
        self.write_json(FAMILIES, &all)?;
        drop(_lock);
        self.family_allowed(family)
    }
}
