//! Waits for a wrap's child on the calling thread, in one `poll` loop: its exit (a pidfd, which never reaps it,
//! so neither its process group id nor its namespace can be reused before the kill) and its output (two pipes,
//! read as it comes so the child never blocks on a full pipe, kept up to the cap). No helper threads: a
//! one-shot `hcpx exec` paid for three of them per call (docs/perf-log.md).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// Reads per stream before the loop looks at the clock again (a writer that never stops cannot hold it).
const READS_PER_TURN: usize = 16;

/// One output stream of the child: read until it closes, kept up to `cap` bytes.
pub struct Stream {
    pipe: Option<File>,
    cap: usize,
    pub kept: Vec<u8>,
    /// More came than the cap kept, or the stream was given up while still open.
    pub truncated: bool,
}

impl Stream {
    /// The read end of a pipe, made non-blocking.
    pub fn new(read_end: OwnedFd, cap: u64) -> io::Result<Stream> {
        let fd = read_end.as_raw_fd();
        // SAFETY: fcntl on a descriptor we own; no memory is passed.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        Ok(Stream { pipe: Some(File::from(read_end)), cap, kept: Vec::new(), truncated: false })
    }

    fn open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Reads what is there now; closes the stream at its end (or on an error).
    fn read_ready(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        for _ in 0..READS_PER_TURN {
            let Some(pipe) = self.pipe.as_mut() else { return };
            match pipe.read(&mut buf) {
                Ok(0) => {
                    self.pipe = None;
                    return;
                }
                Ok(n) => {
                    let room = self.cap.saturating_sub(self.kept.len());
                    if n > room {
                        self.truncated = true;
                    }
                    self.kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.pipe = None;
                    return;
                }
            }
        }
    }

    /// Stops reading a stream that is still open: what it kept stands, and it is marked incomplete.
    fn give_up(&mut self) {
        if self.pipe.take().is_some() {
            self.truncated = true;
        }
    }
}

/// A pidfd of the child: readable once it has exited (it is not reaped).
pub fn pidfd(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor, which we then own.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned to us, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Waits up to `step` for the child's exit (`exit`: its pidfd, when still watched) or output, and reads the
/// output that is there. Whether the child has exited.
pub fn step(exit: Option<&OwnedFd>, streams: &mut [&mut Stream; 2], step: Duration) -> bool {
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3);
    let mut which: Vec<Option<usize>> = Vec::with_capacity(3);
    for (i, s) in streams.iter().enumerate() {
        if let Some(p) = &s.pipe {
            fds.push(libc::pollfd { fd: p.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            which.push(Some(i));
        }
    }
    if let Some(e) = exit {
        fds.push(libc::pollfd { fd: e.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        which.push(None);
    }
    if fds.is_empty() {
        std::thread::sleep(step);
        return false;
    }
    // Rounded up, so a sub-millisecond step waits instead of spinning.
    let ms = libc::c_int::try_from(step.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fds` is a live array of `fds.len()` pollfd structs for the duration of the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
        // poll itself failed (no memory): wait a little rather than spin; the caller looks at the clock again.
        std::thread::sleep(step.min(Duration::from_millis(1)));
    }
    if n <= 0 {
        // A timeout, or EINTR: the caller looks at the clock and calls again.
        return false;
    }
    let mut exited = false;
    for (pfd, w) in fds.iter().zip(&which) {
        if pfd.revents == 0 {
            continue;
        }
        match w {
            Some(i) => streams[*i].read_ready(),
            None => exited = true,
        }
    }
    exited
}

/// After the child is gone: reads both streams to their end, giving up on any still open at `grace` (a process
/// that left the group, where there is no PID namespace to end it, may still hold a pipe).
pub fn drain(streams: &mut [&mut Stream; 2], grace: Duration) {
    let until = Instant::now() + grace;
    while streams.iter().any(|s| s.open()) {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            streams.iter_mut().for_each(|s| s.give_up());
            return;
        }
        step(None, streams, left);
    }
}
