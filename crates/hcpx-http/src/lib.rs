//! hcpx-http: the HTTP face, `hcpx serve`. The activated packs over HTTP for a hosted runtime: the JSON API
//! under `/v1`, the MCP face over Streamable HTTP at `/mcp`, `/healthz`, `/readyz`, `/metrics` and
//! `/openapi.json`. Every route but `/healthz`, `/readyz` and `/openapi.json` needs a bearer token from
//! `principals.json`; the handlers only authenticate and build an envelope, the pipeline decides the rest.
//!
//! May use: hcpx-model, hcpx-pack, hcpx-store, hcpx-runtime, hcpx-mcp and hcpx-egress (its TLS client, to
//! fetch an OAuth issuer's keys), axum over hyper, and ring to verify JWT access tokens. Must never:
//! run a request that did not authenticate, answer a Host it was not told to serve, decide a call itself, or
//! hold `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_mcp as mcp;
use hcpx_model as model;
use hcpx_pack::{args, pack, template};
use hcpx_runtime as runtime;
use hcpx_store as store;

mod approvals;
mod auth;
mod listen;
mod log;
mod mcp_answers;
mod mcp_http;
mod mcp_sessions;
mod metrics;
mod metrics_store;
mod metrics_tenants;
pub mod oauth;
mod openapi;
mod ops;
mod routes;
mod sense;
mod tasks;
mod trace;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::runtime::Runtime;

pub use log::AccessLog;
pub use metrics::Metrics;
pub use metrics_tenants::DEFAULT_MAX_TENANTS as METRICS_MAX_TENANTS;

/// How a server runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The largest request body accepted; a larger one is answered 413 and nothing of it runs.
    pub max_body_bytes: usize,
    /// Hosts the MCP endpoint answers to besides the loopback names (DNS-rebinding protection).
    pub allow_hosts: Vec<String>,
    /// How long in-flight calls may take to finish after a shutdown signal before the server stops anyway.
    pub grace: Duration,
    /// How long the server keeps serving after a shutdown signal, `/readyz` answering 503 meanwhile, so a load
    /// balancer sees it go and sends it no more; then it stops taking connections.
    pub drain: Duration,
    /// How long a client may take to send a request's head (and an idle connection may wait for its next
    /// one); past it the connection is dropped.
    pub header_timeout: Duration,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            max_body_bytes: 1024 * 1024,
            allow_hosts: Vec::new(),
            grace: Duration::from_secs(65),
            drain: Duration::ZERO,
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// Where a server is in its life, for `/readyz`.
#[derive(Debug, Default)]
pub struct Readiness {
    loaded: AtomicBool,
    draining: AtomicBool,
}

impl Readiness {
    /// The server has loaded what it needs (`serve` marks it once the activated packs are loaded).
    pub fn mark_loaded(&self) {
        self.loaded.store(true, Ordering::SeqCst);
    }

    /// The server is shutting down: `/readyz` answers 503 from now on.
    pub fn mark_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether it has loaded what it needs and is not shutting down.
    pub fn ready(&self) -> Result<(), &'static str> {
        if self.draining.load(Ordering::SeqCst) {
            return Err("the server is shutting down");
        }
        if !self.loaded.load(Ordering::SeqCst) {
            return Err("the server is still loading its packs");
        }
        Ok(())
    }
}

/// What every handler shares.
pub(crate) struct App {
    pub runtime: Arc<Runtime>,
    pub log: AccessLog,
    /// Cancelled when the server begins to shut down: open Sense streams end so they do not hold it.
    pub shutdown: ShutdownToken,
    /// What `/metrics` reports; the runtime records into it (`Runtime::with_observer`).
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// Verifies the JWT access tokens of the OAuth issuers, with their keys cached.
    pub oauth: Arc<oauth::Verifier>,
    /// The largest request body (the auth layer reads a JWT Principal's `tools/call` or envelope within it).
    pub max_body_bytes: usize,
}

/// What a router is built from besides the runtime and its config.
pub struct Parts {
    pub log: AccessLog,
    pub shutdown: ShutdownToken,
    /// The metrics the runtime records into (give the same to `Runtime::with_observer`).
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
}

/// The whole HTTP face over `runtime`, as an axum router (tests and embedders mount it themselves).
pub fn router(runtime: Arc<Runtime>, cfg: &ServeConfig, parts: Parts) -> Router {
    router_with(runtime, cfg, parts, Arc::default())
}

/// [`router`] verifying JWT access tokens with `oauth` (a benchmark fills its key cache beforehand).
pub fn router_with(
    runtime: Arc<Runtime>,
    cfg: &ServeConfig,
    parts: Parts,
    oauth: Arc<oauth::Verifier>,
) -> Router {
    let Parts { log, shutdown, metrics, readiness } = parts;
    let app = Arc::new(App {
        runtime: runtime.clone(),
        log,
        shutdown: shutdown.clone(),
        metrics,
        readiness,
        oauth,
        max_body_bytes: cfg.max_body_bytes,
    });
    let authed = Router::new()
        .route("/v1/exec", post(routes::exec))
        .route("/v1/exec/{pack_id}/{verb_key}", post(routes::exec_command))
        .route("/v1/packs", get(routes::packs))
        .route("/v1/packs/{id}", get(routes::pack))
        .route("/v1/packs/{id}/availability", get(routes::availability))
        .route("/v1/packs/{id}/commands", get(routes::commands))
        .route("/v1/packs/{id}/skill", get(routes::skill))
        .route("/v1/title", get(routes::title_get).post(routes::title_post))
        .route("/v1/audit", get(routes::audit))
        .route("/v1/approvals", get(approvals::pending))
        .route("/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/v1/approvals/{id}/refuse", post(approvals::refuse))
        .route("/v1/doctor", get(routes::doctor))
        .route("/v1/sense", get(sense::watch))
        .route("/v1/sense/{pack}/{ref}", post(sense::emit))
        .route("/v1/tasks/{id}", get(tasks::get).delete(tasks::cancel))
        .route("/metrics", get(ops::metrics))
        .nest_service("/mcp", mcp_http::service(&app, cfg))
        .route_layer(axum::middleware::from_fn_with_state(app.clone(), auth::require_bearer));
    Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        // RFC 9728: unauthenticated, built from the configured audiences.
        .route(oauth::metadata::WELL_KNOWN, get(oauth::metadata::root))
        .route(&format!("{}/{{*path}}", oauth::metadata::WELL_KNOWN), get(oauth::metadata::suffixed))
        .route(
            "/openapi.json",
            get(openapi::document)
                .route_layer(axum::middleware::from_fn_with_state(app.clone(), auth::optional_bearer)),
        )
        .merge(authed)
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(cfg.max_body_bytes))
        .layer(axum::middleware::from_fn_with_state(app.clone(), log::access))
        .with_state(app)
}

/// Cancelled when the server begins to shut down: open MCP sessions close so their streams do not hold it.
pub type ShutdownToken = tokio_util::sync::CancellationToken;

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {reason}; pick a free address with --listen")]
    Listen { addr: String, reason: String },
    #[error("the server failed: {0}")]
    Serve(String),
}

/// Serves on `listener` until `stop` resolves, then answers `/readyz` with 503 for `cfg.drain` while it keeps
/// serving, stops taking connections, lets in-flight calls finish (at most `cfg.grace`), and returns.
/// `metrics` should be the observer `runtime` was built with (`Runtime::with_observer`).
pub async fn serve(
    listener: tokio::net::TcpListener,
    runtime: Arc<Runtime>,
    metrics: Arc<Metrics>,
    cfg: ServeConfig,
    log: AccessLog,
    stop: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let shutdown = ShutdownToken::new();
    let readiness = Arc::new(Readiness::default());
    // Cancellations of this replica's tasks, and (on the file store) the tasks a process that died left.
    runtime.clone().look_after_tasks();
    let tasks = runtime.clone();
    let parts = Parts { log, shutdown: shutdown.clone(), metrics, readiness: readiness.clone() };
    let app = router(runtime.clone(), &cfg, parts);
    // Ready once the activated packs are loaded (the first calls then find them warm), off the async workers.
    let loaded = readiness.clone();
    tokio::task::spawn_blocking(move || {
        let _ = runtime.activated_packs(None);
        loaded.mark_loaded();
    });
    let begun = shutdown.clone();
    let drain = cfg.drain;
    let signal = async move {
        stop.await;
        readiness.mark_draining();
        tokio::time::sleep(drain).await;
        begun.cancel();
    };
    // Once every connection is done, the calls running as tasks are let finish too (within the same grace); one
    // still running when the server exits is settled as unknown by the store's sweep.
    let server = async move {
        listen::accept_until(listener, app, cfg.header_timeout, signal).await;
        while tasks.tasks_running() > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let grace = cfg.grace;
    let deadline = async move {
        shutdown.cancelled().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = server => Ok(()),
        () = deadline => Ok(()),
    }
}
