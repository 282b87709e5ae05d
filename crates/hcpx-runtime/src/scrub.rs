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
    // Longest first, so a secret that contains a shorter one is not left half replaced (ties in text order,
    // so equal needles sit together and dedup removes them all).
    needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    needles.dedup();
    let secrets: Vec<&[u8]> =
        binding.fields.values().filter(|s| !s.is_empty()).map(|s| s.as_bytes()).collect();
    let clean = |s: &mut String| {
        // Any byte of a secret percent-encoded, in either case, mixed with literal ones: what encoders that
        // keep some reserved characters print (Python's `quote` keeps `/`, `encodeURIComponent` `!'()*`).
        if s.contains(['%', '+']) {
            for secret in &secrets {
                redact_percent(s, secret);
            }
        }
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

/// Replaces each span of `s` that spells `secret` with at least one byte percent-encoded (`%2B`, `%2b`) or a
/// space as `+`, and is at least [`MIN_ENCODED`] long.
fn redact_percent(s: &mut String, secret: &[u8]) {
    let text = s.as_bytes();
    let mut out = String::new();
    let (mut i, mut kept) = (0, 0);
    while i < text.len() {
        match percent_match(text, i, secret).filter(|end| end - i >= MIN_ENCODED) {
            Some(end) => {
                // Both ends sit on char boundaries: a span starts at `%` or at a secret's first byte and ends
                // after an escape or a secret's last byte.
                out.push_str(s.get(kept..i).unwrap_or_default());
                out.push_str("[redacted]");
                (i, kept) = (end, end);
            }
            None => i += 1,
        }
    }
    if kept > 0 {
        out.push_str(s.get(kept..).unwrap_or_default());
        *s = out;
    }
}

/// Where a percent-encoded spelling of `secret` that starts at `i` ends, if one does.
fn percent_match(text: &[u8], mut i: usize, secret: &[u8]) -> Option<usize> {
    let hex = |d: u8| (d as char).to_digit(16);
    let mut escaped = false;
    for &b in secret {
        match text.get(i) {
            Some(&t) if t == b => i += 1,
            Some(b'%') => {
                let hi = hex(*text.get(i + 1)?)?;
                let lo = hex(*text.get(i + 2)?)?;
                if hi * 16 + lo != u32::from(b) {
                    return None;
                }
                i += 3;
                escaped = true;
            }
            Some(b'+') if b == b' ' => {
                i += 1;
                escaped = true;
            }
            _ => return None,
        }
    }
    escaped.then_some(i)
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
    fn partly_percent_encoded_secrets_are_redacted() {
        use super::redact_percent;
        // Python's quote() keeps `/`; encodeURIComponent keeps `!'()*`; either case of hex digits.
        for (secret, printed) in [
            ("abc+def/ghi==", "token=abc%2Bdef/ghi%3D%3D&x=1"),
            ("abc+def/ghi==", "token=abc%2bdef%2Fghi%3d%3D&x=1"),
            ("it's (a) secret!", "q=it's%20(a)%20secret!"),
            ("two words here", "q=two+words+here"),
        ] {
            let mut s = printed.to_string();
            redact_percent(&mut s, secret.as_bytes());
            assert!(
                s.contains("[redacted]") && !s.contains("ghi") && !s.contains("words"),
                "{printed} -> {s}"
            );
            assert!(s.ends_with("&x=1") || !printed.ends_with("&x=1"), "{s}");
        }
        // Ordinary text is left alone.
        let mut s = "100% sure, 50%2 off".to_string();
        redact_percent(&mut s, b"abc+def/ghi==");
        assert_eq!(s, "100% sure, 50%2 off");
    }

    #[test]
    fn the_scrub_finds_a_partly_encoded_secret_in_every_field() {
        use crate::model::{BindingMode, MintedBinding, ResultEnvelope};
        let binding = MintedBinding {
            mode: BindingMode::Local,
            fields: [("token".to_string(), "abc+def/ghi==".to_string())].into(),
        };
        let mut out = ResultEnvelope::empty("p", "v", true);
        out.stdout = Some("GET /x?t=abc%2Bdef/ghi%3D%3D".into());
        out.result = Some(serde_json::json!({ "url": "https://h/?t=abc%2Bdef/ghi%3D%3D" }));
        super::scrub(&mut out, &binding);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("ghi"), "{text}");
    }

    #[test]
    fn hex_and_percent_forms_are_listed() {
        let e = encodings(b"a b/c");
        assert!(e.contains(&"6120622f63".to_string()) && e.contains(&"6120622F63".to_string()));
        assert!(e.contains(&"a%20b%2Fc".to_string()) && e.contains(&"a+b%2Fc".to_string()));
    }
}
