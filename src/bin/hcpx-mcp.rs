//! `hcpx-mcp`: the MCP face as a binary of its own, which `hcpx mcp` runs. The MCP SDK's code lives only
//! here, so no `hcpx exec` process loads it (each one paid ~0.1–0.2 ms more start-up with it linked in;
//! docs/perf-log.md). Serves the activated packs over stdio; stdout is the protocol channel, errors go to
//! stderr.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use hcpx_cli::McpCli;
use hcpx_mcp::server::serve_stdio;
use hcpx_model::{Invoker, Principal};
use hcpx_runtime::{CallContext, Runtime};
use hcpx_store::Store;

fn fail(message: &str) -> ExitCode {
    let _ = writeln!(std::io::stderr().lock(), "error: {message}");
    ExitCode::from(1)
}

fn main() -> ExitCode {
    // clap answers a usage error, `--help` and `--version` itself, and exits with its code.
    let single_tool = McpCli::parse().args.single_tool;
    let store = match Store::open_default() {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    // The local user through the MCP face; grants.json is read at each call, so a grant taken back holds
    // at once.
    let grants = store.clone();
    let principal = Arc::new(move || -> Result<Principal, String> {
        grants.local_principal(Invoker::Mcp).map_err(|e| format!("denied: {e}"))
    });
    let runtime = Arc::new(Runtime::new(store));
    let tokio = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(t) => t,
        Err(e) => return fail(&format!("cannot start the async runtime: {e}")),
    };
    // A long-lived server: emptied wrap TMPDIRs are reused (hcpx-sandbox's calltmp.rs), removed before it exits.
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(true);
    let served = tokio.block_on(serve_stdio(runtime, principal, CallContext::local(), single_tool));
    hcpx_runtime::adapter::wrap::reuse_tmpdirs(false);
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}
