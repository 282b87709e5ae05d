//! `GET /openapi.json`: an OpenAPI 3.1 document made at each request from the packs activated now — the fixed
//! routes, plus one path per command (`POST /v1/exec/{pack_id}/{verb_key}`) with its argument schema.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use super::App;
use crate::pack::Operation;
use crate::runtime::Runtime;

/// The statuses a call can answer with (`Code::status()`), each with the result envelope.
const CALL_STATUSES: [u16; 14] = [200, 400, 401, 403, 404, 409, 413, 424, 428, 499, 500, 502, 503, 504];

pub(crate) async fn document(State(app): State<Arc<App>>) -> Response {
    Json(build(&app.runtime)).into_response()
}

/// The document for the packs activated in `runtime`'s store.
pub fn build(runtime: &Runtime) -> Value {
    let mut paths = Map::new();
    paths.insert("/healthz".into(), json!({ "get": public_op("healthz", "The server answers.", "Health") }));
    paths
        .insert("/openapi.json".into(), json!({ "get": public_op("openapi", "This document.", "Document") }));
    paths.insert(
        "/v1/exec".into(),
        json!({ "post": op("exec", "Run a command: the exec envelope in, the result envelope out.",
            Some(json!({ "$ref": "#/components/schemas/Envelope" })), &[], "ResultEnvelope", &CALL_STATUSES) }),
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
        param("args", "query", false, "The arguments as a JSON object"),
        param("result", "query", false, "The result (JSON), for the done title"),
    ];
    paths.insert(
        "/v1/title".into(),
        json!({
            "get": op("title", "The live title, or the done title given a result.", None, &title_params, "Any", &[200, 400, 401, 404]),
            "post": op("title_post", "The same, the inputs as a JSON body.", Some(json!({
                "type": "object", "additionalProperties": false, "required": ["pack_id", "verb_key"],
                "properties": { "pack_id": { "type": "string" }, "verb_key": { "type": "string" },
                    "args": { "type": "object" }, "result": {} } })), &[], "Any", &[200, 400, 401, 404]),
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
    for (pack_id, verb, description, schema, operation) in commands(runtime) {
        let summary = format!("{pack_id} {verb} ({operation}): {description}");
        paths.insert(
            format!("/v1/exec/{pack_id}/{verb}"),
            json!({ "post": op(&format!("{pack_id}__{}", verb.replace('.', "_")), &summary, Some(schema), &[], "ResultEnvelope", &CALL_STATUSES) }),
        );
    }
    json!({
        "openapi": "3.1.0",
        "info": { "title": "hcpx", "version": env!("CARGO_PKG_VERSION"),
            "description": "The activated HCP packs of this runtime. Every route but /healthz and /openapi.json needs `Authorization: Bearer TOKEN`." },
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
            "schemas": schemas(),
        },
    })
}

/// Every command of every activated pack: id, verb, description, argument schema, operation.
fn commands(runtime: &Runtime) -> Vec<(String, String, String, Value, Operation)> {
    let Ok(state) = runtime.store().state() else { return Vec::new() };
    let mut out = Vec::new();
    for id in state.packs.iter().filter(|(_, r)| r.activated).map(|(id, _)| id) {
        let Ok(pack) = runtime.installed_pack(id) else { continue };
        for c in pack.commands.values() {
            let mut schema = c.args.schema().clone();
            if !schema.is_object() {
                schema = json!({ "type": "object" });
            }
            if let Some(o) = schema.as_object_mut() {
                o.entry("type").or_insert(json!("object"));
            }
            out.push((
                id.clone(),
                c.key.clone(),
                c.description.clone().unwrap_or_default(),
                schema,
                c.policy.operation,
            ));
        }
    }
    out
}

fn op(
    id: &str,
    summary: &str,
    body: Option<Value>,
    params: &[Value],
    answer: &str,
    statuses: &[u16],
) -> Value {
    let mut o = json!({ "operationId": id, "summary": summary, "responses": responses(answer, statuses) });
    if !params.is_empty() {
        o["parameters"] = Value::Array(params.to_vec());
    }
    if let Some(schema) = body {
        o["requestBody"] =
            json!({ "required": true, "content": { "application/json": { "schema": schema } } });
    }
    o
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
                "args": { "type": "object" }, "project_id": { "type": "string" },
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
            "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" }, "status": { "type": "string" } },
        },
        "Any": { "type": "object", "required": ["ok"], "properties": { "ok": { "type": "boolean" } } },
        "Document": { "type": "object" },
    })
}
