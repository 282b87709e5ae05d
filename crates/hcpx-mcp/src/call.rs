//! One tool call: the arguments become an envelope, the runtime's pipeline decides, and the result envelope
//! becomes the tool's answer: `structuredContent` (the envelope itself) plus a text block for the model.

use serde_json::{Map, Value};
use std::sync::Arc;

use super::tools::ToolSpec;
use crate::model::{Code, Envelope, Principal, ResultEnvelope};
use crate::runtime::{CallContext, Runtime};

/// What a tool call answers, before it is put in MCP's words.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// The result envelope, as an object.
    pub structured: Map<String, Value>,
    /// What the model reads first.
    pub text: String,
    /// A denial or failure.
    pub is_error: bool,
}

/// Runs `tool` with `arguments` for `principal`.
pub async fn call(
    runtime: Arc<Runtime>,
    principal: Principal,
    tool: &ToolSpec,
    arguments: Map<String, Value>,
    context: CallContext,
) -> ToolAnswer {
    let env = Envelope::new(&tool.pack_id, &tool.verb_key, arguments);
    let out = runtime.exec_async(principal, env, context).await;
    answer(&out)
}

/// The tool answer of a result envelope.
pub fn answer(out: &ResultEnvelope) -> ToolAnswer {
    let structured = match serde_json::to_value(out) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let text = if out.ok {
        match &out.result {
            Some(Value::String(s)) => s.clone(),
            Some(v) => serde_json::to_string_pretty(v).unwrap_or_default(),
            None => out.title.clone().unwrap_or_else(|| "done".into()),
        }
    } else {
        denial_text(out)
    };
    ToolAnswer { structured, text, is_error: !out.ok }
}

/// A denial in words a model acts on: the code, the message, and for the confirm gate the card to show the
/// person and what to do once they agree.
fn denial_text(out: &ResultEnvelope) -> String {
    let code = out.code.map_or("failed", Code::as_str);
    let mut text = format!("{code}: {}", out.error.as_deref().unwrap_or("failed"));
    if out.code == Some(Code::ConfirmRequired) {
        if let Some(card) = &out.preview {
            text.push_str(&format!(
                "\n\nShow the person this {} card and ask them to approve it:",
                card.kind
            ));
            if let Some(t) = &card.title {
                text.push_str(&format!("\n  {t}"));
            }
            for (k, v) in &card.fields {
                text.push_str(&format!("\n  {k}: {v}"));
            }
        }
        text.push_str("\n\nOnly once the person agrees, call the tool again with the same arguments and \"confirm\": true.");
    }
    if out.code == Some(Code::ApprovalPending) {
        if let Some(card) = &out.preview {
            text.push_str(&format!("\n\nThe {} card the approver sees:", card.kind));
            if let Some(t) = &card.title {
                text.push_str(&format!("\n  {t}"));
            }
            for (k, v) in &card.fields {
                text.push_str(&format!("\n  {k}: {v}"));
            }
        }
        if let Some(id) = &out.approval_id {
            text.push_str(&format!(
                "\n\nYou cannot approve this yourself, and \"confirm\": true does not run it. Tell the person that approval {id} waits for an approver; once it is approved, call the tool again with the same arguments and \"approval_id\": \"{id}\"."
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Preview, PreviewKind};

    #[test]
    fn a_confirm_denial_carries_the_card_and_the_instruction() {
        let mut out = ResultEnvelope::denied("ledger", "transfer", Code::ConfirmRequired, "confirm required");
        out.preview = Some(Preview {
            kind: PreviewKind::Payment,
            title: Some("Pay demo-transit".into()),
            fields: [("amount".to_string(), "2.80".to_string())].into_iter().collect(),
        });
        let a = answer(&out);
        assert!(a.is_error);
        assert_eq!(a.structured["code"], "confirm_required");
        assert!(a.text.starts_with("confirm_required: confirm required"), "{}", a.text);
        assert!(a.text.contains("Pay demo-transit") && a.text.contains("amount: 2.80"), "{}", a.text);
        assert!(a.text.contains("\"confirm\": true"), "{}", a.text);
    }

    #[test]
    fn a_result_is_structured_and_readable() {
        let mut out = ResultEnvelope::empty("transit", "plan", true);
        out.result = Some(serde_json::json!({"optionId": "opt-1"}));
        let a = answer(&out);
        assert!(!a.is_error);
        assert_eq!(a.structured["result"]["optionId"], "opt-1");
        assert!(a.text.contains("opt-1"));
    }
}
