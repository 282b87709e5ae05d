//! Holds a granted UNIX socket path as the only one a wrap can connect to (Landlock has no right for
//! connecting to a pathname socket before ABI 9, and a seccomp filter cannot read the address). When a call is
//! granted a socket, its child's last seccomp program hands every `connect` to hcpx
//! (`SECCOMP_RET_USER_NOTIF`); the supervisor here copies the address out of the child, decides on its own copy,
//! and connects the child's own socket itself (taken with `pidfd_getfd`: the same open file, so the child's
//! socket is the one connected), to the granted path it holds, and answers with the result. The kernel never
//! re-reads the child's address, so a thread swapping it after the check changes nothing
//! (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`, which would, is never used). With an egress proxy (docs/egress.md) the
//! same holds for TCP: an `AF_INET` or `AF_INET6` socket is connected only when the address is exactly the
//! proxy's, 127.0.0.1:PORT, and every other address (another host or port, IPv6, a DNS server over TCP) is
//! answered `ECONNREFUSED`, as a port with nothing listening. Raw system calls, kept to this module.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The audit architecture of this build's system calls (`seccomp_data.arch`); seccomp.rs's program checks it too.
#[cfg(target_arch = "x86_64")]
pub(super) const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
pub(super) const AUDIT_ARCH: u32 = 0xC000_00B7;
/// System call numbers at or above this are the x32 ABI on x86_64 (same audit arch): refused outright, here and
/// by seccomp.rs's program.
#[cfg(target_arch = "x86_64")]
pub(super) const X32_BIT: u32 = 0x4000_0000;

const fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt: 0, jf: 0, k }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code: code as u16, jt, jf, k }
}

/// The program that sends `connect` to the supervisor. Other architectures are left to the main program,
/// which kills them.
pub fn program() -> Vec<libc::sock_filter> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let mut p = vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, 4),
        jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 1, 0),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
        stmt(BPF_LD | BPF_W | BPF_ABS, 0),
    ];
    #[cfg(target_arch = "x86_64")]
    p.extend([
        jump(BPF_JMP | libc::BPF_JGE | BPF_K, X32_BIT, 0, 1),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]);
    p.extend([
        jump(BPF_JMP | BPF_JEQ | BPF_K, libc::SYS_connect as u32, 0, 1),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF),
        stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW),
    ]);
    p
}

/// Receives the listener the child sent over `sock` (SCM_RIGHTS) once it has exec'd.
pub fn receive_listener(sock: &OwnedFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr() as *mut libc::c_void, iov_len: 1 };
    let mut space = [0u64; 8];
    // SAFETY: an all-zero msghdr is valid; the fields set point at live local buffers.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = space.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&space) as _;
    // SAFETY: recvmsg fills the buffers `msg` points at, within their lengths.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the CMSG macros walk the control buffer recvmsg filled, within msg_controllen.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_level != libc::SOL_SOCKET || (*c).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::other("the child sent no seccomp listener"));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const RawFd);
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Sends `fd` over `sock` with SCM_RIGHTS. System calls only, on the caller's stack: the clone child calls it.
///
/// # Safety
/// `sock` and `fd` must be open descriptors of the caller.
pub unsafe fn send_listener(sock: RawFd, fd: RawFd) -> bool {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr() as *mut libc::c_void, iov_len: 1 };
    let mut space = [0u64; 8];
    // SAFETY: as the caller promised; the CMSG macros write within `space`, which holds one descriptor.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = space.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut RawFd, fd);
        libc::sendmsg(sock, &msg, 0) == 1
    }
}

/// Starts the supervisor of one call: it answers the call's `connect`s until no process of the call is left
/// (the listener then reports a hang-up). `granted` are the socket paths the call may reach; a connect is
/// bounded by `bound` (a connect to a full backlog or a silent host waits no longer). `egress`: the port of the
/// call's egress proxy on 127.0.0.1, the one address its TCP sockets may connect to.
pub fn supervise(
    listener: OwnedFd,
    granted: Vec<PathBuf>,
    egress: Option<u16>,
    bound: Duration,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name("hcpx-connect".into())
        .spawn(move || run(listener, granted, egress, bound))?;
    Ok(())
}

fn run(listener: OwnedFd, granted: Vec<PathBuf>, egress: Option<u16>, bound: Duration) {
    let mut sizes = libc::seccomp_notif_sizes { seccomp_notif: 0, seccomp_notif_resp: 0, seccomp_data: 0 };
    // SAFETY: SECCOMP_GET_NOTIF_SIZES fills the struct.
    if unsafe { libc::syscall(libc::SYS_seccomp, libc::SECCOMP_GET_NOTIF_SIZES, 0u32, &mut sizes) } != 0 {
        return;
    }
    // The kernel writes its own struct sizes: buffers at least that large, aligned for the structs.
    let words = |n: u16, ours: usize| (n as usize).max(ours).div_ceil(8);
    let notif_words = words(sizes.seccomp_notif, std::mem::size_of::<libc::seccomp_notif>());
    let resp_words = words(sizes.seccomp_notif_resp, std::mem::size_of::<libc::seccomp_notif_resp>());
    let fd = listener.as_raw_fd();
    loop {
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: poll on one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, -1) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if pfd.revents & libc::POLLIN == 0 {
            return; // hang-up: no process of the call is left
        }
        let mut buf = vec![0u64; notif_words];
        // SAFETY: RECV writes the kernel's seccomp_notif into the zeroed buffer, which is at least that large.
        if unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, buf.as_mut_ptr()) } != 0 {
            match io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR | libc::ENOENT) => continue, // the caller was interrupted or died
                _ => return,
            }
        }
        // SAFETY: the buffer holds a seccomp_notif (aligned, large enough).
        let notif = unsafe { std::ptr::read(buf.as_ptr() as *const libc::seccomp_notif) };
        let error = answer(fd, &notif, &granted, egress, bound);
        let mut out = vec![0u64; resp_words];
        let resp = libc::seccomp_notif_resp { id: notif.id, val: 0, error, flags: 0 };
        // SAFETY: the response is written at the start of a zeroed buffer at least the kernel's size.
        unsafe {
            std::ptr::write(out.as_mut_ptr() as *mut libc::seccomp_notif_resp, resp);
            libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, out.as_ptr());
        }
    }
}

/// Whether notification `id` is still pending: its process has not died and been replaced since.
fn still_valid(listener: RawFd, id: u64) -> bool {
    // SAFETY: ID_VALID reads one u64.
    unsafe { libc::ioctl(listener, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0 }
}

/// The last OS error, negated (as a seccomp answer carries it).
fn neg_errno() -> i32 {
    -io::Error::last_os_error().raw_os_error().unwrap_or(libc::EACCES)
}

/// The answer to one `connect`: 0, or a negated errno.
fn answer(
    listener: RawFd,
    n: &libc::seccomp_notif,
    granted: &[PathBuf],
    egress: Option<u16>,
    bound: Duration,
) -> i32 {
    let (sockfd, addr_ptr, len) = (n.data.args[0] as i32, n.data.args[1], n.data.args[2] as i32);
    let mut addr = [0u8; std::mem::size_of::<libc::sockaddr_storage>()];
    if len < 0 || len as usize > addr.len() {
        return -libc::EINVAL;
    }
    let len = len as usize;
    let pid = n.pid as libc::pid_t;
    // SAFETY: pidfd_open returns a new descriptor or -1. A thread's own pidfd where the kernel has them (6.9).
    let mut raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, libc::PIDFD_THREAD) };
    if raw < 0 {
        // SAFETY: as above.
        raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    }
    if raw < 0 {
        return -libc::EACCES;
    }
    // SAFETY: `raw` is a descriptor pidfd_open just returned, owned from here.
    let pidfd = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
    if len > 0 {
        match read_memory(pid, addr_ptr, &mut addr[..len], false) {
            Ok(()) => {}
            Err(libc::EFAULT | libc::EIO) => return -libc::EFAULT,
            Err(_) => return -libc::EACCES,
        }
    }
    // The copy and the pidfd belong to the process that made the call (not one that took its pid since).
    if !still_valid(listener, n.id) {
        return -libc::ENOENT;
    }
    // SAFETY: pidfd_getfd duplicates the target's descriptor into ours, or returns -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), sockfd, 0u32) };
    if raw < 0 {
        return if neg_errno() == -libc::EBADF { -libc::EBADF } else { -libc::EACCES };
    }
    // SAFETY: a descriptor pidfd_getfd just returned, owned from here.
    let sock = unsafe { OwnedFd::from_raw_fd(raw as RawFd) };
    let domain = match sockopt_int(&sock, libc::SO_DOMAIN) {
        Ok(d) => d,
        Err(e) => return -e.raw_os_error().unwrap_or(libc::ENOTSOCK),
    };
    if let (Some(port), libc::AF_INET | libc::AF_INET6) = (egress, domain) {
        // TCP only reaches the proxy (seccomp makes no other inet socket; one obtained otherwise is refused).
        if sockopt_int(&sock, libc::SO_TYPE).ok() != Some(libc::SOCK_STREAM) {
            return -libc::EACCES;
        }
        return match is_proxy(&addr[..len], port) {
            true => connect_bounded(&sock, &proxy_addr(port), bound),
            false => -libc::ECONNREFUSED,
        };
    }
    if domain != libc::AF_UNIX {
        // A socket of a family the call was granted (seccomp refused making any other): connected as asked;
        // no address can name a UNIX socket through it.
        return connect_bounded(&sock, &addr[..len], bound);
    }
    // A datagram socket could send to any name; seccomp refuses making one, this refuses one obtained otherwise.
    match sockopt_int(&sock, libc::SO_TYPE) {
        Ok(libc::SOCK_STREAM | libc::SOCK_SEQPACKET) => {}
        _ => return -libc::EACCES,
    }
    if len <= 2 || u16::from_ne_bytes([addr[0], addr[1]]) != libc::AF_UNIX as u16 {
        return -libc::EINVAL;
    }
    let path = &addr[2..len];
    if path[0] == 0 {
        return -libc::EACCES; // an abstract name: never, with a pathname socket granted
    }
    let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
    match granted_target(pid, Path::new(OsStr::from_bytes(path)), granted) {
        Some(target) => match sockaddr_un(&target) {
            Some(sun) => connect_bounded(&sock, &sun, bound),
            None => -libc::ENAMETOOLONG,
        },
        None => -libc::EACCES,
    }
}

/// Copies `buf.len()` bytes at `ptr` in process `pid` into `buf`: `process_vm_readv`, or where an outer filter
/// refuses it (some container profiles) or `by_file` asks, `/proc/PID/mem`. The error is an errno.
fn read_memory(pid: libc::pid_t, ptr: u64, buf: &mut [u8], by_file: bool) -> Result<(), i32> {
    let len = buf.len();
    let got = if by_file {
        -1
    } else {
        let local = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: len };
        let remote = libc::iovec { iov_base: ptr as *mut libc::c_void, iov_len: len };
        // SAFETY: reads at most `len` bytes of the target into `buf`, which holds them.
        unsafe { libc::syscall(libc::SYS_process_vm_readv, pid, &local, 1u64, &remote, 1u64, 0u64) }
    };
    if got == len as i64 {
        Ok(())
    } else if by_file || (got < 0 && matches!(-neg_errno(), libc::ENOSYS | libc::EPERM)) {
        use std::os::unix::fs::FileExt;
        std::fs::File::open(format!("/proc/{pid}/mem"))
            .and_then(|f| f.read_exact_at(buf, ptr))
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EACCES))
    } else if got < 0 {
        Err(-neg_errno())
    } else {
        Err(libc::EFAULT) // the address ran past the end of a mapping
    }
}

/// The granted path `path` (as the process `pid` names it) reaches, resolved by hcpx: its canonical form, when
/// it is that of a granted path, or a granted path named exactly.
fn granted_target(pid: libc::pid_t, path: &Path, granted: &[PathBuf]) -> Option<PathBuf> {
    let full = if path.is_absolute() {
        path.to_path_buf()
    } else {
        PathBuf::from(format!("/proc/{pid}/cwd")).join(path)
    };
    let canonical = std::fs::canonicalize(&full).ok();
    for g in granted {
        let g_canonical = std::fs::canonicalize(g).ok();
        if canonical.is_some() && canonical == g_canonical {
            return g_canonical;
        }
        if path == g.as_path() {
            return Some(g.clone());
        }
    }
    None
}

/// Whether `addr` (as the child passed it) is exactly `sockaddr_in` 127.0.0.1:`port`.
fn is_proxy(addr: &[u8], port: u16) -> bool {
    addr.len() >= 8
        && u16::from_ne_bytes([addr[0], addr[1]]) == libc::AF_INET as u16
        && addr[2..4] == port.to_be_bytes()
        && addr[4..8] == [127, 0, 0, 1]
}

/// `sockaddr_in` 127.0.0.1:`port`, made here (not the child's copy).
fn proxy_addr(port: u16) -> Vec<u8> {
    let mut a = vec![0u8; std::mem::size_of::<libc::sockaddr_in>()];
    a[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
    a[2..4].copy_from_slice(&port.to_be_bytes());
    a[4..8].copy_from_slice(&[127, 0, 0, 1]);
    a
}

fn sockaddr_un(path: &Path) -> Option<Vec<u8>> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= 108 {
        return None;
    }
    let mut sun = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
    sun.extend_from_slice(bytes);
    sun.push(0);
    Some(sun)
}

fn sockopt_int(sock: &OwnedFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut l = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes one int.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            &mut v as *mut _ as *mut libc::c_void,
            &mut l,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// Connects `sock` to `addr`, waiting at most `bound` when the socket blocks (its send timeout, which bounds a
/// connect, is lowered for the call and put back).
fn connect_bounded(sock: &OwnedFd, addr: &[u8], bound: Duration) -> i32 {
    let fd = sock.as_raw_fd();
    let tv_len = std::mem::size_of::<libc::timeval>() as libc::socklen_t;
    // SAFETY: an all-zero timeval is valid.
    let mut old: libc::timeval = unsafe { std::mem::zeroed() };
    let mut l = tv_len;
    // SAFETY: getsockopt writes one timeval.
    let have_old = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDTIMEO,
            &mut old as *mut _ as *mut libc::c_void,
            &mut l,
        )
    } == 0;
    let old_d = Duration::new(old.tv_sec.max(0) as u64, (old.tv_usec.max(0) as u32) * 1000);
    let lower = have_old && (old_d.is_zero() || old_d > bound);
    if lower {
        let tv = libc::timeval {
            tv_sec: bound.as_secs() as libc::time_t,
            tv_usec: bound.subsec_micros().max(1) as libc::suseconds_t,
        };
        // SAFETY: setsockopt reads one timeval.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                &tv as *const _ as *const libc::c_void,
                tv_len,
            )
        };
    }
    // SAFETY: connect reads `addr.len()` bytes of `addr`.
    let rc =
        unsafe { libc::connect(fd, addr.as_ptr() as *const libc::sockaddr, addr.len() as libc::socklen_t) };
    let result = if rc == 0 { 0 } else { neg_errno() };
    if lower {
        // SAFETY: as above, putting back the value read.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDTIMEO,
                &old as *const _ as *const libc::c_void,
                tv_len,
            )
        };
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_proxys_own_address_is_the_proxy() {
        let good = proxy_addr(8123);
        assert!(is_proxy(&good, 8123) && !is_proxy(&good, 8124) && !is_proxy(&good[..6], 8123));
        let mut other = good.clone();
        other[7] = 2; // 127.0.0.2
        assert!(!is_proxy(&other, 8123));
        let mut v6 = good.clone();
        v6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
        assert!(!is_proxy(&v6, 8123));
    }

    #[test]
    fn memory_is_read_by_either_way_and_a_bad_address_is_efault() {
        let me = std::process::id() as libc::pid_t;
        let secret = *b"\x01\x00/run/x.sock";
        for by_file in [false, true] {
            let mut buf = [0u8; 13];
            read_memory(me, secret.as_ptr() as u64, &mut buf, by_file).unwrap();
            assert_eq!(buf, secret);
            let e = read_memory(me, 8, &mut buf, by_file).unwrap_err();
            assert!(matches!(e, libc::EFAULT | libc::EIO), "{e}");
        }
    }

    #[test]
    fn a_granted_path_is_reached_by_its_name_or_a_link_only() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a.sock");
        let _l = std::os::unix::net::UnixListener::bind(&a).unwrap();
        let b = t.path().join("b.sock");
        let _m = std::os::unix::net::UnixListener::bind(&b).unwrap();
        std::os::unix::fs::symlink(&a, t.path().join("to-a")).unwrap();
        std::os::unix::fs::symlink(&b, t.path().join("to-b")).unwrap();
        let me = std::process::id() as libc::pid_t;
        let g = vec![a.clone()];
        let canon = std::fs::canonicalize(&a).unwrap();
        assert_eq!(granted_target(me, &a, &g), Some(canon.clone()));
        assert_eq!(granted_target(me, &t.path().join("to-a"), &g), Some(canon));
        assert_eq!(granted_target(me, &b, &g), None);
        assert_eq!(granted_target(me, &t.path().join("to-b"), &g), None);
        assert_eq!(granted_target(me, &t.path().join("x/../b.sock"), &g), None);
        // Named exactly but not there (the service is down): the connect reports it.
        let gone = t.path().join("gone.sock");
        assert_eq!(granted_target(me, &gone, std::slice::from_ref(&gone)), Some(gone));
    }
}
