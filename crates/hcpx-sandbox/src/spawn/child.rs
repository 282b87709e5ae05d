//! The child's side, between `clone` and `exec`: it shares the runtime's memory until exec, so it only makes
//! system calls on what the parent prepared, and reports a failure by its stage.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

use super::mounts::{bind_only, make_private};
use super::{
    ChildArgs, STAGE_CWD, STAGE_EXEC, STAGE_GIT, STAGE_IDS, STAGE_MOUNTS, STAGE_PROC, STAGE_READ_ONLY,
    STAGE_REPLACED,
};

#[repr(C)]
pub(crate) struct CapHeader {
    pub(crate) version: u32,
    pub(crate) pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct CapData {
    pub(crate) effective: u32,
    pub(crate) permitted: u32,
    pub(crate) inheritable: u32,
}

pub(crate) const CAP_VERSION_3: u32 = 0x2008_0522;
/// NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS locked off.
const SECURE_BITS: libc::c_ulong = 0xEF;

/// The child: system calls only (it shares the runtime's memory until exec), each failure reported by stage.
pub(super) extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` points at the parent's `ChildArgs`, alive and unchanged while this child runs.
    let a = unsafe { &*(arg as *const ChildArgs) };
    let fail = |stage: i32| -> libc::c_int {
        a.errno.store(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL), Ordering::SeqCst);
        a.stage.store(stage, Ordering::SeqCst);
        // SAFETY: _exit ends only this child, without running the runtime's exit handlers.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: every call below is a plain system call on this child's own state (its own signal handlers,
    // descriptor table, credentials and namespaces: none is shared with the runtime without CLONE_FILES,
    // CLONE_SIGHAND, CLONE_FS or CLONE_THREAD) or on memory the parent prepared.
    unsafe {
        for sig in 1..libc::SIGRTMAX() {
            if sig == libc::SIGKILL || sig == libc::SIGSTOP {
                continue;
            }
            // A handler of the runtime's is reset (a signal arriving between unblocking and exec would run it on
            // shared memory), and so is the runtime's own ignoring of SIGPIPE; a signal the caller ignored stays
            // ignored, and one at its default needs no call.
            let mut cur: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut cur) == 0
                && cur.sa_sigaction != libc::SIG_DFL
                && (cur.sa_sigaction != libc::SIG_IGN || sig == libc::SIGPIPE)
            {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        libc::setpgid(0, 0);
        if let Some(maps) = &a.view.id_maps {
            if !crate::view::map_ids(maps) {
                return fail(STAGE_IDS);
            }
        }
        if let Some((path, value)) = &a.pid_max {
            if !crate::view::write_file(path, value) {
                return fail(1);
            }
        }
        if a.cwd_path.is_some() {
            if !make_private() {
                return fail(STAGE_MOUNTS);
            }
            if let Some(w) = &a.view.writable {
                if !crate::view::read_only_view(w) {
                    let replaced = *libc::__errno_location() == libc::ESTALE;
                    return fail(if replaced { STAGE_REPLACED } else { STAGE_READ_ONLY });
                }
            }
            if !bind_only(&a.mounts) {
                return fail(STAGE_GIT);
            }
            if let Some(access) = a.view.proc_access {
                if !crate::view::fresh_proc(a.landlock, access) {
                    return fail(STAGE_PROC);
                }
            }
        }
        for (res, lim) in &a.rlimits {
            if libc::setrlimit(*res, lim) != 0 {
                return fail(3);
            }
        }
        let entered = match &a.cwd_path {
            Some(p) => libc::chdir(p.as_ptr()),
            None => libc::fchdir(a.cwd),
        };
        if entered != 0 {
            return fail(STAGE_CWD);
        }
        if a.cwd_path.is_some() {
            // Entered by path: the directory the runtime opened, not one put in its place since.
            let mut st: libc::stat = std::mem::zeroed();
            if libc::stat(c".".as_ptr(), &mut st) != 0 || (st.st_dev, st.st_ino) != a.cwd_id {
                *libc::__errno_location() = libc::ESTALE;
                return fail(STAGE_REPLACED);
            }
        }
        for (i, fd) in a.stdio.iter().enumerate() {
            // A descriptor already in its place (a host that runs with 0, 1 or 2 closed) is kept across exec: dup2
            // onto itself would leave it close-on-exec, and the program would start without that stream.
            let placed = if *fd == i as libc::c_int {
                libc::fcntl(*fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(*fd, i as libc::c_int)
            };
            if placed < 0 {
                return fail(5);
            }
        }
        if let Some(last) = a.drop_caps {
            for cap in 0..=last {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                    return fail(6);
                }
            }
            if libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0)
                != 0
            {
                return fail(6);
            }
            if libc::prctl(libc::PR_SET_SECUREBITS, SECURE_BITS, 0, 0, 0) != 0 {
                return fail(6);
            }
            let header = CapHeader { version: CAP_VERSION_3, pid: 0 };
            let data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
            if libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) != 0 {
                return fail(6);
            }
        }
        if a.nnp && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail(7);
        }
        if a.landlock >= 0 && libc::syscall(libc::SYS_landlock_restrict_self, a.landlock, 0u32) != 0 {
            return fail(8);
        }
        for f in &a.filters {
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                f as *const libc::sock_fprog,
            ) != 0
            {
                return fail(9);
            }
        }
        if let Some((prog, sock)) = &a.notify {
            // Only fatal signals end a connect hcpx has taken up (5.19); before that, any signal.
            let mut fd = libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
                prog as *const libc::sock_fprog,
            );
            if fd < 0 {
                fd = libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
                    prog as *const libc::sock_fprog,
                );
            }
            if fd < 0 || !crate::unotify::send_listener(*sock, fd as RawFd) {
                return fail(9);
            }
            libc::close(fd as RawFd);
        }
        // Nothing of the runtime's descriptors reaches the program but the three streams.
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
            for fd in 3..a.fd_limit {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        libc::sigprocmask(libc::SIG_SETMASK, &a.empty_mask, std::ptr::null_mut());
        libc::execve(a.program.as_ptr(), a.argv.as_ptr(), a.envp.as_ptr());
        fail(STAGE_EXEC)
    }
}
