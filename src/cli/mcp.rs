//! `hcpx mcp` and `hcpx serve`: the served faces, each a binary installed beside `hcpx` (`hcpx-mcp`,
//! `hcpx-serve`) that holds its SDKs, so no other command pays their start-up cost.

use std::io::{Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;

use super::{McpArgs, ServeArgs};
use crate::report::CliError;

/// Serves the activated packs over stdio (MCP).
pub fn run(a: &McpArgs) -> anyhow::Result<u8> {
    let args = if a.single_tool { vec!["--single-tool".to_string()] } else { Vec::new() };
    replace_with("hcpx-mcp", args, None)
}

/// Serves the activated packs over HTTP: the flags, parsed here, go to `hcpx-serve` whole, in a file of this
/// process's own memory that it inherits (`--args-fd`); the store they may name is never on the server's
/// command line, which every process on the host reads (`/proc/PID/cmdline`), nor in its environment, which
/// its children could be handed.
pub fn serve(a: &ServeArgs) -> anyhow::Result<u8> {
    let handed = hand_over(a)?;
    let fd = handed.as_raw_fd().to_string();
    replace_with("hcpx-serve", vec!["--args-fd".into(), fd], Some(handed))
}

/// A memory file holding `a` as JSON, read from its start, left open across `exec` (no close-on-exec).
fn hand_over(a: &ServeArgs) -> anyhow::Result<std::fs::File> {
    let fd = rustix::fs::memfd_create(c"hcpx-serve-flags", rustix::fs::MemfdFlags::empty())?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&serde_json::to_vec(a)?)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    Ok(file)
}

/// Replaces this process with `name` from the same directory, `kept` (the flags handed over) open across the
/// replacement; returns only when that fails.
fn replace_with(name: &str, args: Vec<String>, kept: Option<std::fs::File>) -> anyhow::Result<u8> {
    let exe = std::env::current_exe()?;
    let server = exe.with_file_name(name);
    let err = std::process::Command::new(&server).args(args).exec();
    drop(kept);
    Err(CliError::new(format!(
        "cannot run {}: {}; install {name} beside hcpx (cargo install builds it too)",
        server.display(),
        hcpx_model::io_reason(&err)
    ))
    .into())
}
