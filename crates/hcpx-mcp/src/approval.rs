//! A person's approval through the MCP client (elicitation). A confirm-gated write the client can ask its user
//! about is first held by the pipeline as a pending approval (bound to the Principal, the command and the exact
//! arguments, expiring); the person is shown its card, and only their answer decides it. On protocol
//! 2026-07-28 and later the server cannot send the client a request, so the call answers `input_required` with
//! the elicitation and a sealed `requestState` naming the approval, bound to the tool, the Principal and the
//! arguments; the client's retry brings the answer and the state back. An altered, moved or expired state does
//! not open, and a replayed one finds its approval decided: either is refused, and nothing runs.

use base64::Engine as _;
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::call::{answer, ToolAnswer};
use super::tools::ToolSpec;
use crate::model::{Code, Principal, ResultEnvelope};
use crate::runtime::DecidedThrough;
use crate::store::approvals::now_ms;
use crate::store::Store;

/// The key of the one input request: the person's approval.
pub const INPUT_KEY: &str = "approve";

/// The prefix of a sealed request state (its format's version).
const STATE_PREFIX: &str = "hs1.";

/// What a sealed request state holds.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateBody {
    approval: String,
    /// Milliseconds since the Unix epoch after which it no longer opens.
    exp: u64,
}

/// What a request state is bound to: the tool, the Principal and the SHA-256 of the arguments as sent.
fn context(tool: &str, who: &Principal, args: &Map<String, Value>) -> Vec<u8> {
    let digest = crate::model::digest::args_digest(args);
    format!("hcpx-request-state\0{tool}\0{}\0{}\0{digest}", who.id, who.tenant).into_bytes()
}

/// Seals approval `approval` of this call into a request state that opens until `exp` (ms).
pub fn seal_state(
    store: &Store,
    tool: &str,
    who: &Principal,
    args: &Map<String, Value>,
    approval: &str,
    exp: u64,
) -> Result<String, String> {
    let sealer = store.state_sealer().map_err(|e| e.to_string())?;
    let body =
        serde_json::to_vec(&StateBody { approval: approval.to_string(), exp }).map_err(|e| e.to_string())?;
    let sealed = sealer.seal_bound(&context(tool, who, args), &body).map_err(|e| e.to_string())?;
    let mut raw = sealed.nonce;
    raw.extend_from_slice(&sealed.bytes);
    Ok(format!("{STATE_PREFIX}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)))
}

/// The approval a request state names, if it was sealed by this runtime for exactly this call and has not
/// expired; else why not, in words that name the fix.
pub fn open_state(
    store: &Store,
    tool: &str,
    who: &Principal,
    args: &Map<String, Value>,
    state: &str,
) -> Result<String, String> {
    let refused = "the request state does not open for this call (altered, made for other arguments or another caller, or not this runtime's); call the tool again without it";
    let raw = state
        .strip_prefix(STATE_PREFIX)
        .and_then(|b| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(b).ok())
        .filter(|r| r.len() > 24)
        .ok_or_else(|| refused.to_string())?;
    let sealer = store.state_sealer().map_err(|e| e.to_string())?;
    let plain = sealer
        .open_bound(&context(tool, who, args), &raw[..24], &raw[24..])
        .ok_or_else(|| refused.to_string())?;
    let body: StateBody = serde_json::from_slice(&plain).map_err(|_| refused.to_string())?;
    if now_ms() >= body.exp {
        return Err("the request state has expired; call the tool again without it to be asked anew".into());
    }
    Ok(body.approval)
}

/// The question the person is asked: the card of the call.
pub fn question(tool: &ToolSpec, first: &ToolAnswer) -> ElicitRequestParams {
    // What the pack and the caller wrote is shown, never obeyed: no control or bidirectional character can make
    // the card read differently from the call it approves.
    use crate::model::shown::shown;
    let card = first.envelope.get("preview").cloned().unwrap_or_default();
    let mut message = format!("Approve this call of {}?", shown(&tool.title));
    if let Some(t) = card.get("title").and_then(|t| t.as_str()) {
        message.push_str(&format!("\n{}", shown(t)));
    }
    for (k, v) in card.get("fields").and_then(|f| f.as_object()).into_iter().flatten() {
        message.push_str(&format!("\n{}: {}", shown(k), shown(v.as_str().unwrap_or_default())));
    }
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: ElicitationSchema::builder().required_bool("approve").build_unchecked(),
    }
}

/// The `input_required` answer: the question, and the sealed state naming the approval.
pub fn input_required(params: ElicitRequestParams, state: String) -> CallToolResponse {
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_string(), InputRequest::Elicitation(ElicitRequest::new(params)));
    InputRequiredResult::new(Some(requests), Some(state)).into()
}

/// Whether the person's answer approves: accepted, with `approve: true`.
pub fn approves(action: ElicitationAction, content: Option<&Value>) -> bool {
    action == ElicitationAction::Accept && content.and_then(|c| c.get("approve")) == Some(&Value::Bool(true))
}

/// The person's answer in a retried call's input responses: whether it approves.
pub fn answer_in(responses: Option<&InputResponses>) -> bool {
    let Some(r) = responses.and_then(|r| r.get(INPUT_KEY)) else { return false };
    let action = r.get("action").cloned().and_then(|a| serde_json::from_value::<ElicitationAction>(a).ok());
    action.is_some_and(|a| approves(a, r.get("content")))
}

/// The denial of a call the person did not approve (or could not be asked about). Its text tells the model the
/// answer stands: never to add `confirm`, which from a client that can ask its user runs nothing anyway.
pub fn not_approved(tool: &ToolSpec, why: &str) -> ToolAnswer {
    let mut a = answer(&ResultEnvelope::denied(
        &tool.pack_id,
        &tool.verb_key,
        Code::ConfirmRequired,
        format!("confirm required: {why}, and nothing ran"),
    ));
    a.text = format!(
        "confirm_required: confirm required: {why}, and nothing ran. The person's answer stands: do not call the tool again unless they ask for it anew."
    );
    a
}

/// Why [`not_approved`]: the person said no.
pub const DECLINED: &str = "the person did not approve the call";

/// A refused request state or approval: `denied`, nothing ran.
pub fn refused(tool: &ToolSpec, why: &str) -> ToolAnswer {
    answer(&ResultEnvelope::denied(&tool.pack_id, &tool.verb_key, Code::Denied, format!("denied: {why}")))
}

/// How an MCP client's person decides: `person_approver` when, under `human_approval`, the operator takes this
/// client's answer as an approver's (docs/security.md, Approvals a model cannot forge).
pub fn through(person_approver: bool) -> DecidedThrough {
    DecidedThrough::Elicitation { person_approver }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Grants, Invoker};
    use serde_json::json;

    #[test]
    fn a_card_shows_bidirectional_and_control_characters_instead_of_obeying_them() {
        let tool = crate::tools::ToolSpec {
            name: "ledger__transfer".into(),
            title: "Transfer\u{202E}".into(),
            description: String::new(),
            input_schema: Map::new(),
            hints: crate::tools::Hints {
                read_only: false,
                destructive: true,
                idempotent: false,
                open_world: false,
            },
            pack_id: "ledger".into(),
            verb_key: "transfer".into(),
            confirm: true,
        };
        let preview = json!({ "title": "Pay \u{202E}05.00 EUR\u{202C}", "fields": { "payee\u{2066}": "demo\u{1b}[2Jgrocer" } });
        let first = crate::call::ToolAnswer {
            structured: None,
            text: String::new(),
            is_error: true,
            envelope: json!({ "preview": preview }).as_object().cloned().unwrap(),
        };
        let ElicitRequestParams::FormElicitationParams { message, .. } = question(&tool, &first) else {
            panic!("a form")
        };
        assert!(!message.chars().any(crate::model::shown::hidden), "{message:?}");
        assert!(
            message.contains("Pay \\u{202e}05.00 EUR\\u{202c}") && message.contains("demo\\x1b[2Jgrocer"),
            "{message}"
        );
    }

    #[test]
    fn a_request_state_opens_only_for_its_own_call() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let ana =
            Principal { id: "ana".into(), tenant: "t".into(), grants: Grants::All, invoker: Invoker::Mcp };
        let args = json!({"amount": "2.80", "payee": "demo-transit"}).as_object().cloned().unwrap();
        let later = now_ms() + 60_000;
        let s = seal_state(&store, "ledger__transfer", &ana, &args, "ap_1", later).unwrap();
        assert_eq!(open_state(&store, "ledger__transfer", &ana, &args, &s).unwrap(), "ap_1");
        let mut more = args.clone();
        more["amount"] = json!("999");
        assert!(open_state(&store, "ledger__transfer", &ana, &more, &s).is_err(), "other arguments");
        assert!(open_state(&store, "ledger__refund", &ana, &args, &s).is_err(), "another tool");
        let bob = Principal { id: "bob".into(), ..ana.clone() };
        assert!(open_state(&store, "ledger__transfer", &bob, &args, &s).is_err(), "another Principal");
        let mut flipped = s.clone().into_bytes();
        let last = flipped.len() - 2;
        flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
        assert!(open_state(&store, "ledger__transfer", &ana, &args, &String::from_utf8(flipped).unwrap())
            .is_err());
        let old = seal_state(&store, "ledger__transfer", &ana, &args, "ap_1", now_ms() - 1).unwrap();
        assert!(open_state(&store, "ledger__transfer", &ana, &args, &old).unwrap_err().contains("expired"));
    }
}
