//! A wrap call's private `TMPDIR`, and, in a long-lived server, the reuse of emptied ones: making and removing
//! a directory per call was the largest cost a served wrap call could shed (docs/perf-log.md, #39: on ext4 the
//! kernel's search for a free inode skips every one freed recently, and a server frees one per call, holding
//! the parent's lock meanwhile). A directory is reused only when nothing of the call that had it can reach it
//! again: the call ran in a PID namespace of its own, so every process of it was gone when its first one was
//! reaped, and it had no UNIX socket that could hand a descriptor of it to a process outside. Before reuse it is
//! emptied, loses every extended attribute (an ACL, a note left for the next call) and is set back to `0700`,
//! and it is renamed to a fresh random name; a directory any of that fails for is removed, as every one is
//! outside a server.

use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The name every call's `TMPDIR` starts with.
const PREFIX: &str = "hcpx-call-";
/// The most emptied directories kept for the next calls (what a server runs at once, at most, is plenty).
const KEEP: usize = 64;

static REUSE: AtomicBool = AtomicBool::new(false);
static POOL: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Turns reuse on (a long-lived server, which calls [`stop_reuse`] before it exits) or leaves it off (every
/// one-shot command: a directory kept at exit would be left behind).
pub fn start_reuse() {
    REUSE.store(true, Ordering::SeqCst);
}

/// Turns reuse off and removes every directory kept; a call still running removes its own when it ends.
pub fn stop_reuse() {
    REUSE.store(false, Ordering::SeqCst);
    let kept = POOL.lock().map(|mut p| std::mem::take(&mut *p)).unwrap_or_default();
    for dir in kept {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// How many emptied directories wait for a call (for tests and `hcpx doctor`-like reports).
pub fn kept() -> usize {
    POOL.lock().map(|p| p.len()).unwrap_or(0)
}

/// A call's `TMPDIR`: a fresh directory (or a kept one under a fresh name), mode `0700`, removed or kept when
/// dropped.
#[derive(Debug)]
pub struct CallTmp {
    path: PathBuf,
    reusable: bool,
}

impl CallTmp {
    /// A directory of the call's own in the system's temporary directory.
    pub fn new() -> io::Result<CallTmp> {
        let parent = std::env::temp_dir();
        if REUSE.load(Ordering::SeqCst) {
            while let Some(old) = POOL.lock().ok().and_then(|mut p| p.pop()) {
                if let Ok(path) = renamed(&parent, &old) {
                    return Ok(CallTmp { path, reusable: false });
                }
                let _ = std::fs::remove_dir_all(&old);
            }
        }
        // 0700, as a kept one is set back to: no other user lists what the call writes there.
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)?;
        Ok(CallTmp { path: dir.keep(), reusable: false })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Says that nothing of the call can reach the directory any more: the call ran in a PID namespace of its
    /// own and was reaped, and had no UNIX socket to hand a descriptor of it out (see the module's note).
    pub fn call_ended_in_own_pid_namespace(&mut self, had_unix_sockets: bool) {
        self.reusable = !had_unix_sockets;
    }
}

impl Drop for CallTmp {
    fn drop(&mut self) {
        if self.reusable && REUSE.load(Ordering::SeqCst) && emptied(&self.path).is_ok() {
            if let Ok(mut p) = POOL.lock() {
                if p.len() < KEEP && REUSE.load(Ordering::SeqCst) {
                    p.push(std::mem::take(&mut self.path));
                    return;
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// `old` moved to a fresh random name beside it (never over an existing one).
fn renamed(parent: &Path, old: &Path) -> io::Result<PathBuf> {
    let file = tempfile::Builder::new().prefix(PREFIX).make_in(parent, |new| {
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            old,
            rustix::fs::CWD,
            new,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(io::Error::from)
    })?;
    let (_, path) = file.keep().map_err(|e| e.error)?;
    Ok(path)
}

/// Makes `dir` as a fresh one: every entry removed, every extended attribute removed, mode `0700`; then checks
/// it is an empty directory of this process's user with that mode and no attribute left.
fn emptied(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(io::Error::other("not a directory of ours"));
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    let fd = rustix::fs::open(
        dir,
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::DIRECTORY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    // Room for the names of a few attributes, on the stack (zeroing the kernel's 64 KiB list limit per call
    // showed in the profile): a directory given more is not reused (ERANGE), but removed.
    let mut names = [0u8; 1024];
    for name in call_attributes(&fd, &mut names)? {
        rustix::fs::fremovexattr(&fd, name.as_c_str())?;
    }
    rustix::fs::fchmod(&fd, rustix::fs::Mode::from_raw_mode(0o700))?;
    let after = rustix::fs::fstat(&fd)?;
    let left = call_attributes(&fd, &mut names)?;
    let empty = std::fs::read_dir(dir)?.next().is_none();
    if after.st_mode & 0o7777 != 0o700 || !left.is_empty() || !empty {
        return Err(io::Error::other("not emptied"));
    }
    Ok(())
}

/// The extended attributes of the directory a call could have set (every one but the security module's label,
/// which it cannot).
fn call_attributes(fd: &std::os::fd::OwnedFd, buf: &mut [u8]) -> io::Result<Vec<std::ffi::CString>> {
    let n = rustix::fs::flistxattr(fd, &mut *buf)?;
    buf[..n]
        .split(|b| *b == 0)
        .filter(|n| !n.is_empty() && !n.starts_with(b"security."))
        .map(|n| std::ffi::CString::new(n).map_err(|_| io::Error::other("an attribute name")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_directory_comes_back_empty_private_and_renamed() {
        start_reuse();
        let mut a = CallTmp::new().unwrap();
        let first = a.path().to_path_buf();
        std::fs::create_dir_all(first.join("sub/deeper")).unwrap();
        std::fs::write(first.join("sub/deeper/note"), b"for the next call").unwrap();
        std::fs::write(first.join("note"), b"for the next call").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", first.join("link")).unwrap();
        std::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o777)).unwrap();
        let _ = rustix::fs::setxattr(&first, "user.note", b"left", rustix::fs::XattrFlags::empty());
        let ino = std::fs::metadata(&first).unwrap().ino();
        a.call_ended_in_own_pid_namespace(false);
        drop(a);
        assert!(!first.exists() || kept() > 0);
        let b = CallTmp::new().unwrap();
        let m = std::fs::metadata(b.path()).unwrap();
        assert_ne!(b.path(), first, "a fresh name");
        assert!(!first.exists());
        assert_eq!(m.ino(), ino, "the same directory, reused");
        assert_eq!(m.permissions().mode() & 0o7777, 0o700);
        assert!(std::fs::read_dir(b.path()).unwrap().next().is_none(), "empty");
        let mut buf = [0u8; 256];
        let fd = rustix::fs::open(b.path(), rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty()).unwrap();
        assert_eq!(rustix::fs::flistxattr(&fd, &mut buf[..]).unwrap(), 0, "no attribute left");
        // Not said to be out of every call's reach: removed, not kept.
        let path = b.path().to_path_buf();
        drop(b);
        assert!(!path.exists());
        // More attribute names than the emptying reads at once: removed, not kept.
        let mut c = CallTmp::new().unwrap();
        let many = (0..40).all(|i| {
            let name = format!("user.a-long-attribute-name-left-for-the-next-call-{i:03}");
            rustix::fs::setxattr(c.path(), name.as_str(), b"x", rustix::fs::XattrFlags::empty()).is_ok()
        });
        let path = c.path().to_path_buf();
        let before = kept();
        c.call_ended_in_own_pid_namespace(false);
        drop(c);
        if many {
            assert!(!path.exists() && kept() == before, "a directory it could not empty is removed");
        }
        stop_reuse();
        assert_eq!(kept(), 0);
    }
}
