//! The one SHA-256 hex encoder: component and cache digests, the installed-pack digest and the audit's
//! argument digest all spell a digest the same way.

use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut d = Digest::new();
    d.update(bytes);
    d.finish()
}

/// A SHA-256 fed piece by piece.
#[derive(Default)]
pub struct Digest(Sha256);

impl Digest {
    pub fn new() -> Digest {
        Digest(Sha256::new())
    }

    pub fn update(&mut self, bytes: impl AsRef<[u8]>) {
        self.0.update(bytes.as_ref());
    }

    /// The digest as 64 lowercase hex digits.
    pub fn finish(self) -> String {
        // By table, not `write!` per byte: a warm one-shot call finishes a few of these (#39).
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0.finalize() {
            s.push(char::from(HEX[usize::from(b >> 4)]));
            s.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        s
    }
}

/// SHA-256 of the arguments' canonical JSON (object keys sorted at every depth), hex: what the audit log
/// records instead of the arguments themselves (docs/spec.md §18).
pub fn args_digest(args: &Map<String, Value>) -> String {
    fn canon(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), canon(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(canon).collect()),
            other => other.clone(),
        }
    }
    sha256_hex(canon(&Value::Object(args.clone())).to_string().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_vectors() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        let mut d = Digest::new();
        d.update("a");
        d.update(b"bc");
        assert_eq!(d.finish(), sha256_hex(b"abc"));
    }

    #[test]
    fn args_digest_ignores_key_order_only() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b = json!({"a": {"x": "s", "y": [1, 2]}, "b": 1});
        let c = json!({"a": {"x": "s", "y": [2, 1]}, "b": 1});
        let (a, b, c) = (a.as_object().unwrap(), b.as_object().unwrap(), c.as_object().unwrap());
        assert_eq!(args_digest(a), args_digest(b));
        assert_ne!(args_digest(a), args_digest(c));
    }
}
