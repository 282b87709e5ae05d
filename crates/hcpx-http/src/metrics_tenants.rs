//! `/metrics` per tenant: which tenant is failing, and since when. Each tenant has its own denial counters, call
//! latency histogram and failure streak (when its current run of failures began, its last success and last
//! failure), kept in a table that holds at most `max` tenants: past it, further tenants are counted under
//! `_other` (the one fold convention of the page), so a store with thousands of tenants cannot grow the page
//! without bound. A call costs a read lock and a hash lookup here (a write lock the first time a tenant is
//! seen), then atomics.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::metrics::{escape, BUCKETS, OTHER};
use crate::model::Code;

/// How many tenants `/metrics` names by default before it folds the rest into `_other`
/// (`HCP_METRICS_MAX_TENANTS` changes it).
pub const DEFAULT_MAX_TENANTS: usize = 100;

/// Whether a call's code means its tenant is not being served: the streak's failures. A success ends a streak;
/// the codes of a normal exchange (a write waiting for its confirmation or approval, a caller that went away, a
/// caller's own mistake in its arguments or project) neither start nor end one.
pub(crate) fn is_failure(code: Code) -> bool {
    !matches!(
        code,
        Code::ConfirmRequired
            | Code::ApprovalPending
            | Code::Cancelled
            | Code::InvalidArgs
            | Code::ProjectRequired
            | Code::NoProject
    )
}

/// One tenant's counters.
pub(crate) struct TenantStats {
    /// Denials, indexed like `Code::NAMES`.
    denials: Vec<AtomicU64>,
    /// One slot per latency bucket (the last is `+Inf`); cumulated when rendered.
    buckets: Vec<AtomicU64>,
    sum_nanos: AtomicU64,
    /// When the current run of failures began (ms since the Unix epoch); 0 while the last call that counts
    /// succeeded.
    failing_since_ms: AtomicU64,
    last_success_ms: AtomicU64,
    last_failure_ms: AtomicU64,
}

impl Default for TenantStats {
    fn default() -> Self {
        TenantStats {
            denials: Code::NAMES.iter().map(|_| AtomicU64::new(0)).collect(),
            buckets: (0..=BUCKETS.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
            failing_since_ms: AtomicU64::new(0),
            last_success_ms: AtomicU64::new(0),
            last_failure_ms: AtomicU64::new(0),
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl TenantStats {
    /// Records one call of this tenant: `denial` is its index in `Code::NAMES` when it was refused.
    pub(crate) fn record(&self, code: Option<Code>, denial: Option<usize>, took: Duration) {
        if let Some(i) = denial {
            self.denials[i].fetch_add(1, Ordering::Relaxed);
        }
        let secs = took.as_secs_f64();
        let slot = BUCKETS.iter().position(|b| secs <= *b).unwrap_or(BUCKETS.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        match code {
            None => {
                self.last_success_ms.store(now_ms(), Ordering::Relaxed);
                // Only a streak that is on is written: a healthy tenant's calls only read this line.
                if self.failing_since_ms.load(Ordering::Relaxed) != 0 {
                    self.failing_since_ms.store(0, Ordering::Relaxed);
                }
            }
            Some(c) if is_failure(c) => {
                let now = now_ms();
                self.last_failure_ms.store(now, Ordering::Relaxed);
                let _ = self.failing_since_ms.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
            }
            Some(_) => {}
        }
    }

    fn calls(&self) -> u64 {
        self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum()
    }
}

/// The tenants' table.
pub(crate) struct Tenants {
    table: RwLock<HashMap<String, Arc<TenantStats>>>,
    other: Arc<TenantStats>,
    max: usize,
}

impl Tenants {
    pub(crate) fn new(max: usize) -> Tenants {
        Tenants { table: RwLock::new(HashMap::new()), other: Arc::default(), max }
    }

    /// The most tenants named before the rest fold into `_other`.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The label `tenant` is counted under, and its counters: its own while the table has room, else
    /// `_other`'s.
    pub(crate) fn of<'a>(&self, tenant: &'a str) -> (&'a str, Arc<TenantStats>) {
        if let Ok(t) = self.table.read() {
            if let Some(s) = t.get(tenant) {
                return (tenant, s.clone());
            }
        }
        let mut t = match self.table.write() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(s) = t.get(tenant) {
            return (tenant, s.clone());
        }
        if t.len() >= self.max || tenant == OTHER {
            return (OTHER, self.other.clone());
        }
        let s: Arc<TenantStats> = Arc::default();
        t.insert(tenant.to_string(), s.clone());
        (tenant, s)
    }

    /// Every tenant seen, in order, then `_other` if any call was counted under it.
    fn rows(&self) -> Vec<(String, Arc<TenantStats>)> {
        let mut rows: Vec<(String, Arc<TenantStats>)> = match self.table.read() {
            Ok(t) => t.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Err(_) => Vec::new(),
        };
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        if self.other.calls() > 0 {
            rows.push((OTHER.to_string(), self.other.clone()));
        }
        rows
    }

    /// The per-tenant families: denials, the latency histogram and the failure streak's gauges.
    pub(crate) fn render(&self, out: &mut String) {
        let rows = self.rows();
        out.push_str(
            "# HELP hcp_denials_total Calls refused before or instead of running, by tenant and code.\n\
             # TYPE hcp_denials_total counter\n",
        );
        for (tenant, s) in &rows {
            let tenant = escape(tenant);
            for (name, n) in Code::NAMES.iter().zip(&s.denials) {
                let n = n.load(Ordering::Relaxed);
                let _ = writeln!(out, "hcp_denials_total{{tenant=\"{tenant}\",code=\"{name}\"}} {n}");
            }
        }
        out.push_str(
            "# HELP hcp_call_duration_seconds How long calls took, from admission to result, by tenant.\n\
             # TYPE hcp_call_duration_seconds histogram\n",
        );
        for (tenant, s) in &rows {
            let tenant = escape(tenant);
            let mut cumulative = 0u64;
            for (i, slot) in s.buckets.iter().enumerate() {
                cumulative += slot.load(Ordering::Relaxed);
                let le = BUCKETS.get(i).map_or("+Inf".to_string(), |b| b.to_string());
                let _ = writeln!(
                    out,
                    "hcp_call_duration_seconds_bucket{{tenant=\"{tenant}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let sum = s.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
            let _ = writeln!(out, "hcp_call_duration_seconds_sum{{tenant=\"{tenant}\"}} {sum}");
            // The count is the `+Inf` bucket's, so a scrape never sees the two disagree.
            let _ = writeln!(out, "hcp_call_duration_seconds_count{{tenant=\"{tenant}\"}} {cumulative}");
        }
        for (name, help, pick) in [
            (
                "hcp_tenant_failing_since_seconds",
                "When the tenant's current run of failed calls began (Unix time); 0 once a call succeeds.",
                (|s: &TenantStats| &s.failing_since_ms) as fn(&TenantStats) -> &AtomicU64,
            ),
            (
                "hcp_tenant_last_success_seconds",
                "When a call of the tenant last succeeded (Unix time); 0 if none has on this replica.",
                |s: &TenantStats| &s.last_success_ms,
            ),
            (
                "hcp_tenant_last_failure_seconds",
                "When a call of the tenant last failed (Unix time); 0 if none has on this replica.",
                |s: &TenantStats| &s.last_failure_ms,
            ),
        ] {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (tenant, s) in &rows {
                let ms = pick(s).load(Ordering::Relaxed);
                let _ = writeln!(out, "{name}{{tenant=\"{}\"}} {}", escape(tenant), seconds(ms));
            }
        }
    }
}

/// Milliseconds as seconds with their fraction (`0` stays `0`).
fn seconds(ms: u64) -> String {
    if ms == 0 {
        "0".into()
    } else {
        format!("{}.{:03}", ms / 1000, ms % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_starts_at_its_first_failure_and_ends_at_a_success() {
        let t = Tenants::new(10);
        let (_, b) = t.of("beta");
        b.record(None, None, Duration::ZERO);
        assert_eq!(b.failing_since_ms.load(Ordering::Relaxed), 0);
        b.record(Some(Code::NotActivated), Some(1), Duration::ZERO);
        let since = b.failing_since_ms.load(Ordering::Relaxed);
        assert!(since > 0);
        std::thread::sleep(Duration::from_millis(5));
        b.record(Some(Code::BindingFailed), None, Duration::ZERO);
        b.record(Some(Code::ConfirmRequired), None, Duration::ZERO);
        assert_eq!(b.failing_since_ms.load(Ordering::Relaxed), since, "a later failure keeps the start");
        assert!(b.last_failure_ms.load(Ordering::Relaxed) > since);
        b.record(None, None, Duration::ZERO);
        assert_eq!(b.failing_since_ms.load(Ordering::Relaxed), 0, "a success ends it");
    }

    #[test]
    fn tenants_past_the_limit_fold_into_other() {
        let t = Tenants::new(2);
        for name in ["a", "b", "c", "d", "a"] {
            let (_, s) = t.of(name);
            s.record(None, None, Duration::ZERO);
        }
        assert_eq!(t.of("c").0, OTHER);
        assert_eq!(t.of("a").0, "a");
        let mut out = String::new();
        t.render(&mut out);
        assert!(out.contains("hcp_call_duration_seconds_count{tenant=\"a\"} 2"), "{out}");
        assert!(out.contains("hcp_call_duration_seconds_count{tenant=\"_other\"} 2"), "{out}");
        assert!(!out.contains("tenant=\"c\""), "{out}");
        assert_eq!(seconds(1_700_000_000_123), "1700000000.123");
    }
}
