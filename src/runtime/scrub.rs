//! Step 7's scrub: every minted secret value is replaced by `[redacted]` in what a call returns, as written
//! and in the encodings a command could print it in to slip past an exact match: base64 (standard and
//! URL-safe, at any alignment in a longer stream), hex (either case) and percent-encoding.

use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::Value;

use crate::model::{BindingMode, MintedBinding, ResultEnvelope};

/// Encoded forms shorter than this are not scrubbed: too likely to match ordinary text.
const MIN_ENCODED: usize = 8;

/// Replaces every minted secret value, and its encodings, with `[redacted]` in what the call returns.
pub fn scrub(out: &mut ResultEnvelope, binding: &MintedBinding) {
    if binding.mode == BindingMode::Mock {
        return;
    }
    let mut needles: Vec<String> = Vec::new();
    for secret in binding.fields.values().filter(|s| !s.is_empty()) {
        needles.push(secret.clone());
        needles.extend(
            encodings(secret.as_bytes()).into_iter().filter(|e| e.len() >= MIN_ENCODED && e != secret),
        );
    }
    if needles.is_empty() {
        return;
    }
    // Longest first, so a secret that contains a shorter one is not left half replaced.
    needles.sort_by_key(|s| std::cmp::Reverse(s.len()));
    needles.dedup();
    let clean = |s: &mut String| {
        for needle in &needles {
            if s.contains(needle.as_str()) {
                *s = s.replace(needle.as_str(), "[redacted]");
            }
            // Output cut at max_output_bytes may end with the first bytes of a secret.
            for k in (4..needle.len()).rev() {
                if let Some(head) = needle.get(..k) {
                    if s.ends_with(head) {
                        s.truncate(s.len() - k);
                        s.push_str("[redacted]");
                        break;
                    }
                }
            }
        }
    };
    fn walk(v: &mut Value, clean: &dyn Fn(&mut String)) {
        match v {
            Value::String(s) => clean(s),
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, clean)),
            // Keys too: a CLI can print a map keyed by the token.
            Value::Object(m) => {
                *m = std::mem::take(m)
                    .into_iter()
                    .map(|(mut k, mut x)| {
                        clean(&mut k);
                        walk(&mut x, clean);
                        (k, x)
                    })
                    .collect()
            }
            _ => {}
        }
    }
    for s in [&mut out.error, &mut out.stdout, &mut out.stderr, &mut out.title].into_iter().flatten() {
        clean(s);
    }
    if let Some(r) = &mut out.result {
        walk(r, &clean);
    }
}

/// The forms of `secret` a command could print: base64 of the secret starting at each of the three byte
/// alignments of a longer stream (only whole 3-byte groups, which encode the same wherever they sit), hex,
/// and percent-encoding.
pub fn encodings(secret: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for skip in 0..3 {
        let Some(rest) = secret.get(skip..) else { continue };
        let whole = &rest[..rest.len() - rest.len() % 3];
        if !whole.is_empty() {
            out.push(STANDARD_NO_PAD.encode(whole));
            out.push(URL_SAFE_NO_PAD.encode(whole));
        }
    }
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    out.push(hex.to_uppercase());
    out.push(hex);
    let (mut pct, mut pct_lower) = (String::new(), String::new());
    for &b in secret {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            pct.push(b as char);
            pct_lower.push(b as char);
        } else {
            pct.push_str(&format!("%{b:02X}"));
            pct_lower.push_str(&format!("%{b:02x}"));
        }
    }
    out.push(pct.replace("%20", "+"));
    out.push(pct);
    out.push(pct_lower);
    // Every byte escaped, as some encoders do.
    out.push(secret.iter().map(|b| format!("%{b:02X}")).collect());
    out
}

#[cfg(test)]
mod tests {
    use super::encodings;
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;

    #[test]
    fn base64_of_the_secret_inside_a_longer_stream_is_found_at_every_alignment() {
        let secret = b"tok-12345678-secret";
        for prefix in ["", "a", "ab", "token=", "x: \n"] {
            let mut stream = prefix.as_bytes().to_vec();
            stream.extend_from_slice(secret);
            stream.push(b'\n');
            let printed = STANDARD.encode(&stream);
            assert!(
                encodings(secret).iter().any(|e| e.len() >= 8 && printed.contains(e.as_str())),
                "{prefix:?}: {printed}"
            );
        }
    }

    #[test]
    fn hex_and_percent_forms_are_listed() {
        let e = encodings(b"a b/c");
        assert!(e.contains(&"6120622f63".to_string()) && e.contains(&"6120622F63".to_string()));
        assert!(e.contains(&"a%20b%2Fc".to_string()) && e.contains(&"a+b%2Fc".to_string()));
    }
}
