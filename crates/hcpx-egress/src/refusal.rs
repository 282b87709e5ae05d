//! Why a request did not go through: one stable kind for the audit log and tests, and a one-line lowercase
//! reason for the person reading it, naming the value and the fix.

use std::fmt;

/// The stable kind of a refusal; `as_str` is the spelling the audit log records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefusalKind {
    /// No rule names this scheme, host and port.
    NotAllowed,
    /// The host is an IP address, not a DNS name.
    IpLiteral,
    /// The name resolves to an address that is not public (and the policy does not allow it).
    PrivateAddress,
    /// The TLS ClientHello names another server than the CONNECT target, or none.
    SniMismatch,
    /// The request is not one the proxy speaks (origin-form, another method, a malformed head).
    BadRequest,
    /// A limit was passed: connections, bytes, the deadline or the size of a request head.
    Limit,
    /// The name did not resolve.
    ResolveFailed,
    /// No resolved address accepted the connection.
    ConnectFailed,
    /// A credential placeholder where its rule does not send it (another host, header, the path, a body).
    Placeholder,
    /// The origin's TLS certificate did not verify for its host against the system's roots (a terminated
    /// tunnel, where hcpx is the client).
    UpstreamTls,
    /// A response holds the real value of a host-bound credential (an origin that echoes it); it was cut.
    CredentialEcho,
}

impl RefusalKind {
    pub const ALL: [RefusalKind; 11] = [
        Self::NotAllowed,
        Self::IpLiteral,
        Self::PrivateAddress,
        Self::SniMismatch,
        Self::BadRequest,
        Self::Limit,
        Self::ResolveFailed,
        Self::ConnectFailed,
        Self::Placeholder,
        Self::UpstreamTls,
        Self::CredentialEcho,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAllowed => "not_allowed",
            Self::IpLiteral => "ip_literal",
            Self::PrivateAddress => "private_address",
            Self::SniMismatch => "sni_mismatch",
            Self::BadRequest => "bad_request",
            Self::Limit => "limit",
            Self::ResolveFailed => "resolve_failed",
            Self::ConnectFailed => "connect_failed",
            Self::Placeholder => "placeholder",
            Self::UpstreamTls => "upstream_tls",
            Self::CredentialEcho => "credential_echo",
        }
    }

    /// The status the proxy answers with when it can still answer (before a tunnel is established).
    pub fn status(self) -> u16 {
        match self {
            Self::NotAllowed
            | Self::IpLiteral
            | Self::PrivateAddress
            | Self::SniMismatch
            | Self::Placeholder => 403,
            Self::BadRequest => 400,
            Self::Limit => 503,
            Self::ResolveFailed | Self::ConnectFailed | Self::UpstreamTls | Self::CredentialEcho => 502,
        }
    }
}

impl fmt::Display for RefusalKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused request: its kind and a one-line lowercase reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("egress {kind}: {reason}")]
pub struct Refusal {
    pub kind: RefusalKind,
    pub reason: String,
}

impl Refusal {
    pub fn new(kind: RefusalKind, reason: impl Into<String>) -> Self {
        Self { kind, reason: reason.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_spelled_once_and_distinctly() {
        let mut names: Vec<&str> = RefusalKind::ALL.iter().map(|k| k.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RefusalKind::ALL.len());
        let r = Refusal::new(RefusalKind::IpLiteral, "host 10.0.0.1 is an ip address");
        assert_eq!(r.to_string(), "egress ip_literal: host 10.0.0.1 is an ip address");
    }
}
