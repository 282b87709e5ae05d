//! `/metrics` from the store: what waits (approvals per tenant, and how long the oldest has waited), the tasks
//! per tenant and state, how long the store's operations take (`hcpx_store::timing`), and the sealed rows this
//! replica could not open (`hcpx_store::pg::seal`). Approvals and tasks are read from the store when scraped,
//! at most once per [`GATHER_TTL`] however many scrapes arrive: a scrape storm reads PostgreSQL once, and
//! scrapes that arrive while it reads wait for that read instead of making their own.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::metrics::{escape, OTHER};
use crate::store::approvals::Waiting;
use crate::store::tasks::TaskStatus;
use crate::store::{timing, Store};

/// How long what was read from the store answers scrapes before it is read again.
pub const GATHER_TTL: Duration = Duration::from_secs(2);

/// The task states, as `hcp_tasks`' `state` label says them.
const STATES: [TaskStatus; 4] =
    [TaskStatus::Working, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

/// What one read of the store found; `None` where it failed (the family is then left empty).
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    approvals: Option<Vec<Waiting>>,
    tasks: Option<Vec<(String, TaskStatus, u64)>>,
}

/// The last read, and when it was made.
#[derive(Default)]
pub(crate) struct StoreGauges {
    last: Mutex<Option<(Instant, Arc<Gathered>)>>,
}

impl StoreGauges {
    /// What the store holds now, or as read less than [`GATHER_TTL`] ago. Blocks (the store may).
    pub(crate) fn gather(&self, store: &Store) -> Arc<Gathered> {
        // Held while reading: concurrent scrapes wait for this read and share it.
        let mut last = match self.last.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some((at, g)) = last.as_ref() {
            if at.elapsed() < GATHER_TTL {
                return g.clone();
            }
        }
        let g =
            Arc::new(Gathered { approvals: store.approvals_waiting().ok(), tasks: store.task_counts().ok() });
        *last = Some((Instant::now(), g.clone()));
        g
    }
}

/// `rows` keyed by tenant with the first `max` tenants named and the rest merged into `_other` by `merge`.
fn fold<T>(rows: Vec<(String, T)>, max: usize, merge: impl Fn(&mut T, T)) -> Vec<(String, T)> {
    let mut named: BTreeMap<String, T> = BTreeMap::new();
    let mut other: Option<T> = None;
    for (tenant, v) in rows {
        if let Some(have) = named.get_mut(&tenant) {
            merge(have, v);
        } else if named.len() < max && tenant != OTHER {
            named.insert(tenant, v);
        } else {
            match other.as_mut() {
                Some(o) => merge(o, v),
                None => other = Some(v),
            }
        }
    }
    let mut out: Vec<(String, T)> = named.into_iter().collect();
    out.extend(other.map(|o| (OTHER.to_string(), o)));
    out
}

/// The approvals' and tasks' families, from `g` (tenants past `max` folded into `_other`).
pub(crate) fn render_gathered(out: &mut String, g: &Gathered, max: usize) {
    out.push_str(
        "# HELP hcp_approvals_waiting Approvals waiting for a person now, by tenant (read from the store).\n\
         # TYPE hcp_approvals_waiting gauge\n",
    );
    let approvals = g.approvals.clone().unwrap_or_default();
    let approvals =
        fold(approvals.into_iter().map(|w| (w.tenant, (w.count, w.oldest_ms))).collect(), max, |a, b| {
            *a = (a.0 + b.0, a.1.min(b.1))
        });
    for (tenant, (count, _)) in &approvals {
        let _ = writeln!(out, "hcp_approvals_waiting{{tenant=\"{}\"}} {count}", escape(tenant));
    }
    out.push_str(
        "# HELP hcp_approvals_oldest_waiting_seconds How long the tenant's oldest waiting approval has waited.\n\
         # TYPE hcp_approvals_oldest_waiting_seconds gauge\n",
    );
    let now = crate::store::approvals::now_ms();
    for (tenant, (_, oldest)) in &approvals {
        let age = now.saturating_sub(*oldest) as f64 / 1000.0;
        let _ = writeln!(out, "hcp_approvals_oldest_waiting_seconds{{tenant=\"{}\"}} {age}", escape(tenant));
    }
    out.push_str(
        "# HELP hcp_tasks Tasks in the store, by tenant and state (working, completed, failed, cancelled).\n\
         # TYPE hcp_tasks gauge\n",
    );
    let tasks = g.tasks.clone().unwrap_or_default();
    let tasks = fold(
        tasks
            .into_iter()
            .map(|(tenant, status, n)| {
                let mut by = [0u64; STATES.len()];
                if let Some(i) = STATES.iter().position(|s| *s == status) {
                    by[i] = n;
                }
                (tenant, by)
            })
            .collect(),
        max,
        |a, b| a.iter_mut().zip(b).for_each(|(x, y)| *x += y),
    );
    for (tenant, by) in &tasks {
        for (state, n) in STATES.iter().zip(by) {
            let _ =
                writeln!(out, "hcp_tasks{{tenant=\"{}\",state=\"{}\"}} {n}", escape(tenant), state.as_str());
        }
    }
}

/// The store's operation latency and this replica's seal failures (both kept by the store crate).
pub(crate) fn render_store(out: &mut String) {
    out.push_str(
        "# HELP hcp_store_operation_duration_seconds How long the store's operations took, by back end and \
         operation kind.\n# TYPE hcp_store_operation_duration_seconds histogram\n",
    );
    for o in timing::snapshot() {
        let labels = format!("store=\"{}\",op=\"{}\"", o.store, o.op);
        for (i, n) in o.cumulative.iter().enumerate() {
            let le = timing::BUCKETS.get(i).map_or("+Inf".to_string(), |b| b.to_string());
            let _ = writeln!(out, "hcp_store_operation_duration_seconds_bucket{{{labels},le=\"{le}\"}} {n}");
        }
        let _ = writeln!(out, "hcp_store_operation_duration_seconds_sum{{{labels}}} {}", o.sum_secs);
        let count = o.cumulative.last().copied().unwrap_or(0);
        let _ = writeln!(out, "hcp_store_operation_duration_seconds_count{{{labels}}} {count}");
    }
    let _ = writeln!(
        out,
        "# HELP hcp_seal_failures_total Sealed rows (credentials) this replica could not open with its seal key.\n\
         # TYPE hcp_seal_failures_total counter\nhcp_seal_failures_total {}",
        crate::store::pg::seal::failures()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_and_tasks_past_the_limit_fold_into_other() {
        let g = Gathered {
            approvals: Some(vec![
                Waiting { tenant: "a".into(), count: 2, oldest_ms: 1 },
                Waiting { tenant: "b".into(), count: 1, oldest_ms: 5 },
                Waiting { tenant: "c".into(), count: 3, oldest_ms: 2 },
            ]),
            tasks: Some(vec![
                ("a".into(), TaskStatus::Working, 1),
                ("b".into(), TaskStatus::Completed, 4),
                ("c".into(), TaskStatus::Completed, 1),
            ]),
        };
        let mut out = String::new();
        render_gathered(&mut out, &g, 1);
        for line in [
            "hcp_approvals_waiting{tenant=\"a\"} 2",
            "hcp_approvals_waiting{tenant=\"_other\"} 4",
            "hcp_tasks{tenant=\"a\",state=\"working\"} 1",
            "hcp_tasks{tenant=\"a\",state=\"completed\"} 0",
            "hcp_tasks{tenant=\"_other\",state=\"completed\"} 5",
        ] {
            assert!(out.lines().any(|l| l == line), "{line} missing:\n{out}");
        }
        assert!(!out.contains("tenant=\"b\""), "{out}");
    }
}
