//! Traces on the HTTP face (docs/hosting.md, Traces): the caller's span of a `/v1` request, from its W3C
//! `traceparent` and `tracestate` headers (read only when calls are traced; a malformed one is ignored and the
//! call starts a trace of its own), and the exporter's counts on `/metrics`.

use axum::http::HeaderMap;

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::runtime::trace::{Counts, Parent};

/// The caller's span, when the request names a well-formed one.
pub(crate) fn parent(headers: &HeaderMap) -> Option<Parent> {
    let tp = headers.get("traceparent")?.to_str().ok()?;
    Parent::parse(tp, headers.get("tracestate").and_then(|v| v.to_str().ok()))
}

/// The exporter's counts, in the Prometheus text format, after the other series.
pub(crate) fn render_counts(out: &mut String, c: &Counts) {
    let _ = writeln!(out, "# HELP hcp_trace_spans_exported_total Spans the collector accepted.");
    let _ = writeln!(out, "# TYPE hcp_trace_spans_exported_total counter");
    let _ = writeln!(out, "hcp_trace_spans_exported_total {}", c.exported.load(Ordering::Relaxed));
    let _ = writeln!(
        out,
        "# HELP hcp_trace_spans_dropped_total Spans dropped: the queue was full, or the collector refused them or could not be reached in time."
    );
    let _ = writeln!(out, "# TYPE hcp_trace_spans_dropped_total counter");
    let _ = writeln!(out, "hcp_trace_spans_dropped_total {}", c.dropped.load(Ordering::Relaxed));
}
