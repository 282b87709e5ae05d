//! Pack signatures in cosign's own format, so `cosign verify --key` accepts what `hcpx publish --sign` made:
//! the "simple signing" payload naming the manifest digest, signed with ECDSA P-256 over SHA-256 (an ASN.1
//! DER signature, base64 in the `dev.cosignproject.cosign/signature` annotation), stored as the image
//! `sha256-<hex>.sig` beside the pack. Keys are PEM: PKCS#8 or SEC1 private keys, SPKI public keys.

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding};
use serde::{Deserialize, Serialize};

use super::DistError;
use crate::model::digest::sha256_hex;

/// The layer media type of a cosign simple-signing payload.
pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the base64 signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The payload's `critical.type`.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";
/// The longest signature payload read.
pub const MAX_PAYLOAD_BYTES: u64 = 64 * 1024;

/// The simple-signing payload (the containers/image format cosign signs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payload {
    pub critical: Critical,
    #[serde(default)]
    pub optional: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Critical {
    pub identity: Identity,
    pub image: Image,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    #[serde(rename = "docker-reference")]
    pub docker_reference: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    #[serde(rename = "docker-manifest-digest")]
    pub docker_manifest_digest: String,
}

/// What a signature claims beside the manifest digest, in the payload's `optional` annotations (strings, as
/// `cosign sign -a tag=1.0` writes them): the tag the build was published under, so a registry cannot serve it
/// under another, and when it was signed, so an update can tell an older build from a newer one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    pub tag: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub signed_at: Option<u64>,
}

/// The annotation naming the tag.
pub const TAG_CLAIM: &str = "tag";
/// The annotation naming when the build was signed (milliseconds since the Unix epoch).
pub const SIGNED_AT_CLAIM: &str = "signed_at";

/// The payload bytes that sign manifest `digest` of repository `name` (`host/repo`), with `claims`.
pub fn payload(name: &str, digest: &str, claims: &Claims) -> Result<Vec<u8>, DistError> {
    let mut optional = serde_json::Map::new();
    if let Some(t) = &claims.tag {
        optional.insert(TAG_CLAIM.into(), serde_json::Value::String(t.clone()));
    }
    if let Some(at) = claims.signed_at {
        optional.insert(SIGNED_AT_CLAIM.into(), serde_json::Value::String(at.to_string()));
    }
    let p = Payload {
        critical: Critical {
            identity: Identity { docker_reference: name.to_string() },
            image: Image { docker_manifest_digest: digest.to_string() },
            kind: SIGNATURE_TYPE.to_string(),
        },
        optional: (!optional.is_empty()).then_some(serde_json::Value::Object(optional)),
    };
    serde_json::to_vec(&p).map_err(|e| DistError::Signature(e.to_string()))
}

/// The claims of a payload (none when it is not one, or names none).
pub fn claims_of(payload: &[u8]) -> Claims {
    let optional = serde_json::from_slice::<Payload>(payload).ok().and_then(|p| p.optional);
    let text =
        |k: &str| optional.as_ref().and_then(|o| o.get(k)).and_then(|v| v.as_str()).map(str::to_string);
    Claims { tag: text(TAG_CLAIM), signed_at: text(SIGNED_AT_CLAIM).and_then(|s| s.parse().ok()) }
}

/// A private signing key read from PEM.
pub struct PrivateKey(SigningKey);

impl PrivateKey {
    /// Reads a PKCS#8 (`BEGIN PRIVATE KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`) P-256 key.
    pub fn from_pem(pem: &str) -> Result<PrivateKey, DistError> {
        let secret = p256::SecretKey::from_pkcs8_pem(pem)
            .or_else(|_| p256::SecretKey::from_sec1_pem(pem))
            .map_err(|_| {
                DistError::Key(
                    "the key is not an unencrypted P-256 private key in PEM (PKCS#8 or SEC1); make one with hcpx key generate".into(),
                )
            })?;
        Ok(PrivateKey(SigningKey::from(&secret)))
    }

    /// A new random key.
    pub fn generate() -> Result<PrivateKey, DistError> {
        for _ in 0..8 {
            let bytes = crate::store::random_bytes::<32>().map_err(|e| DistError::Key(e.to_string()))?;
            if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
                return Ok(PrivateKey(SigningKey::from(&secret)));
            }
        }
        Err(DistError::Key("could not draw a valid P-256 key from the random source".into()))
    }

    /// The key as PKCS#8 PEM.
    pub fn to_pem(&self) -> Result<String, DistError> {
        let secret = p256::SecretKey::from(self.0.as_nonzero_scalar());
        secret.to_pkcs8_pem(LineEnding::LF).map(|z| z.to_string()).map_err(|e| DistError::Key(e.to_string()))
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(*self.0.verifying_key())
    }

    /// The base64 DER signature of `payload`.
    pub fn sign(&self, payload: &[u8]) -> String {
        let sig: Signature = self.0.sign(payload);
        let der: DerSignature = sig.to_der();
        base64::engine::general_purpose::STANDARD.encode(der.as_bytes())
    }
}

/// A public verifying key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Reads an SPKI public key (`BEGIN PUBLIC KEY`), or takes the public half of a private key.
    pub fn from_pem(pem: &str) -> Result<PublicKey, DistError> {
        if let Ok(p) = p256::PublicKey::from_public_key_pem(pem) {
            return Ok(PublicKey(VerifyingKey::from(&p)));
        }
        PrivateKey::from_pem(pem)
            .map(|k| k.public())
            .map_err(|_| DistError::Key("the key is not a P-256 public key in PEM (BEGIN PUBLIC KEY)".into()))
    }

    /// The key as SPKI PEM (what `cosign verify --key` reads).
    pub fn to_pem(&self) -> Result<String, DistError> {
        p256::PublicKey::from(&self.0)
            .to_public_key_pem(LineEnding::LF)
            .map_err(|e| DistError::Key(e.to_string()))
    }

    /// `sha256:<hex>` of the key's SPKI DER: how a signer is named in the store and the lock file.
    pub fn fingerprint(&self) -> String {
        let der = p256::PublicKey::from(&self.0)
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default();
        format!("sha256:{}", sha256_hex(&der))
    }

    /// Whether `signature_b64` (base64 DER, or raw r||s) signs `payload` with this key.
    pub fn verifies(&self, payload: &[u8], signature_b64: &str) -> bool {
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(signature_b64.trim()) else {
            return false;
        };
        let sig = Signature::from_der(&raw).or_else(|_| Signature::from_slice(&raw));
        sig.is_ok_and(|s| self.0.verify(payload, &s).is_ok())
    }
}

/// Checks a payload against the manifest it must sign: the type, and the exact digest.
pub fn payload_names(payload: &[u8], digest: &str) -> bool {
    serde_json::from_slice::<Payload>(payload)
        .is_ok_and(|p| p.critical.kind == SIGNATURE_TYPE && p.critical.image.docker_manifest_digest == digest)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_signature_verifies_with_its_key_only_and_over_its_payload_only() {
        let k = PrivateKey::generate().unwrap();
        let other = PrivateKey::generate().unwrap();
        let d = format!("sha256:{}", "b".repeat(64));
        let claims = Claims { tag: Some("1.0".into()), signed_at: Some(1_700_000_000_000) };
        let p = payload("127.0.0.1:5000/ledger", &d, &claims).unwrap();
        assert_eq!(claims_of(&p), claims);
        let s = k.sign(&p);
        assert!(k.public().verifies(&p, &s));
        assert!(!other.public().verifies(&p, &s));
        let p2 = payload("127.0.0.1:5000/ledger", &format!("sha256:{}", "c".repeat(64)), &claims).unwrap();
        assert!(!k.public().verifies(&p2, &s));
        assert!(payload_names(&p, &d) && !payload_names(&p2, &d));
        // PEM round trips, the public half read from the private key too.
        let again = PrivateKey::from_pem(&k.to_pem().unwrap()).unwrap();
        assert_eq!(again.public(), k.public());
        assert_eq!(PublicKey::from_pem(&k.public().to_pem().unwrap()).unwrap(), k.public());
        assert_eq!(
            PublicKey::from_pem(&k.to_pem().unwrap()).unwrap().fingerprint(),
            k.public().fingerprint()
        );
        assert!(
            PrivateKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err()
        );
    }
}
