//! OpenTelemetry traces of served calls (docs/hosting.md, Traces): a span per call (`hcp.call`), a child span per
//! pipeline step (`hcp.resolve`, `hcp.check`, `hcp.gate`, `hcp.mint`, `hcp.run`, `hcp.audit`) and one per
//! outgoing request (`hcp.egress`, a child of `hcp.run`), exported over OTLP/HTTP by a batch exporter on a
//! thread of its own (`export.rs`). Off unless the operator names a collector (`config.rs`); off, a call pays one
//! branch: its `Clock` is `None` and every mark is a no-op. Spans carry names, codes, counts and times — never an
//! argument's value, a secret, a header or a body.

mod config;
mod export;
mod otlp;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::adapter::egress::EgressRow;
use crate::model::{Envelope, Principal, ResultEnvelope};

pub use config::{ConfigError, TraceConfig};
pub use export::{Counts, Tracer};

/// The caller's span, from a W3C `traceparent` (and its `tracestate`): the call's span is its child.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    sampled: bool,
    state: Option<String>,
}

/// The longest `tracestate` kept (W3C: 32 members of at most 256 characters each, 512 recommended to pass on).
const MAX_TRACESTATE: usize = 512;

impl Parent {
    /// Parses a `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`, or a later version with more after it);
    /// anything malformed (or an all-zero id, or version `ff`) is `None`: the call starts a trace of its own.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Parent> {
        let t = traceparent.trim();
        let b = t.as_bytes();
        if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
            return None;
        }
        let version = hex::<1>(&t[0..2])?[0];
        // Version 00 is exactly 55 characters; a later version may add fields after a dash.
        if version == 0xff || (version == 0 && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
            return None;
        }
        let trace_id = hex::<16>(&t[3..35])?;
        let span_id = hex::<8>(&t[36..52])?;
        let flags = hex::<1>(&t[53..55])?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        let state = tracestate
            .map(str::trim)
            .filter(|s| {
                !s.is_empty() && s.len() <= MAX_TRACESTATE && s.bytes().all(|c| (0x20..0x7f).contains(&c))
            })
            .map(String::from);
        Some(Parent { trace_id, span_id, sampled: flags & 1 == 1, state })
    }
}

/// `N` bytes from lower-case (or upper-case) hex of exactly `2N` digits.
fn hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    let b = s.as_bytes();
    if b.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in b.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        out[i] = u8::try_from(d(pair[0])? * 16 + d(pair[1])?).ok()?;
    }
    Some(out)
}

/// The steps of a call a span is made for, in the pipeline's order (docs/runtime.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// Step 1: the pack and the command's Policy row (and the call slot before it).
    Resolve,
    /// Steps 1 (end) to 3 and the argument check: activated, authenticated, the capability, the arguments.
    Check,
    /// Step 4: the confirm gate and the operator's `human_approval`.
    Gate,
    /// Step 5: the Binding minted.
    Mint,
    /// Step 6: the sandbox settings, a write's intent, the workspace turn and the adapter's run.
    Run,
    /// Step 7: the structured result, the scrub and the audit lines.
    Audit,
}

impl Step {
    const ALL: [Step; 6] = [Step::Resolve, Step::Check, Step::Gate, Step::Mint, Step::Run, Step::Audit];

    /// The span's name.
    pub fn name(self) -> &'static str {
        match self {
            Step::Resolve => "hcp.resolve",
            Step::Check => "hcp.check",
            Step::Gate => "hcp.gate",
            Step::Mint => "hcp.mint",
            Step::Run => "hcp.run",
            Step::Audit => "hcp.audit",
        }
    }

    fn next(self) -> Option<Step> {
        Step::ALL.iter().copied().find(|s| *s > self)
    }
}

/// A call's trace while it runs: `None` when tracing is off or the call is not sampled, and then every method is
/// a single branch that does nothing.
#[derive(Default)]
pub struct Clock(Option<Box<Recording>>);

/// What a traced call records: when it began, when each step ended (and the step that refused it), and its
/// outgoing requests.
pub struct Recording {
    parent: Option<Parent>,
    trace_id: [u8; 16],
    span_id: [u8; 8],
    t0: Instant,
    start_ns: u64,
    /// Each step that ended, with its end as nanoseconds since `t0`, and the code it failed with.
    steps: Vec<(Step, u64, Option<&'static str>)>,
    requests: Vec<Request>,
}

/// One outgoing request as its span reports it: where to, how, how it ended, when.
struct Request {
    host: String,
    port: u16,
    scheme: Option<String>,
    method: String,
    class: String,
    status: Option<u16>,
    start_ns: u64,
    end_ns: u64,
}

impl Clock {
    /// A clock that records nothing.
    pub fn off() -> Clock {
        Clock(None)
    }

    /// Whether this call is traced.
    pub fn on(&self) -> bool {
        self.0.is_some()
    }

    /// `step` ended (successfully, as far as it goes).
    pub fn mark(&mut self, step: Step) {
        if let Some(r) = &mut self.0 {
            let at = r.now();
            r.steps.push((step, at, None));
        }
    }

    /// The call was refused or failed in the step after the last one that ended, with `code`.
    pub fn failed(&mut self, code: Option<crate::model::Code>) {
        if let Some(r) = &mut self.0 {
            let step = match r.steps.last() {
                Some((s, _, _)) => s.next().unwrap_or(Step::Audit),
                None => Step::Resolve,
            };
            let at = r.now();
            r.steps.push((step, at, Some(code.map_or("adapter_failed", |c| c.as_str()))));
        }
    }

    /// The run ended (with `code` when it failed), having made these outgoing requests.
    pub fn ran(&mut self, code: Option<crate::model::Code>, ok: bool, rows: &[EgressRow]) {
        let Some(r) = &mut self.0 else { return };
        let at = r.now();
        let failed = (!ok).then(|| code.map_or("adapter_failed", |c| c.as_str()));
        r.steps.push((Step::Run, at, failed));
        for row in rows {
            let e = &row.egress;
            let end_ns = unix_ns(row.ended);
            r.requests.push(Request {
                host: e.host.clone(),
                port: e.port,
                scheme: e.scheme.clone(),
                method: e.method.clone(),
                class: e.refused.clone().unwrap_or_else(|| "allowed".into()),
                status: e.status,
                start_ns: end_ns.saturating_sub(u64::try_from(row.took.as_nanos()).unwrap_or(0)),
                end_ns,
            });
        }
    }

    /// The recording, when the call was traced.
    pub(crate) fn take(&mut self) -> Option<Box<Recording>> {
        self.0.take()
    }
}

impl Recording {
    /// How many spans the call is: itself, its steps, its requests.
    pub(crate) fn span_count(&self) -> usize {
        1 + self.steps.len() + self.requests.len()
    }

    fn now(&self) -> u64 {
        u64::try_from(self.t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Nanoseconds since the Unix epoch.
fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)).unwrap_or(0)
}

/// What a call's spans say of it beyond its recording, taken when it ended (names only, never a value).
pub(crate) struct Ended {
    pack: String,
    verb: String,
    tenant: String,
    invoker: &'static str,
    /// The stable code of a call that did not succeed.
    code: Option<&'static str>,
    sandbox: Option<&'static str>,
    took: Duration,
}

impl Ended {
    pub(crate) fn of(principal: &Principal, env: &Envelope, out: &ResultEnvelope, took: Duration) -> Ended {
        let code = if out.ok { None } else { Some(out.code.map_or("adapter_failed", |c| c.as_str())) };
        // A pack or command the runtime does not know is the caller's own word: never exported (as `/metrics`).
        let (pack, verb) = match out.code {
            Some(crate::model::Code::UnknownPack) => ("_unknown", "_unknown"),
            Some(crate::model::Code::NoPolicy) => (env.pack_id.as_str(), "_unknown"),
            _ => (env.pack_id.as_str(), env.verb_key.as_str()),
        };
        Ended {
            pack: pack.to_string(),
            verb: verb.to_string(),
            tenant: principal.tenant.clone(),
            invoker: principal.invoker.as_str(),
            code,
            sandbox: out.sandbox.as_ref().map(|s| s.mode.as_str()),
            took,
        }
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attr {
    Str(String),
    Int(i64),
    Bool(bool),
}

/// OTLP's `SpanKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Internal = 1,
    Server = 2,
    Client = 3,
}

/// One finished span, ready to encode.
#[derive(Debug, Clone)]
pub(crate) struct SpanData {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    parent: Option<[u8; 8]>,
    remote_parent: bool,
    trace_state: Option<String>,
    name: &'static str,
    kind: Kind,
    start_ns: u64,
    end_ns: u64,
    attrs: Vec<(&'static str, Attr)>,
    /// The stable code of a span that failed (its status is then error, with the code as its message).
    error: Option<&'static str>,
}

/// Span and trace ids: random enough to be unique (splitmix64 over a seed from the kernel and a counter), not
/// secret.
fn next_id() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(1);
    let seed = *SEED.get_or_init(|| {
        let fallback = unix_ns(SystemTime::now()) ^ u64::from(std::process::id()).rotate_left(32);
        crate::store::random_bytes::<8>().map(u64::from_le_bytes).unwrap_or(fallback)
    });
    let mut z =
        seed.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).max(1)
}

fn span_id() -> [u8; 8] {
    next_id().to_be_bytes()
}

fn trace_id() -> [u8; 16] {
    let mut t = [0u8; 16];
    t[..8].copy_from_slice(&next_id().to_be_bytes());
    t[8..].copy_from_slice(&next_id().to_be_bytes());
    t
}

impl Recording {
    /// A call starting now, a child of `parent` when its caller sent one.
    fn start(parent: Option<Parent>) -> Recording {
        Recording {
            trace_id: parent.as_ref().map_or_else(trace_id, |p| p.trace_id),
            span_id: span_id(),
            parent,
            t0: Instant::now(),
            start_ns: unix_ns(SystemTime::now()),
            steps: Vec::with_capacity(6),
            requests: Vec::new(),
        }
    }

    /// The call's spans: the call, its steps, its requests (children of the run). Built on the exporter's
    /// thread, off the call's path.
    fn spans(self, e: &Ended) -> Vec<SpanData> {
        let (code, took) = (e.code, e.took);
        let took_ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let state = self.parent.as_ref().and_then(|p| p.state.clone());
        let span = |name, kind, parent: [u8; 8], start_ns, end_ns, attrs, error| SpanData {
            trace_id: self.trace_id,
            span_id: span_id(),
            parent: Some(parent),
            remote_parent: false,
            trace_state: state.clone(),
            name,
            kind,
            start_ns,
            end_ns,
            attrs,
            error,
        };
        let mut call_attrs = vec![
            ("hcp.pack", Attr::Str(e.pack.clone())),
            ("hcp.command", Attr::Str(e.verb.clone())),
            ("hcp.tenant", Attr::Str(e.tenant.clone())),
            ("hcp.invoker", Attr::Str(e.invoker.to_string())),
            ("hcp.code", Attr::Str(code.unwrap_or("ok").to_string())),
            ("hcp.ok", Attr::Bool(code.is_none())),
            ("hcp.duration_ms", Attr::Int(i64::try_from(took.as_millis()).unwrap_or(i64::MAX))),
        ];
        if let Some(s) = e.sandbox {
            call_attrs.push(("hcp.sandbox", Attr::Str(s.to_string())));
        }
        let mut spans = Vec::with_capacity(1 + self.steps.len() + self.requests.len());
        spans.push(SpanData {
            trace_id: self.trace_id,
            span_id: self.span_id,
            parent: self.parent.as_ref().map(|p| p.span_id),
            remote_parent: self.parent.is_some(),
            trace_state: state.clone(),
            name: "hcp.call",
            kind: Kind::Server,
            start_ns: self.start_ns,
            end_ns: self.start_ns.saturating_add(took_ns),
            attrs: call_attrs,
            error: code,
        });
        let mut from = 0u64;
        let mut run = None;
        for (step, end, failed) in &self.steps {
            let mut s = span(
                step.name(),
                Kind::Internal,
                self.span_id,
                self.start_ns + from,
                self.start_ns + *end,
                failed.map(|c| vec![("hcp.code", Attr::Str(c.to_string()))]).unwrap_or_default(),
                *failed,
            );
            if *step == Step::Run {
                run = Some(s.span_id);
                if let Some(sb) = e.sandbox {
                    s.attrs.push(("hcp.sandbox", Attr::Str(sb.to_string())));
                }
            }
            spans.push(s);
            from = *end;
        }
        for r in &self.requests {
            let mut attrs = vec![
                ("server.address", Attr::Str(r.host.clone())),
                ("server.port", Attr::Int(i64::from(r.port))),
                ("http.request.method", Attr::Str(r.method.clone())),
                ("hcp.egress.class", Attr::Str(r.class.clone())),
            ];
            if let Some(s) = &r.scheme {
                attrs.push(("url.scheme", Attr::Str(s.clone())));
            }
            if let Some(st) = r.status {
                attrs.push(("http.response.status_code", Attr::Int(i64::from(st))));
            }
            let refused = (r.class != "allowed").then_some("egress_refused");
            let error = refused.or_else(|| r.status.filter(|s| *s >= 500).map(|_| "http_error"));
            let parent = run.unwrap_or(self.span_id);
            spans.push(span("hcp.egress", Kind::Client, parent, r.start_ns, r.end_ns, attrs, error));
        }
        spans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_parsed_or_ignored() {
        let p =
            Parent::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Some("k=v")).unwrap();
        assert_eq!(p.span_id, [0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31]);
        assert!(p.sampled);
        assert_eq!(p.state.as_deref(), Some("k=v"));
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
            "00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01",
            "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "0-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01é",
        ] {
            assert_eq!(Parent::parse(bad, None), None, "{bad}");
        }
        // A later version may carry more fields.
        assert!(Parent::parse("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00-xyz", None).is_some());
    }

    #[test]
    fn a_refusal_is_the_step_after_the_last_that_ended() {
        let mut c = Clock(Some(Box::new(Recording::start(None))));
        c.mark(Step::Resolve);
        c.failed(Some(crate::model::Code::InvalidArgs));
        let r = c.take().unwrap();
        assert_eq!(
            r.steps.iter().map(|s| (s.0, s.2)).collect::<Vec<_>>(),
            vec![(Step::Resolve, None), (Step::Check, Some("invalid_args"))]
        );
        // Off, nothing is recorded.
        let mut off = Clock::off();
        off.mark(Step::Resolve);
        assert!(off.take().is_none());
    }
}
