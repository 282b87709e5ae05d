//! The bodies of a request relayed through a terminated tunnel: the child's request body on its way to the
//! origin (counted, cut at the connection's limit, scanned for a placeholder, never rewritten) and the origin's
//! response on its way back (counted and cut likewise); the response's body carries the request's event and
//! reports it when the body ends or is dropped, so every request is one event however it ends.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::proxy::Record;
use crate::refusal::{Refusal, RefusalKind};
use crate::secrets::{BodyScan, EchoGuard};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A byte count shared by a request and its connection: what the request moved, and what the connection did,
/// which the limit is checked against.
#[derive(Clone)]
pub struct Meter {
    pub request: Arc<AtomicU64>,
    pub connection: Arc<AtomicU64>,
    pub cap: u64,
    pub name: &'static str,
}

impl Meter {
    /// Counts `n` bytes; a refusal once the connection is past its cap.
    pub fn count(&self, n: usize) -> Result<(), Refusal> {
        self.request.fetch_add(n as u64, Ordering::Relaxed);
        let total = self.connection.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        if total > self.cap {
            return Err(Refusal::new(
                RefusalKind::Limit,
                format!("more than {} bytes {}; the connection was cut at the limit", self.cap, self.name),
            ));
        }
        Ok(())
    }
}

/// Where a request body's refusal is left for the request's handler to report (the client's error is hyper's).
pub type Verdict = Arc<Mutex<Option<Refusal>>>;

/// The child's request body, on its way to the origin: first what was read (scanned and counted) before the head
/// was sent, then the rest as it streams.
pub struct Upload<B> {
    pub read: std::collections::VecDeque<Frame<Bytes>>,
    pub inner: B,
    pub scan: BodyScan,
    pub host: String,
    pub port: u16,
    pub meter: Meter,
    pub verdict: Verdict,
}

impl<B> Body for Upload<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Some(frame) = this.read.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let checked = this
                        .scan
                        .chunk(data, &this.host, this.port)
                        .and_then(|()| this.meter.count(data.len()));
                    if let Err(r) = checked {
                        if let Ok(mut v) = this.verdict.lock() {
                            v.get_or_insert(r.clone());
                        }
                        return Poll::Ready(Some(Err(Box::new(r))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let read: u64 = self.read.iter().filter_map(|f| f.data_ref()).map(|d| d.len() as u64).sum();
        let rest = self.inner.size_hint();
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower() + read);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + read);
        }
        hint
    }
}

impl<B> Upload<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    /// Reads (scans and counts) up to `max` bytes of the body before its head goes to the origin, so a small body
    /// with a placeholder is refused before anything of the request leaves; a larger one is scanned as it streams.
    pub async fn read_ahead(&mut self, max: usize) -> Result<(), Refusal> {
        let mut held = 0;
        while held < max && !self.inner.is_end_stream() {
            let next = std::future::poll_fn(|cx| Pin::new(&mut self.inner).poll_frame(cx)).await;
            let Some(frame) = next else { break };
            let frame = frame.map_err(|e| {
                Refusal::new(RefusalKind::BadRequest, format!("reading the request body: {}", e.into()))
            })?;
            if let Some(data) = frame.data_ref() {
                self.scan.chunk(data, &self.host, self.port)?;
                self.meter.count(data.len())?;
                held += data.len();
            }
            self.read.push_back(frame);
        }
        Ok(())
    }
}

/// What the child is answered: the origin's response relayed (the real values kept out of it), or the proxy's
/// own one-line refusal.
pub enum Answer<B> {
    Relay(Box<Relay<B>>),
    Text(Option<Bytes>),
}

/// A relayed response body and the request's event, which it reports when it ends.
pub struct Relay<B> {
    pub inner: B,
    pub meter: Meter,
    pub record: Option<Record>,
    pub guard: EchoGuard,
    pub host: String,
    pub port: u16,
    /// The held-back tail was released after the origin's body ended: the next poll ends this one.
    pub done: bool,
}

impl<B> Relay<B> {
    /// The request ended (`refused`: how it was cut); its event is reported now.
    fn end(&mut self, refused: Option<Refusal>) {
        if let Some(rec) = self.record.as_mut() {
            if refused.is_some() {
                rec.refused = refused;
            }
            rec.finished = true;
        }
        self.record = None;
    }
}

impl<B> Body for Answer<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let r = match &mut *self {
            Answer::Text(text) => return Poll::Ready(text.take().map(|b| Ok(Frame::data(b)))),
            Answer::Relay(r) => r,
        };
        if r.done {
            return Poll::Ready(None);
        }
        loop {
            match Pin::new(&mut r.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let frame = match frame.into_data() {
                        Ok(data) => data,
                        // Trailers pass as they are.
                        Err(other) => return Poll::Ready(Some(Ok(other))),
                    };
                    let checked =
                        r.meter.count(frame.len()).and_then(|()| r.guard.pass(&frame, &r.host, r.port));
                    let mut out = match checked {
                        Ok(out) => out,
                        Err(refusal) => {
                            r.end(Some(refusal.clone()));
                            return Poll::Ready(Some(Err(Box::new(refusal))));
                        }
                    };
                    // hyper stops polling a body once its length is relayed: the request ends with its last byte.
                    if r.inner.is_end_stream() {
                        out.extend(r.guard.finish());
                        r.end(None);
                        r.done = true;
                    }
                    if out.is_empty() && !r.done {
                        continue;
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
                Poll::Ready(Some(Err(e))) => {
                    r.end(None);
                    return Poll::Ready(Some(Err(e.into())));
                }
                Poll::Ready(None) => {
                    let held = r.guard.finish();
                    r.end(None);
                    r.done = true;
                    if held.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(held)))));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Answer::Text(t) => t.is_none(),
            Answer::Relay(r) => r.done || (r.inner.is_end_stream() && !r.guard.holds()),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Answer::Text(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Answer::Text(None) => SizeHint::with_exact(0),
            Answer::Relay(r) if r.done => SizeHint::with_exact(0),
            Answer::Relay(r) => r.inner.size_hint(),
        }
    }
}
