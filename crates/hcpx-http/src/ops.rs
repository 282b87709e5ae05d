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
/// (so a load balancer drains it) or while the store does not answer.
pub(crate) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let kind = app.runtime.store().kind();
    if let Err(reason) = app.readiness.ready() {
        return unavailable(kind, reason);
    }
    match store_health(&app).await {
        Ok(()) => Json(json!({ "ok": true, "store": kind })).into_response(),
        Err(reason) => unavailable(kind, &reason),
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
    let store = app.runtime.store();
    let mut text = app.metrics.render(app.runtime.calls_in_flight(), store.kind(), store.pool_stats());
    if let Some(t) = app.runtime.tracer() {
        super::trace::render_counts(&mut text, t.counts());
    }
    let mut resp = text.into_response();
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    resp
}
