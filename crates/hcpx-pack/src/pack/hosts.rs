//! Host entries (`hosts` in `surface.json`, `packs.<id>.hosts` in `sandbox.json`): a string such as
//! `api.example.com`, `api.example.com:8443`, `http://api.example.com` or `*.example.com`, parsed into a
//! validated `HostRule`. Hosts are named by DNS name only: an IP literal, a path, a query or userinfo is refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::wire::wire_enum;

wire_enum! {
    /// The scheme a host is reached by; `https` when the entry names none.
    #[derive(PartialOrd, Ord, Default)]
    pub enum Scheme ("scheme") {
        #[default]
        Https = "https",
        Http = "http",
    }
}

impl Scheme {
    /// The port the scheme uses when the entry names none.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Https => 443,
            Scheme::Http => 80,
        }
    }
}

/// A host a pack's commands reach: scheme, DNS name (lower case, without the `*.` of a wildcard), port, and
/// whether it covers every name below `host` (`*.example.com`) rather than `host` itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostRule {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub wildcard: bool,
}

/// Why a host entry was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// Not a host entry at all: empty, an unknown scheme, a bad label, a misplaced `*`.
    #[error("host {entry:?} is not a host entry: {why}; write it as `api.example.com`, `api.example.com:8443`, `http://api.example.com` or `*.example.com`")]
    Malformed { entry: String, why: String },
    /// An IP address instead of a DNS name.
    #[error("host {entry:?} is an IP address; name the host by its DNS name (api.example.com), as the operator allows it")]
    IpLiteral { entry: String },
    /// A path, query, fragment or userinfo after or before the host.
    #[error("host {entry:?} has {what}; a host entry is the scheme, host and port only: write {bare:?}")]
    NotBare { entry: String, what: &'static str, bare: String },
    /// A port of 0 or above 65535.
    #[error("host {entry:?} has port {port}, outside 1-65535; name the port the service listens on")]
    PortRange { entry: String, port: String },
}

/// The longest DNS name, in characters.
const MAX_NAME: usize = 253;
/// The longest DNS label.
const MAX_LABEL: usize = 63;

impl HostRule {
    /// Parses one host entry.
    pub fn parse(entry: &str) -> Result<HostRule, HostError> {
        let malformed = |why: &str| HostError::Malformed { entry: entry.to_string(), why: why.to_string() };
        if entry.is_empty() {
            return Err(malformed("it is empty"));
        }
        if entry.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(malformed("it holds a space or a control character"));
        }
        let (scheme, rest) = match entry.split_once("://") {
            Some((s, rest)) => match s.to_ascii_lowercase().parse::<Scheme>() {
                Ok(s) => (s, rest),
                Err(_) => return Err(malformed(&format!("the scheme {s:?} is neither https nor http"))),
            },
            None => (Scheme::default(), entry),
        };
        // The authority ends at the first `/`, `?` or `#`; anything from there on is a path, query or fragment.
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let bare = |authority: &str| match scheme {
            Scheme::Https => authority.to_string(),
            Scheme::Http => format!("http://{authority}"),
        };
        if let Some((_, after)) = authority.rsplit_once('@') {
            return Err(HostError::NotBare { entry: entry.to_string(), what: "userinfo", bare: bare(after) });
        }
        if let Some(first) = tail.chars().next() {
            let what = match first {
                '?' => "a query",
                '#' => "a fragment",
                _ => "a path",
            };
            return Err(HostError::NotBare { entry: entry.to_string(), what, bare: bare(authority) });
        }
        if authority.starts_with('[') || authority.parse::<std::net::Ipv6Addr>().is_ok() {
            return Err(HostError::IpLiteral { entry: entry.to_string() });
        }
        let (name, port) = match authority.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (authority, None),
        };
        let port = match port {
            None => scheme.default_port(),
            Some(p) if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) => {
                return Err(malformed(&format!("the port {p:?} is not a number")))
            }
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(HostError::PortRange { entry: entry.to_string(), port: p.to_string() }),
            },
        };
        let name = name.to_ascii_lowercase();
        let (wildcard, name) = match name.strip_prefix("*.") {
            Some(below) => (true, below.to_string()),
            None => (false, name),
        };
        if name.contains('*') {
            return Err(malformed("`*` may only be the whole first label (`*.example.com`)"));
        }
        if name.parse::<std::net::Ipv4Addr>().is_ok()
            || name.rsplit('.').next().is_some_and(|tld| tld.starts_with(|c: char| c.is_ascii_digit()))
        {
            // A last label starting with a digit is no top-level domain: the resolver would read an address.
            return Err(HostError::IpLiteral { entry: entry.to_string() });
        }
        check_name(&name).map_err(|why| malformed(&why))?;
        if wildcard && name.split('.').count() < 2 {
            return Err(malformed("a wildcard must cover a name of two labels or more (`*.example.com`)"));
        }
        Ok(HostRule { scheme, host: name, port, wildcard })
    }
}

/// A DNS name of two labels or more: ASCII letters, digits and `-` (not first or last), each label at most 63.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("it names no host".into());
    }
    if !name.is_ascii() {
        return Err("it is not ASCII; write an international name in its xn-- form".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!("the name is longer than {MAX_NAME} characters"));
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Err("a single label is no full DNS name; name the host in full (api.example.com)".into());
    }
    for l in labels {
        if l.is_empty() {
            return Err("it has an empty label (`..`, or a leading or trailing dot)".into());
        }
        if l.len() > MAX_LABEL {
            return Err(format!("the label {l:?} is longer than {MAX_LABEL} characters"));
        }
        if !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') || l.starts_with('-') || l.ends_with('-')
        {
            return Err(format!("the label {l:?} is not letters, digits and `-` (not first or last)"));
        }
    }
    Ok(())
}

/// The entry as written in its shortest form: no scheme when `https`, no port when the scheme's own.
impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.scheme != Scheme::Https {
            write!(f, "{}://", self.scheme.as_str())?;
        }
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.host)?;
        if self.port != self.scheme.default_port() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for HostRule {
    type Err = HostError;
    fn from_str(s: &str) -> Result<HostRule, HostError> {
        HostRule::parse(s)
    }
}

impl Serialize for HostRule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HostRule, D::Error> {
        let s = String::deserialize(d)?;
        HostRule::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for HostRule {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HostRule".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }

    fn inline_schema() -> bool {
        true
    }
}

/// Sorted, without repeats.
pub fn normalized(mut rules: Vec<HostRule>) -> Vec<HostRule> {
    rules.sort();
    rules.dedup();
    rules
}

/// `rules` as their entries, joined by `, ` (`(none)` when there are none).
pub fn shown(rules: &[HostRule]) -> String {
    if rules.is_empty() {
        return "(none)".into();
    }
    rules.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn ok(s: &str) -> HostRule {
        HostRule::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn entries_parse_with_their_defaults_and_print_in_their_shortest_form() {
        let r = ok("API.Example.com");
        assert_eq!(
            r,
            HostRule { scheme: Scheme::Https, host: "api.example.com".into(), port: 443, wildcard: false }
        );
        assert_eq!(r.to_string(), "api.example.com");
        assert_eq!(ok("https://api.example.com:443").to_string(), "api.example.com");
        assert_eq!(ok("api.example.com:8443").port, 8443);
        assert_eq!(ok("http://api.example.com").port, 80);
        assert_eq!(ok("http://api.example.com:8080").to_string(), "http://api.example.com:8080");
        let w = ok("*.example.com");
        assert!(w.wildcard && w.host == "example.com" && w.to_string() == "*.example.com");
        for s in ["api.example.com", "http://x.example.org:81", "*.eu.example.com:8443"] {
            assert_eq!(ok(&ok(s).to_string()), ok(s), "{s} round-trips");
        }
    }

    #[test]
    fn every_refusal_has_its_own_kind() {
        let kind = |s: &str| match HostRule::parse(s) {
            Err(HostError::Malformed { .. }) => "malformed",
            Err(HostError::IpLiteral { .. }) => "ip",
            Err(HostError::NotBare { .. }) => "bare",
            Err(HostError::PortRange { .. }) => "port",
            Ok(_) => "ok",
        };
        for (s, want) in [
            ("", "malformed"),
            ("localhost", "malformed"),
            ("ftp://api.example.com", "malformed"),
            ("api.*.example.com", "malformed"),
            ("*.com", "malformed"),
            ("*", "malformed"),
            ("api..example.com", "malformed"),
            ("-api.example.com", "malformed"),
            ("api.example.com.", "malformed"),
            ("api.example.com:http", "malformed"),
            ("api_x.example.com", "malformed"),
            ("bücher.example", "malformed"),
            ("127.0.0.1", "ip"),
            ("10.1", "ip"),
            ("[::1]:443", "ip"),
            ("::1", "ip"),
            ("https://192.168.0.1:8443", "ip"),
            ("api.example.com/v1", "bare"),
            ("https://api.example.com/", "bare"),
            ("api.example.com?x=1", "bare"),
            ("user:pw@api.example.com", "bare"),
            ("api.example.com:0", "port"),
            ("api.example.com:65536", "port"),
            ("api.example.com:99999999999", "port"),
            ("api.example.com:65535", "ok"),
        ] {
            assert_eq!(kind(s), want, "{s:?}");
        }
        let e = HostRule::parse("https://user@api.example.com/v1").unwrap_err().to_string();
        assert!(e.contains("userinfo") && e.contains("write \"api.example.com\""), "{e}");
    }
}
