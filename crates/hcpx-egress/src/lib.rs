//! hcpx-egress: network by host name (issue #36, docs/egress.md). A `Policy` of plain rules (scheme, DNS name,
//! port) decides each request; `resolve` classifies every address a name resolves to and refuses private,
//! metadata and other non-public ones; the `Proxy` is a loopback HTTP/1.1 forward proxy that lets through only
//! what the rules allow (CONNECT with a matching TLS SNI for HTTPS, absolute-form requests for plain HTTP),
//! connects only to the addresses it resolved itself (pinned), and reports one `EgressEvent` per request.
//! For a call with host-bound credentials (issue #36 point 5), `Secrets` puts each real value where its rule
//! says and refuses a placeholder anywhere else, and the proxy terminates the call's HTTPS with a `CallCa` of its
//! own, verifying each origin against the system's roots (`upstream`).
//!
//! May use: tokio's network and the system resolver, and the connections its rules allow. Must never: depend
//! on another hcpx crate or on pack or store types (it takes plain rules), connect to an address it did not
//! resolve and classify itself, let an IP literal or a non-public address through except where the policy
//! says, or hold `unsafe` code.

#![forbid(unsafe_code)]

pub mod addr;
mod body;
pub mod ca;
mod http;
pub mod proxy;
pub mod refusal;
pub mod rules;
pub mod secrets;
pub mod sni;
mod splice;
mod terminate;
pub mod upstream;

pub use addr::{classify, resolve, AddrClass};
pub use ca::CallCa;
pub use proxy::{EgressEvent, Limits, Proxy, ProxyHandle, StartError};
pub use refusal::{Refusal, RefusalKind};
pub use rules::{Policy, Rule, RuleError, Scheme};
pub use secrets::{placeholder, Secret, Secrets, Slot};
