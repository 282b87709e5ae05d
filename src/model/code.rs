//! The stable codes agents branch on (errors.md, decisions.md §8): every denial and failure carries one.

use super::wire::wire_enum;
use super::{Preview, ResultEnvelope};

wire_enum! {
    /// Why a call did not succeed. Ids never change.
    pub enum Code ("code") {
        UnknownPack = "unknown_pack",
        NotActivated = "not_activated",
        NoPolicy = "no_policy",
        InvalidArgs = "invalid_args",
        ProjectRequired = "project_required",
        Denied = "denied",
        ConfirmRequired = "confirm_required",
        NoProject = "no_project",
        BindingFailed = "binding_failed",
        SandboxDenied = "sandbox_denied",
        Timeout = "timeout",
        ExitNonzero = "exit_nonzero",
        AdapterFailed = "adapter_failed",
    }
}

/// The message of the confirm gate's denial (execution.md step 4), which eval cases expect word for word
/// (check-and-evaluate.md).
pub const CONFIRM_REQUIRED: &str = "confirm required";

/// A denial or failure as a value: its stable code and a message that names the offending value and the
/// fix. Every pipeline step and adapter check returns one; the result envelope carries both.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Denial {
    pub code: Code,
    pub message: String,
    /// On `confirm_required`: the approval card a person sees before agreeing.
    pub preview: Option<Box<Preview>>,
}

impl Denial {
    pub fn new(code: Code, message: impl Into<String>) -> Denial {
        Denial { code, message: message.into(), preview: None }
    }

    /// The denial as the result envelope of `pack_id.verb_key`.
    pub fn into_envelope(self, pack_id: &str, verb_key: &str) -> ResultEnvelope {
        let mut out = ResultEnvelope::denied(pack_id, verb_key, self.code, self.message);
        out.preview = self.preview.map(|p| *p);
        out
    }
}
