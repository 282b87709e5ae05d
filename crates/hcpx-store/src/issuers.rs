//! `issuers.json`: the OAuth 2.1 authorization servers whose JWT access tokens a served runtime accepts
//! (docs/hosting.md, Connecting an identity provider), and how each token's claims become a Principal: which
//! claim names it, which names its tenant (and the tenants the issuer may speak for), which scopes give which
//! grants, and which make it an operator, an approver or a person's client. A store document like
//! `principals.json`, so the file and PostgreSQL stores both carry it, cached, and `store export|import` move it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::principals::{Authenticated, Via};
use super::{Store, StoreError};
use crate::model::grants::{Grant, Grants};
use crate::model::naming::is_arg_name;
use crate::model::{Invoker, Principal};

/// The file, relative to the store.
pub const ISSUERS_FILE: &str = "issuers.json";

/// Longest principal id a token's claim may give.
pub const MAX_PRINCIPAL_CLAIM: usize = 128;

/// One row of `issuers.json` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssuerRow {
    /// The issuer identifier, an https URL; a token's `iss` must be exactly this. Its keys are found through
    /// its `/.well-known/oauth-authorization-server` (else `/.well-known/openid-configuration`) `jwks_uri`.
    pub issuer: String,
    /// The resource this server is to the issuer (RFC 8707), e.g. `https://hcp.example.com/mcp`: a token's
    /// `aud` must contain it, and the protected resource metadata (RFC 9728) names it.
    pub audience: String,
    /// The claim whose value is the Principal's id (`sub` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal_claim: Option<String>,
    /// The one tenant every Principal of this issuer belongs to; or give `tenant_claim` and `tenants`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The claim whose value names the Principal's tenant; it must be one of `tenants`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant_claim: Option<String>,
    /// The tenants this issuer may speak for (with `tenant_claim`): a token naming another is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenants: Vec<String>,
    /// What each scope gives: a token holds the grants of every scope it carries (`scope`, or `scp`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, Vec<Grant>>,
    /// The scope that makes the Principal an operator (`GET /metrics`, `/v1/doctor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_scope: Option<String>,
    /// The scope that makes the Principal an approver of its tenant's pending approvals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver_scope: Option<String>,
    /// The scope that marks the Principal's MCP client as a person's own (counts only with `approver_scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_scope: Option<String>,
}

/// An absolute http(s) URL without userinfo, query or fragment: what an issuer or an audience may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    pub https: bool,
    /// The host as written (a DNS name, an IPv4 address, or `[IPv6]`), lower-cased.
    pub host: String,
    pub port: u16,
    /// The path, `""` or starting with `/`, never ending in `/` unless it is `/`.
    pub path: String,
}

impl HttpUrl {
    /// Parses `text`, refusing what a token's `iss` or `aud` could not match plainly.
    pub fn parse(text: &str) -> Result<HttpUrl, String> {
        let (https, rest) = if let Some(r) = text.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = text.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(format!("{text:?} is not an http(s) URL; write it as https://HOST[:PORT][/PATH]"));
        };
        if text.contains(['?', '#']) || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("{text:?} has a query, a fragment or a space; give the bare URL"));
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            return Err(format!("{text:?} holds a user name or password; give the bare URL"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (addr, tail) = v6.split_once(']').ok_or_else(|| format!("{text:?}: unclosed `[`"))?;
            if addr.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!("{text:?}: {addr:?} is not an IPv6 address"));
            }
            (format!("[{addr}]"), tail.strip_prefix(':'))
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        let port = match port {
            Some(p) => {
                p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("{text:?}: bad port {p:?}"))?
            }
            None if https => 443,
            None => 80,
        };
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && (host.starts_with('[')
                || host.split('.').all(|l| {
                    !l.is_empty() && l.len() <= 63 && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                }));
        if !host_ok {
            return Err(format!("{text:?}: {host:?} is not a host name or address"));
        }
        if path.split('/').any(|s| s == "." || s == "..") {
            return Err(format!("{text:?}: its path has `.` or `..`; give it plainly"));
        }
        Ok(HttpUrl { https, host: host.to_ascii_lowercase(), port, path: path.to_string() })
    }

    /// Whether the host is a loopback name or address (plain http is taken for these only).
    pub fn loopback(&self) -> bool {
        self.host == "localhost" || self.host == "[::1]" || self.host.starts_with("127.")
    }

    /// `scheme://host[:port]`, the port left out where it is the scheme's.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            format!("{scheme}://{}", self.host)
        } else {
            format!("{scheme}://{}:{}", self.host, self.port)
        }
    }

    /// The path without its trailing `/` (`""` for the root).
    pub fn trimmed_path(&self) -> &str {
        self.path.trim_end_matches('/')
    }
}

/// One issuer, checked.
#[derive(Debug, Clone)]
pub struct Issuer {
    pub row: IssuerRow,
    pub issuer_url: HttpUrl,
    pub audience_url: HttpUrl,
}

/// Why a verified token's claims give no Principal: the token stands, but not here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClaimRefused(pub String);

impl Issuer {
    /// The claim naming the Principal.
    pub fn principal_claim(&self) -> &str {
        self.row.principal_claim.as_deref().unwrap_or("sub")
    }

    /// The scopes a verified token's claims carry: `scope` (space-separated), else `scp` (a list or a string).
    pub fn scopes_of(claims: &Map<String, Value>) -> BTreeSet<String> {
        let words = |s: &str| s.split(' ').filter(|w| !w.is_empty()).map(String::from).collect::<Vec<_>>();
        match claims.get("scope").or_else(|| claims.get("scp")) {
            Some(Value::String(s)) => words(s).into_iter().collect(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).flat_map(words).collect(),
            _ => BTreeSet::new(),
        }
    }

    /// The Principal a verified token's claims name (`iss`, `aud`, `exp` already checked), or why there is none.
    pub fn principal(
        &self,
        claims: &Map<String, Value>,
        expires_at: i64,
        token_sha256: [u8; 32],
        invoker: Invoker,
    ) -> Result<Authenticated, ClaimRefused> {
        let pc = self.principal_claim();
        let id = match claims.get(pc) {
            Some(Value::String(s)) if is_principal_claim(s) => s.clone(),
            Some(Value::String(s)) => {
                return Err(ClaimRefused(format!(
                    "claim {pc} is {:?}, not a principal id (1 to {MAX_PRINCIPAL_CLAIM} of letters, digits and `._@|:+-`); the operator names another claim with `--principal-claim`",
                    clip(s)
                )))
            }
            _ => {
                return Err(ClaimRefused(format!(
                    "the token has no string claim {pc} to name its principal; the operator names another with `--principal-claim`"
                )))
            }
        };
        let tenant = match (&self.row.tenant, &self.row.tenant_claim) {
            (Some(t), _) => t.clone(),
            (None, Some(tc)) => match claims.get(tc) {
                Some(Value::String(t)) if self.row.tenants.iter().any(|k| k == t) => t.clone(),
                Some(Value::String(t)) => {
                    return Err(ClaimRefused(format!(
                        "claim {tc} names tenant {:?}, which issuer {} may not speak for (it may for: {}); the operator adds it with `hcpx auth issuer add … --tenants`",
                        clip(t),
                        self.row.issuer,
                        self.row.tenants.join(", ")
                    )))
                }
                _ => {
                    return Err(ClaimRefused(format!(
                        "the token has no string claim {tc} to name its tenant; its issuer must set it"
                    )))
                }
            },
            (None, None) => {
                return Err(ClaimRefused(format!(
                    "issuer {} names no tenant; the operator sets --tenant or --tenant-claim",
                    self.row.issuer
                )))
            }
        };
        let held = Issuer::scopes_of(claims);
        let mut grants: Vec<Grant> = Vec::new();
        for (scope, given) in &self.row.scopes {
            if held.contains(scope) {
                for g in given {
                    crate::model::grants::add_grant(&mut grants, g);
                }
            }
        }
        let has = |s: &Option<String>| s.as_ref().is_some_and(|s| held.contains(s));
        let approver = has(&self.row.approver_scope);
        Ok(Authenticated {
            principal: Principal { id, tenant, grants: Grants::Only(grants), invoker },
            operator: has(&self.row.operator_scope),
            approver,
            person: approver && has(&self.row.person_scope),
            token_sha256,
            via: Via::Issuer {
                issuer: self.row.issuer.clone(),
                expires_at,
                claims: Arc::new(claims.clone()),
            },
        })
    }

    /// Every scope this issuer's tokens are read for (grants and roles), for `scopes_supported`.
    pub fn scopes_supported(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.row.scopes.keys().cloned().collect();
        for s in
            [&self.row.operator_scope, &self.row.approver_scope, &self.row.person_scope].into_iter().flatten()
        {
            out.insert(s.clone());
        }
        out
    }

    /// The scopes that would give `cap` on `pack_id`'s `verb` (empty: none does).
    pub fn scopes_giving(
        &self,
        cap: crate::model::grants::Capability,
        pack_id: &str,
        verb: &str,
    ) -> Vec<String> {
        self.row
            .scopes
            .iter()
            .filter(|(_, g)| Grants::Only((*g).clone()).allows(cap, pack_id, verb))
            .map(|(s, _)| s.clone())
            .collect()
    }
}

/// A principal id a claim may give: what audit rows and approvals can name plainly, never a path.
pub fn is_principal_claim(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_PRINCIPAL_CLAIM
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "._@|:+-".contains(c))
        && s != "."
        && s != ".."
}

fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

fn is_claim_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 64 && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.:/".contains(c))
}

fn is_scope(s: &str) -> bool {
    // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// The issuers, checked.
#[derive(Debug, Clone, Default)]
pub struct Issuers {
    list: Vec<Issuer>,
}

impl Issuers {
    /// Validates the rows of the file.
    pub fn from_rows(rows: Vec<IssuerRow>) -> Result<Issuers, String> {
        let mut seen = BTreeSet::new();
        let mut list = Vec::with_capacity(rows.len());
        for (i, r) in rows.into_iter().enumerate() {
            let at = format!("row {} ({:?})", i + 1, r.issuer);
            let issuer_url = HttpUrl::parse(&r.issuer).map_err(|e| format!("{at}: issuer {e}"))?;
            if !issuer_url.https {
                return Err(format!("{at}: the issuer must be an https URL (its keys are fetched from it)"));
            }
            let audience_url = HttpUrl::parse(&r.audience).map_err(|e| format!("{at}: audience {e}"))?;
            if !audience_url.https && !audience_url.loopback() {
                return Err(format!(
                    "{at}: the audience {:?} must be an https URL (plain http only for a loopback host)",
                    r.audience
                ));
            }
            if !seen.insert(r.issuer.clone()) {
                return Err(format!("{at}: issuer {:?} appears twice; keep one row", r.issuer));
            }
            if let Some(c) = r.principal_claim.as_deref().filter(|c| !is_claim_name(c)) {
                return Err(format!("{at}: principal_claim {c:?} is not a claim name"));
            }
            match (&r.tenant, &r.tenant_claim) {
                (Some(_), Some(_)) => {
                    return Err(format!("{at}: give tenant or tenant_claim (with tenants), not both"))
                }
                (None, None) => return Err(format!("{at}: give tenant, or tenant_claim with tenants")),
                (Some(t), None) => {
                    if !is_arg_name(t) || !r.tenants.is_empty() {
                        return Err(format!(
                            "{at}: tenant {t:?} must be letters, digits, `_` and `-`, starting with a letter (and tenants goes with tenant_claim only)"
                        ));
                    }
                }
                (None, Some(c)) => {
                    if !is_claim_name(c) {
                        return Err(format!("{at}: tenant_claim {c:?} is not a claim name"));
                    }
                    if r.tenants.is_empty() {
                        return Err(format!(
                            "{at}: tenant_claim needs the tenants the issuer may speak for (tenants)"
                        ));
                    }
                    if let Some(t) = r.tenants.iter().find(|t| !is_arg_name(t)) {
                        return Err(format!(
                            "{at}: tenant {t:?} must be letters, digits, `_` and `-`, starting with a letter"
                        ));
                    }
                }
            }
            let roles = [&r.operator_scope, &r.approver_scope, &r.person_scope];
            if let Some(s) = r.scopes.keys().chain(roles.into_iter().flatten()).find(|s| !is_scope(s)) {
                return Err(format!(
                    "{at}: {s:?} is not a scope (printable ASCII, no space, quote or backslash)"
                ));
            }
            if r.person_scope.is_some() && r.approver_scope.is_none() {
                return Err(format!("{at}: person_scope counts only with approver_scope; give both"));
            }
            list.push(Issuer { row: r, issuer_url, audience_url });
        }
        Ok(Issuers { list })
    }

    pub fn list(&self) -> &[Issuer] {
        &self.list
    }

    pub fn rows(&self) -> Vec<IssuerRow> {
        self.list.iter().map(|i| i.row.clone()).collect()
    }

    /// The issuer whose identifier is exactly `iss`.
    pub fn find(&self, iss: &str) -> Option<&Issuer> {
        self.list.iter().find(|i| i.row.issuer == iss)
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

impl Store {
    /// The issuers, read through the cache; `Ok(None)` when there is no `issuers.json`.
    pub fn issuers(&self) -> Result<Option<Arc<Issuers>>, StoreError> {
        self.read_json_cached_with(ISSUERS_FILE, Issuers::from_rows)
    }

    /// Adds an issuer (or replaces the row of the same issuer when `replace`).
    pub fn issuer_add(&self, row: IssuerRow, replace: bool) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<IssuerRow> = self.read_json(ISSUERS_FILE)?.unwrap_or_default();
        if let Some(i) = rows.iter().position(|r| r.issuer == row.issuer) {
            if !replace {
                return Err(StoreError::Refused(format!(
                    "issuer {} exists; remove it first with `hcpx auth issuer remove {}`, or add --replace",
                    row.issuer, row.issuer
                )));
            }
            rows[i] = row;
        } else {
            rows.push(row);
        }
        Issuers::from_rows(rows.clone()).map_err(StoreError::Refused)?;
        self.write_json_mode(ISSUERS_FILE, &rows, 0o600)
    }

    /// Removes an issuer; its tokens stop working at once.
    pub fn issuer_remove(&self, issuer: &str) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut rows: Vec<IssuerRow> = self.read_json(ISSUERS_FILE)?.unwrap_or_default();
        let before = rows.len();
        rows.retain(|r| r.issuer != issuer);
        if rows.len() == before {
            return Err(StoreError::Refused(format!(
                "no issuer {issuer}; `hcpx auth issuer list` shows them"
            )));
        }
        self.write_json_mode(ISSUERS_FILE, &rows, 0o600)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row() -> IssuerRow {
        IssuerRow {
            issuer: "https://idp.example.com/realms/acme".into(),
            audience: "https://hcp.example.com/mcp".into(),
            principal_claim: None,
            tenant: None,
            tenant_claim: Some("org".into()),
            tenants: vec!["acme".into()],
            scopes: BTreeMap::from([("hcp.read".into(), vec!["verb.exec.read:*".parse().unwrap()])]),
            operator_scope: Some("hcp.operator".into()),
            approver_scope: None,
            person_scope: None,
        }
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn claims_become_a_principal_of_a_listed_tenant_only() {
        let list = Issuers::from_rows(vec![row()]).unwrap();
        let i = list.find("https://idp.example.com/realms/acme").unwrap();
        let ok = i
            .principal(
                &claims(json!({"sub": "svc-1", "org": "acme", "scope": "hcp.read hcp.operator"})),
                9,
                [0; 32],
                Invoker::Http,
            )
            .unwrap();
        assert_eq!(
            (ok.principal.id.as_str(), ok.principal.tenant.as_str(), ok.operator),
            ("svc-1", "acme", true)
        );
        assert!(ok.principal.grants.allows(crate::model::grants::Capability::ExecRead, "x", "y"));
        assert!(!ok.principal.grants.allows(crate::model::grants::Capability::ExecWrite, "x", "y"));
        let other = i.principal(&claims(json!({"sub": "s", "org": "globex"})), 9, [0; 32], Invoker::Http);
        assert!(other.unwrap_err().0.contains("may not speak for"));
        let path = i.principal(&claims(json!({"sub": "../x", "org": "acme"})), 9, [0; 32], Invoker::Http);
        assert!(path.unwrap_err().0.contains("not a principal id"));
        let none = i.principal(&claims(json!({"org": "acme"})), 9, [0; 32], Invoker::Http);
        assert!(none.unwrap_err().0.contains("no string claim sub"));
    }

    #[test]
    fn bad_rows_are_refused() {
        let mut plain = row();
        plain.issuer = "http://idp.example.com".into();
        assert!(Issuers::from_rows(vec![plain]).unwrap_err().contains("https"));
        let mut both = row();
        both.tenant = Some("acme".into());
        assert!(Issuers::from_rows(vec![both]).unwrap_err().contains("not both"));
        let mut open = row();
        open.tenants.clear();
        assert!(Issuers::from_rows(vec![open]).unwrap_err().contains("tenants"));
        let mut aud = row();
        aud.audience = "http://hcp.example.com/mcp".into();
        assert!(Issuers::from_rows(vec![aud]).unwrap_err().contains("loopback"));
        let mut local = row();
        local.audience = "http://127.0.0.1:8420/mcp".into();
        assert!(Issuers::from_rows(vec![local]).is_ok());
        assert!(Issuers::from_rows(vec![row(), row()]).unwrap_err().contains("twice"));
        for bad in ["https://u:p@h/x", "https://h/x?q", "https://h:0", "https://h/../x", "ftp://h"] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
        let u = HttpUrl::parse("https://[::1]:8443/mcp/").unwrap();
        assert_eq!((u.origin().as_str(), u.trimmed_path()), ("https://[::1]:8443", "/mcp"));
    }
}
