//! A CONNECT the proxy terminates (issue #36 point 5, docs/egress.md Termination): for a call with host-bound
//! credentials, every HTTPS tunnel is answered by hcpx itself with a leaf of the call's CA, its SNI still checked
//! against the CONNECT host; each HTTP/1.1 request read from it has its head rewritten by `Secrets` and is sent
//! over hcpx's own TLS connection to the pinned origin, verified for the real host against the system's roots.
//! Every request is one `EgressEvent`; the tunnel itself is one only when no request was read from it.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;

use crate::addr::resolve;
use crate::body::{Answer, Meter, Relay, Upload, Verdict};
use crate::http::{host_matches, Target};
use crate::proxy::{Record, Shared};
use crate::refusal::{Refusal, RefusalKind};
use crate::rules::Scheme;
use crate::upstream::TlsFailure;

type Upstream = SendRequest<Upload<Incoming>>;

/// A request body up to this size is read (and scanned) whole before its head goes to the origin.
const READ_AHEAD: usize = 1 << 20;

/// The TLS client side to the origin: pinned addresses (`origin`, already connected), the real host verified.
async fn origin_tls(origin: TcpStream, host: &str, shared: &Shared) -> Result<TlsStream<TcpStream>, Refusal> {
    match tokio::time::timeout(shared.limits.connect_timeout, crate::upstream::tls(origin, host)).await {
        Ok(Ok(tls)) => Ok(tls),
        Ok(Err(TlsFailure::Refused(r))) => Err(r),
        Ok(Err(TlsFailure::Handshake { error: e, .. })) => Err(Refusal::new(
            RefusalKind::UpstreamTls,
            format!("the origin {host} did not prove it is {host} ({e}); its certificate must chain to a root hcpx trusts"),
        )),
        Err(_) => Err(Refusal::new(RefusalKind::UpstreamTls, format!("the tls handshake with {host} did not finish in time"))),
    }
}

/// An HTTP/1.1 client connection over `tls`, its connection task aborted when the guard drops.
async fn handshake(tls: TlsStream<TcpStream>, host: &str) -> Result<(Upstream, Abort), Refusal> {
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| Refusal::new(RefusalKind::ConnectFailed, format!("http/1.1 with {host} failed: {e}")))?;
    Ok((
        send,
        Abort(tokio::spawn(async move {
            let _ = conn.await;
        })),
    ))
}

struct Abort(JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The origin connection a tunnel's requests share; made again (resolved and pinned anew) when the origin closed
/// the last one.
struct Origin {
    conn: Option<(Upstream, Abort)>,
}

/// What each request of one tunnel needs.
struct Ctx {
    shared: Arc<Shared>,
    target: Target,
    rule: Option<String>,
    origin: tokio::sync::Mutex<Origin>,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
    requests: AtomicU64,
}

/// Terminates the CONNECT to `t`: the origin's TLS first (a certificate that does not verify is answered 502),
/// then `200`, the client's SNI checked, TLS accepted with the call CA's leaf for `t.host`, and HTTP/1.1 served.
pub(crate) async fn serve(
    client: &mut TcpStream,
    origin: TcpStream,
    t: &Target,
    hello: Vec<u8>,
    shared: &Arc<Shared>,
    rec: &mut Record,
) -> Result<(), Refusal> {
    let Some(ca) = shared.ca.clone() else {
        return Err(Refusal::new(
            RefusalKind::BadRequest,
            "internal: no certificate authority for this call",
        ));
    };
    let host = crate::rules::normalize_host(&t.host)?;
    let first = match origin_tls(origin, &host, shared).await {
        Ok(tls) => handshake(tls, &host).await,
        Err(r) => Err(r),
    };
    let first = match first {
        Ok(c) => c,
        Err(r) => {
            crate::proxy::answer(client, r.kind.status(), &r).await;
            rec.status = Some(r.kind.status());
            return Err(r);
        }
    };
    client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .map_err(|e| io("answering", &e))?;
    rec.status = Some(200);
    let hello = match crate::sni::read_hello(client, t, hello).await {
        Ok(h) => h,
        Err(Some(r)) => return Err(r),
        // The client went away: the tunnel ends, nothing was refused.
        Err(None) => return Ok(()),
    };
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(&host)?);
    let tls = acceptor.accept(Rewind { head: hello, at: 0, inner: client }).await.map_err(|e| {
        Refusal::new(
            RefusalKind::BadRequest,
            format!("the client's tls handshake for {host} failed ({e}); it must trust the call's certificate authority (SSL_CERT_FILE) and speak http/1.1"),
        )
    })?;
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        target: Target { scheme: Scheme::Https, host: t.host.clone(), port: t.port, path: String::new() },
        rule: rec.rule.clone(),
        origin: tokio::sync::Mutex::new(Origin { conn: Some(first) }),
        up: rec.up.clone(),
        down: rec.down.clone(),
        requests: AtomicU64::new(0),
    });
    let service = {
        let ctx = ctx.clone();
        hyper::service::service_fn(move |req| {
            let ctx = ctx.clone();
            async move { Ok::<_, Infallible>(request(req, ctx).await) }
        })
    };
    let max = shared.limits.max_head.max(8192);
    let served = hyper::server::conn::http1::Builder::new()
        .max_buf_size(max)
        .max_headers(crate::http::MAX_HEADERS)
        .serve_connection(TokioIo::new(tls), service)
        .await;
    // The requests are the events; the tunnel is one only when it carried none.
    if ctx.requests.load(Ordering::Relaxed) > 0 {
        rec.silent = true;
    }
    // A connection that ends badly after its requests (the client reset it) refuses nothing: each request
    // already reported how it ended.
    match served {
        Ok(()) => Ok(()),
        Err(_) if ctx.requests.load(Ordering::Relaxed) > 0 => Ok(()),
        Err(e) => Err(Refusal::new(
            RefusalKind::BadRequest,
            format!("no http/1.1 request in the tunnel to {host}: {e}"),
        )),
    }
}

fn io(what: &str, e: &std::io::Error) -> Refusal {
    Refusal::new(RefusalKind::BadRequest, format!("{what}: {e}"))
}

/// One request read from the tunnel: checked, rewritten, sent to the origin, its response relayed.
async fn request(req: hyper::Request<Incoming>, ctx: Arc<Ctx>) -> hyper::Response<Answer<Incoming>> {
    ctx.requests.fetch_add(1, Ordering::Relaxed);
    let t = &ctx.target;
    let mut rec = Record::new(ctx.shared.sink.clone());
    rec.host.clone_from(&t.host);
    rec.port = t.port;
    rec.scheme = Some(Scheme::Https);
    rec.method = req.method().to_string();
    rec.rule.clone_from(&ctx.rule);
    let (mut parts, body) = req.into_parts();
    if let Err(r) = check_head(&mut parts, t) {
        return refuse(rec, r);
    }
    if let Err(r) = ctx.shared.secrets.apply(Scheme::Https, &t.host, t.port, &mut parts) {
        return refuse(rec, r);
    }
    let head_len = head_len(&parts);
    let meter_up = Meter {
        request: rec.up.clone(),
        connection: ctx.up.clone(),
        cap: ctx.shared.limits.max_bytes_up,
        name: "up",
    };
    if let Err(r) = meter_up.count(head_len) {
        return refuse(rec, r);
    }
    let verdict: Verdict = Arc::new(Mutex::new(None));
    let mut upload = Upload {
        read: std::collections::VecDeque::new(),
        inner: body,
        scan: ctx.shared.secrets.body_scan(),
        host: t.host.clone(),
        port: t.port,
        meter: meter_up,
        verdict: verdict.clone(),
    };
    if let Err(r) = upload.read_ahead(READ_AHEAD).await {
        return refuse(rec, r);
    }
    let sent = {
        let mut origin = ctx.origin.lock().await;
        match sender(&mut origin, &ctx).await {
            Ok(send) => send.send_request(hyper::Request::from_parts(parts, upload)).await.map_err(|e| {
                Refusal::new(
                    RefusalKind::ConnectFailed,
                    format!("{}:{} did not answer the request ({e})", t.host, t.port),
                )
            }),
            Err(r) => Err(r),
        }
    };
    let response = match sent {
        Ok(r) => r,
        Err(r) => {
            let told = verdict.lock().ok().and_then(|mut v| v.take());
            return refuse(rec, told.unwrap_or(r));
        }
    };
    if let Some(r) = verdict.lock().ok().and_then(|mut v| v.take()) {
        return refuse(rec, r);
    }
    let (mut parts, body) = response.into_parts();
    let guard = ctx.shared.secrets.echo_guard();
    if let Err(r) = guard.headers(&parts.headers, &t.host, t.port) {
        return refuse(rec, r);
    }
    rec.status = Some(parts.status.as_u16());
    drop_hop(&mut parts.headers);
    let meter_down = Meter {
        request: rec.down.clone(),
        connection: ctx.down.clone(),
        cap: ctx.shared.limits.max_bytes_down,
        name: "down",
    };
    if hyper::body::Body::is_end_stream(&body) {
        rec.finished = true;
    }
    let relay = Relay {
        inner: body,
        meter: meter_down,
        record: Some(rec),
        guard,
        host: t.host.clone(),
        port: t.port,
        done: false,
    };
    hyper::Response::from_parts(parts, Answer::Relay(Box::new(relay)))
}

/// The connection to the origin, made again when the last one closed (the origin's `Connection: close`).
async fn sender<'a>(origin: &'a mut Origin, ctx: &Ctx) -> Result<&'a mut Upstream, Refusal> {
    let alive = match origin.conn.as_mut() {
        Some((send, _)) => !send.is_closed() && send.ready().await.is_ok(),
        None => false,
    };
    if !alive {
        origin.conn = None;
        let t = &ctx.target;
        let addrs = resolve(&ctx.shared.policy, &t.host, t.port).await?;
        let tcp =
            crate::upstream::connect(&addrs, &t.host, t.port, ctx.shared.limits.connect_timeout).await?;
        let host = crate::rules::normalize_host(&t.host)?;
        let tls = origin_tls(tcp, &host, &ctx.shared).await?;
        origin.conn = Some(handshake(tls, &host).await?);
    }
    match origin.conn.as_mut() {
        Some((send, _)) => {
            send.ready()
                .await
                .map_err(|e| Refusal::new(RefusalKind::ConnectFailed, format!("{}: {e}", ctx.target.host)))?;
            Ok(send)
        }
        None => Err(Refusal::new(RefusalKind::ConnectFailed, "no connection to the origin")),
    }
}

/// Origin-form only, with a Host header that names the tunnel's own host; hop-by-hop headers dropped.
fn check_head(parts: &mut http::request::Parts, t: &Target) -> Result<(), Refusal> {
    let bad = |why: String| Refusal::new(RefusalKind::BadRequest, why);
    if parts.uri.authority().is_some() || parts.uri.scheme().is_some() {
        return Err(bad(format!(
            "{} {} in the tunnel to {}: send the path only (origin-form)",
            parts.method, parts.uri, t.host
        )));
    }
    let hosts: Vec<&http::HeaderValue> = parts.headers.get_all(http::header::HOST).iter().collect();
    let [host] = hosts.as_slice() else {
        return Err(bad(format!("a request in the tunnel to {} needs exactly one host header", t.host)));
    };
    let host = String::from_utf8_lossy(host.as_bytes()).into_owned();
    if !host_matches(&host, t) {
        return Err(bad(format!(
            "host header {host:?} does not name the tunnel's host {}:{}",
            t.host, t.port
        )));
    }
    // A chunked body is framed again by hyper on the way out; a Content-Length beside it would frame it twice.
    if parts.headers.contains_key(http::header::TRANSFER_ENCODING) {
        parts.headers.remove(http::header::CONTENT_LENGTH);
    }
    drop_hop(&mut parts.headers);
    Ok(())
}

fn drop_hop(headers: &mut http::HeaderMap) {
    let named: Vec<String> = headers
        .get_all(http::header::CONNECTION)
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    // The plain path's hop-by-hop headers, and `transfer-encoding`: hyper frames each side itself.
    let hop = crate::http::HOP.iter().chain(&["transfer-encoding"]).map(|s| s.to_string());
    for name in hop.chain(named) {
        if name.eq_ignore_ascii_case("transfer-encoding") {
            // hyper frames the relayed body by its own length or chunks; the header it decoded is dropped.
            headers.remove(http::header::TRANSFER_ENCODING);
            continue;
        }
        if let Ok(n) = http::HeaderName::from_bytes(name.as_bytes()) {
            headers.remove(n);
        }
    }
}

/// About how many bytes the head is on the wire (the event counts bodies exactly, heads by this).
fn head_len(parts: &http::request::Parts) -> usize {
    let line = parts.method.as_str().len() + parts.uri.to_string().len() + 12;
    line + parts.headers.iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum::<usize>() + 2
}

/// The proxy's own answer inside the tunnel: the refusal's status and its one line; the event records it.
fn refuse(mut rec: Record, r: Refusal) -> hyper::Response<Answer<Incoming>> {
    let status = r.kind.status();
    let body = Bytes::from(format!("{r}\n"));
    rec.status = Some(status);
    rec.refused = Some(r);
    rec.finished = true;
    drop(rec);
    let mut resp = hyper::Response::new(Answer::Text(Some(body)));
    *resp.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::FORBIDDEN);
    resp.headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// The client's stream with the ClientHello bytes the proxy already read put back in front.
struct Rewind<'a> {
    head: Vec<u8>,
    at: usize,
    inner: &'a mut TcpStream,
}

impl AsyncRead for Rewind<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.head.len() {
            let n = (this.head.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.head[this.at..this.at + n]);
            this.at += n;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut *this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut *self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut *self.inner).poll_shutdown(cx)
    }
}
