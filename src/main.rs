//! The `hcpx` binary: parses the command line, runs one subcommand, and maps the outcome to a documented exit code.

mod cli;
mod output;

use clap::Parser;
use std::process::ExitCode;

use cli::Command;

fn main() -> ExitCode {
    let parsed = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { cli::exit::USAGE } else { cli::exit::OK };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let json = wants_json(&parsed.command);
    let result = match &parsed.command {
        Command::Lint(a) => cli::lint::run(a),
        Command::Eval(a) => cli::eval::run(a),
        Command::Check(a) => cli::check::run(a),
        Command::Wrap(a) => cli::wrap::run(a),
        Command::Install(a) => cli::manage::install(a),
        Command::Uninstall(a) => cli::manage::uninstall(a),
        Command::Activate(a) => cli::manage::set_activated(a, true),
        Command::Deactivate(a) => cli::manage::set_activated(a, false),
        Command::List(a) => cli::manage::list(a),
        Command::Availability(a) => cli::info::availability(a),
        Command::Commands(a) => cli::info::commands(a),
        Command::Skill(a) => cli::info::skill(a),
        Command::Exec(a) => cli::exec::run(a),
        Command::Title(a) => cli::info::title(a),
        Command::Allow(a) => cli::manage::allow(a, true),
        Command::Disallow(a) => cli::manage::allow(a, false),
        Command::AllowNetwork(a) => cli::manage::network(a, true),
        Command::DisallowNetwork(a) => cli::manage::network(a, false),
        Command::Audit(a) => cli::audit::run(a),
        Command::Doctor(a) => cli::doctor::run(a),
        Command::Credential(c) => cli::credential::run(c),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => ExitCode::from(cli::fail(&output::Printer::new(json), &format!("{e:#}"))),
    }
}

fn wants_json(c: &Command) -> bool {
    use cli::CredentialCmd;
    match c {
        Command::Lint(a) => a.json.json,
        Command::Install(a) => a.json.json,
        Command::Eval(a) => a.json.json,
        Command::Check(a) => a.json.json,
        Command::Wrap(a) => a.json.json,
        Command::Uninstall(a) | Command::Availability(a) | Command::Commands(a) => a.json.json,
        Command::Activate(a) | Command::Deactivate(a) => a.json.json,
        Command::List(a) | Command::Audit(a) | Command::Doctor(a) => a.json,
        Command::Skill(a) => a.json.json,
        Command::Exec(a) => a.json.json,
        Command::Title(a) => a.json.json,
        Command::Allow(a) | Command::Disallow(a) => a.json.json,
        Command::AllowNetwork(a) | Command::DisallowNetwork(a) => a.json.json,
        Command::Credential(CredentialCmd::Set { json, .. } | CredentialCmd::Rm { json, .. }) => json.json,
        Command::Credential(CredentialCmd::List(j)) => j.json,
        Command::Credential(CredentialCmd::Allow { json, .. } | CredentialCmd::Disallow { json, .. }) => {
            json.json
        }
    }
}
