//! `hcpx lint`: the three pack files exist and agree. Issues are values with a stable kind, a message and a
//! fix; their kinds and shape live in the model layer (`model::diagnostic`), so the pack loader can report them.

use serde::Serialize;
use std::path::Path;

pub use crate::model::diagnostic::{docs_markdown, LintIssue, LintKind, KINDS};

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
