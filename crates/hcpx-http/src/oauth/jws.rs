//! A JWT access token as JWS compact serialization, parsed strictly and verified with ring (RFC 7515, 7518,
//! 8037): RS256/384/512, PS256/384/512, ES256, ES384 and EdDSA (Ed25519). `none` and every HMAC algorithm are
//! refused before any key is looked at, and a key signs only for the algorithm its JWK allows: its `kty`/`crv`
//! always, its `alg` where it has one. Nothing here panics on input: a hostile token is a [`Refused`].

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::signature as sig;
use serde_json::{Map, Value};

/// The longest token read at all (a JWT access token is a few hundred bytes to a few KiB).
pub const MAX_TOKEN: usize = 16 * 1024;

/// Why a token is not taken; the message names the value and is safe to show the caller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

fn refused(m: impl Into<String>) -> Refused {
    Refused(m.into())
}

/// A signature algorithm hcpx verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
    EdDsa,
}

impl Alg {
    /// The algorithm named `name`, or why it is refused (`none`, HMAC, anything unknown).
    pub fn parse(name: &str) -> Result<Alg, Refused> {
        Ok(match name {
            "RS256" => Alg::Rs256,
            "RS384" => Alg::Rs384,
            "RS512" => Alg::Rs512,
            "PS256" => Alg::Ps256,
            "PS384" => Alg::Ps384,
            "PS512" => Alg::Ps512,
            "ES256" => Alg::Es256,
            "ES384" => Alg::Es384,
            "EdDSA" => Alg::EdDsa,
            "none" | "None" | "NONE" => {
                return Err(refused("the token is unsigned (alg none); only a token its issuer signed is taken"))
            }
            h if h.starts_with("HS") => {
                return Err(refused(format!(
                    "the token is signed with {h}, a shared secret; only an issuer's public-key signature (RS, PS, ES, EdDSA) is taken"
                )))
            }
            other => {
                return Err(refused(format!(
                    "the token's alg {:?} is not one hcpx verifies (RS256/384/512, PS256/384/512, ES256, ES384, EdDSA)",
                    clip(other)
                )))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Rs384 => "RS384",
            Alg::Rs512 => "RS512",
            Alg::Ps256 => "PS256",
            Alg::Ps384 => "PS384",
            Alg::Ps512 => "PS512",
            Alg::Es256 => "ES256",
            Alg::Es384 => "ES384",
            Alg::EdDsa => "EdDSA",
        }
    }
}

/// A public key of an issuer's JWKS that hcpx can verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    pub kid: Option<String>,
    /// The JWK's own `alg`, which then is the only algorithm it verifies.
    pub alg: Option<Alg>,
    key: KeyMaterial,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyMaterial {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// The uncompressed point, 0x04 ‖ x ‖ y.
    P256(Vec<u8>),
    P384(Vec<u8>),
    Ed25519(Vec<u8>),
}

fn b64(field: &str, v: Option<&Value>) -> Result<Vec<u8>, String> {
    let s = v.and_then(Value::as_str).ok_or_else(|| format!("no {field}"))?;
    URL_SAFE_NO_PAD.decode(s).map_err(|_| format!("{field} is not base64url"))
}

impl Jwk {
    /// The verifying key a JWK describes; `Ok(None)` for a key hcpx does not verify with (an encryption key, a
    /// symmetric one, another curve), which a JWKS may well hold beside its signing keys.
    pub fn from_json(v: &Value) -> Result<Option<Jwk>, String> {
        let Some(o) = v.as_object() else { return Err("a key that is not a JSON object".into()) };
        if o.get("use").and_then(Value::as_str).is_some_and(|u| u != "sig") {
            return Ok(None);
        }
        if let Some(ops) = o.get("key_ops").and_then(Value::as_array) {
            if !ops.iter().any(|op| op.as_str() == Some("verify")) {
                return Ok(None);
            }
        }
        let alg = match o.get("alg").and_then(Value::as_str) {
            Some(a) => match Alg::parse(a) {
                Ok(a) => Some(a),
                Err(_) => return Ok(None),
            },
            None => None,
        };
        let kid = o.get("kid").and_then(Value::as_str).map(String::from);
        let key = match (o.get("kty").and_then(Value::as_str), o.get("crv").and_then(Value::as_str)) {
            (Some("RSA"), _) => {
                let n = b64("n", o.get("n"))?;
                let e = b64("e", o.get("e"))?;
                KeyMaterial::Rsa { n, e }
            }
            (Some("EC"), Some(crv @ ("P-256" | "P-384"))) => {
                let (x, y) = (b64("x", o.get("x"))?, b64("y", o.get("y"))?);
                let len = if crv == "P-256" { 32 } else { 48 };
                if x.len() != len || y.len() != len {
                    return Err(format!("an {crv} key whose coordinates are not {len} bytes"));
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                if crv == "P-256" {
                    KeyMaterial::P256(point)
                } else {
                    KeyMaterial::P384(point)
                }
            }
            (Some("OKP"), Some("Ed25519")) => {
                let x = b64("x", o.get("x"))?;
                if x.len() != 32 {
                    return Err("an Ed25519 key that is not 32 bytes".into());
                }
                KeyMaterial::Ed25519(x)
            }
            _ => return Ok(None),
        };
        let jwk = Jwk { kid, alg, key };
        // A JWK whose own alg its key type cannot do is no key at all.
        Ok(jwk.alg.is_none_or(|a| jwk.fits(a)).then_some(jwk))
    }

    /// Whether this key's type and curve are the ones `alg` signs with.
    fn fits(&self, alg: Alg) -> bool {
        matches!(
            (alg, &self.key),
            (
                Alg::Rs256 | Alg::Rs384 | Alg::Rs512 | Alg::Ps256 | Alg::Ps384 | Alg::Ps512,
                KeyMaterial::Rsa { .. }
            ) | (Alg::Es256, KeyMaterial::P256(_))
                | (Alg::Es384, KeyMaterial::P384(_))
                | (Alg::EdDsa, KeyMaterial::Ed25519(_))
        )
    }

    /// Whether this key may verify a token signed with `alg`: its type always, its own `alg` where it has one.
    pub fn allows(&self, alg: Alg) -> bool {
        self.fits(alg) && self.alg.is_none_or(|a| a == alg)
    }

    /// Verifies `signature` over `message` as `alg` (which [`Jwk::allows`] must have passed).
    pub fn verify(&self, alg: Alg, message: &[u8], signature: &[u8]) -> Result<(), Refused> {
        let bad = || refused("the token's signature does not verify with its issuer's key");
        if !self.allows(alg) {
            return Err(refused(format!(
                "the token says {} but its key (kid {}) is for {}; the algorithm is pinned to the issuer's key set",
                alg.name(),
                self.kid.as_deref().unwrap_or("none"),
                self.alg.map_or_else(|| self.kind().to_string(), |a| a.name().to_string())
            )));
        }
        match &self.key {
            KeyMaterial::Rsa { n, e } => {
                let params: &sig::RsaParameters = match alg {
                    Alg::Rs256 => &sig::RSA_PKCS1_2048_8192_SHA256,
                    Alg::Rs384 => &sig::RSA_PKCS1_2048_8192_SHA384,
                    Alg::Rs512 => &sig::RSA_PKCS1_2048_8192_SHA512,
                    Alg::Ps256 => &sig::RSA_PSS_2048_8192_SHA256,
                    Alg::Ps384 => &sig::RSA_PSS_2048_8192_SHA384,
                    _ => &sig::RSA_PSS_2048_8192_SHA512,
                };
                sig::RsaPublicKeyComponents { n, e }.verify(params, message, signature).map_err(|_| bad())
            }
            KeyMaterial::P256(point) => sig::UnparsedPublicKey::new(&sig::ECDSA_P256_SHA256_FIXED, point)
                .verify(message, signature)
                .map_err(|_| bad()),
            KeyMaterial::P384(point) => sig::UnparsedPublicKey::new(&sig::ECDSA_P384_SHA384_FIXED, point)
                .verify(message, signature)
                .map_err(|_| bad()),
            KeyMaterial::Ed25519(x) => {
                sig::UnparsedPublicKey::new(&sig::ED25519, x).verify(message, signature).map_err(|_| bad())
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self.key {
            KeyMaterial::Rsa { .. } => "RSA",
            KeyMaterial::P256(_) => "EC P-256",
            KeyMaterial::P384(_) => "EC P-384",
            KeyMaterial::Ed25519(_) => "Ed25519",
        }
    }
}

/// The keys of a JWKS document hcpx can verify with (others skipped), or why the document is not one.
pub fn parse_jwks(body: &[u8]) -> Result<Vec<Jwk>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("the key set is not JSON ({e})"))?;
    let keys = v.get("keys").and_then(Value::as_array).ok_or("the key set has no `keys` list")?;
    let mut out = Vec::new();
    for k in keys.iter().take(64) {
        if let Some(jwk) = Jwk::from_json(k)? {
            out.push(jwk);
        }
    }
    Ok(out)
}

/// A token split and decoded, not yet verified.
#[derive(Debug)]
pub struct Token<'a> {
    pub alg: Alg,
    pub kid: Option<String>,
    pub claims: Map<String, Value>,
    /// `header.payload`, what the signature covers.
    pub signing_input: &'a [u8],
    pub signature: Vec<u8>,
}

/// Whether `token` has the shape of a JWS compact token (three dot-separated parts) rather than a static
/// bearer token, which never holds a dot.
pub fn looks_like_jwt(token: &str) -> bool {
    token.bytes().filter(|b| *b == b'.').count() == 2
}

/// Splits and decodes `token`; refuses anything but a signed JWT with an algorithm hcpx verifies.
pub fn parse(token: &str) -> Result<Token<'_>, Refused> {
    if token.len() > MAX_TOKEN {
        return Err(refused(format!("the token is longer than {MAX_TOKEN} bytes")));
    }
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(refused("the token is not a JWT (three base64url parts joined by dots)"));
    };
    let decode = |what: &str, part: &str| {
        URL_SAFE_NO_PAD.decode(part).map_err(|_| refused(format!("the token's {what} is not base64url")))
    };
    let header: Map<String, Value> = serde_json::from_slice(&decode("header", h)?)
        .map_err(|_| refused("the token's header is not a JSON object"))?;
    let alg = Alg::parse(header.get("alg").and_then(Value::as_str).unwrap_or("(none given)"))?;
    if header.contains_key("crit") {
        return Err(refused("the token's header has `crit` extensions, which hcpx does not understand"));
    }
    if let Some(typ) = header.get("typ") {
        let t = typ.as_str().unwrap_or_default().to_ascii_lowercase();
        if !matches!(t.as_str(), "at+jwt" | "application/at+jwt" | "jwt") {
            return Err(refused(format!(
                "the token's typ is {:?}, not an access token (at+jwt)",
                clip(typ.as_str().unwrap_or("(not a string)"))
            )));
        }
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(k)) => Some(k.clone()),
        Some(_) => return Err(refused("the token's kid is not a string")),
    };
    let claims: Map<String, Value> = serde_json::from_slice(&decode("payload", p)?)
        .map_err(|_| refused("the token's payload is not a JSON object"))?;
    let signature = decode("signature", s)?;
    if signature.is_empty() {
        return Err(refused("the token has no signature"));
    }
    let signing_input = &token.as_bytes()[..h.len() + 1 + p.len()];
    Ok(Token { alg, kid, claims, signing_input, signature })
}

/// How far clocks may disagree: `exp`, `nbf` and `iat` are read with this much slack.
pub const LEEWAY_SECS: i64 = 60;

/// A NumericDate claim (RFC 7519 §2): a JSON number of seconds, fractions dropped.
fn date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, Refused> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(n)) => {
            let v = n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.is_finite() && f.abs() < 1e15).map(|f| f.floor() as i64));
            v.map(Some).ok_or_else(|| refused(format!("the token's {name} is not a time in seconds")))
        }
        Some(_) => Err(refused(format!("the token's {name} is not a number of seconds"))),
    }
}

/// Checks the registered claims of a verified token at `now` (Unix seconds): `iss` exactly `issuer`, `aud` (a
/// string or a list) holding `audience`, `exp` present and not past, `nbf` and `iat` not in the future, each
/// with [`LEEWAY_SECS`]. Returns `exp`.
pub fn check_claims(
    claims: &Map<String, Value>,
    issuer: &str,
    audience: &str,
    now: i64,
) -> Result<i64, Refused> {
    if claims.get("iss").and_then(Value::as_str) != Some(issuer) {
        return Err(refused(format!("the token's iss is not {issuer}")));
    }
    let same = |a: &str| a == audience || a.trim_end_matches('/') == audience.trim_end_matches('/');
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => same(a),
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).any(same),
        _ => false,
    };
    if !aud_ok {
        let got = match claims.get("aud") {
            Some(Value::String(a)) => clip(a),
            Some(Value::Array(l)) => clip(&l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")),
            _ => "(none)".into(),
        };
        return Err(refused(format!(
            "the token is for audience {got}, not this server ({audience}); ask the issuer for a token with resource={audience}"
        )));
    }
    let Some(exp) = date(claims, "exp")? else {
        return Err(refused("the token has no exp; only a token that expires is taken"));
    };
    if now > exp.saturating_add(LEEWAY_SECS) {
        return Err(refused(format!("the token expired {}s ago; get a new one from its issuer", now - exp)));
    }
    if let Some(nbf) = date(claims, "nbf")? {
        if nbf > now.saturating_add(LEEWAY_SECS) {
            return Err(refused(format!("the token is not valid for another {}s (nbf)", nbf - now)));
        }
    }
    if let Some(iat) = date(claims, "iat")? {
        if iat > now.saturating_add(LEEWAY_SECS) {
            return Err(refused(format!("the token says it was issued {}s in the future (iat)", iat - now)));
        }
    }
    Ok(exp)
}

fn clip(s: &str) -> String {
    s.chars().take(80).filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests;
