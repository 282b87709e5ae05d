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
    evil(&h, &format!("perl -MSocket -e 'socketpair(my $a, my $b, AF_UNIX, SOCK_DGRAM, 0) or do {{ print \"no pair: $!\\n\"; exit 0 }}; send($a, \"planted\", 0, pack_sockaddr_un(\"{}\")) and print \"sent\\n\"'; exit 0", path.display()), "read", "none");
    let v = go(&h);
    assert!(!said(&v).contains("sent"), "{v}");
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
