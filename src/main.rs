//! The `hcpx` binary: parses the command line, runs one subcommand, and maps the outcome to a documented exit code.

// The process starts at our own `main` rather than std's (see `main` below).
#![no_main]

mod cli;
mod output;
mod report;

use cli::Command;

/// The process entry, in place of std's start-up: std asks glibc for the main thread's stack bounds, which reads
/// and parses `/proc/self/maps` (about 0.1 ms of every one-shot `hcpx exec` on the project machine,
/// docs/perf-log.md, #25), to print a message on a stack overflow that kills the process either way. What
/// else std does before `main` is done here: the standard descriptors are made to exist (so no file the
/// runtime opens can land on 0, 1 or 2 and receive its output), SIGPIPE is ignored (a closed pipe is an
/// `EPIPE` error, not a silent death), and stdout is flushed at the end.
#[unsafe(no_mangle)]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    if !standard_fds_open() {
        return libc::c_int::from(cli::exit::FAILURE);
    }
    // SAFETY: setting a signal's disposition to "ignore" has no memory effects; no handler is involved.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = run();
    let _ = std::io::Write::flush(&mut std::io::stdout());
    libc::c_int::from(code)
}

/// `pow`, for the one dependency that calls it (tokio's scheduler statistics), and `log2` (num-bigint's radix
/// conversion): all the binary took from `libm.so.6`, whose load (mapping, binding, nine page faults) cost every
/// call about 0.05 ms (docs/perf-log.md, #25). The `libm` crate's are musl's, within an ulp of glibc's.
/// Defined in the executable, they are what its own calls bind to (and what a library loaded later would get
/// for these two names: the same functions); should a new dependency call another function of libm, the
/// linker takes `libm.so.6` again (nothing breaks, it is slower).
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// See [`pow`].
#[unsafe(no_mangle)]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// Opens `/dev/null` on any of descriptors 0, 1 and 2 that is closed, as std's start-up does; false if one cannot
/// be opened.
fn standard_fds_open() -> bool {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // SAFETY: a NUL-terminated path; the lowest free descriptor, `fd`, is the one opened.
            if unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } != fd {
                return false;
            }
        }
    }
    true
}

fn run() -> u8 {
    let parsed = match cli::Cli::parse_args() {
        Ok(c) => c,
        Err(e) => return cli::usage::report(&e),
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
        Command::AllowHost(a) => cli::manage::hosts(&p, a, true),
        Command::DisallowHost(a) => cli::manage::hosts(&p, a, false),
        Command::AllowRead(a) => cli::manage::read_paths(&p, a, true),
        Command::DisallowRead(a) => cli::manage::read_paths(&p, a, false),
        Command::Tasks(a) => cli::tasks::run(&p, a),
        Command::Config(c) => cli::config::run(&p, c),
        Command::Grant(a) => cli::grant::grant(&p, a),
        Command::Revoke(a) => cli::grant::revoke(&p, a),
        Command::Nested(cli::NestedCommand::Audit(a)) => cli::audit::run(&p, a),
        Command::Nested(cli::NestedCommand::Auth(c)) => cli::auth::run(&p, c),
        Command::Doctor => cli::doctor::run(&p),
        Command::Credential(c) => cli::credential::run(&p, c),
        Command::Completions(a) => cli::completions::run(&p, a),
        Command::Mcp(a) => cli::mcp::run(a),
        Command::Serve(a) => cli::mcp::serve(a),
        Command::Approve(a) => cli::approve::approve(&p, a),
        Command::Refuse(a) => cli::approve::refuse(&p, a),
        Command::Principal(c) => cli::principal::run(&p, c),
        Command::Sense(c) => cli::sense::run(&p, c),
        Command::Store(c) => cli::store::run(&p, c),
    };
    match result {
        Ok(code) => code,
        Err(e) => report::print_error(&p, &e),
    }
}
