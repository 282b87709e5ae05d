//! Credentials the code never holds (issue #36 point 5, docs/egress.md Placeholders): a wrap's child or a
//! composite sees a random placeholder where a Binding field bound to a host would be, and hcpx puts the real
//! value into requests to that host only, in the one header or query parameter the pack declared. A
//! placeholder anywhere else (another header, the path, another parameter, a request to another host, a body)
//! refuses the request, naming the field, never the value.
//!
//! `Secrets::apply` works on `http::request::Parts` (a composite's outgoing request, a request read inside a
//! terminated tunnel); `Secrets::apply_head` on a plain header list and request target (the proxy's own
//! parser). Bodies are never rewritten: `BodyScan` finds a placeholder in one, across chunk boundaries.

use std::fmt;
use std::sync::Arc;

use crate::refusal::{Refusal, RefusalKind};
use crate::rules::{normalize_host, Rule, Scheme};

/// The prefix of every placeholder; what follows is 32 random hex digits.
pub const PLACEHOLDER_PREFIX: &str = "hcpx-ph-";

/// Where the real value goes in a request to the rule's host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Anywhere inside this header's value (`Bearer PLACEHOLDER`); the name compared case-insensitively.
    Header(String),
    /// This query parameter's value (the name compared exactly, after percent-decoding).
    Query(String),
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::Header(h) => write!(f, "header {h}"),
            Slot::Query(q) => write!(f, "query parameter {q}"),
        }
    }
}

/// One host-bound field: its placeholder, its real value, and where the value may go.
#[derive(Clone)]
pub struct Secret {
    /// The Binding field's name, the only thing a refusal says about it.
    pub field: String,
    pub placeholder: String,
    pub value: String,
    pub rule: Rule,
    pub slot: Slot,
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("field", &self.field)
            .field("rule", &self.rule.to_string())
            .field("slot", &self.slot)
            .finish_non_exhaustive()
    }
}

/// A random placeholder, `hcpx-ph-` and 32 hex digits from the system's random source (never derived from
/// the value it stands for).
pub fn placeholder() -> Result<String, Refusal> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new().fill(&mut bytes).map_err(|_| {
        Refusal::new(RefusalKind::Placeholder, "the system's random source failed; no placeholder was made")
    })?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PLACEHOLDER_PREFIX}{hex}"))
}

/// Every host-bound field of one call. Cheap to clone (shared).
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    items: Arc<Vec<Secret>>,
}

impl Secrets {
    pub fn new(items: Vec<Secret>) -> Secrets {
        Secrets { items: Arc::new(items) }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The real values, for a caller that scrubs them from what a child could read.
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|s| s.value.as_str())
    }

    /// The secret whose placeholder `hay` holds (case-insensitively, or percent-encoded), if any.
    fn mentioned(&self, hay: &[u8]) -> Option<&Secret> {
        let lower = hay.to_ascii_lowercase();
        let decoded = percent_decode(&lower).to_ascii_lowercase();
        self.items.iter().find(|s| {
            let p = s.placeholder.as_bytes();
            find(&lower, p).is_some() || find(&decoded, p).is_some()
        })
    }

    /// The secrets whose rule allows `scheme://host:port`.
    fn for_origin<'a>(&'a self, scheme: Scheme, host: &str, port: u16) -> Vec<&'a Secret> {
        let Ok(host) = normalize_host(host) else { return Vec::new() };
        self.items
            .iter()
            .filter(|s| s.rule.scheme == scheme && s.rule.port == port && s.rule.matches_host(&host))
            .collect()
    }

    fn refuse(s: &Secret, place: &str, host: &str, port: u16) -> Refusal {
        Refusal::new(
            RefusalKind::Placeholder,
            format!(
                "the placeholder of binding field {} is in {place} of a request to {host}:{port}; binding.inject sends field {} only in the {} of requests to {}",
                s.field, s.field, s.slot, s.rule
            ),
        )
    }

    /// Refuses `text` (a request's method, or any other part no rule names) when it holds a placeholder.
    pub fn refuse_in(&self, text: &str, place: &str, host: &str, port: u16) -> Result<(), Refusal> {
        match self.mentioned(text.as_bytes()) {
            Some(s) => Err(Self::refuse(s, place, host, port)),
            None => Ok(()),
        }
    }

    /// Rewrites a request head to `scheme://host:port`: the placeholder of a secret whose rule allows the origin
    /// becomes its value in the declared header or query parameter; a placeholder anywhere else refuses the
    /// whole request. `target` is the request target (origin-form `/path?query`, or absolute-form); returns how
    /// many substitutions were made.
    pub fn apply_head(
        &self,
        scheme: Scheme,
        host: &str,
        port: u16,
        target: &mut String,
        headers: &mut [(String, Vec<u8>)],
    ) -> Result<usize, Refusal> {
        if self.items.is_empty() {
            return Ok(0);
        }
        let here = self.for_origin(scheme, host, port);
        let mut made = 0;
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (target.clone(), None),
        };
        if let Some(s) = self.mentioned(path.as_bytes()) {
            return Err(Self::refuse(s, "the path", host, port));
        }
        if let Some(query) = query {
            let mut pairs = Vec::new();
            for pair in query.split('&') {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                let key_text = String::from_utf8_lossy(&percent_decode(key.as_bytes())).into_owned();
                if let Some(s) = self.mentioned(key.as_bytes()) {
                    return Err(Self::refuse(s, "a query parameter's name", host, port));
                }
                let Some(s) = self.mentioned(value.as_bytes()) else {
                    pairs.push(pair.to_string());
                    continue;
                };
                let slot = Slot::Query(key_text.clone());
                let ok = here.iter().find(|h| h.placeholder == s.placeholder && h.slot == slot);
                let Some(ok) = ok else {
                    return Err(Self::refuse(s, &format!("query parameter {key_text}"), host, port));
                };
                let (fresh, n) =
                    replace_ci(value.as_bytes(), &ok.placeholder, percent_encode(&ok.value).as_bytes());
                made += n;
                pairs.push(format!("{key}={}", String::from_utf8_lossy(&fresh)));
                if let Some(s) = self.mentioned(&fresh) {
                    return Err(Self::refuse(s, &format!("query parameter {key_text}"), host, port));
                }
            }
            *target = format!("{path}?{}", pairs.join("&"));
        }
        for (name, value) in headers.iter_mut() {
            if let Some(s) = self.mentioned(name.as_bytes()) {
                return Err(Self::refuse(s, "a header's name", host, port));
            }
            let Some(s) = self.mentioned(value) else { continue };
            let slot = Slot::Header(name.to_ascii_lowercase());
            let ok = here.iter().find(|h| h.placeholder == s.placeholder && h.slot == slot);
            let Some(ok) = ok else {
                return Err(Self::refuse(s, &format!("header {}", name.to_ascii_lowercase()), host, port));
            };
            if ok.value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(Refusal::new(
                    RefusalKind::Placeholder,
                    format!("binding field {} holds a line break, which no header may carry; store it without one", ok.field),
                ));
            }
            let (fresh, n) = replace_ci(value, &ok.placeholder, ok.value.as_bytes());
            made += n;
            // Two placeholders in one value: the other must be allowed there too.
            if let Some(s) = self.mentioned(&fresh) {
                return Err(Self::refuse(s, &format!("header {}", name.to_ascii_lowercase()), host, port));
            }
            *value = fresh;
        }
        Ok(made)
    }

    /// `apply_head` on `http::request::Parts` (a composite's send hook, a request inside a terminated tunnel):
    /// the URI's path and query, and every header.
    pub fn apply(
        &self,
        scheme: Scheme,
        host: &str,
        port: u16,
        parts: &mut http::request::Parts,
    ) -> Result<usize, Refusal> {
        if self.items.is_empty() {
            return Ok(0);
        }
        let bad = |what: String| Refusal::new(RefusalKind::BadRequest, what);
        self.refuse_in(parts.method.as_str(), "the method", host, port)?;
        if let Some(a) = parts.uri.authority() {
            if let Some(s) = self.mentioned(a.as_str().as_bytes()) {
                return Err(Self::refuse(s, "the authority", host, port));
            }
        }
        let mut target =
            parts.uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
        let mut headers: Vec<(String, Vec<u8>)> =
            parts.headers.iter().map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec())).collect();
        let made = self.apply_head(scheme, host, port, &mut target, &mut headers)?;
        if made == 0 {
            return Ok(0);
        }
        let mut uri = http::uri::Builder::new();
        if let Some(s) = parts.uri.scheme() {
            uri = uri.scheme(s.clone());
        }
        if let Some(a) = parts.uri.authority() {
            uri = uri.authority(a.clone());
        }
        parts.uri = uri.path_and_query(target).build().map_err(|e| bad(format!("the rewritten uri: {e}")))?;
        let mut map = http::HeaderMap::with_capacity(headers.len());
        for (name, value) in headers {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| bad(format!("header {name}: {e}")))?;
            let value = http::HeaderValue::from_bytes(&value)
                .map_err(|_| bad(format!("header {name}: the rewritten value is not a header value")))?;
            map.append(name, value);
        }
        parts.headers = map;
        Ok(made)
    }

    /// A guard for one response: the real values must not reach the child in it.
    pub fn echo_guard(&self) -> EchoGuard {
        let mut values: Vec<(String, Vec<u8>)> = Vec::new();
        for s in self.items.iter().filter(|s| !s.value.is_empty()) {
            if !values.iter().any(|(_, v)| v == s.value.as_bytes()) {
                values.push((s.field.clone(), s.value.as_bytes().to_vec()));
            }
        }
        let keep = values.iter().map(|(_, v)| v.len()).max().unwrap_or(0).saturating_sub(1);
        EchoGuard { values, held: Vec::new(), keep }
    }

    /// A scanner for one body (placeholders are never substituted into bodies, only found).
    pub fn body_scan(&self) -> BodyScan {
        let keep = self.items.iter().map(|s| s.placeholder.len()).max().unwrap_or(0).saturating_sub(1);
        BodyScan { secrets: self.clone(), tail: Vec::new(), keep }
    }
}

/// Keeps a response from handing a real value to the child (an origin that echoes the request's credential):
/// a header holding one refuses the response; a body holding one is cut before the bytes that hold it, and the
/// last bytes of each chunk are held back until the next shows they do not start one.
pub struct EchoGuard {
    values: Vec<(String, Vec<u8>)>,
    held: Vec<u8>,
    keep: usize,
}

impl EchoGuard {
    fn echoed(field: &str, place: &str, host: &str, port: u16) -> Refusal {
        Refusal::new(
            RefusalKind::CredentialEcho,
            format!("the response of {host}:{port} holds the value of binding field {field} in {place}; hcpx does not hand a credential to the cli, so the response was cut"),
        )
    }

    /// Whether a response header holds a real value.
    pub fn headers(&self, headers: &http::HeaderMap, host: &str, port: u16) -> Result<(), Refusal> {
        for (name, value) in headers {
            if let Some((field, _)) = self.values.iter().find(|(_, v)| find(value.as_bytes(), v).is_some()) {
                return Err(Self::echoed(field, &format!("header {name}"), host, port));
            }
        }
        Ok(())
    }

    /// The next chunk of the body: the bytes that may go to the child now, or a refusal when a value is in it.
    pub fn pass(&mut self, bytes: &[u8], host: &str, port: u16) -> Result<Vec<u8>, Refusal> {
        if self.values.is_empty() {
            return Ok(bytes.to_vec());
        }
        let mut window = std::mem::take(&mut self.held);
        window.extend_from_slice(bytes);
        if let Some((field, _)) = self.values.iter().find(|(_, v)| find(&window, v).is_some()) {
            return Err(Self::echoed(field, "its body", host, port));
        }
        let cut = window.len().saturating_sub(self.keep);
        self.held = window.split_off(cut);
        Ok(window)
    }

    /// The end of the body: what was held back.
    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.held)
    }

    /// Whether bytes are held back.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }
}

/// Finds a placeholder in a body as it streams by, including one split across two chunks.
pub struct BodyScan {
    secrets: Secrets,
    tail: Vec<u8>,
    keep: usize,
}

impl BodyScan {
    /// The next chunk of the body to `host:port`: a refusal naming the field when a placeholder is in it.
    pub fn chunk(&mut self, bytes: &[u8], host: &str, port: u16) -> Result<(), Refusal> {
        if self.secrets.is_empty() || bytes.is_empty() {
            return Ok(());
        }
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(bytes);
        let lower = window.to_ascii_lowercase();
        if let Some(s) = self.secrets.items.iter().find(|s| find(&lower, s.placeholder.as_bytes()).is_some())
        {
            return Err(Refusal::new(
                RefusalKind::Placeholder,
                format!(
                    "the placeholder of binding field {} is in the body of a request to {host}:{port}; hcpx never puts a credential into a body, only into the {} of requests to {}",
                    s.field, s.slot, s.rule
                ),
            ));
        }
        let from = window.len().saturating_sub(self.keep);
        self.tail = window.split_off(from);
        Ok(())
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `hay` with every case-insensitive occurrence of `needle` replaced, and how many there were.
fn replace_ci(hay: &[u8], needle: &str, with: &[u8]) -> (Vec<u8>, usize) {
    let lower = hay.to_ascii_lowercase();
    let needle = needle.to_ascii_lowercase();
    let n = needle.len();
    let (mut out, mut i, mut count) = (Vec::with_capacity(hay.len() + with.len()), 0, 0);
    while i < hay.len() {
        if n > 0 && lower[i..].starts_with(needle.as_bytes()) {
            out.extend_from_slice(with);
            i += n;
            count += 1;
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    (out, count)
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match (s[i], s.get(i + 1).copied().and_then(hex), s.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push(h << 4 | l);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// A query value: every byte but the unreserved ones (RFC 3986) percent-encoded.
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests;
