//! The `hcpx` binary: parses the command line, runs one subcommand, and maps the outcome to a documented exit code.

mod cli;
mod output;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let parsed = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { cli::exit::USAGE } else { cli::exit::OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let code = match &parsed.command {
        cli::Command::Lint(a) => cli::lint::run(a),
    };
    ExitCode::from(code)
}
