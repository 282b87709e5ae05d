//! The `hcpx` binary: parses the command line, runs one subcommand, and maps the outcome to a documented exit code.

mod cli;
mod output;

use clap::Parser;
use std::process::ExitCode;

use cli::Command;

fn main() -> ExitCode {
    let parsed = match cli::Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return ExitCode::from(cli::usage::report(&e)),
    };
    let p = output::Printer::new(parsed.json);
    let result = match &parsed.command {
        Command::Lint(a) => cli::lint::run(&p, a),
        Command::Eval(a) => cli::eval::run(&p, a),
        Command::Check(a) => cli::check::run(&p, a),
        Command::Wrap(a) => cli::wrap::run(&p, a),
        Command::New(a) => cli::new::run(&p, a),
        Command::Install(a) => cli::manage::install(&p, a),
        Command::Publish(a) => cli::publish::run(&p, a),
        Command::Update(a) => cli::update::run(&p, a),
        Command::Lock(a) => cli::lock::run(&p, a),
        Command::Trust(c) => cli::trust::run(&p, c),
        Command::Key(c) => cli::key::run(&p, c),
        Command::Uninstall(a) => cli::manage::uninstall(&p, a),
        Command::Activate(a) => cli::manage::set_activated(&p, a, true),
        Command::Deactivate(a) => cli::manage::set_activated(&p, a, false),
        Command::List => cli::manage::list(&p),
        Command::Availability(a) => cli::info::availability(&p, a),
        Command::Commands(a) => cli::info::commands(&p, a),
        Command::Skill(a) => cli::info::skill(&p, a),
        Command::Exec(a) => cli::exec::run(&p, a),
        Command::Connect(a) => cli::connect::run(&p, a),
        Command::Title(a) => cli::info::title(&p, a),
        Command::Allow(a) => cli::manage::allow(&p, a, true),
        Command::Disallow(a) => cli::manage::allow(&p, a, false),
        Command::AllowNetwork(a) => cli::manage::network(&p, a, true),
        Command::DisallowNetwork(a) => cli::manage::network(&p, a, false),
        Command::AllowRead(a) => cli::manage::read_paths(&p, a, true),
        Command::DisallowRead(a) => cli::manage::read_paths(&p, a, false),
        Command::Grant(a) => cli::grant::grant(&p, a),
        Command::Revoke(a) => cli::grant::revoke(&p, a),
        Command::Nested(cli::NestedCommand::Audit(a)) => cli::audit::run(&p, a),
        Command::Doctor => cli::doctor::run(&p),
        Command::Credential(c) => cli::credential::run(&p, c),
        Command::Completions(a) => cli::completions::run(&p, a),
        Command::Mcp(a) => cli::mcp::run(&p, a),
        Command::Serve(a) => cli::mcp::serve(&p, a),
        Command::Approve(a) => cli::approve::approve(&p, a),
        Command::Refuse(a) => cli::approve::refuse(&p, a),
        Command::Principal(c) => cli::principal::run(&p, c),
        Command::Sense(c) => cli::sense::run(&p, c),
        Command::Store(c) => cli::store::run(&p, c),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => ExitCode::from(cli::fail(&p, &format!("{e:#}"))),
    }
}
