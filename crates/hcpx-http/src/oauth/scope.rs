//! `403 insufficient_scope` (RFC 6750 §3.1, MCP's scope step-up): a JWT Principal whose token is good but whose
//! scopes do not give what the request needs is told which scope(s) of its issuer would, before anything runs,
//! so its client can ask the issuer for them. What a request needs: for `/v1/exec` the command of its envelope
//! (or path), for `/mcp` the command of a `tools/call` (the JSON-RPC body read, bounded, before rmcp), and the
//! operator or approver role for the routes that take one. Where no scope would give it, the request goes on and
//! the pipeline refuses it as for any Principal.

use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

use crate::model::grants::Capability;
use crate::model::Code;
use crate::routes::http_error;
use crate::runtime::visible::capability;
use crate::store::issuers::Issuer;
use crate::store::principals::Authenticated;
use crate::App;

/// What a request needs of its Principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Need {
    /// To call `verb` of `pack`.
    Call {
        pack: String,
        verb: String,
    },
    /// To call the MCP tool of this name.
    Tool(String),
    Operator,
    Approver,
}

/// Whether the request's body must be read to know what it needs.
pub(crate) fn needs_body(method: &Method, path: &str) -> bool {
    method == Method::POST && (path == "/v1/exec" || path == "/mcp" || path.starts_with("/mcp/"))
}

/// What a request to `path` (with `body`, where [`needs_body`]) needs, as far as a scope can give it.
pub(crate) fn need_of(method: &Method, path: &str, body: Option<&[u8]>) -> Vec<Need> {
    if path == "/metrics" || path == "/v1/doctor" {
        return vec![Need::Operator];
    }
    if path == "/v1/approvals" || path.starts_with("/v1/approvals/") {
        return vec![Need::Approver];
    }
    if method != Method::POST {
        return Vec::new();
    }
    if let Some(rest) = path.strip_prefix("/v1/exec/") {
        if let Some((pack, verb)) = rest.split_once('/') {
            return vec![Need::Call { pack: pack.into(), verb: verb.into() }];
        }
        return Vec::new();
    }
    let Some(v) = body.and_then(|b| serde_json::from_slice::<Value>(b).ok()) else { return Vec::new() };
    if path == "/v1/exec" {
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        return match (field("pack_id"), field("verb_key")) {
            (Some(pack), Some(verb)) => vec![Need::Call { pack, verb }],
            _ => Vec::new(),
        };
    }
    // `/mcp`: one JSON-RPC message, or a batch of them (before 2025-06-18).
    let messages = match &v {
        Value::Array(list) => list.iter().take(64).collect(),
        one => vec![one],
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"))
        .filter_map(|m| m.pointer("/params/name").and_then(Value::as_str))
        .map(|tool| Need::Tool(tool.to_string()))
        .collect()
}

/// The command an MCP tool name calls, among the packs activated for `tenant`.
fn tool_target(app: &App, tenant: &str, tool: &str) -> Option<(String, String)> {
    for pack in app.runtime.activated_packs(Some(tenant)) {
        for key in pack.commands.keys() {
            if crate::mcp::tools::tool_name(&pack.id, key) == tool {
                return Some((pack.id.clone(), key.clone()));
            }
        }
    }
    None
}

/// The scopes of `issuer` that would give `who` what `need` asks and it lacks; `None` when it holds it, or when
/// no scope gives it (the request then goes on, and is refused as for any Principal where it must be).
fn missing(app: &App, issuer: &Issuer, who: &Authenticated, need: &Need) -> Option<(String, Vec<String>)> {
    let role = |held: bool, scope: &Option<String>, what: &str| {
        (!held).then(|| scope.clone().map(|s| (what.to_string(), vec![s]))).flatten()
    };
    match need {
        Need::Operator => role(who.operator, &issuer.row.operator_scope, "the operator role"),
        Need::Approver => role(who.approver, &issuer.row.approver_scope, "the approver role"),
        Need::Call { .. } | Need::Tool(_) => {
            let (pack, verb) = match need {
                Need::Tool(tool) => tool_target(app, &who.principal.tenant, tool)?,
                Need::Call { pack, verb } => (pack.clone(), verb.clone()),
                _ => return None,
            };
            // What every capability a call can need covers needs no lookup at all.
            let g = &who.principal.grants;
            if [Capability::ExecRead, Capability::ExecWrite, Capability::PackConnect]
                .into_iter()
                .all(|c| g.allows(c, &pack, &verb))
            {
                return None;
            }
            // Only for a pack activated for the caller's tenant: another is unknown to it, as the pipeline says.
            let built_in = crate::store::built_in::IDS.contains(&pack.as_str());
            let state = app.runtime.store().state().ok()?;
            if !built_in && !state.packs.get(&pack).is_some_and(|st| st.activated_for(&who.principal.tenant))
            {
                return None;
            }
            let p = app.runtime.installed_pack(&pack).ok()?;
            let row = match p.command(&verb) {
                Some(c) => c.policy,
                None => *p.pass_through.as_ref()?.policy.get(&verb)?,
            };
            let cap: Capability = capability(&verb, row.operation);
            if who.principal.grants.allows(cap, &pack, &verb) {
                return None;
            }
            // The narrowest scope that gives it: the client asks for every scope a challenge names.
            let scope = issuer
                .scopes_giving(cap, &pack, &verb)
                .into_iter()
                .min_by_key(|s| issuer.row.scopes.get(s).map_or(usize::MAX, Vec::len))?;
            Some((format!("{cap} for {pack}.{verb}"), vec![scope]))
        }
    }
}

/// The 403 for the first of `needs` the token's scopes fall short of, naming the scope(s) that would give it.
pub(crate) fn short(
    app: &App,
    issuer: &Issuer,
    who: &Authenticated,
    needs: &[Need],
    metadata: &str,
) -> Option<Response> {
    let (what, scopes) = needs.iter().find_map(|n| missing(app, issuer, who, n))?;
    let listed = scopes.join(" ");
    let message = format!(
        "denied: the token's scopes do not give {what}; its client asks issuer {} for a token with scope {listed}",
        issuer.row.issuer
    );
    let mut resp = http_error(app, StatusCode::FORBIDDEN, Code::Denied, &message);
    let challenge =
        format!("Bearer error=\"insufficient_scope\", scope=\"{listed}\", resource_metadata=\"{metadata}\"");
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    Some(resp)
}
