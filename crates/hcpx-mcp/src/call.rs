//! One tool call: the arguments become an envelope, the runtime's pipeline decides, and the result envelope
//! becomes the tool's answer in the words a model reads: `structuredContent` is the command's result (or, for a
//! denial, its `code` and `error`), a text block says it for a model that reads text, and the envelope's details
//! (confinement, stderr, the done title) ride in `_meta` where a client, not the model, reads them. One function
//! ([`tool_result`]) turns a result envelope into the MCP tool result, so every face that answers a call (a
//! tool, `--single-tool`'s `exec`, a task's result) gives the same shape.

use rmcp::model::{CallToolResult, ContentBlock, MetaObject};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::tools::ToolSpec;
use crate::model::{Code, Envelope, Principal, ResultEnvelope};
use crate::runtime::host_paths::{carries_output, HostPaths};
use crate::runtime::{CallContext, Runtime};

/// The `_meta` key of a tool result's envelope (docs/mcp.md, Calls).
pub const ENVELOPE_META: &str = "dev.hcpx/envelope";

/// What a tool call answers, before it is put in MCP's words.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    /// `structuredContent`: on success the command's result (an object as is, any other value as
    /// `{"result": value}`), none when it has none; on a denial `{code, error}` with the approval card
    /// (`preview`) and `approval_id` where there are.
    pub structured: Option<Map<String, Value>>,
    /// What the model reads first.
    pub text: String,
    /// A denial or failure.
    pub is_error: bool,
    /// `_meta["dev.hcpx/envelope"]`: the result envelope without what `structuredContent` already carries
    /// ([`compact`]); empty for an answer that is no command's (`--single-tool`'s `list`).
    pub envelope: Map<String, Value>,
}

impl ToolAnswer {
    /// The answer's stable code, where it is a denial.
    pub fn code(&self) -> Option<&str> {
        self.envelope.get("code").and_then(Value::as_str)
    }

    /// The envelope's string field `key`.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.envelope.get(key).and_then(Value::as_str)
    }
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

/// The MCP tool result of a result envelope: the one shape every call answers in.
pub fn tool_result(out: &ResultEnvelope) -> CallToolResult {
    to_mcp_result(answer(out))
}

/// The tool answer of a result envelope.
pub fn answer(out: &ResultEnvelope) -> ToolAnswer {
    let structured = if out.ok { result_object(out) } else { Some(denial_object(out)) };
    let text = if out.ok {
        match (&out.result, &out.hint) {
            (Some(Value::String(s)), _) => s.clone(),
            (Some(v), _) => serde_json::to_string_pretty(v).unwrap_or_default(),
            (None, Some(hint)) if out.deferred_to_cli == Some(true) => hint.clone(),
            (None, _) => out.title.clone().unwrap_or_else(|| "done".into()),
        }
    } else {
        denial_text(out)
    };
    let in_structured = out.ok && out.result.is_some();
    ToolAnswer { structured, text, is_error: !out.ok, envelope: compact(out, in_structured) }
}

/// A success's structured content: the result, an object as is and any other value as `{"result": value}`
/// (an MCP client before 2026-07-28 takes only an object); a store change deferred to the CLI says so and gives
/// the line to run; none when the command gave no result.
fn result_object(out: &ResultEnvelope) -> Option<Map<String, Value>> {
    match &out.result {
        Some(Value::Object(m)) => Some(m.clone()),
        Some(v) => Some(Map::from_iter([("result".to_string(), v.clone())])),
        None if out.deferred_to_cli == Some(true) => {
            let mut m = Map::from_iter([("deferred_to_cli".to_string(), Value::Bool(true))]);
            if let Some(h) = &out.hint {
                m.insert("hint".into(), Value::String(h.clone()));
            }
            Some(m)
        }
        None => None,
    }
}

/// A denial's structured content: what a model needs to act on it, and nothing of the call's output.
fn denial_object(out: &ResultEnvelope) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("code".into(), Value::String(out.code.map_or("failed", Code::as_str).to_string()));
    m.insert("error".into(), Value::String(out.error.clone().unwrap_or_else(|| "failed".into())));
    if let Some(card) = out.preview.as_ref().and_then(|p| serde_json::to_value(p).ok()) {
        m.insert("preview".into(), card);
    }
    if let Some(id) = &out.approval_id {
        m.insert("approval_id".into(), Value::String(id.clone()));
    }
    m
}

/// The envelope as `_meta` carries it: no `result` where `structuredContent` is the result, no `stdout` where
/// `result` was made from it, no empty `stderr` or `truncated: false`, and of the confinement only the mode and
/// the layers that did not hold (`enforced` is every other one's status).
pub fn compact(out: &ResultEnvelope, result_in_structured: bool) -> Map<String, Value> {
    let Ok(Value::Object(mut m)) = serde_json::to_value(out) else { return Map::new() };
    if out.result.is_some() {
        m.remove("stdout");
    }
    if result_in_structured {
        m.remove("result");
    }
    if out.stderr.as_deref().is_some_and(str::is_empty) {
        m.remove("stderr");
    }
    if out.truncated == Some(false) {
        m.remove("truncated");
    }
    if let Some(Value::Object(sandbox)) = m.get_mut("sandbox") {
        if let Some(Value::Object(layers)) = sandbox.get_mut("layers") {
            layers.retain(|_, status| status.as_str() != Some("enforced"));
        }
        if sandbox.get("layers").and_then(Value::as_object).is_some_and(Map::is_empty) {
            sandbox.remove("layers");
        }
    }
    m
}

/// An answer in MCP's words: the text block, the structured content and the envelope in `_meta`.
pub fn to_mcp_result(a: ToolAnswer) -> CallToolResult {
    let text = vec![ContentBlock::text(a.text)];
    let mut r = if a.is_error { CallToolResult::error(text) } else { CallToolResult::success(text) };
    r.structured_content = a.structured.map(Value::Object);
    if !a.envelope.is_empty() {
        r.meta = Some(MetaObject(Map::from_iter([(ENVELOPE_META.to_string(), Value::Object(a.envelope))])));
    }
    r
}

/// A tool result as a served caller (MCP over HTTP) reads it: the host's paths replaced (`HostPaths`) in the
/// structured content, the envelope in `_meta` and the text the model reads, but for a command's success,
/// whose result, output and done title are its own.
pub fn hide_host_paths(paths: &HostPaths, mut result: CallToolResult) -> CallToolResult {
    let envelope = result.meta.as_ref().and_then(|m| m.0.get(ENVELOPE_META)).and_then(Value::as_object);
    let output = result.is_error != Some(true) && envelope.is_some_and(carries_output);
    if !output {
        if let Some(s) = result.structured_content.as_mut() {
            paths.hide_all(s);
        }
        for block in &mut result.content {
            if let ContentBlock::Text(t) = block {
                if let std::borrow::Cow::Owned(h) = paths.hide(&t.text) {
                    t.text = h;
                }
            }
        }
    }
    if let Some(meta) = result.meta.as_mut() {
        meta.0.values_mut().for_each(|v| paths.hide_in_answer(v));
    }
    result
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
    use crate::model::{LayerName, LayerStatus, Preview, PreviewKind, SandboxMode, SandboxReport};
    use serde_json::json;

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
        let s = a.structured.as_ref().unwrap();
        assert_eq!(s["code"], "confirm_required");
        assert_eq!(s["preview"]["title"], "Pay demo-transit");
        assert_eq!(a.code(), Some("confirm_required"));
        assert!(a.text.starts_with("confirm_required: confirm required"), "{}", a.text);
        assert!(a.text.contains("Pay demo-transit") && a.text.contains("amount: 2.80"), "{}", a.text);
        assert!(a.text.contains("\"confirm\": true"), "{}", a.text);
    }

    #[test]
    fn a_result_is_the_structured_content_and_the_envelope_keeps_the_rest() {
        let mut out = ResultEnvelope::empty("transit", "plan", true);
        out.result = Some(json!({"optionId": "opt-1"}));
        out.stdout = Some("{\"optionId\": \"opt-1\"}\n".into());
        out.stderr = Some(String::new());
        out.truncated = Some(false);
        out.title = Some("Planned".into());
        let a = answer(&out);
        assert!(!a.is_error);
        assert_eq!(a.structured, Some(json!({"optionId": "opt-1"}).as_object().cloned().unwrap()));
        assert!(a.text.contains("opt-1"));
        assert_eq!(
            Value::Object(a.envelope),
            json!({"ok": true, "pack_id": "transit", "verb_key": "plan", "title": "Planned"})
        );
    }

    #[test]
    fn any_other_result_is_wrapped_and_a_result_less_success_has_none() {
        let mut out = ResultEnvelope::empty("jq", "eval", true);
        out.result = Some(json!([1, 2]));
        assert_eq!(answer(&out).structured, Some(json!({"result": [1, 2]}).as_object().cloned().unwrap()));
        out.result = Some(json!("plain text\n"));
        out.stdout = Some("plain text\n".into());
        let a = answer(&out);
        assert_eq!(
            (a.text.as_str(), a.structured.unwrap()["result"].as_str()),
            ("plain text\n", Some("plain text\n"))
        );
        assert!(!a.envelope.contains_key("stdout") && !a.envelope.contains_key("result"));
        out.result = None;
        out.stdout = Some(String::new());
        let a = answer(&out);
        assert_eq!((a.structured, a.text.as_str()), (None, "done"));
        assert_eq!(a.envelope["stdout"], "", "no result: stdout is the only output");
    }

    #[test]
    fn a_failure_keeps_its_output_in_the_envelope_and_only_layers_that_did_not_hold() {
        let mut out = ResultEnvelope::denied("ledger", "status", Code::ExitNonzero, "boom");
        out.result = Some(json!({"ok": false}));
        out.stdout = Some("{\"ok\": false}".into());
        out.sandbox = Some(SandboxReport {
            mode: SandboxMode::NativeLocal,
            layers: [
                (LayerName::Landlock, LayerStatus::Enforced),
                (LayerName::LandlockNet, LayerStatus::Unavailable),
                (LayerName::Seccomp, LayerStatus::Enforced),
            ]
            .into_iter()
            .collect(),
        });
        let a = answer(&out);
        assert_eq!(Value::Object(a.structured.unwrap()), json!({"code": "exit_nonzero", "error": "boom"}));
        assert_eq!(a.envelope["result"], json!({"ok": false}));
        assert!(!a.envelope.contains_key("stdout"));
        assert_eq!(
            a.envelope["sandbox"],
            json!({"mode": "native-local", "layers": {"landlock-net": "unavailable"}})
        );
        let all_held = SandboxReport {
            mode: SandboxMode::Sandbox,
            layers: [(LayerName::Seccomp, LayerStatus::Enforced)].into_iter().collect(),
        };
        out.sandbox = Some(all_held);
        assert_eq!(answer(&out).envelope["sandbox"], json!({"mode": "sandbox"}));
    }

    #[test]
    fn the_mcp_result_carries_the_envelope_in_meta() {
        let mut out = ResultEnvelope::empty("transit", "plan", true);
        out.result = Some(json!({"optionId": "opt-1"}));
        let v = serde_json::to_value(tool_result(&out)).unwrap();
        assert_eq!(v["structuredContent"], json!({"optionId": "opt-1"}));
        assert_eq!(v["_meta"][ENVELOPE_META]["pack_id"], "transit");
        assert_eq!(v["isError"], false);
    }
}
