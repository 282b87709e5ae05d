//! `hcpx mcp` and `hcpx serve`: the served faces, each a binary installed beside `hcpx` (`hcpx-mcp`,
//! `hcpx-serve`) that holds its SDKs, so no other command pays their start-up cost.

use std::os::unix::process::CommandExt;

use super::{fail, McpArgs, ServeArgs};
use crate::output::Printer;

/// Serves the activated packs over stdio (MCP).
pub fn run(p: &Printer, a: &McpArgs) -> anyhow::Result<u8> {
    let args: &[&str] = if a.single_tool { &["--single-tool"] } else { &[] };
    replace_with(p, "hcpx-mcp", args.iter().map(|s| s.to_string()).collect())
}

/// Serves the activated packs over HTTP.
pub fn serve(p: &Printer, a: &ServeArgs) -> anyhow::Result<u8> {
    let mut args = vec![
        "--listen".to_string(),
        a.listen.clone(),
        "--max-calls".into(),
        a.max_calls.to_string(),
        "--max-body-bytes".into(),
        a.max_body_bytes.to_string(),
        "--drain-ms".into(),
        a.drain_ms.to_string(),
    ];
    for h in &a.allow_hosts {
        args.extend(["--allow-host".to_string(), h.clone()]);
    }
    if let Some(url) = &a.store {
        args.extend(["--store".to_string(), url.clone()]);
    }
    replace_with(p, "hcpx-serve", args)
}

/// Replaces this process with `name` from the same directory; returns only when that fails.
fn replace_with(p: &Printer, name: &str, args: Vec<String>) -> anyhow::Result<u8> {
    let exe = std::env::current_exe()?;
    let server = exe.with_file_name(name);
    let err = std::process::Command::new(&server).args(args).exec();
    Ok(fail(
        p,
        &format!(
            "cannot run {}: {}; install {name} beside hcpx (cargo install builds it too)",
            server.display(),
            hcpx::model::io_reason(&err)
        ),
    ))
}
