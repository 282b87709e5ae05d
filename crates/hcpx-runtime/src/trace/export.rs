//! The batch exporter: calls hand their recordings to a queue (bounded in spans: past it a call's spans are
//! dropped and counted, the call never waits), and a thread of its own builds their spans and sends them to the
//! collector in batches over OTLP/HTTP (protobuf), each POST bounded by the export timeout. A slow or dead
//! collector costs the exporter's thread its time, never a call's.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{ClientConnection, StreamOwned};

use super::config::{Endpoint, Sampler, TraceConfig};
use super::{otlp, Clock, Ended, Parent, Recording, SpanData};
use crate::model::{Envelope, Principal, ResultEnvelope};

/// The most of a collector's answer that is read.
const MAX_ANSWER: usize = 64 * 1024;

/// What the calls and the exporter's thread share: the calls that ended and are not yet taken for export. A call
/// only pushes onto it (a short lock, no wake-up of the exporter unless a batch is full), so tracing costs a call
/// no thread switch; the exporter takes everything every `schedule_delay` (or when a batch is full, or a flush is
/// asked for) and builds the spans itself.
#[derive(Default)]
struct Queue {
    state: Mutex<Pending>,
    wake: Condvar,
}

#[derive(Default)]
struct Pending {
    calls: Vec<(Box<Recording>, Ended)>,
    /// The spans of `calls`.
    spans: usize,
    /// Who waits for what is queued now to be sent (`Tracer::flush`).
    flushes: Vec<mpsc::SyncSender<()>>,
    /// The tracer is gone: send what is left and stop.
    closed: bool,
}

/// Counts an operator reads to see whether traces arrive.
#[derive(Debug, Default)]
pub struct Counts {
    /// Spans sent and accepted by the collector.
    pub exported: AtomicU64,
    /// Spans dropped: the queue was full, or the collector refused or could not be reached.
    pub dropped: AtomicU64,
}

/// The tracer of a served runtime: decides which calls are traced, and queues their spans for export.
pub struct Tracer {
    sampler: Sampler,
    queue: Arc<Queue>,
    /// Spans queued or being sent; at most `max_queue`.
    queued: Arc<AtomicUsize>,
    max_queue: usize,
    max_batch: usize,
    counts: Arc<Counts>,
}

impl Tracer {
    /// Starts the exporter's thread for `cfg`.
    pub fn start(cfg: TraceConfig) -> std::io::Result<Tracer> {
        let queue = Arc::new(Queue::default());
        let queued = Arc::new(AtomicUsize::new(0));
        let counts = Arc::new(Counts::default());
        let exporter = Exporter {
            body_resource: cfg.resource.clone(),
            endpoint: cfg.endpoint.clone(),
            headers: cfg.headers.clone(),
            timeout: cfg.timeout,
            queued: queued.clone(),
            counts: counts.clone(),
        };
        let (delay, max_batch) = (cfg.schedule_delay, cfg.max_batch);
        let shared = queue.clone();
        std::thread::Builder::new()
            .name("hcpx-trace-export".into())
            .spawn(move || exporter.run(&shared, delay, max_batch))?;
        Ok(Tracer { sampler: cfg.sampler, queue, queued, max_queue: cfg.max_queue, max_batch, counts })
    }

    /// A call starting now, the child of `parent` when its caller sent one: its clock records when sampled.
    pub fn start_call(&self, parent: Option<&Parent>) -> Clock {
        let rec = Recording::start(parent.cloned());
        if self.sampler.sampled(parent, &rec.trace_id) {
            Clock(Some(Box::new(rec)))
        } else {
            Clock::off()
        }
    }

    /// The call ended: its spans are queued for export, or dropped (and counted) when the queue is full.
    pub fn finish_call(
        &self,
        clock: &mut Clock,
        principal: &Principal,
        env: &Envelope,
        out: &ResultEnvelope,
        took: Duration,
    ) {
        let Some(rec) = clock.take() else { return };
        let n = rec.span_count();
        if self.queued.fetch_add(n, Ordering::Relaxed) + n > self.max_queue {
            self.queued.fetch_sub(n, Ordering::Relaxed);
            self.counts.dropped.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        let ended = Ended::of(principal, env, out, took);
        let full = match self.queue.state.lock() {
            Ok(mut p) => {
                p.calls.push((rec, ended));
                p.spans += n;
                p.spans >= self.max_batch
            }
            Err(_) => {
                self.queued.fetch_sub(n, Ordering::Relaxed);
                self.counts.dropped.fetch_add(n as u64, Ordering::Relaxed);
                return;
            }
        };
        if full {
            self.queue.wake.notify_one();
        }
    }

    /// Sends what is queued, waiting at most `within` (a server shutting down).
    pub fn flush(&self, within: Duration) {
        let (tx, rx) = mpsc::sync_channel(1);
        if let Ok(mut p) = self.queue.state.lock() {
            p.flushes.push(tx);
        } else {
            return;
        }
        self.queue.wake.notify_one();
        let _ = rx.recv_timeout(within);
    }

    /// Spans exported and dropped so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Ok(mut p) = self.queue.state.lock() {
            p.closed = true;
        }
        self.queue.wake.notify_one();
    }
}

/// The exporter's thread's own state.
struct Exporter {
    body_resource: Vec<(String, String)>,
    endpoint: Endpoint,
    headers: Vec<(String, String)>,
    timeout: Duration,
    queued: Arc<AtomicUsize>,
    counts: Arc<Counts>,
}

impl Exporter {
    /// Every `delay` (or sooner, when `max_batch` spans wait or a flush is asked for) takes the calls that ended,
    /// builds their spans and sends them, until the tracer is gone.
    fn run(self, q: &Queue, delay: Duration, max_batch: usize) {
        loop {
            let (calls, flushes, closed) = {
                let Ok(mut p) = q.state.lock() else { return };
                let until = Instant::now() + delay;
                while p.spans < max_batch && p.flushes.is_empty() && !p.closed {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    p = match q.wake.wait_timeout(p, left) {
                        Ok((g, _)) => g,
                        Err(_) => return,
                    };
                }
                p.spans = 0;
                (std::mem::take(&mut p.calls), std::mem::take(&mut p.flushes), p.closed)
            };
            let mut batch: Vec<SpanData> =
                calls.into_iter().flat_map(|(rec, ended)| rec.spans(&ended)).collect();
            self.send_all(&mut batch, max_batch);
            for done in flushes {
                let _ = done.try_send(());
            }
            if closed {
                return;
            }
        }
    }

    fn send_all(&self, batch: &mut Vec<SpanData>, max_batch: usize) {
        for chunk in batch.chunks(max_batch) {
            let n = chunk.len();
            let body = otlp::export_request(&self.body_resource, chunk);
            let counter = if self.post(&body).is_ok() { &self.counts.exported } else { &self.counts.dropped };
            counter.fetch_add(n as u64, Ordering::Relaxed);
            self.queued.fetch_sub(n, Ordering::Relaxed);
        }
        batch.clear();
    }

    /// One POST of `body` to the collector, the whole exchange within the export timeout; `Ok` on a 2xx.
    fn post(&self, body: &[u8]) -> Result<(), String> {
        let deadline = Instant::now() + self.timeout;
        let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let e = &self.endpoint;
        let addrs = (e.host.as_str(), e.port).to_socket_addrs().map_err(|err| err.to_string())?;
        let mut stream = None;
        for a in addrs {
            if let Ok(s) = TcpStream::connect_timeout(&a, left()) {
                stream = Some(s);
                break;
            }
        }
        let tcp = stream.ok_or_else(|| format!("cannot connect to {}:{}", e.host, e.port))?;
        // The TLS handshake reads and writes before the request does: both bounded from here.
        tcp.set_write_timeout(Some(left())).map_err(|err| err.to_string())?;
        tcp.set_read_timeout(Some(left())).map_err(|err| err.to_string())?;
        if !e.tls {
            return self.exchange(tcp, body, deadline);
        }
        let config = hcpx_egress::upstream::client_config(&[b"http/1.1"]).map_err(|r| r.to_string())?;
        let name = ServerName::try_from(e.host.clone()).map_err(|err| err.to_string())?;
        let conn = ClientConnection::new(config, name).map_err(|err| err.to_string())?;
        self.exchange(StreamOwned::new(conn, tcp), body, deadline)
    }

    /// The request and its answer over `s` (plain or TLS), by `deadline`.
    fn exchange<S: Read + Write + Timed>(
        &self,
        mut s: S,
        body: &[u8],
        deadline: Instant,
    ) -> Result<(), String> {
        let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let e = &self.endpoint;
        let host = if e.host.contains(':') { format!("[{}]", e.host) } else { e.host.clone() };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {host}:{}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\nUser-Agent: hcpx/{}\r\n",
            e.path,
            e.port,
            body.len(),
            env!("CARGO_PKG_VERSION")
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes())
            .and_then(|()| s.write_all(body))
            .and_then(|()| s.flush())
            .map_err(|err| err.to_string())?;
        // The answer is read to its end (the collector closes it), at most `MAX_ANSWER` bytes; only its status
        // line (`HTTP/1.1 200 ...`) is looked at.
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        while answer.len() < MAX_ANSWER {
            s.read_timeout(left()).map_err(|err| err.to_string())?;
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
                Err(err) if answer.len() >= 12 => {
                    let _ = err;
                    break;
                }
                Err(err) => return Err(err.to_string()),
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        match answer.get(9) {
            Some(b'2') if answer.starts_with(b"HTTP/1.") => Ok(()),
            _ => Err(format!(
                "the collector answered {:?}",
                String::from_utf8_lossy(&answer[..answer.len().min(12)])
            )),
        }
    }
}

/// A stream whose reads can be bounded in time: a TCP stream, or TLS over one.
trait Timed {
    fn read_timeout(&self, t: Duration) -> std::io::Result<()>;
}

impl Timed for TcpStream {
    fn read_timeout(&self, t: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(t))
    }
}

impl Timed for StreamOwned<ClientConnection, TcpStream> {
    fn read_timeout(&self, t: Duration) -> std::io::Result<()> {
        self.sock.set_read_timeout(Some(t))
    }
}
