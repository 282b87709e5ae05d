//! Sense events (docs/sense.md): each tenant's stimuli, kept durably so a watcher that reconnects with the last
//! event id it saw gets what it missed. One JSON line per event in `<tenant dir>/sense/events.jsonl`, appended
//! (and fsynced) under the store lock with the next id of that tenant; retention is bounded by count and age,
//! enforced by an atomic rewrite when an append finds the log past either bound.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

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

fn max_events() -> u64 {
    std::env::var("HCP_SENSE_MAX_EVENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(MAX_EVENTS)
}

/// Compaction waits until the log holds this many events more than it keeps, so it is one rewrite per batch.
fn slack(max: u64) -> u64 {
    (max / 10).max(1)
}

fn parse_line(path: &Path, n: usize, line: &str) -> Result<SenseEvent, StoreError> {
    serde_json::from_str(line).map_err(|e| StoreError::Corrupt {
        path: format!("{} line {n}", path.display()),
        reason: e.to_string(),
    })
}

impl Store {
    /// The tenant's event log, relative to the store.
    pub(crate) fn sense_log(&self, tenant: &str) -> Result<PathBuf, StoreError> {
        Ok(self.tenant_dir(tenant)?.join("sense").join("events.jsonl"))
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
        if let Some(db) = &self.db {
            self.tenant_dir(tenant)?;
            return db.sense_append(tenant, new, dedupe, max_events());
        }
        let rel = self.sense_log(tenant)?;
        let p = self.home().join(&rel);
        let _lock = self.lock()?;
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        }
        let last = match edge_line(&p, false)? {
            Some(l) => Some(parse_line(&p, 0, &l)?),
            None => None,
        };
        if let Some(l) = last.as_ref().filter(|_| dedupe) {
            if l.pack_id == new.pack_id && l.reference == new.reference && l.payload == new.payload {
                return Ok(None);
            }
        }
        let event = SenseEvent {
            id: last.map_or(1, |l| l.id + 1),
            at: crate::model::clock::now_rfc3339(),
            pack_id: new.pack_id,
            reference: new.reference,
            payload: new.payload,
            principal: new.principal,
        };
        let mut line = serde_json::to_string(&event)
            .map_err(|e| StoreError::Corrupt { path: p.display().to_string(), reason: e.to_string() })?;
        line.push('\n');
        let mut f =
            OpenOptions::new().create(true).append(true).open(&p).map_err(|e| StoreError::io(&p, e))?;
        f.write_all(line.as_bytes()).map_err(|e| StoreError::io(&p, e))?;
        f.sync_data().map_err(|e| StoreError::io(&p, e))?;
        drop(f);
        self.compact_sense(&p, event.id)?;
        Ok(Some(event))
    }

    /// Rewrites the log (atomically) without the events past the count or age bound, when its first event is
    /// past either by a margin. The newest event is always kept, so ids never restart.
    fn compact_sense(&self, p: &Path, newest: u64) -> Result<(), StoreError> {
        let Some(first) = edge_line(p, true)? else { return Ok(()) };
        let first = parse_line(p, 1, &first)?;
        let max = max_events();
        let too_many = newest.saturating_sub(first.id) + 1 > max + slack(max);
        let cutoff = std::time::SystemTime::now() - MAX_AGE;
        let too_old = |at: &str| humantime::parse_rfc3339(at).is_ok_and(|t| t < cutoff);
        if !too_many && !too_old(&first.at) {
            return Ok(());
        }
        let keep_from = newest.saturating_sub(max) + 1;
        let text = std::fs::read_to_string(p).map_err(|e| StoreError::io(p, e))?;
        let mut out = String::with_capacity(text.len());
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let e = parse_line(p, i + 1, line)?;
            if e.id == newest || (e.id >= keep_from && !too_old(&e.at)) {
                out.push_str(line);
                out.push('\n');
            }
        }
        super::write_atomic(p, out.as_bytes(), 0o600).map_err(|e| StoreError::io(p, e))
    }

    /// `tenant`'s events with an id past `after`, oldest first. A line still being written (no newline yet)
    /// is left for the next read.
    pub fn sense_events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        if let Some(db) = &self.db {
            return db.sense_after(tenant, after);
        }
        let p = self.home().join(self.sense_log(tenant)?);
        let f = match std::fs::File::open(&p) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&p, e)),
        };
        let mut out = Vec::new();
        let mut reader = BufReader::new(f);
        let mut line = String::new();
        let mut n = 0;
        loop {
            line.clear();
            let read = reader.read_line(&mut line).map_err(|e| StoreError::io(&p, e))?;
            n += 1;
            if read == 0 || !line.ends_with('\n') {
                break;
            }
            if line.trim().is_empty() {
                continue;
            }
            let e = parse_line(&p, n, line.trim_end())?;
            if e.id > after {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// Woken at once when a Sense event is recorded on any replica (the PostgreSQL store); `None` for the file
    /// store, whose watchers poll.
    pub fn sense_wake(&self) -> Option<std::sync::Arc<super::pg::Live>> {
        self.db.as_ref().map(|d| d.live().clone())
    }

    /// What identifies the log's current content (inode, length, mtime): a watcher polls this and reads the log
    /// again only when it changed. `None` when there is no log yet.
    pub fn sense_version(&self, tenant: &str) -> Result<Option<(u64, u64, i64, i64)>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        if let Some(db) = &self.db {
            // The newest id stands for the log's content: ids only grow, and compaction keeps the newest.
            return Ok(Some((db.sense_last(tenant)?, 0, 0, 0)));
        }
        let p = self.home().join(self.sense_log(tenant)?);
        match std::fs::metadata(&p) {
            Ok(m) => Ok(Some((m.ino(), m.len(), m.mtime(), m.mtime_nsec()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&p, e)),
        }
    }
}

/// The first (`first`) or last complete line of `p`, reading only that end; `None` when missing or empty.
fn edge_line(p: &Path, first: bool) -> Result<Option<String>, StoreError> {
    let mut f = match std::fs::File::open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(p, e)),
    };
    if first {
        let mut line = String::new();
        BufReader::new(f).read_line(&mut line).map_err(|e| StoreError::io(p, e))?;
        let l = line.trim_end();
        return Ok((!l.is_empty()).then(|| l.to_string()));
    }
    let len = f.metadata().map_err(|e| StoreError::io(p, e))?.len();
    // A payload is at most MAX_PAYLOAD_BYTES; the rest of a line is names, a time and an id.
    let from = len.saturating_sub((MAX_PAYLOAD_BYTES as u64) * 2 + 4096);
    f.seek(SeekFrom::Start(from)).map_err(|e| StoreError::io(p, e))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| StoreError::io(p, e))?;
    let text = String::from_utf8_lossy(&buf);
    Ok(text.trim_end_matches('\n').rsplit('\n').next().filter(|l| !l.trim().is_empty()).map(str::to_string))
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
