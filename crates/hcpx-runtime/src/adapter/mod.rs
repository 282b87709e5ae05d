//! The one exec trait both adapters implement. The allow-list and the limits are enforced behind it, so no
//! caller can forget them. A call runs either blocking (`run`, for synchronous callers) or as a future on the
//! caller's tokio runtime (`run_async`, for the served faces); both do the same work.

pub mod composite;
pub mod egress;
pub mod workspace;
pub mod wrap;

use serde_json::{Map, Value};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use crate::model::{Code, Denial, MintedBinding, Principal, SandboxReport};
use crate::pack::{Command, Pack};
use crate::store::config::SandboxConfig;
use crate::store::Layout;

/// What an adapter may know of the host for a pack: where its files go, the operator's sandbox settings, and
/// the component digest recorded at install. Never the store itself.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    pub layout: &'a Layout,
    pub sandbox: &'a SandboxConfig,
    /// The component digest recorded at install (composites).
    pub component_sha256: Option<&'a str>,
}

/// Everything an adapter may use for one call; nothing else reaches it.
pub struct Call<'a> {
    pub env: Env<'a>,
    pub pack: &'a Pack,
    pub verb_key: &'a str,
    /// The named command, or `None` for a pass-through subcommand.
    pub command: Option<&'a Command>,
    /// The Policy row is a `write` (a read gets the caller's project read-only).
    pub write: bool,
    /// Checked arguments.
    pub args: &'a Map<String, Value>,
    /// Extra argv of a pass-through call.
    pub pass_argv: &'a [String],
    pub binding: &'a MintedBinding,
    /// The caller's project, when the runtime has one.
    pub project_dir: Option<&'a Path>,
    pub principal: &'a Principal,
    /// The live title, shown while the command runs.
    pub live_title: Option<&'a str>,
    pub hooks: &'a dyn ExecHooks,
    /// Set when the caller went away or cancelled: the adapter stops the command.
    pub cancel: &'a crate::model::Cancel,
}

/// What an adapter returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdapterResult {
    pub ok: bool,
    pub code: Option<Code>,
    pub error: Option<String>,
    pub result: Option<Value>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub truncated: Option<bool>,
    /// The process's exit code, when one ran and exited (not killed by a signal).
    pub exit_code: Option<i32>,
    /// The confinement a wrap's child ran under.
    pub sandbox: Option<SandboxReport>,
    /// A built-in pack's write that changes nothing here: the hint naming the `hcpx` line to run instead.
    pub deferred_to_cli: Option<String>,
    /// A wrap's outgoing requests through its egress proxy, in the order they ended (step 7 audits each).
    pub egress: Vec<egress::EgressRow>,
}

impl AdapterResult {
    /// A refusal or failure before or instead of a run.
    pub fn fail(code: Code, error: impl Into<String>) -> AdapterResult {
        AdapterResult { ok: false, code: Some(code), error: Some(error.into()), ..AdapterResult::default() }
    }
}

impl From<Denial> for AdapterResult {
    fn from(d: Denial) -> AdapterResult {
        AdapterResult::fail(d.code, d.message)
    }
}

/// What a call would run, for `hcpx exec --dry-run`: nothing in it is a secret (environment names, never
/// values), and working it out runs nothing and creates nothing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Plan {
    /// The program a wrap spawns, or the component a composite instantiates.
    pub program: String,
    /// A wrap's argv after the program; a composite's `exec(verb, args-json)` inputs.
    pub argv: Vec<String>,
    /// The working directory (a wrap) or the preopen (a composite), in words when it is made per call.
    pub workdir: String,
    /// Whether the call may write it.
    pub workdir_writable: bool,
    /// The names of the environment variables the child or component gets.
    pub env: Vec<String>,
}

/// What owns a call's inputs, so an async run can take them where it needs (a wrap's wait for its child
/// moves to tokio's blocking pool) and keep them as long as the work lasts, even past its caller.
pub trait OwnedCall: Send + Sync + 'static {
    /// The call, borrowed from its owner, watched by `hooks`.
    fn call<'a>(&'a self, hooks: &'a dyn ExecHooks) -> Call<'a>;
}

/// The future of an async run.
pub type RunFuture<'a> = Pin<Box<dyn Future<Output = AdapterResult> + Send + 'a>>;

/// Runs a command for a pack kind.
pub trait Adapter: Send + Sync {
    /// Runs the call in the sandbox, blocking the calling thread (never a task of an async runtime); never
    /// panics, every failure is a value.
    fn run(&self, call: &Call<'_>) -> AdapterResult;

    /// Runs the call as a future on the caller's tokio runtime (which must have its time driver enabled),
    /// unwatched (no hooks), holding none of the runtime's workers while it waits: a composite is awaited in
    /// place, a wrap waits for its child on the blocking pool. Dropped before it ends, the call is abandoned;
    /// set `cancel` first (`CancelOnDrop`) so a wrap's child is stopped too.
    fn run_async(&self, call: Arc<dyn OwnedCall>) -> RunFuture<'_>;

    /// Whether `pack` can run here now, as `availability` reports it: its bin resolves and is allow-listed
    /// and its network granted (wrap), or its component is unchanged, allow-listed and loads (composite).
    fn runnable(&self, pack: &Pack, env: Env<'_>) -> Result<(), Denial>;

    /// What `run` would do with this call, without running or creating anything (`hcpx exec --dry-run`).
    fn plan(&self, call: &Call<'_>) -> Result<Plan, Denial>;
}

/// The directory a call of `pack` works in, in words, without creating it; and whether the call may write it.
pub fn workdir_words(call: &Call<'_>, mode: crate::pack::WorkspaceMode) -> (String, bool) {
    use crate::pack::WorkspaceMode;
    let writable = crate::sandbox::workdir_writable(mode, call.write);
    let words = match mode {
        WorkspaceMode::None => call.pack.dir.display().to_string(),
        WorkspaceMode::Workspace => call.env.layout.workspaces.join(&call.pack.id).display().to_string(),
        WorkspaceMode::Ephemeral => {
            format!("a fresh directory under {}, removed after the call", call.env.layout.tmp.display())
        }
        WorkspaceMode::Project => match call.project_dir {
            Some(p) => p.display().to_string(),
            None => "no project: the call would be refused (no_project)".to_string(),
        },
    };
    (words, writable)
}

/// Observes a call while it runs (the terminal face shows the live title). `Send + Sync`: a served face's
/// hooks are shared by calls on many threads.
pub trait ExecHooks: Send + Sync {
    /// Whether `started` wants its arguments; when not, the runtime skips rendering them.
    fn watching(&self) -> bool {
        true
    }
    /// The adapter is about to run: the live title (if declared) and the exact command line.
    fn started(&self, _live_title: Option<&str>, _command_line: &str) {}
    /// The adapter returned; `exit_code` is the process's exit code when one ran (probes record it).
    fn exited(&self, _exit_code: Option<i32>) {}
}

/// Hooks that do nothing.
pub struct NoHooks;

impl ExecHooks for NoHooks {
    fn watching(&self) -> bool {
        false
    }
}
