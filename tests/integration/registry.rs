//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution server), one per run of
//! this test binary, on a free loopback port with a temp storage directory, started on first use and shared
//! (each test pushes to its own repository). The server dies with this process (parent-death signal). Also a
//! tiny loopback proxy in front of it that misbehaves on purpose for the attack tests: it corrupts, inflates
//! or stalls the answers to chosen paths and passes everything else through.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const BIN: &str = "/usr/bin/docker-registry";

/// The running registry.
pub struct Registry {
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

static REGISTRY: OnceLock<Result<Registry, String>> = OnceLock::new();
static DIR: OnceLock<PathBuf> = OnceLock::new();

/// Whether the registry tests cannot run here. Under `CI=true` a missing server fails (setup.sh installs it);
/// elsewhere the test says why and the caller returns early.
pub fn unavailable() -> bool {
    if std::path::Path::new(BIN).is_file() {
        return false;
    }
    let why = "no /usr/bin/docker-registry; run `bash scripts/setup.sh` (apt-get install docker-registry)";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}");
    }
    eprintln!("skipped: {why}");
    true
}

extern "C" fn remove_at_exit() {
    if let Some(d) = DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

fn start() -> Result<Registry, String> {
    let dir = std::env::temp_dir().join(format!("hcpx-registry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("data")).map_err(|e| e.to_string())?;
    let _ = DIR.set(dir.clone());
    // SAFETY: registers a plain extern "C" function to run at exit.
    unsafe { libc::atexit(remove_at_exit) };
    let mut why = String::new();
    for _ in 0..3 {
        let port =
            TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.join("config.yml");
        let yml = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.join("data").display()
        );
        std::fs::write(&config, yml).map_err(|e| e.to_string())?;
        let log = std::fs::File::create(dir.join("registry.log")).map_err(|e| e.to_string())?;
        let (tx, rx) = std::sync::mpsc::channel();
        // The parent-death signal follows the spawning thread: a thread that never ends spawns the server.
        std::thread::spawn(move || {
            let mut cmd = Command::new(BIN);
            cmd.arg("serve").arg(&config).stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
            // SAFETY: only prctl between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            match cmd.spawn() {
                Ok(mut child) => {
                    let _ = tx.send(Ok(()));
                    let _ = child.wait();
                }
                Err(e) => {
                    let _ = tx.send(Err(format!("cannot start {BIN}: {e}")));
                }
            }
        });
        rx.recv().map_err(|e| e.to_string())??;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if get(&addr, "/v2/").is_some_and(|r| r.starts_with("HTTP/1.1 200")) {
                return Ok(Registry { addr });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        why = format!(
            "the registry did not come up on {addr}: {}",
            std::fs::read_to_string(dir.join("registry.log")).unwrap_or_default()
        );
    }
    Err(why)
}

/// A plain GET, the whole answer as text (`None` when nothing answers).
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The shared registry, started on first use.
pub fn registry() -> &'static Registry {
    match REGISTRY.get_or_init(start) {
        Ok(r) => r,
        Err(e) => panic!("the test registry did not start: {e}"),
    }
}

/// How the proxy misbehaves on a request whose path contains its `needle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attack {
    /// Pass the answer through with the last byte of its body changed.
    Corrupt,
    /// Answer 200 and stream zeros, up to 1 GiB, without a length.
    Bomb,
    /// Read the request and never answer.
    Stall,
    /// Misbehave in no way: only the proxy's `basic` credentials apply.
    None,
}

/// A misbehaving proxy in front of the test registry.
pub struct Proxy {
    pub addr: String,
    /// Bytes of the body sent by a `Bomb` before the client hung up.
    pub bomb_sent: Arc<AtomicU64>,
}

impl Proxy {
    /// Starts a proxy that applies `attack` to requests whose path contains `needle`.
    pub fn start(needle: &str, attack: Attack) -> Proxy {
        Proxy::start_with(needle, attack, None)
    }

    /// A registry that asks for HTTP Basic credentials `user:password` (answering 401 with a Basic challenge
    /// to every request without them), as a private registry does.
    pub fn with_basic_auth(user: &str, password: &str) -> Proxy {
        use base64::Engine as _;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        Proxy::start_with("", Attack::None, Some(format!("Basic {token}")))
    }

    fn start_with(needle: &str, attack: Attack, basic: Option<String>) -> Proxy {
        let upstream = registry().addr.clone();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let addr = listener.local_addr().expect("addr").to_string();
        let sent = Arc::new(AtomicU64::new(0));
        let (needle, counter) = (needle.to_string(), sent.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (up, n, c, b) = (upstream.clone(), needle.clone(), counter.clone(), basic.clone());
                std::thread::spawn(move || serve(conn, &up, &n, attack, &c, b.as_deref()));
            }
        });
        Proxy { addr, bomb_sent: sent }
    }
}

fn serve(
    mut conn: TcpStream,
    upstream: &str,
    needle: &str,
    attack: Attack,
    sent: &AtomicU64,
    basic: Option<&str>,
) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    if let Some(want) = basic {
        let given = text.split("\r\n").any(|l| {
            l.split_once(':')
                .is_some_and(|(k, v)| k.eq_ignore_ascii_case("authorization") && v.trim() == want)
        });
        if !given {
            let _ = conn.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"test\"\r\nContent-Type: application/json\r\nContent-Length: 72\r\nConnection: close\r\n\r\n{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication required\"}]}",
            );
            return;
        }
    }
    let path = text.split_whitespace().nth(1).unwrap_or("").to_string();
    let hit = path.contains(needle) && text.starts_with("GET ");
    if hit && attack == Attack::Stall {
        std::thread::sleep(Duration::from_secs(30));
        return;
    }
    if hit && attack == Attack::Bomb {
        let _ = conn.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
        );
        let chunk = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        while total < 1 << 30 {
            if conn.write_all(&chunk).is_err() {
                break;
            }
            total += chunk.len() as u64;
            sent.store(total, Ordering::SeqCst);
        }
        return;
    }
    // Pass through, one request per connection.
    let mut rewritten = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("connection:") || lower.starts_with("host:") {
            continue;
        }
        rewritten.push_str(line);
        rewritten.push_str("\r\n");
    }
    rewritten.push_str(&format!("Host: {upstream}\r\nConnection: close\r\n\r\n"));
    let Ok(mut up) = TcpStream::connect(upstream) else { return };
    if up.write_all(rewritten.as_bytes()).is_err() {
        return;
    }
    let mut answer = Vec::new();
    let _ = up.read_to_end(&mut answer);
    if hit && attack == Attack::Corrupt {
        if let Some(last) = answer.last_mut() {
            *last ^= 0x01;
        }
    }
    let _ = conn.write_all(&answer);
}
