//! Sense events as files (see `crate::sense`): one JSON line per event in `<tenant dir>/sense/events.jsonl`,
//! appended (and fsynced) under the store lock with the next id of that tenant; retention is bounded by count
//! and age, enforced by an atomic rewrite when an append finds the log past either bound.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::Files;
use crate::backend::{Backend, SenseVersion};
use crate::sense::{max_events, sense_log, slack, NewEvent, SenseEvent, MAX_AGE, MAX_PAYLOAD_BYTES};
use crate::StoreError;

fn parse_line(path: &Path, n: usize, line: &str) -> Result<SenseEvent, StoreError> {
    serde_json::from_str(line).map_err(|e| StoreError::Corrupt {
        path: format!("{} line {n}", path.display()),
        reason: e.to_string(),
    })
}

impl Files {
    /// Appends `new` to `tenant`'s log with the next id (see `Store::append_sense`).
    pub(super) fn append_event(
        &self,
        tenant: &str,
        new: NewEvent,
        dedupe: bool,
    ) -> Result<Option<SenseEvent>, StoreError> {
        let p = self.home.join(sense_log(tenant)?);
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
        compact(&p, event.id)?;
        Ok(Some(event))
    }

    /// `tenant`'s events with an id past `after`, oldest first. A line still being written (no newline yet)
    /// is left for the next read.
    pub(super) fn events(&self, tenant: &str, after: u64) -> Result<Vec<SenseEvent>, StoreError> {
        let p = self.home.join(sense_log(tenant)?);
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

    /// The log's inode, length and mtime; `None` when there is no log yet.
    pub(super) fn events_version(&self, tenant: &str) -> Result<Option<SenseVersion>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        let p = self.home.join(sense_log(tenant)?);
        match std::fs::metadata(&p) {
            Ok(m) => Ok(Some((m.ino(), m.len(), m.mtime(), m.mtime_nsec()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&p, e)),
        }
    }
}

/// Rewrites the log (atomically) without the events past the count or age bound, when its first event is
/// past either by a margin. The newest event is always kept, so ids never restart.
fn compact(p: &Path, newest: u64) -> Result<(), StoreError> {
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
    crate::write_atomic(p, out.as_bytes(), 0o600).map_err(|e| StoreError::io(p, e))
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
