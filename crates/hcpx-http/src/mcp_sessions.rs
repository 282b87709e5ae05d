//! MCP sessions on any replica (docs/hosting.md). A client on protocol 2026-07-28 has none: rmcp serves each of
//! its requests on its own. A client on 2025-11-25 or earlier opens one with `initialize` and names it on every
//! later request, which a balancer may send to any replica; so the session lives in the store
//! ([`StoreSessions`], rmcp's `SessionStore`), and a replica that does not hold it takes it up from there.
//!
//! A session is the Principal's that opened it. [`guard`] stands before rmcp at `/mcp`: a request naming a
//! session is served only when the store holds that session, live, for the request's own Principal; anything
//! else (another Principal's session, one ended or idle past its bound, what is no session id) is answered as
//! an unknown session, 404, as rmcp answers one, on the replica that holds it in memory as on any other. The
//! guard also tells the store who is calling ([`CALLER`]), so a new session is bound to its opener and a session
//! is taken up only for its owner.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::{
    SessionState, SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::session::SessionManager;
use std::sync::Arc;

use super::App;
use crate::store::principals::Authenticated;
use crate::store::{Store, StoreError};

/// Who a request at `/mcp` is for: the Principal its bearer token authenticated, and its tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Caller {
    principal: String,
    tenant: String,
}

tokio::task_local! {
    /// The caller of the request rmcp is handling, set by [`guard`] around it (rmcp consults the session store
    /// within that request's task).
    static CALLER: Caller;
}

/// The caller of the request being handled; `None` outside [`guard`].
fn caller() -> Option<Caller> {
    CALLER.try_with(Clone::clone).ok()
}

/// Runs a store operation off the async workers (the store is synchronous).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Refused(format!("a store operation stopped: {e}")))?
}

/// rmcp's session store over hcpx's store (`Store::mcp_session*`).
pub(crate) struct StoreSessions {
    store: Store,
}

impl StoreSessions {
    pub(crate) fn new(store: Store) -> StoreSessions {
        StoreSessions { store }
    }
}

#[async_trait::async_trait]
impl SessionStore for StoreSessions {
    /// A session this replica does not hold, taken up only for the Principal that opened it.
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(who) = caller() else { return Ok(None) };
        let (store, id) = (self.store.clone(), session_id.to_string());
        let Some(s) = blocking(move || store.mcp_session(&id)).await? else { return Ok(None) };
        if s.principal != who.principal || s.tenant != who.tenant {
            return Ok(None);
        }
        Ok(Some(SessionState::new(serde_json::from_value(s.init)?)))
    }

    /// A session just opened, bound to the Principal that opened it.
    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let who = caller().ok_or("no bearer Principal to bind the session to")?;
        let init = serde_json::to_value(&state.initialize_params)?;
        let (store, id) = (self.store.clone(), session_id.to_string());
        blocking(move || store.mcp_session_open(&id, &who.principal, &who.tenant, init)).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        let (store, id) = (self.store.clone(), session_id.to_string());
        blocking(move || store.mcp_session_end(&id)).await?;
        Ok(())
    }
}

/// What [`guard`] needs: the server's state, this replica's sessions in memory (to close one the store no longer
/// holds, and to hand one an answer that reached another replica), and the questions it asked in them.
#[derive(Clone)]
pub(crate) struct Guard {
    pub app: Arc<App>,
    pub sessions: Arc<LocalSessionManager>,
    pub asked: Arc<super::mcp_answers::Asked>,
    pub max_body_bytes: usize,
}

/// Stands before rmcp at `/mcp` (see the module's text). In a session, a client's answer to another replica's
/// question goes to the store, and the server's own questions are noted as they stream (`mcp_answers`).
pub(crate) async fn guard(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let Some(who) = req.extensions().get::<Authenticated>() else { return next.run(req).await };
    let who = Caller { principal: who.principal.id.clone(), tenant: who.principal.tenant.clone() };
    let Some(named) = req.headers().get("mcp-session-id") else {
        return CALLER.scope(who, next.run(req)).await;
    };
    // A header that is not text names no session.
    let id = named.to_str().unwrap_or_default().to_string();
    if let Err(refused) = check(&g, &id, &who, req.method() == axum::http::Method::DELETE).await {
        return refused;
    }
    let req = match super::mcp_answers::elsewhere(&g, &id, req).await {
        Ok(req) => req,
        Err(answered) => return answered,
    };
    let resp = CALLER.scope(who, next.run(req)).await;
    super::mcp_answers::watch(&g, id, resp)
}

/// Whether session `id` may serve `who`: the store holds it, live, opened by `who`. A DELETE ends it in the
/// store here, so a failure to is answered (rmcp's own delete only logs one).
async fn check(g: &Guard, id: &str, who: &Caller, delete: bool) -> Result<(), Response> {
    let store = g.app.runtime.store().clone();
    let key = id.to_string();
    let found = blocking(move || store.mcp_session(&key)).await.map_err(|e| unavailable(&g.app, &e))?;
    match found {
        Some(s) if s.principal == who.principal && s.tenant == who.tenant => {}
        // Another's: unknown to this caller, and left as it is.
        Some(_) => return Err(unknown_session()),
        None => {
            // Ended (here or on another replica) or idle past its bound: this replica lets go of it too.
            let _ = g.sessions.close_session(&id.to_string().into()).await;
            return Err(unknown_session());
        }
    }
    if delete {
        let (store, key) = (g.app.runtime.store().clone(), id.to_string());
        blocking(move || store.mcp_session_end(&key)).await.map_err(|e| unavailable(&g.app, &e))?;
    }
    Ok(())
}

/// What rmcp answers for a session it does not know (the MCP spec's 404).
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// The store does not answer: retry, perhaps on another replica (the bearer check's answer).
pub(crate) fn unavailable(app: &App, e: &StoreError) -> Response {
    super::auth::store_away(app, e)
}
