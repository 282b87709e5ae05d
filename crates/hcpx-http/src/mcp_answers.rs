//! The answers to what a replica asks a client in a session (before protocol 2026-07-28: a confirm gate's
//! `elicitation/create`, sent in the call's own response stream), wherever the balancer sends them. The replica
//! that asks waits for the answer in memory; the client POSTs it, perhaps to another replica. So: [`watch`] reads
//! the server's messages as they stream to the client and notes each question this replica asks ([`Asked`]); an
//! answer reaching a replica that did not ask it is left in the store ([`elsewhere`]) and answered 202, and the
//! replica that asked takes it from there (a waiter per question, polling every [`POLL`], for at most
//! `mcp_answers::KEEP`) and hands it to its session as if the client had sent it there. An answer reaching the
//! replica that asked goes straight to its session. Only after the session guard (`mcp_sessions`): a session's
//! answers come from its own Principal.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::SessionManager;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::mcp_sessions::{blocking, unavailable, Guard};
use crate::store::mcp_answers::KEEP;

/// How often a waiting question looks for its answer in the store.
const POLL: Duration = Duration::from_millis(100);

/// The longest SSE event read for a question (a question is small; a longer event is a result, not read).
const MAX_EVENT: usize = 1 << 20;

/// The questions this replica asked and waits for: (session id, the question's JSON-RPC id as JSON text).
#[derive(Default)]
pub(crate) struct Asked(Mutex<HashSet<(String, String)>>);

impl Asked {
    fn insert(&self, session: &str, question: &str) -> bool {
        self.0.lock().is_ok_and(|mut m| m.insert((session.to_string(), question.to_string())))
    }

    /// Whether it was waiting (it is not any more).
    fn take(&self, session: &str, question: &str) -> bool {
        self.0.lock().is_ok_and(|mut m| m.remove(&(session.to_string(), question.to_string())))
    }

    fn waiting(&self, session: &str, question: &str) -> bool {
        self.0.lock().is_ok_and(|m| m.contains(&(session.to_string(), question.to_string())))
    }
}

/// The JSON-RPC id (as JSON text) of a client's answer: a message with an id and a result or an error, and no
/// method. `None` for anything else.
fn answer_id(body: &[u8]) -> Option<String> {
    // A call or a notification names its method: most bodies are not parsed twice.
    if body.windows(8).any(|w| w == b"\"method\"") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let o = v.as_object()?;
    let answer = !o.contains_key("method") && (o.contains_key("result") || o.contains_key("error"));
    answer.then(|| o.get("id").map(|id| id.to_string())).flatten()
}

/// The request to hand to rmcp here, or the answer already given: a POST in session `session` that answers a
/// question this replica did not ask is left in the store for the one that did (202), or refused when the session
/// has too many answers waiting (429) or the store does not answer (503).
pub(crate) async fn elsewhere(g: &Guard, session: &str, req: Request) -> Result<Request, Response> {
    if req.method() != Method::POST {
        return Ok(req);
    }
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, g.max_body_bytes)
        .await
        .map_err(|_| (StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large").into_response())?;
    let question = answer_id(&bytes).filter(|q| !g.asked.take(session, q));
    let Some(question) = question else { return Ok(Request::from_parts(parts, Body::from(bytes))) };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (store, s) = (g.app.runtime.store().clone(), session.to_string());
    match blocking(move || store.mcp_answer_put(&s, &question, &text)).await {
        Ok(true) => Err(StatusCode::ACCEPTED.into_response()),
        Ok(false) => Err((
            StatusCode::TOO_MANY_REQUESTS,
            "Too Many Requests: this session has answers enough waiting; answer only what the server asked",
        )
            .into_response()),
        Err(e) => Err(unavailable(&g.app, &e)),
    }
}

/// `resp` with its event stream read for the questions this replica asks in session `session`.
pub(crate) fn watch(g: &Guard, session: String, resp: Response) -> Response {
    let sse = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !sse {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let mut scan = Scan::default();
    let g = g.clone();
    let stream = body.into_data_stream().inspect(move |chunk| {
        if let Ok(bytes) = chunk {
            for question in scan.feed(bytes) {
                if g.asked.insert(&session, &question) {
                    tokio::spawn(wait_for_answer(g.clone(), session.clone(), question));
                }
            }
        }
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Waits for the answer to `question` of `session` to reach the store through another replica, and hands it to
/// the session here; gives up once it was answered here, the session is gone, or after `KEEP`.
async fn wait_for_answer(g: Guard, session: String, question: String) {
    let since = Instant::now();
    let id = session.clone().into();
    loop {
        tokio::time::sleep(POLL).await;
        if !g.asked.waiting(&session, &question) {
            return;
        }
        if since.elapsed() > KEEP || !g.sessions.has_session(&id).await.unwrap_or(false) {
            g.asked.take(&session, &question);
            return;
        }
        let (store, s, q) = (g.app.runtime.store().clone(), session.clone(), question.clone());
        // A store that does not answer now may later: the waiter keeps looking, within its bound.
        let Ok(Some(body)) = blocking(move || store.mcp_answer_take(&s, &q)).await else { continue };
        if !g.asked.take(&session, &question) {
            return;
        }
        if let Ok(answer) = serde_json::from_str::<ClientJsonRpcMessage>(&body) {
            let _ = g.sessions.accept_message(&id, answer).await;
        }
        return;
    }
}

/// Reads an event stream as it passes, for the server's requests in it (its questions).
#[derive(Default)]
struct Scan {
    line: Vec<u8>,
    data: String,
    /// The event is longer than [`MAX_EVENT`]: not a question; skipped to its end.
    skip: bool,
}

impl Scan {
    /// The JSON-RPC ids (as JSON text) of the requests whose events end in `bytes`.
    fn feed(&mut self, bytes: &Bytes) -> Vec<String> {
        let mut out = Vec::new();
        for &b in bytes.iter() {
            if b != b'\n' {
                if self.line.len() < MAX_EVENT {
                    self.line.push(b);
                } else {
                    self.skip = true;
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                if !self.skip {
                    out.extend(question_id(&self.data));
                }
                self.data.clear();
                self.skip = false;
            } else if let Some(d) = line.strip_prefix(b"data:") {
                let d = d.strip_prefix(b" ").unwrap_or(d);
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(d));
                self.skip |= self.data.len() > MAX_EVENT;
            }
        }
        out
    }
}

/// The id (as JSON text) of an event's message when it is a request: a method and an id.
fn question_id(data: &str) -> Option<String> {
    if !data.contains("\"method\"") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    let o = v.as_object()?;
    o.get("method")?;
    o.get("id").map(|id| id.to_string())
}

/// The shared table of questions a replica's guard keeps.
pub(crate) fn asked() -> Arc<Asked> {
    Arc::new(Asked::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_requests_are_questions_however_the_stream_is_cut() {
        let stream = concat!(
            "id: 0/0\nretry: 3000\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{\"message\":\"Pay?\"}}\r\nid: 0/1\r\n\r\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"text\":\"\\\"method\\\"\"}]}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"ping\"}\n\n",
        );
        for cut in [1, 2, 5, 17, stream.len()] {
            let mut scan = Scan::default();
            let mut found = Vec::new();
            for piece in stream.as_bytes().chunks(cut) {
                found.extend(scan.feed(&Bytes::copy_from_slice(piece)));
            }
            assert_eq!(found, vec!["7".to_string(), "\"q\"".to_string()], "cut every {cut}");
        }
    }

    #[test]
    fn an_answer_is_a_result_or_an_error_with_an_id() {
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(), Some("7"));
        assert_eq!(answer_id(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#).as_deref(), Some("\"a\""));
        for not in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"{"jsonrpc":"2.0","result":{}}"#,
            b"not json",
        ] {
            assert_eq!(answer_id(not), None);
        }
    }
}
