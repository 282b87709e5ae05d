//! The manifest's `hosts` and each command's own `hosts`, parsed into host rules; each refused entry is one lint
//! issue of its kind (malformed, an IP address, not bare, a port out of range).

use super::SURFACE;
use crate::model::diagnostic::{Issues, LintKind};
use crate::pack::hosts::{normalized, HostError, HostRule};

/// Parses the entries of `list` found at `at` (a JSON pointer); the refused ones become issues.
pub(super) fn parse_hosts(list: &[String], at: &str, is: &mut Issues) -> Vec<HostRule> {
    let mut out = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        match HostRule::parse(entry) {
            Ok(r) => out.push(r),
            Err(e) => {
                let (kind, fix) = match &e {
                    HostError::Malformed { .. } => (
                        LintKind::HostMalformed,
                        "write the host as `api.example.com`, `api.example.com:8443`, `http://api.example.com` or `*.example.com`".to_string(),
                    ),
                    HostError::IpLiteral { .. } => (
                        LintKind::HostIpLiteral,
                        "name the host by its DNS name (api.example.com); an address is never a host entry".to_string(),
                    ),
                    HostError::NotBare { bare, .. } => {
                        (LintKind::HostNotBare, format!("write {bare:?}: the scheme, host and port only"))
                    }
                    HostError::PortRange { .. } => {
                        (LintKind::HostPortRange, "give a port from 1 to 65535, or none for the scheme's own".to_string())
                    }
                };
                is.push(kind, SURFACE, format!("{at}/{i}"), e.to_string(), fix);
            }
        }
    }
    normalized(out)
}
