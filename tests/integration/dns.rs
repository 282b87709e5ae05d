//! A real resolver for egress tests, with nothing off the machine: `isolated` runs a test again inside a
//! network namespace of its own (only `lo`, so a non-loopback address is unreachable and no packet leaves) and
//! a mount namespace whose `/etc/resolv.conf` names `127.0.0.1`, where `Responder`, a small DNS server started
//! by the test in that namespace, answers each name by a script (first this address, then that one). The
//! system resolver of every process the test starts there (hcpx's `getaddrinfo`) asks it. For DNS rebinding
//! between the check and the connect (issue #36), for wraps now and composites' HTTP later.

use std::collections::HashMap;
use std::net::{Ipv4Addr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::TestDir;

/// Set in the environment of the test run again inside the namespaces.
const INSIDE: &str = "HCPX_TEST_NETNS";

/// The namespaces a test runs in (its files are bind-mounted over /etc and go with the mount namespace).
pub struct Netns {
    _files: TestDir,
}

/// Runs test `name` (`module::test`, as `cargo test` lists it) again, alone, inside a fresh network and mount
/// namespace (`unshare --net --mount`; a user namespace first when not root, `--map-root-user`), and returns
/// `None`: the test is then done, passed or panicked with what the run inside printed. Inside that run it sets
/// the namespaces up (`lo` up, `/etc/resolv.conf` naming `127.0.0.1`, `/etc/nsswitch.conf` asking files then
/// DNS, `/etc/hosts` naming only localhost, no nscd socket) and returns them, and the test goes on. `None` too, with a printed
/// reason, where the namespaces cannot be made.
pub fn isolated(name: &str) -> Option<Netns> {
    if std::env::var_os(INSIDE).is_some() {
        return Some(set_up());
    }
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    let mut unshare = vec!["--net", "--mount", "--propagation", "private"];
    if !root {
        unshare.insert(0, "--map-root-user");
    }
    let can = std::process::Command::new("unshare").args(&unshare).arg("true").output();
    if !can.as_ref().is_ok_and(|o| o.status.success()) {
        let why =
            can.map_or_else(|e| e.to_string(), |o| String::from_utf8_lossy(&o.stderr).trim().to_string());
        eprintln!("skipped: no network namespace of its own for {name} here: unshare {unshare:?}: {why}");
        return None;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("unshare")
        .args(&unshare)
        .arg("--")
        .arg(exe)
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(INSIDE, "1")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name} inside its namespaces ({}):\n{stdout}\n{stderr}",
        out.status
    );
    // What the run inside skipped, said again where the non-root pass reads it.
    for line in stderr.lines().filter(|l| l.starts_with("skipped: ")) {
        eprintln!("{line}");
    }
    None
}

fn set_up() -> Netns {
    loopback_up();
    let files = TestDir::new();
    for (etc, text) in [
        ("/etc/resolv.conf", "nameserver 127.0.0.1\noptions timeout:5 attempts:2\n"),
        ("/etc/nsswitch.conf", "hosts: files dns\n"),
        ("/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n"),
    ] {
        let ours = files.join(etc.trim_start_matches("/etc/"));
        std::fs::write(&ours, text).unwrap();
        if !std::path::Path::new(etc).exists() {
            // A bind mount needs a file to cover; glibc reads none as `files dns` for hosts anyway.
            assert_ne!(etc, "/etc/resolv.conf", "no /etc/resolv.conf to cover");
            continue;
        }
        let (src, dst) = (cstr(ours.to_str().unwrap()), cstr(etc));
        // SAFETY: two NUL-terminated paths; a bind mount in this process's own mount namespace (unshare made it
        // with private propagation, so nothing reaches the machine's).
        let rc = unsafe {
            libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null())
        };
        assert_eq!(rc, 0, "bind {etc}: {}", std::io::Error::last_os_error());
    }
    // glibc asks a running nscd first, over its UNIX socket, which is no network's: nscd, outside, would send the
    // query off the machine. An empty directory over its socket's keeps every lookup here.
    let empty = files.join("empty");
    std::fs::create_dir(&empty).unwrap();
    for dir in ["/var/run/nscd", "/run/nscd"] {
        if std::path::Path::new(dir).is_dir() {
            let (src, dst) = (cstr(empty.to_str().unwrap()), cstr(dir));
            // SAFETY: as above.
            let rc = unsafe {
                libc::mount(src.as_ptr(), dst.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null())
            };
            assert_eq!(rc, 0, "bind over {dir}: {}", std::io::Error::last_os_error());
        }
    }
    Netns { _files: files }
}

fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

/// `struct ifreq` with the flags member (its union is 24 bytes on 64-bit Linux).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// `ip link set lo up`, without needing iproute2.
fn loopback_up() {
    // SAFETY: a datagram socket for the ioctls, closed below; `req` is a full `struct ifreq`.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mut req = IfReq { name: [0; libc::IFNAMSIZ], flags: 0, _rest: [0; 22] };
        req.name[..2].copy_from_slice(b"lo");
        let got = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        req.flags |= libc::IFF_UP as libc::c_short;
        let set = libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        assert!(got == 0 && set == 0, "lo up: {err}");
    }
}

/// A DNS server on UDP `127.0.0.1:53` (in the test's own network namespace): the Nth `A` query for a name is
/// answered with step N of its script (the last step for every later one), with a TTL of 0; `AAAA` gets no
/// address (NOERROR, no answer), any other name NXDOMAIN. Every query is logged. Stopped when dropped.
pub struct Responder {
    log: Arc<Mutex<Vec<(String, u16)>>>,
    stop: Arc<AtomicBool>,
}

const A: u16 = 1;
const AAAA: u16 = 28;

impl Responder {
    pub fn start(scripts: &[(&str, &[&[Ipv4Addr]])]) -> Responder {
        let sock = UdpSocket::bind("127.0.0.1:53").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let scripts: HashMap<String, Vec<Vec<Ipv4Addr>>> = scripts
            .iter()
            .map(|(name, steps)| (name.to_string(), steps.iter().map(|s| s.to_vec()).collect()))
            .collect();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            let until = Instant::now() + Duration::from_secs(600);
            // Bounded: stopped when dropped, and after ten minutes or 10000 queries in any case.
            while !s.load(Ordering::SeqCst) && Instant::now() < until && l.lock().unwrap().len() < 10_000 {
                let Ok((n, from)) = sock.recv_from(&mut buf) else { continue };
                let Some((name, qtype, qend)) = question(&buf[..n]) else { continue };
                let asked = l.lock().unwrap().iter().filter(|(q, t)| q == &name && *t == A).count();
                l.lock().unwrap().push((name.clone(), qtype));
                let answer = match (scripts.get(&name), qtype) {
                    (None, _) => reply(&buf[..qend], 3, &[]),
                    (Some(steps), A) => reply(&buf[..qend], 0, &steps[asked.min(steps.len() - 1)]),
                    (Some(_), _) => reply(&buf[..qend], 0, &[]),
                };
                let _ = sock.send_to(&answer, from);
            }
        });
        Responder { log, stop }
    }

    /// How many queries of `qtype` (`"A"` or `"AAAA"`) asked for `name`.
    pub fn asked(&self, name: &str, qtype: &str) -> usize {
        let t = if qtype == "A" { A } else { AAAA };
        self.log.lock().unwrap().iter().filter(|(q, k)| q == name && *k == t).count()
    }

    /// Every query, in order (`name type`).
    pub fn queries(&self) -> Vec<String> {
        self.log.lock().unwrap().iter().map(|(n, t)| format!("{n} {t}")).collect()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The one question of a query: its lower-case name, type, and where it ends.
fn question(msg: &[u8]) -> Option<(String, u16, usize)> {
    if msg.len() < 12 || msg[2] & 0x80 != 0 || u16::from_be_bytes([msg[4], msg[5]]) != 1 {
        return None;
    }
    let (mut at, mut labels) = (12, Vec::new());
    loop {
        let len = *msg.get(at)? as usize;
        at += 1;
        if len == 0 {
            break;
        }
        if len > 63 {
            return None;
        }
        labels.push(String::from_utf8_lossy(msg.get(at..at + len)?).to_ascii_lowercase());
        at += len;
    }
    let qtype = u16::from_be_bytes([*msg.get(at)?, *msg.get(at + 1)?]);
    Some((labels.join("."), qtype, at + 4))
}

/// The answer to `query` (its header and question): `rcode`, and one `A` record per address.
fn reply(query: &[u8], rcode: u8, addrs: &[Ipv4Addr]) -> Vec<u8> {
    let mut out = query.to_vec();
    out[2] = 0x84 | (query[2] & 0x01); // QR, AA, RD as asked
    out[3] = 0x80 | rcode; // RA
    out[6..8].copy_from_slice(&(addrs.len() as u16).to_be_bytes());
    out[8..12].fill(0);
    for a in addrs {
        out.extend_from_slice(&[0xc0, 0x0c]); // the question's name
        out.extend_from_slice(&A.to_be_bytes());
        out.extend_from_slice(&1u16.to_be_bytes()); // IN
        out.extend_from_slice(&0u32.to_be_bytes()); // TTL 0: nothing may keep it
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&a.octets());
    }
    out
}
