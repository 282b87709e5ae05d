//! The MCP face over Streamable HTTP at `/mcp`: the same tools as `hcpx mcp`, each call for the Principal whose
//! bearer token the request carried (the auth layer puts it in the request; rmcp hands the request's parts to
//! the handler). No project directory: a `project`-mode command is refused with `no_project`. A client on
//! protocol 2026-07-28 is served without a session; an older client's session lives in the store, bound to its
//! Principal, so any replica serves it (`mcp_sessions`).

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

use super::mcp_sessions::{guard, Guard, StoreSessions};
use super::{App, ServeConfig};
use crate::mcp::server::HcpServer;
use crate::runtime::CallContext;

/// The `/mcp` service: rmcp's, behind the session guard.
pub(crate) fn service(app: &Arc<App>, cfg: &ServeConfig) -> Router {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"].map(String::from).to_vec();
    hosts.extend(cfg.allow_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(app.shutdown.clone())
        .with_max_request_body_bytes(cfg.max_body_bytes);
    config.session_store = Some(Arc::new(StoreSessions::new(app.runtime.store().clone())));
    // A call with no bearer Principal in its request never gets this far (the auth layer answers 401); this
    // is what the handler says if one somehow did.
    let no_principal = Arc::new(|| Err("denied: this call carries no bearer Principal".to_string()));
    let sessions = Arc::new(LocalSessionManager::default());
    // One server, cloned for each request: the clones share its tool maps, kept per pack version, so a
    // `tools/call` does not build every tool again.
    let server = HcpServer::new(app.runtime.clone(), no_principal, CallContext::default());
    let mcp = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
    let state = Guard {
        app: app.clone(),
        sessions,
        asked: super::mcp_answers::asked(),
        max_body_bytes: cfg.max_body_bytes,
    };
    Router::new().fallback_service(mcp).layer(axum::middleware::from_fn_with_state(state, guard))
}
