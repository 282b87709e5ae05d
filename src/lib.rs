//! hcpx: a fail-closed runtime for the Harness Context Protocol (HCP).
//!
//! The library is the runtime; the `hcpx` binary and every other face are thin callers of it.
//! Load a pack with [`pack::Pack::load`], lint one with [`lint::lint_dir`], render argv with
//! [`render::render_argv`], check arguments with [`args::ArgSpec`] and title a step with
//! [`title::command_title`].

pub mod args;
pub mod eval;
pub mod lint;
pub mod naming;
pub mod pack;
pub mod render;
pub mod template;
pub mod title;

pub use pack::{Pack, PackError};
pub use title::command_title;
pub mod adapter;
pub mod check;
pub mod clock;
pub mod grants;
pub mod runtime;
pub mod sandbox;
pub mod scaffold;
pub mod store;
pub mod trial;

pub use runtime::{Envelope, ResultEnvelope, Runtime};
