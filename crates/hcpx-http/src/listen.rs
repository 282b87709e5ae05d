//! The accept loop: each connection is served by hyper's HTTP/1 with a bound on reading a request head, so a
//! client that connects and stalls (slowloris) is dropped instead of holding a connection forever; axum's own
//! `serve` sets no timer, and without one hyper applies no header timeout.

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::time::Duration;

/// Serves `app` on `listener` until `stop` resolves; then takes no more connections, lets each one finish the
/// request it is in (idle ones close at once), and returns when all have.
pub async fn accept_until(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    header_timeout: Duration,
    stop: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(header_timeout)
                        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                }
                // Out of descriptors, or a connection reset before it was taken: try again shortly, never stop.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            () = &mut stop => break,
        }
    }
    drop(listener);
    graceful.shutdown().await;
}
