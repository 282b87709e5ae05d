//! The protected resource metadata of RFC 9728 at `/.well-known/oauth-protected-resource` (and its form with
//! the resource's path appended, `/.well-known/oauth-protected-resource/mcp`), and the URL of it that a 401's
//! `WWW-Authenticate: Bearer resource_metadata="…"` names. Both are built from the audiences the operator
//! configured, never from the request's `Host`.

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::model::Code;
use crate::routes::http_error;
use crate::store::issuers::{Issuer, Issuers};
use crate::App;

/// The well-known path of the metadata.
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The issuers' distinct audiences, in order.
fn resources(issuers: &Issuers) -> Vec<&Issuer> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<&Issuer> =
        issuers.list().iter().filter(|i| seen.insert(i.row.audience.clone())).collect();
    out.sort_by(|a, b| a.row.audience.cmp(&b.row.audience));
    out
}

/// The resource a request to `path` is for: the audience whose path is the longest prefix of it, else the
/// first; `None` without issuers.
pub fn resource_for<'a>(issuers: &'a Issuers, path: &str) -> Option<&'a Issuer> {
    let all = resources(issuers);
    all.iter()
        .filter(|i| {
            let p = i.audience_url.trimmed_path();
            !p.is_empty() && (path == p || path.starts_with(&format!("{p}/")))
        })
        .max_by_key(|i| i.audience_url.trimmed_path().len())
        .or_else(|| all.first())
        .copied()
}

/// The URL of the metadata of `resource` (RFC 9728 §3.1: the well-known segment, then the resource's path).
pub fn metadata_url(resource: &Issuer) -> String {
    format!("{}{WELL_KNOWN}{}", resource.audience_url.origin(), resource.audience_url.trimmed_path())
}

/// The metadata of the resource whose path is `suffix` (`""`: the root form, which answers for the first
/// resource when none is at the root).
fn document(issuers: &Issuers, suffix: &str) -> Option<serde_json::Value> {
    let all = resources(issuers);
    let chosen = all.iter().find(|i| i.audience_url.trimmed_path() == suffix).or_else(|| {
        if suffix.is_empty() {
            all.first()
        } else {
            None
        }
    })?;
    let audience = &chosen.row.audience;
    let mut servers = Vec::new();
    let mut scopes = BTreeSet::new();
    for i in issuers.list().iter().filter(|i| &i.row.audience == audience) {
        servers.push(i.row.issuer.clone());
        scopes.extend(i.scopes_supported());
    }
    Some(json!({
        "resource": audience,
        "authorization_servers": servers,
        "scopes_supported": scopes,
        "bearer_methods_supported": ["header"],
        "resource_name": "hcpx",
    }))
}

fn answer(app: &App, suffix: &str) -> Response {
    let issuers = match app.runtime.store().issuers() {
        Ok(i) => i,
        Err(e) => {
            return http_error(app, StatusCode::SERVICE_UNAVAILABLE, Code::Busy, &format!("unavailable: {e}"))
        }
    };
    match issuers.as_deref().and_then(|i| document(i, suffix)) {
        Some(doc) => {
            let mut resp = Json(doc).into_response();
            resp.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("max-age=60"));
            resp
        }
        None => http_error(
            app,
            StatusCode::NOT_FOUND,
            Code::NoPolicy,
            "no protected resource here: this server takes no OAuth issuer for it (`hcpx auth issuer add` names one)",
        ),
    }
}

/// `GET /.well-known/oauth-protected-resource`.
pub(crate) async fn root(State(app): State<Arc<App>>) -> Response {
    answer(&app, "")
}

/// `GET /.well-known/oauth-protected-resource/{*path}`.
pub(crate) async fn suffixed(State(app): State<Arc<App>>, Path(rest): Path<String>) -> Response {
    let suffix = format!("/{}", rest.trim_end_matches('/'));
    answer(&app, if suffix == "/" { "" } else { &suffix })
}
