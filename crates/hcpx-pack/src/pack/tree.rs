//! One bounded walk of a directory tree, never following links: the store digests an installed pack with it,
//! check's structure rules read the pack with it and its probes snapshot working directories with it.

use std::fs::{self, Metadata};
use std::path::Path;

/// Calls `f` with each entry's path relative to `dir` and its metadata (of the entry itself, not a link's
/// target). Descends into directories named so that `descend(name)` holds, at most `max_depth` levels, and
/// stops after `max_entries` entries. Returns false when it stopped early.
pub fn walk(
    dir: &Path,
    max_entries: usize,
    max_depth: usize,
    descend: &dyn Fn(&str) -> bool,
    f: &mut dyn FnMut(&str, &Metadata),
) -> bool {
    let mut stack = vec![(dir.to_path_buf(), String::new(), 0usize)];
    let mut seen = 0usize;
    while let Some((path, rel, depth)) = stack.pop() {
        let Ok(entries) = fs::read_dir(&path) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return false;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let Ok(m) = e.metadata() else { continue };
            f(&child, &m);
            if m.is_dir() && depth < max_depth && descend(&name) {
                stack.push((e.path(), child, depth + 1));
            }
        }
    }
    true
}
