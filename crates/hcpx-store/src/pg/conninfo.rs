//! What an `HCP_STORE` value may show: the connection string with every password in it masked, in each form
//! libpq takes one — the URL's userinfo (`postgres://USER:PASSWORD@HOST/DB`), a `password=` (or
//! `sslpassword=`) query parameter in any case or percent-encoding, and a `password=` keyword of a key=value
//! connection string (`host=db user=hcpx password='…'`). Every message, log line and response that names the
//! database names it through [`redact`].

/// What stands for a masked password.
const MASK: &str = "***";

/// `s` (an `HCP_STORE` value: a `postgres://` URL or a key=value connection string) with every password in
/// it replaced by `***`, safe to print. A value that is neither is not shown at all (it may be a password
/// put in the wrong place).
pub fn redact(s: &str) -> String {
    let secrets = if let Some(start) = authority(s) {
        url_secrets(s, start)
    } else if is_key_value(s) {
        key_value_secrets(s)
    } else {
        return "…".into();
    };
    mask(s, secrets)
}

/// Whether `s` is a key=value connection string (`host=db dbname=hcpx …`) rather than a URL.
pub fn is_key_value(s: &str) -> bool {
    authority(s).is_none() && s.contains('=')
}

/// Where the part after `SCHEME://` starts, when `s` is a URL (a `://` inside a key=value string's value is
/// not one).
fn authority(s: &str) -> Option<usize> {
    let i = s.find("://")?;
    let scheme = &s[..i];
    let plain =
        !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
    plain.then_some(i + 3)
}

/// `text` with every password `raw` (an `HCP_STORE` value) holds replaced by `***`: for a message that quotes
/// parts of `raw` it did not choose (a parse error naming an option).
pub(crate) fn scrub(text: &str, raw: &str) -> String {
    let ranges = match authority(raw) {
        Some(start) => url_secrets(raw, start),
        None => key_value_secrets(raw),
    };
    let mut secrets: Vec<&str> = ranges.iter().map(|&(a, b)| &raw[a..b]).filter(|s| s.len() >= 3).collect();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.iter().fold(text.to_string(), |t, s| t.replace(s, MASK))
}

/// `s` with each byte range in `ranges` (which may overlap) replaced by [`MASK`], overlapping ones once.
fn mask(s: &str, mut ranges: Vec<(usize, usize)>) -> String {
    ranges.retain(|(a, b)| a < b);
    ranges.sort();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in ranges {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (a, b) in merged {
        out.push_str(&s[at..a]);
        out.push_str(MASK);
        at = b;
    }
    out.push_str(&s[at..]);
    out
}

/// The byte ranges of a URL's passwords; the authority starts at `start`.
fn url_secrets(s: &str, start: usize) -> Vec<(usize, usize)> {
    let mut found = Vec::new();
    // Userinfo: tokio-postgres and libpq end it at the first `@`; a password with an `@` left unencoded ends
    // at a later one. Each reading's password (after the first `:`) is masked.
    for (at, _) in s[start..].match_indices('@') {
        let creds = &s[start..start + at];
        if let Some(colon) = creds.find(':') {
            found.push((start + colon + 1, start + at));
        }
    }
    // Query parameters: after any `?` or `&`, a key that decodes to `password` in any case (or ends so, as
    // `sslpassword`) hides its value up to the next `&`.
    for (i, _) in s.match_indices(['?', '&']).filter(|(i, _)| *i >= start) {
        let param = &s[i + 1..];
        let end = param.find('&').unwrap_or(param.len());
        let Some(eq) = param[..end].find('=') else { continue };
        if names_password(&percent_decode(&param[..eq])) {
            found.push((i + 1 + eq + 1, i + 1 + end));
        }
    }
    found
}

/// Whether a connection keyword names a password (`password`, `sslpassword`), in any case.
fn names_password(key: &str) -> bool {
    key.trim().to_ascii_lowercase().ends_with("password")
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The byte ranges of the values of password keywords in a key=value connection string, read as libpq and
/// tokio-postgres read it (`key = value`, a value quoted with `'…'`, `\` escaping the next character). Past
/// anything it cannot read, the rest of the string is masked.
fn key_value_secrets(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    let skip_ws = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_ws(i);
        if i >= b.len() {
            return found;
        }
        let key_start = i;
        while i < b.len() && !b[i].is_ascii_whitespace() && b[i] != b'=' {
            i += 1;
        }
        let key = &s[key_start..i];
        i = skip_ws(i);
        if b.get(i) != Some(&b'=') {
            found.push((key_start, b.len()));
            return found;
        }
        i = skip_ws(i + 1);
        let value_start = i;
        if b.get(i) == Some(&b'\'') {
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(b.len());
        }
        if names_password(key) {
            found.push((value_start, i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_any_libpq_form_is_masked() {
        for (given, shown) in [
            ("postgres://hcpx:s3cret@db:5432/hcpx", "postgres://hcpx:***@db:5432/hcpx"),
            ("postgresql://hcpx@db:5432/hcpx", "postgresql://hcpx@db:5432/hcpx"),
            ("postgres://hcpx@db/hcpx?password=s3cret", "postgres://hcpx@db/hcpx?password=***"),
            (
                "postgres://db/hcpx?sslmode=disable&PassWord=s3cret&x=1",
                "postgres://db/hcpx?sslmode=disable&PassWord=***&x=1",
            ),
            ("postgres://db/hcpx?pass%77ord=s3cret", "postgres://db/hcpx?pass%77ord=***"),
            ("postgres://db/hcpx?sslpassword=s3cret", "postgres://db/hcpx?sslpassword=***"),
            // An unencoded `@` or `?` inside a password: every reading's password is masked.
            ("postgres://hcpx:s3@cret@db/hcpx", "postgres://hcpx:***@db/hcpx"),
            ("postgres://hcpx:s3?cret@db/hcpx", "postgres://hcpx:***@db/hcpx"),
            ("postgres://db/hcpx?password=s3@cret", "postgres://db/hcpx?password=***"),
            ("postgres://db/hcpx?password=s3?c&ret=1", "postgres://db/hcpx?password=***&ret=1"),
            ("host=db user=hcpx password=s3cret dbname=hcpx", "host=db user=hcpx password=*** dbname=hcpx"),
            ("host=db PASSWORD = 's3 cr\\'et' dbname=hcpx", "host=db PASSWORD = *** dbname=hcpx"),
            ("host=db password='s3cret", "host=db password=***"),
            ("host=db password", "host=db ***"),
            ("host=db password=a://b@c:d", "host=db password=***"),
            ("s3cret", "…"),
        ] {
            assert_eq!(redact(given), shown, "{given}");
        }
        for given in [
            "postgres://hcpx:s3cret@db/hcpx",
            "postgres://db/hcpx?password=s3cret",
            "postgres://db/hcpx?password=s3@cret",
            "host=db password=s3cret",
        ] {
            assert!(!redact(given).contains("s3"), "{given}: {}", redact(given));
        }
    }

    #[test]
    fn a_message_quoting_the_value_loses_its_passwords() {
        let raw = "postgres://db/hcpx?password=s3cret&bogus=1";
        assert_eq!(scrub("unknown option `s3cret`", raw), "unknown option `***`");
        assert_eq!(scrub("nothing to hide", "host=db"), "nothing to hide");
    }
}
