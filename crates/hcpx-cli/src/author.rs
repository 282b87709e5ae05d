//! A pack author's commands: lint, eval, check, wrap and new.

use std::path::PathBuf;

use hcpx_author::scaffold::new::GuestLang;

use crate::calls::ProjectArg;

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
