//! The escape suite, continued (issue #24 point 4): the gaps docs/security.md listed as not covered. A
//! pathname UNIX socket (a Docker or PostgreSQL socket is a full escape), the `--help` that `hcpx wrap` runs,
//! and a `.git` planted in a project that had none. Each test fails if the attack succeeds; a test that needs
//! a layer this kernel lacks is skipped with a printed reason.

use serde_json::{json, Value};
use std::fs;
use std::os::unix::net::{UnixDatagram, UnixListener};
use std::path::Path;

use crate::escape::{evil, evil_with, go, go_in, home_if, project, said};
use crate::helpers::{hcpx_with, Home};

/// Perl that connects a stream socket to `path` and says whether it got through.
fn connect_to(path: &Path) -> String {
    format!(
        "perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or do {{ print \"no socket: $!\\n\"; exit 0 }}; connect($s, pack_sockaddr_un(\"{}\")) and print \"connected\\n\"'; exit 0",
        path.display()
    )
}

/// The pack declares `path` in `wrap.unix_sockets`.
fn declaring(path: &Path) -> impl FnOnce(&mut crate::helpers::Fixture) + '_ {
    move |f| f.surface["wrap"]["unix_sockets"] = json!([path])
}

#[test]
fn a_pathname_unix_socket_outside_the_call_is_refused() {
    let Some(h) = home_if("seccomp") else { return };
    // What a Docker or PostgreSQL socket is: a listening socket the user can connect to.
    let path = h.t.join("docker.sock");
    let l = UnixListener::bind(&path).unwrap();
    l.set_nonblocking(true).unwrap();
    evil(&h, &connect_to(&path), "read", "none");
    let v = go(&h);
    assert!(!said(&v).contains("connected"), "{v}");
    assert!(l.accept().is_err(), "{v}");
}

#[test]
fn a_datagram_socketpair_cannot_send_to_a_pathname_socket() {
    let Some(h) = home_if("seccomp") else { return };
    // A socketpair needs no name, but a datagram one can still send to any named socket (a journal, syslog).
    let path = h.t.join("journal.sock");
    let r = UnixDatagram::bind(&path).unwrap();
    r.set_nonblocking(true).unwrap();
    // SOCK_RAW makes a datagram UNIX pair too.
    evil(&h, &format!("for t in SOCK_DGRAM SOCK_RAW; do perl -MSocket -e \"socketpair(my \\$a, my \\$b, AF_UNIX, $t, 0) or do {{ print qq(no pair: \\$!\\n); exit 0 }}; send(\\$a, q(planted), 0, pack_sockaddr_un(q({}))) and print qq(sent\\n)\"; done; exit 0", path.display()), "read", "none");
    let v = go(&h);
    assert!(!said(&v).contains("sent"), "{v}");
    assert_eq!(said(&v).matches("no pair").count(), 2, "{v}");
    let mut buf = [0u8; 64];
    assert!(r.recv(&mut buf).is_err(), "a datagram arrived: {v}");
}

#[test]
fn a_unix_socket_the_pack_declares_needs_the_operators_grant_and_then_connects() {
    let Some(h) = home_if("seccomp") else { return };
    let path = h.t.join("pg.sock");
    let l = UnixListener::bind(&path).unwrap();
    l.set_nonblocking(true).unwrap();
    evil_with(&h, &connect_to(&path), "read", "none", declaring(&path));
    // Declared, not granted: refused before anything runs, naming what to add.
    let v = go(&h);
    assert_eq!(v["code"], "sandbox_denied", "{v}");
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("unix_sockets") && e.contains(path.to_str().unwrap()), "{e}");
    assert!(!said(&v).contains("connected"), "{v}");
    // Granted the same path in sandbox.json: the command reaches it.
    h.write_store("sandbox.json", &json!({ "packs": { "evil": { "unix_sockets": [path] } } }).to_string());
    let v = go(&h);
    assert!(said(&v).contains("connected"), "{v}");
    // Another path is not granted by the grant of this one.
    let other = h.t.join("other.sock");
    h.write_store("sandbox.json", &json!({ "packs": { "evil": { "unix_sockets": [other] } } }).to_string());
    assert_eq!(go(&h)["code"], "sandbox_denied");
}

// ---------------------------------------------------------------- hcpx wrap's --help

#[test]
fn wrap_reads_a_clis_help_confined() {
    let Some(h) = home_if("landlock") else { return };
    let bin = h.t.join("bin");
    let user_home = h.t.join("user-home");
    fs::create_dir_all(&bin).unwrap();
    fs::create_dir_all(&user_home).unwrap();
    // A secret of the user's, laid out as a help line would be, so that if `--help` can read it, the
    // scaffold turns it into a command.
    fs::write(user_home.join(".netrc"), "  leakedsecret   a subcommand\n").unwrap();
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --help ] || exit 0\necho pwned > \"$PWD/planted\"\necho pwned > \"$HOME/planted\"\necho pwned > '{home}/planted-abs'\ncat '{home}/.netrc'\necho 'Usage: nosy <command>'\necho\necho 'Commands:'\necho '  list   List the things'\n",
        home = user_home.display()
    );
    fs::write(bin.join("nosy"), script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("nosy"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = hcpx_with(
        h.t.path(),
        &["wrap", "nosy", "--out", "nosy-pack", "--json"],
        &[("PATH", &path), ("HOME", user_home.to_str().unwrap())],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    for planted in [h.t.join("planted"), user_home.join("planted"), user_home.join("planted-abs")] {
        assert!(!planted.exists(), "--help wrote {}", planted.display());
    }
    let surface: Value =
        serde_json::from_str(&fs::read_to_string(h.t.join("nosy-pack/surface.json")).unwrap()).unwrap();
    let verbs = surface["verbs"].as_object().unwrap();
    assert!(verbs.contains_key("list"), "the help was still read: {surface}");
    assert!(!verbs.contains_key("leakedsecret"), "--help read the user's file: {surface}");
}

// ---------------------------------------------------------------- a project without .git

#[test]
fn a_write_cannot_give_a_project_without_git_a_git() {
    let Some(h) = home_if("landlock") else { return };
    let p = project(&h);
    evil(&h, "mkdir -p .git/hooks && printf '[core]\\n\\tfsmonitor = /tmp/x\\n' > .git/config && printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/post-checkout && echo made", "write", "project");
    let v = go_in(&h, &p);
    assert_eq!(v["ok"], false, "{v}");
    assert!(!p.join(".git").exists(), "a .git was left in the project: {v}");
    assert_eq!(fs::read_to_string(p.join("data.txt")).unwrap(), "original");
    // The same with a .git file (a gitfile pointing anywhere) or a link.
    evil(&h, "echo 'gitdir: /tmp/elsewhere' > .git", "write", "project");
    let v = go_in(&h, &p);
    assert_eq!(v["ok"], false, "{v}");
    assert!(fs::symlink_metadata(p.join(".git")).is_err(), "{v}");
}

// ---------------------------------------------------------------- disk

/// The bytes allocated under `dir`.
fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let m = e.metadata().unwrap();
        total += m.blocks() * 512;
        if m.is_dir() {
            total += du(&e.path());
        }
    }
    total
}

#[test]
fn a_call_cannot_fill_the_disk_through_its_workspace_or_its_tmpdir() {
    let h = Home::new();
    // 400 MiB in 1 MiB files (each under max_file_mb), against a cap of 8 MiB.
    let fill = |dir: &str| {
        format!("i=0; while [ $i -lt 400 ]; do head -c 1048576 /dev/zero > \"{dir}/f$i\" || exit 9; i=$((i+1)); done; echo wrote-all")
    };
    evil(&h, &fill("."), "write", "workspace");
    h.write_store("sandbox.json", r#"{ "max_disk_mb": 8 }"#);
    let v = go(&h);
    assert_eq!((v["ok"].as_bool(), v["code"].as_str()), (Some(false), Some("sandbox_denied")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("past max_disk_mb (8 MiB)"), "{v}");
    assert!(!said(&v).contains("wrote-all"), "{v}");
    let kept = du(&h.store().join("workspaces/evil"));
    assert!(kept < 200 << 20, "the call wrote {kept} bytes");
    // The store is whole: the refused write has its audit line, and the chain verifies.
    let rows = h.audit_log();
    assert!(rows.lines().any(|l| l.contains("\"sandbox_denied\"") && l.contains("\"evil\"")), "{rows}");
    assert_eq!(h.run(&["audit", "verify"]).status.code(), Some(0));

    // The same through TMPDIR, from a read that writes nothing else.
    let h = Home::new();
    evil(&h, &fill("$TMPDIR"), "read", "none");
    h.write_store("sandbox.json", r#"{ "max_disk_mb": 8 }"#);
    let v = go(&h);
    assert_eq!((v["ok"].as_bool(), v["code"].as_str()), (Some(false), Some("sandbox_denied")), "{v}");
    assert!(!said(&v).contains("wrote-all"), "{v}");
    // Under the cap, a call writes what it needs.
    evil(&h, "head -c 1048576 /dev/zero > \"$TMPDIR/one\" && echo fine", "read", "none");
    let v = go(&h);
    assert_eq!((v["ok"].as_bool(), v["stdout"].as_str().map(str::trim)), (Some(true), Some("fine")), "{v}");
}

#[test]
fn a_composite_write_cannot_give_a_project_without_git_a_git() {
    let h = Home::new();
    let p = project(&h);
    let v = crate::escape::gitw_writes_in(&h, &p);
    assert_eq!((v["ok"].clone(), v["code"].as_str()), (json!(false), Some("sandbox_denied")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("created .git"), "{v}");
    assert!(fs::symlink_metadata(p.join(".git")).is_err(), "{v}");
    assert!(p.join("written.txt").exists(), "the rest of the project stays writable");
}

/// Python that tries every way it can think of to reach the socket `B` it was not granted, beside the socket `A`
/// it was: directly, relatively, through `..`, through a symlink, with a datagram socket (or pair) naming `B`
/// (or the datagram socket `D`), and with the address swapped between `A` and `B` by another thread while each
/// connect is checked. One line per attempt.
const SOCKET_ATTACK: &str = r#"
import ctypes, errno, os, socket, sys, threading
A, B, D = sys.argv[1:4]
def err(e): return errno.errorcode.get(e.errno, str(e.errno))
def tryc(label, addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.setblocking(False)
    try:
        s.connect(addr); print(label, "connected")
    except OSError as e: print(label, "refused", err(e))
tryc("granted", A)
tryc("other", B)
tryc("relative", os.path.relpath(B))
d = os.path.dirname(B)
tryc("dotdot", os.path.dirname(A) + "/../" + os.path.basename(d) + "/" + os.path.basename(B))
tmp = os.environ["TMPDIR"]
os.symlink(B, tmp + "/to-b.sock"); tryc("symlink", tmp + "/to-b.sock")
os.symlink(A, tmp + "/to-a.sock"); tryc("granted-symlink", tmp + "/to-a.sock")
for name, kind in (("dgram", socket.SOCK_DGRAM), ("raw", socket.SOCK_RAW)):
    try:
        s = socket.socket(socket.AF_UNIX, kind); s.sendto(b"planted", D); print(name, "sent")
    except OSError as e: print(name, "refused", err(e))
    try:
        p, q = socket.socketpair(socket.AF_UNIX, kind); p.sendmsg([b"planted"], [], 0, D); print(name + "-pair", "sent")
    except OSError as e: print(name + "-pair", "refused", err(e))
for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
    try:
        s = socket.socket(socket.AF_UNIX, kind); s.sendto(b"planted", D); print("stream-sendto", "sent")
    except OSError as e: print("stream-sendto", "refused", err(e))
libc = ctypes.CDLL(None, use_errno=True)
def sun(p):
    b = p.encode()
    return (socket.AF_UNIX).to_bytes(2, sys.byteorder) + b + b"\0" * (108 - len(b))
a, b = sun(A), sun(B)
buf = ctypes.create_string_buffer(a, 110)
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, b, 110); ctypes.memmove(buf, a, 110)
t = threading.Thread(target=flip); t.start()
ok = refused = 0
for i in range(100):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.setblocking(False)
    if libc.connect(s.fileno(), buf, 110) == 0: ok += 1
    else: refused += 1
    s.close()
stop = True; t.join()
print("race", ok, "connected", refused, "refused")
"#;

#[test]
fn a_granted_unix_socket_is_the_only_one_the_call_can_reach() {
    let Some(h) = home_if("seccomp") else { return };
    let socks = h.t.join("socks");
    fs::create_dir_all(&socks).unwrap();
    let (a, b, d) = (socks.join("a.sock"), socks.join("b.sock"), socks.join("d.sock"));
    let la = UnixListener::bind(&a).unwrap();
    let lb = UnixListener::bind(&b).unwrap();
    let rd = UnixDatagram::bind(&d).unwrap();
    lb.set_nonblocking(true).unwrap();
    rd.set_nonblocking(true).unwrap();
    let script = format!(
        "/usr/bin/python3 \"$(dirname \"$0\")/attack.py\" '{}' '{}' '{}'",
        a.display(),
        b.display(),
        d.display()
    );
    evil_with(&h, &script, "read", "none", |f| {
        f.surface["wrap"]["unix_sockets"] = json!([a]);
        f.files.push(("bin/attack.py".into(), SOCKET_ATTACK.into(), false));
    });
    h.write_store("sandbox.json", &json!({ "packs": { "evil": { "unix_sockets": [a] } } }).to_string());
    let v = go(&h);
    let out = v["stdout"].as_str().unwrap_or_default().to_string();
    let line = |label: &str| {
        out.lines()
            .find(|l| l.split(' ').next() == Some(label))
            .unwrap_or_else(|| panic!("no {label}: {v}"))
            .to_string()
    };
    // What it was granted, it reaches, however it names it.
    assert_eq!(line("granted"), "granted connected", "{v}");
    assert_eq!(line("granted-symlink"), "granted-symlink connected", "{v}");
    // Nothing else: refused with EACCES (a path) or EPERM (a datagram socket).
    for label in ["other", "relative", "dotdot", "symlink"] {
        assert_eq!(line(label), format!("{label} refused EACCES"), "{v}");
    }
    for label in ["dgram", "dgram-pair", "raw", "raw-pair"] {
        assert_eq!(line(label), format!("{label} refused EPERM"), "{v}");
    }
    assert!(!out.contains(" sent"), "{v}");
    // The race: whatever the address read when checked, nothing reached B (how many reached A depends on the
    // timing, printed for the record).
    let race = line("race");
    eprintln!("{race}");
    assert!(lb.accept().is_err(), "a connection reached the socket that was not granted: {race}");
    let mut buf = [0u8; 64];
    assert!(rd.recv(&mut buf).is_err(), "a datagram reached the socket that was not granted: {v}");
    // The granted socket got the connections the call made.
    la.set_nonblocking(true).unwrap();
    assert!(la.accept().is_ok(), "{v}");
}

#[test]
fn with_a_unix_socket_granted_the_calls_other_connects_still_work() {
    let Some(h) = home_if("seccomp") else { return };
    // Every connect of a call granted a socket goes through hcpx: a blocking connect to the granted socket,
    // a TCP connect (the pack is granted inet too) and a connect to a granted socket that is down all answer
    // as the kernel would; an abstract name is refused.
    let a = h.t.join("a.sock");
    let down = h.t.join("down.sock");
    let la = UnixListener::bind(&a).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let script = format!(
        r#"/usr/bin/python3 -c '
import errno, socket
def tryc(label, fam, addr, blocking=True):
    s = socket.socket(fam, socket.SOCK_STREAM); s.setblocking(blocking)
    try: s.connect(addr); print(label, "connected")
    except OSError as e: print(label, "refused", errno.errorcode.get(e.errno, e.errno))
tryc("blocking", socket.AF_UNIX, "{a}")
tryc("down", socket.AF_UNIX, "{down}")
tryc("tcp", socket.AF_INET, ("127.0.0.1", {port}))
tryc("abstract", socket.AF_UNIX, "\0hcpx-test-abstract")
'"#,
        a = a.display(),
        down = down.display()
    );
    evil_with(&h, &script, "read", "none", |f| {
        f.surface["wrap"]["unix_sockets"] = json!([a, down]);
        f.surface["wrap"]["network"] = json!(["inet"]);
    });
    h.write_store(
        "sandbox.json",
        &json!({ "packs": { "evil": { "unix_sockets": [a, down], "network": ["inet"] } } }).to_string(),
    );
    let v = go(&h);
    assert_eq!(
        v["stdout"].as_str(),
        Some("blocking connected\ndown refused ENOENT\ntcp connected\nabstract refused EACCES\n"),
        "{v}"
    );
    la.set_nonblocking(true).unwrap();
    tcp.set_nonblocking(true).unwrap();
    assert!(la.accept().is_ok() && tcp.accept().is_ok(), "{v}");
}
