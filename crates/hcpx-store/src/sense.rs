//! Sense events (docs/sense.md): each tenant's stimuli, kept durably so a watcher that reconnects with the last
//! event id it saw gets what it missed. Each tenant's ids count from 1; retention is bounded by count and age
//! (the back ends keep them: `files::sense`, `pg::sense`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

use super::{Store, StoreError};

/// Events kept per tenant, newest first (`HCP_SENSE_MAX_EVENTS` overrides it).
pub const MAX_EVENTS: u64 = 10_000;
/// The age past which an event is dropped at the next compaction: 7 days.
pub const MAX_AGE: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);
/// The largest payload accepted, as compact JSON.
pub const MAX_PAYLOAD_BYTES: usize = 64 * 1024;

/// One stimulus, as stored and as delivered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SenseEvent {
    /// Monotonic per tenant, from 1; a watcher resumes after the last one it saw.
    pub id: u64,
    /// When it was recorded (RFC 3339, UTC).
    pub at: String,
    pub pack_id: String,
    /// The declared trigger (`stimulusTriggers[].ref`).
    #[serde(rename = "ref")]
    pub reference: String,
    pub payload: Value,
    /// Who pushed it; absent for the runtime's own events (`binding.degraded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
}

/// An event to record: everything but its id and time, which the store gives.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub pack_id: String,
    pub reference: String,
    pub payload: Value,
    pub principal: Option<String>,
}

/// Events kept per tenant (`HCP_SENSE_MAX_EVENTS`, else [`MAX_EVENTS`]).
pub(crate) fn max_events() -> u64 {
    std::env::var("HCP_SENSE_MAX_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(MAX_EVENTS)
}

/// Compaction waits until the log holds this many events more than it keeps, so it is one rewrite per batch.
pub(crate) fn slack(max: u64) -> u64 {
    (max / 10).max(1)
}

/// `tenant`'s event log, relative to the store (a tenant that is no plain name is refused).
pub(crate) fn sense_log(tenant: &str) -> Result<PathBuf, StoreError> {
    Ok(crate::tenant_dir(tenant)?.join("sense").join("events.jsonl"))
}

impl Store {
    /// The tenant's event log, relative to the store.
    pub(crate) fn sense_log(&self, tenant: &str) -> Result<PathBuf, StoreError> {
        sense_log(tenant)
    }

    /// Appends `new` to `tenant`'s log with the next id and returns it as recorded. With `dedupe`, an event equal
    /// (pack, ref, payload) to the tenant's newest one is not recorded again and `None` is returned (the runtime's
    /// own `binding.degraded`, which every failing call would otherwise repeat).
    pub fn append_sense(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError> {
        self.backend.sense_append(tenant, new, dedupe)
    }

    /// `tenant`'s events with an id past `after`, oldest first. A line still being written (no newline yet)
    /// is left for the next read.
    pub fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        self.backend.sense_events(tenant, after)
    }

    /// Woken at once when a Sense event is recorded on any replica (the PostgreSQL store); `None` for the file
    /// store, whose watchers poll.
    pub fn sense_wake(&self) -> Option<std::sync::Arc<super::pg::Live>> {
        self.backend.sense_wake()
    }

    /// What identifies the log's current content (inode, length, mtime): a watcher polls this and reads the log
    /// again only when it changed. `None` when there is no log yet.
    pub fn sense_version(&self, tenant: &str) -> Result<Option<(u64, u64, i64, i64)>, StoreError> {
        self.backend.sense_version(tenant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(pack: &str, payload: Value) -> NewEvent {
        NewEvent { pack_id: pack.into(), reference: "item.changed".into(), payload, principal: None }
    }

    #[test]
    fn ids_are_per_tenant_and_replay_starts_after_the_last_seen() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        for n in 0..3 {
            store.append_sense("local", ev("demo", json!({ "n": n })), false).unwrap();
        }
        let b = store.append_sense("acme", ev("demo", json!({})), false).unwrap().unwrap();
        assert_eq!(b.id, 1, "another tenant counts from 1");
        let all = store.sense_events("local", 0).unwrap();
        assert_eq!(all.iter().map(|e| e.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(store.sense_events("local", 2).unwrap()[0].payload, json!({ "n": 2 }));
        assert!(t.path().join("tenants/acme/sense/events.jsonl").exists());
        // The same event twice in a row is recorded once when asked.
        assert!(store.append_sense("local", ev("demo", json!({ "n": 2 })), true).unwrap().is_none());
        assert_eq!(store.append_sense("local", ev("demo", json!({ "n": 9 })), true).unwrap().unwrap().id, 4);
    }

    #[test]
    fn compaction_keeps_the_newest_and_ids_go_on() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let max = MAX_EVENTS + slack(MAX_EVENTS) + 1;
        // Written directly (fast), then one append compacts.
        let mut text = String::new();
        for id in 1..=max {
            let e = SenseEvent {
                id,
                at: crate::model::clock::now_rfc3339(),
                pack_id: "demo".into(),
                reference: "x".into(),
                payload: json!(null),
                principal: None,
            };
            text.push_str(&serde_json::to_string(&e).unwrap());
            text.push('\n');
        }
        std::fs::create_dir_all(t.path().join("sense")).unwrap();
        std::fs::write(t.path().join("sense/events.jsonl"), text).unwrap();
        let next = store.append_sense("local", ev("demo", json!(1)), false).unwrap().unwrap();
        assert_eq!(next.id, max + 1);
        let kept = store.sense_events("local", 0).unwrap();
        assert_eq!(kept.len() as u64, MAX_EVENTS);
        assert_eq!(kept.last().unwrap().id, max + 1);
    }
}
