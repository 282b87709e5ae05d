//! A composite's outgoing HTTP (issue #36 point 2, docs/egress.md, A composite's HTTP): the `wasi:http` send
//! hook of one call. Every request is decided by the call's egress policy, the wrap's own (`call_policy`: the
//! command's hosts the operator allowed for the tenant), bounded in number, bytes and time within the call's
//! deadline, sent by `send.rs` to the addresses the policy resolved, and reported as one `EgressRow`, which step 7
//! audits and `/metrics` counts like a wrap's. Redirects are not followed: a guest that follows one makes a new
//! request, decided like any other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hcpx_egress::{EgressEvent, Policy, Refusal, RefusalKind, Scheme, Secrets};
use tokio::sync::mpsc;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use crate::adapter::egress::{row, EgressRow};

/// Most requests one call may make; the next is refused (`limit`).
pub const MAX_REQUESTS: usize = 32;
/// Most bytes of one request's body; past it the request fails (`http-request-body-size`).
pub const MAX_REQUEST_BODY_BYTES: u64 = 1 << 20;
/// Most bytes of one response's body the guest may read; past it the body fails (`http-response-body-size`).
pub const MAX_RESPONSE_BODY_BYTES: u64 = 4 << 20;
/// Connecting (TCP, TLS, HTTP/1 handshake) when the guest sets no connect timeout; never past the deadline.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the rows of requests still open when the call ended may take to arrive.
const COLLECT_WITHIN: Duration = Duration::from_secs(2);

type SendFuture = Box<
    dyn std::future::Future<
            Output = Result<
                (http::Response<WasiBody>, Box<dyn std::future::Future<Output = Result<(), Error>> + Send>),
                Error,
            >,
        > + Send,
>;

/// The send hook of one call's Store: its policy, deadline and request count, and where rows go.
pub struct Outgoing {
    policy: Arc<Policy>,
    /// The call's host-bound credentials: each placeholder becomes its value in the declared header or query of
    /// requests to its host only; anywhere else it refuses the request (docs/egress.md Placeholders).
    secrets: Secrets,
    /// The pack and command, named in a refusal when the call may reach no host at all.
    pack: String,
    verb: String,
    deadline: tokio::time::Instant,
    sent: usize,
    rows: mpsc::UnboundedSender<EgressRow>,
}

/// Where a call's rows arrive: every request's, once every `Outgoing` and open request of the call is gone.
pub struct Rows(mpsc::UnboundedReceiver<EgressRow>);

impl Rows {
    /// Every row, in the order the requests ended; waits at most `COLLECT_WITHIN` for requests still open when
    /// the call ended (their tasks are being dropped).
    pub async fn collect(mut self) -> Vec<EgressRow> {
        let mut out = Vec::new();
        let _ = tokio::time::timeout(COLLECT_WITHIN, async {
            while let Some(r) = self.0.recv().await {
                out.push(r);
            }
        })
        .await;
        out
    }
}

impl Outgoing {
    /// The hook of a call of `pack`'s `verb` under `policy` with the call's `secrets`, ending at `deadline`.
    pub fn new(
        policy: Policy,
        secrets: Secrets,
        pack: &str,
        verb: &str,
        deadline: tokio::time::Instant,
    ) -> (Outgoing, Rows) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (pack, verb) = (pack.to_string(), verb.to_string());
        let out = Outgoing { policy: Arc::new(policy), secrets, pack, verb, deadline, sent: 0, rows: tx };
        (out, Rows(rx))
    }

    /// Why a call that may reach no host at all was refused `scheme://host:port`, and the fix.
    fn no_hosts(&self, scheme: Scheme, host: &str, port: u16) -> String {
        let entry = match (scheme, port) {
            (Scheme::Https, 443) => host.to_string(),
            (Scheme::Https, p) => format!("{host}:{p}"),
            (Scheme::Http, 80) => format!("http://{host}"),
            (Scheme::Http, p) => format!("http://{host}:{p}"),
        };
        format!(
            "{scheme}://{host}:{port}: command {} of pack {} may reach no host; declare {entry} in the pack's hosts (surface.json) and have the operator allow it: hcpx allow-host {} {entry}",
            self.verb, self.pack, self.pack
        )
    }

    /// A hook that refuses everything (a component's `describe`, which makes no call).
    pub fn none() -> Outgoing {
        let deadline = tokio::time::Instant::now();
        Outgoing::new(Policy::default(), Secrets::default(), "", "describe", deadline).0
    }

    /// The rule that allows `request`, with its scheme, host and port; or why none does.
    fn decide(&mut self, report: &mut Report, request: &http::Request<WasiBody>) -> Result<Target, Refusal> {
        let uri = request.uri();
        let scheme = match uri.scheme_str() {
            Some("https") => Scheme::Https,
            Some("http") => Scheme::Http,
            other => {
                let reason = format!("scheme {:?} is not http or https", other.unwrap_or(""));
                return Err(Refusal::new(RefusalKind::BadRequest, reason));
            }
        };
        report.event.scheme = Some(scheme);
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
        let host = uri.host().unwrap_or("").to_string();
        let port = uri.port_u16().unwrap_or(scheme.default_port());
        report.event.host = host.clone();
        report.event.port = port;
        if authority.contains('@') {
            let reason = format!("{authority} carries user information; put credentials in a header");
            return Err(Refusal::new(RefusalKind::BadRequest, reason));
        }
        self.sent += 1;
        if self.sent > MAX_REQUESTS {
            let reason = format!("the call already made {MAX_REQUESTS} requests, the most one call may make");
            return Err(Refusal::new(RefusalKind::Limit, reason));
        }
        let rule = self.policy.decide(scheme, &host, port).map_err(|mut r| {
            if self.policy.rules.is_empty() && r.kind == RefusalKind::NotAllowed {
                r.reason = self.no_hosts(scheme, &host, port);
            }
            r
        })?;
        report.event.rule = Some(rule.to_string());
        let declared = request.headers().get(http::header::CONTENT_LENGTH);
        let length = declared.and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
        if length.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES) {
            let reason = format!("the request body is larger than {MAX_REQUEST_BODY_BYTES} bytes");
            return Err(Refusal::new(RefusalKind::Limit, reason));
        }
        Ok(Target { scheme, host, port })
    }
}

/// Where an allowed request goes.
pub(super) struct Target {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
}

/// The row of one request, sent when it ends: when its response body is read or dropped, or when it fails.
/// Its byte counters are shared with the bodies that count them.
pub(super) struct Report {
    tx: mpsc::UnboundedSender<EgressRow>,
    pub event: EgressEvent,
    started: Instant,
    pub up: Arc<AtomicU64>,
    pub down: Arc<AtomicU64>,
}

impl Report {
    fn new(tx: mpsc::UnboundedSender<EgressRow>, method: &str) -> Report {
        Report {
            tx,
            event: EgressEvent { method: method.to_string(), ..empty_event() },
            started: Instant::now(),
            up: Arc::new(AtomicU64::new(0)),
            down: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Records `refusal` (the first one wins) and gives the error the guest reads for its kind.
    pub fn refuse(&mut self, refusal: Refusal) -> Error {
        let error = guest_error(&refusal);
        self.refuse_as(refusal, error)
    }

    /// Records `refusal` (the first one wins) and gives `error`, a more precise one than its kind's.
    pub fn refuse_as(&mut self, refusal: Refusal, error: Error) -> Error {
        if self.event.refused.is_none() {
            self.event.refused = Some(refusal);
        }
        error
    }
}

impl Drop for Report {
    fn drop(&mut self) {
        // Dropped before any answer or refusal: the call ended first (its deadline, a cancel, or the guest
        // dropping the request), so the request did not complete.
        if self.event.status.is_none() && self.event.refused.is_none() {
            let why = "the call ended before the response arrived (its deadline passed, or it was cancelled)";
            self.event.refused = Some(Refusal::new(RefusalKind::Limit, why));
        }
        self.event.bytes_up = self.up.load(Ordering::Relaxed);
        self.event.bytes_down = self.down.load(Ordering::Relaxed);
        self.event.elapsed = self.started.elapsed();
        let event = std::mem::replace(&mut self.event, empty_event());
        let _ = self.tx.send(row(event));
    }
}

fn empty_event() -> EgressEvent {
    EgressEvent {
        host: String::new(),
        port: 0,
        scheme: None,
        method: String::new(),
        status: None,
        bytes_up: 0,
        bytes_down: 0,
        refused: None,
        rule: None,
        elapsed: Duration::ZERO,
    }
}

/// The `wasi:http` error a guest reads for a refusal (its reason is in the audit row and the call's stderr).
pub(super) fn guest_error(r: &Refusal) -> Error {
    match r.kind {
        RefusalKind::NotAllowed => Error::HttpRequestDenied,
        RefusalKind::IpLiteral | RefusalKind::PrivateAddress => Error::DestinationIpProhibited,
        RefusalKind::BadRequest | RefusalKind::SniMismatch => Error::HttpRequestUriInvalid,
        RefusalKind::Limit => Error::ConnectionLimitReached,
        RefusalKind::ResolveFailed => {
            Error::DnsError { rcode: Some("the name did not resolve".to_string()), info_code: None }
        }
        RefusalKind::ConnectFailed => Error::ConnectionRefused,
        RefusalKind::UpstreamTls => Error::TlsCertificateError,
        // A placeholder where its value may not go: the request is refused, as one to a host not allowed.
        RefusalKind::Placeholder => Error::HttpRequestDenied,
        // A response holding a real value is cut before those bytes.
        RefusalKind::CredentialEcho => Error::HttpResponseIncomplete,
    }
}

impl WasiHttpHooks for Outgoing {
    /// Every scheme reaches `send_request`, which refuses all but http and https with an audit row.
    fn is_supported_scheme(&mut self, _scheme: &http::uri::Scheme) -> bool {
        true
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn std::future::Future<Output = Result<(), Error>> + Send>,
    ) -> SendFuture {
        let mut report = Report::new(self.rows.clone(), request.method().as_str());
        let decided = self.decide(&mut report, &request);
        // The head as it leaves: each placeholder becomes its value where its rule allows, or the request is
        // refused (its body is scanned by `send` before anything is sent).
        let (mut parts, body) = request.into_parts();
        let decided = decided.and_then(|t| {
            self.secrets.apply(t.scheme, &t.host, t.port, &mut parts)?;
            Ok(t)
        });
        let request = http::Request::from_parts(parts, body);
        let (policy, secrets, deadline) = (self.policy.clone(), self.secrets.clone(), self.deadline);
        Box::new(async move {
            let target = match decided {
                Ok(t) => t,
                Err(r) => return Err(report.refuse(r)),
            };
            super::send::send(&policy, &secrets, target, request, options, deadline, report).await
        })
    }
}

/// The lines a call's stderr gets for its refused requests, so the person reading the envelope sees why.
pub fn refusal_notes(rows: &[EgressRow]) -> String {
    let mut out = String::new();
    for r in rows {
        let e = &r.egress;
        if let (Some(kind), Some(reason)) = (&e.refused, &e.reason) {
            out.push_str(&format!("egress: {} {}:{} refused ({kind}): {reason}\n", e.method, e.host, e.port));
        }
    }
    out
}
