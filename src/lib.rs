//! hcpx: a fail-closed runtime for the Harness Context Protocol (HCP).
//!
//! The library is the runtime; the `hcpx` binary and every other face are thin callers of it.
//! Load a pack with [`pack::Pack::load`], lint one with [`lint::lint_dir`], render argv with
//! [`render::render_argv`], check arguments with [`args::ArgSpec`] and title a step with
//! [`command_title`].
//!
//! The modules are layers, listed here bottom first; each imports only modules above it in this list
//! (docs/architecture.md; `tests/integration/layers.rs` enforces it).

pub use hcpx_model as model;

pub use hcpx_pack::{args, lint, pack, render, template, title};

pub use hcpx_store as store;

pub use hcpx_registry as distribution;

pub mod schema;

pub use hcpx_sandbox as sandbox;

pub use hcpx_runtime::adapter;

pub use hcpx_runtime as runtime;

pub mod fixture;

pub mod trial;

pub mod eval;

pub mod check;
pub mod scaffold;

pub mod mcp;

pub mod serve;

pub use model::{Envelope, ResultEnvelope};
pub use pack::{command_title, Pack, PackError};
pub use runtime::Runtime;
