//! The operations endpoints a load balancer and a scraper use: `/healthz` (does the store answer),
//! `/readyz` (take traffic now?) and `/metrics` (Prometheus text, operators only).

use axum::extract::{Extension, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

use super::routes::http_error;
use super::App;
use crate::model::Code;
use crate::store::principals::Authenticated;
use crate::store::StoreError;

/// The store's health, off the async workers (a back end may block to answer).
async fn store_health(app: &App) -> Result<(), String> {
    let rt = app.runtime.clone();
    match tokio::task::spawn_blocking(move || rt.store().health()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("the store does not answer: {}", store_failure(app, &e))),
        Err(e) => Err(format!("the store check's thread failed: {e}")),
    }
}

/// What a caller who showed no token (or before its token is checked) is told of a store failure. A
/// database's failure goes to the log, for the operator, and the answer never names the database; a file
/// store's is answered as it is (the document that does not parse named from `$HCP_HOME`, not the host).
pub(crate) fn store_failure(app: &App, e: &StoreError) -> String {
    match e {
        StoreError::Database(_) => {
            app.log.store_unavailable(&e.to_string());
            "its database is unreachable (the server's log says why)".into()
        }
        other => app.runtime.host_paths().hide(&other.to_string()).into_owned(),
    }
}

fn unavailable(store: &str, reason: &str) -> Response {
    let body = json!({ "ok": false, "store": store, "error": reason });
    (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
}

/// `GET /healthz`: whether the store answers. No token needed; it names the store's kind, nothing of packs or
/// tenants.
pub(crate) async fn healthz(State(app): State<Arc<App>>) -> Response {
    let kind = app.runtime.store().kind();
    match store_health(&app).await {
        Ok(()) => Json(json!({ "ok": true, "store": kind })).into_response(),
        Err(reason) => unavailable(kind, &reason),
    }
}

/// `GET /readyz`: 200 once the server has loaded its packs and the store answers; 503 while it shuts down
/// (so a load balancer drains it), while the store does not answer, or while a stored operator document every
/// call reads does not load (`sandbox.json`: every call would be refused; `principals.json`, `issuers.json`:
/// every token would be) — naming the document and why, until it is fixed (`hcpx config` for the settings),
/// without a restart.
pub(crate) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let kind = app.runtime.store().kind();
    if let Err(reason) = app.readiness.ready() {
        return unavailable(kind, reason);
    }
    if let Err(reason) = store_health(&app).await {
        return unavailable(kind, &reason);
    }
    match settings_load(&app).await {
        Ok(()) => Json(json!({ "ok": true, "store": kind })).into_response(),
        Err(SettingsFault::Unloadable { document, reason }) => {
            let error = if document == crate::store::settings::SANDBOX {
                format!("the operator settings ({document}) do not load, so every call would be refused: {reason}; fix them with `hcpx config set KEY VALUE` or `hcpx config unset KEY`")
            } else {
                format!("the operator document {document} does not load, so every token it vouches for would be refused: {reason}; restore it from the copy it was damaged from (an `hcpx store export`, or a backup)")
            };
            let body = json!({
                "ok": false,
                "store": kind,
                "error": error,
                "document": document,
                "reason": reason,
            });
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
        Err(SettingsFault::Other(reason)) => unavailable(kind, &reason),
    }
}

/// Why the stored settings cannot be used.
enum SettingsFault {
    /// The document does not parse or check, as the runtime reads it.
    Unloadable { document: &'static str, reason: String },
    /// The store failed reading it.
    Other(String),
}

/// Whether the stored operator documents every call reads load, read as the calls read them (through the
/// store's cache, so a document another replica or a hand wrote is seen within the cache's bound), off the
/// async workers: the settings, then the Principals and the OAuth issuers a token is checked against.
async fn settings_load(app: &App) -> Result<(), SettingsFault> {
    let rt = app.runtime.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let store = rt.store();
        let each: [(&'static str, Result<(), StoreError>); 3] = [
            (crate::store::settings::SANDBOX, store.sandbox().map(|_| ())),
            ("principals.json", store.principals().map(|_| ())),
            ("issuers.json", store.issuers().map(|_| ())),
        ];
        each.into_iter().find_map(|(doc, r)| r.err().map(|e| (doc, e)))
    })
    .await;
    match checked.map(|found| found.map_or(Ok(()), Err)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err((document, StoreError::Corrupt { reason, .. }))) => Err(SettingsFault::Unloadable {
            document,
            reason: app.runtime.host_paths().hide(&reason).into_owned(),
        }),
        Ok(Err((_, e))) => {
            Err(SettingsFault::Other(format!("the store does not answer: {}", store_failure(app, &e))))
        }
        Err(e) => Err(SettingsFault::Other(format!("the settings check's thread failed: {e}"))),
    }
}

/// `GET /metrics`: the Prometheus text exposition, for operator Principals only (it counts every tenant's
/// calls).
pub(crate) async fn metrics(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
) -> Response {
    if !who.operator {
        return http_error(
            &app,
            StatusCode::FORBIDDEN,
            Code::Denied,
            &format!(
                "denied: principal {} is not an operator; GET /metrics needs an operator's token (`hcpx principal add ID --tenant T --operator`)",
                who.principal.id
            ),
        );
    }
    // Approvals and tasks are read from the store off the async workers (and at most once per
    // `metrics_store::GATHER_TTL`); a store that does not answer leaves those families empty.
    let (metrics, rt) = (app.metrics.clone(), app.runtime.clone());
    let gathered = tokio::task::spawn_blocking(move || metrics.gather(rt.store())).await.ok();
    let store = app.runtime.store();
    let mut text = app.metrics.render_gathered(
        app.runtime.calls_in_flight(),
        store.kind(),
        store.pool_stats(),
        gathered.as_deref(),
    );
    // What `/readyz` says of this replica's own state (loaded, not draining); the store's answer is the
    // store's families'.
    let ready = u8::from(app.readiness.ready().is_ok());
    text.push_str(&format!(
        "# HELP hcp_ready Whether this replica takes traffic (1), or is starting or draining (0).\n\
         # TYPE hcp_ready gauge\nhcp_ready {ready}\n"
    ));
    if let Some(t) = app.runtime.tracer() {
        super::trace::render_counts(&mut text, t.counts());
    }
    let mut resp = text.into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    resp
}
