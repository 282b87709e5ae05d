//! hcpx-author: what a pack author runs before a pack is shared. `hcpx check` reviews a pack and scores it
//! (`check`), `hcpx eval` replays its cases (`eval`), both in a throw-away store built once (`trial`) on a
//! fresh copy of the project (`fixture`); `hcpx new` and `hcpx wrap` scaffold packs (`scaffold`), and `schema`
//! derives the JSON Schemas of the files hcpx reads from their loaders' own types.
//!
//! May use: hcpx-model, hcpx-pack, hcpx-store, hcpx-sandbox and hcpx-runtime. Must never: touch the operator's
//! own store, project or files (every run works on a copy, in a store of its own), run a pack's code other than
//! through the runtime's pipeline and sandbox, or hold `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::{args, lint, pack, render, template};
use hcpx_runtime as runtime;
use hcpx_runtime::adapter;
use hcpx_sandbox as sandbox;
use hcpx_store as store;

pub mod schema;

pub mod fixture;

pub mod trial;

pub mod eval;

pub mod check;
pub mod scaffold;
