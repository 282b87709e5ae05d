//! hcpx-cli: the command lines of the `hcpx` binaries as clap types, and nothing else: `hcpx` parses [`Cli`],
//! `hcpx-serve` the same [`ServeArgs`] that `hcpx serve` shows, and shell completions come from these types.
//! Each subcommand's logic lives in the binary crate (src/cli/), one module per subcommand.
//!
//! May use: clap, and hcpx-author and hcpx-registry for the defaults and options their flags stand for. Must
//! never: open a store, run a command, print, or hold `unsafe` code.

#![forbid(unsafe_code)]

pub mod examples;

use clap::{Parser, Subcommand};
use hcpx_author::scaffold::new::GuestLang;
use std::path::PathBuf;

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
/// with `-`, a word that is not UTF-8, no ID. What it accepts means what clap would make of it.
fn plain_exec(words: &[std::ffi::OsString]) -> Option<Cli> {
    let mut json = false;
    let mut positional = Vec::with_capacity(words.len());
    for w in words {
        let w = w.to_str()?;
        if w == "--json" && !json {
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
    /// Let a pack's commands read paths beyond the default view (sandbox.json packs.<id>.read): what a call
    /// refused by Landlock names.
    #[command(after_help = examples::ALLOW_READ)]
    AllowRead(ReadArgs),
    /// Take extra read paths back from a pack (all of them when none is named).
    #[command(after_help = examples::DISALLOW_READ)]
    DisallowRead(ReadArgs),
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

// `hcpx store …` (docs/hosting.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum StoreCmd {
    /// Apply the schema migrations this hcpx knows to the PostgreSQL store named by HCP_STORE, and print its version.
    #[command(after_help = examples::STORE_MIGRATE)]
    Migrate,
    /// Write the PostgreSQL store named by HCP_STORE as a file store in DIR (missing or empty), with each
    /// tenant's audit chain verbatim in DIR/audit/.
    #[command(after_help = examples::STORE_EXPORT)]
    Export {
        /// Where to write the file store.
        dir: PathBuf,
    },
    /// Load the file store at DIR (an HCP_HOME, or an export) into the empty PostgreSQL store named by HCP_STORE.
    #[command(after_help = examples::STORE_IMPORT)]
    Import {
        /// The file store to read.
        dir: PathBuf,
    },
}

// `hcpx sense …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SenseCmd {
    /// Record an upstream push of PACK's declared trigger REF; the payload is JSON on stdin (empty: `{}`).
    #[command(after_help = examples::SENSE_EMIT)]
    Emit {
        /// The pack id.
        pack: String,
        /// The trigger (a `stimulusTriggers` ref of the pack).
        #[arg(value_name = "REF")]
        reference: String,
    },
    /// Print the events of the packs you hold sense.announce for, oldest first; with --follow, keep printing
    /// new ones until interrupted.
    #[command(after_help = examples::SENSE_WATCH)]
    Watch {
        /// Only this pack's events (denied without sense.announce for it).
        #[arg(long)]
        pack: Option<String>,
        /// Only events after this id (the last one you saw), to resume.
        #[arg(long, value_name = "ID", default_value_t = 0)]
        after: u64,
        /// Keep watching for new events (polls the store) until interrupted; with --json, one JSON line per event.
        #[arg(long)]
        follow: bool,
    },
}

// `hcpx serve`: parsed once, by `hcpx`, and handed to `hcpx-serve` whole ([`ServeCli::args_fd`]).
#[derive(Debug, Clone, PartialEq, Eq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8420")]
    pub listen: String,
    /// Calls run at once; past it a call is answered 503 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub max_calls: usize,
    /// The largest request body accepted, in bytes.
    #[arg(long, default_value_t = 1_048_576)]
    pub max_body_bytes: usize,
    /// Hosts (`host` or `host:port`) the server answers to, besides the loopback names; a request naming another
    /// host in its Host header is refused (DNS rebinding). Repeat for several.
    #[arg(long = "allow-host")]
    pub allow_hosts: Vec<String>,
    /// The store every replica shares: a postgres:// URL (default: HCP_STORE, else the files under HCP_HOME).
    /// Other processes can read a command line: keep any password out of it (PGPASSWORD or a password file,
    /// ~/.pgpass or PGPASSFILE), or set HCP_STORE instead.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// After SIGTERM, keep serving this many milliseconds with `/readyz` answering 503, so a load balancer
    /// stops sending calls before the server stops taking connections.
    #[arg(long, default_value_t = 0)]
    pub drain_ms: u64,
    /// A client that has not sent a whole request head after this many milliseconds (or leaves a connection
    /// idle that long) is dropped.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_ms: u64,
    /// After the drain, how long the calls in flight may take to finish before the server stops anyway.
    #[arg(long, default_value_t = 65_000, hide = true)]
    pub grace_ms: u64,
}

/// `hcpx-serve`'s own command line: the flags of `hcpx serve`, the same type, or the descriptor through which
/// `hcpx serve` hands them over already parsed.
#[derive(Debug, Parser)]
#[command(name = "hcpx-serve", version, about = "The HTTP face of hcpx: `hcpx serve` runs it")]
pub struct ServeCli {
    #[command(flatten)]
    pub args: ServeArgs,
    /// An open file holding the flags `hcpx serve` parsed, as JSON: the store named by `--store` reaches the
    /// server on no command line and in no environment, where other processes (or its children) could read it.
    #[arg(long, value_name = "FD", hide = true)]
    pub args_fd: Option<i32>,
}

/// `hcpx-mcp`'s own command line: the flags of `hcpx mcp`, the same type.
#[derive(Debug, Parser)]
#[command(name = "hcpx-mcp", version, about = "The MCP face of hcpx over stdio: `hcpx mcp` runs it")]
pub struct McpCli {
    #[command(flatten)]
    pub args: McpArgs,
}

// `hcpx principal …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PrincipalCmd {
    /// Add a Principal and print its bearer token (shown once; only its SHA-256 is kept).
    #[command(after_help = examples::PRINCIPAL_ADD)]
    Add {
        /// The Principal's id.
        id: String,
        /// Its tenant: its workspaces, credentials and audit rows are apart from every other tenant's.
        #[arg(long)]
        tenant: String,
        /// A grant, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB` (e.g. `verb.exec.read:*`). Repeat for several.
        #[arg(long = "grant")]
        grants: Vec<String>,
        /// May read the runtime's health (`GET /v1/doctor`).
        #[arg(long)]
        operator: bool,
        /// May approve or refuse its tenant's pending approvals over HTTP (never its own calls').
        #[arg(long)]
        approver: bool,
        /// Its MCP client is a person's own: with `--approver`, the person's answer to the approval card that
        /// client shows counts as an approval of its own call (`sandbox.json` `human_approval`). Vouch for it
        /// only where a person, never a model, answers the client's questions.
        #[arg(long, requires = "approver")]
        person: bool,
    },
    /// Remove a Principal; its token stops working at once.
    #[command(after_help = examples::PRINCIPAL_RM)]
    Rm {
        /// The Principal's id.
        id: String,
    },
    /// The Principals, their tenants and grants (never tokens).
    #[command(after_help = examples::PRINCIPAL_LIST)]
    List,
    /// Give a Principal more grants; its token is unchanged.
    #[command(after_help = examples::PRINCIPAL_GRANT)]
    Grant {
        /// The Principal's id.
        id: String,
        /// Grants, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
        #[arg(required = true)]
        grants: Vec<String>,
    },
    /// Take grants from a Principal; every face refuses what they covered at once.
    #[command(after_help = examples::PRINCIPAL_REVOKE)]
    Revoke {
        /// The Principal's id.
        id: String,
        /// Grants, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
        #[arg(required = true)]
        grants: Vec<String>,
    },
}

// `hcpx mcp`.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Serve one `hcp` tool taking `list`, `commands PACK`, `skill PACK`, `exec PACK VERB {json}` (for hosts
    /// with many packs) instead of one tool per command.
    #[arg(long)]
    pub single_tool: bool,
}

// `hcpx lint DIR [--json]`.
#[derive(Debug, clap::Args)]
pub struct LintArgs {
    /// The pack directory.
    pub dir: PathBuf,
}

// `hcpx eval DIR [--json] [--timeout MS]`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The pack directory.
    pub dir: PathBuf,
    /// Per-case timeout in milliseconds.
    #[arg(long, default_value_t = hcpx_author::eval::DEFAULT_TIMEOUT_MS)]
    pub timeout: u64,
    #[command(flatten)]
    pub project: ProjectArg,
}

// Where `project`-mode commands run.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProjectArg {
    /// The project directory `project`-mode commands run in (default: $HCP_PROJECT_DIR, else the current
    /// directory). A pack whose hcp.eval.json names a fixture runs its evals and probes in a fresh copy instead.
    #[arg(long = "project", id = "project", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

// A pack directory.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The pack directory.
    pub dir: PathBuf,
    /// Also run every read the way an agent does, through the sandbox and pipeline (never a write).
    #[arg(long)]
    pub probe: bool,
    /// Print the report as a Markdown fix list for a coding agent.
    #[arg(long)]
    pub agent: bool,
    /// Write a starter hcp.eval.json first, unless one exists (an existing one is left as it is).
    #[arg(long)]
    pub init_evals: bool,
    /// Add the starter cases an existing hcp.eval.json lacks (a read with no case, a gated write with no
    /// refusal), after its own; writes a new one where there is none.
    #[arg(long)]
    pub add_evals: bool,
    /// Fail (exit 1) on warnings too.
    #[arg(long)]
    pub strict: bool,
    /// Limit for each probe and eval case, in milliseconds.
    #[arg(long, default_value_t = hcpx_author::eval::DEFAULT_TIMEOUT_MS)]
    pub timeout: u64,
    /// Skip the eval layer.
    #[arg(long)]
    pub no_eval: bool,
    #[command(flatten)]
    pub project: ProjectArg,
}

#[derive(Debug, clap::Args)]
pub struct WrapArgs {
    /// A CLI on PATH, by name.
    pub bin: String,
    /// Where to write the pack (default: ./<pack id>); must be new or empty.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The pack id (default: made from BIN).
    #[arg(long)]
    pub id: Option<String>,
}

// `hcpx new composite|wrap DIR [--id ID] [--bin BIN] [--lang rust|python|js]`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  hcpx new composite greeter          a pack whose commands run in a WASI component built from greeter/guest
  greeter/build.sh                    build the component (cargo, wasm32-wasip2) into greeter/adapter.wasm
  hcpx new composite greeter --lang python   the same pack, its guest in Python (componentize-py)
  hcpx new composite greeter --lang js       the same pack, its guest in JavaScript (componentize-js)
  hcpx check greeter --probe --strict
  hcpx new wrap gitpack --bin git     a wrap of `git`, its template commands left as writes to classify")]
pub struct NewArgs {
    /// What to scaffold.
    #[arg(value_enum)]
    pub kind: NewKindArg,
    /// Where to write the pack; must be new or empty.
    pub dir: PathBuf,
    /// The pack id (default: made from DIR's name).
    #[arg(long)]
    pub id: Option<String>,
    /// With `wrap`: the CLI on PATH to wrap, by name.
    #[arg(long, required_if_eq("kind", "wrap"))]
    pub bin: Option<String>,
    /// With `composite`: the language of the component's guest (default: rust).
    #[arg(long, value_enum, default_value = "rust", hide_default_value = true)]
    pub lang: LangArg,
}

/// The languages `hcpx new composite` writes a guest in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LangArg {
    /// A Rust crate, built with cargo for wasm32-wasip2.
    Rust,
    /// A Python module, built with componentize-py.
    Python,
    /// A JavaScript module, built with componentize-js.
    Js,
}

impl From<LangArg> for GuestLang {
    fn from(l: LangArg) -> GuestLang {
        match l {
            LangArg::Rust => GuestLang::Rust,
            LangArg::Python => GuestLang::Python,
            LangArg::Js => GuestLang::Js,
        }
    }
}

/// The kinds `hcpx new` scaffolds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NewKindArg {
    /// Commands run in-process in a WASI component built from a guest inside the pack (see --lang).
    Composite,
    /// Commands run a CLI on PATH.
    Wrap,
}

// `hcpx install DIR|REF [--replace [--keep-workspace]]`, or `hcpx install --locked` (every pack hcp.lock pins).
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The pack directory, or a registry reference: oci://host/repo:tag or oci://host/repo@sha256:…. Without it,
    /// --locked installs every pack the lock file pins.
    #[arg(required_unless_present = "locked", value_name = "DIR|REF")]
    pub dir: Option<PathBuf>,
    /// Replace a pack of the same id installed from another directory (it is deactivated).
    #[arg(long)]
    pub replace: bool,
    /// With --replace: keep the replaced pack's workspace for the new one.
    #[arg(long, requires = "replace")]
    pub keep_workspace: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// A registry pack no trusted key signed may be installed (written to the audit log).
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Install only the digest and signer hcp.lock pins for this reference; with no reference, every pack it
    /// pins, all or nothing.
    #[arg(long)]
    pub locked: bool,
    /// The lock file read by --locked.
    #[arg(long, default_value = "hcp.lock", requires = "locked")]
    pub lock_file: PathBuf,
    /// For a pack already installed from the same repository with other content: apply it after reviewing the
    /// changes the install shows (as `hcpx update` does).
    #[arg(long)]
    pub yes: bool,
    /// For a pack already installed from the same repository: install a build signed before the installed one
    /// (a rollback); refused without it.
    #[arg(long)]
    pub allow_downgrade: bool,
}

// How a registry is reached.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Allow plain HTTP to a registry that is not on loopback (loopback registries always may).
    #[arg(long)]
    pub insecure: bool,
    /// Limit for each registry request, in milliseconds.
    #[arg(long = "registry-timeout", value_name = "MS", default_value_t = 30_000)]
    pub timeout_ms: u64,
}

impl RegistryArgs {
    pub fn options(&self) -> hcpx_registry::Options {
        hcpx_registry::Options {
            insecure: self.insecure,
            timeout: std::time::Duration::from_millis(self.timeout_ms.max(1)),
        }
    }
}

// `hcpx publish DIR REF`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The pack directory.
    pub dir: PathBuf,
    /// Where to push it: oci://host/repo:tag.
    pub reference: String,
    /// Sign the manifest digest with this P-256 private key (PEM), as cosign does.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// Refuse to publish when hcpx check scores the pack below this.
    #[arg(long, default_value_t = 90)]
    pub min_score: u32,
    /// Limit for each eval case of the check, in milliseconds.
    #[arg(long, default_value_t = hcpx_author::eval::DEFAULT_TIMEOUT_MS)]
    pub timeout: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

// `hcpx update ID`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The installed pack.
    pub id: String,
    /// The tag to move to (default: the tag it was installed from, as it is now).
    #[arg(long)]
    pub tag: Option<String>,
    /// Apply the update after reviewing the changes it shows.
    #[arg(long)]
    pub yes: bool,
    /// Move to a build signed before the installed one (a rollback); refused without it.
    #[arg(long)]
    pub allow_downgrade: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

// `hcpx lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Where to write the lock file.
    #[arg(long, default_value = "hcp.lock")]
    pub file: PathBuf,
}

// `hcpx trust …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TrustCmd {
    /// Trust a public key (PEM) to sign the packs under a registry prefix.
    #[command(after_help = examples::TRUST_ADD)]
    Add {
        /// A name for the key (replaces a key of that name).
        name: String,
        /// The public key, PEM (a private key's public half is taken).
        key: PathBuf,
        /// The references it may sign: host[:port] or host[:port]/path.
        #[arg(long)]
        prefix: String,
    },
    /// Stop trusting a key.
    #[command(after_help = examples::TRUST_REMOVE)]
    Remove {
        /// The key's name.
        name: String,
    },
    /// The trusted keys.
    #[command(after_help = examples::TRUST_LIST)]
    List,
}

// `hcpx key …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum KeyCmd {
    /// Write a new P-256 private key (PKCS#8 PEM, owner-only) and its public key beside it (.pub).
    #[command(after_help = examples::KEY_GENERATE)]
    Generate {
        /// Where to write the private key; the public key goes to the same path with .pub added.
        path: PathBuf,
    },
}

// One pack id.
#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// The pack id.
    pub id: String,
}

// `hcpx activate ID… [--tenant T]` / `hcpx deactivate ID… [--tenant T]`.
#[derive(Debug, clap::Args)]
pub struct ActivateArgs {
    /// Pack ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Only for this tenant (`local`, or the tenant of a Principal); without it, for every tenant that made
    /// no choice of its own.
    #[arg(long)]
    pub tenant: Option<String>,
}

// `hcpx commands ID [VERB]`.
#[derive(Debug, clap::Args)]
pub struct CommandsArgs {
    /// The pack id (`hcp-cli` for the built-in bootstrap pack).
    pub id: String,
    /// Only this command.
    pub verb: Option<String>,
}

// `hcpx audit [--pack ID] [--since WHEN] [--limit N]`, or `hcpx audit verify [--head HASH]`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub action: Option<AuditCmd>,
    /// Only calls of this pack.
    #[arg(long)]
    pub pack: Option<String>,
    /// Only calls at or after WHEN: a time (`2026-01-31`, `2026-01-31T09:00:00Z`) or an age (`90m`, `2h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only the last N calls (after the other filters).
    #[arg(long)]
    pub limit: Option<usize>,
}

// `hcpx connect PACK [--revoke] [-- words…]`.
#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The pack whose Binding to link.
    pub id: String,
    /// Arguments of the connect command, as for exec (`provider=github`).
    pub words: Vec<String>,
    /// Take the link back: calls of every pack of the family are refused until a connect succeeds again (the
    /// stored credential is kept; `hcpx credential rm` removes it).
    #[arg(long, conflicts_with = "words")]
    pub revoke: bool,
}

// `hcpx audit …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum AuditCmd {
    /// Check the audit chain: exit 0 when every line follows the one before, from the genesis to the recorded
    /// head; 1 naming the first broken link (an edited, deleted, inserted or moved line, a cut tail, an
    /// emptied log).
    #[command(after_help = examples::AUDIT_VERIFY)]
    Verify(AuditVerifyArgs),
}

// `hcpx audit verify [--head HASH]`.
#[derive(Debug, clap::Args)]
pub struct AuditVerifyArgs {
    /// A head recorded earlier, elsewhere (the `head` a past verify printed): it must still be a line of the
    /// chain, so a log rewritten together with audit.head is caught too.
    #[arg(long, value_name = "HASH")]
    pub head: Option<String>,
    /// Only this tenant's chain (a PostgreSQL store keeps one chain per tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Verify an exported chain (`hcpx store export` writes DIR/audit/TENANT.log with its .head beside it)
    /// instead of the store's.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

// `hcpx completions SHELL`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

// `hcpx skill ID [--full]`.
#[derive(Debug, clap::Args)]
pub struct SkillArgs {
    /// The pack id.
    pub id: String,
    /// The whole Skill, not only its lead.
    #[arg(long)]
    pub full: bool,
}

// `hcpx exec ID VERB [--json] [--mode mock] -- k=v k2:=<json> …`.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The pack id.
    pub id: String,
    /// The command (verb_key); without it, the pack's commands are listed.
    #[arg(default_value = "", hide_default_value = true)]
    pub verb: String,
    /// Arguments: k=v, k:=<json>, or bare words for x-position arguments.
    pub words: Vec<String>,
    /// `mock`: ask for an explicit mock Binding.
    #[arg(long, value_parser = ["mock"])]
    pub mode: Option<String>,
    /// The project id in scope (for land `brain`); default $HCP_PROJECT_ID.
    #[arg(long)]
    pub project_id: Option<String>,
    /// Show the exact command line as well as the title.
    #[arg(long)]
    pub verbose: bool,
    /// Show what the call would run (argv, working directory, environment names, Binding mode, the approval
    /// card) after every check but the confirm gate, and run nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub project: ProjectArg,
}

// `hcpx title ID VERB [--result JSON] -- k=v…`.
#[derive(Debug, clap::Args)]
pub struct TitleArgs {
    /// The pack id.
    pub id: String,
    /// The command (verb_key).
    pub verb: String,
    /// Arguments as for exec.
    pub words: Vec<String>,
    /// The JSON result: gives the done title instead of the live one.
    #[arg(long)]
    pub result: Option<String>,
}

// Bin names.
#[derive(Debug, clap::Args)]
pub struct BinsArgs {
    /// Bare bin names, as a pack's `wrap.bin` gives them (looked up on PATH).
    #[arg(required = true)]
    pub bins: Vec<String>,
}

// `hcpx grant [GRANT…]`.
#[derive(Debug, clap::Args)]
pub struct GrantArgs {
    /// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB` (as `hcpx principal add --grant` takes it), e.g.
    /// `verb.exec.read:*` or `verb.exec.write:ledger:transfer`.
    pub grants: Vec<String>,
    /// Hold only the grants named: every other grant is taken away (and a grants.json that does not parse is
    /// replaced). Without it a grant only ever adds.
    #[arg(long, requires = "grants")]
    pub only: bool,
}

// `hcpx revoke GRANT…`.
#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`: a grant held, or some commands of one.
    #[arg(required = true)]
    pub grants: Vec<String>,
}

// `hcpx allow-read PACK PATH…` / `hcpx disallow-read PACK [PATH…]`.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// The pack id.
    pub pack: String,
    /// Absolute paths (a directory covers what is beneath it), e.g. /sys.
    pub paths: Vec<PathBuf>,
}

// `hcpx allow-network PACK KIND…` / `hcpx disallow-network PACK [KIND…]`.
#[derive(Debug, clap::Args)]
pub struct NetworkArgs {
    /// The pack id.
    pub pack: String,
    /// `inet` (TCP and UDP over IPv4 and IPv6) or `netlink` (interfaces, addresses, routes).
    pub kinds: Vec<String>,
}

// `hcpx credential …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum CredentialCmd {
    /// Store FIELD of FAMILY, reading the value from stdin.
    #[command(after_help = examples::CREDENTIAL_SET)]
    Set {
        /// The credential family (`binding.family`).
        family: String,
        /// The field (`{{binding.FIELD}}` in a pack's agent_env).
        field: String,
        /// Store it for one Principal (`user` Binding) instead of the whole family (`local`).
        #[arg(long)]
        principal: Option<String>,
        /// The tenant whose hub holds it (a served runtime's; `local` is the local user's).
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Remove a field, or the whole family.
    #[command(after_help = examples::CREDENTIAL_RM)]
    Rm {
        /// The credential family.
        family: String,
        /// One field; without it, the whole family.
        field: Option<String>,
        /// The Principal whose credential to remove (`user` Binding).
        #[arg(long)]
        principal: Option<String>,
        /// The tenant whose hub holds it.
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Families and field names (never values).
    #[command(after_help = examples::CREDENTIAL_LIST)]
    List {
        /// The tenant whose hub to list.
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Let packs use FAMILY's credentials (the pack named like the family owns it already).
    #[command(after_help = examples::CREDENTIAL_ALLOW)]
    Allow {
        /// The credential family.
        family: String,
        /// Pack ids.
        #[arg(required = true)]
        packs: Vec<String>,
    },
    /// Stop packs from using FAMILY's credentials.
    #[command(after_help = examples::CREDENTIAL_DISALLOW)]
    Disallow {
        /// The credential family.
        family: String,
        /// Pack ids.
        #[arg(required = true)]
        packs: Vec<String>,
    },
    /// Re-seal every credential of the PostgreSQL store under the key in FILE (then point HCP_SEAL_KEY_FILE at it).
    #[command(after_help = examples::CREDENTIAL_ROTATE_KEY)]
    RotateKey {
        /// The new key file: 32 random bytes, readable by its owner only.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
}
