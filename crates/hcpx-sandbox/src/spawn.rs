//! Starts a wrap's child confined, with no shell: `clone(CLONE_VM | CLONE_VFORK)` into the child's own PID and
//! mount namespaces (inside a user namespace of its own when the runtime lacks CAP_SYS_ADMIN), where it makes
//! its view (view.rs), sets its limits, drops its capabilities, restricts itself with Landlock and seccomp, and
//! execs the bin. Nothing of the runtime is copied (as posix_spawn, no page tables),
//! and nothing is applied to the runtime itself. Then the output is capped and the whole call is killed at the
//! deadline, and when the child exits.

use cap_std::fs::Dir;
use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use super::{watch, Confinement};
use crate::model::LayerName;

/// What to run.
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub argv: &'a [String],
    /// The working directory, handed over as an open directory (fchdir), never a path.
    pub cwd: &'a Dir,
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    pub max_output: u64,
    /// The confinement and the Landlock ABI to apply; `None` runs the child with only a fresh environment
    /// (nothing in hcpx runs a child so any more; kept for a caller that confines by other means).
    pub confine: Option<(&'a Confinement, u8)>,
    /// Set by the caller to stop the call before its deadline.
    pub cancel: Option<&'a crate::model::Cancel>,
}

/// How it ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub timed_out: bool,
    /// The caller cancelled; the call's processes were killed.
    pub cancelled: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub truncated: bool,
    /// The call added more than `max_disk_mb` to its private directories and was stopped (or, ending first,
    /// is reported so).
    pub disk_over: Option<super::disk::OverCap>,
}

impl Finished {
    /// A short description of a non-zero or signalled end.
    pub fn describe_exit(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}{}", signal_hint(s)),
            _ => "ended abnormally".into(),
        }
    }
}

fn signal_hint(sig: i32) -> &'static str {
    match sig {
        libc::SIGXFSZ => " (SIGXFSZ: a file grew past max_file_mb in sandbox.json)",
        libc::SIGXCPU => " (SIGXCPU: CPU time ran out)",
        libc::SIGSYS => " (SIGSYS: a system call the sandbox refuses)",
        _ => "",
    }
}

/// Why the child could not be started.
#[derive(Debug, thiserror::Error)]
#[error("{stage}: {}", crate::model::io_reason(error))]
pub struct SpawnError {
    /// The step that failed, in words.
    pub stage: &'static str,
    /// The cause: an OS error, or (wrapped) the Landlock, seccomp or path error that stopped the set-up.
    #[source]
    pub error: io::Error,
    /// The program was missing or not executable (a `sandbox_denied`, not a crash).
    pub not_runnable: bool,
    /// The kernel refused the call's user namespace (or what the child does in it) although its settings
    /// allowed one: the caller plans the call again without it (probe::refuse_user_namespaces).
    pub namespaces_refused: bool,
}

impl SpawnError {
    fn new(stage: &'static str, error: io::Error) -> SpawnError {
        SpawnError { stage, error, not_runnable: false, namespaces_refused: false }
    }
}

/// A path handed to the kernel held a NUL byte.
#[derive(Debug, thiserror::Error)]
#[error("the path {} holds a NUL byte", .0.display())]
pub struct NulInPath(pub std::path::PathBuf);

const STAGES: &[&str] = &[
    "",
    "cannot cap the call's processes (pid_max)",
    "cannot set up the mount namespace",
    "cannot set the resource limits",
    "cannot enter the working directory",
    "cannot connect the standard streams",
    "cannot drop capabilities",
    "cannot set no_new_privs",
    "cannot apply Landlock",
    "cannot apply the seccomp filter",
    "cannot start the program",
    "cannot map the call's user and group in its user namespace",
    "cannot mount the call's own /proc",
    "cannot make the call's read-only view of the mounts",
    "cannot keep the project's .git read-only",
    "a path the call may write was replaced while it started",
];
const STAGE_MOUNTS: i32 = 2;
const STAGE_CWD: i32 = 4;
const STAGE_EXEC: i32 = 10;
const STAGE_IDS: i32 = 11;
const STAGE_PROC: i32 = 12;
const STAGE_READ_ONLY: i32 = 13;
const STAGE_GIT: i32 = 14;
const STAGE_REPLACED: i32 = 15;

/// Everything the child reads, prepared by the parent: the child only makes system calls.
struct ChildArgs {
    program: CString,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    cwd: RawFd,
    /// In a new mount namespace the working directory is entered by path, so it is reached through that
    /// namespace's mounts (a descriptor opened outside still points at the old ones); it must be the directory
    /// `cwd` is (this device and inode).
    cwd_path: Option<CString>,
    cwd_id: (u64, u64),
    /// The call's own user namespace, read-only mounts and `/proc`.
    view: super::view::ViewPlan,
    stdio: [RawFd; 3],
    pid_max: Option<(CString, Vec<u8>)>,
    /// (path, read-only, extra mount flags kept from the mount it sits on)
    mounts: Vec<(CString, bool, libc::c_ulong)>,
    rlimits: Vec<(libc::__rlimit_resource_t, libc::rlimit)>,
    drop_caps: Option<u32>,
    nnp: bool,
    landlock: RawFd,
    filters: Vec<libc::sock_fprog>,
    /// The program that sends `connect` to the supervisor, and the socket the child sends its listener over
    /// (only with a granted UNIX socket; see unotify.rs).
    notify: Option<(libc::sock_fprog, RawFd)>,
    empty_mask: libc::sigset_t,
    /// One past the highest descriptor the runtime may hold (for kernels without close_range).
    fd_limit: libc::c_int,
    stage: AtomicI32,
    errno: AtomicI32,
}

#[repr(C)]
pub(super) struct CapHeader {
    pub(super) version: u32,
    pub(super) pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct CapData {
    pub(super) effective: u32,
    pub(super) permitted: u32,
    pub(super) inheritable: u32,
}

pub(super) const CAP_VERSION_3: u32 = 0x2008_0522;
/// NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each locked; KEEP_CAPS locked off.
const SECURE_BITS: libc::c_ulong = 0xEF;
const STACK_BYTES: usize = 64 * 1024;

/// Runs the child to completion or to the deadline.
pub fn run(spec: &Spawn<'_>) -> Result<Finished, SpawnError> {
    let (out_r, out_w) = pipe().map_err(|e| SpawnError::new("cannot make a pipe", e))?;
    let (err_r, err_w) = pipe().map_err(|e| SpawnError::new("cannot make a pipe", e))?;
    let null = File::open("/dev/null").map_err(|e| SpawnError::new("cannot open /dev/null", e))?;
    let disk = spec.confine.map(|(c, _)| &c.disk).filter(|d| !d.dirs.is_empty());
    let (pid, listener) = start(spec, [null.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()])?;
    if let (Some(l), Some((c, _))) = (listener, spec.confine) {
        if let Err(e) = super::unotify::supervise(l, c.unix_sockets.clone(), spec.timeout) {
            kill_call(pid);
            let _ = reap(pid);
            return Err(SpawnError::new("cannot start the connect supervisor", e));
        }
    }
    drop((out_w, err_w, null));
    let setup = |stage: &'static str, e: io::Error| {
        kill_call(pid);
        let _ = reap(pid);
        SpawnError::new(stage, e)
    };
    // Watched without reaping, so neither the process group id nor the namespace can be reused before the kill.
    let exit = watch::pidfd(pid).map_err(|e| setup("cannot watch the program (pidfd_open)", e))?;
    let mut out =
        watch::Stream::new(out_r, spec.max_output).map_err(|e| setup("cannot read the program", e))?;
    let mut err =
        watch::Stream::new(err_r, spec.max_output).map_err(|e| setup("cannot read the program", e))?;
    // Until the child ends, the deadline passes or the caller cancels, looking at the flag every 20 ms and at
    // what the call wrote every `disk::CHECK_EVERY`; its output is read as it comes, on this thread.
    let start_at = Instant::now();
    let deadline = start_at + spec.timeout;
    let (mut timed_out, mut cancelled, mut disk_over) = (false, false, None);
    let mut next_disk = start_at + super::disk::CHECK_EVERY;
    loop {
        let now = Instant::now();
        let mut step = deadline.saturating_duration_since(now);
        if spec.cancel.is_some() {
            step = step.min(Duration::from_millis(20));
        }
        if disk.is_some() {
            step = step.min(next_disk.saturating_duration_since(now));
        }
        if watch::step(Some(&exit), &mut [&mut out, &mut err], step) {
            break;
        }
        let now = Instant::now();
        cancelled = spec.cancel.is_some_and(|c| c.is_cancelled());
        timed_out = !cancelled && now >= deadline;
        if let Some(d) = disk.filter(|_| now >= next_disk) {
            disk_over = d.over();
            next_disk = Instant::now() + super::disk::CHECK_EVERY;
        }
        if cancelled || timed_out || disk_over.is_some() {
            kill_call(pid);
            while !watch::step(Some(&exit), &mut [&mut out, &mut err], Duration::from_secs(1)) {}
            break;
        }
    }
    kill_call(pid);
    // A call that ended between two checks is measured once more.
    if disk_over.is_none() {
        disk_over = disk.and_then(|d| d.over());
    }
    let status = reap(pid).map_err(|e| SpawnError::new("cannot wait for the program", e))?;
    // Without a PID namespace a process that left the group may still hold the pipes: give up on them after a
    // grace period, and say the output is incomplete.
    watch::drain(&mut [&mut out, &mut err], Duration::from_millis(500));
    Ok(Finished {
        status,
        timed_out,
        cancelled,
        truncated: out.truncated || err.truncated,
        stdout: out.kept,
        stderr: err.kept,
        disk_over,
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here only.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

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
/// With a granted UNIX socket, also the listener of the child's `connect`s (unotify.rs).
fn start(spec: &Spawn<'_>, stdio: [RawFd; 3]) -> Result<(libc::pid_t, Option<OwnedFd>), SpawnError> {
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
        view: super::view::ViewPlan::none(),
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
        let probe = super::KernelProbe::get();
        pidns = c.applies(LayerName::PidNamespace);
        if pidns && c.applies(LayerName::ProcessLimit) && probe.root {
            let n = c.limits.max_processes.max(300) + 1;
            args.pid_max = Some((CString::from(c"/proc/sys/kernel/pid_max"), n.to_string().into_bytes()));
        }
        let bad_path =
            |e: NulInPath| fail("cannot pass a path", io::Error::new(io::ErrorKind::InvalidInput, e));
        if c.applies(LayerName::ReadOnlyMounts) {
            args.view.writable = Some(super::view::writable(&c.write).map_err(bad_path)?);
        }
        if pidns && c.applies(LayerName::PrivateProc) {
            let access =
                if c.applies(LayerName::Landlock) { super::landlock_rules::read_access(abi) } else { 0 };
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
            args.view.id_maps = Some(super::view::own_id_maps());
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
        landlock_fd = super::landlock_rules::build(c, abi)
            .map_err(|e| fail("cannot prepare Landlock", io::Error::other(e)))?;
        args.landlock = landlock_fd.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        if c.applies(LayerName::Seccomp) {
            let p = super::seccomp::programs(
                &c.network,
                !c.unix_sockets.is_empty(),
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
            if !c.unix_sockets.is_empty() {
                let (ours, theirs) = seqpacket_pair().map_err(|e| fail("cannot make a socket pair", e))?;
                notify_prog = super::unotify::program();
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
    let listener = match notify_ours.map(|s| super::unotify::receive_listener(&s)).transpose() {
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

/// The bind mounts [`bind_mounts`] makes: each of `pin` on itself, each of `protect` on itself read-only, with
/// the flags of the mount it sits on.
pub(crate) fn binds(
    pin: &[std::path::PathBuf],
    protect: &[std::path::PathBuf],
) -> Result<Vec<(CString, bool, libc::c_ulong)>, NulInPath> {
    let c = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|_| NulInPath(p.to_path_buf()));
    pin.iter()
        .map(|p| (p, false))
        .chain(protect.iter().map(|p| (p, true)))
        .map(|(p, ro)| Ok((c(p)?, ro, mount_flags(p))))
        .collect()
}

/// The flags of the mount `path` sits on that a read-only bind remount must keep (nosuid, nodev, noexec).
fn mount_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else { return 0 };
    // SAFETY: statvfs fills a plain struct for a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` a valid out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let mut f = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if st.f_flag & st_flag != 0 {
            f |= ms_flag;
        }
    }
    f
}

/// In a mount namespace of the caller's own: makes every mount private (nothing propagates back), then binds
/// each path on itself, read-only where asked, keeping the flags of the mount it sits on. System calls only, so
/// the clone child may call it. Returns false at the first failure (errno says why).
///
/// # Safety
/// The caller must be alone in a mount namespace it made (after `CLONE_NEWNS` or `unshare`).
pub(crate) unsafe fn bind_mounts(mounts: &[(CString, bool, libc::c_ulong)]) -> bool {
    // SAFETY: as the two functions ask.
    unsafe { make_private() && bind_only(mounts) }
}

/// Makes every mount of the caller's own mount namespace private: nothing done in it propagates back.
///
/// # Safety
/// The caller must be alone in a mount namespace it made.
pub(super) unsafe fn make_private() -> bool {
    // SAFETY: mount on a NUL-terminated path; the caller's namespace is its own.
    unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
    }
}

/// Binds each path on itself, read-only where asked (see [`bind_mounts`]), in a namespace already private.
///
/// # Safety
/// The caller must be alone in a mount namespace it made, with every mount private.
unsafe fn bind_only(mounts: &[(CString, bool, libc::c_ulong)]) -> bool {
    // SAFETY: mount on NUL-terminated paths; the caller's namespace is its own.
    unsafe {
        for (p, ro, keep) in mounts {
            if libc::mount(p.as_ptr(), p.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) != 0 {
                return false;
            }
            if *ro
                && libc::mount(
                    std::ptr::null(),
                    p.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY | keep,
                    std::ptr::null(),
                ) != 0
            {
                return false;
            }
        }
    }
    true
}

/// The child: system calls only (it shares the runtime's memory until exec), each failure reported by stage.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
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
            if !super::view::map_ids(maps) {
                return fail(STAGE_IDS);
            }
        }
        if let Some((path, value)) = &a.pid_max {
            if !super::view::write_file(path, value) {
                return fail(1);
            }
        }
        if a.cwd_path.is_some() {
            if !make_private() {
                return fail(STAGE_MOUNTS);
            }
            if let Some(w) = &a.view.writable {
                if !super::view::read_only_view(w) {
                    let replaced = *libc::__errno_location() == libc::ESTALE;
                    return fail(if replaced { STAGE_REPLACED } else { STAGE_READ_ONLY });
                }
            }
            if !bind_only(&a.mounts) {
                return fail(STAGE_GIT);
            }
            if let Some(access) = a.view.proc_access {
                if !super::view::fresh_proc(a.landlock, access) {
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
            if fd < 0 || !super::unotify::send_listener(*sock, fd as RawFd) {
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

fn reap(pid: libc::pid_t) -> io::Result<ExitStatus> {
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own child, `status` a plain out-parameter.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            return Ok(ExitStatus::from_raw(status));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Kills the child and its process group; in its own PID namespace, killing the child kills everything in it.
fn kill_call(pid: libc::pid_t) {
    // SAFETY: kill has no memory effects; a group or process already gone gives ESRCH, which is fine. The
    // child is not reaped yet, so neither id can have been reused.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}
