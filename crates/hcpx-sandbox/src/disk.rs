//! The disk a wrap call may fill: what its writable private directories hold in total (its `TMPDIR`, and its
//! working directory in `workspace` and `ephemeral` modes, a persistent workspace with what earlier calls left
//! in it) is measured before it runs, while it runs and after; a call past `max_disk_mb` is refused or stopped,
//! so neither one call nor many can fill the disk the store (and its audit log) lives on.
//! `max_file_mb` (`RLIMIT_FSIZE`) bounds each file; this bounds them all together.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a running call's directories are measured: a call may overshoot the cap by what it writes in this
/// time (and by one file of at most `max_file_mb`).
pub const CHECK_EVERY: Duration = Duration::from_millis(100);

/// Entries past this many are not walked (a call that makes this many has been stopped long before).
const MAX_ENTRIES: usize = 1_000_000;

/// The directories measured and the most a call may add to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiskCap {
    pub dirs: Vec<PathBuf>,
    pub max_bytes: u64,
}

/// What a call's directories hold past its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverCap {
    pub held: u64,
    pub max_bytes: u64,
}

impl DiskCap {
    /// The bytes the directories hold now (allocated blocks, so a sparse file counts what it really takes;
    /// every directory counts its own blocks too). Links are not followed; what cannot be read counts nothing.
    pub fn used(&self) -> u64 {
        let mut total = 0u64;
        let mut seen = 0usize;
        for d in &self.dirs {
            walk(d, &mut total, &mut seen);
        }
        total
    }

    /// `Some` when the directories hold more than the cap: everything counts, what earlier calls left in a
    /// persistent workspace included, so its disk is capped across calls, not only per call (#34).
    pub fn over(&self) -> Option<OverCap> {
        let held = self.used();
        (held > self.max_bytes).then_some(OverCap { held, max_bytes: self.max_bytes })
    }
}

fn walk(dir: &Path, total: &mut u64, seen: &mut usize) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return;
        }
        let Ok(m) = e.metadata() else { continue };
        *total = total.saturating_add(m.blocks().saturating_mul(512));
        if m.is_dir() {
            walk(&e.path(), total, seen);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_directory_gains_is_counted_and_a_link_is_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let cap = DiskCap { dirs: vec![t.path().to_path_buf()], max_bytes: 64 * 1024 };
        std::fs::create_dir(t.path().join("d")).unwrap();
        std::fs::write(t.path().join("d/f"), vec![7u8; 32 * 1024]).unwrap();
        assert!(cap.over().is_none());
        std::fs::write(t.path().join("g"), vec![7u8; 64 * 1024]).unwrap();
        let over = cap.over().unwrap();
        assert!(over.held >= 96 * 1024, "{over:?}");
        std::os::unix::fs::symlink("/usr", t.path().join("usr")).unwrap();
        assert!(cap.used() < 1 << 20);
    }
}
