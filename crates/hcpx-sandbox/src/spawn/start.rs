//! The parent's side of starting the child: everything it will read prepared from the confinement, then the
//! `clone` into its namespaces, and what the child reported if it stopped before exec.

use cap_std::fs::Dir;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicI32, Ordering};

use super::child::child_main;
use super::mounts::binds;
use super::{
    kill_call, reap, ChildArgs, NulInPath, Spawn, SpawnError, STAGES, STAGE_EXEC, STAGE_IDS, STAGE_MOUNTS,
    STAGE_PROC, STAGE_READ_ONLY,
};
use crate::model::LayerName;

const STACK_BYTES: usize = 64 * 1024;

fn cstring(s: &OsStr) -> Result<CString, SpawnError> {
    CString::new(s.as_bytes()).map_err(|_| {
        SpawnError::new(
            "cannot pass an argument",
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL byte in the program, an argument or the environment",
            ),
        )
    })
}

/// Prepares the child's arguments and clones it; returns its pid once it has exec'd.
/// With a granted UNIX socket or an egress proxy, also the listener of the child's `connect`s (unotify.rs).
pub(super) fn start(
    spec: &Spawn<'_>,
    stdio: [RawFd; 3],
) -> Result<(libc::pid_t, Option<OwnedFd>), SpawnError> {
    let program = cstring(spec.program.as_os_str())?;
    let argv_c: Vec<CString> = std::iter::once(Ok(program.clone()))
        .chain(spec.argv.iter().map(|a| cstring(OsStr::new(a))))
        .collect::<Result<_, _>>()?;
    let env_c: Vec<CString> =
        spec.env.iter().map(|(k, v)| cstring(OsStr::new(&format!("{k}={v}")))).collect::<Result<_, _>>()?;
    let fail = SpawnError::new;

    let mut pidns = false;
    let mut mountns = false;
    let mut userns = false;
    let mut landlock_fd: Option<OwnedFd> = None;
    let mut programs = None;
    let mut notify_prog: Vec<libc::sock_filter> = Vec::new();
    let mut notify_socks: Option<(OwnedFd, OwnedFd)> = None;
    let mut args = ChildArgs {
        program,
        argv: argv_c.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect(),
        envp: env_c.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect(),
        cwd: spec.cwd.as_fd().as_raw_fd(),
        cwd_path: None,
        cwd_id: dir_id(spec.cwd),
        view: crate::view::ViewPlan::none(),
        stdio,
        pid_max: None,
        mounts: Vec::new(),
        rlimits: Vec::new(),
        drop_caps: None,
        nnp: false,
        landlock: -1,
        filters: Vec::new(),
        notify: None,
        // SAFETY: an all-zero sigset_t is a valid value; sigemptyset below makes it the empty set.
        empty_mask: unsafe { std::mem::zeroed() },
        fd_limit: fd_limit(),
        stage: AtomicI32::new(0),
        errno: AtomicI32::new(0),
    };
    // SAFETY: `empty_mask` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut args.empty_mask) };
    if let Some((c, abi)) = spec.confine {
        let probe = crate::KernelProbe::get();
        pidns = c.applies(LayerName::PidNamespace);
        if pidns && c.applies(LayerName::ProcessLimit) && probe.root {
            let n = c.limits.max_processes.max(300) + 1;
            args.pid_max = Some((CString::from(c"/proc/sys/kernel/pid_max"), n.to_string().into_bytes()));
        }
        let bad_path =
            |e: NulInPath| fail("cannot pass a path", io::Error::new(io::ErrorKind::InvalidInput, e));
        if c.applies(LayerName::ReadOnlyMounts) {
            args.view.writable = Some(crate::view::writable(&c.write).map_err(bad_path)?);
        }
        if pidns && c.applies(LayerName::PrivateProc) {
            let access =
                if c.applies(LayerName::Landlock) { crate::landlock_rules::read_access(abi) } else { 0 };
            args.view.proc_access = Some(access);
        }
        if c.applies(LayerName::MountNamespace) {
            args.mounts = binds(&c.pin, &c.protect).map_err(bad_path)?;
        }
        if c.applies(LayerName::MountNamespace) || args.view.mounts() {
            mountns = true;
            args.cwd_path = Some(cstring(c.workdir.as_os_str())?);
        }
        if probe.call_user_namespace() && (pidns || mountns) {
            userns = true;
            args.view.id_maps = Some(crate::view::own_id_maps());
        }
        if c.applies(LayerName::Rlimits) {
            let l = &c.limits;
            let r = |v: u64| libc::rlimit { rlim_cur: v as libc::rlim_t, rlim_max: v as libc::rlim_t };
            args.rlimits = vec![
                (libc::RLIMIT_CORE, r(0)),
                (libc::RLIMIT_NOFILE, r(l.max_open_files)),
                (libc::RLIMIT_FSIZE, r(l.max_file_bytes)),
                (libc::RLIMIT_DATA, r(l.memory_bytes)),
                (libc::RLIMIT_CPU, r(l.cpu_seconds)),
            ];
        }
        if c.applies(LayerName::ProcessLimit) && !probe.root {
            args.rlimits.push((
                libc::RLIMIT_NPROC,
                libc::rlimit {
                    rlim_cur: c.limits.max_processes as libc::rlim_t,
                    rlim_max: c.limits.max_processes as libc::rlim_t,
                },
            ));
        }
        // In a user namespace of its own the child holds every capability there until it drops them.
        if c.applies(LayerName::Capabilities) && (probe.cap_eff != 0 || userns) {
            args.drop_caps = Some(probe.cap_last);
        }
        args.nnp = c.applies(LayerName::NoNewPrivs)
            || c.applies(LayerName::Landlock)
            || c.applies(LayerName::Seccomp);
        landlock_fd = crate::landlock_rules::build(c, abi)
            .map_err(|e| fail("cannot prepare Landlock", io::Error::other(e)))?;
        args.landlock = landlock_fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        if c.applies(LayerName::Seccomp) {
            let p = crate::seccomp::programs(
                &c.network,
                !c.unix_sockets.is_empty(),
                c.egress.is_some(),
                c.enforces(LayerName::Capabilities),
            )
            .map_err(|e| fail("cannot prepare seccomp", io::Error::other(e)))?;
            args.filters = p
                .iter()
                .map(|prog| libc::sock_fprog {
                    len: prog.len() as u16,
                    filter: prog.as_ptr() as *mut libc::sock_filter,
                })
                .collect();
            programs = Some(p);
            if !c.unix_sockets.is_empty() || c.egress.is_some() {
                let (ours, theirs) = seqpacket_pair().map_err(|e| fail("cannot make a socket pair", e))?;
                notify_prog = crate::unotify::program();
                args.notify = Some((
                    libc::sock_fprog { len: notify_prog.len() as u16, filter: notify_prog.as_mut_ptr() },
                    theirs.as_raw_fd(),
                ));
                notify_socks = Some((ours, theirs));
            }
        }
    }

    let mut flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
    if pidns {
        flags |= libc::CLONE_NEWPID;
    }
    if mountns {
        flags |= libc::CLONE_NEWNS;
    }
    if userns {
        flags |= libc::CLONE_NEWUSER;
    }
    // Left uninitialised: the child touches only the few pages it uses, not all sixteen (each first touch is a
    // page fault; zeroing the buffer took them all). Nothing reads it as Rust values.
    let mut stack: Vec<u8> = Vec::with_capacity(STACK_BYTES);
    // SAFETY: the end of the allocation (one past its last byte), aligned down to 16 bytes below; the stack
    // grows down into the buffer.
    let top = unsafe { stack.as_mut_ptr().add(STACK_BYTES) };
    let top = (top as usize & !15) as *mut libc::c_void;
    // SAFETY: every signal is blocked while the child shares this memory, so no handler of the runtime runs on
    // the child's stack; the child resets handlers and unblocks before exec; the mask is restored below.
    let mut all: libc::sigset_t = unsafe { std::mem::zeroed() };
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: plain signal-set calls on local values.
    unsafe {
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: `child_main` only makes system calls on `args`, which outlives the child's use of it: with
    // CLONE_VFORK this thread resumes only once the child has exec'd or exited.
    let pid = unsafe { libc::clone(child_main, top, flags, &args as *const ChildArgs as *mut libc::c_void) };
    let clone_err = io::Error::last_os_error();
    // SAFETY: restores this thread's own mask.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    drop(stack);
    drop(programs);
    drop(landlock_fd);
    drop(notify_prog);
    let notify_ours = notify_socks.map(|(ours, _theirs)| ours);
    if pid < 0 {
        let mut e = fail(
            if pidns || mountns { "cannot start the call's namespaces" } else { "cannot start the program" },
            clone_err,
        );
        e.namespaces_refused = userns;
        return Err(e);
    }
    let stage = args.stage.load(Ordering::SeqCst);
    if stage != 0 {
        let _ = reap(pid);
        let error = io::Error::from_raw_os_error(args.errno.load(Ordering::SeqCst));
        let not_runnable = stage == STAGE_EXEC
            && matches!(error.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied);
        // What the kernel refuses whatever the call (not what depends on the project, or a path swapped).
        let namespaces_refused =
            userns && matches!(stage, STAGE_MOUNTS | STAGE_IDS | STAGE_PROC | STAGE_READ_ONLY);
        return Err(SpawnError {
            stage: STAGES.get(stage as usize).copied().unwrap_or("cannot start the program"),
            error,
            not_runnable,
            namespaces_refused,
        });
    }
    let listener = match notify_ours.map(|s| crate::unotify::receive_listener(&s)).transpose() {
        Ok(l) => l,
        Err(e) => {
            kill_call(pid);
            let _ = reap(pid);
            return Err(fail("cannot take the seccomp listener", e));
        }
    };
    Ok((pid, listener))
}

/// The device and inode of an open directory ((0, 0) when it cannot be read, which no directory has).
fn dir_id(dir: &Dir) -> (u64, u64) {
    // SAFETY: fstat fills a plain struct for an open descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the borrow; `st` is a valid out-parameter.
    if unsafe { libc::fstat(dir.as_fd().as_raw_fd(), &mut st) } != 0 {
        return (0, 0);
    }
    (st.st_dev, st.st_ino)
}

/// A pair of connected sequenced-packet sockets, close-on-exec.
fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: socketpair fills the two-element array.
    if unsafe {
        libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned from here.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The runtime's descriptor limit (at most 65536), for marking every descriptor close-on-exec where the
/// kernel has no close_range (before Linux 5.11).
fn fd_limit() -> libc::c_int {
    // SAFETY: getrlimit fills a plain struct.
    let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } != 0 {
        return 65536;
    }
    r.rlim_cur.min(65536) as libc::c_int
}
