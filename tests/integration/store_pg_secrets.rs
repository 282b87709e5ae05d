//! Issue #34 point 2: the database URL never leaves the operator. `hcpx serve --store URL` hands the URL to
//! `hcpx-serve` in its environment, never on its command line (`/proc/PID/cmdline` is every process's to
//! read); no answer, log line or error shows a password, in any form libpq takes one, even while the database
//! is away; and a password given outside the URL (`PGPASSWORD`, a password file) is used, against a role of
//! the test cluster that logs in with its password only.

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::helpers::{hcpx_with, TestDir};
use crate::pg::PasswordDb;
use crate::serve::Server;
use crate::store_pg::{write_key, Cut, PgStore};

/// What a run may not hold anywhere: the password's distinctive part (before its `:`).
fn secret(db: &PasswordDb) -> &str {
    db.password.split(':').next().unwrap()
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `hcpx ARGS` in `dir` with a hermetic password environment (no PGPASSWORD, no password file) plus `env`.
fn hcpx(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec![("PGPASSWORD", ""), ("PGPASSFILE", "/nonexistent/pgpass"), ("HCP_SEAL_KEY_FILE", "")];
    all.extend_from_slice(env);
    hcpx_with(dir, args, &all, None)
}

/// `hcpx serve` on a free port with `HCP_HOME` in `dir`, the hermetic password environment, `env` and `flags`.
fn serve(dir: &Path, flags: &[&str], env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(flags)
        .env("HCP_HOME", dir.join("hcp-home"))
        .env_remove("HCP_STORE")
        .env_remove("HCP_SEAL_KEY_FILE")
        .env("PGPASSWORD", "")
        .env("PGPASSFILE", "/nonexistent/pgpass")
        .envs(env.iter().copied())
        .current_dir(dir);
    Server::launch(cmd)
}

/// A loopback port nothing listens on: a database that is down.
fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `password` quoted for a key=value connection string.
fn quoted(password: &str) -> String {
    format!("'{}'", password.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `password` escaped for a password file line.
fn escaped(password: &str) -> String {
    password.replace('\\', "\\\\").replace(':', "\\:")
}

#[test]
fn serve_store_reaches_the_server_on_no_command_line_and_in_no_environment() {
    if crate::pg::unavailable() {
        return;
    }
    let db = crate::pg::fresh_database_with_password();
    let t = TestDir::new();
    let url = db.url_with_userinfo();
    let s = serve(t.path(), &["--store", &url], &[]);
    // The password was used: this role logs in with it only.
    let (st, _, v) = s.call("GET", "/healthz", None, None);
    assert_eq!((st, v), (200, json!({ "ok": true, "store": "postgres" })), "{}", s.log());

    let cmdline = std::fs::read(format!("/proc/{}/cmdline", s.pid())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    assert!(cmdline.contains("hcpx-serve"), "not the server: {cmdline}");
    // The server's environment, which the store may not reach either: a wrap call's child is handed what
    // the server holds only through its own allow-list, and a process of the same user reads it.
    let environ = std::fs::read(format!("/proc/{}/environ", s.pid())).unwrap();
    let environ = String::from_utf8_lossy(&environ).to_string();
    for (what, text) in [("command line", &cmdline), ("environment", &environ)] {
        for leak in [secret(&db), "postgres://", "--store", "HCP_STORE", db.database.as_str()] {
            assert!(!text.contains(leak), "the server's {what} holds {leak:?}: {text}");
        }
    }
    // Nor does the file that carried it stay open in the server.
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", s.pid()))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|l| l.display().to_string())
        .collect();
    assert!(!fds.iter().any(|l| l.contains("hcpx-serve-flags")), "{fds:?}");
    assert!(!s.log().contains(secret(&db)), "{}", s.log());
}

/// Polls `path` with `token` until it answers `status` (at most 15 s); the last (status, body).
fn until(s: &Server, path: &str, token: Option<&str>, body: Option<&Value>, status: u16) -> (u16, String) {
    let start = Instant::now();
    loop {
        let method = if body.is_some() { "POST" } else { "GET" };
        let payload = body.map(|b| b.to_string());
        let (st, _, v) = s.call(method, path, token, payload.as_deref().map(str::as_bytes));
        if st == status || start.elapsed() > Duration::from_secs(15) {
            return (st, v.to_string());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn no_answer_log_line_or_error_shows_a_password_while_the_database_is_down() {
    if crate::pg::unavailable() {
        return;
    }
    let db = crate::pg::fresh_database_with_password();
    let hide = secret(&db).to_string();
    let query_url = |port: u16| {
        format!(
            "postgres://{}@127.0.0.1:{port}/{}?sslmode=disable&password={}",
            db.role, db.database, db.password
        )
    };
    // A tenant's token, made through the CLI on the same database (password as a query parameter).
    let t = TestDir::new();
    let key = t.join("seal.key");
    write_key(&key, 3);
    let store = PgStore { t, url: query_url(db.port), key };
    let token = store.serving_alice();

    // A replica reaching the database through a proxy the test cuts.
    let cut = Cut::to(db.port);
    let home = store.home("r");
    let through_cut = query_url(cut.port);
    let key = store.key.display().to_string();
    let s = serve(&home, &[], &[("HCP_STORE", through_cut.as_str()), ("HCP_SEAL_KEY_FILE", key.as_str())]);
    let plan = json!({ "from": "A", "to": "B" });
    let (st, v) = s.post("/v1/exec/transit-db/plan", &token, &plan);
    assert_eq!(st, 200, "{v}");

    cut.cut();
    let (st, tenant) = until(&s, "/v1/exec/transit-db/plan", Some(&token), Some(&plan), 503);
    assert_eq!(st, 503, "{tenant}");
    let (st, health) = until(&s, "/healthz", None, None, 503);
    assert_eq!(st, 503, "{health}");
    let (st, ready) = until(&s, "/readyz", None, None, 503);
    assert_eq!(st, 503, "{ready}");
    // The server's stderr is read by a thread of the test's: on a busy machine its last lines arrive a moment
    // after the answers.
    let start = std::time::Instant::now();
    while !s.log().contains("\"event\":\"store_unavailable\"") && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = s.log();
    for (what, said) in [("tenant 503", &tenant), ("/healthz", &health), ("/readyz", &ready), ("log", &log)] {
        assert!(!said.contains(&hide), "{what} holds the password: {said}");
    }
    // The answers to callers it does not know name no database; the operator's log names it, masked.
    for said in [&tenant, &health, &ready] {
        assert!(!said.contains(&db.database) && !said.contains("postgres://"), "{said}");
    }
    assert!(log.contains("\"event\":\"store_unavailable\"") && log.contains("password=***"), "{log}");
    assert!(log.contains(&db.database), "the log names the database: {log}");
    drop(s);

    // Down from the start, in each form a password takes: what `hcpx serve` and `hcpx store migrate` print.
    let port = dead_port();
    let forms = [
        query_url(port),
        query_url(port).replace("password=", "PASSWORD="),
        format!("postgres://{}:{}@127.0.0.1:{port}/{}", db.role, db.password, db.database),
        format!(
            "host=127.0.0.1 port={port} user={} dbname={} password={}",
            db.role,
            db.database,
            quoted(&db.password)
        ),
    ];
    for form in &forms {
        let out = hcpx(&home, &["store", "migrate", "--json"], &[("HCP_STORE", form)]);
        assert_ne!(out.status.code(), Some(0), "{form}: {}", text(&out));
        let said = text(&out);
        assert!(!said.contains(&hide), "{form}: {said}");
        assert!(said.contains("***"), "{form}: the masked form is named: {said}");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--store", form])
            .env("HCP_HOME", home.join("hcp-home"))
            .env("PGPASSWORD", "")
            .env("PGPASSFILE", "/nonexistent/pgpass");
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{form}: {}", text(&out));
        assert!(!text(&out).contains(&hide), "{form}: {}", text(&out));
    }
}

#[test]
fn pgpassword_and_a_password_file_give_the_password_the_url_leaves_out() {
    if crate::pg::unavailable() {
        return;
    }
    let db = crate::pg::fresh_database_with_password();
    let t = TestDir::new();
    let migrate = |env: &[(&str, &str)]| {
        let mut all = vec![("HCP_STORE", db.url.as_str())];
        all.extend_from_slice(env);
        hcpx(t.path(), &["store", "migrate", "--json"], &all)
    };
    let ok = |out: Output, why: &str| {
        assert_eq!(out.status.code(), Some(0), "{why}: {}", text(&out));
        assert!(!text(&out).contains(secret(&db)), "{why}: {}", text(&out));
    };

    // Without a password the role is refused: the server asks for one.
    let out = migrate(&[]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("none was given: set PGPASSWORD"), "{}", text(&out));

    ok(migrate(&[("PGPASSWORD", &db.password)]), "PGPASSWORD");
    // A password in the URL wins over PGPASSWORD, as in libpq.
    let userinfo = db.url_with_userinfo();
    ok(migrate(&[("HCP_STORE", &userinfo), ("PGPASSWORD", "wrong")]), "the URL's own");

    // The password file: the first line that matches host, port, database and user (`*` any), escapes undone.
    let file = t.join("pgpass");
    let lines = format!(
        "# hcpx test\n127.0.0.1:{port}:other:{role}:wrong\n127.0.0.1:{port}:{db_}:someone:wrong\n*:{port}:{db_}:{role}:{pw}\n",
        port = db.port,
        role = db.role,
        db_ = db.database,
        pw = escaped(&db.password)
    );
    std::fs::write(&file, &lines).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file_s = file.to_str().unwrap();
    ok(migrate(&[("PGPASSFILE", file_s)]), "PGPASSFILE");
    // PGPASSWORD wins over the file.
    let out = migrate(&[("PGPASSFILE", file_s), ("PGPASSWORD", "wrong")]);
    assert_ne!(out.status.code(), Some(0), "PGPASSWORD was not used first");
    // ~/.pgpass when PGPASSFILE is unset.
    std::fs::write(t.join(".pgpass"), &lines).unwrap();
    std::fs::set_permissions(t.join(".pgpass"), std::fs::Permissions::from_mode(0o600)).unwrap();
    ok(migrate(&[("PGPASSFILE", ""), ("HOME", t.path().to_str().unwrap())]), "~/.pgpass");

    // A file group or others may read is refused, naming the fix, its password never used nor shown.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = migrate(&[("PGPASSFILE", file_s)]);
    assert_ne!(out.status.code(), Some(0));
    let said = text(&out);
    assert!(said.contains(&format!("chmod 600 {file_s}")) && said.contains("0644"), "{said}");
    assert!(!said.contains(secret(&db)), "{said}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();

    // A key=value connection string with its password, and the server on a password file.
    let kv = format!(
        "host=127.0.0.1 port={} user={} dbname={} password={}",
        db.port,
        db.role,
        db.database,
        quoted(&db.password)
    );
    ok(migrate(&[("HCP_STORE", &kv)]), "key=value");
    let s = serve(t.path(), &[], &[("HCP_STORE", &db.url), ("PGPASSFILE", file_s)]);
    let (st, v) = until(&s, "/readyz", None, None, 200);
    assert_eq!(st, 200, "{v}: {}", s.log());
}

/// Whether a word of a command line holds a database password: `?password=`, `password=…`, or a URL's
/// userinfo with one (`postgres://USER:PASSWORD@…`).
fn holds_password(word: &str) -> bool {
    let word = word.trim_matches(|c| matches!(c, '"' | '\'' | '`'));
    let userinfo = word
        .split_once("://")
        .filter(|(scheme, _)| scheme.ends_with("postgres") || scheme.ends_with("postgresql"))
        .and_then(|(_, rest)| rest.split_once('@'))
        .map(|(u, _)| u);
    word.to_ascii_lowercase().contains("password=") || userinfo.is_some_and(|u| u.contains(':'))
}

#[test]
fn the_docs_and_examples_keep_the_database_password_off_command_lines() {
    let repo = crate::helpers::repo();
    // The shell lines of the docs, and every example and help text of the CLI.
    let mut lines: Vec<(String, String)> = Vec::new();
    for doc in ["README.md", "docs/hosting.md", "docs/http.md", "docs/cli.md"] {
        let text = std::fs::read_to_string(repo.join(doc)).unwrap();
        let mut in_sh = false;
        for l in text.lines() {
            if l.starts_with("```") {
                in_sh = l.starts_with("```sh");
            } else if in_sh {
                lines.push((doc.to_string(), l.to_string()));
            }
        }
    }
    // The CLI's examples and help texts: every file of its clap types.
    for entry in std::fs::read_dir(repo.join("crates/hcpx-cli/src")).unwrap().flatten() {
        let (src, text) =
            (entry.path().display().to_string(), std::fs::read_to_string(entry.path()).unwrap());
        lines.extend(text.split("\\n").map(|l| (src.clone(), l.to_string())));
    }
    for (file, line) in &lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert!(!words.iter().any(|w| holds_password(w)), "{file}: a password on a command line: {line}");
        for pair in words.windows(2).filter(|p| p[0] == "--store") {
            assert!(
                !pair[1].contains('$'),
                "{file}: --store given a variable that may hold a password: {line}"
            );
        }
    }
    let hosting = std::fs::read_to_string(repo.join("docs/hosting.md")).unwrap();
    for named in ["PGPASSWORD", "PGPASSFILE", "~/.pgpass", "chmod 600"] {
        assert!(hosting.contains(named), "docs/hosting.md does not say {named}");
    }
    let t = TestDir::new();
    let help = hcpx_with(t.path(), &["serve", "--help"], &[], None);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("Other processes can read a command line") && help.contains("PGPASSWORD"),
        "{help}"
    );
}
