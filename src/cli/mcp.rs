//! `hcpx mcp` and `hcpx serve`: the served faces, each a binary installed beside `hcpx` (`hcpx-mcp`,
//! `hcpx-serve`) that holds its SDKs, so no other command pays their start-up cost.

use std::os::unix::process::CommandExt;

use super::{fail, McpArgs, ServeArgs};
use crate::output::Printer;

/// Serves the activated packs over stdio (MCP).
pub fn run(p: &Printer, a: &McpArgs) -> anyhow::Result<u8> {
    let args: &[&str] = if a.single_tool { &["--single-tool"] } else { &[] };
    replace_with(p, "hcpx-mcp", args.iter().map(|s| s.to_string()).collect(), None)
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
        "--header-timeout-ms".into(),
        a.header_timeout_ms.to_string(),
    ];
    for h in &a.allow_hosts {
        args.extend(["--allow-host".to_string(), h.clone()]);
    }
    // The store goes on in the environment, never on the server's command line, where every process on the
    // host reads it (`/proc/PID/cmdline`); the environment is the process's own and its user's.
    replace_with(p, "hcpx-serve", args, a.store.as_deref())
}

/// Replaces this process with `name` from the same directory, with `store` as its `HCP_STORE` when given;
/// returns only when that fails.
fn replace_with(p: &Printer, name: &str, args: Vec<String>, store: Option<&str>) -> anyhow::Result<u8> {
    let exe = std::env::current_exe()?;
    let server = exe.with_file_name(name);
    let mut cmd = std::process::Command::new(&server);
    cmd.args(args);
    if let Some(store) = store {
        cmd.env("HCP_STORE", store);
    }
    let err = cmd.exec();
    Ok(fail(
        p,
        &format!(
            "cannot run {}: {}; install {name} beside hcpx (cargo install builds it too)",
            server.display(),
            hcpx::model::io_reason(&err)
        ),
    ))
}
