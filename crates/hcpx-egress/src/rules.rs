//! The rules a request is decided by: plain values (scheme, DNS name, port), so the crate needs no pack or store
//! type, and one host comparison (case-insensitive, one trailing dot ignored, IP literals never a host).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::refusal::{Refusal, RefusalKind};

/// The scheme a rule allows: HTTPS goes through CONNECT (and its SNI must match), HTTP as absolute-form requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scheme {
    Https,
    Http,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Https => "https",
            Self::Http => "http",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Self::Https => 443,
            Self::Http => 80,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One allowed destination. `host` is a lower-case DNS name; with `wildcard` the rule is `*.host`, which matches
/// exactly one more label in front of `host` (`a.host`, not `a.b.host` nor `host` itself), as a TLS
/// certificate's wildcard does, so a rule never covers more names than a certificate for it could.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    pub wildcard: bool,
}

/// A rule that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("rule {0:?}: the scheme must be https:// or http://")]
    Scheme(String),
    #[error("rule {0:?}: the port must be a number from 1 to 65535")]
    Port(String),
    #[error("rule {rule:?}: {reason}")]
    Host { rule: String, reason: String },
}

impl Rule {
    /// A rule for `host` (`*.name` for a wildcard), its DNS name checked and lower-cased.
    pub fn new(scheme: Scheme, host: &str, port: u16) -> Result<Rule, RuleError> {
        let (wildcard, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let err = |r: Refusal| RuleError::Host { rule: host.to_string(), reason: r.reason };
        let host = normalize_host(name).map_err(err)?;
        if port == 0 {
            return Err(RuleError::Port(format!("{scheme}://{host}:0")));
        }
        Ok(Rule { scheme, host, port, wildcard })
    }

    /// Whether `host` (already normalized) is this rule's name.
    pub fn matches_host(&self, host: &str) -> bool {
        let own = trim_dot(&self.host);
        if !self.wildcard {
            return own.eq_ignore_ascii_case(host);
        }
        match host.split_once('.') {
            Some((label, rest)) => !label.is_empty() && rest.eq_ignore_ascii_case(own),
            None => false,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = if self.wildcard { "*." } else { "" };
        write!(f, "{}://{star}{}:{}", self.scheme, self.host, self.port)
    }
}

/// `https://api.example.com`, `http://*.example.com:8080`: the scheme's port when none is written.
impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        let (scheme, rest) = if let Some(rest) = s.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else if let Some(rest) = s.strip_prefix("http://") {
            (Scheme::Http, rest)
        } else {
            return Err(RuleError::Scheme(s.to_string()));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) => (host, port.parse::<u16>().map_err(|_| RuleError::Port(s.to_string()))?),
            None => (rest, scheme.default_port()),
        };
        Rule::new(scheme, host, port).map_err(|e| match e {
            RuleError::Host { reason, .. } => RuleError::Host { rule: s.to_string(), reason },
            RuleError::Port(_) => RuleError::Port(s.to_string()),
            other => other,
        })
    }
}

/// What the operator allowed: the rules, the names that may resolve to private addresses, and fixed answers
/// for names (like curl's `--resolve`: used instead of DNS when a name is here).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub rules: Vec<Rule>,
    pub internal: BTreeSet<String>,
    pub hosts: BTreeMap<String, Vec<IpAddr>>,
}

impl Policy {
    pub fn new(rules: Vec<Rule>) -> Policy {
        Policy { rules, ..Policy::default() }
    }

    /// Lets `name` resolve to loopback, private, link-local and shared (CGNAT) addresses; never to metadata
    /// or other reserved ones (addr.rs).
    pub fn allow_internal(mut self, name: &str) -> Policy {
        self.internal.insert(trim_dot(name).to_ascii_lowercase());
        self
    }

    /// Answers `name` with `addrs` instead of DNS.
    pub fn with_host(mut self, name: &str, addrs: Vec<IpAddr>) -> Policy {
        self.hosts.insert(trim_dot(name).to_ascii_lowercase(), addrs);
        self
    }

    /// Whether the operator marked `host` (normalized) internal.
    pub fn is_internal(&self, host: &str) -> bool {
        self.internal.iter().any(|n| trim_dot(n).eq_ignore_ascii_case(host))
    }

    /// The fixed answer for `host` (normalized), if the policy has one.
    pub fn fixed_answer(&self, host: &str) -> Option<&[IpAddr]> {
        self.hosts.iter().find(|(n, _)| trim_dot(n).eq_ignore_ascii_case(host)).map(|(_, a)| a.as_slice())
    }

    /// The rule that allows `scheme://host:port`, or why none does.
    pub fn decide(&self, scheme: Scheme, host: &str, port: u16) -> Result<&Rule, Refusal> {
        let host = normalize_host(host)?;
        let named: Vec<&Rule> = self.rules.iter().filter(|r| r.matches_host(&host)).collect();
        if let Some(rule) = named.iter().find(|r| r.scheme == scheme && r.port == port) {
            return Ok(rule);
        }
        let wanted = format!("{scheme}://{host}:{port}");
        let reason = match (named.iter().find(|r| r.scheme == scheme), named.first()) {
            (Some(rule), _) => format!("{wanted}: rule {rule} allows port {}, not {port}", rule.port),
            (None, Some(rule)) => format!("{wanted}: rule {rule} allows {}, not {scheme}", rule.scheme),
            (None, None) => format!("{wanted}: no rule names host {host}; add a rule for it"),
        };
        Err(Refusal::new(RefusalKind::NotAllowed, reason))
    }
}

fn trim_dot(host: &str) -> &str {
    host.strip_suffix('.').unwrap_or(host)
}

/// `host` as the rules compare it: one trailing dot dropped, lower-cased, and a DNS name. An IP address (or a
/// name whose last label starts with a digit, which a resolver may read as one: `2130706433`, `0x7f.1`) is an
/// `ip_literal`; anything else that is not letters, digits, hyphens and dots is a `bad_request`.
pub fn normalize_host(host: &str) -> Result<String, Refusal> {
    let trimmed = trim_dot(host);
    let bare = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(trimmed);
    if bare.parse::<IpAddr>().is_ok() {
        return Err(Refusal::new(
            RefusalKind::IpLiteral,
            format!("host {host} is an ip address; name the host by its dns name in a rule"),
        ));
    }
    let bad = |why: &str| Err(Refusal::new(RefusalKind::BadRequest, format!("host {host:?} {why}")));
    if trimmed.is_empty() || trimmed.len() > 253 {
        return bad("is not a dns name of 1 to 253 characters");
    }
    if !trimmed.is_ascii() {
        return bad("is not ascii; name it by its punycode (xn--) form");
    }
    let name = trimmed.to_ascii_lowercase();
    for label in name.split('.') {
        let ok_chars = label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if label.is_empty() || label.len() > 63 || !ok_chars || label.starts_with('-') || label.ends_with('-')
        {
            return bad("is not a dns name (labels of 1 to 63 letters, digits and inner hyphens)");
        }
    }
    let last = name.rsplit('.').next().unwrap_or("");
    if last.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return Err(Refusal::new(
            RefusalKind::IpLiteral,
            format!("host {host} reads as a numeric address; name the host by its dns name in a rule"),
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy::new(vec![
            "https://api.example.com".parse().unwrap(),
            "https://*.cdn.example.com:8443".parse().unwrap(),
            "http://plain.example.com:8080".parse().unwrap(),
        ])
    }

    #[test]
    fn rules_parse_and_print_back() {
        for s in ["https://api.example.com:443", "http://*.example.com:8080"] {
            assert_eq!(s.parse::<Rule>().unwrap().to_string(), s);
        }
        assert_eq!("https://API.Example.COM.".parse::<Rule>().unwrap().host, "api.example.com");
        assert!(matches!("ftp://a.example".parse::<Rule>(), Err(RuleError::Scheme(_))));
        assert!(matches!("https://a.example:0".parse::<Rule>(), Err(RuleError::Port(_))));
        assert!(matches!("https://10.0.0.1".parse::<Rule>(), Err(RuleError::Host { .. })));
        assert!(matches!("https://a_b.example".parse::<Rule>(), Err(RuleError::Host { .. })));
    }

    #[test]
    fn decide_compares_hosts_case_insensitively_and_ignores_one_trailing_dot() {
        let p = policy();
        for host in ["api.example.com", "API.EXAMPLE.COM", "api.example.com."] {
            assert_eq!(p.decide(Scheme::Https, host, 443).unwrap().host, "api.example.com", "{host}");
        }
        let r = p.decide(Scheme::Https, "api.example.com..", 443).unwrap_err();
        assert_eq!(r.kind, RefusalKind::BadRequest);
    }

    #[test]
    fn a_wildcard_matches_exactly_one_label() {
        let p = policy();
        assert!(p.decide(Scheme::Https, "eu.cdn.example.com", 8443).is_ok());
        for host in ["cdn.example.com", "a.eu.cdn.example.com", "xcdn.example.com"] {
            let r = p.decide(Scheme::Https, host, 8443).unwrap_err();
            assert_eq!(r.kind, RefusalKind::NotAllowed, "{host}");
        }
    }

    #[test]
    fn refusals_name_the_rule_and_the_value() {
        let p = policy();
        let r = p.decide(Scheme::Https, "api.example.com", 8443).unwrap_err();
        assert_eq!(r.kind, RefusalKind::NotAllowed);
        assert!(r.reason.contains("rule https://api.example.com:443 allows port 443, not 8443"), "{r}");
        let r = p.decide(Scheme::Https, "plain.example.com", 8080).unwrap_err();
        assert!(r.reason.contains("allows http, not https"), "{r}");
        let r = p.decide(Scheme::Https, "evil.example.org", 443).unwrap_err();
        assert!(r.reason.contains("no rule names host evil.example.org"), "{r}");
    }

    #[test]
    fn ip_literals_and_numeric_names_are_refused() {
        let p = policy();
        for host in ["127.0.0.1", "[::1]", "::1", "169.254.169.254", "2130706433", "0x7f.1", "a.0x7f000001"] {
            let r = p.decide(Scheme::Https, host, 443).unwrap_err();
            assert_eq!(r.kind, RefusalKind::IpLiteral, "{host}");
        }
    }

    #[test]
    fn internal_and_fixed_answers_are_looked_up_normalized() {
        let p = policy()
            .allow_internal("Db.Example.com.")
            .with_host("DB.example.com", vec![[10, 0, 0, 1].into()]);
        assert!(p.is_internal("db.example.com"));
        assert_eq!(p.fixed_answer("db.example.com").unwrap().len(), 1);
        assert!(p.fixed_answer("api.example.com").is_none());
    }
}
