//! hcpx-cli: the command lines of the `hcpx` binaries as clap types, and nothing else: `hcpx` parses [`Cli`],
//! `hcpx-serve` the same [`ServeArgs`] that `hcpx serve` shows, and shell completions come from these types.
//! Each subcommand's logic lives in the binary crate (src/cli/), one module per subcommand.
//!
//! May use: clap, and hcpx-author and hcpx-registry for the defaults and options their flags stand for. Must
//! never: open a store, run a command, print, or hold `unsafe` code.

#![forbid(unsafe_code)]

pub mod examples;

mod author;
mod calls;
mod distribution;
mod faces;
mod operator;

pub use author::*;
pub use calls::*;
pub use distribution::*;
pub use faces::*;
pub use operator::*;

use clap::{Parser, Subcommand};

/// Exit codes of `hcpx` (docs/cli.md).
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Failure: a denial, a failed command, lint issues, bad input.
    pub const FAILURE: u8 = 1;
    /// Usage error (unknown flag, missing argument).
    pub const USAGE: u8 = 2;
    /// Warning: degraded but usable (`doctor`), the same number as a usage error (docs/spec.md §11).
    pub const WARNING: u8 = 2;
    // `hcpx exec` takes a denial's exit code from `Code::status()` (127 for `sandbox_denied`), the one
    // table every face reads.
}

/// A fail-closed runtime for the Harness Context Protocol.
#[derive(Debug, Parser)]
#[command(
    name = "hcpx",
    version,
    about = "A fail-closed runtime for the Harness Context Protocol (HCP)",
    propagate_version = true
)]
pub struct Cli {
    /// Print exactly one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line, parsed. `hcpx exec …`, which a host runs once per tool call, is read by hand when it
    /// is plain (no option but `--json`), else parsed against the exec subcommand alone, sparing clap the
    /// other forty (docs/perf-log.md, #25); an exec line neither accepts outright (help, version, a usage
    /// error) is parsed again by the whole CLI, so every message, and every other command, comes from the one
    /// definition below.
    pub fn parse_args() -> Result<Cli, clap::Error> {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if args.get(1).is_some_and(|a| a == "exec") {
            if let Some(plain) = plain_exec(&args[2..]) {
                return Ok(plain);
            }
            if let Ok(ExecOnly { json, command: ExecOnlyCommand::Exec(a) }) = ExecOnly::try_parse_from(&args)
            {
                return Ok(Cli { json, command: Command::Exec(a) });
            }
        }
        Cli::try_parse_from(args)
    }
}

/// The plainest exec line, `ID [VERB] [WORDS…]` with at most one `--json` anywhere and no other option, read
/// without clap (whose code is then not even paged in); `None` for anything else: an option, a word that starts
/// with `-`, a word that is not UTF-8, no ID. A `--` ends the options as it does for clap: every word after it is
/// positional, whatever it starts with (`hcpx exec ID VERB --json -- k=v`, the line hosts are told to write).
/// What it accepts means what clap would make of it.
fn plain_exec(words: &[std::ffi::OsString]) -> Option<Cli> {
    let mut json = false;
    let mut positional = Vec::with_capacity(words.len());
    let mut options_ended = false;
    for w in words {
        let w = w.to_str()?;
        if options_ended {
            positional.push(w.to_string());
        } else if w == "--" {
            options_ended = true;
        } else if w == "--json" && !json {
            json = true;
        } else if w.starts_with('-') {
            return None;
        } else {
            positional.push(w.to_string());
        }
    }
    let mut positional = positional.into_iter();
    let id = positional.next()?;
    let verb = positional.next().unwrap_or_default();
    let words = positional.collect();
    let exec = ExecArgs {
        id,
        verb,
        words,
        mode: None,
        project_id: None,
        verbose: false,
        dry_run: false,
        project: ProjectArg { dir: None },
    };
    Some(Cli { json, command: Command::Exec(exec) })
}

/// `hcpx exec` alone, with the same global flag: a line it accepts, [`Cli`] accepts with the same meaning
/// (`an_exec_line_means_the_same_to_the_fast_and_the_whole_parser` in tests/integration/cli.rs compares them).
#[derive(Debug, Parser)]
#[command(name = "hcpx")]
pub struct ExecOnly {
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: ExecOnlyCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExecOnlyCommand {
    Exec(ExecArgs),
}

// The subcommands whose arguments hold subcommands of their own, defined with the others (not deferred).
#[derive(Debug, Subcommand)]
pub enum NestedCommand {
    /// The audit log, newest last; filter it by pack and time, or keep the last N.
    #[command(after_help = examples::AUDIT)]
    Audit(AuditArgs),
    /// Manage how a served runtime authenticates callers besides principals.json: OAuth issuers (`auth issuer`).
    #[command(subcommand, after_help = examples::AUTH)]
    Auth(AuthCmd),
}

// `hcpx approve [ID]`.
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The approval's id (ap_…), from the call's `approval_pending` answer; none lists the pending approvals.
    pub id: Option<String>,
}

// `hcpx refuse ID`.
#[derive(Debug, clap::Args)]
pub struct RefuseArgs {
    /// The approval's id (ap_…).
    pub id: String,
}

// The subcommands. Each one's arguments are defined only when it is the one invoked (`defer`): a call builds
// one subcommand, not all forty (about 0.4 ms of every `hcpx exec`, docs/perf-log.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Check that a pack's three files exist and agree.
    #[command(after_help = examples::LINT)]
    Lint(LintArgs),
    /// Replay a pack's hcp.eval.json cases through the runtime, one line per case.
    #[command(after_help = examples::EVAL)]
    Eval(EvalArgs),
    /// Score a pack: static rules, probes (`--probe`) and evals; exit 0 clean, 2 warnings, 1 errors.
    #[command(after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Scaffold a pack from a CLI on PATH (reads its `--help`).
    #[command(after_help = examples::WRAP)]
    Wrap(WrapArgs),
    /// Scaffold a new pack: a composite (a Rust, Python or JavaScript guest built to a WASI component) or a wrap of a CLI on PATH.
    New(NewArgs),
    /// Lint a pack and copy it into the store, from a directory or an OCI registry (oci://host/repo:tag or @sha256:…).
    #[command(
        after_help = examples::INSTALL,
        override_usage = "hcpx install [OPTIONS] <DIR|REF>\n       hcpx install --locked [--lock-file <FILE>] [OPTIONS]"
    )]
    Install(InstallArgs),
    /// Lint and check a pack, then push it to an OCI registry as one artifact (signed with --sign); prints its digest.
    #[command(after_help = examples::PUBLISH)]
    Publish(PublishArgs),
    /// Move a pack installed from a registry to another tag: same signer only, Policy changes shown first.
    #[command(after_help = examples::UPDATE)]
    Update(UpdateArgs),
    /// Write hcp.lock: each registry pack's reference, digest and signer, for hcpx install --locked.
    #[command(after_help = examples::LOCK)]
    Lock(LockArgs),
    /// Manage the keys trusted to sign packs, per registry prefix (trust.json).
    #[command(subcommand, after_help = examples::TRUST)]
    Trust(TrustCmd),
    /// Make a signing key pair for hcpx publish --sign (PEM, cosign-compatible ECDSA P-256).
    #[command(subcommand, after_help = examples::KEY)]
    Key(KeyCmd),
    /// Remove an installed pack (its workspace is kept).
    #[command(after_help = examples::UNINSTALL)]
    Uninstall(IdArgs),
    /// Activate installed packs.
    #[command(after_help = examples::ACTIVATE)]
    Activate(ActivateArgs),
    /// Deactivate packs.
    #[command(after_help = examples::DEACTIVATE)]
    Deactivate(ActivateArgs),
    /// Installed packs and their state.
    #[command(after_help = examples::LIST)]
    List,
    /// The four flags: installed, activated, bound, runnable.
    #[command(after_help = examples::AVAILABILITY)]
    Availability(IdArgs),
    /// Each command (or one) with its arguments and a ready-to-run `hcpx exec` line.
    #[command(after_help = examples::COMMANDS)]
    Commands(CommandsArgs),
    /// The Skill's lead, or the whole text with --full.
    #[command(after_help = examples::SKILL)]
    Skill(SkillArgs),
    /// Run a command through the pipeline.
    #[command(after_help = examples::EXEC)]
    Exec(ExecArgs),
    /// Link a pack's Binding by running its `connect` command (needs pack.connect), or take the link back.
    #[command(after_help = examples::CONNECT)]
    Connect(ConnectArgs),
    /// The live title, or the done title given a result.
    #[command(after_help = examples::TITLE)]
    Title(TitleArgs),
    /// Allow bare bins (CLIs on PATH) to run.
    #[command(after_help = examples::ALLOW)]
    Allow(BinsArgs),
    /// Remove bins from the allow-list.
    #[command(after_help = examples::DISALLOW)]
    Disallow(BinsArgs),
    /// Let a pack's commands use the network kinds it declares (wrap.network): inet, netlink.
    #[command(after_help = examples::ALLOW_NETWORK)]
    AllowNetwork(NetworkArgs),
    /// Take network kinds back from a pack (all of them when none is named).
    #[command(after_help = examples::DISALLOW_NETWORK)]
    DisallowNetwork(NetworkArgs),
    /// Allow hosts a pack declares (`hosts`), for every tenant or one (sandbox.json packs.<id>.hosts); a wrap's
    /// command reaches them only through its call's egress proxy.
    #[command(after_help = examples::ALLOW_HOST)]
    AllowHost(HostArgs),
    /// Take allowed hosts back from a pack (all of them, for every tenant or the one named, when none is named).
    #[command(after_help = examples::DISALLOW_HOST)]
    DisallowHost(HostArgs),
    /// Let a pack's commands read paths beyond the default view (sandbox.json packs.<id>.read): what a call
    /// refused by Landlock names.
    #[command(after_help = examples::ALLOW_READ)]
    AllowRead(ReadArgs),
    /// Take extra read paths back from a pack (all of them when none is named).
    #[command(after_help = examples::DISALLOW_READ)]
    DisallowRead(ReadArgs),
    /// When a served call becomes a task, and how long a task is kept once it ended (sandbox.json tasks); with no
    /// flag, the settings now.
    #[command(after_help = examples::TASKS)]
    Tasks(TasksArgs),
    /// Show, set and unset the operator settings (sandbox.json: limits, require, human_approval, tasks, egress, …)
    /// on either store, checked before they are written and audited.
    #[command(subcommand, after_help = examples::CONFIG)]
    Config(ConfigCmd),
    /// Give the local Principal grants (grants.json); with none named, list the grants it holds.
    #[command(after_help = examples::GRANT)]
    Grant(GrantArgs),
    /// Take grants back from the local Principal (grants.json).
    #[command(after_help = examples::REVOKE)]
    Revoke(RevokeArgs),
    // Not deferred: its arguments hold a subcommand of their own (`audit verify`), which `hcpx help audit verify`
    // and the completion scripts must see when the whole tree is built.
    #[command(flatten)]
    Nested(NestedCommand),
    /// Health of the runtime and the store.
    #[command(after_help = examples::DOCTOR)]
    Doctor,
    /// Manage credentials in the local hub.
    #[command(subcommand, after_help = examples::CREDENTIAL)]
    Credential(CredentialCmd),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    #[command(after_help = examples::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Serve the activated packs to an agent host over stdio (Model Context Protocol).
    #[command(after_help = examples::MCP)]
    Mcp(McpArgs),
    /// Serve the activated packs over HTTP (the JSON API and MCP at /mcp) to the Principals of principals.json.
    #[command(after_help = examples::SERVE)]
    Serve(ServeArgs),
    /// Approve a write waiting for a person (sandbox.json human_approval); with no id, list the waiting ones.
    #[command(after_help = examples::APPROVE)]
    Approve(ApproveArgs),
    /// Refuse a write waiting for a person: it never runs.
    #[command(after_help = examples::REFUSE)]
    Refuse(RefuseArgs),
    /// Manage the Principals a served runtime authenticates (principals.json).
    #[command(subcommand, after_help = examples::PRINCIPAL)]
    Principal(PrincipalCmd),
    /// Push a pack's declared stimulus (Sense), or watch the stimuli of the packs you hold sense.announce for.
    #[command(subcommand, after_help = examples::SENSE)]
    Sense(SenseCmd),
    /// Manage the store's back end: migrate a PostgreSQL store's schema, or move a store between files and PostgreSQL.
    #[command(subcommand, after_help = examples::STORE)]
    Store(StoreCmd),
}
