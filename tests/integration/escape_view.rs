//! The escape suite for a call's view of the system: what it sees of other processes in `/proc` (#40), and
//! which modes, owners, times and extended attributes it can change outside what it may write (#34): Landlock
//! has no right for those calls, so every mount but the call's writable paths is read-only. Each test runs as
//! root and, in `.ci/run`, again as an unprivileged user (scripts/test-nonroot.sh); docs/security.md names them.

use serde_json::Value;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::escape::{evil, go, home_if, said, survivors, token, victim};
use crate::helpers::Home;

/// A fresh home where the call gets its own namespaces. Gated on `pid-namespace`, which needs what the layers
/// under test need (CAP_SYS_ADMIN, or user namespaces for an unprivileged user), and not on those layers'
/// own names: a runtime that lacks them runs these tests, and fails them.
fn namespaced() -> Option<Home> {
    home_if("pid-namespace")
}

/// A process of the test's, outside every call, with a secret on its command line and in its environment.
struct Bystander(std::process::Child);

impl Bystander {
    fn start(secret: &str) -> Bystander {
        Bystander(Command::new("sleep").arg(secret).env("HCPX_BYSTANDER_SECRET", secret).spawn().unwrap())
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every process the call can list, with its command line, first status line and environment.
const LIST_PROC: &str = "n=0; for p in /proc/[0-9]*; do n=$((n+1)); tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; head -n 1 $p/status 2>/dev/null; tr '\\0' '\\n' < $p/environ 2>/dev/null; ls -l $p/fd 2>/dev/null; done; echo \"listed=$n\"";

fn listed(v: &Value) -> usize {
    let s = v["stdout"].as_str().unwrap_or("");
    s.lines()
        .find_map(|l| l.strip_prefix("listed="))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(usize::MAX)
}

#[test]
fn another_processs_command_line_environment_and_status_are_unreadable() {
    let Some(h) = namespaced() else { return };
    let secret = token();
    let _b = Bystander::start(&secret);
    evil(&h, LIST_PROC, "read", "none");
    let v = go(&h);
    assert_eq!(v["ok"], true, "{v}");
    let s = said(&v);
    assert!(!s.contains(&secret), "a bystander's command line or environment was read: {v}");
    // The runtime's own command line (`hcpx exec evil go --json`) and the test harness's are not listed either.
    assert!(!s.contains("evil go --json") && !s.contains("integration"), "{v}");
    // Only the call's own tree: the shell running the bin (PID 1 of the call) and what it started.
    assert!(listed(&v) <= 3, "the call listed {} processes: {v}", listed(&v));
    assert_eq!(v["sandbox"]["layers"]["private-proc"], "enforced", "{v}");
}

#[test]
fn the_calls_own_children_are_visible_in_its_proc() {
    let Some(h) = namespaced() else { return };
    let t = token();
    evil(
        &h,
        // The child is listed once it has exec'd `sleep` (a loaded machine may still show the forked shell).
        &format!("sleep {t} & p=$!; i=0; while [ $i -lt 200 ] && ! tr '\\0' ' ' < /proc/$p/cmdline | grep -q '^sleep'; do sleep 0.01; i=$((i+1)); done; tr '\\0' ' ' < /proc/$p/cmdline; echo; tr '\\0' ' ' < /proc/1/cmdline; echo; grep -q '^Pid:' /proc/self/status && echo self-ok; kill $p"),
        "read",
        "none",
    );
    let v = go(&h);
    let out = v["stdout"].as_str().unwrap_or("");
    assert!(out.contains(&format!("sleep {t}")), "the call's own child is not listed: {v}");
    assert!(out.contains("bin/evil"), "PID 1 of the call is its bin: {v}");
    assert!(out.contains("self-ok"), "{v}");
    assert_eq!(survivors(&t), Vec::<i32>::new());
}

#[test]
fn a_setsid_child_is_killed_with_a_call_that_has_its_own_proc() {
    let Some(h) = namespaced() else { return };
    let t = token();
    evil(
        &h,
        &format!("setsid sleep {t} >/dev/null 2>&1 </dev/null & sleep 0.1; ls /proc | grep -c '^[0-9]'"),
        "read",
        "none",
    );
    let v = go(&h);
    assert_eq!(v["ok"], true, "{v}");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(survivors(&t), Vec::<i32>::new(), "the setsid child outlived the call: {v}");
}

#[test]
fn without_its_own_proc_the_call_says_so_and_full_refuses_it() {
    let h = Home::new();
    let secret = token();
    let _b = Bystander::start(&secret);
    evil(&h, &format!("{LIST_PROC}; echo \"$HCP_SANDBOX\""), "read", "none");
    h.write_store("sandbox.json", r#"{ "disable": ["private-proc"] }"#);
    let v = go(&h);
    assert_eq!(v["sandbox"]["layers"]["private-proc"], "unavailable", "{v}");
    assert_eq!(v["sandbox"]["mode"], "native-local", "{v}");
    assert!(v["stdout"].as_str().unwrap_or("").trim_end().ends_with("native-local"), "{v}");
    // What the layer keeps out: with it turned off, the bystander is one `cat` away (the attack is real).
    assert!(said(&v).contains(&secret), "{v}");
    h.write_store("sandbox.json", r#"{ "require": "full" }"#);
    let v = go(&h);
    assert_eq!(v["code"], "sandbox_denied", "{v}");
    assert!(v["error"].as_str().unwrap_or("").contains("private-proc"), "{v}");
}

// ---------------------------------------------------------------- metadata

/// Every form of a metadata change the attack tries.
const FORMS: &[&str] = &[
    "chmod",
    "fchmodat-nofollow",
    "fchmodat2",
    "fchmodat2-opath",
    "fchmod",
    "chown",
    "lchown",
    "fchownat-opath",
    "fchown",
    "utime",
    "utimensat-nofollow",
    "utimes",
    "futimesat",
    "futimens",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
];

/// Tries every form of a metadata change on each target, printing `CHANGED <form> <target>` for each that
/// the kernel allowed; then changes a file of its own working directory (`own-ok`), which must still work.
fn metadata_attack(targets: &[PathBuf]) -> String {
    let list: Vec<String> = targets.iter().map(|t| format!("'{}'", t.display())).collect();
    format!(
        r#"touch mine && chmod 600 mine && touch -d 2001-01-01 mine && echo own-ok
python3 - {} <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW, AT_FDCWD = 0x1000, 0x100, -100
def attempt(form, t, f):
    try:
        r = f()
    except Exception:
        return
    if r is None or r == 0:
        print("CHANGED", form, t)
def opened(t, flags):
    return os.open(t, flags)
for t in sys.argv[1:]:
    st = os.stat(t)
    bt = t.encode()
    attempt("chmod", t, lambda: os.chmod(t, 0o4777))
    attempt("fchmodat-nofollow", t, lambda: libc.fchmodat(AT_FDCWD, bt, 0o4777, AT_SYMLINK_NOFOLLOW))
    attempt("fchmodat2", t, lambda: libc.syscall(452, AT_FDCWD, bt, 0o4777, 0))
    attempt("fchmodat2-opath", t, lambda: libc.syscall(452, opened(t, os.O_PATH), b"", 0o4777, AT_EMPTY_PATH))
    attempt("fchmod", t, lambda: os.fchmod(opened(t, os.O_RDONLY), 0o4777))
    attempt("chown", t, lambda: os.chown(t, st.st_uid, st.st_gid))
    attempt("lchown", t, lambda: os.lchown(t, st.st_uid, st.st_gid))
    attempt("fchownat-opath", t, lambda: libc.fchownat(opened(t, os.O_PATH), b"", st.st_uid, st.st_gid, AT_EMPTY_PATH))
    attempt("fchown", t, lambda: os.fchown(opened(t, os.O_RDONLY), st.st_uid, st.st_gid))
    attempt("utime", t, lambda: os.utime(t, (1, 1)))
    attempt("utimensat-nofollow", t, lambda: os.utime(t, (2, 2), follow_symlinks=False))
    attempt("utimes", t, lambda: libc.utimes(bt, None))
    attempt("futimesat", t, lambda: libc.syscall(261, AT_FDCWD, bt, None))
    attempt("futimens", t, lambda: os.utime(opened(t, os.O_RDONLY), (3, 3)))
    attempt("setxattr", t, lambda: os.setxattr(t, "user.hcpx", b"1"))
    attempt("lsetxattr", t, lambda: os.setxattr(t, "user.hcpx", b"1", follow_symlinks=False))
    attempt("fsetxattr", t, lambda: os.setxattr(opened(t, os.O_RDONLY), "user.hcpx", b"1"))
    attempt("removexattr", t, lambda: os.removexattr(t, "user.hcpx"))
PY
exit 0"#,
        list.join(" ")
    )
}

/// Mode, owner and modification time of `p` (an extended attribute set and removed again shows only in the
/// call's own `CHANGED` lines).
fn meta(p: &Path) -> (u32, u32, u32, i64) {
    let m = fs::symlink_metadata(p).unwrap();
    (m.mode(), m.uid(), m.gid(), m.mtime())
}

#[test]
fn a_read_cannot_change_modes_owners_times_or_xattrs_outside_what_it_may_write() {
    let Some(h) = namespaced() else { return };
    victim(&h);
    let tool = h.t.join("tool");
    fs::write(&tool, "#!/bin/sh\necho tool\n").unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
    let store = h.store();
    let targets = vec![
        store.clone(),
        store.join("credentials"),
        store.join("grants.json"),
        store.join("workspaces/victim"),
        tool.clone(),
        // Its own installed pack: readable, so even the descriptor forms (fchmod, fchown, futimens, fsetxattr)
        // reach it.
        store.join("packs/evil/bin/evil"),
    ];
    evil(&h, &metadata_attack(&targets), "read", "workspace");
    for t in &targets {
        assert!(t.exists(), "{}", t.display());
    }
    let before: Vec<_> = targets.iter().map(|t| meta(t)).collect();
    let v = go(&h);
    let out = said(&v);
    assert!(out.contains("own-ok"), "the call's own working directory must stay changeable: {v}");
    let changed: Vec<&str> = out.lines().filter(|l| l.starts_with("CHANGED")).collect();
    assert!(changed.is_empty(), "metadata changed outside the call's view: {changed:#?}\n{v}");
    let after: Vec<_> = targets.iter().map(|t| meta(t)).collect();
    assert_eq!(before, after);
    assert_eq!(v["sandbox"]["layers"]["read-only-mounts"], "enforced", "{v}");
}

#[test]
fn without_read_only_mounts_the_metadata_attack_is_real_and_reported() {
    let h = Home::new();
    let tool = h.t.join("tool");
    fs::write(&tool, "#!/bin/sh\necho tool\n").unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
    let own_bin = h.store().join("packs/evil/bin/evil");
    evil(&h, &metadata_attack(&[tool.clone(), own_bin]), "read", "workspace");
    h.write_store("sandbox.json", r#"{ "disable": ["read-only-mounts"] }"#);
    let v = go(&h);
    assert_eq!(v["sandbox"]["layers"]["read-only-mounts"], "unavailable", "{v}");
    assert_eq!(v["sandbox"]["mode"], "native-local", "{v}");
    // Landlock alone lets a read call make every one of these changes, each form on one target at least (the
    // descriptor forms on its own readable bin): the attack the layer is tested against is real.
    let s = said(&v);
    for form in FORMS {
        assert!(s.contains(&format!("CHANGED {form} ")), "{form}: {v}");
    }
    assert!(s.contains(&format!("CHANGED chmod {}", tool.display())), "{v}");
    // (The set-user-ID bit the first chmod set is cleared again by the chown that follows it.)
    assert_eq!(fs::metadata(&tool).unwrap().mode() & 0o777, 0o777);
}

#[test]
fn a_write_keeps_metadata_changes_inside_the_project_it_may_write() {
    let Some(h) = namespaced() else { return };
    let project = crate::escape::project(&h);
    let outside = h.t.join("outside.txt");
    fs::write(&outside, "x").unwrap();
    evil(
        &h,
        &format!("chmod 640 data.txt && touch -d 2001-01-01 data.txt && echo in-ok; chmod 777 '{}' && echo out-changed; exit 0", outside.display()),
        "write",
        "project",
    );
    let v = crate::escape::go_in(&h, &project);
    let s = said(&v);
    assert!(s.contains("in-ok") && !s.contains("out-changed"), "{v}");
    assert_eq!(fs::metadata(project.join("data.txt")).unwrap().mode() & 0o777, 0o640);
    assert_ne!(fs::metadata(&outside).unwrap().mode() & 0o777, 0o777);
}

// ---------------------------------------------------------------- a host that refuses

/// Runs `hcpx ARGS` for `h` under a seccomp filter that refuses every new user namespace (`EPERM`; `clone3`
/// `ENOSYS`), as a container's default profile does while the kernel's settings allow them.
#[cfg(target_arch = "x86_64")]
fn hcpx_without_user_namespaces(h: &Home, args: &[&str]) -> Value {
    use std::os::unix::process::CommandExt;
    const ARCH_X86_64: u32 = 0xC000_003E;
    const ALLOW: u32 = 0x7fff_0000;
    const ERRNO: u32 = 0x0005_0000;
    let op = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter { code: code as u16, jt, jf, k };
    let (ld, jeq, jset, ret) = (
        libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
        libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
        libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
        libc::BPF_RET | libc::BPF_K,
    );
    let prog = vec![
        op(ld, 4, 0, 0),
        op(jeq, ARCH_X86_64, 0, 7),
        op(ld, 0, 0, 0),
        op(jeq, libc::SYS_clone3 as u32, 0, 1),
        op(ret, ERRNO | libc::ENOSYS as u32, 0, 0),
        op(jeq, libc::SYS_clone as u32, 1, 0),
        op(jeq, libc::SYS_unshare as u32, 0, 2),
        op(ld, 16, 0, 0),
        op(jset, libc::CLONE_NEWUSER as u32, 1, 0),
        op(ret, ALLOW, 0, 0),
        op(ret, ERRNO | libc::EPERM as u32, 0, 0),
    ];
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(args).env("HCP_HOME", h.t.path().join("hcp-home")).current_dir(h.t.path());
    // SAFETY: prctl and seccomp only, in the forked child before exec; `prog` lives in the parent's memory,
    // which the child has a copy of.
    unsafe {
        cmd.pre_exec(move || {
            let fprog =
                libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
#[cfg(target_arch = "x86_64")]
fn a_host_that_refuses_user_namespaces_gets_calls_that_say_so() {
    use std::io::Write;
    let probe = hcpx_sandbox::KernelProbe::get();
    if !probe.call_user_namespace() {
        let _ = writeln!(
            std::io::stderr(),
            "skipped: this runtime makes no user namespace for a call (root, or a host that allows none)"
        );
        return;
    }
    let h = Home::new();
    evil(&h, &format!("echo ran >> '{}'; echo \"$HCP_SANDBOX\"", h.marker.display()), "read", "none");
    let v = hcpx_without_user_namespaces(&h, &["exec", "evil", "go", "--json"]);
    // The call ran, without what the refused namespace would have given, and says so.
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(v["sandbox"]["mode"], "native-local", "{v}");
    assert_eq!(v["stdout"].as_str().unwrap_or("").trim(), "native-local", "{v}");
    for l in ["pid-namespace", "private-proc", "read-only-mounts"] {
        assert_eq!(v["sandbox"]["layers"][l], "unavailable", "{l}: {v}");
    }
    assert_eq!(h.runs(), 1);
    // Doctor tries one as a call would, and names the refusal.
    let d = hcpx_without_user_namespaces(&h, &["doctor", "--json"]);
    let layers = d["sandbox_layers"].as_array().unwrap_or_else(|| panic!("{d}"));
    let l = layers.iter().find(|l| l["name"] == "private-proc").unwrap();
    assert_eq!(l["status"], "unavailable", "{l}");
    let pid = layers.iter().find(|l| l["name"] == "pid-namespace").unwrap();
    assert!(pid["detail"].as_str().unwrap_or("").contains("refused"), "{pid}");
    // Under "require": "full" it is refused before anything runs (an unprivileged runtime's process limit is
    // partial too, so the refusal may name that first).
    h.write_store("sandbox.json", r#"{ "require": "full" }"#);
    let v = hcpx_without_user_namespaces(&h, &["exec", "evil", "go", "--json"]);
    assert_eq!(v["code"], "sandbox_denied", "{v}");
    assert_eq!(h.runs(), 1, "the bin ran under require full");
}
