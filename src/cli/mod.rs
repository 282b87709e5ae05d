//! The `hcpx` command line: clap types only; each subcommand's logic lives in its own module.

pub mod lint;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Exit codes of `hcpx` (docs/cli.md).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Failure: a denial, a failed command, lint issues, bad input.
    pub const FAILURE: u8 = 1;
    /// Usage error (unknown flag, missing argument).
    pub const USAGE: u8 = 2;
    /// Sandbox denial or bin not found.
    pub const SANDBOX: u8 = 127;
}

/// A fail-closed runtime for the Harness Context Protocol.
#[derive(Debug, Parser)]
#[command(name = "hcpx", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check that a pack's three files exist and agree.
    Lint(LintArgs),
}

/// `hcpx lint DIR [--json]`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The pack directory.
    pub dir: PathBuf,
    /// Print one JSON document: { ok, pack_id, issues }.
    #[arg(long)]
    pub json: bool,
}
