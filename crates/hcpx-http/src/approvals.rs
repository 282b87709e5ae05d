//! `GET /v1/approvals` and `POST /v1/approvals/{id}/approve|refuse`: an approver Principal (`"approver": true`
//! in principals.json) decides the writes its tenant's callers wait on (`sandbox.json` `human_approval`). Who may
//! decide which approval is the runtime's rule (`Runtime::decide_approval`); this face only authenticates.

use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::sync::Arc;

use super::routes::http_error;
use super::App;
use crate::model::{Code, Invoker};
use crate::runtime::{DecidedThrough, Refusal};
use crate::store::principals::Authenticated;

fn not_approver(app: &App, who: &Authenticated) -> Response {
    http_error(
        app,
        StatusCode::FORBIDDEN,
        Code::Denied,
        &format!(
            "denied: principal {} is not an approver; an operator makes it one with `hcpx principal add … --approver` (\"approver\": true in principals.json)",
            who.principal.id
        ),
    )
}

/// `GET /v1/approvals`: the approvals of the caller's tenant that wait for a person.
pub(crate) async fn pending(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
) -> Response {
    if !who.approver {
        return not_approver(&app, &who);
    }
    let rt = app.runtime.clone();
    let tenant = who.principal.tenant.clone();
    let listed = tokio::task::spawn_blocking(move || rt.store().approvals_pending()).await;
    match listed {
        Ok(Ok(all)) => {
            let mine: Vec<_> = all.into_iter().filter(|a| a.tenant == tenant).collect();
            Json(json!({ "ok": true, "tenant": tenant, "pending": mine })).into_response()
        }
        Ok(Err(e)) => {
            http_error(&app, StatusCode::SERVICE_UNAVAILABLE, Code::Busy, &format!("unavailable: {e}"))
        }
        Err(e) => http_error(&app, StatusCode::INTERNAL_SERVER_ERROR, Code::AdapterFailed, &e.to_string()),
    }
}

/// `POST /v1/approvals/{id}/approve`.
pub(crate) async fn approve(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    decide(app, who, id, true).await
}

/// `POST /v1/approvals/{id}/refuse`.
pub(crate) async fn refuse(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    id: Result<Path<String>, PathRejection>,
) -> Response {
    decide(app, who, id, false).await
}

async fn decide(
    app: Arc<App>,
    who: Authenticated,
    id: Result<Path<String>, PathRejection>,
    approve: bool,
) -> Response {
    let Ok(Path(id)) = id else {
        return http_error(
            &app,
            StatusCode::BAD_REQUEST,
            Code::InvalidArgs,
            "bad path: the approval id is not text",
        );
    };
    if !who.approver {
        return not_approver(&app, &who);
    }
    let rt = app.runtime.clone();
    let by = crate::model::Principal { invoker: Invoker::Http, ..who.principal };
    let decided =
        tokio::task::spawn_blocking(move || rt.decide_approval(&by, &id, approve, DecidedThrough::Approver))
            .await;
    match decided {
        Ok(Ok(a)) => Json(json!({ "ok": true, "approval": a })).into_response(),
        Ok(Err(r)) => {
            let status = match r.refusal {
                Refusal::Unknown => StatusCode::NOT_FOUND,
                Refusal::NotTheirs => StatusCode::FORBIDDEN,
                Refusal::Closed => StatusCode::CONFLICT,
                Refusal::Store => StatusCode::SERVICE_UNAVAILABLE,
            };
            http_error(&app, status, r.denial.code, &r.denial.message)
        }
        Err(e) => http_error(&app, StatusCode::INTERNAL_SERVER_ERROR, Code::AdapterFailed, &e.to_string()),
    }
}
