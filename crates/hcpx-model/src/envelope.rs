//! The exec envelope in, the result envelope out (docs/spec.md §8, §10).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Code, Preview, SandboxReport};

/// A call: `{ pack_id, verb_key, args, project_id? }`. `surface_id` is accepted for `pack_id`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    #[serde(alias = "surface_id")]
    pub pack_id: String,
    pub verb_key: String,
    #[serde(default)]
    pub args: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
}

impl Envelope {
    /// An envelope with no project id.
    pub fn new(pack_id: &str, verb_key: &str, args: Map<String, Value>) -> Envelope {
        Envelope { pack_id: pack_id.to_string(), verb_key: verb_key.to_string(), args, project_id: None }
    }
}

/// What every call returns: a denial is a value like any other result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultEnvelope {
    pub ok: bool,
    pub pack_id: String,
    pub verb_key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    /// The done title, when the command declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// An output stream was cut at `max_output_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// The confinement a wrap ran under: `sandbox` or `native-local`, and each layer's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxReport>,
    /// On `confirm_required` and `approval_pending`: the approval card a person sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    /// On `approval_pending`: the approval a person decides; the same call with `"approval_id"` runs once it is
    /// approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The bootstrap pack's store-changing commands answer this and a hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_to_cli: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ResultEnvelope {
    /// A denial or failure with `code`.
    pub fn denied(pack_id: &str, verb_key: &str, code: Code, error: impl Into<String>) -> ResultEnvelope {
        ResultEnvelope {
            error: Some(error.into()),
            code: Some(code),
            ..ResultEnvelope::empty(pack_id, verb_key, false)
        }
    }

    /// A bare envelope.
    pub fn empty(pack_id: &str, verb_key: &str, ok: bool) -> ResultEnvelope {
        ResultEnvelope {
            ok,
            pack_id: pack_id.to_string(),
            verb_key: verb_key.to_string(),
            result: None,
            error: None,
            code: None,
            title: None,
            stdout: None,
            stderr: None,
            truncated: None,
            sandbox: None,
            preview: None,
            approval_id: None,
            deferred_to_cli: None,
            hint: None,
        }
    }
}
