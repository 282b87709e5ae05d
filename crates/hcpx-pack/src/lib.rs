//! hcpx-pack: an HCP pack as the runtime reads it — its manifest, Policy and Skill loaded and checked (`pack`),
//! lint (`lint`), argument schemas (`args`), `{{…}}` templates (`template`), titles (`title`) and argv rendered
//! from JSON arguments (`render`, never a shell).
//!
//! May use: hcpx-model, and read a pack's own directory (through cap-std, never following a link out of it).
//! Must never: depend on the store, the sandbox or the runtime, spawn a process, reach the network, or hold
//! `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the model as `crate::model`, as they did in one crate.
use hcpx_model as model;

pub mod template;

pub mod args;
pub mod title;

pub mod pack;

pub mod lint;
pub mod render;

pub use pack::{command_title, Pack, PackError};
