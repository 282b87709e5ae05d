//! The MCP face over Streamable HTTP at `/mcp`: the same tools as `hcpx mcp`, each call for the Principal whose
//! bearer token the request carried (the auth layer puts it in the request; rmcp hands the request's parts to
//! the handler). No project directory: a `project`-mode command is refused with `no_project`.

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

use super::{ServeConfig, ShutdownToken};
use crate::mcp::server::HcpServer;
use crate::runtime::{CallContext, Runtime};

/// The `/mcp` service.
pub(crate) fn service(
    runtime: Arc<Runtime>,
    cfg: &ServeConfig,
    shutdown: ShutdownToken,
) -> StreamableHttpService<HcpServer, LocalSessionManager> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"].map(String::from).to_vec();
    hosts.extend(cfg.allow_hosts.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(cfg.max_body_bytes);
    // A call with no bearer Principal in its request never gets this far (the auth layer answers 401); this
    // is what the handler says if one somehow did.
    let no_principal = Arc::new(|| Err("denied: this call carries no bearer Principal".to_string()));
    StreamableHttpService::new(
        move || Ok(HcpServer::new(runtime.clone(), no_principal.clone(), CallContext::default())),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
