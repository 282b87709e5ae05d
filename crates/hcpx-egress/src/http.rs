//! The proxy's side of HTTP/1.1: a request head read with httparse, its target sorted into the two forms the
//! proxy speaks (CONNECT host:port, absolute-form http://host:port/path), and a plain request rewritten to
//! origin-form with its Host header checked and its hop-by-hop headers dropped.

use crate::refusal::{Refusal, RefusalKind};
use crate::rules::Scheme;

/// Headers in one request head at most.
pub const MAX_HEADERS: usize = 64;

/// A parsed request head.
#[derive(Clone)]
pub struct Head {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    /// Bytes of the head in the buffer; what follows is the start of the body (or of the TLS stream).
    pub len: usize,
}

fn bad(reason: impl Into<String>) -> Refusal {
    Refusal::new(RefusalKind::BadRequest, reason)
}

/// The head at the start of `buf`, `None` while it is incomplete.
pub fn parse_head(buf: &[u8]) -> Result<Option<Head>, Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(bad(format!("more than {MAX_HEADERS} headers in the request head; send fewer")))
        }
        Err(e) => return Err(bad(format!("a malformed request head ({e}); send an http/1.1 proxy request"))),
    };
    // CONNECT as http/1.0 too: Python's http.client (urllib, and what builds on it) sends its tunnel request so,
    // and a tunnel's head carries nothing that version changes.
    let connect_10 = req.version == Some(0) && req.method == Some("CONNECT");
    if req.version != Some(1) && !connect_10 {
        return Err(bad(
            "the request is not http/1.1; the proxy speaks http/1.1 only (and CONNECT as http/1.0)",
        ));
    }
    let headers = req.headers.iter().map(|h| (h.name.to_string(), h.value.to_vec())).collect();
    Ok(Some(Head {
        method: req.method.unwrap_or_default().to_string(),
        target: req.path.unwrap_or_default().to_string(),
        headers,
        len,
    }))
}

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// The origin-form path and query of a plain request (`/` when the target has none).
    pub path: String,
}

/// Sorts a request's target: CONNECT takes `host:port`, every other method `http://host[:port]/path`.
pub fn target(method: &str, raw: &str) -> Result<Target, Refusal> {
    if method == "CONNECT" {
        if raw.contains('/') {
            return Err(bad(format!("connect target {raw:?} is not host:port; send CONNECT host:port")));
        }
        let (host, port) = authority(raw)?;
        let port = port.ok_or_else(|| bad(format!("connect target {raw:?} has no port; send host:port")))?;
        return Ok(Target { scheme: Scheme::Https, host, port, path: String::new() });
    }
    let lower = raw.get(..8).unwrap_or(raw).to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(bad(format!(
            "{method} {raw}: https goes through CONNECT host:port, not an absolute https url"
        )));
    }
    let Some(rest) = lower.starts_with("http://").then(|| &raw[7..]) else {
        if raw.starts_with('/') || raw == "*" {
            return Err(bad(format!(
                "{method} {raw} is origin-form; a proxy request names its target as http://host:port/path"
            )));
        }
        return Err(bad(format!("method {method} on target {raw}; only CONNECT takes a host:port target")));
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(split);
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    let (host, port) = authority(auth)?;
    Ok(Target { scheme: Scheme::Http, host, port: port.unwrap_or(80), path })
}

/// Whether `raw` is a host:port target under another method than CONNECT (answered 405, not 400).
pub fn wrong_method(method: &str, raw: &str) -> bool {
    method != "CONNECT" && !raw.starts_with('/') && raw != "*" && !raw.contains("://")
}

/// `host[:port]`, with `[v6]` kept as the host so the rules refuse it as an IP literal.
fn authority(auth: &str) -> Result<(String, Option<u16>), Refusal> {
    if auth.contains('@') {
        return Err(bad(format!("target {auth:?} carries user info; send credentials in headers")));
    }
    let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, "")) => (format!("[{h}]"), None),
            Some((h, p)) => (format!("[{h}]"), Some(p.strip_prefix(':').unwrap_or(p))),
            None => return Err(bad(format!("target {auth:?} opens a bracket it does not close"))),
        }
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (auth.to_string(), None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(bad(format!("target {auth:?} has port {p:?}; a port is 1 to 65535"))),
        },
    };
    if host.is_empty() {
        return Err(bad(format!("target {auth:?} names no host")));
    }
    Ok((host, port))
}

/// Hop-by-hop headers (RFC 9110 §7.6.1) and the proxy's own: never forwarded.
pub(crate) const HOP: [&str; 8] = [
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

/// The request rewritten to origin-form for `t`, and the length of the body that follows it. The Host header
/// must name the target (its port may be left out when it is the scheme's); a chunked body is refused (a body
/// is forwarded by its Content-Length, so nothing after it can reach the origin as a second request).
pub fn rewrite(head: &Head, t: &Target) -> Result<(Vec<u8>, u64), Refusal> {
    let mut host_header = None;
    let mut length: Option<u64> = None;
    let mut also_hop: Vec<String> = Vec::new();
    for (name, value) in &head.headers {
        let value_text = String::from_utf8_lossy(value);
        if name.eq_ignore_ascii_case("host") {
            if host_header.replace(value_text.trim().to_string()).is_some() {
                return Err(bad("two host headers; send one"));
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            let n = value_text
                .trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("content-length {value_text:?}")))?;
            if length.replace(n).is_some_and(|m| m != n) {
                return Err(bad("two different content-length headers; send one"));
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(bad(
                "a transfer-encoding request body is not forwarded; send it with content-length",
            ));
        } else if name.eq_ignore_ascii_case("connection") {
            also_hop.extend(value_text.split(',').map(|s| s.trim().to_ascii_lowercase()));
        }
    }
    let host = host_header.ok_or_else(|| bad(format!("no host header; send host: {}", t.host)))?;
    if !host_matches(&host, t) {
        return Err(bad(format!("host header {host:?} does not name the target {}:{}", t.host, t.port)));
    }
    let mut out = format!("{} {} HTTP/1.1\r\n", head.method, t.path).into_bytes();
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if HOP.contains(&lower.as_str()) || also_hop.contains(&lower) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok((out, length.unwrap_or(0)))
}

/// Whether a Host header names `t` (its port may be left out when it is the scheme's).
pub fn host_matches(header: &str, t: &Target) -> bool {
    let (h, p) = match authority(header) {
        Ok((h, p)) => (h, p.unwrap_or(t.scheme.default_port())),
        Err(_) => return false,
    };
    let norm = |s: &str| s.strip_suffix('.').unwrap_or(s).to_ascii_lowercase();
    norm(&h) == norm(&t.host) && p == t.port
}

/// The status code of a response whose first bytes are `buf`, once its status line is there.
pub fn response_status(buf: &[u8]) -> Option<u16> {
    let line = buf.get(..12)?;
    if !line.starts_with(b"HTTP/1.") {
        return None;
    }
    std::str::from_utf8(&line[9..12]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Head {
        parse_head(text.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn targets_of_each_form() {
        let t = target("CONNECT", "api.test:443").unwrap();
        assert_eq!((t.scheme, t.host.as_str(), t.port), (Scheme::Https, "api.test", 443));
        let t = target("GET", "http://Api.test:8080?q=1").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("Api.test", 8080, "/?q=1"));
        assert_eq!(target("GET", "HTTP://a.test").unwrap().port, 80);
        assert_eq!(target("CONNECT", "[::1]:443").unwrap().host, "[::1]");
        for (m, raw) in
            [("CONNECT", "api.test"), ("GET", "/x"), ("GET", "https://a.test/"), ("GET", "http://u@a.test/")]
        {
            assert_eq!(target(m, raw).unwrap_err().kind, RefusalKind::BadRequest, "{m} {raw}");
        }
        assert!(target("GET", "api.test:443").is_err() && wrong_method("GET", "api.test:443"));
    }

    #[test]
    fn rewrite_to_origin_form_checks_host_and_drops_hop_headers() {
        let h = head("GET http://a.test:8080/p HTTP/1.1\r\nHost: A.test:8080\r\nProxy-Connection: keep-alive\r\nConnection: x-hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n");
        let t = target(&h.method, &h.target).unwrap();
        let (bytes, body) = rewrite(&h, &t).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, "GET /p HTTP/1.1\r\nHost: A.test:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n");
        assert_eq!(body, 0);
        let h = head("POST http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n");
        assert!(rewrite(&h, &target(&h.method, &h.target).unwrap())
            .unwrap_err()
            .reason
            .contains("does not name"));
        let h = head("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(rewrite(&h, &target(&h.method, &h.target).unwrap()).is_err());
        let h = head("POST http://a.test/ HTTP/1.1\r\nHost: a.test:80\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(rewrite(&h, &target(&h.method, &h.target).unwrap()).unwrap().1, 5);
    }

    #[test]
    fn heads_and_statuses() {
        assert!(parse_head(b"GET http://a.test/ HTTP/1.1\r\nHost: a").unwrap().is_none());
        assert!(parse_head(b"GET http://a.test/ HTTP/1.0\r\n\r\n").is_err());
        let h = parse_head(b"CONNECT a.test:443 HTTP/1.0\r\nHost: a.test:443\r\n\r\n").unwrap().unwrap();
        assert_eq!((h.method.as_str(), h.target.as_str()), ("CONNECT", "a.test:443"));
        assert!(parse_head(b"\x16\x03\x01\x00").is_err());
        assert_eq!(response_status(b"HTTP/1.1 204 No Content\r\n"), Some(204));
        assert_eq!(response_status(b"HTTP/1.1 2"), None);
    }
}
