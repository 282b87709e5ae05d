//! The audit log (docs/spec.md §18): one JSON line per write that reached the adapter and per denied write, and
//! one per Sense push (recorded or refused) and per refused Sense watch (`action`),
//! each carrying the SHA-256 of the line before it, so an edited, deleted, inserted or reordered line, a cut
//! tail or an emptied log is found by `hcpx audit verify` (docs/security.md, The audit chain).
//!
//! The chain starts from a random genesis recorded in `audit.head`, which also holds the number of lines and
//! the hash of the last one (the head), rewritten under the store lock after every append. A full log is
//! rotated to `audit.log.N` and the chain goes on in a fresh `audit.log`, its first line pointing at the last
//! line of the file before.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom, Write};

use super::{Store, StoreError};
use crate::model::digest::sha256_hex;
use crate::model::{Code, Invoker};
use crate::pack::Operation;

/// One audit line, with the attribution tuple; arguments only as their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    pub at: String,
    pub principal: String,
    pub tenant: String,
    pub invoker: Invoker,
    pub pack_id: String,
    pub verb_key: String,
    pub operation: Operation,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Code>,
    pub args_sha256: String,
    /// The project a `project`-mode write ran in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_dir: Option<String>,
    /// What the line records when it is not a command: a Sense push (`pack_id` the pack, `verb_key` its
    /// trigger ref, `args_sha256` the payload's) or a refused Sense watch (`verb_key` `*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<AuditAction>,
    /// The person's approval this row is about (`sandbox.json` `human_approval`): the one a write waits for, the
    /// one it ran with, or the one decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// On an approver's row: `approved` or `refused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// `unknown`: the write was admitted and its replica stopped before it answered, so whether its command
    /// ran (a payment may have been made) cannot be said; never `cancelled`, which says it was stopped (#34).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The SHA-256 of the line before (the genesis for the first line); set by the store on append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
}

/// What is known of a write's outcome when its line was not written by the replica that ran it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its replica stopped mid-call: it may or may not have run.
    Unknown,
}

/// A line that records something other than a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AuditAction {
    /// `hcpx sense emit` or `POST /v1/sense/{pack}/{ref}`: recorded, or refused with its code.
    #[serde(rename = "sense.emit")]
    SenseEmit,
    /// `hcpx sense watch` or `GET /v1/sense`, refused.
    #[serde(rename = "sense.watch")]
    SenseWatch,
}

/// One row of the log as `hcpx audit` lists it: a record, or a line that does not parse, kept in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditRow {
    Record(AuditRecord),
    /// A damaged line: where it is (file and line, or database row) and why it does not parse.
    Unreadable {
        place: String,
        reason: String,
    },
}

const AUDIT: &str = "audit.log";
const HEAD: &str = "audit.head";
/// A log that grew past this many bytes is rotated before the next append (`HCP_AUDIT_ROTATE_BYTES`).
pub const ROTATE_BYTES: u64 = 16 << 20;

/// `audit.head`: where the chain starts and where it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditHead {
    /// The random value the first line's `prev` holds.
    pub genesis: String,
    /// Lines in the chain, across every file.
    pub lines: u64,
    /// The SHA-256 of the last line (the genesis while there is none).
    pub head: String,
    /// Rotated files, `audit.log.1` … `audit.log.N`, oldest first.
    pub rotated: u64,
}

fn rotate_bytes() -> u64 {
    std::env::var("HCP_AUDIT_ROTATE_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(ROTATE_BYTES)
}

impl AuditRecord {
    /// A line attributed to `principal` for `pack_id`.`verb_key`, stamped now, ok, with no arguments, project,
    /// approval or action: the caller fills in what its line records (the store sets `prev` when it appends).
    pub fn attributed(
        principal: &crate::model::Principal,
        pack_id: &str,
        verb_key: &str,
        operation: Operation,
    ) -> AuditRecord {
        AuditRecord {
            at: crate::model::clock::now_rfc3339(),
            principal: principal.id.clone(),
            tenant: principal.tenant.clone(),
            invoker: principal.invoker,
            pack_id: pack_id.to_string(),
            verb_key: verb_key.to_string(),
            operation,
            ok: true,
            code: None,
            args_sha256: String::new(),
            project_dir: None,
            approval: None,
            decision: None,
            outcome: None,
            action: None,
            prev: None,
        }
    }
}

impl Store {
    /// Appends one line under the store lock, chained to the line before, and records the new head.
    pub fn append_audit(&self, rec: &AuditRecord) -> Result<(), StoreError> {
        self.append_audit_after(rec, None)
    }

    /// Records, before a write runs, the line it gets if it never finishes (the PostgreSQL store: a replica
    /// killed mid-call); `None` for the file store, which has no other replica to write it.
    pub fn audit_intent(&self, rec: &AuditRecord) -> Result<Option<i64>, StoreError> {
        match &self.db {
            Some(db) => db.audit_intent(rec).map(Some),
            None => Ok(None),
        }
    }

    /// Appends `rec`, clearing `intent` (see [`Store::audit_intent`]) in the same commit.
    pub fn append_audit_after(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<(), StoreError> {
        if let Some(db) = &self.db {
            // One chain per tenant, serialized by the database (pg/audit.rs), not by the store lock.
            return db.audit_append(rec, intent).map(|_| ());
        }
        let _lock = self.lock()?;
        let mut head = match self.read_json::<AuditHead>(HEAD)? {
            Some(h) => h,
            None => self.start_chain()?,
        };
        let p = self.path(AUDIT);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() >= rotate_bytes()) {
            let to = self.path(&format!("{AUDIT}.{}", head.rotated + 1));
            std::fs::rename(&p, &to).map_err(|e| StoreError::io(&p, e))?;
            head.rotated += 1;
        }
        // The head is what the next line points at. A last line that is not the head is taken in only when it
        // points at the head itself (appended before a crash kept the head from being rewritten); any other
        // last line was changed, and the new line still points at the recorded head, so `verify` shows it.
        let prev = match last_line(&p)? {
            Some(l) => {
                let h = sha256_hex(l.as_bytes());
                let lagged = h != head.head
                    && serde_json::from_str::<AuditRecord>(&l)
                        .is_ok_and(|r| r.prev.as_deref() == Some(&head.head));
                if lagged {
                    head.lines += 1;
                    h
                } else {
                    head.head.clone()
                }
            }
            None => head.head.clone(),
        };
        let rec = AuditRecord { prev: Some(prev), ..rec.clone() };
        let mut line = serde_json::to_string(&rec)
            .map_err(|e| StoreError::Corrupt { path: AUDIT.into(), reason: e.to_string() })?;
        let hash = sha256_hex(line.as_bytes());
        line.push('\n');
        let mut f =
            OpenOptions::new().create(true).append(true).open(&p).map_err(|e| StoreError::io(&p, e))?;
        f.write_all(line.as_bytes()).map_err(|e| StoreError::io(&p, e))?;
        f.sync_data().map_err(|e| StoreError::io(&p, e))?;
        head.lines += 1;
        head.head = hash;
        self.write_json_mode(HEAD, &head, 0o600)
    }

    /// A new chain: a random genesis. A log written before chains existed is kept aside as
    /// `audit.log.unchained` (listed, never verified) so the chain covers only what it can vouch for.
    fn start_chain(&self) -> Result<AuditHead, StoreError> {
        let p = self.path(AUDIT);
        if std::fs::metadata(&p).is_ok_and(|m| m.len() > 0) {
            let aside = self.path(&format!("{AUDIT}.unchained"));
            std::fs::rename(&p, &aside).map_err(|e| StoreError::io(&p, e))?;
        }
        let seed = super::random_bytes::<32>()?;
        let genesis = sha256_hex(&seed);
        Ok(AuditHead { head: genesis.clone(), genesis, lines: 0, rotated: 0 })
    }

    /// The recorded head, when a chain was started.
    pub fn audit_head(&self) -> Result<Option<AuditHead>, StoreError> {
        if let Some(db) = &self.db {
            let local = super::principals::LOCAL_TENANT;
            return db.audit_head(local);
        }
        self.read_json(HEAD)
    }

    /// The files of the log, oldest first: the unchained one, the rotated ones, the current one.
    pub fn audit_files(&self) -> Result<Vec<String>, StoreError> {
        let mut files = Vec::new();
        if self.path(&format!("{AUDIT}.unchained")).exists() {
            files.push(format!("{AUDIT}.unchained"));
        }
        files.extend(chained_files(self.audit_head()?.as_ref()));
        Ok(files)
    }

    /// Every row of the log (all tenants when `tenant` is `None`), oldest first: a damaged line is an
    /// [`AuditRow::Unreadable`] in its place, so the readable rows around it are still listed.
    pub fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        let texts: Vec<(String, String)> = match &self.db {
            Some(db) => db
                .audit_lines(tenant)?
                .into_iter()
                .enumerate()
                .map(|(i, l)| (format!("postgres:audit row {}", i + 1), l))
                .collect(),
            None => self.audit_file_lines()?,
        };
        let mut rows: Vec<AuditRow> = texts
            .into_iter()
            .map(|(place, l)| match serde_json::from_str::<AuditRecord>(&l) {
                Ok(r) => AuditRow::Record(r),
                Err(e) => AuditRow::Unreadable { place, reason: e.to_string() },
            })
            .collect();
        if let (Some(t), None) = (tenant, &self.db) {
            rows.retain(|r| !matches!(r, AuditRow::Record(r) if r.tenant != t));
        }
        Ok(rows)
    }

    /// The non-empty lines of the log's files, oldest first, each with its place (`PATH line N`).
    fn audit_file_lines(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::new();
        for file in self.audit_files()? {
            let p = self.path(&file);
            let text = match std::fs::read(&p) {
                Ok(t) => String::from_utf8_lossy(&t).into_owned(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::io(&p, e)),
            };
            for (i, l) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                out.push((format!("{} line {}", p.display(), i + 1), l.to_string()));
            }
        }
        Ok(out)
    }

    /// Every audit record, oldest first, across the rotated files.
    pub fn audit(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_of(None)
    }

    /// The audit records of one tenant (all when `None`), oldest first. The database reads only that tenant's
    /// rows; the file store keeps one log and filters it.
    pub fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        if let Some(db) = &self.db {
            return db
                .audit_lines(tenant)?
                .iter()
                .enumerate()
                .map(|(i, l)| {
                    serde_json::from_str(l).map_err(|e| StoreError::Corrupt {
                        path: format!("postgres:audit row {}", i + 1),
                        reason: e.to_string(),
                    })
                })
                .collect();
        }
        let mut all = self.audit_files_records()?;
        if let Some(t) = tenant {
            all.retain(|r| r.tenant == t);
        }
        Ok(all)
    }

    fn audit_files_records(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_file_lines()?
            .into_iter()
            .map(|(place, l)| {
                serde_json::from_str(&l)
                    .map_err(|e| StoreError::Corrupt { path: place, reason: e.to_string() })
            })
            .collect()
    }
}

/// The files the chain of `head` runs through, oldest first: the rotated ones, then the current one.
pub(super) fn chained_files(head: Option<&AuditHead>) -> Vec<String> {
    let rotated = head.map_or(0, |h| h.rotated);
    (1..=rotated).map(|n| format!("{AUDIT}.{n}")).chain(std::iter::once(AUDIT.to_string())).collect()
}

/// The last line of `p` (without its newline), reading only its tail; `None` when the file is missing or empty.
fn last_line(p: &std::path::Path) -> Result<Option<String>, StoreError> {
    let mut f = match std::fs::File::open(p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(p, e)),
    };
    let len = f.metadata().map_err(|e| StoreError::io(p, e))?.len();
    if len == 0 {
        return Ok(None);
    }
    // An audit line is well under 64 KiB (its fields are names, a time, two hashes and a path).
    let from = len.saturating_sub(64 * 1024);
    f.seek(SeekFrom::Start(from)).map_err(|e| StoreError::io(p, e))?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| StoreError::io(p, e))?;
    let text = String::from_utf8_lossy(&buf);
    Ok(text.trim_end_matches('\n').rsplit('\n').next().map(str::to_string))
}
