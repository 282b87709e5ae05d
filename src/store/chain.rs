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

impl Store {
    /// Walks the chain; `anchor` is a head recorded elsewhere earlier, which must be a line of the chain.
    pub fn verify_audit(&self, anchor: Option<&str>) -> Result<Verified, StoreError> {
        let head = self.audit_head()?;
        let files = super::audit::chained_files(head.as_ref());
        let mut v = Verified {
            ok: true,
            lines: 0,
            files: files.clone(),
            head: head.as_ref().map(|h| h.head.clone()),
            unrecorded: 0,
            broken: None,
        };
        let Some(head) = head else {
            let current = self.path("audit.log");
            if std::fs::metadata(&current).is_ok_and(|m| m.len() > 0) {
                v.broken = Some(Break {
                    kind: BreakKind::NoHead,
                    file: "audit.head".into(),
                    line: 0,
                    message: "audit.log has lines but audit.head, which records where its chain starts and ends, is missing: it was removed, and the log cannot be vouched for".into(),
                });
                v.ok = false;
            }
            return Ok(v);
        };
        let mut seen_anchor = anchor.is_none() || anchor == Some(head.genesis.as_str());
        v.broken = walk(self, &head, &files, anchor, &mut seen_anchor, &mut v.lines)?;
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
            v.broken = Some(Break { kind, file: "audit.log".into(), line: v.lines, message });
        }
        if v.broken.is_none() && !seen_anchor {
            v.broken = Some(Break {
                kind: BreakKind::Anchor,
                file: "audit.log".into(),
                line: 0,
                message: format!("the head you recorded, {}, is no line of the chain: the log was rewritten after it was recorded", anchor.unwrap_or_default()),
            });
        }
        v.unrecorded = v.lines.saturating_sub(head.lines);
        v.ok = v.broken.is_none();
        Ok(v)
    }
}

/// Checks every line of `files` against the chain; the first break, if any.
fn walk(
    store: &Store,
    head: &AuditHead,
    files: &[String],
    anchor: Option<&str>,
    seen_anchor: &mut bool,
    n: &mut u64,
) -> Result<Option<Break>, StoreError> {
    let mut expected = head.genesis.clone();
    for file in files {
        let p = store.path(file);
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file == "audit.log" => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Some(Break {
                    kind: BreakKind::MissingFile,
                    file: file.clone(),
                    line: 0,
                    message: format!("{file}, a rotated part of the chain, is missing: it was removed"),
                }));
            }
            Err(e) => return Err(StoreError::io(&p, e)),
        };
        let body = text.strip_suffix('\n').unwrap_or(&text);
        if body.is_empty() {
            continue;
        }
        for (i, line) in body.split('\n').enumerate() {
            let at = i as u64 + 1;
            let brk = |kind, message: String| Ok(Some(Break { kind, file: file.clone(), line: at, message }));
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
    Ok(None)
}
