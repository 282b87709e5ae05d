//! The one integration test binary: every test gets its own temp dir, and CLI tests drive the real `hcpx`.

mod args;
mod docs;
mod helpers;
mod lint;
mod render;
mod robustness;
mod titles;
mod exec;
mod cli;
mod store;
mod composite;
mod bootstrap;
mod golden;
mod eval;
mod attacks;
mod check;
mod escape;
