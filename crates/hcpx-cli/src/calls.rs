//! The commands an agent or a person runs against installed packs: activate, commands, skill, exec, title.

use std::path::PathBuf;

// Where `project`-mode commands run.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProjectArg {
    /// The project directory `project`-mode commands run in (default: $HCP_PROJECT_DIR, else the current
    /// directory). A pack whose hcp.eval.json names a fixture runs its evals and probes in a fresh copy instead.
    #[arg(long = "project", id = "project", value_name = "DIR")]
    pub dir: Option<PathBuf>,
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
