//! Tokens signed here with ring's own keys (ES256, ES384, EdDSA; the RSA algorithms are signed by the real
//! provider in tests/integration/oauth.rs), and hostile ones: each refusal and no panic on any input.

use super::*;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair as _};
use serde_json::json;

type Sign = Box<dyn Fn(&[u8]) -> Vec<u8>>;

struct Signer {
    jwk: Value,
    sign: Sign,
}

fn es(alg: &'static sig::EcdsaSigningAlgorithm, crv: &str, kid: &str, jwk_alg: Option<&str>) -> Signer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref().to_vec();
    let half = (point.len() - 1) / 2;
    let mut jwk = json!({
        "kty": "EC", "crv": crv, "kid": kid, "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(&point[1..1 + half]), "y": URL_SAFE_NO_PAD.encode(&point[1 + half..]),
    });
    if let Some(a) = jwk_alg {
        jwk["alg"] = json!(a);
    }
    Signer { jwk, sign: Box::new(move |m| pair.sign(&SystemRandom::new(), m).unwrap().as_ref().to_vec()) }
}

fn ed(kid: &str) -> Signer {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let jwk = json!({ "kty": "OKP", "crv": "Ed25519", "kid": kid, "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()) });
    Signer { jwk, sign: Box::new(move |m| pair.sign(m).as_ref().to_vec()) }
}

fn token(header: Value, claims: Value, s: &Signer) -> String {
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = (s.sign)(input.as_bytes());
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// Parses and verifies `t` against `keys` as the server does (key by kid, then the algorithm pinned).
fn verify(t: &str, keys: &[Jwk]) -> Result<Map<String, Value>, Refused> {
    let tok = parse(t)?;
    let key = keys.iter().find(|k| k.kid == tok.kid).ok_or_else(|| Refused("unknown kid".into()))?;
    key.verify(tok.alg, tok.signing_input, &tok.signature)?;
    Ok(tok.claims)
}

const ISS: &str = "https://idp.test";
const AUD: &str = "https://hcp.test/mcp";

fn claims(now: i64) -> Value {
    json!({ "iss": ISS, "aud": AUD, "sub": "svc", "exp": now + 300, "iat": now, "scope": "hcp.read" })
}

#[test]
fn each_algorithm_verifies_with_its_own_key_only() {
    let now = 1_800_000_000;
    let signers = [
        ("ES256", es(&sig::ECDSA_P256_SHA256_FIXED_SIGNING, "P-256", "p256", Some("ES256"))),
        ("ES384", es(&sig::ECDSA_P384_SHA384_FIXED_SIGNING, "P-384", "p384", None)),
        ("EdDSA", ed("ed")),
    ];
    let keys: Vec<Jwk> = signers.iter().map(|(_, s)| Jwk::from_json(&s.jwk).unwrap().unwrap()).collect();
    for (alg, s) in &signers {
        let kid = s.jwk["kid"].as_str().unwrap();
        let t = token(json!({ "alg": alg, "kid": kid, "typ": "at+jwt" }), claims(now), s);
        let c = verify(&t, &keys).unwrap_or_else(|e| panic!("{alg}: {e}"));
        assert_eq!(check_claims(&c, ISS, AUD, now).unwrap(), now + 300);
        // The same signature claimed under another algorithm the key cannot do is refused, not tried.
        let other = if *alg == "EdDSA" { "ES256" } else { "EdDSA" };
        let swapped = t.replacen(
            &URL_SAFE_NO_PAD.encode(json!({ "alg": alg, "kid": kid, "typ": "at+jwt" }).to_string()),
            &URL_SAFE_NO_PAD.encode(json!({ "alg": other, "kid": kid, "typ": "at+jwt" }).to_string()),
            1,
        );
        let e = verify(&swapped, &keys).unwrap_err();
        assert!(e.0.contains("pinned") || e.0.contains("does not verify"), "{alg}: {e}");
        // Another key's signature under this kid does not verify.
        let forger = if *alg == "EdDSA" {
            ed("ed")
        } else {
            es(&sig::ECDSA_P256_SHA256_FIXED_SIGNING, "P-256", kid, None)
        };
        let forged = token(json!({ "alg": alg, "kid": kid }), claims(now), &forger);
        assert!(verify(&forged, &keys).is_err(), "{alg}: a forged signature verified");
    }
}

#[test]
fn a_jwks_alg_pins_the_algorithm_even_where_the_key_type_fits() {
    let s = es(&sig::ECDSA_P256_SHA256_FIXED_SIGNING, "P-256", "k", Some("ES256"));
    let mut jwk = Jwk::from_json(&s.jwk).unwrap().unwrap();
    assert!(jwk.allows(Alg::Es256));
    jwk.alg = Some(Alg::Es384);
    assert!(!jwk.allows(Alg::Es256));
    // An RSA key restricted to RS256 never verifies PS256.
    let rsa =
        Jwk::from_json(&json!({"kty": "RSA", "alg": "RS256", "n": "AQAB", "e": "AQAB"})).unwrap().unwrap();
    assert!(rsa.allows(Alg::Rs256) && !rsa.allows(Alg::Ps256) && !rsa.allows(Alg::Es256));
    // Keys hcpx does not verify with are skipped, not errors; a key whose alg its type cannot do is none.
    for skipped in [
        json!({"kty": "oct", "k": "c2VjcmV0"}),
        json!({"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"}),
        json!({"kty": "RSA", "alg": "HS256", "n": "AQAB", "e": "AQAB"}),
        json!({"kty": "RSA", "alg": "ES256", "n": "AQAB", "e": "AQAB"}),
        json!({"kty": "EC", "crv": "secp256k1", "x": "AA", "y": "AA"}),
    ] {
        assert_eq!(Jwk::from_json(&skipped).unwrap(), None, "{skipped}");
    }
}

#[test]
fn none_hmac_crit_and_other_types_are_refused_before_any_key() {
    let s = ed("ed");
    let now = 1_800_000_000;
    let cases = [
        (json!({"alg": "none"}), "unsigned"),
        (json!({"alg": "HS256", "kid": "ed"}), "shared secret"),
        (json!({"alg": "RS1"}), "not one hcpx verifies"),
        (json!({"kid": "ed"}), "not one hcpx verifies"),
        (json!({"alg": "EdDSA", "kid": "ed", "crit": ["exp"]}), "crit"),
        (json!({"alg": "EdDSA", "kid": "ed", "typ": "JOSE+JSON"}), "not an access token"),
        (json!({"alg": "EdDSA", "kid": 7}), "kid is not a string"),
    ];
    for (header, why) in cases {
        let t = token(header.clone(), claims(now), &s);
        let e = parse(&t).unwrap_err();
        assert!(e.0.contains(why), "{header}: {e}");
    }
    // alg none with an empty signature part.
    let bare = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "EdDSA", "kid": "ed"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims(now).to_string())
    );
    assert!(parse(&bare).unwrap_err().0.contains("no signature"));
}

#[test]
fn claims_are_checked_with_a_bounded_leeway() {
    let now = 1_800_000_000;
    let c = |v: Value| v.as_object().cloned().unwrap();
    let ok = c(claims(now));
    assert!(check_claims(&ok, ISS, AUD, now).is_ok());
    assert!(check_claims(&ok, "https://other", AUD, now).unwrap_err().0.contains("iss"));
    let mut v = claims(now);
    v["aud"] = json!(["https://a", AUD]);
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).is_ok());
    v["aud"] = json!("https://other.test/mcp");
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).unwrap_err().0.contains("audience"));
    v["aud"] = json!(AUD);
    v["exp"] = json!(now - LEEWAY_SECS - 1);
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).unwrap_err().0.contains("expired"));
    v["exp"] = json!(now - LEEWAY_SECS + 5);
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).is_ok(), "within the leeway");
    v.as_object_mut().unwrap().remove("exp");
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).unwrap_err().0.contains("no exp"));
    v["exp"] = json!("soon");
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).is_err());
    v["exp"] = json!(now + 100);
    v["nbf"] = json!(now + LEEWAY_SECS + 10);
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).unwrap_err().0.contains("nbf"));
    v["nbf"] = json!(now);
    v["iat"] = json!(now + 3600);
    assert!(check_claims(&c(v.clone()), ISS, AUD, now).unwrap_err().0.contains("iat"));
    v["iat"] = json!(1e300);
    assert!(check_claims(&c(v), ISS, AUD, now).is_err());
}

/// A small deterministic generator, so the mutations are the same on every run.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn no_mutation_of_a_valid_token_panics_or_verifies() {
    let s = es(&sig::ECDSA_P256_SHA256_FIXED_SIGNING, "P-256", "k", Some("ES256"));
    let keys = vec![Jwk::from_json(&s.jwk).unwrap().unwrap()];
    let now = 1_800_000_000;
    let good = token(json!({"alg": "ES256", "kid": "k"}), claims(now), &s);
    assert!(verify(&good, &keys).is_ok());
    let alphabet = b"ABCxyz019-_.=+/ {}\"\\\0\xff";
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for round in 0..20_000 {
        let mut bytes = good.as_bytes().to_vec();
        for _ in 0..1 + rng.next() % 4 {
            let i = (rng.next() as usize) % bytes.len();
            match rng.next() % 3 {
                0 => bytes[i] = alphabet[(rng.next() as usize) % alphabet.len()],
                1 => {
                    bytes.remove(i);
                }
                _ => bytes.insert(i, alphabet[(rng.next() as usize) % alphabet.len()]),
            }
        }
        let Ok(text) = String::from_utf8(bytes) else { continue };
        if text == good {
            continue;
        }
        // Never a panic; a change that still verifies must leave the signed bytes (and so the claims) as
        // they were, which base64's unused trailing bits allow only in the signature part.
        if let Ok(c) = verify(&text, &keys) {
            assert_eq!(c, claims(now).as_object().cloned().unwrap(), "round {round}: {text}");
        }
        let _ = looks_like_jwt(&text);
    }
    // Random JSON in every part.
    for round in 0..2_000 {
        let len = (rng.next() % 40) as usize;
        let junk: String =
            (0..len).map(|_| alphabet[(rng.next() as usize) % alphabet.len()] as char).collect();
        let t = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode(&junk), URL_SAFE_NO_PAD.encode(&junk), junk);
        assert!(verify(&t, &keys).is_err(), "round {round}");
    }
}
