//! `hcpx audit verify`: walks the audit chain from its recorded genesis through every rotated file to the
//! recorded head, and names the first broken link: an edited, deleted, inserted or reordered line, a missing
//! rotated file, a tail cut short of the head, an emptied log, or a head recorded elsewhere that the chain
//! no longer reaches.

use serde::Serialize;

use super::audit::{AuditHead, AuditRecord};
use super::{Store, StoreError};
use crate::model::digest::sha256_hex;
use crate::model::wire::wire_enum;

wire_enum! {
    /// What kind of break `verify` found.
    pub enum BreakKind ("break kind") {
        /// The log has lines, but no `audit.head` says where its chain starts and ends.
        NoHead = "no_head",
        /// A rotated file the head counts is gone.
        MissingFile = "missing_file",
        /// A line that is not an audit record.
        NotARecord = "not_a_record",
        /// The first line does not start from the recorded genesis.
        Genesis = "genesis",
        /// A line's `prev` is not the hash of the line before it.
        Link = "link",
        /// The line the head counts as last is not the recorded head.
        Head = "head",
        /// The chain ends before the recorded head.
        Truncated = "truncated",
        /// Every line is gone, though the head records some.
        Emptied = "emptied",
        /// A head recorded elsewhere (`--head`) is not a line of the chain.
        Anchor = "anchor",
    }
}

/// The first broken link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Break {
    pub kind: BreakKind,
    /// The file, and the line in it (1-based; 0 for the file as a whole).
    pub file: String,
    pub line: u64,
    pub message: String,
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verified {
    pub ok: bool,
    /// Lines checked across the chained files.
    pub lines: u64,
    /// The chained files, oldest first.
    pub files: Vec<String>,
    /// The recorded head: the hash to keep elsewhere and pass back as `--head` later.
    pub head: Option<String>,
    /// Lines after the recorded head (appended before a crash kept the head from being rewritten).
    pub unrecorded: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<Break>,
}

/// One chain as `hcpx doctor` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainVerdict {
    /// The tenant whose chain it is; `None` for the file store's one chain of every tenant.
    pub tenant: Option<String>,
    pub lines: u64,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub broken: Option<Break>,
}

impl ChainVerdict {
    pub(crate) fn of(tenant: Option<String>, v: Verified) -> ChainVerdict {
        ChainVerdict { tenant, lines: v.lines, ok: v.broken.is_none(), broken: v.broken }
    }
}

impl Store {
    /// Walks every chain on its own (each tenant's in the database, the one chain of the files).
    pub fn verify_each_chain(&self) -> Result<Vec<ChainVerdict>, StoreError> {
        self.backend.verify_chains()
    }

    /// Walks the chain; `anchor` is a head recorded elsewhere earlier, which must be a line of the chain.
    pub fn verify_audit(&self, anchor: Option<&str>) -> Result<Verified, StoreError> {
        self.verify_audit_of(None, anchor)
    }

    /// As [`Store::verify_audit`]; in the database each tenant has its own chain, and `tenant` picks one.
    pub fn verify_audit_of(
        &self,
        tenant: Option<&str>,
        anchor: Option<&str>,
    ) -> Result<Verified, StoreError> {
        self.backend.verify_audit(tenant, anchor)
    }
}

/// `--tenant NAME` named a tenant with no audited call.
pub(crate) fn no_chain(tenant: &str) -> StoreError {
    StoreError::Refused(format!(
        "tenant {tenant:?} has no audit chain here: no call of it was ever audited in this store; check the name (hcpx principal list shows each Principal's tenant), or verify every tenant without --tenant"
    ))
}

/// Checks the lines of each `(name, text)` in order against the chain from `head`'s genesis.
pub(crate) fn walk_texts(
    head: &AuditHead,
    texts: &[(String, String)],
    anchor: Option<&str>,
    seen_anchor: &mut bool,
    n: &mut u64,
) -> Option<Break> {
    let mut expected = head.genesis.clone();
    for (file, text) in texts {
        let body = text.strip_suffix('\n').unwrap_or(text);
        if body.is_empty() {
            continue;
        }
        for (i, line) in body.split('\n').enumerate() {
            let at = i as u64 + 1;
            let brk = |kind, message: String| Some(Break { kind, file: file.clone(), line: at, message });
            let Ok(rec) = serde_json::from_str::<AuditRecord>(line) else {
                return brk(
                    BreakKind::NotARecord,
                    format!("{file} line {at} is not an audit record: a line was inserted or damaged"),
                );
            };
            if rec.prev.as_deref() != Some(expected.as_str()) {
                if *n == 0 {
                    return brk(BreakKind::Genesis, format!("{file} line {at}, the first of the chain, does not start from the recorded genesis: lines were removed from the start, or the log was replaced"));
                }
                return brk(BreakKind::Link, format!("{file} line {at} does not follow the line before it: that line was edited, or a line was deleted, inserted or moved here"));
            }
            expected = sha256_hex(line.as_bytes());
            *n += 1;
            if anchor == Some(expected.as_str()) {
                *seen_anchor = true;
            }
            if *n == head.lines && expected != head.head {
                return brk(BreakKind::Head, format!("{file} line {at} is where the recorded head should be, and it differs from it: the end of the log was rewritten"));
            }
        }
    }
    None
}

/// The verdict on one chain whose lines were walked: truncation, emptying and a missing anchor added.
pub(crate) fn conclude(
    mut v: Verified,
    head: &AuditHead,
    file: &str,
    anchor: Option<&str>,
    seen_anchor: bool,
) -> Verified {
    if v.broken.is_none() && v.lines < head.lines {
        let (kind, message) = if v.lines == 0 {
            (
                BreakKind::Emptied,
                format!(
                    "the log holds no line, but the recorded head is line {}: it was emptied or removed",
                    head.lines
                ),
            )
        } else {
            (BreakKind::Truncated, format!("the chain ends at line {}, but the recorded head is line {}: lines were cut from its end", v.lines, head.lines))
        };
        v.broken = Some(Break { kind, file: file.into(), line: v.lines, message });
    }
    if v.broken.is_none() && !seen_anchor {
        v.broken = Some(Break {
            kind: BreakKind::Anchor,
            file: file.into(),
            line: 0,
            message: format!("the head you recorded, {}, is no line of the chain: the log was rewritten after it was recorded", anchor.unwrap_or_default()),
        });
    }
    v.unrecorded = v.lines.saturating_sub(head.lines);
    v.ok = v.broken.is_none();
    v
}

/// Verifies one chain given as its head and lines (a tenant's chain in the database, or an exported one).
pub fn verify_lines(head: &AuditHead, name: &str, lines: &[String], anchor: Option<&str>) -> Verified {
    let mut seen_anchor = anchor.is_none() || anchor == Some(head.genesis.as_str());
    let mut n = 0;
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    let broken = walk_texts(head, &[(name.to_string(), text)], anchor, &mut seen_anchor, &mut n);
    let v = Verified {
        ok: true,
        lines: n,
        files: vec![name.to_string()],
        head: Some(head.head.clone()),
        unrecorded: 0,
        broken,
    };
    conclude(v, head, name, anchor, seen_anchor)
}

/// Verifies an exported chain: `log` (JSON lines) with its head beside it (`<log without .log>.head`).
pub fn verify_exported(log: &std::path::Path, anchor: Option<&str>) -> Result<Verified, StoreError> {
    let head_path = log.with_extension("head");
    let head_text = std::fs::read_to_string(&head_path).map_err(|e| StoreError::io(&head_path, e))?;
    let head: AuditHead = serde_json::from_str(&head_text)
        .map_err(|e| StoreError::Corrupt { path: head_path.display().to_string(), reason: e.to_string() })?;
    let text = std::fs::read_to_string(log).map_err(|e| StoreError::io(log, e))?;
    let lines: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    Ok(verify_lines(&head, &log.display().to_string(), &lines, anchor))
}
