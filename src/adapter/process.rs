//! Spawns a child with no shell, a built environment and a directory capability as its cwd; caps its output and
//! kills its whole process group at the deadline (and once it exits, so nothing it started outlives the call).

use cap_std::fs::Dir;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// What to run.
pub struct Spawn<'a> {
    pub program: &'a Path,
    pub argv: &'a [String],
    /// The working directory, handed over as an open directory (fchdir), not a path.
    pub cwd: &'a Dir,
    pub env: &'a [(String, String)],
    pub timeout: Duration,
    pub max_output: u64,
}

/// How it ended.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub timed_out: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub truncated: bool,
}

impl Finished {
    /// A short description of a non-zero or signalled end.
    pub fn describe_exit(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(c), _) => format!("exit {c}"),
            (None, Some(s)) => format!("killed by signal {s}"),
            _ => "ended abnormally".into(),
        }
    }
}

const PROC_FD: &str = "/proc/self/fd";

/// Runs the child to completion or to the deadline.
pub fn run(spec: &Spawn<'_>) -> io::Result<Finished> {
    let dirfd = spec.cwd.as_fd().as_raw_fd();
    let mut cmd = Command::new(spec.program);
    cmd.args(spec.argv)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // The child's working directory is the open directory `dirfd`, never a path looked up again. Through
    // `/proc/self/fd/N` (the child's own copy of the descriptor, resolved as a magic link to that same
    // directory) std can use posix_spawn, which does not copy the parent's page tables as fork does: a
    // runtime holding wasmtime's reservations forks in milliseconds, spawns in microseconds. Without
    // /proc, fchdir between fork and exec does the same.
    if Path::new(PROC_FD).is_dir() {
        cmd.current_dir(format!("{PROC_FD}/{dirfd}"));
    } else {
        // SAFETY: fchdir is async-signal-safe and touches only the child's own state between fork and exec;
        // `dirfd` stays open in the parent until spawn returns.
        unsafe {
            cmd.pre_exec(move || {
                if libc::fchdir(dirfd) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let cap = spec.max_output;
    let (tx_out, rx_out) = mpsc::channel();
    let (tx_err, rx_err) = mpsc::channel();
    if let Some(s) = child.stdout.take() {
        std::thread::spawn(move || {
            let _ = tx_out.send(read_capped(s, cap));
        });
    }
    if let Some(s) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = tx_err.send(read_capped(s, cap));
        });
    }
    // Wait without reaping, so the process group id cannot be reused before we kill the group.
    let (tx_exit, rx_exit) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx_exit.send(wait_no_reap(pid));
    });
    let timed_out = match rx_exit.recv_timeout(spec.timeout) {
        Ok(_) => false,
        Err(_) => {
            kill_group(pid);
            let _ = rx_exit.recv();
            true
        }
    };
    kill_group(pid);
    let status = child.wait()?;
    let grace = Duration::from_millis(500);
    // A process that left the group may still hold the pipes: give up on them after a grace period,
    // and say the output is incomplete.
    let (stdout, t1) = rx_out.recv_timeout(grace).unwrap_or((Vec::new(), true));
    let (stderr, t2) = rx_err.recv_timeout(grace).unwrap_or((Vec::new(), true));
    Ok(Finished { status, timed_out, stdout, stderr, truncated: t1 || t2 })
}

fn read_capped(mut r: impl Read, cap: u64) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = (cap as usize).saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (kept, truncated)
}

fn wait_no_reap(pid: libc::pid_t) -> io::Result<()> {
    loop {
        // SAFETY: waitid with WNOWAIT only observes the child's state; `info` is a plain out-parameter.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn kill_group(pgid: libc::pid_t) {
    // SAFETY: kill has no memory effects; a group that is already gone gives ESRCH, which is fine.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}
