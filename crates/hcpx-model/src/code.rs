//! The stable codes agents branch on (docs/spec.md §10): every denial and failure carries one.

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
        /// A served runtime's concurrency limit is reached; retry later.
        Busy = "busy",
        /// The caller went away or cancelled; the command was stopped.
        Cancelled = "cancelled",
        /// The operator requires a person's approval for this write (`sandbox.json` `human_approval`): it waits
        /// as the approval the result names; once a person approves it, the same call with `approval_id` runs.
        ApprovalPending = "approval_pending",
    }
}

/// How each face reports a code. The result envelope is the same everywhere; this is what a face adds
/// around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaceStatus {
    /// `hcpx exec`'s exit code (docs/spec.md §11: 127 for a sandbox denial or a missing bin, else 1).
    pub exit: u8,
    /// The HTTP status of `POST /v1/exec` (the body is the result envelope either way).
    pub http: u16,
    /// Whether MCP answers with a tool result marked `isError` (true for every code: a denial is a value the
    /// model can read), as opposed to a JSON-RPC error (only for a request MCP itself refuses).
    pub mcp_is_error: bool,
}

impl Code {
    /// The one table of what each face reports for this code.
    pub fn status(self) -> FaceStatus {
        let (exit, http) = match self {
            Code::UnknownPack => (1, 404),
            Code::NotActivated => (1, 409),
            Code::NoPolicy => (1, 404),
            Code::InvalidArgs => (1, 400),
            Code::ProjectRequired => (1, 400),
            Code::Denied => (1, 403),
            Code::ConfirmRequired => (1, 428),
            Code::NoProject => (1, 409),
            Code::BindingFailed => (1, 424),
            Code::SandboxDenied => (127, 403),
            Code::Timeout => (1, 504),
            Code::ExitNonzero => (1, 502),
            Code::AdapterFailed => (1, 500),
            Code::Busy => (1, 503),
            Code::Cancelled => (1, 499),
            Code::ApprovalPending => (1, 428),
        };
        FaceStatus { exit, http, mcp_is_error: true }
    }
}

/// The message of the confirm gate's denial (docs/spec.md §9 step 4), which eval cases expect word for word
/// (docs/spec.md §21).
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
    /// On `approval_pending`: the approval a person decides, which the retry names.
    pub approval_id: Option<String>,
}

impl Denial {
    pub fn new(code: Code, message: impl Into<String>) -> Denial {
        Denial { code, message: message.into(), preview: None, approval_id: None }
    }

    /// The denial as the result envelope of `pack_id.verb_key`.
    pub fn into_envelope(self, pack_id: &str, verb_key: &str) -> ResultEnvelope {
        let mut out = ResultEnvelope::denied(pack_id, verb_key, self.code, self.message);
        out.preview = self.preview.map(|p| *p);
        out.approval_id = self.approval_id;
        out
    }
}
