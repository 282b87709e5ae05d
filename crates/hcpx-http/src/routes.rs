//! The `/v1` handlers: each takes the authenticated Principal, builds an envelope or asks a report, and renders
//! the answer with the status `Code::status()` gives. No policy, confirm or argument logic lives here.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use super::App;
use crate::model::{Code, Denial, Envelope, ResultEnvelope};
use crate::runtime::CallContext;
use crate::store::principals::Authenticated;

/// The code a response carried, for the access log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoggedCode(pub Code);

/// An error the HTTP face itself answers (no token, a body that is no envelope, no such route): the same
/// `{ok, code, error}` fields as a result envelope, the host's paths in `message` replaced (`HostPaths`).
pub(crate) fn http_error(app: &App, status: StatusCode, code: Code, message: &str) -> Response {
    let message = app.runtime.host_paths().hide(message);
    let mut resp = (status, Json(json!({ "ok": false, "code": code, "error": message }))).into_response();
    resp.extensions_mut().insert(LoggedCode(code));
    resp
}

/// The HTTP status of `code`, from the one table beside `Code`.
fn status_of(code: Code) -> StatusCode {
    StatusCode::from_u16(code.status().http).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

pub(crate) fn denial(app: &App, d: &Denial) -> Response {
    http_error(app, status_of(d.code), d.code, &d.message)
}

fn ok_json(value: impl serde::Serialize) -> Response {
    Json(value).into_response()
}

pub(crate) fn bad_input(app: &App, what: &str, e: impl std::fmt::Display) -> Response {
    http_error(app, StatusCode::BAD_REQUEST, Code::InvalidArgs, &format!("{what}: {e}"))
}

/// A JSON body read as `T`, or the answer that refuses it: `what` it is not, why, then `fix`.
fn json_body<T: serde::de::DeserializeOwned>(
    app: &App,
    body: Result<Bytes, BytesRejection>,
    what: &str,
    fix: &str,
) -> Result<T, Box<Response>> {
    let body = body.map_err(|e| Box::new(body_refused(app, e)))?;
    let de = &mut serde_json::Deserializer::from_slice(&body);
    serde_path_to_error::deserialize(de).map_err(|e| Box::new(bad_input(app, what, format!("{e}{fix}"))))
}

/// A body that could not be read: past the size limit (413, nothing of it ran), or cut off.
pub(crate) fn body_refused(app: &App, e: BytesRejection) -> Response {
    let status = e.status();
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "the request body is larger than this server accepts (hcpx serve --max-body-bytes); nothing ran"
            .to_string()
    } else {
        format!("the request body could not be read: {}", e.body_text())
    };
    http_error(app, status, Code::InvalidArgs, &message)
}

/// A result envelope with the status its code maps to, as a served caller reads it (the host's paths replaced:
/// `HostPaths::hide_in_answer`); `busy` adds `Retry-After`.
fn result(app: &App, out: ResultEnvelope) -> Response {
    let code = out.code;
    let body = answer_body(app.runtime.host_paths(), &out);
    let json = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    let mut resp = (code.map_or(StatusCode::OK, status_of), json, body).into_response();
    if let Some(code) = code {
        if code == Code::Busy {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp.extensions_mut().insert(LoggedCode(code));
    }
    resp
}

/// The JSON a served caller reads of `out`: written once, and sent as it is unless a host path appears in it;
/// only then is it read as a value, each path replaced (`HostPaths::hide_in_answer`), and written again.
pub(crate) fn answer_body(paths: &crate::runtime::host_paths::HostPaths, out: &ResultEnvelope) -> Vec<u8> {
    if let Ok(text) = serde_json::to_string(out) {
        if paths.absent_from_json(&text) {
            return text.into_bytes();
        }
    }
    let mut body = serde_json::to_value(out).unwrap_or_default();
    paths.hide_in_answer(&mut body);
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The header a caller sets to give its call less time than the operator's `timeout_ms` (looked up without
/// regard to case; the OpenAPI document names it the same).
pub(crate) const TIMEOUT_HEADER: &str = "Hcp-Timeout-Ms";

/// A positive whole number of milliseconds; one past `u64` means "no less than the operator's".
fn millis(text: &str) -> Option<u64> {
    let t = text.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(t.parse::<u64>().unwrap_or(u64::MAX)).filter(|ms| *ms > 0)
}

/// A served call: no project directory (a `project`-mode pack is refused with `no_project`), and the deadline
/// the request asks for, if any. With `Prefer: respond-async` a call that runs past the operator's bound answers
/// `202` with a task (`tasks.rs`).
async fn run(app: &App, who: Authenticated, env: Envelope, headers: &HeaderMap) -> Response {
    let deadline = match headers.get(TIMEOUT_HEADER).map(|v| millis(v.to_str().unwrap_or_default())) {
        None => None,
        Some(Some(ms)) => Some(std::time::Duration::from_millis(ms)),
        Some(None) => return bad_input(app, TIMEOUT_HEADER, "it takes a positive number of milliseconds"),
    };
    let trace = app.runtime.tracer().and_then(|_| super::trace::parent(headers));
    let ctx = CallContext { deadline, trace, ..CallContext::default() };
    if super::tasks::prefers_async(headers) {
        return match app.runtime.clone().exec_or_task(who.principal, env, ctx).await {
            crate::runtime::tasks::Started::Answered(out) => result(app, *out),
            crate::runtime::tasks::Started::Task(rec) => super::tasks::accepted(&rec),
        };
    }
    result(app, app.runtime.clone().exec_async(who.principal, env, ctx).await)
}

/// `POST /v1/exec`: the exec envelope in, the result envelope out.
pub(crate) async fn exec(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let fix = "; send {\"pack_id\": …, \"verb_key\": …, \"args\": {…}}";
    match json_body::<Envelope>(&app, body, "the body is not an exec envelope", fix) {
        Ok(env) => run(&app, who, env, &headers).await,
        Err(refused) => *refused,
    }
}

/// `POST /v1/exec/{pack_id}/{verb_key}`: one command, its arguments as the body (an empty body: none).
pub(crate) async fn exec_command(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    headers: HeaderMap,
    path: Result<Path<(String, String)>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return body_refused(&app, e),
    };
    let Path((pack_id, verb_key)) = match path {
        Ok(p) => p,
        Err(e) => return bad_input(&app, "bad path", e),
    };
    let args = if body.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Map<String, Value>>(&body) {
            Ok(a) => a,
            Err(e) => return bad_input(&app, "the body is not a JSON object of arguments", e),
        }
    };
    run(&app, who, Envelope::new(&pack_id, &verb_key, args), &headers).await
}

/// The packs `who` is shown: an operator, who runs the runtime, every installed one; anyone else those it holds
/// a grant for.
fn listed(app: &App, who: &Authenticated) -> Result<crate::runtime::report::ListReport, Denial> {
    if who.operator {
        app.runtime.list(Some(&who.principal.tenant))
    } else {
        app.runtime.list_for(&who.principal)
    }
}

/// `GET /v1/packs`: the packs the caller holds a grant for (an operator: every pack).
pub(crate) async fn packs(State(app): State<Arc<App>>, Extension(who): Extension<Authenticated>) -> Response {
    match listed(&app, &who) {
        Ok(list) => {
            let rows: Vec<Value> = list.packs.into_iter().map(|r| row_for(r, who.operator)).collect();
            ok_json(json!({ "ok": true, "packs": rows }))
        }
        Err(d) => denial(&app, &d),
    }
}

/// A pack row as a Principal sees it: only an operator sees where the pack was installed from, and why one
/// does not load (both name the host's paths).
fn row_for(row: crate::runtime::report::PackRow, operator: bool) -> Value {
    let broken = row.error.is_some();
    let mut v = serde_json::to_value(row).unwrap_or_default();
    if !operator {
        if let Some(o) = v.as_object_mut() {
            o.remove("source");
            if broken {
                o.insert(
                    "error".into(),
                    json!("the pack does not load; an operator sees why in GET /v1/packs"),
                );
            }
        }
    }
    v
}

/// `GET /v1/packs/{id}`.
pub(crate) async fn pack(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(id)) = id else { return bad_input(&app, "bad path", "the pack id is not text") };
    match listed(&app, &who) {
        Ok(list) => match list.packs.into_iter().find(|p| p.id == id) {
            Some(row) => ok_json(json!({ "ok": true, "pack": row_for(row, who.operator) })),
            None => denial(&app, &unknown(&id)),
        },
        Err(d) => denial(&app, &d),
    }
}

/// A pack not installed, or one the caller holds no grant for: the same answer.
fn unknown(id: &str) -> Denial {
    Denial::new(Code::UnknownPack, format!("unknown pack {id}; GET /v1/packs lists the packs you may use"))
}

/// `GET /v1/packs/{id}/availability`: the four flags for the caller (its tenant's credentials).
pub(crate) async fn availability(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(id)) = id else { return bad_input(&app, "bad path", "the pack id is not text") };
    let a = app.runtime.clone().availability_async(who.principal, id.clone()).await;
    if !a.installed {
        return denial(&app, &unknown(&id));
    }
    // Why a flag is false can name where a credential or a bin was looked for.
    let mut a = serde_json::to_value(a).unwrap_or_default();
    if let Some(notes) = a.get_mut("notes") {
        app.runtime.host_paths().hide_all(notes);
    }
    ok_json(json!({ "ok": true, "availability": a }))
}

/// `GET /v1/packs/{id}/commands`: each command the caller may call, with its argument schema.
pub(crate) async fn commands(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let Ok(Path(id)) = id else { return bad_input(&app, "bad path", "the pack id is not text") };
    match app.runtime.commands_for(&who.principal, &id, None) {
        Ok(r) => ok_json(r),
        Err(d) if d.code == Code::UnknownPack => denial(&app, &unknown(&id)),
        Err(d) => denial(&app, &d),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SkillQuery {
    #[serde(default)]
    full: bool,
}

/// `GET /v1/packs/{id}/skill[?full=true]`.
pub(crate) async fn skill(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
    q: Result<Query<SkillQuery>, QueryRejection>,
) -> Response {
    let Ok(Path(id)) = id else { return bad_input(&app, "bad path", "the pack id is not text") };
    let full = match q {
        Ok(Query(q)) => q.full,
        Err(e) => return bad_input(&app, "bad query", e.body_text()),
    };
    match app.runtime.skill_for(&who.principal, &id, full) {
        Ok(r) => ok_json(r),
        Err(d) if d.code == Code::UnknownPack => denial(&app, &unknown(&id)),
        Err(d) => denial(&app, &d),
    }
}

/// What `/v1/title` takes: a command, its arguments and (for the done title) its result.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TitleInput {
    pack_id: String,
    verb_key: String,
    #[serde(default)]
    args: Map<String, Value>,
    #[serde(default)]
    result: Option<Value>,
}

/// The query form: `args` and `result` are JSON texts.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TitleQuery {
    pack_id: String,
    verb_key: String,
    args: Option<String>,
    result: Option<String>,
}

/// `GET /v1/title?pack_id=…&verb_key=…&args={json}[&result={json}]`: the live title, or the done title.
pub(crate) async fn title_get(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    q: Result<Query<TitleQuery>, QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return bad_input(&app, "bad query", e.body_text()),
    };
    let given = q.args.as_deref().filter(|a| !a.trim().is_empty());
    let args = match given.map(serde_json::from_str::<Map<String, Value>>).transpose() {
        Ok(a) => a.unwrap_or_default(),
        Err(e) => return bad_input(&app, "args is not a JSON object", e),
    };
    let result = q.result.map(|r| serde_json::from_str(&r).unwrap_or(Value::String(r)));
    title(&app, &who, TitleInput { pack_id: q.pack_id, verb_key: q.verb_key, args, result })
}

/// `POST /v1/title` with `{pack_id, verb_key, args, result?}`.
pub(crate) async fn title_post(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match json_body::<TitleInput>(&app, body, "the body is not {pack_id, verb_key, args, result?}", "") {
        Ok(t) => title(&app, &who, t),
        Err(refused) => *refused,
    }
}

/// The title of a command the caller may call (of a pack it sees).
fn title(app: &App, who: &Authenticated, t: TitleInput) -> Response {
    let pack = match app.runtime.installed_pack(&t.pack_id) {
        Ok(p) if crate::runtime::visible::sees(&who.principal.grants, &p) => p,
        _ => return denial(app, &unknown(&t.pack_id)),
    };
    let callable = crate::runtime::visible::may_call(&who.principal.grants, &pack, &t.verb_key);
    if pack.command(&t.verb_key).is_none() || !callable {
        return denial(app, &Denial::new(Code::NoPolicy, format!("no policy for {}", t.verb_key)));
    }
    let title = crate::pack::command_title(&pack, &t.verb_key, &t.args, t.result.as_ref());
    ok_json(json!({ "ok": true, "title": title }))
}

/// `GET /v1/audit`: the audit rows of the caller's own tenant, oldest first; never another tenant's.
pub(crate) async fn audit(State(app): State<Arc<App>>, Extension(who): Extension<Authenticated>) -> Response {
    match app.runtime.store().audit_of(Some(&who.principal.tenant)) {
        Ok(rows) => {
            let mine: Vec<_> = rows.into_iter().filter(|r| r.tenant == who.principal.tenant).collect();
            ok_json(json!({ "ok": true, "tenant": who.principal.tenant, "records": mine }))
        }
        Err(e) => denial(&app, &Denial::new(Code::AdapterFailed, e.to_string())),
    }
}

/// `GET /v1/doctor`: the runtime's health, for operators only (it names the host's paths and kernel).
pub(crate) async fn doctor(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
) -> Response {
    if !who.operator {
        let why = format!("denied: principal {} is not an operator; GET /v1/doctor needs \"operator\": true in principals.json", who.principal.id);
        return denial(&app, &Denial::new(Code::Denied, why));
    }
    let rt = app.runtime.clone();
    match tokio::task::spawn_blocking(move || rt.operator_doctor(&who.principal)).await {
        Ok(report) => ok_json(report),
        Err(e) => denial(&app, &Denial::new(Code::AdapterFailed, format!("the check's thread failed: {e}"))),
    }
}

/// Any other path.
pub(crate) async fn not_found(State(app): State<Arc<App>>, req: axum::extract::Request) -> Response {
    http_error(
        &app,
        StatusCode::NOT_FOUND,
        Code::NoPolicy,
        &format!("no route {} {}; GET /openapi.json lists the API", req.method(), req.uri().path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::host_paths::HostPaths;
    use std::path::Path;

    /// What the answer was before it was written once: through a value, the paths hidden, written again.
    fn through_a_value(paths: &HostPaths, out: &ResultEnvelope) -> Vec<u8> {
        let mut body = serde_json::to_value(out).unwrap();
        paths.hide_in_answer(&mut body);
        serde_json::to_vec(&body).unwrap()
    }

    #[test]
    fn an_answer_written_once_is_the_answer_through_a_value() {
        let paths =
            HostPaths::new(Path::new("/srv/op/.hcp"), Path::new("/srv/op/.hcp/cache"), Path::new("/tmp"));
        let mut ok = ResultEnvelope::empty("p", "v", true);
        ok.result = Some(json!({"to": "B", "n": 1.5, "list": [1, "x", null], "z": {"a": true}}));
        ok.title = Some("Planned".into());
        let failed = ResultEnvelope::denied(
            "p",
            "v",
            Code::AdapterFailed,
            "cannot open /srv/op/.hcp/state.json: denied",
        );
        let mut named_in_result = ok.clone();
        named_in_result.result = Some(json!({"where": "/tmp/hcpx-call-1/out"}));
        named_in_result.stderr = Some("wrote /tmp/hcpx-call-1/out".into());
        for out in [ok, failed.clone(), named_in_result] {
            let once = String::from_utf8(answer_body(&paths, &out)).unwrap();
            assert_eq!(once, String::from_utf8(through_a_value(&paths, &out)).unwrap());
        }
        let text = String::from_utf8(answer_body(&paths, &failed)).unwrap();
        assert!(!text.contains("/srv/op") && text.contains("$HCP_HOME/state.json"), "{text}");
    }
}
