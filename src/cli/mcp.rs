//! `hcpx mcp`: serves the activated packs to an agent host over stdio (MCP), by running `hcpx-mcp`, the
//! binary installed beside `hcpx` that holds the MCP SDK (kept out of every other command's start-up).

use std::os::unix::process::CommandExt;

use super::{fail, McpArgs};
use crate::output::Printer;

/// Replaces this process with `hcpx-mcp` from the same directory; returns only when that fails.
pub fn run(p: &Printer, a: &McpArgs) -> anyhow::Result<u8> {
    let exe = std::env::current_exe()?;
    let server = exe.with_file_name("hcpx-mcp");
    let mut cmd = std::process::Command::new(&server);
    if a.single_tool {
        cmd.arg("--single-tool");
    }
    let err = cmd.exec();
    Ok(fail(
        p,
        &format!(
            "cannot run {}: {}; install hcpx-mcp beside hcpx (cargo install builds both)",
            server.display(),
            hcpx::model::io_reason(&err)
        ),
    ))
}
