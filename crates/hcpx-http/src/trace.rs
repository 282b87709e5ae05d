//! The caller's span of a `/v1` request: its W3C `traceparent` and `tracestate` headers (docs/hosting.md,
//! Traces). Read only when calls are traced; a malformed one is ignored and the call starts a trace of its own.

use axum::http::HeaderMap;

use crate::runtime::trace::Parent;

/// The caller's span, when the request names a well-formed one.
pub(crate) fn parent(headers: &HeaderMap) -> Option<Parent> {
    let tp = headers.get("traceparent")?.to_str().ok()?;
    Parent::parse(tp, headers.get("tracestate").and_then(|v| v.to_str().ok()))
}
