//! The floor under `hcpx serve` for benches/http.sh (issue #39): the thinnest HTTP server around the same
//! `Runtime::exec_async` — hyper's HTTP/1 on a tokio multi-thread runtime, as `hcpx serve` runs it, with no
//! router, auth, access log, metrics or host-path check — so a served call's req/s can be put beside what any
//! server on this machine could reach. Not a face of hcpx: it runs every call as one fixed Principal.
//!
//! Env: HTTP_BENCH_HOME (the store benches/http.sh prepared); HTTP_THIN_WORKERS (tokio worker threads, default
//! tokio's: one a core), HTTP_THIN_EVENT_INTERVAL and HTTP_THIN_GLOBAL_QUEUE_INTERVAL (tokio's knobs of those
//! names, default tokio's), to try a runtime's shape on the floor before on the server; HTTP_THIN_AS_SERVE=1 builds
//! the Runtime as hcpx-serve does (`--max-calls 1024`, the metrics observer, the background compile and task
//! sweeps), so what the server's Runtime adds is told from what its HTTP face adds. Listens on 127.0.0.1:0, says `listening on http://ADDR` on standard error, answers
//! `POST /v1/exec/{pack}/{verb}` (the body the args) until killed. Without HTTP_BENCH_HOME it says so and exits
//! (so `cargo bench` over every bench passes it by).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use hcpx_model::grants::Grants;
use hcpx_model::{Envelope, Invoker, Principal};
use hcpx_runtime::{CallContext, Runtime};
use hcpx_store::Store;

async fn call(
    rt: Arc<Runtime>,
    principal: Principal,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let mut parts = path.trim_start_matches("/v1/exec/").splitn(2, '/');
    let (pack, verb) =
        (parts.next().unwrap_or_default().to_string(), parts.next().unwrap_or_default().to_string());
    let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
    let args = serde_json::from_slice(&body).unwrap_or_default();
    let out = rt.exec_async(principal, Envelope::new(&pack, &verb, args), CallContext::default()).await;
    let text = serde_json::to_vec(&out).unwrap_or_default();
    Ok(Response::builder()
        .status(if out.ok { 200 } else { 500 })
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(text)))
        .unwrap())
}

fn main() {
    let Ok(home) = std::env::var("HTTP_BENCH_HOME") else {
        eprintln!("http_thin: run by benches/http.sh (HTTP_BENCH_HOME unset)");
        return;
    };
    let as_serve = std::env::var("HTTP_THIN_AS_SERVE").is_ok_and(|v| v == "1");
    let mut runtime = Runtime::new(Store::open(home.as_ref()).unwrap());
    if as_serve {
        runtime = runtime
            .with_max_calls(1024)
            .with_observer(Arc::new(hcpx_http::Metrics::with_max_tenants(hcpx_http::METRICS_MAX_TENANTS)));
    }
    let rt = Arc::new(runtime);
    let principal =
        Principal { id: "bench".into(), tenant: "bench".into(), grants: Grants::All, invoker: Invoker::Http };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Ok(w) = std::env::var("HTTP_THIN_WORKERS") {
        builder.worker_threads(w.parse().unwrap());
    }
    if let Ok(v) = std::env::var("HTTP_THIN_EVENT_INTERVAL") {
        builder.event_interval(v.parse().unwrap());
    }
    if let Ok(v) = std::env::var("HTTP_THIN_GLOBAL_QUEUE_INTERVAL") {
        builder.global_queue_interval(v.parse().unwrap());
    }
    let tokio = builder.enable_all().build().unwrap();
    tokio.block_on(async move {
        if as_serve {
            hcpx_runtime::adapter::wrap::reuse_tmpdirs(true);
            rt.clone().keep_compiled();
            rt.clone().look_after_tasks();
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        eprintln!("http_thin: listening on http://{}", listener.local_addr().unwrap());
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let _ = stream.set_nodelay(true);
            let (rt, principal) = (rt.clone(), principal.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| call(rt.clone(), principal.clone(), req));
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
}
