//! `GET /metrics`: what a served runtime has done, in the Prometheus text format — calls by tenant, invoker,
//! pack, command and code, and per tenant its denials by code, a call latency histogram and when its current
//! failures began (`metrics_tenants`); the calls in flight, the store's pool, approvals waiting, tasks, store
//! latency and seal failures (`metrics_store`); and the requests wraps sent through their egress proxies (by
//! pack, scheme and class) with their bytes. Every
//! call the async exec path answers (HTTP and MCP over HTTP) is recorded once, by `Runtime`'s observer hook,
//! with atomics: a read lock on the label table (a write lock only the first time a label set is seen), never a
//! lock per call.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::metrics_store::{self, Gathered, StoreGauges};
use super::metrics_tenants::{Tenants, DEFAULT_MAX_TENANTS};
use crate::model::{Code, Envelope, Principal, ResultEnvelope};
use crate::runtime::{CallObserver, EgressRow, EGRESS_CLASSES};
use crate::store::{PoolStats, Store};

/// The latency buckets' upper bounds, in seconds: 0.5 ms to 10 s.
pub(crate) const BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// Past this many label sets, new ones are counted under `_other`: a caller's made-up pack or command names
/// cannot grow the table without bound.
const MAX_SERIES: usize = 4096;

/// A label value standing for a name the runtime does not know (an unknown pack or command).
const UNKNOWN: &str = "_unknown";
/// The label value a name past a limit is counted under (a pack or command past `MAX_SERIES` label sets, a
/// tenant past the tenants' limit, an egress class the runtime does not know).
pub(crate) const OTHER: &str = "_other";

/// One call's labels: tenant, invoker, pack, command, code (`ok` for a success).
type CallKey = (String, &'static str, String, String, &'static str);
/// One outgoing request's labels: pack, scheme (`https`, `http`, `none`), class (`allowed` or the refusal's kind).
type EgressKey = (String, &'static str, &'static str);

/// The counters `/metrics` reports; shared by the runtime (which records) and the handler (which renders).
pub struct Metrics {
    calls: RwLock<HashMap<CallKey, Arc<AtomicU64>>>,
    /// Per tenant: denials, latency and the failure streak.
    tenants: Tenants,
    /// Approvals and tasks, read from the store when scraped.
    store: StoreGauges,
    egress: RwLock<HashMap<EgressKey, Arc<AtomicU64>>>,
    /// Per pack: bytes up (to the origin) and down.
    egress_bytes: RwLock<HashMap<String, Arc<[AtomicU64; 2]>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Whether a code is a refusal of the call (the pipeline said no, or the server is full), as opposed to a
/// command that ran and failed, or a caller that went away.
fn is_denial(code: Code) -> bool {
    let http = code.status().http;
    code == Code::Busy || ((400..500).contains(&http) && code != Code::Cancelled)
}

impl Metrics {
    pub fn new() -> Metrics {
        Metrics::with_max_tenants(DEFAULT_MAX_TENANTS)
    }

    /// Metrics that name at most `max` tenants (at least 1); calls of further tenants are counted under
    /// `_other`.
    pub fn with_max_tenants(max: usize) -> Metrics {
        Metrics {
            calls: RwLock::new(HashMap::new()),
            tenants: Tenants::new(max.max(1)),
            store: StoreGauges::default(),
            egress: RwLock::new(HashMap::new()),
            egress_bytes: RwLock::new(HashMap::new()),
        }
    }

    /// Records one outgoing request of a wrap of `pack`: its scheme (none if it was never read), its class
    /// (`allowed` or the refusal's kind; anything else counts as `_other`) and the bytes it relayed.
    pub fn record_egress(&self, pack: &str, scheme: Option<&str>, class: &str, up: u64, down: u64) {
        let scheme = match scheme {
            Some("https") => "https",
            Some("http") => "http",
            _ => "none",
        };
        let class = EGRESS_CLASSES.iter().find(|c| **c == class).copied().unwrap_or(OTHER);
        counter(&self.egress, (pack.to_string(), scheme, class), |(_, s, c)| (OTHER.to_string(), *s, *c))
            .fetch_add(1, Ordering::Relaxed);
        let bytes = counter(&self.egress_bytes, pack.to_string(), |_| OTHER.to_string());
        bytes[0].fetch_add(up, Ordering::Relaxed);
        bytes[1].fetch_add(down, Ordering::Relaxed);
    }

    /// Records one call of `tenant`.
    pub fn record(
        &self,
        tenant: &str,
        invoker: &'static str,
        pack: &str,
        verb: &str,
        code: Option<Code>,
        took: Duration,
    ) {
        let (pack, verb) = match code {
            Some(Code::UnknownPack) => (UNKNOWN, UNKNOWN),
            Some(Code::NoPolicy) => (pack, UNKNOWN),
            _ => (pack, verb),
        };
        let (tenant, stats) = self.tenants.of(tenant);
        let code_label = code.map_or("ok", Code::as_str);
        let key = (tenant.to_string(), invoker, pack.to_string(), verb.to_string(), code_label);
        counter(&self.calls, key, |k| (k.0.clone(), k.1, OTHER.to_string(), OTHER.to_string(), k.4))
            .fetch_add(1, Ordering::Relaxed);
        let denial =
            code.filter(|c| is_denial(*c)).and_then(|c| Code::NAMES.iter().position(|n| *n == c.as_str()));
        stats.record(code, denial, took);
    }

    /// Reads the store's approvals and tasks for the next render (cached briefly; blocks).
    pub(crate) fn gather(&self, store: &Store) -> Arc<Gathered> {
        self.store.gather(store)
    }

    /// The text exposition (format 0.0.4), with the calls in flight and the store's pool as they are now (and
    /// no approvals or tasks: see [`Metrics::render_gathered`]).
    pub fn render(&self, in_flight: usize, store_kind: &str, pool: Option<PoolStats>) -> String {
        self.render_gathered(in_flight, store_kind, pool, None)
    }

    /// The text exposition, with what [`Metrics::gather`] read from the store.
    pub(crate) fn render_gathered(
        &self,
        in_flight: usize,
        store_kind: &str,
        pool: Option<PoolStats>,
        gathered: Option<&Gathered>,
    ) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str(
            "# HELP hcp_calls_total Calls answered, by tenant, invoker, pack, command and code (ok for a success).\n",
        );
        out.push_str("# TYPE hcp_calls_total counter\n");
        let mut rows: Vec<(CallKey, u64)> = match self.calls.read() {
            Ok(t) => t.iter().map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed))).collect(),
            Err(_) => Vec::new(),
        };
        rows.sort();
        for ((tenant, invoker, pack, verb, code), n) in rows {
            let _ = writeln!(
                out,
                "hcp_calls_total{{tenant=\"{}\",invoker=\"{}\",pack=\"{}\",verb=\"{}\",code=\"{}\"}} {n}",
                escape(&tenant),
                escape(invoker),
                escape(&pack),
                escape(&verb),
                escape(code)
            );
        }
        self.tenants.render(&mut out);
        out.push_str(
            "# HELP hcp_egress_requests_total Requests wraps sent through their egress proxy, by pack, scheme and \
             class (allowed, or the refusal's kind).\n",
        );
        out.push_str("# TYPE hcp_egress_requests_total counter\n");
        let mut rows: Vec<(EgressKey, u64)> = match self.egress.read() {
            Ok(t) => t.iter().map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed))).collect(),
            Err(_) => Vec::new(),
        };
        rows.sort();
        for ((pack, scheme, class), n) in rows {
            let _ = writeln!(
                out,
                "hcp_egress_requests_total{{pack=\"{}\",scheme=\"{scheme}\",class=\"{class}\"}} {n}",
                escape(&pack)
            );
        }
        out.push_str(
            "# HELP hcp_egress_bytes_total Bytes relayed by egress proxies, by pack and direction (up: to the \
             origin).\n",
        );
        out.push_str("# TYPE hcp_egress_bytes_total counter\n");
        let mut rows: Vec<(String, u64, u64)> = match self.egress_bytes.read() {
            Ok(t) => t
                .iter()
                .map(|(k, v)| (k.clone(), v[0].load(Ordering::Relaxed), v[1].load(Ordering::Relaxed)))
                .collect(),
            Err(_) => Vec::new(),
        };
        rows.sort();
        for (pack, up, down) in rows {
            let pack = escape(&pack);
            let _ = writeln!(out, "hcp_egress_bytes_total{{pack=\"{pack}\",direction=\"up\"}} {up}");
            let _ = writeln!(out, "hcp_egress_bytes_total{{pack=\"{pack}\",direction=\"down\"}} {down}");
        }
        out.push_str("# HELP hcp_calls_in_flight Calls running now.\n# TYPE hcp_calls_in_flight gauge\n");
        let _ = writeln!(out, "hcp_calls_in_flight {in_flight}");
        if let Some(p) = pool {
            let store = escape(store_kind);
            for (name, help, v) in [
                ("hcp_store_pool_connections", "Connections the store's pool holds open.", p.size),
                ("hcp_store_pool_idle", "Of those, idle.", p.idle),
                ("hcp_store_pool_max", "The most connections the pool opens.", p.max),
                ("hcp_store_pool_waiting", "Callers waiting for a connection.", p.waiting),
            ] {
                let _ = writeln!(
                    out,
                    "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{store=\"{store}\"}} {v}"
                );
            }
        }
        if let Some(g) = gathered {
            metrics_store::render_gathered(&mut out, g, self.tenants.max());
        }
        metrics_store::render_store(&mut out);
        out
    }
}

impl CallObserver for Metrics {
    fn observed(&self, principal: &Principal, env: &Envelope, out: &ResultEnvelope, took: Duration) {
        self.record(
            &principal.tenant,
            principal.invoker.as_str(),
            &env.pack_id,
            &env.verb_key,
            out.code,
            took,
        );
    }

    fn egress(&self, _principal: &Principal, env: &Envelope, rows: &[EgressRow]) {
        for r in rows {
            let e = &r.egress;
            self.record_egress(&env.pack_id, e.scheme.as_deref(), e.class(), e.bytes_up, e.bytes_down);
        }
    }
}

/// The counter of `key` in `table`, made the first time it is seen; past `MAX_SERIES` label sets a new one is
/// counted under `other(key)`.
fn counter<K, V>(table: &RwLock<HashMap<K, Arc<V>>>, key: K, other: impl Fn(&K) -> K) -> Arc<V>
where
    K: std::hash::Hash + Eq,
    V: Default,
{
    if let Ok(t) = table.read() {
        if let Some(c) = t.get(&key) {
            return c.clone();
        }
    }
    let mut t = match table.write() {
        Ok(t) => t,
        Err(poisoned) => poisoned.into_inner(),
    };
    let key = if t.len() >= MAX_SERIES && !t.contains_key(&key) { other(&key) } else { key };
    t.entry(key).or_default().clone()
}

/// A label value as the text format wants it: `\`, `"` and newlines escaped, and what would hide or reorder
/// text for whoever reads the page (controls, bidirectional overrides) shown as `\xNN` / `\u{NNNN}` first.
pub(crate) fn escape(v: &str) -> String {
    let shown = crate::model::shown::shown(v);
    shown.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_cannot_reorder_or_hide_what_the_page_says() {
        // Shown first (`\u{202e}`), then escaped for the text format (its backslash doubled).
        assert_eq!(escape("pay\u{202E}evil\u{202C}\"\n"), "pay\\\\u{202e}evil\\\\u{202c}\\\"\\n");
        assert_eq!(escape("a\u{1b}]52;c;x\u{7}"), "a\\\\x1b]52;c;x\\\\x07");
    }

    #[test]
    fn calls_denials_and_latency_add_up_in_the_exposition() {
        let m = Metrics::new();
        m.record("acme", "http", "ledger", "list", None, Duration::from_micros(300));
        m.record("acme", "http", "ledger", "list", None, Duration::from_millis(3));
        m.record("acme", "mcp", "ledger", "transfer", Some(Code::ConfirmRequired), Duration::from_millis(20));
        m.record("acme", "http", "no\"pe", "x", Some(Code::UnknownPack), Duration::from_secs(30));
        m.record("acme", "http", "ledger", "list", Some(Code::ExitNonzero), Duration::from_millis(1));
        let text = m.render(2, "files", None);
        for line in [
            "hcp_calls_total{tenant=\"acme\",invoker=\"http\",pack=\"ledger\",verb=\"list\",code=\"ok\"} 2",
            "hcp_calls_total{tenant=\"acme\",invoker=\"mcp\",pack=\"ledger\",verb=\"transfer\",code=\"confirm_required\"} 1",
            "hcp_calls_total{tenant=\"acme\",invoker=\"http\",pack=\"_unknown\",verb=\"_unknown\",code=\"unknown_pack\"} 1",
            "hcp_denials_total{tenant=\"acme\",code=\"confirm_required\"} 1",
            "hcp_denials_total{tenant=\"acme\",code=\"unknown_pack\"} 1",
            "hcp_denials_total{tenant=\"acme\",code=\"exit_nonzero\"} 0",
            "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"0.0005\"} 1",
            "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"0.001\"} 2",
            "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"0.005\"} 3",
            "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"10\"} 4",
            "hcp_call_duration_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 5",
            "hcp_call_duration_seconds_count{tenant=\"acme\"} 5",
            "hcp_calls_in_flight 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert!(!text.contains("hcp_store_pool"), "no pool for the file store");
        let pool = PoolStats { size: 3, idle: 1, max: 16, waiting: 0 };
        assert!(m.render(0, "postgres", Some(pool)).contains("hcp_store_pool_max{store=\"postgres\"} 16"));
    }

    #[test]
    fn egress_requests_and_bytes_by_pack_scheme_and_class() {
        let m = Metrics::new();
        m.record_egress("evil", Some("https"), "allowed", 100, 1000);
        m.record_egress("evil", Some("https"), "allowed", 10, 20);
        m.record_egress("evil", Some("http"), "not_allowed", 0, 50);
        m.record_egress("evil", None, "made_up", 0, 0);
        let text = m.render(0, "files", None);
        for line in [
            "# TYPE hcp_egress_requests_total counter",
            "hcp_egress_requests_total{pack=\"evil\",scheme=\"https\",class=\"allowed\"} 2",
            "hcp_egress_requests_total{pack=\"evil\",scheme=\"http\",class=\"not_allowed\"} 1",
            "hcp_egress_requests_total{pack=\"evil\",scheme=\"none\",class=\"_other\"} 1",
            "# TYPE hcp_egress_bytes_total counter",
            "hcp_egress_bytes_total{pack=\"evil\",direction=\"up\"} 110",
            "hcp_egress_bytes_total{pack=\"evil\",direction=\"down\"} 1070",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn made_up_names_cannot_grow_the_table_without_bound() {
        let m = Metrics::new();
        for i in 0..(MAX_SERIES + 50) {
            m.record("acme", "http", "ledger", &format!("v{i}"), Some(Code::Denied), Duration::ZERO);
        }
        assert!(m.calls.read().unwrap().len() <= MAX_SERIES + 1);
        assert!(m.render(0, "files", None).contains("verb=\"_other\",code=\"denied\"} 50"));
    }
}
