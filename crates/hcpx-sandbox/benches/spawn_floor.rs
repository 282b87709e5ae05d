//! Where a confined spawn's floor is (#39): the trivial pack's command (`#!/bin/sh`, `printf '{"ok":true}'`)
//! spawned at concurrency C through this crate's own `spawn::run` with every layer, with some layers turned off
//! (as `sandbox.json` `disable` does), with only the namespaces, with no confinement, and bare
//! (`std::process::Command`), round by round in turn, so the cases are compared side by side in one run.
//!
//! Each row: spawns per second at C threads, and the CPU time per spawn of this process and its children
//! (`getrusage`, the clone child before exec included: it is the child's), of the kernel's own threads
//! (kworkers, RCU, ksoftirqd: the deferred work, e.g. a namespace's teardown; `/proc/<kthread>/task/*/stat`),
//! and of the whole machine (`/proc/stat`, which includes whatever else runs on it). Never run by the tests.
//!
//! Run: `cargo bench -p hcpx-sandbox --bench spawn_floor` (SPAWN_BENCH_N spawns a row, default 3000;
//! SPAWN_BENCH_C threads, default 16; SPAWN_BENCH_ROUNDS, default 2; SPAWN_BENCH_CASES, a comma-separated
//! subset of the case names; SPAWN_BENCH_BIN, another program to spawn instead of the trivial script).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hcpx_model::LayerName;
use hcpx_sandbox::spawn::{self, Spawn};
use hcpx_sandbox::{Confinement, KernelProbe, WrapView};
use hcpx_store::config::SandboxConfig;

/// A case: its name and the layers it turns off (`None`: not through `spawn::run` with a confinement).
struct Case {
    name: &'static str,
    how: How,
}

enum How {
    /// `std::process::Command`, output captured.
    Bare,
    /// `spawn::run` with no confinement (the clone, the poll loop, the reap).
    Unconfined,
    /// `spawn::run` with every layer but these.
    Without(Vec<LayerName>),
}

fn all_but(keep: &[LayerName]) -> Vec<LayerName> {
    LayerName::ALL.iter().copied().filter(|l| !keep.contains(l)).collect()
}

fn cases() -> Vec<Case> {
    use LayerName::*;
    vec![
        Case { name: "bare std::process::Command", how: How::Bare },
        Case { name: "spawn::run, no confinement", how: How::Unconfined },
        Case { name: "confined, every layer off", how: How::Without(LayerName::ALL.to_vec()) },
        Case { name: "PID namespace only", how: How::Without(all_but(&[PidNamespace])) },
        Case {
            name: "namespaces and view only",
            how: How::Without(all_but(&[PidNamespace, MountNamespace, PrivateProc, ReadOnlyMounts])),
        },
        Case { name: "every layer but seccomp", how: How::Without(vec![Seccomp]) },
        Case {
            name: "every layer but Landlock",
            how: How::Without(vec![Landlock, LandlockNet, LandlockScope]),
        },
        Case {
            name: "every layer but the namespaces",
            how: How::Without(vec![PidNamespace, MountNamespace, PrivateProc, ReadOnlyMounts, ProcessLimit]),
        },
        Case { name: "every layer", how: How::Without(Vec::new()) },
    ]
}

/// utime+stime of this process and its reaped children, in seconds.
fn own_cpu() -> f64 {
    let t = |who| {
        // SAFETY: getrusage fills a plain struct.
        let mut r: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `r` is a valid out-parameter.
        unsafe { libc::getrusage(who, &mut r) };
        let tv = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        tv(r.ru_utime) + tv(r.ru_stime)
    };
    t(libc::RUSAGE_SELF) + t(libc::RUSAGE_CHILDREN)
}

fn ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// utime+stime of every kernel thread (children of kthreadd, pid 2), in seconds.
fn kthreads_cpu() -> f64 {
    let mut total = 0u64;
    let Ok(procs) = std::fs::read_dir("/proc") else { return 0.0 };
    for p in procs.flatten() {
        let name = p.file_name();
        let Some(pid) = name.to_str().filter(|s| s.bytes().all(|b| b.is_ascii_digit())) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // After the name: state(0) ppid(1) ... utime(11) stime(12).
        if f.get(1) != Some(&"2") {
            continue;
        }
        total += f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0);
    }
    total as f64 / ticks()
}

/// (busy, softirq) seconds of the whole machine from /proc/stat.
fn machine_cpu() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = s.lines().next().unwrap_or_default();
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 8 {
        return (0.0, 0.0);
    }
    // user nice system idle iowait irq softirq steal
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    (busy as f64 / ticks(), v[6] as f64 / ticks())
}

struct Fixture {
    _dir: tempfile::TempDir,
    pack: PathBuf,
    program: PathBuf,
    home: PathBuf,
    tmp_root: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let pack = dir.path().join("trivial");
    std::fs::create_dir_all(pack.join("bin")).unwrap();
    let program = match std::env::var_os("SPAWN_BENCH_BIN") {
        Some(p) => PathBuf::from(p),
        None => {
            let p = pack.join("bin/trivial");
            std::fs::write(&p, "#!/bin/sh\nprintf '{\"ok\":true}\\n'\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        }
    };
    let home = dir.path().join("workspaces/trivial");
    std::fs::create_dir_all(&home).unwrap();
    // Each thread's TMPDIR, made once and kept (as a server keeps them, calltmp.rs).
    let tmp_root = std::env::temp_dir().join(format!("hcpx-spawn-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp_root).unwrap();
    Fixture { _dir: dir, pack, program, home, tmp_root }
}

/// One spawn of the case; panics on a failed call (a bench of failures measures nothing).
fn one(f: &Fixture, how: &How, tmpdir: &Path, cwd: &cap_std::fs::Dir, argv: &[String]) {
    let env: Vec<(String, String)> = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), f.home.display().to_string()),
        ("TMPDIR".into(), tmpdir.display().to_string()),
        ("HCP_SANDBOX".into(), "sandbox".into()),
    ];
    let out = match how {
        How::Bare => {
            let o = std::process::Command::new(&f.program)
                .args(argv)
                .env_clear()
                .envs(env.iter().map(|(k, v)| (k, v)))
                .current_dir(&f.pack)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            assert!(o.status.success(), "{o:?}");
            o.stdout
        }
        How::Unconfined | How::Without(_) => {
            let cfg = SandboxConfig {
                disable: match how {
                    How::Without(off) => off.clone(),
                    _ => Vec::new(),
                },
                ..Default::default()
            };
            let probe = KernelProbe::get();
            let view = WrapView {
                pack_id: "trivial",
                pack_dir: &f.pack,
                program: &f.program,
                workdir: &f.pack,
                workdir_writable: false,
                home: &f.home,
                tmpdir,
                network: &[],
                unix_sockets: &[],
                egress: None,
                project: false,
                timeout_ms: cfg.limits().timeout_ms,
            };
            let c = Confinement::for_wrap(&view, &cfg, &probe).unwrap();
            let abi = probe.landlock_abi(&cfg);
            let fin = spawn::run(&Spawn {
                program: &f.program,
                argv,
                cwd,
                env: &env,
                timeout: Duration::from_millis(cfg.limits().timeout_ms),
                max_output: cfg.limits().max_output_bytes,
                confine: match how {
                    How::Unconfined => None,
                    _ => Some((&c, abi)),
                },
                cancel: None,
            })
            .unwrap();
            assert!(fin.status.success(), "{:?} {}", fin.status, String::from_utf8_lossy(&fin.stderr));
            fin.stdout
        }
    };
    assert!(out.starts_with(b"{\"ok\":true}") || std::env::var_os("SPAWN_BENCH_BIN").is_some());
}

struct Row {
    rate: f64,
    own_us: f64,
    kthreads_us: f64,
    machine_us: f64,
    softirq_us: f64,
}

fn row(f: &Fixture, how: &How, n: usize, c: usize) -> Row {
    let next = AtomicUsize::new(0);
    let argv = vec!["ping".to_string()];
    let (cpu0, k0, (m0, s0)) = (own_cpu(), kthreads_cpu(), machine_cpu());
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..c {
            let (next, argv) = (&next, &argv);
            s.spawn(move || {
                let tmpdir = f.tmp_root.join(format!("t{t}"));
                std::fs::create_dir_all(&tmpdir).unwrap();
                let cwd = cap_std::fs::Dir::open_ambient_dir(&f.pack, cap_std::ambient_authority()).unwrap();
                while next.fetch_add(1, Ordering::Relaxed) < n {
                    one(f, how, &tmpdir, &cwd, argv);
                }
            });
        }
    });
    let wall = start.elapsed().as_secs_f64();
    // The kernel's deferred work of the last calls (an RCU grace period, a kworker's teardown) lands after them.
    std::thread::sleep(Duration::from_millis(200));
    let (cpu1, k1, (m1, s1)) = (own_cpu(), kthreads_cpu(), machine_cpu());
    let per = |v: f64| v / n as f64 * 1e6;
    Row {
        rate: n as f64 / wall,
        own_us: per(cpu1 - cpu0),
        kthreads_us: per(k1 - k0),
        machine_us: per(m1 - m0),
        softirq_us: per(s1 - s0),
    }
}

fn main() {
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (n, c, rounds) = (env("SPAWN_BENCH_N", 3000), env("SPAWN_BENCH_C", 16), env("SPAWN_BENCH_ROUNDS", 2));
    let only: Option<Vec<String>> =
        std::env::var("SPAWN_BENCH_CASES").ok().map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let cases: Vec<Case> =
        cases().into_iter().filter(|k| only.as_ref().is_none_or(|o| o.iter().any(|x| x == k.name))).collect();
    let f = fixture();
    // Every case once first, so none pays a first call's set-up (the probe, the seccomp program, page cache).
    for k in &cases {
        row(&f, &k.how, 2 * c, c);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average at the start: {}", load.trim());
    println!("| round | case | spawns/s (c={c}) | CPU µs/spawn, this process + children | kernel threads µs/spawn | whole machine µs/spawn (softirq) |");
    println!("|------:|------|------:|------:|------:|------:|");
    let mut sums: Vec<(f64, f64, f64)> = vec![(0.0, 0.0, 0.0); cases.len()];
    for r in 1..=rounds {
        for (i, k) in cases.iter().enumerate() {
            let x = row(&f, &k.how, n, c);
            println!(
                "| {r} | {} | {:.0} | {:.0} | {:.1} | {:.0} ({:.1}) |",
                k.name, x.rate, x.own_us, x.kthreads_us, x.machine_us, x.softirq_us
            );
            sums[i].0 += x.rate;
            sums[i].1 += x.own_us;
            sums[i].2 += x.kthreads_us;
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average at the end: {}", load.trim());
    println!();
    println!(
        "| case | spawns/s, mean of rounds | CPU µs/spawn (own + kernel threads) | over the first case |"
    );
    println!("|------|------:|------:|------:|");
    let bare = sums.first().map(|s| (s.1 + s.2) / rounds as f64).unwrap_or(1.0);
    for (k, s) in cases.iter().zip(&sums) {
        let cpu = (s.1 + s.2) / rounds as f64;
        println!("| {} | {:.0} | {:.0} | {:.2}× |", k.name, s.0 / rounds as f64, cpu, cpu / bare);
    }
    let _ = std::fs::remove_dir_all(&f.tmp_root);
}
