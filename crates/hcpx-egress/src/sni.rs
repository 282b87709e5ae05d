//! The server name a TLS client asks for, read from its ClientHello (RFC 8446 §4.1.2, RFC 6066 §3) before any
//! byte of it reaches the origin, so a CONNECT tunnel carries TLS for the host it named and no other. Written
//! here (about a hundred lines of bounds-checked reads) rather than taken from a TLS-parsing crate: only the
//! record framing and one extension are needed. `read_hello` reads one from a CONNECT's client and checks it.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

use crate::http::Target;
use crate::refusal::{Refusal, RefusalKind};
use crate::rules::normalize_host;

/// A ClientHello larger than this (its handshake message, over however many records) is refused.
pub const MAX_HELLO: usize = 32 * 1024;

const HANDSHAKE: u8 = 22;
const CLIENT_HELLO: u8 = 1;
const EXT_SERVER_NAME: u16 = 0;
const EXT_ECH: u16 = 0xfe0d;

/// What the bytes read so far say.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// Not a whole ClientHello yet: read more.
    Incomplete,
    /// A whole ClientHello: its host name (none if it sent no SNI) and whether it offers Encrypted Client Hello
    /// (whose outer name is not the one the client means).
    Complete { server_name: Option<String>, ech: bool },
    /// Not a TLS ClientHello, or a malformed one.
    Invalid(&'static str),
}

/// Reads the ClientHello at the start of `buf` (the client's first bytes in the tunnel).
pub fn parse(buf: &[u8]) -> Hello {
    // Join the payloads of the handshake records until the message's own length is there.
    let mut message = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = buf.get(at..at + 5) else { return Hello::Incomplete };
        if header[0] != HANDSHAKE {
            return Hello::Invalid("the first record is not a tls handshake");
        }
        if header[1] != 3 {
            return Hello::Invalid("the record's version is not tls");
        }
        let len = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if len == 0 || len > 16384 + 256 {
            return Hello::Invalid("a handshake record of a length tls does not allow");
        }
        let Some(payload) = buf.get(at + 5..at + 5 + len) else { return Hello::Incomplete };
        message.extend_from_slice(payload);
        at += 5 + len;
        if message.len() >= 4 {
            if message[0] != CLIENT_HELLO {
                return Hello::Invalid("the first handshake message is not a clienthello");
            }
            let body_len =
                (usize::from(message[1]) << 16) | (usize::from(message[2]) << 8) | usize::from(message[3]);
            if body_len > MAX_HELLO {
                return Hello::Invalid("the clienthello is larger than the proxy reads");
            }
            if message.len() >= 4 + body_len {
                return match client_hello(&message[4..4 + body_len]) {
                    Some(hello) => hello,
                    None => Hello::Invalid("a malformed clienthello"),
                };
            }
        }
    }
}

/// A cursor of bounds-checked big-endian reads.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(usize::from(n))
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }
}

fn client_hello(body: &[u8]) -> Option<Hello> {
    let mut r = Reader(body);
    r.take(2)?; // legacy_version
    r.take(32)?; // random
    r.vec8()?; // legacy_session_id
    r.vec16()?; // cipher_suites
    r.vec8()?; // legacy_compression_methods
    if r.0.is_empty() {
        return Some(Hello::Complete { server_name: None, ech: false });
    }
    let mut exts = Reader(r.vec16()?);
    let (mut server_name, mut ech, mut seen_sni) = (None, false, false);
    while !exts.0.is_empty() {
        let kind = exts.u16()?;
        let data = exts.vec16()?;
        match kind {
            EXT_SERVER_NAME if seen_sni => return Some(Hello::Invalid("two server_name extensions")),
            EXT_SERVER_NAME => {
                seen_sni = true;
                server_name = match host_name(data) {
                    Ok(name) => Some(name),
                    Err(why) => return Some(Hello::Invalid(why)),
                };
            }
            EXT_ECH => ech = true,
            _ => {}
        }
    }
    Some(Hello::Complete { server_name, ech })
}

/// The one host_name of a server_name extension.
fn host_name(data: &[u8]) -> Result<String, &'static str> {
    let malformed = "a malformed server_name extension";
    let mut r = Reader(data);
    let mut list = Reader(r.vec16().ok_or(malformed)?);
    let mut name = None;
    while !list.0.is_empty() {
        let kind = list.u8().ok_or(malformed)?;
        let value = list.vec16().ok_or(malformed)?;
        if kind != 0 {
            continue;
        }
        if name.is_some() {
            return Err("two host names in server_name");
        }
        let text = std::str::from_utf8(value).map_err(|_| "a server name that is not ascii")?;
        if !text.is_ascii() || text.is_empty() {
            return Err("a server name that is not ascii");
        }
        name = Some(text.to_string());
    }
    name.ok_or("a server_name extension with no host name")
}

/// After the `200` of a CONNECT: reads the client's TLS ClientHello and requires its SNI to be the CONNECT host;
/// returns the bytes read (to be relayed, or replayed into a terminating TLS server). `Err(None)`: the client
/// failed; `Err(Some(_))`: the hello is refused.
pub(crate) async fn read_hello(
    client: &mut TcpStream,
    t: &Target,
    mut hello: Vec<u8>,
) -> Result<Vec<u8>, Option<Refusal>> {
    let refuse = |why: String| Some(Refusal::new(RefusalKind::SniMismatch, why));
    let name = loop {
        match parse(&hello) {
            Hello::Complete { ech: true, .. } => {
                return Err(refuse(format!("the clienthello to {} offers encrypted client hello, which hides the server name; the tunnel carries tls for {} only", t.host, t.host)));
            }
            Hello::Complete { server_name: Some(name), .. } => break name,
            Hello::Complete { server_name: None, .. } => {
                return Err(refuse(format!(
                    "the clienthello names no server (sni); the tunnel to {} carries tls for {} only",
                    t.host, t.host
                )));
            }
            Hello::Invalid(why) => {
                return Err(refuse(format!("{why} in the tunnel to {}; it carries tls only", t.host)))
            }
            Hello::Incomplete => {}
        }
        if hello.len() > MAX_HELLO + 4096 {
            return Err(refuse(format!("no whole clienthello in {} bytes", hello.len())));
        }
        let mut chunk = vec![0u8; 4096];
        let n = client.read(&mut chunk).await.map_err(|_| None)?;
        if n == 0 {
            return Err(refuse(format!("the tunnel to {} closed before a tls clienthello", t.host)));
        }
        hello.extend_from_slice(&chunk[..n]);
    };
    let same = match (normalize_host(&name), normalize_host(&t.host)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return Err(refuse(format!(
            "the clienthello names {name}, the connect target is {}; one tunnel carries tls for its own host",
            t.host
        )));
    }
    Ok(hello)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ClientHello with these extensions, framed in records of at most `record` bytes.
    fn hello(exts: &[(u16, Vec<u8>)], record: usize) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        let mut ext_bytes = Vec::new();
        for (kind, data) in exts {
            ext_bytes.extend(kind.to_be_bytes());
            ext_bytes.extend((data.len() as u16).to_be_bytes());
            ext_bytes.extend(data);
        }
        body.extend((ext_bytes.len() as u16).to_be_bytes());
        body.extend(ext_bytes);
        let mut msg = vec![CLIENT_HELLO, 0, (body.len() >> 8) as u8, body.len() as u8];
        msg.extend(body);
        let mut out = Vec::new();
        for chunk in msg.chunks(record) {
            out.extend([HANDSHAKE, 3, 1, (chunk.len() >> 8) as u8, chunk.len() as u8]);
            out.extend(chunk);
        }
        out
    }

    fn sni(names: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for n in names {
            list.push(0);
            list.extend((n.len() as u16).to_be_bytes());
            list.extend(n.as_bytes());
        }
        let mut data = (list.len() as u16).to_be_bytes().to_vec();
        data.extend(list);
        data
    }

    #[test]
    fn reads_the_server_name_from_one_or_many_records() {
        for record in [16384, 40, 7] {
            let bytes = hello(&[(10, vec![0, 2, 0, 29]), (0, sni(&["api.test"]))], record);
            let want = Hello::Complete { server_name: Some("api.test".into()), ech: false };
            assert_eq!(parse(&bytes), want, "records of {record}");
            for cut in [0, 3, 5, bytes.len() - 1] {
                assert_eq!(parse(&bytes[..cut]), Hello::Incomplete, "cut at {cut}");
            }
        }
    }

    #[test]
    fn no_sni_ech_and_malformed_hellos() {
        assert_eq!(parse(&hello(&[], 16384)), Hello::Complete { server_name: None, ech: false });
        let ech = hello(&[(0, sni(&["public.test"])), (EXT_ECH, vec![1, 2, 3])], 16384);
        assert_eq!(parse(&ech), Hello::Complete { server_name: Some("public.test".into()), ech: true });
        assert!(matches!(parse(&hello(&[(0, sni(&["a.test", "b.test"]))], 16384)), Hello::Invalid(_)));
        assert!(matches!(
            parse(&hello(&[(0, sni(&["a.test"])), (0, sni(&["b.test"]))], 99)),
            Hello::Invalid(_)
        ));
        assert!(matches!(parse(&hello(&[(0, vec![0, 9, 0])], 16384)), Hello::Invalid(_)));
        assert!(matches!(parse(b"GET / HTTP/1.1\r\n"), Hello::Invalid(_)));
        let mut not_hello = hello(&[], 16384);
        not_hello[5] = 2;
        assert!(matches!(parse(&not_hello), Hello::Invalid(_)));
    }
}
