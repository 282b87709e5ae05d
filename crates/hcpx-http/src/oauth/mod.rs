//! The OAuth 2.1 resource server (docs/hosting.md, Connecting an identity provider): a JWT access token of an
//! issuer named in `issuers.json` is verified here (its signature against the issuer's cached JWKS, then `iss`,
//! `aud` = this server's resource, `exp`, `nbf`, `iat`) and its claims become an ordinary [`Authenticated`]
//! Principal. The protected resource metadata (RFC 9728) and the `insufficient_scope` answers live beside it.

pub mod jwks;
pub mod jws;
pub(crate) mod metadata;
pub(crate) mod scope;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
    /// Tokens verified lately, by SHA-256: a client sends the same token with each call, and its signature
    /// need not be checked again while the issuers' document and the issuer's key set it was checked against
    /// are the very ones in use (each entry holds them, so a changed one is never mistaken for them) and it has
    /// not expired.
    verified: Mutex<HashMap<[u8; 32], Verified>>,
}

/// A token verified once, with what it was verified against.
struct Verified {
    who: Authenticated,
    issuers: Arc<Issuers>,
    keys: Arc<jwks::KeySet>,
}

/// The most tokens remembered; past it the memory starts over.
const VERIFIED_MAX: usize = 4096;

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Verifier {
    /// The Principal `token` names, reaching the runtime through `invoker`, or why there is none.
    pub async fn authenticate(
        &self,
        token: &str,
        issuers: &Arc<Issuers>,
        invoker: Invoker,
    ) -> Result<Authenticated, Rejection> {
        let digest = sha256(token.as_bytes());
        if let Some(who) = self.remembered(&digest, issuers) {
            return Ok(who);
        }
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
        let who = issuer.principal(&tok.claims, exp, digest, invoker).map_err(|e| invalid(e.0))?;
        let mut memory = self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if memory.len() >= VERIFIED_MAX {
            memory.clear();
        }
        memory.insert(digest, Verified { who: who.clone(), issuers: issuers.clone(), keys: set });
        Ok(who)
    }

    /// The Principal of a token verified before, while nothing it was verified against has changed and it
    /// has not expired.
    fn remembered(&self, digest: &[u8; 32], issuers: &Arc<Issuers>) -> Option<Authenticated> {
        let mut memory = self.verified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let v = memory.get(digest)?;
        let crate::store::principals::Via::Issuer { issuer, expires_at, .. } = &v.who.via else {
            return None;
        };
        let current = self.keys.current(issuer);
        let same = Arc::ptr_eq(&v.issuers, issuers) && current.is_some_and(|k| Arc::ptr_eq(&k, &v.keys));
        if same && now() <= expires_at.saturating_add(jws::LEEWAY_SECS) {
            return Some(v.who.clone());
        }
        memory.remove(digest);
        None
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
