//! Diagnostics: what the pack loader, lint and check report about a pack file — a stable kind, a message,
//! the fix, the file and a JSON pointer.

use serde::Serialize;

pub use super::lint_kinds::{docs_markdown, KindInfo, LintKind, KINDS};

/// One lint issue, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintIssue {
    pub kind: LintKind,
    pub message: String,
    pub fix: String,
    pub file: String,
    pub pointer: String,
}

/// Collects issues while a pack is analysed.
#[derive(Debug, Default)]
pub struct Issues {
    pub list: Vec<LintIssue>,
}

impl Issues {
    pub fn push(
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

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn pointer_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_pointer_segment(&mut out, s);
    out
}

/// Appends `segment`, escaped as [`pointer_segment`] escapes it (`~` as `~0`, `/` as `~1`), to `out`: for a walk
/// that grows one pointer in place.
pub fn push_pointer_segment(out: &mut String, segment: &str) {
    for c in segment.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// Builds a JSON pointer from segments.
pub fn pointer(segments: &[&str]) -> String {
    segments.iter().map(|s| format!("/{}", pointer_segment(s))).collect()
}
