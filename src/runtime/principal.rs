//! Who calls: a Principal with a tenant and grants, reaching the runtime through one Invoker face.

use serde::{Deserialize, Serialize};

use crate::grants::Grants;

/// The face a call came through; recorded in the audit tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Invoker {
    Cli,
    Json,
    Mcp,
    Http,
}

impl Invoker {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Invoker::Cli => "cli",
            Invoker::Json => "json",
            Invoker::Mcp => "mcp",
            Invoker::Http => "http",
        }
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
