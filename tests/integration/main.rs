//! The one integration test binary: every test gets its own temp dir, and CLI tests drive the real `hcpx`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

mod approvals;
mod args;
mod attacks;
mod audit_chain;
mod authoring;
mod bootstrap;
mod check;
mod cli;
mod composite;
mod composite_lang;
mod connect;
mod conventions;
mod docs;
mod escape;
mod escape_gaps;
mod eval;
mod exec;
mod fixes;
mod format;
mod fuzz_smoke;
mod golden;
mod helpers;
mod layers;
mod lint;
mod mcp;
mod new;
mod operator;
mod pg;
mod properties;
mod render;
mod robustness;
mod seed_texts;
mod sense;
mod serve;
mod serve_ops;
mod serve_path;
mod store;
mod store_pg;
mod store_pg_replicas;
mod tenants;
mod titles;
mod wire;
