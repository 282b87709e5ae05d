//! Digests remembered by what the kernel says of the files: a tree (or one file) whose every entry has the
//! inode, mode, size and change time recorded when it was last hashed still has the bytes it had then, so a
//! process that only checks it (every `hcpx exec` checks its pack and component) need not read and hash
//! megabytes again. Any write, rename, chmod or link changes an entry's change time, which no user can set back.
//! Only entries whose change time was at least [`SETTLED`] old when they were hashed are remembered: a change
//! within the same clock tick as the hashing could otherwise keep its stat (git's "racily clean" rule).

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::digest::{sha256_hex, Digest};

/// How old an entry's change time must be before its digest is remembered.
pub const SETTLED: Duration = Duration::from_secs(2);

/// Where remembered digests live: one small file per tree, named by the SHA-256 of the tree's path.
#[derive(Debug, Clone)]
pub struct Memo {
    /// `None`: remembers nothing (a directory that cannot be trusted to hold digests).
    dir: Option<PathBuf>,
}

/// What the kernel says of a set of entries, condensed, and whether every one of them is settled.
pub struct Fingerprint {
    h: Digest,
    settled: bool,
    any: bool,
}

impl Default for Fingerprint {
    fn default() -> Fingerprint {
        Fingerprint::new()
    }
}

impl Fingerprint {
    pub fn new() -> Fingerprint {
        Fingerprint { h: Digest::new(), settled: true, any: false }
    }

    /// Adds entry `name` with its metadata (of the entry itself, not a link's target).
    pub fn add(&mut self, name: &[u8], m: &Metadata) {
        self.any = true;
        self.h.update(name);
        self.h.update(
            format!(
                "\0{}:{}:{:o}:{}:{}.{}:{}.{}\n",
                m.dev(),
                m.ino(),
                m.mode(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec()
            )
            .as_bytes(),
        );
        let changed = UNIX_EPOCH
            + Duration::from_secs(u64::try_from(m.ctime()).unwrap_or(0))
            + Duration::from_nanos(u64::try_from(m.ctime_nsec()).unwrap_or(0));
        let settled = SystemTime::now().duration_since(changed).is_ok_and(|age| age >= SETTLED);
        self.settled &= settled;
    }

    fn finish(self) -> (String, bool) {
        let settled = self.settled && self.any;
        (self.h.finish(), settled)
    }
}

impl Memo {
    /// Remembers under `dir` (created when first written).
    pub fn new(dir: PathBuf) -> Memo {
        Memo { dir: Some(dir) }
    }

    /// A memo that remembers nothing: every digest is computed.
    pub fn off() -> Memo {
        Memo { dir: None }
    }

    /// The digest of `of` as its fingerprint says it is, computing it with `compute` (and remembering it when
    /// every entry is settled) only when the fingerprint is not the one remembered.
    pub fn digest(&self, of: &Path, fingerprint: Fingerprint, compute: impl FnOnce() -> String) -> String {
        let (fp, settled) = fingerprint.finish();
        let Some(dir) = &self.dir else {
            return compute();
        };
        let file = dir.join(sha256_hex(of.as_os_str().as_encoded_bytes()));
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Some((seen, digest)) = text.trim().split_once(' ') {
                if seen == fp && digest.len() == 64 {
                    return digest.to_string();
                }
            }
        }
        let digest = compute();
        if settled && digest.len() == 64 {
            let _ = std::fs::create_dir_all(dir);
            let _ = super::write_atomic(&file, format!("{fp} {digest}\n").as_bytes(), 0o600);
        }
        digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn digest_of(memo: &Memo, p: &Path, calls: &mut u32) -> String {
        let mut fp = Fingerprint::new();
        fp.add(b"f", &std::fs::symlink_metadata(p).unwrap());
        memo.digest(p, fp, || {
            *calls += 1;
            sha256_hex(&std::fs::read(p).unwrap())
        })
    }

    #[test]
    fn a_settled_file_is_hashed_once_and_any_change_is_hashed_again() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("f");
        std::fs::write(&p, b"one").unwrap();
        let memo = Memo::new(t.path().join("memo"));
        let mut calls = 0;
        // Fresh: not settled, so not remembered.
        digest_of(&memo, &p, &mut calls);
        digest_of(&memo, &p, &mut calls);
        assert_eq!(calls, 2);
        std::thread::sleep(SETTLED + Duration::from_millis(100));
        let d = digest_of(&memo, &p, &mut calls);
        assert_eq!(digest_of(&memo, &p, &mut calls), d);
        assert_eq!(calls, 3, "a settled file is not hashed again");
        // Same size, new bytes: the change time moved, so it is hashed again and the new digest is seen.
        std::fs::write(&p, b"two").unwrap();
        assert_eq!(digest_of(&memo, &p, &mut calls), sha256_hex(b"two"));
        // A mode change alone is seen too.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        digest_of(&memo, &p, &mut calls);
        assert_eq!(calls, 5);
    }
}
