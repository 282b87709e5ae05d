//! The call's own view of the system, made by the wrap's child in its namespaces before anything of the pack
//! runs: its uid and gid mapped in a user namespace of its own (when the runtime lacks CAP_SYS_ADMIN), every
//! mount read-only but the call's writable paths (Landlock has no right for chmod, chown, utime or the xattr
//! calls, so a read-only mount refuses them), and a `/proc` of the call's PID namespace, where no other process
//! is listed. The runtime prepares these values; the child only makes system calls on them (it shares the
//! runtime's memory until exec).

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::landlock_rules::{PathBeneathAttr, RULE_PATH_BENEATH};
use super::spawn::NulInPath;

/// A path the call may write, bound writable on itself inside the read-only view: the device and inode the
/// runtime saw, so the child binds that directory and no other put in its place.
pub(super) struct Writable {
    path: CString,
    dev: u64,
    ino: u64,
}

/// What the child makes of its view.
pub(super) struct ViewPlan {
    /// In a user namespace of its own: what it writes to its `uid_map` and `gid_map` (the runtime's own ids,
    /// mapped to themselves, so files and `id` look the same inside).
    pub id_maps: Option<(Vec<u8>, Vec<u8>)>,
    /// Every mount made read-only, then these bound writable again.
    pub writable: Option<Vec<Writable>>,
    /// A fresh `/proc` of the call's PID namespace, and the Landlock rights it is read with (0 without Landlock).
    pub proc_access: Option<u64>,
}

impl ViewPlan {
    pub fn none() -> ViewPlan {
        ViewPlan { id_maps: None, writable: None, proc_access: None }
    }

    /// The child needs a mount namespace for this view.
    pub fn mounts(&self) -> bool {
        self.writable.is_some() || self.proc_access.is_some()
    }
}

/// The uid and gid map lines of a user namespace that maps only the runtime's effective ids to themselves.
pub(super) fn own_id_maps() -> (Vec<u8>, Vec<u8>) {
    // SAFETY: geteuid and getegid have no failure modes.
    let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
    (format!("{uid} {uid} 1").into_bytes(), format!("{gid} {gid} 1").into_bytes())
}

/// The call's writable paths as the child binds them: the directories and regular files that exist (a device
/// such as `/dev/null` is writable on a read-only mount; a path that does not exist gets no Landlock rule
/// either).
pub(super) fn writable(paths: &[PathBuf]) -> Result<Vec<Writable>, NulInPath> {
    let mut out = Vec::new();
    for p in paths {
        let Ok(m) = std::fs::metadata(p) else { continue };
        if !m.is_dir() && !m.is_file() {
            continue;
        }
        let path = CString::new(p.as_os_str().as_bytes()).map_err(|_| NulInPath(p.clone()))?;
        out.push(Writable { path, dev: m.dev(), ino: m.ino() });
    }
    Ok(out)
}

/// Writes `value` to the file at `path` in one write. System calls only.
///
/// # Safety
/// None beyond the system calls'; `unsafe` because the clone child calls it.
pub(super) unsafe fn write_file(path: &std::ffi::CStr, value: &[u8]) -> bool {
    // SAFETY: open, write and close on a NUL-terminated path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let ok = libc::write(fd, value.as_ptr() as *const libc::c_void, value.len()) == value.len() as isize;
        libc::close(fd);
        ok
    }
}

/// In the child's new user namespace: maps its own uid and gid (setgroups denied first, as the kernel asks of
/// an unprivileged gid map). Returns false at the first failure (errno says why).
///
/// # Safety
/// The caller must be the clone child, alone in the user namespace it was made in.
pub(super) unsafe fn map_ids(maps: &(Vec<u8>, Vec<u8>)) -> bool {
    // SAFETY: plain file writes of prepared bytes.
    unsafe {
        write_file(c"/proc/self/uid_map", &maps.0)
            && write_file(c"/proc/self/setgroups", b"deny")
            && write_file(c"/proc/self/gid_map", &maps.1)
    }
}

/// `struct mount_attr`, as the kernel declares it.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// In the child's own mount namespace (already private): makes every mount read-only, then binds each
/// writable path writable on itself. Each is opened by path and must be the directory or file the runtime saw
/// (same device and inode), else the view fails with `ESTALE`. Returns false at the first failure.
///
/// # Safety
/// The caller must be alone in a mount namespace it made, with every mount private.
pub(super) unsafe fn read_only_view(writable: &[Writable]) -> bool {
    let ro = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let rw = MountAttr { attr_set: 0, attr_clr: MOUNT_ATTR_RDONLY, propagation: 0, userns_fd: 0 };
    let size = std::mem::size_of::<MountAttr>();
    // SAFETY: mount_setattr, open, fstat, open_tree and move_mount on NUL-terminated paths, descriptors this
    // child opened and plain structs that live across each call.
    unsafe {
        if libc::syscall(libc::SYS_mount_setattr, -1, c"/".as_ptr(), libc::AT_RECURSIVE, &ro, size) != 0 {
            return false;
        }
        for w in writable {
            let fd = libc::open(w.path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                return false;
            }
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 || st.st_dev != w.dev || st.st_ino != w.ino {
                libc::close(fd);
                *libc::__errno_location() = libc::ESTALE;
                return false;
            }
            // A copy of the mount (with what is mounted beneath it, still read-only), made writable at its top,
            // and put over the path.
            let tree = libc::syscall(
                libc::SYS_open_tree,
                fd,
                c"".as_ptr(),
                OPEN_TREE_CLONE
                    | libc::O_CLOEXEC as libc::c_uint
                    | libc::AT_EMPTY_PATH as libc::c_uint
                    | libc::AT_RECURSIVE as libc::c_uint,
            ) as libc::c_int;
            let ok = tree >= 0
                && libc::syscall(libc::SYS_mount_setattr, tree, c"".as_ptr(), libc::AT_EMPTY_PATH, &rw, size)
                    == 0
                && libc::syscall(
                    libc::SYS_move_mount,
                    tree,
                    c"".as_ptr(),
                    fd,
                    c"".as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
                ) == 0;
            if tree >= 0 {
                libc::close(tree);
            }
            libc::close(fd);
            if !ok {
                return false;
            }
        }
    }
    true
}

/// Mounts a fresh `/proc` (of the caller's PID namespace) over the runtime's, and, with a Landlock ruleset,
/// lets the call read it: a rule on the runtime's `/proc` does not reach a mount put over it. Returns false at
/// the first failure.
///
/// # Safety
/// The caller must be PID 1 of its own PID namespace, alone in a mount namespace it made.
pub(super) unsafe fn fresh_proc(ruleset: libc::c_int, access: u64) -> bool {
    // SAFETY: mount, open, landlock_add_rule and close on NUL-terminated paths and a struct that lives across
    // the call.
    unsafe {
        if libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return false;
        }
        if ruleset < 0 || access == 0 {
            return true;
        }
        let fd = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let attr = PathBeneathAttr { allowed_access: access, parent_fd: fd };
        let rc = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        );
        libc::close(fd);
        rc == 0
    }
}

/// Whether the kernel gives this process what an unprivileged call's view needs: a child is cloned as a call's
/// would be (user, PID and mount namespaces), maps its ids, makes its mounts read-only and mounts a fresh
/// `/proc`, and exits. `hcpx doctor` asks (a container's seccomp profile or a security module may refuse what
/// the kernel's settings allow); a call finds out by trying (see `run_confined`).
pub fn user_namespace_works() -> bool {
    extern "C" fn child(arg: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `arg` points at the parent's maps, alive while this vfork child runs.
        let maps = unsafe { &*(arg as *const (Vec<u8>, Vec<u8>)) };
        // SAFETY: this child is alone in the namespaces it was cloned into; system calls only.
        unsafe {
            let ok =
                map_ids(maps) && super::spawn::make_private() && read_only_view(&[]) && fresh_proc(-1, 0);
            libc::_exit(if ok { 0 } else { 1 })
        }
    }
    let maps = own_id_maps();
    let mut stack: Vec<u8> = Vec::with_capacity(16 * 1024);
    // SAFETY: one past the end of the allocation, aligned down to 16 bytes; the stack grows down into it.
    let top = ((unsafe { stack.as_mut_ptr().add(16 * 1024) }) as usize & !15) as *mut libc::c_void;
    let flags = libc::CLONE_VM
        | libc::CLONE_VFORK
        | libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNS
        | libc::SIGCHLD;
    // SAFETY: every signal is blocked while the child shares this memory (no handler of the runtime runs on its
    // stack), and restored after; `child` only makes system calls on `maps`, which outlives it (CLONE_VFORK).
    let pid = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let pid = libc::clone(child, top, flags, &maps as *const (Vec<u8>, Vec<u8>) as *mut libc::c_void);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        pid
    };
    drop(stack);
    if pid < 0 {
        return false;
    }
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false;
        }
    }
    libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
}
