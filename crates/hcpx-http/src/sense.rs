//! Sense over HTTP (docs/sense.md): `POST /v1/sense/{pack}/{ref}` records an upstream push, `GET /v1/sense`
//! streams the caller's tenant's events as Server-Sent Events, resuming after `Last-Event-ID` (or `?after=`).
//! The runtime decides who may push and see; this module only carries the events.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;

use super::routes::{bad_input, body_refused, denial};
use super::App;
use crate::model::{Code, Denial, Principal};
use crate::runtime::Runtime;
use crate::store::principals::Authenticated;
use crate::store::sense::SenseEvent;

/// How often an open stream looks at the store for new events (one `stat` while nothing changed).
const POLL: std::time::Duration = std::time::Duration::from_millis(250);
/// With pushed delivery (the PostgreSQL store), how often an idle stream re-checks its token and grants.
const PUSHED_POLL: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs `f` on the blocking pool (the store's reads, appends and fsyncs), answering a failed thread as a
/// denial.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Denial> + Send + 'static,
) -> Result<T, Denial> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(Denial::new(Code::AdapterFailed, format!("the request's thread failed: {e}")))
    })
}

/// `POST /v1/sense/{pack}/{ref}`: the body is the payload (any JSON; an empty body is `{}`).
pub(crate) async fn emit(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    path: Result<Path<(String, String)>, PathRejection>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Ok(Path((pack, reference))) = path else {
        return bad_input(&app, "bad path", "send POST /v1/sense/PACK/REF");
    };
    let body = match body {
        Ok(b) => b,
        Err(e) => return body_refused(&app, e),
    };
    let payload = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(v) => v,
            Err(e) => return bad_input(&app, "the body is not a JSON payload", e),
        }
    };
    let rt = app.runtime.clone();
    match blocking(move || rt.sense_emit(&who.principal, &pack, &reference, payload)).await {
        Ok(event) => Json(json!({ "ok": true, "event": event })).into_response(),
        Err(d) => denial(&app, &d),
    }
}

/// `GET /v1/sense[?pack=ID][&after=ID]`'s query.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WatchQuery {
    pack: Option<String>,
    after: Option<u64>,
}

/// An open stream's position.
struct Watch {
    runtime: Arc<Runtime>,
    principal: Principal,
    /// The token it was opened with, checked again at every poll: a removed token or a grant taken back ends
    /// the stream.
    token_sha256: [u8; 32],
    /// What authenticated it: a JWT Principal's stream ends when its token expires or its issuer's row no
    /// longer maps its claims to a Principal.
    opened: Authenticated,
    pack: Option<String>,
    last: u64,
    version: Option<(u64, u64, i64, i64)>,
    pending: VecDeque<SenseEvent>,
    shutdown: super::ShutdownToken,
}

/// The Principal a token names now: `None` when the token was removed (or the file cannot be read), or, for a
/// JWT Principal, when the token expired or its issuer's row no longer takes it.
fn current(
    rt: &Runtime,
    opened: &Authenticated,
    digest: &[u8; 32],
    invoker: crate::model::Invoker,
) -> Option<Principal> {
    if let crate::store::principals::Via::Issuer { .. } = opened.via {
        let issuers = rt.store().issuers().ok().flatten();
        return crate::oauth::still_good(issuers.as_deref(), opened).map(|a| a.principal);
    }
    let principals = rt.store().principals().ok().flatten()?;
    principals.authenticate_digest(digest, invoker).map(|a| a.principal)
}

fn event(e: &SenseEvent) -> Event {
    Event::default().id(e.id.to_string()).data(serde_json::to_string(e).unwrap_or_default())
}

/// `GET /v1/sense`: the replay after the last id the caller saw, then each new event as it is recorded, until
/// the caller goes away or the server shuts down. Refused before anything streams when the caller holds no
/// `sense.announce` (for the named pack, or for any).
pub(crate) async fn watch(
    State(app): State<Arc<App>>,
    Extension(who): Extension<Authenticated>,
    headers: HeaderMap,
    q: Result<Query<WatchQuery>, QueryRejection>,
) -> Response {
    let q = match q {
        Ok(Query(q)) => q,
        Err(e) => return bad_input(&app, "bad query", e.body_text()),
    };
    // A reconnecting EventSource sends the last id it saw; it wins over `?after=`.
    let after = match headers.get("last-event-id") {
        Some(v) => match v.to_str().ok().map(str::trim).and_then(|t| t.parse::<u64>().ok()) {
            Some(id) => id,
            None => return bad_input(&app, "Last-Event-ID", "it takes the id of an event (a whole number)"),
        },
        None => q.after.unwrap_or(0),
    };
    let rt = app.runtime.clone();
    let (principal, pack) = (who.principal.clone(), q.pack.clone());
    let version = rt.sense_version(&principal);
    let first = blocking(move || rt.sense_events(&principal, after, pack.as_deref())).await;
    let first = match first {
        Ok(events) => events,
        Err(d) => return denial(&app, &d),
    };
    let state = Watch {
        runtime: app.runtime.clone(),
        token_sha256: who.token_sha256,
        principal: who.principal.clone(),
        opened: who,
        pack: q.pack,
        last: first.last().map_or(after, |e| e.id),
        version,
        pending: first.into(),
        shutdown: app.shutdown.clone(),
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(e) = st.pending.pop_front() {
                st.last = e.id;
                return Some((Ok::<Event, std::convert::Infallible>(event(&e)), st));
            }
            match st.runtime.store().sense_wake() {
                // The PostgreSQL store wakes every watcher the moment any replica records an event; the slower
                // poll only re-checks who is watching (and covers a listener that is reconnecting).
                Some(live) => {
                    let notified = live.wake.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    if st.runtime.sense_version(&st.principal) == st.version {
                        tokio::select! {
                            () = st.shutdown.cancelled() => return None,
                            () = &mut notified => {}
                            () = tokio::time::sleep(PUSHED_POLL) => {}
                        }
                    }
                }
                None => {
                    tokio::select! {
                        () = st.shutdown.cancelled() => return None,
                        () = tokio::time::sleep(POLL) => {}
                    }
                }
            }
            // Who is watching is decided again at every poll, from principals.json as it is now (a cached read).
            st.principal = current(&st.runtime, &st.opened, &st.token_sha256, st.principal.invoker)?;
            if st.runtime.sense_may_watch(&st.principal, st.pack.as_deref()).is_err() {
                return None;
            }
            let now = st.runtime.sense_version(&st.principal);
            if now == st.version {
                continue;
            }
            st.version = now;
            match st.runtime.sense_events(&st.principal, st.last, st.pack.as_deref()) {
                Ok(new) => st.pending.extend(new),
                Err(_) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
