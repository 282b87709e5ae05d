//! `$HCP_HOME/principals.json` (docs/spec.md §19): the Principals of a served runtime, each with its tenant,
//! grants and the SHA-256 of its bearer token. Tokens themselves are never stored; a token is matched by its
//! digest, compared in constant time against every row.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::sync::Arc;
use subtle::ConstantTimeEq;

use super::{Store, StoreError};
use crate::model::grants::{Grant, Grants};
use crate::model::naming::is_arg_name;
use crate::model::{Invoker, Principal};

/// The file, relative to the store.
pub const PRINCIPALS_FILE: &str = "principals.json";

/// The tenant of the local user (the CLI, `hcpx mcp` over stdio): its workspaces and credentials are the
/// store's top-level ones.
pub const LOCAL_TENANT: &str = "local";

/// One row of `principals.json` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalRow {
    /// The Principal's id: letters, digits, `_` and `-`, starting with a letter; unique.
    pub principal: String,
    /// The tenant whose workspaces and credentials its calls use (`local`: the store's own).
    pub tenant: String,
    /// The SHA-256 of its bearer token, 64 lower-case hex digits; unique.
    pub token_sha256: String,
    /// Runs the runtime: may read its health (`GET /v1/doctor`); grants nothing of any tenant.
    #[serde(default)]
    pub operator: bool,
    /// What it may do; none when absent.
    #[serde(default)]
    pub grants: Vec<Grant>,
    /// May approve or refuse the pending approvals of its own tenant (`POST /v1/approvals/ID/approve`), never
    /// one its own calls asked for (`sandbox.json` `human_approval`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approver: bool,
    /// Its MCP client is a person's own (the operator vouches that a person, not a model, answers its
    /// elicitations): with `approver`, that person's answer to the approval card the client shows counts as
    /// an approval of its own call under `sandbox.json` `human_approval`. Without it an elicitation answer
    /// over HTTP never does.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub person: bool,
}

/// The Principals, checked: unique ids and token digests, names a path can hold, 64-hex digests.
#[derive(Debug, Clone, Default)]
pub struct Principals {
    rows: Vec<PrincipalRow>,
    /// Each row's token digest as bytes, compared in constant time.
    digests: Vec<[u8; 32]>,
}

/// A Principal a bearer token authenticated, with what only a served face needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub principal: Principal,
    pub operator: bool,
    /// May decide the pending approvals of its tenant.
    pub approver: bool,
    /// Its MCP client is a person's own: with `approver`, its elicitation answers count as approvals.
    pub person: bool,
    /// The SHA-256 of the token it presented: a long-lived request (a Sense stream) checks it again later.
    pub token_sha256: [u8; 32],
    /// What vouched for it: a row of `principals.json`, or an issuer's JWT access token.
    pub via: Via,
}

/// What authenticated a Principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// A static bearer token of `principals.json`.
    Token,
    /// A JWT access token of an issuer of `issuers.json`, good until `expires_at` (Unix seconds); its verified
    /// claims, so a long-lived request can map them again as the issuer's row is now.
    Issuer { issuer: String, expires_at: i64, claims: Arc<serde_json::Map<String, serde_json::Value>> },
}

impl Principals {
    /// Validates the rows of the file.
    pub fn from_rows(rows: Vec<PrincipalRow>) -> Result<Principals, String> {
        let (mut ids, mut tokens, mut digests) = (BTreeSet::new(), BTreeSet::new(), Vec::new());
        for (i, r) in rows.iter().enumerate() {
            let at = format!("row {} ({:?})", i + 1, r.principal);
            if !is_arg_name(&r.principal) {
                return Err(format!(
                    "{at}: principal must be letters, digits, `_` and `-`, starting with a letter"
                ));
            }
            if !is_arg_name(&r.tenant) {
                return Err(format!(
                    "{at}: tenant {:?} must be letters, digits, `_` and `-`, starting with a letter",
                    r.tenant
                ));
            }
            let digest = hex32(&r.token_sha256).ok_or_else(|| {
                format!("{at}: token_sha256 must be 64 lowercase hex digits (the SHA-256 of the token); `hcpx principal add` writes it")
            })?;
            if !ids.insert(r.principal.clone()) {
                return Err(format!("{at}: principal {:?} appears twice; keep one row", r.principal));
            }
            if !tokens.insert(r.token_sha256.clone()) {
                return Err(format!("{at}: the same token is given to two principals; issue each its own"));
            }
            digests.push(digest);
        }
        Ok(Principals { rows, digests })
    }

    pub fn rows(&self) -> &[PrincipalRow] {
        &self.rows
    }

    /// The Principal whose token is `token`, reaching the runtime through `invoker`; `None` when no row
    /// matches. Every row is compared (in constant time), so the answer's timing says nothing of which.
    pub fn authenticate(&self, token: &str, invoker: Invoker) -> Option<Authenticated> {
        self.authenticate_digest(&sha256(token.as_bytes()), invoker)
    }

    /// The Principal whose token has this SHA-256 now (its row may have changed or gone since it was first
    /// authenticated), compared in constant time.
    pub fn authenticate_digest(&self, presented: &[u8; 32], invoker: Invoker) -> Option<Authenticated> {
        let mut found = None;
        for (i, d) in self.digests.iter().enumerate() {
            if bool::from(d.ct_eq(presented)) {
                found = Some(i);
            }
        }
        let row = &self.rows[found?];
        Some(Authenticated {
            principal: Principal {
                id: row.principal.clone(),
                tenant: row.tenant.clone(),
                grants: Grants::Only(row.grants.clone()),
                invoker,
            },
            operator: row.operator,
            approver: row.approver,
            person: row.person,
            token_sha256: *presented,
            via: Via::Token,
        })
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

fn hex32(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// A new bearer token: 32 random bytes from the kernel, as 64 hex digits.
pub fn new_token() -> Result<String, StoreError> {
    let bytes = super::random_bytes::<32>()?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Store {
    /// Every tenant this store knows: `local`, each Principal's, each an OAuth issuer speaks for, each a pack
    /// is activated (or not) for, and each with an audit line.
    pub fn tenants(&self) -> Result<std::collections::BTreeSet<String>, StoreError> {
        let mut all = std::collections::BTreeSet::from([LOCAL_TENANT.to_string()]);
        if let Some(p) = self.principals()? {
            all.extend(p.rows().iter().map(|r| r.tenant.clone()));
        }
        if let Some(i) = self.issuers()? {
            for row in i.rows() {
                all.extend(row.tenant.iter().cloned().chain(row.tenants.iter().cloned()));
            }
        }
        for st in self.state()?.packs.values() {
            all.extend(st.tenants.keys().cloned());
        }
        for row in self.audit_rows(None)? {
            if let crate::audit::AuditRow::Record(r) = row {
                all.insert(r.tenant);
            }
        }
        Ok(all)
    }

    /// The served runtime's Principals, read through the cache (one `stat` per call while unchanged);
    /// `Ok(None)` when there is no `principals.json`.
    pub fn principals(&self) -> Result<Option<Arc<Principals>>, StoreError> {
        self.read_json_cached_with(PRINCIPALS_FILE, Principals::from_rows)
    }

    /// Adds a Principal and returns its new token (shown once; only its digest is kept).
    pub fn principal_add(
        &self,
        id: &str,
        tenant: &str,
        operator: bool,
        grants: Vec<Grant>,
    ) -> Result<String, StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<PrincipalRow> = self.read_json(PRINCIPALS_FILE)?.unwrap_or_default();
        if rows.iter().any(|r| r.principal == id) {
            return Err(StoreError::Refused(format!(
                "principal {id} exists; remove it first with `hcpx principal rm {id}` (its token stops working)"
            )));
        }
        let token = new_token()?;
        let token_sha256 = crate::model::digest::sha256_hex(token.as_bytes());
        rows.push(PrincipalRow {
            principal: id.into(),
            tenant: tenant.into(),
            token_sha256,
            operator,
            grants,
            approver: false,
            person: false,
        });
        Principals::from_rows(rows.clone()).map_err(StoreError::Refused)?;
        self.write_json_mode(PRINCIPALS_FILE, &rows, 0o600)?;
        Ok(token)
    }

    /// Adds `grants` to Principal `id` (`add`), or takes them from it; returns what it holds after.
    pub fn principal_grants(&self, id: &str, grants: &[Grant], add: bool) -> Result<Vec<Grant>, StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<PrincipalRow> = self.read_json(PRINCIPALS_FILE)?.unwrap_or_default();
        let Some(row) = rows.iter_mut().find(|r| r.principal == id) else {
            return Err(StoreError::Refused(format!("no principal {id}; `hcpx principal list` shows them")));
        };
        for g in grants {
            if add {
                crate::model::grants::add_grant(&mut row.grants, g);
            } else {
                crate::model::grants::remove_grant(&mut row.grants, g)
                    .map_err(|e| StoreError::Refused(e.0))?;
            }
        }
        let now = row.grants.clone();
        Principals::from_rows(rows.clone()).map_err(StoreError::Refused)?;
        self.write_json_mode(PRINCIPALS_FILE, &rows, 0o600)?;
        Ok(now)
    }

    /// Makes Principal `id` an approver or not (`approver`), and marks its client as a person's own or not
    /// (`person`).
    pub fn principal_roles(&self, id: &str, approver: bool, person: bool) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<PrincipalRow> = self.read_json(PRINCIPALS_FILE)?.unwrap_or_default();
        let Some(row) = rows.iter_mut().find(|r| r.principal == id) else {
            return Err(StoreError::Refused(format!("no principal {id}; `hcpx principal list` shows them")));
        };
        (row.approver, row.person) = (approver, person);
        self.write_json_mode(PRINCIPALS_FILE, &rows, 0o600)
    }

    /// Removes a Principal; its token stops working at once.
    pub fn principal_rm(&self, id: &str) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<PrincipalRow> = self.read_json(PRINCIPALS_FILE)?.unwrap_or_default();
        let before = rows.len();
        rows.retain(|r| r.principal != id);
        if rows.len() == before {
            return Err(StoreError::Refused(format!("no principal {id}; `hcpx principal list` shows them")));
        }
        self.write_json_mode(PRINCIPALS_FILE, &rows, 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(p: &str, tenant: &str, token: &str) -> PrincipalRow {
        PrincipalRow {
            principal: p.into(),
            tenant: tenant.into(),
            token_sha256: crate::model::digest::sha256_hex(token.as_bytes()),
            operator: false,
            grants: vec![],
            approver: false,
            person: false,
        }
    }

    #[test]
    fn a_token_finds_its_row_and_no_other() {
        let p = Principals::from_rows(vec![row("alice", "acme", "t-a"), row("bob", "beta", "t-b")]).unwrap();
        let a = p.authenticate("t-a", Invoker::Http).unwrap();
        assert_eq!((a.principal.id.as_str(), a.principal.tenant.as_str()), ("alice", "acme"));
        assert_eq!(p.authenticate("t-b", Invoker::Http).unwrap().principal.id, "bob");
        assert!(p.authenticate("t-c", Invoker::Http).is_none());
        assert!(p.authenticate("", Invoker::Http).is_none());
    }

    #[test]
    fn bad_rows_are_refused_naming_the_row() {
        let mut bad = row("alice", "acme", "x");
        bad.token_sha256 = "ABC".into();
        assert!(Principals::from_rows(vec![bad]).unwrap_err().contains("row 1"));
        assert!(Principals::from_rows(vec![row("a", "../x", "t")]).unwrap_err().contains("tenant"));
        let twice = Principals::from_rows(vec![row("a", "t", "1"), row("a", "t", "2")]).unwrap_err();
        assert!(twice.contains("twice"), "{twice}");
        let shared = Principals::from_rows(vec![row("a", "t", "1"), row("b", "t", "1")]).unwrap_err();
        assert!(shared.contains("two principals"), "{shared}");
    }
}
