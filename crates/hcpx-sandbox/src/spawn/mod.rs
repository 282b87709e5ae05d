//! Starts a wrap's child confined, with no shell: `clone(CLONE_VM | CLONE_VFORK)` into the child's own PID and
//! mount namespaces (inside a user namespace of its own when the runtime lacks CAP_SYS_ADMIN), where it makes
//! its view (view.rs), sets its limits, drops its capabilities, restricts itself with Landlock and seccomp, and
//! execs the bin. Nothing of the runtime is copied (as posix_spawn, no page tables),
//! and nothing is applied to the runtime itself. Then the output is capped and the whole call is killed at the
//! deadline, and when the child exits.

mod child;
mod mounts;
mod start;

use cap_std::fs::Dir;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::atomic::AtomicI32;
use std::time::{Duration, Instant};

use super::{watch, Confinement};

pub(crate) use child::{CapData, CapHeader, CAP_VERSION_3};
pub(crate) use mounts::{bind_mounts, binds, make_private};
use start::start;

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
    /// (only with a granted UNIX socket or an egress proxy; see unotify.rs).
    notify: Option<(libc::sock_fprog, RawFd)>,
    empty_mask: libc::sigset_t,
    /// One past the highest descriptor the runtime may hold (for kernels without close_range).
    fd_limit: libc::c_int,
    stage: AtomicI32,
    errno: AtomicI32,
}

/// Runs the child to completion or to the deadline.
pub fn run(spec: &Spawn<'_>) -> Result<Finished, SpawnError> {
    let (out_r, out_w) = pipe().map_err(|e| SpawnError::new("cannot make a pipe", e))?;
    let (err_r, err_w) = pipe().map_err(|e| SpawnError::new("cannot make a pipe", e))?;
    let null = File::open("/dev/null").map_err(|e| SpawnError::new("cannot open /dev/null", e))?;
    let disk = spec.confine.map(|(c, _)| &c.disk).filter(|d| !d.dirs.is_empty());
    let (pid, listener) = start(spec, [null.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()])?;
    if let (Some(l), Some((c, _))) = (listener, spec.confine) {
        if let Err(e) = super::unotify::supervise(l, c.unix_sockets.clone(), c.egress, spec.timeout) {
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
