//! Tasks over the HTTP API: `POST /v1/exec…` with `Prefer: respond-async` answers `202 Accepted` with a task
//! (and `Location: /v1/tasks/{id}`) when the call becomes one (the same rule as over MCP: still running after
//! `sandbox.json` `tasks.after_ms`, or at once for a command its pack marks `long`); `GET /v1/tasks/{id}` is the
//! task, with its result envelope once it ended; `DELETE /v1/tasks/{id}` cancels it. Any replica answers: the
//! task is in the store. A task is its Principal's alone: another's id is 404, as an id that never existed.

use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

use super::routes::http_error;
use super::App;
use crate::model::Code;
use crate::store::principals::Authenticated;
use crate::store::tasks::{rfc3339, TaskRecord, TaskStatus};

/// The preference a request states to be answered with a task (RFC 7240).
const RESPOND_ASYNC: &str = "respond-async";

/// Whether the request prefers an asynchronous answer: a `Prefer` header naming `respond-async` among its
/// preferences (any case, parameters after `;` ignored).
pub(crate) fn prefers_async(headers: &HeaderMap) -> bool {
    headers.get_all("prefer").iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',')
            .any(|p| p.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case(RESPOND_ASYNC)))
    })
}

/// A task as a caller reads it: what, its status and times; its outcome when its replica stopped mid-call.
fn shown(rec: &TaskRecord) -> Value {
    let mut t = json!({
        "id": rec.id, "status": rec.status.as_str(), "pack_id": rec.pack_id, "verb_key": rec.verb_key,
        "created_at": rec.created_at(), "updated_at": rec.updated_at(),
        "cancel_requested": rec.cancel_requested, "location": format!("/v1/tasks/{}", rec.id),
    });
    if let Some(f) = rec.finished_at_ms {
        t["finished_at"] = json!(rfc3339(f));
    }
    if let Some(e) = rec.expires_at_ms() {
        t["expires_at"] = json!(rfc3339(e));
    }
    if rec.status == TaskStatus::Failed {
        t["outcome"] = json!("unknown");
        t["error"] = json!("unknown: the replica running this call stopped before it ended, so whether the command ran is unknown; find out from the system it acts on before calling it again");
    }
    t
}

/// `202 Accepted` for a call that became task `rec`.
pub(crate) fn accepted(rec: &TaskRecord) -> Response {
    let mut resp = (StatusCode::ACCEPTED, Json(json!({ "ok": true, "task": shown(rec) }))).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/tasks/{}", rec.id)) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp.headers_mut().insert("preference-applied", HeaderValue::from_static(RESPOND_ASYNC));
    resp
}

fn unknown(app: &App, id: &str) -> Response {
    http_error(
        app,
        StatusCode::NOT_FOUND,
        Code::Denied,
        &format!(
            "no task {id}; a task is found only by the Principal that made it, and not once it expired (sandbox.json tasks.keep_ms): call the command again"
        ),
    )
}

/// Task `id` of the caller, after recording its cancellation when `cancel`; the answer that refuses it else.
async fn find(
    app: &Arc<App>,
    who: &Authenticated,
    id: Result<Path<String>, PathRejection>,
    cancel: bool,
) -> Result<TaskRecord, Box<Response>> {
    let Ok(Path(id)) = id else {
        return Err(Box::new(super::routes::bad_input(app, "bad path", "the task id is not text")));
    };
    let store = app.runtime.store().clone();
    let (tenant, principal, key) = (who.principal.tenant.clone(), who.principal.id.clone(), id.clone());
    let found = tokio::task::spawn_blocking(move || {
        if cancel {
            store.task_cancel(&tenant, &principal, &key)
        } else {
            store.task(&tenant, &principal, &key)
        }
    })
    .await;
    match found {
        Ok(Ok(Some(t))) => Ok(t),
        Ok(Ok(None)) => Err(Box::new(unknown(app, &id))),
        Ok(Err(e)) => {
            let mut r = http_error(
                app,
                StatusCode::SERVICE_UNAVAILABLE,
                Code::Busy,
                &format!("unavailable: the store does not answer: {e}; retry"),
            );
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            Err(Box::new(r))
        }
        Err(e) => Err(Box::new(http_error(
            app,
            StatusCode::INTERNAL_SERVER_ERROR,
            Code::AdapterFailed,
            &format!("the task's thread failed: {e}"),
        ))),
    }
}

/// `GET /v1/tasks/{id}`: the task, and once it ended its call's result envelope (host paths hidden).
pub(crate) async fn get(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    let rec = match find(&app, &who, id, false).await {
        Ok(r) => r,
        Err(refused) => return *refused,
    };
    let mut body = json!({ "ok": true, "task": shown(&rec) });
    if let Some(out) = &rec.result {
        let mut r = serde_json::to_value(out).unwrap_or_default();
        app.runtime.host_paths().hide_in_answer(&mut r);
        body["result"] = r;
    }
    Json(body).into_response()
}

/// `DELETE /v1/tasks/{id}`: the cancellation is recorded (`202`, the task as it is now; the replica running the
/// call stops it within a poll and the task ends `cancelled`); a task that already ended is left as it is
/// (`200`).
pub(crate) async fn cancel(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    match find(&app, &who, id, true).await {
        Ok(rec) if rec.status == TaskStatus::Working => {
            (StatusCode::ACCEPTED, Json(json!({ "ok": true, "task": shown(&rec) }))).into_response()
        }
        Ok(rec) => Json(json!({ "ok": true, "task": shown(&rec) })).into_response(),
        Err(refused) => *refused,
    }
}
