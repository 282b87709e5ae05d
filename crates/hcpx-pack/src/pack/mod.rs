//! A pack directory turned into a validated `Pack`: the only form the pipeline accepts.

mod build;
pub mod env_deny;
mod files;
pub mod hosts;
pub mod raw;
mod skill;
pub mod tree;
mod unique;

use indexmap::IndexMap;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub use crate::model::{BindingMode, PreviewKind};
pub use build::{analyze, Analysis};
pub use files::MAX_FILE_BYTES;
pub use hosts::{HostError, HostRule, Scheme};
pub use raw::{
    AdapterKind, Hub, Land, NetKind, Operation, Plane, RawEvalFile, RawMeta, Transport, WorkspaceMode,
};
pub use skill::Skill;

use crate::args::ArgSpec;
use crate::model::LintIssue;
use crate::template::Template;
use crate::title::{PreviewSpec, TitleSpec};

/// A pack that passed lint, ready for the pipeline.
#[derive(Debug)]
pub struct Pack {
    /// The directory it was loaded from.
    pub dir: PathBuf,
    pub id: String,
    pub name: Option<String>,
    pub kind: AdapterKind,
    pub plane: Plane,
    pub transports: Vec<Transport>,
    pub cli_bin: Option<String>,
    pub binding: Binding,
    pub wrap: Option<WrapTarget>,
    pub pass_through: Option<PassThrough>,
    /// `component.path`, relative to the pack (no leading `./`), for `kind: composite`.
    pub component: Option<String>,
    /// Where commands run (`wrap.workspace.mode`; composites read it too).
    pub workspace: WorkspaceMode,
    /// The hosts the commands reach (`hosts`), sorted, without repeats; a command may name its own.
    pub hosts: Vec<HostRule>,
    pub commands: IndexMap<String, Command>,
    pub triggers: Vec<String>,
    pub skill: Skill,
    /// The `hcp` metadata object: as declared (and validated) or derived.
    pub meta: RawMeta,
    pub evals: Option<RawEvalFile>,
    /// Built into the runtime (`hcp-cli`, docs/spec.md §17), not installed: the store returns it to every tenant,
    /// activated, and the runtime answers its commands itself (no directory, no component, no process).
    pub built_in: bool,
}

/// The pack's Binding declaration, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub mode: BindingMode,
    pub hub: Option<Hub>,
    pub family: String,
    pub connect_provider_id: Option<String>,
    /// `binding.inject`: the fields bound to a host, each where it goes.
    pub inject: Vec<Inject>,
}

/// A Binding field bound to a host (`binding.inject[]`, validated): the child sees a placeholder, and the value
/// goes only into `slot` of requests to `host`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inject {
    pub field: String,
    pub host: HostRule,
    pub slot: InjectSlot,
}

/// Where a host-bound field's value goes in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InjectSlot {
    /// Anywhere inside this header's value; the name lower-case.
    Header(String),
    /// This query parameter's value.
    Query(String),
}

impl std::fmt::Display for InjectSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InjectSlot::Header(h) => write!(f, "header {h}"),
            InjectSlot::Query(q) => write!(f, "query {q}"),
        }
    }
}

impl Binding {
    /// The fields bound to a host (each once).
    pub fn host_bound(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.inject.iter().map(|i| i.field.as_str()).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// How a wrap pack runs its CLI.
#[derive(Debug, Clone)]
pub struct WrapTarget {
    pub bin: Bin,
    /// The pack-wide JSON flag (default `--json`).
    pub json_flag: Vec<String>,
    /// Fallback argv when a command has no `cli[]`.
    pub argv_template: Vec<Template>,
    /// Environment the bin understands; values may hold `{{binding.FIELD}}`.
    pub agent_env: IndexMap<String, Template>,
    pub workspace: WorkspaceMode,
    /// The network kinds the CLI needs (`wrap.network`), sorted, without repeats.
    pub network: Vec<NetKind>,
    /// The pathname UNIX sockets the CLI connects to (`wrap.unix_sockets`), sorted, without repeats.
    pub unix_sockets: Vec<std::path::PathBuf>,
    /// The paths outside the default view the pack asks to read (`wrap.read`): absolute, without `..`; only
    /// what the operator lends (`sandbox.json` `packs.<id>.read`) is readable.
    pub read: Vec<std::path::PathBuf>,
}

impl WrapTarget {
    /// The paths of `wrap.read` that `lent` (the operator's `packs.<id>.read`) does not cover.
    pub fn read_not_lent(&self, lent: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
        self.read.iter().filter(|p| !lent.iter().any(|l| p.starts_with(l))).cloned().collect()
    }
}

/// `wrap.bin`, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bin {
    /// A bare name: a CLI on PATH, runnable only when allow-listed.
    Name(String),
    /// A path relative to the pack directory, checked to stay inside it.
    Path(String),
}

impl PassThrough {
    /// Whether the argv word `w` may be passed: a non-option, or an option the pack lists.
    pub fn allows_word(&self, w: &str) -> bool {
        !w.starts_with('-')
            || self.allowed_options.iter().any(|o| o == w || (o.ends_with('=') && w.starts_with(o.as_str())))
    }
}

/// `pass_through`: a bootstrap over a few literal subcommands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassThrough {
    pub allowed_subcommands: Vec<String>,
    pub max_argv: u32,
    /// Option words a caller may pass; a listed word ending in `=` allows any value after it.
    pub allowed_options: Vec<String>,
    /// The Policy row of each allowed subcommand.
    pub policy: IndexMap<String, PolicyRow>,
}

/// A command and its Policy row.
#[derive(Debug)]
pub struct Command {
    pub key: String,
    pub description: Option<String>,
    /// `cli[]` after the bin token, parsed.
    pub cli: Option<Vec<Template>>,
    /// The bin token `cli[]` starts with.
    pub cli_bin: Option<String>,
    pub args: ArgSpec,
    pub json_flag: Option<Vec<String>>,
    /// `cli[]` already selects JSON output (`--json`, `-o json`, …).
    pub cli_selects_json: bool,
    pub title: TitleSpec,
    pub preview: Option<PreviewSpec>,
    /// The manifest's legacy `policy` hint.
    pub policy_hint: Option<Operation>,
    pub policy: PolicyRow,
    /// The command's own `hosts`, in place of the pack's; `None`: the pack's.
    pub hosts: Option<Vec<HostRule>>,
    /// The manifest's `long`: a served call of it becomes a task at once.
    pub long: bool,
}

/// A `policy.json` row, defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyRow {
    pub operation: Operation,
    pub confirm: bool,
    pub land: Land,
}

/// Why a pack could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// The pack fails lint; every issue is listed.
    #[error("pack {} fails lint with {} issue(s): {}", .dir.display(), .issues.len(), summary(.issues))]
    Lint { dir: PathBuf, issues: Vec<LintIssue> },
}

fn summary(issues: &[LintIssue]) -> String {
    issues.iter().map(|i| format!("[{}] {}", i.kind.as_str(), i.message)).collect::<Vec<_>>().join("; ")
}

impl Pack {
    /// Loads and validates the pack in `dir`; fails with every lint issue.
    pub fn load(dir: &Path) -> Result<Pack, PackError> {
        let analysis = analyze(dir);
        match analysis.pack {
            Some(pack) if analysis.issues.is_empty() => Ok(pack),
            _ => Err(PackError::Lint { dir: dir.to_path_buf(), issues: analysis.issues }),
        }
    }

    /// The command named `verb_key`.
    pub fn command(&self, verb_key: &str) -> Option<&Command> {
        self.commands.get(verb_key)
    }

    /// The hosts command `verb_key` reaches: its own `hosts`, else the pack's.
    pub fn hosts_of(&self, verb_key: &str) -> &[HostRule] {
        self.command(verb_key).and_then(|c| c.hosts.as_deref()).unwrap_or(&self.hosts)
    }

    /// Every host the pack declares, the pack's and each command's, sorted, without repeats.
    pub fn declared_hosts(&self) -> Vec<HostRule> {
        let own = self.commands.values().filter_map(|c| c.hosts.as_ref()).flatten();
        hosts::normalized(self.hosts.iter().chain(own).cloned().collect())
    }
}

/// `command_title(pack, verb_key, args, result)`: the live title while a command runs, the done title once it has
/// a result, or `None` when the pack declares none for that command and the host uses its own.
pub fn command_title(
    pack: &Pack,
    verb_key: &str,
    args: &Map<String, Value>,
    result: Option<&Value>,
) -> Option<String> {
    pack.command(verb_key)?.title.render(args, result)
}

/// True when declared `cli[]` tokens already select JSON output.
pub fn cli_selects_json<S: AsRef<str>>(tokens: &[S]) -> bool {
    tokens.iter().enumerate().any(|(i, t)| {
        let t = t.as_ref();
        t == "--json"
            || t.starts_with("--json=")
            || matches!(t, "--output=json" | "--format=json" | "-ojson" | "-fjson")
            || (matches!(t, "-o" | "--output" | "--format" | "-f")
                && tokens.get(i + 1).map(|n| n.as_ref()) == Some("json"))
    })
}
