//! The read cache of the small files every call reads (`state.json`, `sandbox.json`, `principals.json`),
//! kept honest by an inotify watch on the store's directory so an unchanged file costs no `stat`.
//!
//! A cached value is used while its file is unchanged: same inode, size and modification time (every write
//! replaces the file by rename, so a change always shows in those). Checking that costs a `stat` per file
//! per call. Once a process reads the same file twice (a long-lived runtime: `hcpx serve`, `hcpx mcp`, a
//! library host), the cache also watches the store's directory: the kernel queues an event for a change in
//! it before the write or rename returns, so one non-blocking `read` of the watch says whether any cached
//! file may have changed, and only those are checked again. Two things no event reports are covered by a
//! bound instead: a value is trusted without a `stat` for at most [`TRUST`] (a file changed on another host
//! of a network filesystem, or in place through a hard link in another directory). Without inotify (or
//! after an overflow of its queue, or when the directory itself is moved) every lookup checks with `stat`.
//!
//! A process that makes one call and exits (the `hcpx` CLI) never watches ([`ReadCache::unwatched`]): closing an
//! inotify descriptor waits for the kernel to destroy its marks, an SRCU grace period counted in scheduler ticks,
//! and at exit that wait holds the process's end by 4 to 30 ms (docs/perf-log.md, "The tail of a
//! whole-process call").

use rustix::fs::inotify;
use std::any::Any;
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a value the watch vouches for is used without a `stat` (the bound for changes no event reports).
pub(super) const TRUST: Duration = Duration::from_secs(1);

/// What identifies one version of a file: inode, size, modification time.
pub(super) type FileKey = (u64, u64, i64, i64);

/// A parsed value, of the type its reader asked for.
pub(super) type Value = Arc<dyn Any + Send + Sync>;

/// One cached file: the version it was read at (`None`: the file did not exist), its parsed value, and
/// until when the watch vouches for it.
struct Entry {
    key: Option<FileKey>,
    value: Option<Value>,
    trusted_until: Option<Instant>,
}

/// The cached files and the watch that says when one may have changed.
#[derive(Default)]
struct Inner {
    files: HashMap<String, Entry>,
    watch: Option<Watch>,
    /// Whether creating the watch was tried (once per store; a failure leaves every lookup on `stat`).
    watch_tried: bool,
    /// Counts the drains that saw an event: a check that straddles one does not earn trust.
    changes: u64,
}

/// The store's read cache.
#[derive(Default)]
pub(super) struct ReadCache {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadCache")
    }
}

/// What a lookup found before any `stat`.
pub(super) enum Lookup {
    /// The watch vouches for this value (`None`: the file does not exist).
    Trusted(Option<Value>),
    /// Check the file: `cached` is what is held for it (its key and value), `ticket` what to hand back.
    Check { cached: Option<(Option<FileKey>, Option<Value>)>, ticket: Ticket },
}

/// What a check hands back to [`ReadCache::store`]: the count of changes seen when it began.
pub(super) struct Ticket {
    changes: u64,
}

impl ReadCache {
    /// A cache that checks with `stat` and never starts a watch: for a process that makes one call and exits,
    /// where a few `stat`s cost microseconds and closing a watch at exit costs milliseconds.
    pub(super) fn unwatched() -> ReadCache {
        ReadCache { inner: Mutex::new(Inner { watch_tried: true, ..Inner::default() }) }
    }

    /// Looks `rel` up: trusted when the watch vouches for it, else what to check it against.
    pub(super) fn lookup(&self, home: &Path, rel: &str) -> Lookup {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.drain();
        let watched = inner.watch.is_some() && is_top_level(rel);
        if watched {
            if let Some(e) = inner.files.get(rel) {
                if e.trusted_until.is_some_and(|t| Instant::now() < t) {
                    return Lookup::Trusted(e.value.clone());
                }
            }
        }
        let cached = inner.files.get(rel).map(|e| (e.key, e.value.clone()));
        // A second read of a file means a long-lived process: start watching (before the check it is about to
        // make, so nothing between the two goes unseen).
        if cached.is_some() && !inner.watch_tried {
            inner.watch_tried = true;
            inner.watch = Watch::new(home);
        }
        Lookup::Check { cached, ticket: Ticket { changes: inner.changes } }
    }

    /// Keeps what a check found for `rel`; trusted from now on only if no change was seen since it began.
    pub(super) fn store(&self, rel: &str, key: Option<FileKey>, value: Option<Value>, ticket: Ticket) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.drain();
        let trusted = inner.watch.is_some() && is_top_level(rel) && inner.changes == ticket.changes;
        let trusted_until = trusted.then(|| Instant::now() + TRUST);
        inner.files.insert(rel.to_string(), Entry { key, value, trusted_until });
    }

    /// Whether a watch is live (for tests and `hcpx doctor`-style reports).
    #[cfg(test)]
    pub(super) fn watching(&self) -> bool {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner).watch.is_some()
    }
}

impl Inner {
    /// Reads every queued event and withdraws trust from the files they name (from all of them when the
    /// queue overflowed or the watch ended).
    fn drain(&mut self) {
        let Some(watch) = &self.watch else { return };
        let mut names: Vec<String> = Vec::new();
        let mut all = false;
        let mut ended = false;
        let mut any = false;
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&watch.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(ev) => {
                    any = true;
                    let flags = ev.events();
                    if flags.intersects(
                        inotify::ReadFlags::QUEUE_OVERFLOW
                            | inotify::ReadFlags::IGNORED
                            | inotify::ReadFlags::DELETE_SELF
                            | inotify::ReadFlags::MOVE_SELF
                            | inotify::ReadFlags::UNMOUNT,
                    ) {
                        all = true;
                        ended |= !flags.contains(inotify::ReadFlags::QUEUE_OVERFLOW);
                    }
                    match ev.file_name().map(|n| n.to_str()) {
                        Some(Ok(n)) => names.push(n.to_string()),
                        Some(Err(_)) => {} // not a name this cache holds (they are all UTF-8)
                        None => {}
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    all = true;
                    ended = true;
                    break;
                }
            }
        }
        if !any && !all {
            return;
        }
        self.changes += 1;
        for (rel, e) in &mut self.files {
            if all || names.iter().any(|n| n == rel) {
                e.trusted_until = None;
            }
        }
        if ended {
            self.watch = None; // the directory went away or the watch broke: `stat` from now on
        }
    }
}

/// A file directly in the store's directory (the only ones the watch sees).
fn is_top_level(rel: &str) -> bool {
    !rel.contains('/')
}

/// An inotify watch on the store's directory, reporting every way a file in it can change.
struct Watch {
    fd: OwnedFd,
}

impl Watch {
    fn new(home: &Path) -> Option<Watch> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
        let flags = inotify::WatchFlags::CLOSE_WRITE
            | inotify::WatchFlags::MODIFY
            | inotify::WatchFlags::ATTRIB
            | inotify::WatchFlags::CREATE
            | inotify::WatchFlags::DELETE
            | inotify::WatchFlags::MOVED_FROM
            | inotify::WatchFlags::MOVED_TO
            | inotify::WatchFlags::DELETE_SELF
            | inotify::WatchFlags::MOVE_SELF
            | inotify::WatchFlags::ONLYDIR;
        inotify::add_watch(&fd, home, flags).ok()?;
        Some(Watch { fd })
    }
}
