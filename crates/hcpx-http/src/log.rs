//! The access log: one JSON line per request — when, the method, the path (without its query, where
//! `/v1/title` takes arguments), the status, the time taken, the Principal and tenant, and the result's code.
//! Never a header, a body, an argument or a token. Besides, a line per failure of the store's database that
//! no unauthenticated answer details.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::auth::LoggedCaller;
use super::routes::LoggedCode;
use super::App;

/// Where access lines go.
#[derive(Clone)]
pub struct AccessLog {
    sink: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl AccessLog {
    /// Lines to standard error.
    pub fn stderr() -> AccessLog {
        AccessLog::to(Box::new(std::io::stderr()))
    }

    /// Lines to `w`.
    pub fn to(w: Box<dyn Write + Send>) -> AccessLog {
        AccessLog { sink: Arc::new(Mutex::new(w)) }
    }

    /// A line for the operator alone: why the store's database did not answer (`error`, which names the
    /// database only with its passwords masked). The answers of `/healthz`, `/readyz` and a 503 before the
    /// caller is known say only that it did not.
    pub(crate) fn store_unavailable(&self, error: &str) {
        self.write(&json!({
            "at": crate::model::clock::now_rfc3339(),
            "event": "store_unavailable",
            "error": error,
        }));
    }

    /// One `write` per line: the line is made first (standard error is unbuffered, and formatting straight
    /// into it wrote each piece with a system call of its own).
    fn write(&self, line: &impl serde::Serialize) {
        let mut text = Vec::with_capacity(256);
        if serde_json::to_writer(&mut text, line).is_err() {
            return;
        }
        text.push(b'\n');
        if let Ok(mut w) = self.sink.lock() {
            let _ = w.write_all(&text);
        }
    }
}

/// Times the request and writes its line once the response is ready.
pub(crate) async fn access(State(app): State<Arc<App>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    // The path without its query (`/v1/title` takes arguments there), cut short at 200 characters.
    let full = req.uri().path();
    let path: String = if full.len() <= 200 { full.to_string() } else { full.chars().take(200).collect() };
    let resp = next.run(req).await;
    let caller = resp.extensions().get::<LoggedCaller>();
    let code = resp.extensions().get::<LoggedCode>().map(|c| c.0.as_str());
    app.log.write(&Line {
        at: crate::model::clock::now_rfc3339(),
        method: method.as_str(),
        path: &path,
        status: resp.status().as_u16(),
        ms: (started.elapsed().as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
        principal: caller.map(|c| c.principal.as_str()),
        tenant: caller.map(|c| c.tenant.as_str()),
        code,
    });
    resp
}

/// One request's line, its fields in the order they are written (serialized straight into the line, with no
/// map built for it on the way).
#[derive(serde::Serialize)]
struct Line<'a> {
    at: String,
    method: &'a str,
    path: &'a str,
    status: u16,
    ms: f64,
    principal: Option<&'a str>,
    tenant: Option<&'a str>,
    code: Option<&'a str>,
}
