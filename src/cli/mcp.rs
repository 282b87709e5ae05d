//! `hcpx mcp`: serves the activated packs to an agent host over stdio (MCP). Stdout is the protocol channel:
//! nothing else is written there.

use std::sync::Arc;

use super::{exit, open_store, McpArgs};
use crate::output::Printer;
use hcpx::mcp::server::serve_stdio;
use hcpx::model::grants::Grants;
use hcpx::model::{Invoker, Principal};
use hcpx::runtime::{CallContext, Runtime};

/// Runs `hcpx mcp` until the host closes the connection.
pub fn run(p: &Printer, _a: &McpArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let grants_store = store.clone();
    // The local user, through the MCP face; grants.json is read at each call.
    let principal = Arc::new(move || -> Result<Principal, String> {
        let grants = match grants_store.local_grants() {
            Ok(Some(g)) => Grants::Only(g),
            Ok(None) => Grants::All,
            Err(e) => return Err(format!("denied: grants.json cannot be read: {e}")),
        };
        Ok(Principal::local(grants, Invoker::Mcp))
    });
    let runtime = Arc::new(Runtime::new(store));
    let context = CallContext { project_dir: super::exec::project_dir() };
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    match tokio.block_on(serve_stdio(runtime, principal, context)) {
        Ok(()) => Ok(exit::OK),
        Err(e) => {
            p.error(&e.to_string());
            Ok(exit::FAILURE)
        }
    }
}
