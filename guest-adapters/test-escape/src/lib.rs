//! A guest that tries to read outside its preopen: it must find nothing. `git` tries to plant code in the
//! project's `.git` (config, a hook, a renamed `.git`) and writes one ordinary file; `plant` writes the text
//! `text` at `path` (its directories made first), for the `.git` paths an attacker would use. `net` tries the
//! network without the host's HTTP: a TCP connect and a UDP datagram to `addr`, and a DNS lookup of `name`
//! (WASI sockets, as Rust's std makes them); each must fail. `residue` looks through its whole linear memory
//! for what an earlier call left there, then, given `secret`, leaves its own: in a static, in a small and a large
//! heap block and on its stack, past the bytes a pooled engine keeps resident (`check` scans again after, so a
//! test can see the scan finds what is there).

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
        if verb_key == "residue" {
            let found = residue::scan();
            let Some(secret) = field(&args, "secret") else {
                return Ok(format!("{{\"found\":{found:?}}}"));
            };
            residue::leave(&secret);
            let again = if field(&args, "check").is_some() { residue::scan() } else { Vec::new() };
            return Ok(format!("{{\"found\":{found:?},\"after\":{again:?}}}"));
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
        vec!["run".into(), "git".into(), "plant".into(), "net".into(), "residue".into()]
    }
}

/// What one call leaves in the instance's linear memory, and the look for it. The marker is kept XORed with
/// [`residue::KEY`], so the plain marker in this module's own data, or in a call's arguments, never matches.
mod residue {
    const KEY: u8 = 0x5a;
    const MARK: &[u8] = b"HCPX-RESIDUE:";
    static mut LEFT: [u8; 128] = [0; 128];

    /// The marker and `secret`, XORed, ending with an XORed `;`.
    fn encoded(secret: &str) -> Vec<u8> {
        MARK.iter().chain(secret.as_bytes()).chain(b";").map(|b| b ^ KEY).collect()
    }

    /// Leaves `secret` in a static, a small and a 3 MiB heap block (kept: never freed), and a 64 KiB stack array.
    pub fn leave(secret: &str) {
        let e = encoded(secret);
        // SAFETY: one call at a time runs in an instance; the static is written through a raw pointer only.
        unsafe {
            let left = core::ptr::addr_of_mut!(LEFT) as *mut u8;
            for (i, b) in e.iter().take(128).enumerate() {
                core::ptr::write_volatile(left.add(i), *b);
            }
        }
        std::mem::forget(e.clone());
        let big: Vec<u8> = e.iter().copied().cycle().take(3 << 20).collect();
        std::mem::forget(std::hint::black_box(big));
        let mut stack = [0u8; 64 << 10];
        for (s, b) in stack.iter_mut().zip(e.iter().cycle()) {
            *s = *b;
        }
        std::hint::black_box(&stack);
    }

    /// Every distinct secret whose marker is anywhere in linear memory (at most 8).
    pub fn scan() -> Vec<String> {
        let size = core::arch::wasm32::memory_size(0) * 65536;
        let mut found: Vec<String> = Vec::new();
        let at = |i: usize| -> u8 {
            // SAFETY: `i` is within linear memory (below its current size); wasm has no unmapped pages there.
            unsafe { core::ptr::read_volatile(i as *const u8) }
        };
        let mut i = 8;
        while i + MARK.len() + 64 < size && found.len() < 8 {
            if at(i) ^ KEY == MARK[0] && (1..MARK.len()).all(|j| at(i + j) ^ KEY == MARK[j]) {
                let secret: Vec<u8> = (i + MARK.len()..i + MARK.len() + 64)
                    .map(|k| at(k) ^ KEY)
                    .take_while(|b| *b != b';')
                    .collect();
                let secret = String::from_utf8_lossy(&secret).into_owned();
                if !found.contains(&secret) {
                    found.push(secret);
                }
                i += MARK.len();
            } else {
                i += 1;
            }
        }
        found
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
