//! The loopback forward proxy a wrap's connections go through (a composite's requests are sent by hcpx itself,
//! hcpx-runtime's composite/send.rs, under the same policy): each connection decided by the policy, resolved and
//! pinned, relayed with its bytes counted, and reported as exactly one `EgressEvent` per request (a guard emits
//! it however the connection ends, even if the proxy is stopped).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use crate::addr::resolve;
use crate::ca::CallCa;
use crate::http::{self, Head, Target};
use crate::refusal::{Refusal, RefusalKind};
use crate::rules::{Policy, Scheme};
use crate::secrets::Secrets;
use crate::sni;
use crate::splice::{both, Cut, Leg};

/// What one connection may use.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Connections open at once; one more is answered 503 and closed.
    pub max_connections: usize,
    /// Bytes sent to the origin per connection (the request, or the client's side of a tunnel).
    pub max_bytes_up: u64,
    /// Bytes sent back to the client per connection.
    pub max_bytes_down: u64,
    /// From accept to the last byte: past it the connection is cut.
    pub deadline: Duration,
    /// The request head, in bytes (431 past it).
    pub max_head: usize,
    /// One connect attempt to one resolved address.
    pub connect_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 64,
            max_bytes_up: 64 << 20,
            max_bytes_down: 256 << 20,
            deadline: Duration::from_secs(300),
            max_head: 16 * 1024,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// One request, allowed or refused, as the audit log will record it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EgressEvent {
    /// The host the request named (as sent; empty if none was read).
    pub host: String,
    pub port: u16,
    /// HTTPS for CONNECT, HTTP for an absolute-form request; none if the request was never read.
    pub scheme: Option<Scheme>,
    pub method: String,
    /// What the client was answered: the proxy's own status (200 for an established tunnel, the refusal's), or
    /// the origin's for a relayed plain request.
    pub status: Option<u16>,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub refused: Option<Refusal>,
    /// The rule that allowed the request (`https://api.example.com:443`), even if it was refused later (a
    /// private address, an SNI that does not match, a limit); none if no rule allowed it.
    pub rule: Option<String>,
    pub elapsed: Duration,
}

/// The proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("egress proxy: cannot listen on 127.0.0.1 ({0}); check that loopback is up")]
    Listen(#[source] std::io::Error),
}

pub(crate) type Sink = Arc<dyn Fn(EgressEvent) + Send + Sync>;

pub(crate) struct Shared {
    pub(crate) policy: Policy,
    pub(crate) limits: Limits,
    pub(crate) sink: Sink,
    /// The call's host-bound credentials; with `ca`, every HTTPS tunnel is terminated (terminate.rs).
    pub(crate) secrets: Secrets,
    pub(crate) ca: Option<Arc<CallCa>>,
}

/// The running proxy: its address, and it stops (every open connection with it) when dropped.
pub struct ProxyHandle {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl ProxyHandle {
    /// Where it listens (127.0.0.1, a port the kernel chose).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub struct Proxy;

impl Proxy {
    /// Listens on 127.0.0.1:0 on the current tokio runtime and serves until the handle is dropped.
    pub async fn start<F>(policy: Policy, limits: Limits, on_event: F) -> Result<ProxyHandle, StartError>
    where
        F: Fn(EgressEvent) + Send + Sync + 'static,
    {
        Self::start_terminating(policy, limits, Secrets::default(), None, on_event).await
    }

    /// As `start`; with a CA, every HTTPS CONNECT is terminated with a leaf it mints for the CONNECT host and
    /// each request's head is rewritten by `secrets` (docs/egress.md, Termination). Plain HTTP requests are
    /// rewritten by `secrets` either way.
    pub async fn start_terminating<F>(
        policy: Policy,
        limits: Limits,
        secrets: Secrets,
        ca: Option<Arc<CallCa>>,
        on_event: F,
    ) -> Result<ProxyHandle, StartError>
    where
        F: Fn(EgressEvent) + Send + Sync + 'static,
    {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.map_err(StartError::Listen)?;
        let addr = listener.local_addr().map_err(StartError::Listen)?;
        let shared = Arc::new(Shared { policy, limits, sink: Arc::new(on_event), secrets, ca });
        let task = tokio::spawn(accept_loop(listener, shared));
        Ok(ProxyHandle { addr, task })
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let open = Arc::new(Semaphore::new(shared.limits.max_connections));
    // Dropping the set (the handle aborts this task) aborts every connection; each one's guard still reports.
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((client, _)) = accepted else { continue };
                let rec = Record::new(shared.sink.clone());
                match open.clone().try_acquire_owned() {
                    Ok(permit) => {
                        conns.spawn(serve(client, shared.clone(), rec, permit));
                    }
                    Err(_) => {
                        conns.spawn(too_many(client, rec, shared.limits.max_connections));
                    }
                }
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
}

/// The event under construction; reported on drop, so every connection (every request of a terminated tunnel)
/// reports exactly once.
pub(crate) struct Record {
    start: Instant,
    sink: Sink,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) scheme: Option<Scheme>,
    pub(crate) method: String,
    pub(crate) status: Option<u16>,
    pub(crate) up: Arc<AtomicU64>,
    pub(crate) down: Arc<AtomicU64>,
    pub(crate) refused: Option<Refusal>,
    pub(crate) rule: Option<String>,
    pub(crate) finished: bool,
    /// A terminated tunnel whose requests were reported each: the tunnel itself is not.
    pub(crate) silent: bool,
}

impl Record {
    pub(crate) fn new(sink: Sink) -> Record {
        Record {
            start: Instant::now(),
            sink,
            host: String::new(),
            port: 0,
            scheme: None,
            method: String::new(),
            status: None,
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
            refused: None,
            rule: None,
            finished: false,
            silent: false,
        }
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if self.silent {
            return;
        }
        if !self.finished && self.refused.is_none() {
            let reason = "the proxy stopped before the request ended";
            self.refused = Some(Refusal::new(RefusalKind::Limit, reason));
        }
        (self.sink)(EgressEvent {
            host: std::mem::take(&mut self.host),
            port: self.port,
            scheme: self.scheme,
            method: std::mem::take(&mut self.method),
            status: self.status,
            bytes_up: self.up.load(Ordering::Relaxed),
            bytes_down: self.down.load(Ordering::Relaxed),
            refused: self.refused.take(),
            rule: self.rule.take(),
            elapsed: self.start.elapsed(),
        });
    }
}

async fn too_many(mut client: TcpStream, mut rec: Record, max: usize) {
    let r =
        Refusal::new(RefusalKind::Limit, format!("{max} connections are already open; retry when one ends"));
    answer(&mut client, 503, &r).await;
    rec.status = Some(503);
    rec.refused = Some(r);
    rec.finished = true;
}

async fn serve(
    mut client: TcpStream,
    shared: Arc<Shared>,
    mut rec: Record,
    _permit: tokio::sync::OwnedSemaphorePermit,
) {
    let _ = client.set_nodelay(true);
    let deadline = tokio::time::Instant::from_std(rec.start) + shared.limits.deadline;
    let outcome = tokio::time::timeout_at(deadline, run(&mut client, &shared, &mut rec)).await;
    if outcome.is_err() {
        let secs = shared.limits.deadline.as_secs_f64();
        let r = Refusal::new(
            RefusalKind::Limit,
            format!("the connection's deadline of {secs}s passed; it was cut"),
        );
        if rec.status.is_none() {
            rec.status = Some(408);
            let _ = tokio::time::timeout(Duration::from_secs(1), answer(&mut client, 408, &r)).await;
        }
        rec.refused = Some(r);
    }
    rec.finished = true;
}

/// One connection: admit the request (answering a refusal), then relay it.
async fn run(client: &mut TcpStream, shared: &Arc<Shared>, rec: &mut Record) {
    let (head, target, origin, rest) = match admit(client, shared, rec).await {
        Ok(admitted) => admitted,
        Err((r, status)) => {
            answer(client, status, &r).await;
            rec.status = Some(status);
            rec.refused = Some(r);
            return;
        }
    };
    if target.scheme == Scheme::Https && shared.ca.is_some() {
        if let Err(r) = crate::terminate::serve(client, origin, &target, rest, shared, rec).await {
            rec.refused.get_or_insert(r);
        }
        return;
    }
    let relayed = match target.scheme {
        Scheme::Https => tunnel(client, origin, &target, rest, shared, rec).await,
        Scheme::Http => forward(client, origin, &head, &target, rest, shared, rec).await,
    };
    if let Err(Cut::Limit(r)) = relayed {
        rec.refused = Some(r);
    }
}

type Admitted = (Head, Target, TcpStream, Vec<u8>);

/// Reads the head, decides, resolves and connects: everything that can still be answered with a status.
async fn admit(
    client: &mut TcpStream,
    shared: &Shared,
    rec: &mut Record,
) -> Result<Admitted, (Refusal, u16)> {
    let plain = |r: Refusal| {
        let status = r.kind.status();
        (r, status)
    };
    let max = shared.limits.max_head;
    let mut buf = Vec::with_capacity(4096);
    let head = loop {
        if let Some(head) = http::parse_head(&buf).map_err(plain)? {
            break head;
        }
        if buf.len() >= max {
            let r = Refusal::new(
                RefusalKind::Limit,
                format!("the request head is over {max} bytes; send a smaller one"),
            );
            return Err((r, 431));
        }
        let mut chunk = vec![0u8; (max - buf.len()).min(4096)];
        let n =
            client.read(&mut chunk).await.map_err(|e| plain(io_refusal("reading the request head", &e)))?;
        if n == 0 {
            return Err(plain(Refusal::new(
                RefusalKind::BadRequest,
                "the connection closed before a request head",
            )));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    rec.method.clone_from(&head.method);
    rec.host.clone_from(&head.target);
    let mut head = head;
    let mut target = http::target(&head.method, &head.target).map_err(|r| {
        let status = if http::wrong_method(&head.method, &head.target) { 405 } else { r.kind.status() };
        (r, status)
    })?;
    rec.host.clone_from(&target.host);
    rec.port = target.port;
    rec.scheme = Some(target.scheme);
    let rule = shared.policy.decide(target.scheme, &target.host, target.port).map_err(plain)?;
    rec.rule = Some(rule.to_string());
    if target.scheme == Scheme::Http {
        let (host, port) = (target.host.clone(), target.port);
        shared.secrets.refuse_in(&head.method, "the method", &host, port).map_err(plain)?;
        shared
            .secrets
            .apply_head(Scheme::Http, &host, port, &mut target.path, &mut head.headers)
            .map_err(plain)?;
        http::rewrite(&head, &target).map_err(plain)?;
    }
    let addrs = resolve(&shared.policy, &target.host, target.port).await.map_err(plain)?;
    let origin = crate::upstream::connect(&addrs, &target.host, target.port, shared.limits.connect_timeout)
        .await
        .map_err(plain)?;
    let rest = buf.split_off(head.len);
    Ok((head, target, origin, rest))
}

fn io_refusal(what: &str, e: &std::io::Error) -> Refusal {
    Refusal::new(RefusalKind::BadRequest, format!("{what}: {e}"))
}

/// CONNECT: answer 200, read the ClientHello, require its SNI to be the CONNECT host, then splice.
async fn tunnel(
    client: &mut TcpStream,
    mut origin: TcpStream,
    t: &Target,
    hello: Vec<u8>,
    shared: &Shared,
    rec: &mut Record,
) -> Result<(), Cut> {
    client.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await.map_err(|_| Cut::Io)?;
    rec.status = Some(200);
    let hello = match sni::read_hello(client, t, hello).await {
        Ok(h) => h,
        Err(r) => {
            rec.refused = r;
            return Err(Cut::Io);
        }
    };
    let up = Leg { count: &rec.up, cap: shared.limits.max_bytes_up, name: "up" };
    let down = Leg { count: &rec.down, cap: shared.limits.max_bytes_down, name: "down" };
    up.send(&mut origin, &hello).await?;
    let (mut cr, mut cw) = client.split();
    let (mut or, mut ow) = origin.split();
    let (mut f1, mut f2) = (Vec::new(), Vec::new());
    both(up.copy(&mut cr, &mut ow, true, &mut f1), down.copy(&mut or, &mut cw, true, &mut f2), false).await
}

/// A plain request: forward it in origin-form with exactly its Content-Length of body, relay the response.
async fn forward(
    client: &mut TcpStream,
    mut origin: TcpStream,
    head: &Head,
    t: &Target,
    mut body: Vec<u8>,
    shared: &Shared,
    rec: &mut Record,
) -> Result<(), Cut> {
    let Ok((request, body_len)) = http::rewrite(head, t) else { return Err(Cut::Io) };
    let up = Leg { count: &rec.up, cap: shared.limits.max_bytes_up, name: "up" };
    let down = Leg { count: &rec.down, cap: shared.limits.max_bytes_down, name: "down" };
    // Bytes after the body (a pipelined second request) are never forwarded.
    body.truncate(usize::try_from(body_len).unwrap_or(usize::MAX));
    let remaining = body_len - body.len() as u64;
    // The body is scanned for a placeholder (never rewritten), the response kept from echoing a value.
    let (host, port) = (t.host.as_str(), t.port);
    let mut scan = shared.secrets.body_scan();
    if let Err(r) = scan.chunk(&body, host, port) {
        answer(client, r.kind.status(), &r).await;
        rec.status = Some(r.kind.status());
        return Err(Cut::Limit(r));
    }
    up.send(&mut origin, &request).await?;
    up.send(&mut origin, &body).await?;
    let mut first = Vec::with_capacity(16);
    let (cr, mut cw) = client.split();
    let (mut or, mut ow) = origin.split();
    let mut cr = cr.take(remaining);
    let mut unused = Vec::new();
    let mut guard = shared.secrets.echo_guard();
    let scanned = |b: Option<&[u8]>| match b {
        Some(b) => scan.chunk(b, host, port).map(|()| b.to_vec()),
        None => Ok(Vec::new()),
    };
    let guarded = |b: Option<&[u8]>| match b {
        Some(b) => guard.pass(b, host, port),
        None => Ok(guard.finish()),
    };
    let relayed = both(
        up.copy_filtered(&mut cr, &mut ow, false, &mut unused, scanned),
        down.copy_filtered(&mut or, &mut cw, true, &mut first, guarded),
        true,
    )
    .await;
    rec.status = http::response_status(&first);
    relayed
}

/// A refusal as the client sees it: the status and the one-line reason.
pub(crate) async fn answer(client: &mut TcpStream, status: u16, r: &Refusal) {
    let phrase = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let body = format!("{r}\n");
    let head = format!(
        "HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = client.write_all(format!("{head}{body}").as_bytes()).await;
    let _ = client.shutdown().await;
}
