//! The audit log (decisions.md §10): one JSON line per write that reached the adapter and per denied write.

use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::Write;

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
}

const AUDIT: &str = "audit.log";

impl Store {
    /// Appends one line under the store lock, in a single write.
    pub fn append_audit(&self, rec: &AuditRecord) -> Result<(), StoreError> {
        let mut line = serde_json::to_string(rec)
            .map_err(|e| StoreError::Corrupt { path: AUDIT.into(), reason: e.to_string() })?;
        line.push('\n');
        let _lock = self.lock()?;
        let p = self.path(AUDIT);
        let mut f =
            OpenOptions::new().create(true).append(true).open(&p).map_err(|e| StoreError::io(&p, e))?;
        f.write_all(line.as_bytes()).map_err(|e| StoreError::io(&p, e))?;
        f.sync_data().map_err(|e| StoreError::io(&p, e))
    }

    /// Every audit record, oldest first.
    pub fn audit(&self) -> Result<Vec<AuditRecord>, StoreError> {
        let p = self.path(AUDIT);
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&p, e)),
        };
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| StoreError::Corrupt {
                    path: format!("{} line {}", p.display(), i + 1),
                    reason: e.to_string(),
                })
            })
            .collect()
    }
}
