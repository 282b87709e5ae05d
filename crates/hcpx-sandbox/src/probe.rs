//! What this kernel and this process can enforce, read once per process, and which layers a call gets from it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use super::{Confinement, Layer};
use crate::model::{LayerName, LayerStatus};
use crate::pack::NetKind;
use crate::store::config::SandboxConfig;

const CAP_SETPCAP: u32 = 8;
const CAP_SYS_ADMIN: u32 = 21;

/// The kernel's and the process's sandboxing abilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelProbe {
    /// The kernel's Landlock ABI (0: none).
    pub landlock_abi: u8,
    /// seccomp filters are available.
    pub seccomp: bool,
    /// The process's effective capabilities (a bit per capability).
    pub cap_eff: u64,
    /// The kernel's highest capability number.
    pub cap_last: u32,
    /// Each PID namespace has its own `pid_max` (Linux 6.14+).
    pub pid_max_per_ns: bool,
    /// The effective uid is 0.
    pub root: bool,
    /// Without CAP_SYS_ADMIN: this user may make a user namespace (and in it the call's PID and mount
    /// namespaces), as the kernel's settings say.
    pub user_namespaces: bool,
}

/// Set when the kernel refused a call's user namespace although its settings allowed it (a container's
/// seccomp profile, a security module): later calls of this process are planned without one, and say so.
static USERNS_REFUSED: AtomicBool = AtomicBool::new(false);

/// Records that this host refuses the calls' user namespaces (see [`KernelProbe::call_namespaces`]).
pub fn refuse_user_namespaces() {
    USERNS_REFUSED.store(true, Ordering::Relaxed);
}

impl KernelProbe {
    /// The probe of this process (read once).
    pub fn get() -> KernelProbe {
        static PROBE: OnceLock<KernelProbe> = OnceLock::new();
        *PROBE.get_or_init(KernelProbe::read)
    }

    fn read() -> KernelProbe {
        // SAFETY: with a NULL attribute, size 0 and the VERSION flag the call only returns the ABI number.
        let abi =
            unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
        // SAFETY: PR_GET_SECCOMP takes no pointer; it fails with EINVAL on a kernel without seccomp.
        let seccomp = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) } >= 0;
        let cap_eff = effective_caps();
        let cap_last = last_cap();
        // SAFETY: geteuid has no failure mode.
        let root = unsafe { libc::geteuid() } == 0;
        let user_namespaces = cap_eff & (1u64 << CAP_SYS_ADMIN) == 0 && user_namespaces_allowed();
        KernelProbe {
            landlock_abi: abi.clamp(0, 255) as u8,
            seccomp,
            cap_eff,
            cap_last,
            pid_max_per_ns: kernel_at_least(6, 14),
            root,
            user_namespaces,
        }
    }

    fn has_cap(&self, cap: u32) -> bool {
        self.cap_eff & (1u64 << cap) != 0
    }

    /// Namespaces can be made by the runtime itself (CAP_SYS_ADMIN).
    pub fn namespaces(&self) -> bool {
        self.has_cap(CAP_SYS_ADMIN)
    }

    /// A wrap's child can have its own PID and mount namespaces: made directly with CAP_SYS_ADMIN, or inside a
    /// user namespace of its own (see [`KernelProbe::call_user_namespace`]) unless the kernel refused one.
    pub fn call_namespaces(&self) -> bool {
        self.namespaces() || self.call_user_namespace()
    }

    /// A wrap's child makes a user namespace first (mapping only the runtime's own uid and gid), because the
    /// runtime lacks CAP_SYS_ADMIN.
    pub fn call_user_namespace(&self) -> bool {
        !self.namespaces() && self.user_namespaces && !USERNS_REFUSED.load(Ordering::Relaxed)
    }

    /// The Landlock ABI a call uses: the kernel's, capped by `sandbox.json` `landlock_abi`; 0 when turned off.
    pub fn landlock_abi(&self, cfg: &SandboxConfig) -> u8 {
        if cfg.disable.contains(&LayerName::Landlock) {
            return 0;
        }
        self.landlock_abi.min(cfg.landlock_abi.unwrap_or(u8::MAX))
    }

    /// Every layer for the whole runtime, as `hcpx doctor` lists them (as a plain writable call would get them).
    pub fn doctor_layers(&self, cfg: &SandboxConfig) -> Vec<Layer> {
        let c = Confinement {
            read: Vec::new(),
            write: Vec::new(),
            network: Vec::new(),
            unix_sockets: Vec::new(),
            egress: None,
            protect: vec![std::path::PathBuf::from(".git/config")],
            pin: Vec::new(),
            workdir: std::path::PathBuf::new(),
            limits: super::ChildLimits {
                max_processes: cfg.limits().max_processes,
                max_open_files: 0,
                max_file_bytes: 0,
                memory_bytes: 0,
                cpu_seconds: 0,
            },
            disk: super::disk::DiskCap { dirs: Vec::new(), max_bytes: 0 },
            layers: Vec::new(),
        };
        self.layers_for(&c, cfg)
    }

    /// The layers a call with confinement `c` gets on this kernel under `cfg`.
    pub fn layers_for(&self, c: &Confinement, cfg: &SandboxConfig) -> Vec<Layer> {
        let off = |n: LayerName| cfg.disable.contains(&n);
        let mut out = Vec::new();
        let mut add =
            |name: LayerName, status: LayerStatus, detail: String| out.push(Layer { name, status, detail });
        let turned_off = "turned off in sandbox.json (disable)".to_string();
        let abi = self.landlock_abi(cfg);
        let capped = cfg.landlock_abi.is_some_and(|a| a < self.landlock_abi);
        let abi_note = if capped {
            format!("ABI {abi} (capped in sandbox.json; the kernel has {})", self.landlock_abi)
        } else {
            format!("ABI {abi}")
        };
        if off(LayerName::Landlock) {
            add(LayerName::Landlock, LayerStatus::Unavailable, turned_off.clone());
        } else if abi == 0 {
            add(LayerName::Landlock, LayerStatus::Unavailable, "the kernel has no Landlock (Linux 5.13+ with landlock in its lsm= list): the child can read and write whatever the user can".into());
        } else if abi < 3 {
            add(
                LayerName::Landlock,
                LayerStatus::Partial,
                format!("{abi_note}: truncating a readable file is not restricted before ABI 3"),
            );
        } else {
            add(
                LayerName::Landlock,
                LayerStatus::Enforced,
                format!("{abi_note}: only the system paths, the pack, the working directory and TMPDIR"),
            );
        }
        if !c.network.contains(&NetKind::Inet) {
            if off(LayerName::LandlockNet) {
                add(LayerName::LandlockNet, LayerStatus::Unavailable, turned_off.clone());
            } else if abi < 4 {
                add(
                    LayerName::LandlockNet,
                    LayerStatus::Unavailable,
                    format!("{abi_note} has no TCP rules (ABI 4)"),
                );
            } else if let Some(port) = c.egress {
                add(
                    LayerName::LandlockNet,
                    LayerStatus::Enforced,
                    format!("TCP connect to the egress proxy's port {port} only, no bind"),
                );
            } else {
                add(LayerName::LandlockNet, LayerStatus::Enforced, "no TCP connect or bind".into());
            }
        }
        if off(LayerName::LandlockScope) {
            add(LayerName::LandlockScope, LayerStatus::Unavailable, turned_off.clone());
        } else if abi < 6 {
            add(LayerName::LandlockScope, LayerStatus::Unavailable, format!("{abi_note}: signals to and abstract UNIX sockets of outside processes are not scoped (ABI 6)"));
        } else {
            add(
                LayerName::LandlockScope,
                LayerStatus::Enforced,
                "no signals to, or abstract UNIX sockets of, processes outside the call".into(),
            );
        }
        if off(LayerName::Seccomp) {
            add(LayerName::Seccomp, LayerStatus::Unavailable, turned_off.clone());
        } else if !self.seccomp {
            add(LayerName::Seccomp, LayerStatus::Unavailable, "the kernel has no seccomp filters".into());
        } else {
            let mut nets: Vec<&str> = c.network.iter().map(|n| n.as_str()).collect();
            if !c.unix_sockets.is_empty() {
                nets.insert(0, "AF_UNIX (the granted socket paths)");
            }
            if c.egress.is_some() {
                nets.push("TCP (connected to the egress proxy only)");
            }
            let allowed = if nets.is_empty() {
                "no sockets but a stream socketpair".to_string()
            } else {
                format!("{} sockets only", nets.join(", "))
            };
            add(
                LayerName::Seccomp,
                LayerStatus::Enforced,
                format!("{allowed}; no io_uring, namespaces, modules, keys, bpf or ptrace"),
            );
        }
        if off(LayerName::Capabilities) {
            add(LayerName::Capabilities, LayerStatus::Unavailable, turned_off.clone());
        } else if self.cap_eff == 0 {
            add(LayerName::Capabilities, LayerStatus::Enforced, "the runtime holds no capabilities".into());
        } else if self.has_cap(CAP_SETPCAP) {
            add(
                LayerName::Capabilities,
                LayerStatus::Enforced,
                "every capability and the bounding set dropped before exec".into(),
            );
        } else {
            add(
                LayerName::Capabilities,
                LayerStatus::Partial,
                "the runtime holds capabilities but not CAP_SETPCAP, so the bounding set stays".into(),
            );
        }
        if off(LayerName::NoNewPrivs) {
            add(LayerName::NoNewPrivs, LayerStatus::Unavailable, turned_off.clone());
        } else {
            add(
                LayerName::NoNewPrivs,
                LayerStatus::Enforced,
                "set-user-ID bits and file capabilities give nothing".into(),
            );
        }
        let ns = self.call_namespaces();
        let needs = if self.user_namespaces {
            "the kernel refused this user a user namespace (a container's seccomp profile or a security module)"
        } else if self.root {
            "needs CAP_SYS_ADMIN, which the runtime lacks"
        } else {
            "needs CAP_SYS_ADMIN or user namespaces for unprivileged users (user.max_user_namespaces), which this host does not allow"
        };
        let pidns = !off(LayerName::PidNamespace) && ns;
        if off(LayerName::PidNamespace) {
            add(LayerName::PidNamespace, LayerStatus::Unavailable, format!("{turned_off}: only the process group is killed, so a process that calls setsid can outlive the call"));
        } else if pidns {
            add(
                LayerName::PidNamespace,
                LayerStatus::Enforced,
                "when the command ends or times out, everything it started is killed".into(),
            );
        } else {
            add(LayerName::PidNamespace, LayerStatus::Unavailable, format!("{needs}: only the process group is killed, so a process that calls setsid can outlive the call"));
        }
        let seen = "every process of the machine is listed in /proc, with its command line";
        if off(LayerName::PrivateProc) {
            add(LayerName::PrivateProc, LayerStatus::Unavailable, format!("{turned_off}: {seen}"));
        } else if !pidns {
            add(
                LayerName::PrivateProc,
                LayerStatus::Unavailable,
                format!("needs the call's PID namespace (pid-namespace is unavailable): {seen}"),
            );
        } else {
            add(
                LayerName::PrivateProc,
                LayerStatus::Enforced,
                "/proc lists only the call's own processes: no other's command line, environment or descriptors"
                    .into(),
            );
        }
        let unguarded = "a call may change the mode, owner, times and extended attributes of any file its user owns (Landlock does not cover them)";
        if off(LayerName::ReadOnlyMounts) {
            add(LayerName::ReadOnlyMounts, LayerStatus::Unavailable, format!("{turned_off}: {unguarded}"));
        } else if !ns {
            add(LayerName::ReadOnlyMounts, LayerStatus::Unavailable, format!("{needs}: {unguarded}"));
        } else {
            add(
                LayerName::ReadOnlyMounts,
                LayerStatus::Enforced,
                "every mount read-only but the call's writable paths: no chmod, chown, utime or xattr change elsewhere"
                    .into(),
            );
        }
        if !c.protect.is_empty() || !c.pin.is_empty() {
            if off(LayerName::MountNamespace) {
                add(
                    LayerName::MountNamespace,
                    LayerStatus::Unavailable,
                    format!("{turned_off}: what git reads under .git (config, hooks, info, worktrees, modules) stays writable"),
                );
            } else if ns {
                add(
                    LayerName::MountNamespace,
                    LayerStatus::Enforced,
                    "what git reads under .git as configuration or code (config, hooks, info, worktrees, modules) is read-only and .git cannot be renamed away".into(),
                );
            } else {
                add(
                    LayerName::MountNamespace,
                    LayerStatus::Unavailable,
                    format!("{needs}: what git reads under .git (config, hooks, info, worktrees, modules) stays writable"),
                );
            }
        }
        if off(LayerName::Rlimits) {
            add(LayerName::Rlimits, LayerStatus::Unavailable, turned_off.clone());
        } else {
            add(
                LayerName::Rlimits,
                LayerStatus::Enforced,
                "no core dumps; open files, file size, data memory and CPU time capped".into(),
            );
        }
        let n = c.limits.max_processes;
        if off(LayerName::ProcessLimit) {
            add(LayerName::ProcessLimit, LayerStatus::Unavailable, turned_off);
        } else if !self.root {
            add(
                LayerName::ProcessLimit,
                LayerStatus::Partial,
                format!("RLIMIT_NPROC {n}, which counts every process of the user, not only the call's"),
            );
        } else if pidns && self.pid_max_per_ns {
            add(
                LayerName::ProcessLimit,
                LayerStatus::Enforced,
                format!("at most {} processes (the call's PID namespace pid_max)", n.max(300)),
            );
        } else if pidns {
            add(
                LayerName::ProcessLimit,
                LayerStatus::Unavailable,
                "the kernel has no per-namespace pid_max (Linux 6.14+) and root ignores RLIMIT_NPROC".into(),
            );
        } else {
            add(
                LayerName::ProcessLimit,
                LayerStatus::Unavailable,
                "root ignores RLIMIT_NPROC and there is no PID namespace to cap".into(),
            );
        }
        out
    }
}

/// The process's effective capabilities (a bit per capability), from `capget`: one system call, where
/// `/proc/self/status` is a file the kernel formats in full to be read (#25).
fn effective_caps() -> u64 {
    use super::spawn::{CapData, CapHeader, CAP_VERSION_3};
    let header = CapHeader { version: CAP_VERSION_3, pid: 0 };
    let mut data = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
    // SAFETY: capget fills the two-element array version 3 takes, for this process (pid 0).
    if unsafe { libc::syscall(libc::SYS_capget, &header as *const CapHeader, data.as_mut_ptr()) } != 0 {
        return 0;
    }
    u64::from(data[0].effective) | (u64::from(data[1].effective) << 32)
}

/// The kernel's highest capability number: `PR_CAPBSET_READ` refuses (EINVAL) a number past it, so a binary
/// search over 0..=63 finds it in six calls; `/proc/sys/kernel/cap_last_cap` when that call is refused.
fn last_cap() -> u32 {
    // SAFETY: PR_CAPBSET_READ takes a capability number and no pointer.
    let known =
        |cap: u32| unsafe { libc::prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap), 0, 0, 0) } >= 0;
    if !known(0) {
        return std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(40);
    }
    let (mut lo, mut hi) = (0u32, 63u32);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if known(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Whether this kernel lets an unprivileged user make a user namespace, by its settings: a positive
/// `user.max_user_namespaces`, and neither Debian's `kernel.unprivileged_userns_clone` nor Ubuntu's AppArmor
/// restriction turned on. A refusal these do not show is found by the first call (see
/// [`refuse_user_namespaces`]).
fn user_namespaces_allowed() -> bool {
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<i64>().ok());
    read("/proc/sys/user/max_user_namespaces").is_some_and(|n| n > 0)
        && read("/proc/sys/kernel/unprivileged_userns_clone") != Some(0)
        && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != Some(1)
}

fn kernel_at_least(major: u32, minor: u32) -> bool {
    // SAFETY: uname fills a plain struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid out-parameter.
    if unsafe { libc::uname(&mut u) } != 0 {
        return false;
    }
    let release: String = u.release.iter().take_while(|c| **c != 0).map(|c| *c as u8 as char).collect();
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let (ma, mi) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (ma, mi) >= (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_from_system_calls_match_what_proc_says() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap();
        assert_eq!(effective_caps(), u64::from_str_radix(eff.trim(), 16).unwrap());
        let last: u32 =
            std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").unwrap().trim().parse().unwrap();
        assert_eq!(last_cap(), last);
    }
}
