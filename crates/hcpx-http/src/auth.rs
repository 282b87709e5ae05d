//! Bearer authentication (docs/spec.md §19): a request without a token, or with one no row of
//! `principals.json` matches, is answered 401 before anything else. The Principal found rides in the request's
//! extensions to the handler (and, for `/mcp`, into the MCP request context).

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use super::routes::http_error;
use super::App;
use crate::model::{Code, Invoker};
use crate::store::principals::Authenticated;

/// Who a request is for, as the access log records it (never the token).
#[derive(Debug, Clone)]
pub(crate) struct LoggedCaller {
    pub principal: String,
    pub tenant: String,
}

/// Finds the request's Principal or answers 401. `principals.json` is read at each request (one `stat` while
/// it is unchanged), so a removed Principal's token stops working at once.
pub(crate) async fn require_bearer(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let Some(token) = token else {
        return unauthorized(
            &app,
            "no bearer token: send `Authorization: Bearer TOKEN` (`hcpx principal add` makes one)",
        );
    };
    let principals = match app.runtime.store().principals() {
        Ok(Some(p)) => p,
        Ok(None) => return unauthorized(
            &app,
            "this runtime has no principals.json, so no token is valid; add one with `hcpx principal add`",
        ),
        // A replica whose database is away answers 503 (retry, perhaps on another replica); it never falls
        // back to local files. The caller is not known yet, so the answer does not name the database (the
        // log does, masked).
        Err(e @ crate::store::StoreError::Database(_)) => {
            let why = super::ops::store_failure(&app, &e);
            let mut resp = http_error(
                &app,
                StatusCode::SERVICE_UNAVAILABLE,
                Code::Busy,
                &format!("unavailable: the store does not answer: {why}; retry, perhaps on another replica"),
            );
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return resp;
        }
        Err(e) => {
            return http_error(
                &app,
                StatusCode::INTERNAL_SERVER_ERROR,
                Code::Denied,
                &format!("denied: {e}"),
            );
        }
    };
    // Through `/mcp` the MCP handler takes the Principal with invoker `mcp`.
    let Some(who) = principals.authenticate(token, Invoker::Http) else {
        return unauthorized(&app, "the bearer token matches no principal; ask the operator for a valid one");
    };
    let logged = LoggedCaller { principal: who.principal.id.clone(), tenant: who.principal.tenant.clone() };
    req.extensions_mut().insert::<Authenticated>(who);
    let mut resp = next.run(req).await;
    resp.extensions_mut().insert(logged);
    resp
}

/// For `/openapi.json`: a request without an `Authorization` header passes as a stranger; one with a header is
/// held to [`require_bearer`] (a wrong token is 401, never read as no token).
pub(crate) async fn optional_bearer(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    if req.headers().contains_key(header::AUTHORIZATION) {
        require_bearer(State(app), req, next).await
    } else {
        next.run(req).await
    }
}

fn unauthorized(app: &App, message: &str) -> Response {
    let mut resp = http_error(app, StatusCode::UNAUTHORIZED, Code::Denied, message).into_response();
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    resp
}
