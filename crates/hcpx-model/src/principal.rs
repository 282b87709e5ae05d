//! Who calls: a Principal with a tenant and grants, reaching the runtime through one Invoker face.

use super::grants::Grants;
use super::wire::wire_enum;

wire_enum! {
    /// The face a call came through; recorded in the audit tuple.
    pub enum Invoker ("invoker") {
        Cli = "cli",
        Json = "json",
        Mcp = "mcp",
        Http = "http",
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub id: String,
    pub tenant: String,
    pub grants: Grants,
    pub invoker: Invoker,
}

impl Principal {
    /// The local CLI Principal: the OS user, tenant `local`.
    pub fn local(grants: Grants, invoker: Invoker) -> Principal {
        let user = std::env::var("USER").ok().filter(|u| !u.is_empty()).unwrap_or_else(|| "local".into());
        Principal { id: user, tenant: "local".into(), grants, invoker }
    }
}
