//! The audit log (docs/spec.md §18): one JSON line per write that reached the adapter and per denied write, and
//! one per Sense push (recorded or refused) and per refused Sense watch (`action`), and one per outgoing request of
//! a wrap call (`egress`),
//! each carrying the SHA-256 of the line before it, so an edited, deleted, inserted or reordered line, a cut
//! tail or an emptied log is found by `hcpx audit verify` (docs/security.md, The audit chain).
//!
//! The chain starts from a random genesis recorded in `audit.head`, which also holds the number of lines and
//! the hash of the last one (the head), rewritten under the store lock after every append. A full log is
//! rotated to `audit.log.N` and the chain goes on in a fresh `audit.log`, its first line pointing at the last
//! line of the file before. That is the file back end's log (`files::audit`); the database keeps one chain per
//! tenant (`pg::audit`). This module holds what both share: the records, and the calls the store answers.

use serde::{Deserialize, Serialize};
use std::path::Path;

use super::{Store, StoreError};
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
    /// One outgoing request of the command (not the command itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<AuditEgress>,
    /// An operator's change of a setting (`hcpx config set|unset`, `action` `config.set` or `config.unset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<AuditSetting>,
    /// The SHA-256 of the line before (the genesis for the first line); set by the store on append.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
}

/// One outgoing request of a wrap call through its egress proxy (#36 point 6, docs/egress.md, Events). No
/// `deny_unknown_fields`, so fields added later still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEgress {
    /// The host the request named, as sent (empty if no head was read).
    pub host: String,
    /// Its port (0 if no head was read).
    pub port: u16,
    /// `CONNECT`, `GET`, … (empty if no head was read).
    pub method: String,
    /// Bytes sent to the origin.
    pub bytes_up: u64,
    /// Bytes sent back to the client.
    pub bytes_down: u64,
    pub elapsed_ms: u64,
    /// `https` (CONNECT) or `http` (an absolute-form request); none if the request was never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// What the client was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The rule that allowed it (`https://api.example.com:443`), set even when it was refused later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The refusal's kind (`not_allowed`, `private_address`, …); none if the request went through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The refusal's one-line reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl AuditEgress {
    /// `allowed`, or the refusal's kind.
    pub fn class(&self) -> &str {
        self.refused.as_deref().unwrap_or("allowed")
    }
}

/// One setting an operator changed (`hcpx config`): which document, which key, its value before and after (none:
/// not set, so its default). Settings hold no secret; a value is recorded as it was written. No
/// `deny_unknown_fields`, so fields added later still read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditSetting {
    pub document: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<serde_json::Value>,
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
    /// `hcpx config set`: an operator set a setting (`setting` says which, and its values).
    #[serde(rename = "config.set")]
    ConfigSet,
    /// `hcpx config unset`: an operator took a setting back to its default.
    #[serde(rename = "config.unset")]
    ConfigUnset,
}

/// One row of the log as `hcpx audit` lists it: a record, or a line that does not parse, kept in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditRow {
    Record(Box<AuditRecord>),
    /// A damaged line: where it is (file and line, or database row) and why it does not parse.
    Unreadable {
        place: String,
        reason: String,
    },
}

pub(crate) const AUDIT: &str = "audit.log";
pub(crate) const HEAD: &str = "audit.head";
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
            egress: None,
            setting: None,
            prev: None,
        }
    }
}

impl Store {
    /// Appends one line under the store lock, chained to the line before, and records the new head.
    pub fn append_audit(&self, rec: &AuditRecord) -> Result<(), StoreError> {
        self.append_audit_after(rec, None)
    }

    /// Appends `recs` in order under one lock, each chained to the line before (a call's outgoing requests):
    /// one sync of the file store's log and head for all of them.
    pub fn append_audit_all(&self, recs: &[AuditRecord]) -> Result<(), StoreError> {
        self.backend.audit_append_all(recs)
    }

    /// Records, before a write runs, the line it gets if it never finishes (the PostgreSQL store: a replica
    /// killed mid-call); `None` for the file store, which has no other replica to write it.
    pub fn audit_intent(&self, rec: &AuditRecord) -> Result<Option<i64>, StoreError> {
        self.backend.audit_intent(rec)
    }

    /// Whether [`Store::audit_intent`] records anything: a write need not build the line it would record.
    pub fn records_intents(&self) -> bool {
        self.backend.records_intents()
    }

    /// Appends `rec`, clearing `intent` (see [`Store::audit_intent`]) in the same commit.
    pub fn append_audit_after(&self, rec: &AuditRecord, intent: Option<i64>) -> Result<(), StoreError> {
        self.backend.audit_append(rec, intent)
    }

    /// The recorded head, when a chain was started.
    pub fn audit_head(&self) -> Result<Option<AuditHead>, StoreError> {
        self.backend.audit_head()
    }

    /// The files of the log, oldest first: the unchained one, the rotated ones, the current one.
    pub fn audit_files(&self) -> Result<Vec<String>, StoreError> {
        Ok(log_files(self.home(), self.audit_head()?.as_ref()))
    }

    /// Every row of the log (all tenants when `tenant` is `None`), oldest first: a damaged line is an
    /// [`AuditRow::Unreadable`] in its place, so the readable rows around it are still listed.
    pub fn audit_rows(&self, tenant: Option<&str>) -> Result<Vec<AuditRow>, StoreError> {
        self.backend.audit_rows(tenant)
    }

    /// Every audit record, oldest first, across the rotated files.
    pub fn audit(&self) -> Result<Vec<AuditRecord>, StoreError> {
        self.audit_of(None)
    }

    /// The audit records of one tenant (all when `None`), oldest first. The database reads only that tenant's
    /// rows; the file store keeps one log and filters it.
    pub fn audit_of(&self, tenant: Option<&str>) -> Result<Vec<AuditRecord>, StoreError> {
        self.backend.audit_of(tenant)
    }
}

/// The files of the log under `home` whose chain is `head`, oldest first: the unchained one (when there is
/// one), the rotated ones, the current one.
pub(crate) fn log_files(home: &Path, head: Option<&AuditHead>) -> Vec<String> {
    let mut files = Vec::new();
    if crate::join(home, &format!("{AUDIT}.unchained")).exists() {
        files.push(format!("{AUDIT}.unchained"));
    }
    files.extend(chained_files(head));
    files
}

/// The files the chain of `head` runs through, oldest first: the rotated ones, then the current one.
pub(crate) fn chained_files(head: Option<&AuditHead>) -> Vec<String> {
    let rotated = head.map_or(0, |h| h.rotated);
    (1..=rotated).map(|n| format!("{AUDIT}.{n}")).chain(std::iter::once(AUDIT.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_line_reads_and_an_egress_row_round_trips() {
        let older = r#"{"at":"2026-12-03T00:00:00.000Z","principal":"ana","tenant":"local","invoker":"cli","pack_id":"ledger","verb_key":"transfer","operation":"write","ok":true,"args_sha256":"ab","prev":"cd"}"#;
        let rec: AuditRecord = serde_json::from_str(older).unwrap();
        assert_eq!(rec.egress, None);
        assert_eq!(serde_json::to_string(&rec).unwrap(), older);

        let egress = AuditEgress {
            host: "api.test".into(),
            port: 443,
            method: "CONNECT".into(),
            bytes_up: 10,
            bytes_down: 20,
            elapsed_ms: 3,
            scheme: Some("https".into()),
            status: Some(403),
            rule: None,
            refused: Some("not_allowed".into()),
            reason: Some("no rule names host api.test".into()),
        };
        assert_eq!(egress.class(), "not_allowed");
        let row = AuditRecord { egress: Some(egress.clone()), ok: false, ..rec };
        let text = serde_json::to_string(&row).unwrap();
        assert!(!text.contains("\"rule\""), "{text}");
        assert_eq!(serde_json::from_str::<AuditRecord>(&text).unwrap(), row);

        let allowed =
            AuditEgress { refused: None, reason: None, rule: Some("https://api.test:443".into()), ..egress };
        assert_eq!(allowed.class(), "allowed");
        let text = serde_json::to_string(&allowed).unwrap();
        assert!(!text.contains("refused") && text.contains("\"rule\""), "{text}");
        assert_eq!(serde_json::from_str::<AuditEgress>(&text).unwrap(), allowed);
    }
}
