//! `hcpx lint`: the three pack files exist and agree. Issues are values with a stable kind, a message and a fix.

pub mod kinds;

use serde::Serialize;
use std::path::Path;

pub use kinds::{LintKind, KINDS};

/// One lint issue, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintIssue {
    pub kind: LintKind,
    pub message: String,
    pub fix: String,
    pub file: String,
    pub pointer: String,
}

/// The whole lint result of one pack directory.
#[derive(Debug, Clone, Serialize)]
pub struct LintReport {
    pub ok: bool,
    pub pack_id: Option<String>,
    pub issues: Vec<LintIssue>,
}

/// Lints the pack in `dir`. Never fails: a missing or unreadable directory is itself an issue.
pub fn lint_dir(dir: &Path) -> LintReport {
    let analysis = crate::pack::analyze(dir);
    LintReport { ok: analysis.issues.is_empty(), pack_id: analysis.pack_id, issues: analysis.issues }
}

/// Collects issues while a pack is analysed.
#[derive(Debug, Default)]
pub(crate) struct Issues {
    pub(crate) list: Vec<LintIssue>,
}

impl Issues {
    pub(crate) fn push(
        &mut self,
        kind: LintKind,
        file: &str,
        pointer: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.list.push(LintIssue {
            kind,
            message: message.into(),
            fix: fix.into(),
            file: file.to_string(),
            pointer: pointer.into(),
        });
    }

    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn pointer_segment(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// Builds a JSON pointer from segments.
pub fn pointer(segments: &[&str]) -> String {
    segments.iter().map(|s| format!("/{}", pointer_segment(s))).collect()
}
