//! Bearer authentication (docs/spec.md §19, docs/hosting.md): a token shaped as a JWT goes to the OAuth issuers
//! of `issuers.json` (crate::oauth verifies it), anything else to the rows of `principals.json`. A request
//! without a token, or with one neither takes, is answered 401 before anything else, naming the protected
//! resource metadata where issuers are configured; a JWT Principal whose scopes fall short of what the request
//! needs is answered 403 `insufficient_scope`. The Principal found rides in the request's extensions to the
//! handler (and, for `/mcp`, into the MCP request context).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use super::routes::http_error;
use super::App;
use crate::model::{Code, Invoker};
use crate::oauth::{metadata, scope, Rejection};
use crate::store::issuers::Issuers;
use crate::store::principals::Authenticated;

/// Who a request is for, as the access log records it (never the token).
#[derive(Debug, Clone)]
pub(crate) struct LoggedCaller {
    pub principal: String,
    pub tenant: String,
}

/// The request's path as the client sent it (the layer wraps `/mcp`'s nested service whole, prefix and all).
fn path_of(req: &Request) -> String {
    req.uri().path().to_string()
}

/// 503 for a store whose database does not answer: the caller is not known yet, so the answer does not name
/// the database (the log does, masked).
pub(crate) fn store_away(app: &App, e: &crate::store::StoreError) -> Response {
    let why = super::ops::store_failure(app, e);
    let mut resp = http_error(
        app,
        StatusCode::SERVICE_UNAVAILABLE,
        Code::Busy,
        &format!("unavailable: the store does not answer: {why}; retry, perhaps on another replica"),
    );
    resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// Finds the request's Principal or answers 401. `principals.json` and `issuers.json` are read at each request
/// (one `stat` while unchanged), so a removed Principal's token, or a removed issuer's, stops working at once.
pub(crate) async fn require_bearer(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let path = path_of(&req);
    let issuers = match app.runtime.store().issuers() {
        Ok(i) => i.filter(|i| !i.is_empty()),
        Err(e @ crate::store::StoreError::Database(_)) => return store_away(&app, &e),
        Err(e) => {
            return http_error(&app, StatusCode::INTERNAL_SERVER_ERROR, Code::Denied, &format!("denied: {e}"))
        }
    };
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from);
    let Some(token) = token else {
        let fix = if issuers.is_some() {
            "no bearer token: send `Authorization: Bearer TOKEN`, a token of an issuer the protected resource metadata names, or one of `hcpx principal add`"
        } else {
            "no bearer token: send `Authorization: Bearer TOKEN` (`hcpx principal add` makes one)"
        };
        return unauthorized(&app, issuers.as_deref(), &path, fix, false);
    };
    if crate::oauth::jws::looks_like_jwt(&token) {
        let Some(list) = issuers else {
            return unauthorized(
                &app,
                None,
                &path,
                "the bearer token is a JWT but this server takes no OAuth issuer; its operator adds one with `hcpx auth issuer add`",
                true,
            );
        };
        // Through `/mcp` the MCP handler takes the Principal with invoker `mcp`.
        let who = match app.oauth.authenticate(&token, &list, Invoker::Http).await {
            Ok(who) => who,
            Err(Rejection::Invalid(m)) => return unauthorized(&app, Some(&list), &path, &m, true),
            Err(Rejection::Unavailable(m)) => {
                let mut resp = http_error(&app, StatusCode::SERVICE_UNAVAILABLE, Code::Busy, &m);
                resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return resp;
            }
        };
        let issuer = match &who.via {
            crate::store::principals::Via::Issuer { issuer, .. } => list.find(issuer),
            crate::store::principals::Via::Token => None,
        };
        if let Some(issuer) = issuer {
            let method = req.method().clone();
            let body = if scope::needs_body(&method, &path) {
                let (parts, body) = req.into_parts();
                let bytes = match axum::body::to_bytes(body, app.max_body_bytes).await {
                    Ok(b) => b,
                    Err(_) => {
                        return http_error(
                            &app,
                            StatusCode::PAYLOAD_TOO_LARGE,
                            Code::InvalidArgs,
                            &format!("invalid_args: the body is larger than {} bytes", app.max_body_bytes),
                        )
                    }
                };
                req = Request::from_parts(parts, Body::from(bytes.clone()));
                Some(bytes)
            } else {
                None
            };
            let needs = scope::need_of(&method, &path, body.as_deref());
            if !needs.is_empty() {
                let resource =
                    metadata::resource_for(&list, &path).map(metadata::metadata_url).unwrap_or_default();
                if let Some(resp) = scope::short(&app, issuer, &who, &needs, &resource) {
                    return logged(resp, &who);
                }
            }
        }
        return admit(req, next, who).await;
    }
    let principals = match app.runtime.store().principals() {
        Ok(Some(p)) => p,
        Ok(None) => {
            return unauthorized(
                &app,
                issuers.as_deref(),
                &path,
                "this runtime has no principals.json, so no static token is valid; add one with `hcpx principal add`",
                true,
            )
        }
        // A replica whose database is away answers 503 (retry, perhaps on another replica); it never falls
        // back to local files.
        Err(e @ crate::store::StoreError::Database(_)) => return store_away(&app, &e),
        Err(e) => {
            return http_error(&app, StatusCode::INTERNAL_SERVER_ERROR, Code::Denied, &format!("denied: {e}"));
        }
    };
    // Through `/mcp` the MCP handler takes the Principal with invoker `mcp`.
    let Some(who) = principals.authenticate(&token, Invoker::Http) else {
        return unauthorized(
            &app,
            issuers.as_deref(),
            &path,
            "the bearer token matches no principal; ask the operator for a valid one",
            true,
        );
    };
    admit(req, next, who).await
}

async fn admit(mut req: Request, next: Next, who: Authenticated) -> Response {
    let logged_as =
        LoggedCaller { principal: who.principal.id.clone(), tenant: who.principal.tenant.clone() };
    req.extensions_mut().insert::<Authenticated>(who);
    let mut resp = next.run(req).await;
    resp.extensions_mut().insert(logged_as);
    resp
}

fn logged(mut resp: Response, who: &Authenticated) -> Response {
    resp.extensions_mut()
        .insert(LoggedCaller { principal: who.principal.id.clone(), tenant: who.principal.tenant.clone() });
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

/// 401 with `WWW-Authenticate: Bearer`, naming the protected resource metadata where issuers are configured
/// (RFC 9728 §5.1) and `error="invalid_token"` where a token was given (RFC 6750 §3.1).
fn unauthorized(app: &App, issuers: Option<&Issuers>, path: &str, message: &str, given: bool) -> Response {
    let mut resp = http_error(app, StatusCode::UNAUTHORIZED, Code::Denied, message).into_response();
    let mut challenge = String::from("Bearer");
    let mut params = Vec::new();
    if let Some(resource) = issuers.and_then(|i| metadata::resource_for(i, path)) {
        params.push(format!("resource_metadata=\"{}\"", metadata::metadata_url(resource)));
    }
    if given {
        params.push("error=\"invalid_token\"".to_string());
    }
    if !params.is_empty() {
        challenge.push(' ');
        challenge.push_str(&params.join(", "));
    }
    let value = HeaderValue::from_str(&challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
    resp.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    resp
}
