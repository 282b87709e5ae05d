//! hcpx-mcp: the MCP face. The activated packs served as tools to an agent host over stdio (the `hcpx-mcp`
//! binary that `hcpx mcp` runs) and, through hcpx-http, over Streamable HTTP. It authenticates a Principal and
//! builds envelopes; every policy, confirm and argument decision stays in the runtime's one pipeline.
//!
//! May use: hcpx-model, hcpx-pack, hcpx-store and hcpx-runtime, and the rmcp SDK. Must never: decide a call
//! itself (grants, the confirm gate and arguments are the pipeline's), take a caller's word for a person's
//! approval, or hold `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::{args, pack};
use hcpx_runtime as runtime;
use hcpx_store as store;

pub mod approval;
pub mod call;
pub mod progress;
pub mod server;
pub mod single;
pub mod skills;
pub mod tool_cache;
pub mod tools;
pub mod watch;
