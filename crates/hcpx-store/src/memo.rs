//! Digests remembered by what the kernel says of the files: a tree (or one file) whose every entry has the
//! inode, mode, size and change time recorded when it was last hashed still has the bytes it had then, so a
//! process that only checks it (every `hcpx exec` checks its pack and component) need not read and hash
//! megabytes again. Any write, rename, chmod or link changes an entry's change time, which no user can set back.
//! Only settled entries are remembered: a change within the same clock tick as the hashing could otherwise keep
//! its stat (git's "racily clean" rule). An entry is settled once the clock that stamps change times has moved
//! past it ([`FINE_SETTLED`], a tick or two, on a file system with sub-millisecond stamps), else once it is
//! [`SETTLED`] old.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::model::digest::{sha256_hex, Digest};

/// How old an entry's change time must be before its digest is remembered, on a file system that stamps times in
/// whole seconds or milliseconds (or when its change time happens to have no sub-millisecond part).
pub const SETTLED: Duration = Duration::from_secs(2);

/// On a file system that stamps finer times (ext4, XFS, Btrfs, tmpfs: nanoseconds), how far past an entry's
/// change time the kernel's stamping clock (`CLOCK_REALTIME_COARSE`, which moves once a tick) must be: any
/// later change is then stamped later, so it moves the entry's change time. More than any such file system's
/// stamp granularity (at most a millisecond, else [`SETTLED`] applies).
pub const FINE_SETTLED: Duration = Duration::from_millis(2);

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
        // The name, a NUL (no name holds one), then the numbers at fixed widths: no two entries read alike. Bytes,
        // not text: formatting eight numbers per entry was most of a warm call's check of its pack (#39).
        let mut stat = [0u8; 61];
        stat[1..9].copy_from_slice(&m.dev().to_le_bytes());
        stat[9..17].copy_from_slice(&m.ino().to_le_bytes());
        stat[17..21].copy_from_slice(&m.mode().to_le_bytes());
        stat[21..29].copy_from_slice(&m.size().to_le_bytes());
        stat[29..37].copy_from_slice(&m.mtime().to_le_bytes());
        stat[37..45].copy_from_slice(&m.mtime_nsec().to_le_bytes());
        stat[45..53].copy_from_slice(&m.ctime().to_le_bytes());
        stat[53..61].copy_from_slice(&m.ctime_nsec().to_le_bytes());
        self.h.update(name);
        self.h.update(stat);
        self.settled &= settled(m.ctime(), m.ctime_nsec());
    }

    fn finish(self) -> (String, bool) {
        let settled = self.settled && self.any;
        (self.h.finish(), settled)
    }
}

/// Whether a change time of `secs`.`nanos` is settled now (see the module's doc).
fn settled(secs: i64, nanos: i64) -> bool {
    settled_at(secs, nanos, if fine(nanos) { stamping_clock() } else { SystemTime::now() })
}

/// Whether a change time of `secs`.`nanos` is settled at `now`: the stamping clock's time for a [`fine`] stamp,
/// the system clock's otherwise.
fn settled_at(secs: i64, nanos: i64, now: SystemTime) -> bool {
    let wait = if fine(nanos) { FINE_SETTLED } else { SETTLED };
    now.duration_since(time_of(secs, nanos)).is_ok_and(|age| age >= wait)
}

/// Whether a stamp has a sub-millisecond part: the file system stamps finer than a millisecond.
fn fine(nanos: i64) -> bool {
    nanos % 1_000_000 != 0
}

/// The time `secs`.`nanos` after the epoch (the epoch itself for a negative part).
fn time_of(secs: i64, nanos: i64) -> SystemTime {
    UNIX_EPOCH
        + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
        + Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))
}

/// The clock the kernel stamps change times with (`CLOCK_REALTIME_COARSE`: the time of the last tick).
fn stamping_clock() -> SystemTime {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    time_of(t.tv_sec, t.tv_nsec)
}

/// Waits until whatever this process wrote before the call is settled on a file system with fine stamps (a
/// tick or two of the kernel's clock, a few milliseconds; at most 50 ms), so what an install has just written
/// can be remembered at once and its first call reads nothing its hundredth does not.
pub fn wait_until_settled() {
    let written = SystemTime::now();
    for _ in 0..50 {
        if stamping_clock().duration_since(written).is_ok_and(|d| d >= FINE_SETTLED) {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
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
            // Private to this user, whatever the umask, as the cache directory it may be the first to make.
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
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
        wait_until_settled();
        if !fine(std::fs::metadata(&p).unwrap().ctime_nsec()) {
            // A file system with coarse stamps: only age settles.
            std::thread::sleep(SETTLED + Duration::from_millis(100));
        }
        let d = digest_of(&memo, &p, &mut calls);
        assert_eq!(digest_of(&memo, &p, &mut calls), d);
        assert_eq!(calls, 1, "a settled file is not hashed again");
        // Same size, new bytes: the change time moved, so it is hashed again and the new digest is seen.
        std::fs::write(&p, b"two").unwrap();
        assert_eq!(digest_of(&memo, &p, &mut calls), sha256_hex(b"two"));
        // A mode change alone is seen too.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        digest_of(&memo, &p, &mut calls);
        assert_eq!(calls, 3);
    }

    #[test]
    fn a_change_time_settles_once_the_clock_that_stamps_it_has_moved_past_it() {
        let at = |secs: u64, nanos: u64| UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(nanos);
        // A fine stamp (ext4, tmpfs): settled once the stamping clock is FINE_SETTLED past it, not before.
        let (secs, nanos) = (1_000, 123_456_789);
        assert!(!settled_at(secs, nanos, at(1_000, 123_456_789)), "the same tick");
        assert!(!settled_at(secs, nanos, at(1_000, 125_456_788)));
        assert!(settled_at(secs, nanos, at(1_000, 125_456_789)));
        // A stamp in whole milliseconds (or coarser: FAT, some network file systems): SETTLED old.
        let (secs, nanos) = (1_000, 123_000_000);
        assert!(!settled_at(secs, nanos, at(1_001, 123_000_000)));
        assert!(settled_at(secs, nanos, at(1_002, 123_000_000)));
        // A change time in the future (a clock set back) never settles.
        assert!(!settled_at(2_000, 1, at(1_000, 0)));
        assert!(!settled_at(2_000, 0, at(1_000, 0)));
    }
}
