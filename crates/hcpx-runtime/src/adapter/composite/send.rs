//! The wire side of a composite's allowed request (http.rs decides it): the name resolved and classified by the
//! policy and the connection pinned to those addresses (hcpx-egress's `resolve` and `upstream::connect`), TLS to
//! the request's host over the system roots (`upstream::client_config`, the same trust as the wrap side), one
//! HTTP/1 exchange with hyper, and the bodies that count and cap the bytes each way and keep to the deadline.
//! A call with host-bound credentials has each request body read whole (it is at most 1 MiB) and scanned for a
//! placeholder before anything is sent, and each response guarded against echoing a real value to the guest.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hcpx_egress::secrets::EchoGuard;
use hcpx_egress::{resolve, upstream, Policy, Refusal, RefusalKind, Scheme, Secrets};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody};

use super::http::{Report, Target, MAX_REQUEST_BODY_BYTES, MAX_RESPONSE_BODY_BYTES};

/// A connection, plain or TLS.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Stream for T {}

type IoFuture = Box<dyn std::future::Future<Output = Result<(), Error>> + Send>;

/// Aborts the task driving a connection when dropped: with the response body, or with a request that failed.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn limit(reason: String) -> Refusal {
    Refusal::new(RefusalKind::Limit, reason)
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Reads the whole request body (before the deadline, at most `MAX_REQUEST_BODY_BYTES`) and scans it for a
/// placeholder: a body with one sends nothing. The body to send, or the guest's error (recorded in `report`).
async fn scanned(
    secrets: &Secrets,
    target: &Target,
    body: WasiBody,
    deadline: Instant,
    report: &mut Report,
) -> Result<WasiBody, Error> {
    let mut body = body;
    let mut whole: Vec<u8> = Vec::new();
    let mut scan = secrets.body_scan();
    let reading = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| (None, e))?;
            let Some(data) = frame.data_ref() else { continue };
            if (whole.len() + data.len()) as u64 > MAX_REQUEST_BODY_BYTES {
                let why = format!("the request body passed {MAX_REQUEST_BODY_BYTES} bytes");
                return Err((Some(limit(why)), Error::HttpRequestBodySize(Some(MAX_REQUEST_BODY_BYTES))));
            }
            scan.chunk(data, &target.host, target.port).map_err(|r| (Some(r), Error::HttpRequestDenied))?;
            whole.extend_from_slice(data);
        }
        Ok(())
    };
    match tokio::time::timeout_at(deadline, reading).await {
        Ok(Ok(())) => {}
        Ok(Err((Some(r), e))) => return Err(report.refuse_as(r, e)),
        Ok(Err((None, e))) => return Err(e),
        Err(_) => {
            let why = "the request body did not arrive before the call's deadline".to_string();
            return Err(report.refuse_as(limit(why), Error::ConnectionTimeout));
        }
    }
    Ok(http_body_util::Full::new(Bytes::from(whole)).map_err(|never| match never {}).boxed_unsync())
}

/// Sends an allowed `request` to `target`; the response, whose body reports `report` when it ends.
pub(super) async fn send(
    policy: &Policy,
    secrets: &Secrets,
    target: Target,
    request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    deadline: Instant,
    mut report: Report,
) -> Result<(http::Response<WasiBody>, IoFuture), Error> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        let why = "the call's deadline passed before the request was sent".to_string();
        return Err(report.refuse_as(limit(why), Error::ConnectionTimeout));
    }
    let request = if secrets.is_empty() {
        request
    } else {
        let (parts, body) = request.into_parts();
        let body = scanned(secrets, &target, body, deadline, &mut report).await?;
        http::Request::from_parts(parts, body)
    };
    let Target { scheme, host, port } = target;
    let connect_within =
        options.and_then(|o| o.connect_timeout).unwrap_or(super::http::CONNECT_TIMEOUT).min(left);
    let addrs = match tokio::time::timeout(connect_within, resolve(policy, &host, port)).await {
        Ok(Ok(a)) => a,
        Ok(Err(r)) => return Err(report.refuse(r)),
        Err(_) => {
            let why = format!("{host} did not resolve within {} ms", ms(connect_within));
            return Err(report.refuse_as(limit(why), Error::DnsTimeout));
        }
    };
    let connecting = async {
        let tcp = upstream::connect(&addrs, &host, port, connect_within).await.map_err(|r| (r, None))?;
        let io: Box<dyn Stream> = match scheme {
            Scheme::Http => Box::new(tcp),
            Scheme::Https => Box::new(tls(&host, port, tcp).await?),
        };
        hyper::client::conn::http1::Builder::new()
            .title_case_headers(true)
            .handshake::<_, UpBody>(TokioIo::new(io))
            .await
            .map_err(|e| {
                let why = format!("{host}:{port}: the http/1.1 handshake failed ({e})");
                (Refusal::new(RefusalKind::ConnectFailed, why), Some(Error::HttpProtocolError))
            })
    };
    let (mut sender, conn) = match tokio::time::timeout(connect_within, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err((r, None))) => return Err(report.refuse(r)),
        Ok(Err((r, Some(e)))) => return Err(report.refuse_as(r, e)),
        Err(_) => {
            let why = format!("{host}:{port}: no connection within {} ms", ms(connect_within));
            return Err(report.refuse_as(limit(why), Error::ConnectionTimeout));
        }
    };
    let driver = AbortOnDrop(tokio::spawn(conn).abort_handle());
    // The origin-form target: the scheme and authority went into the decision and the Host header.
    let (mut parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    parts.uri = match http::Uri::builder().path_and_query(path.as_str()).build() {
        Ok(u) => u,
        Err(e) => {
            let why = format!("path {path:?} is not a request target ({e})");
            return Err(report.refuse(Refusal::new(RefusalKind::BadRequest, why)));
        }
    };
    let over = Arc::new(AtomicBool::new(false));
    let body = UpBody { inner: body, count: report.up.clone(), over: over.clone() };
    let request = http::Request::from_parts(parts, body);
    let left = deadline.saturating_duration_since(Instant::now());
    let first_byte = options.and_then(|o| o.first_byte_timeout).map_or(left, |t| t.min(left));
    let response = match tokio::time::timeout(first_byte, sender.send_request(request)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) if over.load(Ordering::Relaxed) => {
            let why = format!("the request body passed {MAX_REQUEST_BODY_BYTES} bytes ({e})");
            return Err(
                report.refuse_as(limit(why), Error::HttpRequestBodySize(Some(MAX_REQUEST_BODY_BYTES)))
            );
        }
        Ok(Err(e)) => {
            let why = format!("{host}:{port} did not answer the request ({e})");
            let code = if e.is_timeout() { Error::HttpResponseTimeout } else { Error::HttpProtocolError };
            return Err(report.refuse_as(Refusal::new(RefusalKind::ConnectFailed, why), code));
        }
        Err(_) => {
            let why = format!("{host}:{port} sent no response within {} ms", ms(first_byte));
            return Err(report.refuse_as(limit(why), Error::HttpResponseTimeout));
        }
    };
    report.event.status = Some(response.status().as_u16());
    let guard = (!secrets.is_empty()).then(|| secrets.echo_guard());
    if let Some(g) = &guard {
        if let Err(r) = g.headers(response.headers(), &host, port) {
            return Err(report.refuse_as(r, Error::HttpResponseIncomplete));
        }
    }
    let between = options.and_then(|o| o.between_bytes_timeout);
    let response = response.map(|inner| {
        let wake = next_wake(deadline, between);
        DownBody {
            inner,
            report,
            deadline,
            between,
            sleep: Box::pin(tokio::time::sleep_until(wake)),
            done: false,
            guard: guard.map(|g| Guard { echo: g, host: host.clone(), port }),
            _driver: driver,
        }
        .boxed_unsync()
    });
    Ok((response, Box::new(async { Ok(()) })))
}

/// TLS to `host` over the system roots, offering HTTP/1.1 only (`upstream::tls`); a failure as the row's refusal
/// and the guest's error code.
async fn tls(
    host: &str,
    port: u16,
    tcp: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, (Refusal, Option<Error>)> {
    upstream::tls(tcp, host).await.map_err(|f| match f {
        upstream::TlsFailure::Refused(r) => (r, None),
        upstream::TlsFailure::Handshake { error: e, certificate } => {
            let (kind, code) = if certificate {
                (RefusalKind::UpstreamTls, Error::TlsCertificateError)
            } else {
                (RefusalKind::ConnectFailed, Error::TlsProtocolError)
            };
            let why =
                format!("{host}:{port}: tls failed ({e}); the origin's certificate must be valid for {host}");
            (Refusal::new(kind, why), Some(code))
        }
    })
}

/// When a response body waiting for its next frame gives up: at the deadline, or sooner after `between`.
fn next_wake(deadline: Instant, between: Option<Duration>) -> Instant {
    match between {
        Some(gap) => deadline.min(Instant::now() + gap),
        None => deadline,
    }
}

/// The request body, counted into the row and cut past `MAX_REQUEST_BODY_BYTES` (`over` tells the sender why
/// hyper failed).
struct UpBody {
    inner: WasiBody,
    count: Arc<AtomicU64>,
    over: Arc<AtomicBool>,
}

impl Body for UpBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            let n = frame.data_ref().map_or(0, |d| d.len() as u64);
            if self.count.fetch_add(n, Ordering::Relaxed).saturating_add(n) > MAX_REQUEST_BODY_BYTES {
                self.over.store(true, Ordering::Relaxed);
                return Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(MAX_REQUEST_BODY_BYTES)))));
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The echo guard of a response to a call with host-bound credentials, and the origin it names.
struct Guard {
    echo: EchoGuard,
    host: String,
    port: u16,
}

/// The response body as the guest reads it: counted into the row, cut past `MAX_RESPONSE_BODY_BYTES` and at
/// the deadline, and before any real value of the call's credentials; it holds the request's report (sent when
/// it is dropped) and its connection's driver.
struct DownBody {
    inner: Incoming,
    report: Report,
    deadline: Instant,
    between: Option<Duration>,
    sleep: Pin<Box<Sleep>>,
    done: bool,
    guard: Option<Guard>,
    _driver: AbortOnDrop,
}

impl DownBody {
    fn fail(&mut self, refusal: Refusal, error: Error) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.done = true;
        Poll::Ready(Some(Err(self.report.refuse_as(refusal, error))))
    }
}

impl Body for DownBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, |d| d.len() as u64);
                let total = this.report.down.fetch_add(n, Ordering::Relaxed).saturating_add(n);
                if total > MAX_RESPONSE_BODY_BYTES {
                    let why = format!("the response body passed {MAX_RESPONSE_BODY_BYTES} bytes");
                    return this.fail(limit(why), Error::HttpResponseBodySize(Some(MAX_RESPONSE_BODY_BYTES)));
                }
                if this.between.is_some() {
                    let wake = next_wake(this.deadline, this.between);
                    this.sleep.as_mut().reset(wake);
                }
                let Some(g) = this.guard.as_mut() else { return Poll::Ready(Some(Ok(frame))) };
                let Some(data) = frame.data_ref() else { return Poll::Ready(Some(Ok(frame))) };
                match g.echo.pass(data, &g.host, g.port) {
                    Ok(ok) => Poll::Ready(Some(Ok(Frame::data(Bytes::from(ok))))),
                    Err(r) => this.fail(r, Error::HttpResponseIncomplete),
                }
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(Error::from(e))))
            }
            Poll::Ready(None) => {
                this.done = true;
                match this.guard.as_mut() {
                    // What the guard held back to see whether a value started in it.
                    Some(g) if g.echo.holds() => {
                        Poll::Ready(Some(Ok(Frame::data(Bytes::from(g.echo.finish())))))
                    }
                    _ => Poll::Ready(None),
                }
            }
            Poll::Pending => match this.sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    let why = "the response body did not arrive in time (the call's deadline or between-bytes timeout)";
                    this.fail(limit(why.to_string()), Error::ConnectionReadTimeout)
                }
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        let held = self.guard.as_ref().is_some_and(|g| g.echo.holds());
        self.done || (!held && self.inner.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
