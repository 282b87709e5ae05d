//! A guest that tries to read outside its preopen: it must find nothing. `git` tries to plant code in the
//! project's `.git` (config, a hook, a renamed `.git`) and writes one ordinary file; `plant` writes the text
//! `text` at `path` (its directories made first), for the `.git` paths an attacker would use. `net` tries the
//! network without the host's HTTP: a TCP connect and a UDP datagram to `addr`, and a DNS lookup of `name`
//! (WASI sockets, as Rust's std makes them); each must fail.

wit_bindgen::generate!({ world: "composite", path: "../../wit/0.1.0" });

struct Escape;

impl Guest for Escape {
    fn exec(
        _ctx: hcp::adapter::types::CallContext,
        verb_key: String,
        args: String,
    ) -> Result<String, String> {
        if verb_key == "plant" {
            let (Some(path), Some(text)) = (field(&args, "path"), field(&args, "text")) else {
                return Err("plant needs path and text".into());
            };
            let p = std::path::Path::new(&path);
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let wrote = std::fs::write(p, text).is_ok();
            return Ok(format!("{{\"wrote\":{wrote}}}"));
        }
        if verb_key == "net" {
            let (Some(addr), Some(name)) = (field(&args, "addr"), field(&args, "name")) else {
                return Err("net needs addr and name".into());
            };
            return Ok(net(&addr, &name));
        }
        if verb_key == "git" {
            use std::io::Write;
            let config = std::fs::OpenOptions::new()
                .append(true)
                .open(".git/config")
                .and_then(|mut f| f.write_all(b"[core]\n\tfsmonitor = /tmp/x\n"))
                .is_ok();
            let hook = std::fs::write(".git/hooks/pre-commit", "#!/bin/sh\necho pwned\n").is_ok();
            // A project without .git: make one, as `git init` would.
            let made = std::fs::metadata(".git").is_err()
                && std::fs::create_dir(".git").is_ok()
                && std::fs::write(".git/config", "[core]\n\tfsmonitor = /tmp/x\n").is_ok();
            let renamed = !made && std::fs::rename(".git", ".git-old").is_ok();
            if renamed {
                let _ = std::fs::create_dir(".git");
                let _ = std::fs::write(".git/config", "[core]\n\tfsmonitor = /tmp/x\n");
            }
            let plain = std::fs::write("written.txt", "ok").is_ok();
            return Ok(format!(
                "{{\"config\":{config},\"hook\":{hook},\"renamed\":{renamed},\"made\":{made},\"plain\":{plain}}}"
            ));
        }
        let mut found = Vec::new();
        for p in ["/etc/passwd", "../../../../etc/passwd", "/proc/self/environ", "..", "/", "/tmp"] {
            if let Ok(s) = std::fs::read_to_string(p) {
                found.push(format!("read {p}: {} bytes", s.len()));
            }
            if let Ok(d) = std::fs::read_dir(p) {
                let names: Vec<String> =
                    d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                if !names.is_empty() {
                    found.push(format!("listed {p}: {names:?}"));
                }
            }
        }
        let written = std::fs::write("inside.txt", "ok").is_ok();
        let listed: Vec<String> = std::fs::read_dir(".")
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        Ok(format!("{{\"escaped\":{:?},\"wrote_inside\":{},\"inside\":{:?}}}", found, written, listed))
    }

    fn describe() -> Vec<String> {
        vec!["run".into(), "git".into(), "plant".into(), "net".into()]
    }
}

/// Each way out of the component's sandbox by socket, as JSON: `true` where it worked, and each error's text.
fn net(addr: &str, name: &str) -> String {
    use std::io::Write;
    use std::net::ToSocketAddrs;
    let mut errors = Vec::new();
    let tcp = match std::net::TcpStream::connect(addr) {
        Ok(mut s) => s.write_all(b"escaped over tcp\n").is_ok(),
        Err(e) => {
            errors.push(format!("tcp: {e}"));
            false
        }
    };
    let udp = match std::net::UdpSocket::bind("0.0.0.0:0").and_then(|s| s.send_to(b"escaped over udp", addr))
    {
        Ok(_) => true,
        Err(e) => {
            errors.push(format!("udp: {e}"));
            false
        }
    };
    let dns = match (name, 80).to_socket_addrs() {
        Ok(mut a) => a.next().is_some(),
        Err(e) => {
            errors.push(format!("dns: {e}"));
            false
        }
    };
    format!("{{\"tcp\":{tcp},\"udp\":{udp},\"dns\":{dns},\"errors\":{errors:?}}}")
}

/// The string value of `"name"` in the call's JSON arguments (the escapes JSON gives a string undone).
fn field(args: &str, name: &str) -> Option<String> {
    let start = args.find(&format!("\"{name}\""))? + name.len() + 2;
    let rest = args[start..].trim_start().strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next()? {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                c => out.push(c),
            },
            c => out.push(c),
        }
    }
    None
}

export!(Escape);
