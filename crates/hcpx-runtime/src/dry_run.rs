//! `hcpx exec --dry-run`: the pipeline's steps 1 to 5 as a call takes them, and what step 6 would run, with
//! nothing run, created or audited. The confirm gate is reported (with the approval card), not enforced, so an
//! author sees what a gated write would do before anyone confirms it.

use serde::Serialize;

use super::pipeline::{checked, confirm_gate, Runner};
use super::{ArgsInput, CallContext, Runtime};
use crate::adapter::{NoHooks, OwnedCall, Plan};
use crate::model::{BindingMode, Denial, Envelope, Preview, Principal};
use crate::pack::Operation;

/// What a call would do.
#[derive(Debug, Clone, Serialize)]
pub struct DryRun {
    pub pack_id: String,
    pub verb_key: String,
    pub operation: Operation,
    /// The Binding mode the call would run with (its credential fields are never shown).
    pub binding_mode: BindingMode,
    /// The names of the Binding's fields the call would receive.
    pub binding_fields: Vec<String>,
    /// The call as given would be stopped at the confirm gate.
    pub confirm_required: bool,
    /// The approval card a person would see, when the command declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    #[serde(flatten)]
    pub plan: Plan,
}

impl Runtime {
    /// What `exec_words` would do with this call, or the denial it would answer (other than the confirm gate).
    pub fn dry_run_words(
        &self,
        principal: &Principal,
        env: &Envelope,
        words: &[String],
        ctx: &CallContext,
    ) -> Result<DryRun, Denial> {
        let r = self.resolve(principal, env, ArgsInput::Words(words))?;
        let checked = checked(principal, env, &r)?;
        let gate = confirm_gate(&r, &checked);
        let binding = self.mint_binding(principal, &r, &checked)?;
        let (binding_mode, binding_fields) = (binding.mode, binding.fields.keys().cloned().collect());
        let job = self.job(principal, r, (checked, binding), ctx, &NoHooks)?;
        let plan = match job.runner {
            Runner::Adapter(adapter) => adapter.plan(&job.job.call(&NoHooks))?,
            Runner::BuiltIn => super::built_in::plan(&job.job),
        };
        Ok(DryRun {
            pack_id: env.pack_id.clone(),
            verb_key: env.verb_key.clone(),
            operation: job.job.row.operation,
            binding_mode,
            binding_fields,
            confirm_required: gate.is_some(),
            preview: gate.and_then(|d| d.preview).map(|p| *p),
            plan,
        })
    }
}
