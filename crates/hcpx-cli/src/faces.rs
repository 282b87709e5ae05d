//! The flags of the served faces: `hcpx serve` (and `hcpx-serve`, which takes the same type) and `hcpx mcp`.

use clap::Parser;

// `hcpx serve`: parsed once, by `hcpx`, and handed to `hcpx-serve` whole ([`ServeCli::args_fd`]).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8420")]
    pub listen: String,
    /// Calls run at once; past it a call is answered 503 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub max_calls: usize,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 1_048_576)]
    pub max_body_bytes: usize,
    /// Hosts (`host` or `host:port`) the server answers to, besides the loopback names; a request naming another
    /// host in its Host header is refused (DNS rebinding). Repeat for several.
    #[arg(long = "allow-host")]
    pub allow_hosts: Vec<String>,
    /// The store every replica shares: a postgres:// URL (default: HCP_STORE, else the files under HCP_HOME).
    /// Other processes can read a command line: keep any password out of it (PGPASSWORD or a password file,
    /// ~/.pgpass or PGPASSFILE), or set HCP_STORE instead.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// After SIGTERM, keep serving this many milliseconds with `/readyz` answering 503, so a load balancer
    /// stops sending calls before the server stops taking connections.
    #[arg(long, default_value_t = 0)]
    pub drain_ms: u64,
    /// A client that has not sent a whole request head after this many milliseconds (or leaves a connection
    /// idle that long) is dropped.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_ms: u64,
    /// After the drain, how long the calls in flight may take to finish before the server stops anyway.
    #[arg(long, default_value_t = 65_000, hide = true)]
    pub grace_ms: u64,
}

/// `hcpx-serve`'s own command line: the flags of `hcpx serve`, the same type, or the descriptor through which
/// `hcpx serve` hands them over already parsed.
#[derive(Debug, Parser)]
#[command(name = "hcpx-serve", version, about = "The HTTP face of hcpx: `hcpx serve` runs it")]
pub struct ServeCli {
    #[command(flatten)]
    pub args: ServeArgs,
    /// An open file holding the flags `hcpx serve` parsed, as JSON: the store named by `--store` reaches the
    /// server on no command line and in no environment, where other processes (or its children) could read it.
    #[arg(long, value_name = "FD", hide = true)]
    pub args_fd: Option<i32>,
}

/// `hcpx-mcp`'s own command line: the flags of `hcpx mcp`, the same type.
#[derive(Debug, Parser)]
#[command(name = "hcpx-mcp", version, about = "The MCP face of hcpx over stdio: `hcpx mcp` runs it")]
pub struct McpCli {
    #[command(flatten)]
    pub args: McpArgs,
}

// `hcpx mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Serve one `hcp` tool taking `list`, `commands PACK`, `skill PACK`, `exec PACK VERB {json}` (for hosts
    /// with many packs) instead of one tool per command.
    #[arg(long)]
    pub single_tool: bool,
}
