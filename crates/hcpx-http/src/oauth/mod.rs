//! The OAuth 2.1 resource server (docs/hosting.md, Connecting an identity provider): a JWT access token of an
//! issuer named in `issuers.json` is verified here (its signature against the issuer's cached JWKS, then `iss`,
//! `aud` = this server's resource, `exp`, `nbf`, `iat`) and its claims become an ordinary [`Authenticated`]
//! Principal. The protected resource metadata (RFC 9728) and the `insufficient_scope` answers live beside it.

pub mod jwks;
pub mod jws;
pub(crate) mod metadata;
pub(crate) mod scope;

use std::time::{SystemTime, UNIX_EPOCH};

use crate::model::Invoker;
use crate::store::issuers::Issuers;
use crate::store::principals::Authenticated;

/// Why a bearer JWT authenticates no one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The token is not taken (401, `error="invalid_token"`); the message names why and the fix.
    Invalid(String),
    /// Its issuer's keys cannot be had now (503, retry).
    Unavailable(String),
}

/// Verifies JWT access tokens against the issuers' cached keys.
#[derive(Default)]
pub struct Verifier {
    pub keys: jwks::KeyCache,
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Verifier {
    /// The Principal `token` names, reaching the runtime through `invoker`, or why there is none.
    pub async fn authenticate(
        &self,
        token: &str,
        issuers: &Issuers,
        invoker: Invoker,
    ) -> Result<Authenticated, Rejection> {
        let invalid = |m: String| Rejection::Invalid(format!("denied: {m}"));
        let tok = jws::parse(token).map_err(|e| invalid(e.0))?;
        let iss = tok.claims.get("iss").and_then(serde_json::Value::as_str).unwrap_or_default();
        let Some(issuer) = issuers.find(iss) else {
            let shown: String = iss.chars().take(120).filter(|c| !c.is_control()).collect();
            return Err(invalid(format!(
                "the token's issuer {shown:?} is not one this server takes; its operator adds it with `hcpx auth issuer add URL --audience RESOURCE`"
            )));
        };
        let set = self.keys.keys(&issuer.issuer_url, &issuer.row.issuer, tok.kid.as_deref()).await.map_err(
            |e| match e {
                jwks::KeyError::Unknown(m) => invalid(m),
                jwks::KeyError::Unavailable(m) => Rejection::Unavailable(format!("unavailable: {m}")),
            },
        )?;
        let key = set.find(tok.kid.as_deref()).ok_or_else(|| {
            invalid(format!("no key for the token in the key set of issuer {}", issuer.row.issuer))
        })?;
        key.verify(tok.alg, tok.signing_input, &tok.signature).map_err(|e| invalid(e.0))?;
        let exp = jws::check_claims(&tok.claims, &issuer.row.issuer, &issuer.row.audience, now())
            .map_err(|e| invalid(e.0))?;
        issuer.principal(&tok.claims, exp, sha256(token.as_bytes()), invoker).map_err(|e| invalid(e.0))
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

/// Whether a Principal authenticated by an issuer is still good at this moment: not past its token's `exp`,
/// and mapped again from its claims by the issuer's row as it is now (removed, or its tenant or scopes changed).
pub fn still_good(issuers: Option<&Issuers>, who: &Authenticated) -> Option<Authenticated> {
    let crate::store::principals::Via::Issuer { issuer, expires_at, claims } = &who.via else {
        return None;
    };
    if now() > expires_at.saturating_add(jws::LEEWAY_SECS) {
        return None;
    }
    issuers?.find(issuer)?.principal(claims, *expires_at, who.token_sha256, who.principal.invoker).ok()
}
