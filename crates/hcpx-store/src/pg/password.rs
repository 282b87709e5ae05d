//! The password of a connection given outside its connection string, found as libpq finds it: `PGPASSWORD`,
//! else the password file (`PGPASSFILE`, else `~/.pgpass`; lines `host:port:database:user:password`, `*` a
//! whole field that matches anything, `\` escaping the next character, `#` a comment). tokio-postgres reads
//! neither, so [`fill`] applies them to a parsed config that has no password of its own. A password file that
//! group or others may read is refused, never used (libpq ignores one with a warning).

use std::path::{Path, PathBuf};

use tokio_postgres::config::Host;
use tokio_postgres::Config;

use crate::StoreError;

/// Gives `config` the password of `PGPASSWORD` or of the first line of the password file that matches it,
/// when its connection string gave none (an empty password is none, as for libpq).
pub(crate) fn fill(config: &mut Config) -> Result<(), StoreError> {
    if config.get_password().is_some_and(|p| !p.is_empty()) {
        return Ok(());
    }
    if let Some(p) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
        use std::os::unix::ffi::OsStrExt;
        config.password(p.as_bytes());
        return Ok(());
    }
    let Some(path) = passfile_path() else { return Ok(()) };
    let Some(text) = read_passfile(&path)? else { return Ok(()) };
    for want in lookups(config) {
        if let Some(password) = lookup(&text, &want) {
            config.password(password);
            return Ok(());
        }
    }
    Ok(())
}

/// `PGPASSFILE`, else `$HOME/.pgpass`.
fn passfile_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PGPASSFILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(".pgpass"))
}

/// The password file's bytes; `None` when there is none (missing, unreadable, or not a plain file, which libpq
/// skips too: `PGPASSFILE=/dev/null` turns it off). Refused when group or others have any access to it.
fn read_passfile(path: &Path) -> Result<Option<Vec<u8>>, StoreError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    // Looked at before it is opened (a FIFO would block the open), and again once open (what is read).
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(None);
    }
    let Ok(mut file) = std::fs::File::open(path) else { return Ok(None) };
    let Ok(meta) = file.metadata() else { return Ok(None) };
    if !meta.is_file() {
        return Ok(None);
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        let shown = path.display();
        return Err(StoreError::Refused(format!(
            "the password file {shown} is open to group or others (mode {mode:04o}), so it is not used; run `chmod 600 {shown}`, or give the password through PGPASSWORD"
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| StoreError::io(path, e))?;
    Ok(Some(bytes))
}

/// The directories libpq builds look for the server's socket in by default (Debian's, then upstream's): a
/// socket there is `localhost` to the password file.
const DEFAULT_SOCKET_DIRS: [&str; 3] = ["/var/run/postgresql", "/run/postgresql", "/tmp"];

/// What a line must match for each host of `config`, in order: host, port, database, user. A Unix socket in
/// the default directory is `localhost`, as for libpq; no user (none given, and none found) matches only `*`.
fn lookups(config: &Config) -> Vec<[Option<Vec<u8>>; 4]> {
    let user = config.get_user().map(str::to_string).or_else(os_user);
    let database = config.get_dbname().map(str::to_string).or_else(|| user.clone());
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(dir) if DEFAULT_SOCKET_DIRS.iter().any(|d| dir == Path::new(d)) => "localhost".into(),
            Host::Unix(dir) => dir.display().to_string(),
        })
        .collect();
    if hosts.is_empty() {
        hosts = config.get_hostaddrs().iter().map(|a| a.to_string()).collect();
    }
    if hosts.is_empty() {
        hosts.push("localhost".into());
    }
    let ports = config.get_ports();
    hosts
        .into_iter()
        .enumerate()
        .map(|(i, host)| {
            let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
            [
                Some(host.into_bytes()),
                Some(port.to_string().into_bytes()),
                database.clone().map(String::into_bytes),
                user.clone().map(String::into_bytes),
            ]
        })
        .collect()
}

/// The password of the first line of `text` whose four fields match `want`; `None` when none does or the
/// first that does has an empty password.
fn lookup(text: &[u8], want: &[Option<Vec<u8>>; 4]) -> Option<Vec<u8>> {
    'lines: for line in text.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let mut rest = line;
        for field in want {
            match field_matches(rest, field.as_deref()) {
                Some(next) => rest = next,
                None => continue 'lines,
            }
        }
        let password = unescape_field(rest);
        return (!password.is_empty()).then_some(password);
    }
    None
}

/// When the first field of `line` matches `token` (`*`, or the token with `\` escapes), the rest of the line
/// after its `:`.
fn field_matches<'a>(line: &'a [u8], token: Option<&[u8]>) -> Option<&'a [u8]> {
    if let Some(rest) = line.strip_prefix(b"*:") {
        return Some(rest);
    }
    let token = token?;
    let (mut i, mut t) = (0, 0);
    while i < line.len() {
        let mut c = line[i];
        let mut escaped = false;
        if c == b'\\' && i + 1 < line.len() {
            i += 1;
            c = line[i];
            escaped = true;
        }
        if c == b':' && !escaped {
            return (t == token.len()).then(|| &line[i + 1..]);
        }
        if token.get(t) != Some(&c) {
            return None;
        }
        i += 1;
        t += 1;
    }
    None
}

/// The field at the start of `rest`, up to an unescaped `:`, without its escapes.
fn unescape_field(rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() && rest[i] != b':' {
        if rest[i] == b'\\' && i + 1 < rest.len() {
            i += 1;
        }
        out.push(rest[i]);
        i += 1;
    }
    out
}

/// The name of this process's effective user (libpq's default user), from the password database: the same
/// lookup the driver makes for its own default user (whoami's `getpwuid_r` of the effective uid).
fn os_user() -> Option<String> {
    whoami::username().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(host: &str, port: &str, db: &str, user: &str) -> [Option<Vec<u8>>; 4] {
        [host, port, db, user].map(|s| Some(s.as_bytes().to_vec()))
    }

    #[test]
    fn the_first_matching_line_gives_the_password_with_wildcards_and_escapes() {
        let file = b"# a comment\r\n\
            db:5432:other:hcpx:wrong\n\
            db:5432:hcpx:hcpx:pa\\:ss\\\\word:ignored\n\
            *:*:*:*:fallback\n";
        assert_eq!(lookup(file, &want("db", "5432", "hcpx", "hcpx")).as_deref(), Some(&b"pa:ss\\word"[..]));
        assert_eq!(lookup(file, &want("db", "5433", "hcpx", "hcpx")).as_deref(), Some(&b"fallback"[..]));
        let escaped_host = b"my\\:host:5432:*:*:pw\n";
        assert_eq!(lookup(escaped_host, &want("my:host", "5432", "x", "y")).as_deref(), Some(&b"pw"[..]));
        assert_eq!(lookup(escaped_host, &want("myhost", "5432", "x", "y")), None);
        // `*` is a whole field, never a pattern; a user nobody knows matches only `*`.
        assert_eq!(lookup(b"d*:5432:*:*:pw\n", &want("db", "5432", "x", "y")), None);
        assert_eq!(
            lookup(
                b"db:5432:x:hcpx:pw\n",
                &[Some(b"db".to_vec()), Some(b"5432".to_vec()), Some(b"x".to_vec()), None]
            ),
            None
        );
        // The first match wins even with an empty password (then there is none), as in libpq.
        assert_eq!(lookup(b"db:5432:x:y:\ndb:5432:x:y:later\n", &want("db", "5432", "x", "y")), None);
    }

    #[test]
    fn each_host_of_the_config_is_looked_up_with_its_port_and_the_defaults() {
        let config: Config = "postgres://hcpx@db1:5433,db2/app".parse().unwrap();
        let found = lookups(&config);
        assert_eq!(found, vec![want("db1", "5433", "app", "hcpx"), want("db2", "5432", "app", "hcpx")]);
        let socket: Config = "host=/var/run/postgresql user=u".parse().unwrap();
        assert_eq!(lookups(&socket), vec![want("localhost", "5432", "u", "u")]);
    }

    #[test]
    fn a_password_file_others_may_read_is_refused_naming_the_fix() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "*:*:*:*:s3cret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = read_passfile(&path).unwrap_err().to_string();
        assert!(e.contains("chmod 600") && e.contains("0640") && !e.contains("s3cret"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_passfile(&path).unwrap().as_deref(), Some(&b"*:*:*:*:s3cret\n"[..]));
        assert_eq!(read_passfile(&dir.path().join("missing")).unwrap(), None);
        assert_eq!(read_passfile(Path::new("/dev/null")).unwrap(), None);
    }
}
