//! `GET /openapi.json`: an OpenAPI 3.1 document made at each request — the API's own routes, and for a caller
//! with a bearer token one path per command that Principal may call (`POST /v1/exec/{pack_id}/{verb_key}`),
//! with its argument schema. Without a token it names no pack and no command: a stranger learns nothing of
//! what is installed, nor of any tenant.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Map, Value};
use std::sync::Arc;

use super::App;
use crate::model::{Code, Principal};
use crate::pack::Operation;
use crate::runtime::Runtime;
use crate::store::principals::Authenticated;

/// The statuses a call can answer with, each with the result envelope: success, what the face itself refuses
/// (no token, a body too large) and every code's status from `Code::status()`, the one table.
fn call_statuses() -> Vec<u16> {
    let mut s: Vec<u16> =
        [200, 401, 413].into_iter().chain(Code::ALL.iter().map(|c| c.status().http)).collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// The document for the caller: with a token (checked by [`super::auth::optional_bearer`]), its Principal's
/// commands; without one, the API's own routes only.
pub(crate) async fn document(State(app): State<Arc<App>>, who: Option<Extension<Authenticated>>) -> Response {
    let principal = who.map(|Extension(a)| a.principal);
    let rt = app.runtime.clone();
    match tokio::task::spawn_blocking(move || build(&rt, principal.as_ref())).await {
        Ok(doc) => Json(doc).into_response(),
        Err(e) => super::routes::http_error(
            &app,
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            Code::AdapterFailed,
            &format!("the document could not be made: {e}"),
        ),
    }
}

/// The document for `principal`: the fixed routes, and the commands of the packs activated for its tenant that
/// its grants let it call; for `None`, the fixed routes only.
pub fn build(runtime: &Runtime, principal: Option<&Principal>) -> Value {
    let mut paths = Map::new();
    let mut health = public_op("healthz", "Whether the store answers.", "Health");
    health["responses"]["503"] = health_answer("The store does not answer");
    paths.insert("/healthz".into(), json!({ "get": health }));
    let mut ready = public_op(
        "readyz",
        "Whether to send this server traffic: its packs are loaded, the store answers, the stored settings (sandbox.json) load, it is not shutting down.",
        "Health",
    );
    ready["responses"]["503"] =
        health_answer("Not ready: loading, shutting down, the store does not answer, or the stored settings do not load (`document`, `reason`)");
    paths.insert("/readyz".into(), json!({ "get": ready }));
    let mut metrics = op(
        "metrics",
        "Calls, denials and latency by tenant, when each tenant's failures began, approvals waiting, tasks, store latency, seal failures, calls in flight and the store's pool in the Prometheus text format; operators only.",
        None,
        &[],
        "Any",
        &[200, 401, 403],
    );
    metrics["responses"]["200"] = json!({ "description": "The Prometheus text exposition (format 0.0.4)",
        "content": { "text/plain": { "schema": { "type": "string" } } } });
    paths.insert("/metrics".into(), json!({ "get": metrics }));
    paths
        .insert("/openapi.json".into(), json!({ "get": public_op("openapi", "This document.", "Document") }));
    let commands = principal.map(|p| commands(runtime, p)).unwrap_or_default();
    // The envelope of each command, so a generated envelope names a real command with fitting arguments.
    let envelopes: Vec<Value> = commands.iter().map(|c| c.envelope()).collect();
    let envelope = if envelopes.is_empty() {
        json!({ "$ref": "#/components/schemas/Envelope" })
    } else {
        json!({ "oneOf": envelopes })
    };
    paths.insert(
        "/v1/exec".into(),
        json!({ "post": may_be_task(op("exec", "Run a command: the exec envelope in, the result envelope out.",
            Some((envelope, true)), &[timeout_param()], "ResultEnvelope", &call_statuses())) }),
    );
    paths.insert(
        "/v1/packs".into(),
        json!({ "get": op("packs", "Installed packs.", None, &[], "Any", &[200, 401]) }),
    );
    let id = [param("id", "path", true, "A pack id")];
    for (suffix, name, summary) in [
        ("", "pack", "One installed pack."),
        (
            "/availability",
            "availability",
            "The four flags for the caller: installed, activated, bound, runnable.",
        ),
        ("/commands", "commands", "Each command with its argument schema."),
    ] {
        paths.insert(
            format!("/v1/packs/{{id}}{suffix}"),
            json!({ "get": op(name, summary, None, &id, "Any", &[200, 400, 401, 404]) }),
        );
    }
    let skill_params = [
        id[0].clone(),
        param_schema("full", "query", false, "The whole Skill", json!({ "type": "boolean" })),
    ];
    paths.insert(
        "/v1/packs/{id}/skill".into(),
        json!({ "get": op("skill", "The Skill's lead, or its whole text.", None, &skill_params, "Any", &[200, 400, 401, 404]) }),
    );
    let title_params = [
        param("pack_id", "query", true, "A pack id"),
        param("verb_key", "query", true, "A command"),
        json_param("args", "The arguments, a JSON object", json!({ "type": "object" })),
        json_param("result", "The result, for the done title (JSON)", json!({})),
    ];
    paths.insert(
        "/v1/title".into(),
        json!({
            "get": op("title", "The live title, or the done title given a result.", None, &title_params, "Any", &[200, 400, 401, 404]),
            "post": op("title_post", "The same, the inputs as a JSON body.", Some((json!({
                "type": "object", "additionalProperties": false, "required": ["pack_id", "verb_key"],
                "properties": { "pack_id": { "type": "string" }, "verb_key": { "type": "string" },
                    "args": { "type": "object" }, "result": {} } }), true)), &[], "Any", &[200, 400, 401, 404]),
        }),
    );
    paths.insert(
        "/v1/audit".into(),
        json!({ "get": op("audit", "The audit rows of the caller's tenant.", None, &[], "Any", &[200, 401, 500]) }),
    );
    paths.insert(
        "/v1/doctor".into(),
        json!({ "get": op("doctor", "The runtime's health (operators only).", None, &[], "Any", &[200, 401, 403]) }),
    );
    approval_paths(&mut paths);
    sense_paths(&mut paths);
    task_paths(&mut paths);
    for c in &commands {
        let summary = format!("{} {} ({}): {}", c.pack_id, c.verb, c.operation, c.description);
        // A command without required arguments may be called with no body at all.
        let body = (c.args.clone(), !c.required().is_empty());
        paths.insert(
            format!("/v1/exec/{}/{}", c.pack_id, c.verb),
            json!({ "post": may_be_task(op(&format!("{}__{}", c.pack_id, c.verb.replace('.', "_")), &summary, Some(body), &[timeout_param()], "ResultEnvelope", &call_statuses())) }),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": { "title": "hcpx", "version": env!("CARGO_PKG_VERSION"),
            "description": "The HCP commands the caller may call (none without a bearer token). Every route but /healthz, /readyz and /openapi.json needs `Authorization: Bearer TOKEN`; /openapi.json with one lists that Principal's commands." },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas(),
        },
    })
}

/// A call's operation, which answers `202` with a task when the request prefers `respond-async` and the call
/// runs past the operator's bound. `Prefer` is said in the description, not as a parameter: a server must ignore
/// the preferences (and the headers) it does not know (RFC 7240), and a second optional header parameter has
/// schemathesis send an unknown header and expect it refused.
fn may_be_task(mut o: Value) -> Value {
    o["description"] = json!("With `Prefer: respond-async` (RFC 7240), a call still running after the operator's bound (sandbox.json tasks.after_ms), or of a command its pack marks long, answers 202 with a task: GET its Location (/v1/tasks/{id}) for its status and, once it ended, its result envelope; DELETE it to cancel. Other preferences are ignored.");
    o["responses"]["202"] = json!({ "description": "The call runs on as a task (Prefer: respond-async); GET its Location",
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/TaskAnswer" } } } });
    o
}

/// `GET /v1/tasks/{id}` and `DELETE /v1/tasks/{id}`: a task of the caller's own.
fn task_paths(paths: &mut Map<String, Value>) {
    let id = [param("id", "path", true, "A task id (tk_…)")];
    let mut cancel = op(
        "task_cancel",
        "Cancel a task of the caller's: 202 once recorded (the call is stopped within a poll), 200 when it had already ended.",
        None,
        &id,
        "TaskAnswer",
        &[200, 202, 401, 404, 503],
    );
    cancel["responses"]["202"]["content"]["application/json"]["schema"] =
        json!({ "$ref": "#/components/schemas/TaskAnswer" });
    paths.insert(
        "/v1/tasks/{id}".into(),
        json!({
            "get": op("task", "A task of the caller's: its status, and its result envelope once it ended.", None, &id, "TaskAnswer", &[200, 401, 404, 503]),
            "delete": cancel,
        }),
    );
}

/// `GET /v1/approvals` and `POST /v1/approvals/{id}/approve|refuse` (approver Principals only).
fn approval_paths(paths: &mut Map<String, Value>) {
    paths.insert(
        "/v1/approvals".into(),
        json!({ "get": op("approvals", "The writes of the caller's tenant waiting for a person (approvers only).", None, &[], "Any", &[200, 401, 403]) }),
    );
    let id = [param("id", "path", true, "An approval id (ap_…)")];
    for (verb, summary) in [
        ("approve", "Approve a waiting write: its caller's retry with the approval id runs it once (approvers only, never their own)."),
        ("refuse", "Refuse a waiting write: it never runs (approvers only)."),
    ] {
        paths.insert(
            format!("/v1/approvals/{{id}}/{verb}"),
            json!({ "post": op(&format!("approval_{verb}"), summary, None, &id, "Any", &[200, 401, 403, 404, 409]) }),
        );
    }
}

/// `GET /v1/sense` (a `text/event-stream`) and `POST /v1/sense/{pack}/{ref}` (docs/sense.md).
fn sense_paths(paths: &mut Map<String, Value>) {
    let id = json!({ "type": "integer", "minimum": 0, "maximum": u64::MAX });
    let watch_params = [
        param("pack", "query", false, "Only this pack's events"),
        param_schema("after", "query", false, "Only events after this id", id.clone()),
        param_schema("Last-Event-ID", "header", false, "The last event id seen (wins over after)", id),
    ];
    let mut watch = op(
        "sense_watch",
        "The caller's tenant's Sense events of the packs it holds sense.announce for, as Server-Sent Events.",
        None,
        &watch_params,
        "Any",
        &[200, 400, 401, 403, 404],
    );
    watch["responses"]["200"] = json!({ "description": "An event stream: `id:` the event id, `data:` the event as JSON",
        "content": { "text/event-stream": { "schema": { "type": "string" } } } });
    paths.insert("/v1/sense".into(), json!({ "get": watch }));
    let emit_params = [
        param("pack", "path", true, "A pack id"),
        param("ref", "path", true, "A stimulusTriggers ref of the pack"),
    ];
    paths.insert(
        "/v1/sense/{pack}/{ref}".into(),
        json!({ "post": op("sense_emit", "Record an upstream push of a declared trigger; the body is its JSON payload.",
            Some((json!({}), false)), &emit_params, "Any", &[200, 400, 401, 403, 404, 409, 413]) }),
    );
}

/// One command of an activated pack, with the arguments the runtime accepts for it.
struct CommandDoc {
    pack_id: String,
    verb: String,
    description: String,
    operation: Operation,
    /// The declared schema, closed (an unknown argument is refused), plus what every command takes: the gate
    /// arguments (required as `true` on a confirm-gated command, which runs only with them, or with a person's
    /// `approval_id`) and `mode: mock`.
    args: Value,
}

impl CommandDoc {
    fn required(&self) -> Vec<Value> {
        self.args.get("required").and_then(Value::as_array).cloned().unwrap_or_default()
    }

    fn envelope(&self) -> Value {
        let mut required = vec![json!("pack_id"), json!("verb_key")];
        if !self.required().is_empty() {
            required.push(json!("args"));
        }
        json!({
            "type": "object", "additionalProperties": false, "required": required,
            "properties": {
                "pack_id": { "const": self.pack_id }, "verb_key": { "const": self.verb },
                "args": self.args, "project_id": { "type": ["string", "null"] },
            },
        })
    }
}

/// What rendering refuses of a wrap's text arguments (crates/hcpx-pack/src/render.rs), said in the schema: a required one may not
/// be empty, none may hold a NUL byte, and one that starts an argv token may not start with `-`.
fn wrap_text_rules(props: &mut Map<String, Value>, c: &crate::pack::Command, wrap: &crate::pack::WrapTarget) {
    use crate::template::Piece;
    let tokens = c.cli.as_deref().unwrap_or(&wrap.argv_template);
    let leads = |name: &str| {
        tokens.iter().any(|t| matches!(t.pieces().first(), Some(Piece::Var(v)) if v.as_str() == name))
    };
    for (name, schema) in props.iter_mut() {
        let Value::Object(s) = schema else { continue };
        if s.get("type") != Some(&json!("string")) {
            continue;
        }
        if c.args.required().iter().any(|r| r == name) {
            s.entry("minLength").or_insert(json!(1));
        }
        let rule = if leads(name) { "^(?!-)[^\\u0000]*$" } else { "^[^\\u0000]*$" };
        match s.get("pattern").cloned() {
            None => {
                s.insert("pattern".into(), json!(rule));
            }
            Some(own) => {
                s.remove("pattern");
                s.insert("allOf".into(), json!([{ "pattern": own }, { "pattern": rule }]));
            }
        }
    }
}

/// Every command `principal` may call: of the packs activated for its tenant, those its grants allow (the
/// capability the pipeline's step 3 asks for).
fn commands(runtime: &Runtime, principal: &Principal) -> Vec<CommandDoc> {
    let mut out = Vec::new();
    for pack in runtime.activated_packs(Some(&principal.tenant)) {
        for c in pack.commands.values() {
            let cap = crate::runtime::visible::capability(&c.key, c.policy.operation);
            if !principal.grants.allows(cap, &pack.id, &c.key) {
                continue;
            }
            let mut args = c.args.schema().as_object().cloned().unwrap_or_default();
            args.insert("type".into(), json!("object"));
            args.insert("additionalProperties".into(), json!(false));
            let props = args.entry("properties").or_insert_with(|| json!({}));
            if let Some(p) = props.as_object_mut() {
                for gate in crate::args::GATE_ARGS {
                    let schema = if c.policy.confirm {
                        json!({ "const": true })
                    } else {
                        json!({ "type": "boolean" })
                    };
                    p.insert(gate.into(), schema);
                }
                p.insert(crate::args::MODE_ARG.into(), json!({ "const": "mock" }));
                if c.policy.confirm {
                    p.insert(
                        crate::args::APPROVAL_ARG.into(),
                        json!({ "type": "string", "pattern": "^ap_[0-9a-f]{24}$",
                                "description": "a person's approval of this exact call (sandbox.json human_approval)" }),
                    );
                }
            }
            if let Some(wrap) = &pack.wrap {
                if let Some(p) = args.get_mut("properties").and_then(Value::as_object_mut) {
                    wrap_text_rules(p, c, wrap);
                }
            }
            if c.policy.confirm {
                // Either gate argument satisfies the gate, or a person's approval: the command runs only with one.
                args.insert(
                    "anyOf".into(),
                    json!([{ "required": ["confirm"] }, { "required": ["apply"] }, { "required": [crate::args::APPROVAL_ARG] }]),
                );
            }
            out.push(CommandDoc {
                pack_id: pack.id.clone(),
                verb: c.key.clone(),
                description: c.description.clone().unwrap_or_default(),
                operation: c.policy.operation,
                args: Value::Object(args),
            });
        }
    }
    out
}

/// An operation; `body` is the request body's schema and whether a body is required.
fn op(
    id: &str,
    summary: &str,
    body: Option<(Value, bool)>,
    params: &[Value],
    answer: &str,
    statuses: &[u16],
) -> Value {
    let mut o = json!({ "operationId": id, "summary": summary, "responses": responses(answer, statuses) });
    if !params.is_empty() {
        o["parameters"] = Value::Array(params.to_vec());
    }
    if let Some((schema, required)) = body {
        o["requestBody"] =
            json!({ "required": required, "content": { "application/json": { "schema": schema } } });
    }
    o
}

/// A `Health` answer with another status.
fn health_answer(description: &str) -> Value {
    json!({ "description": description,
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Health" } } } })
}

fn public_op(id: &str, summary: &str, answer: &str) -> Value {
    let mut o = op(id, summary, None, &[], answer, &[200]);
    o["security"] = json!([]);
    o
}

fn responses(answer: &str, statuses: &[u16]) -> Value {
    let mut r = Map::new();
    for s in statuses {
        // A call answers its result envelope whatever the status; anything else answers `Failure` on error.
        let schema = if *s == 200 || answer == "ResultEnvelope" { answer } else { "Failure" };
        r.insert(
            s.to_string(),
            json!({ "description": status_text(*s),
                "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } } }),
        );
    }
    Value::Object(r)
}

fn status_text(s: u16) -> &'static str {
    axum::http::StatusCode::from_u16(s).ok().and_then(|c| c.canonical_reason()).unwrap_or("answer")
}

fn param(name: &str, at: &str, required: bool, description: &str) -> Value {
    param_schema(name, at, required, description, json!({ "type": "string" }))
}

/// `Hcp-Timeout-Ms`: the call's own deadline, under the operator's.
fn timeout_param() -> Value {
    param_schema(
        super::routes::TIMEOUT_HEADER,
        "header",
        false,
        "The most this call may take, in milliseconds; the operator's timeout_ms still caps it",
        json!({ "type": "integer", "minimum": 1 }),
    )
}

/// A query parameter whose value is a JSON text.
fn json_param(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description,
        "content": { "application/json": { "schema": schema } } })
}

fn param_schema(name: &str, at: &str, required: bool, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": at, "required": required, "description": description, "schema": schema })
}

fn schemas() -> Value {
    let codes: Vec<&str> = crate::model::Code::NAMES.to_vec();
    json!({
        "Envelope": {
            "type": "object", "additionalProperties": false, "required": ["pack_id", "verb_key"],
            "properties": {
                "pack_id": { "type": "string" }, "verb_key": { "type": "string" },
                "args": { "type": "object" }, "project_id": { "type": ["string", "null"] },
            },
        },
        "ResultEnvelope": {
            "type": "object", "required": ["ok"],
            "properties": {
                "ok": { "type": "boolean" }, "pack_id": { "type": "string" }, "verb_key": { "type": "string" },
                "result": {}, "error": { "type": "string" }, "code": { "enum": codes },
                "title": { "type": "string" }, "stdout": { "type": "string" }, "stderr": { "type": "string" },
                "truncated": { "type": "boolean" }, "sandbox": { "type": "object" }, "preview": { "type": "object" },
            },
        },
        "Failure": {
            "type": "object", "required": ["ok", "code", "error"],
            "properties": { "ok": { "const": false }, "code": { "enum": codes }, "error": { "type": "string" } },
        },
        "Health": {
            "type": "object", "required": ["ok", "store"],
            "properties": { "ok": { "type": "boolean" }, "store": { "type": "string" }, "error": { "type": "string" },
                "document": { "type": "string", "description": "The stored settings document that does not load (/readyz)" },
                "reason": { "type": "string", "description": "Why it does not load" } },
        },
        "Any": { "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" } } },
        "Task": {
            "type": "object", "required": ["id", "status", "pack_id", "verb_key", "created_at", "updated_at"],
            "properties": {
                "id": { "type": "string" }, "status": { "enum": ["working", "completed", "failed", "cancelled"] },
                "pack_id": { "type": "string" }, "verb_key": { "type": "string" },
                "created_at": { "type": "string" }, "updated_at": { "type": "string" },
                "finished_at": { "type": "string" }, "expires_at": { "type": "string" },
                "cancel_requested": { "type": "boolean" }, "location": { "type": "string" },
                "outcome": { "const": "unknown" }, "error": { "type": "string" },
            },
        },
        "TaskAnswer": {
            "type": "object", "required": ["ok", "task"],
            "properties": { "ok": { "const": true }, "task": { "$ref": "#/components/schemas/Task" },
                "result": { "$ref": "#/components/schemas/ResultEnvelope" } },
        },
        "Document": { "type": "object" },
    })
}
