//! An admitted call, as admission hands it to the run (step 6) and the finish (step 7): the adapter, the call's
//! inputs owned in one `Job`, and the arguments as given, for the audit line.

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use super::pipeline::command;
use super::Slot;
use crate::adapter::{Adapter, Call, Env, ExecHooks, OwnedCall};
use crate::args::CheckedArgs;
use crate::model::{Cancel, MintedBinding, Principal, ResultEnvelope};
use crate::pack::{Command, Operation, Pack, PolicyRow};
use crate::store::config::SandboxConfig;
use crate::store::Layout;

/// What admission decided.
pub(super) enum Admission<'a> {
    /// Admitted: run it, then `finish` it.
    Run(Admitted<'a>),
    /// Answered without running anything: refused (the refusal audited when its row is a write).
    Answered(Box<ResultEnvelope>),
}

/// Who runs step 6 of an admitted call.
#[derive(Clone, Copy)]
pub(super) enum Runner<'a> {
    /// The adapter of the pack's kind, in the sandbox.
    Adapter(&'a dyn Adapter),
    /// The runtime itself, for a built-in pack (`built_in.rs`). Its reports may load a composite to describe
    /// it, which blocks.
    BuiltIn,
}

/// An admitted call: who runs it, the call's inputs, and the arguments as given (audited).
pub(super) struct Admitted<'a> {
    pub(super) runner: Runner<'a>,
    pub(super) job: Arc<Job>,
    pub(super) given: Cow<'a, Map<String, Value>>,
    /// The write-ahead intent recorded before a write runs (the PostgreSQL store), cleared by its audit line.
    pub(super) intent: Option<i64>,
}

/// Everything the adapter gets for an admitted call, owned, so a served call's run can take it to another
/// thread and keep it past its caller (a wrap whose child is being stopped); step 7 reads it back. It holds the
/// call's slot: the call counts as running until the last of it is dropped.
pub(super) struct Job {
    /// The call's slot, held (never read) until the job is dropped (`None`: a dry run, which runs nothing).
    pub(super) _slot: Option<Slot>,
    pub(super) pack: Arc<Pack>,
    pub(super) verb: String,
    pub(super) pass_through: bool,
    pub(super) row: PolicyRow,
    pub(super) args: CheckedArgs,
    pub(super) pass_argv: Vec<String>,
    pub(super) binding: MintedBinding,
    pub(super) layout: Arc<Layout>,
    pub(super) sandbox: Arc<SandboxConfig>,
    pub(super) component_sha256: Option<String>,
    pub(super) principal: Principal,
    pub(super) project_dir: Option<PathBuf>,
    pub(super) cancel: Cancel,
    pub(super) live_title: Option<String>,
}

impl Job {
    /// The named command, or `None` for a pass-through subcommand.
    pub(super) fn command(&self) -> Option<&Command> {
        command(&self.pack, &self.verb, self.pass_through)
    }
}

impl OwnedCall for Job {
    fn call<'a>(&'a self, hooks: &'a dyn ExecHooks) -> Call<'a> {
        Call {
            env: Env {
                layout: &self.layout,
                sandbox: &self.sandbox,
                component_sha256: self.component_sha256.as_deref(),
            },
            pack: &self.pack,
            verb_key: &self.verb,
            command: self.command(),
            write: self.row.operation == Operation::Write,
            args: &self.args.values,
            pass_argv: &self.pass_argv,
            binding: &self.binding,
            project_dir: self.project_dir.as_deref(),
            principal: &self.principal,
            live_title: self.live_title.as_deref(),
            hooks,
            cancel: &self.cancel,
        }
    }
}
