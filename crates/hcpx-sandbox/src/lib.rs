//! hcpx-sandbox: confinement — what a wrap's child may reach, as one plain value built from the pack, the
//! Policy row, `sandbox.json` and the working directory, and the kernel layers that enforce it between clone and
//! exec (namespaces, Landlock, seccomp with a connect supervisor, mounts, rlimits, the `.git` guard).
//!
//! [`Confinement::for_wrap`] is pure (no syscalls beyond the cached [`probe::KernelProbe`]), so it is unit-tested
//! and printed as it is; [`spawn`] applies it. docs/security.md names each layer and the test that proves it.
//!
//! The compile cache (`compile_cache`) is here too: which compiled native code a composite call maps and runs;
//! and `epoch_clock`, the timer and signal handler that stop a one-shot process's composite guest at its deadline.
//!
//! May use: hcpx-model, hcpx-pack and the store's `sandbox.json` types and layout, wasmtime (to map a compiled
//! component), and the kernel's confinement calls: with the binary, the one crate whose `unsafe` code is
//! allowed (each block says why it holds). Must
//! never: decide what a call may do (the pipeline and `sandbox.json` decide; this crate enforces), or run a
//! child it has not confined as planned.

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::pack;
use hcpx_store as store;

pub mod calltmp;
pub mod compile_cache;
pub mod disk;
pub mod epoch_clock;
pub mod gitguard;
pub mod hidden;
pub mod landlock_rules;
pub mod probe;
pub mod seccomp;
pub mod spawn;
pub mod unotify;
mod view;
pub mod watch;

use serde::Serialize;
use std::path::{Path, PathBuf};

use crate::model::{LayerName, LayerStatus, SandboxMode, SandboxReport};
use crate::pack::{NetKind, WorkspaceMode};
use crate::store::config::SandboxConfig;
pub use probe::KernelProbe;

/// The system paths every wrap may read and execute: programs, libraries and the few files of `/etc` that
/// CLIs read to start (the loader cache, names of users and groups, time zone, certificates, alternatives).
/// Nothing else of `/etc` (no `shadow`, no `ssh`), no `/home`, no `/root`, no `/tmp`, no `/run`, no `/var`.
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/gitconfig",
    "/etc/iproute2",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/terminfo",
    "/proc",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
];

/// Device files every wrap may also write (output thrown away).
pub const SYSTEM_WRITE: &[&str] = &["/dev/null", "/dev/full"];

/// One layer of a call's confinement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layer {
    pub name: LayerName,
    pub status: LayerStatus,
    /// Why, in words: what it covers, or what is missing and what to do.
    pub detail: String,
}

/// Limits set in the child before exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChildLimits {
    pub max_processes: u64,
    pub max_open_files: u64,
    pub max_file_bytes: u64,
    pub memory_bytes: u64,
    pub cpu_seconds: u64,
}

/// Everything a wrap call may reach, and how that is enforced.
#[derive(Debug, Clone, Serialize)]
pub struct Confinement {
    /// Readable and executable paths (directories cover what is beneath them).
    pub read: Vec<PathBuf>,
    /// Readable and writable paths.
    pub write: Vec<PathBuf>,
    /// Network kinds granted (declared by the pack and allowed by `sandbox.json`).
    pub network: Vec<NetKind>,
    /// Pathname UNIX sockets granted (declared by the pack and allowed by `sandbox.json`): with none, the
    /// child can make no UNIX socket but a stream socketpair (seccomp); with some, only stream and
    /// sequenced-packet ones, whose every connect hcpx makes itself, to a granted path only (unotify.rs).
    pub unix_sockets: Vec<PathBuf>,
    /// The port of the call's egress proxy on 127.0.0.1 (docs/egress.md), when its command's hosts are allowed
    /// and it has no `inet`: the child may make TCP sockets only (no UDP, no raw ones), every `connect` is held
    /// by hcpx and made only to 127.0.0.1:PORT (unotify.rs; anything else `ECONNREFUSED`), TCP Fast Open and
    /// `listen` are refused (seccomp) and Landlock's TCP rules allow connecting to PORT only. Only with seccomp, which
    /// holds the connects: without it the call gets no network, as before.
    pub egress: Option<u16>,
    /// Paths kept read-only inside a writable working directory (`.git/config`, `.git/hooks`), and `.git`
    /// itself pinned so it cannot be renamed away, through a mount namespace.
    pub protect: Vec<PathBuf>,
    /// `.git` directories pinned in place (bind-mounted on themselves).
    pub pin: Vec<PathBuf>,
    /// The working directory (entered by path inside a mount namespace).
    pub workdir: PathBuf,
    pub limits: ChildLimits,
    /// What the call may add in total to its private writable directories.
    pub disk: disk::DiskCap,
    /// The layers that apply, with what the kernel gives.
    pub layers: Vec<Layer>,
}

/// What a wrap call's view is made from.
pub struct WrapView<'a> {
    pub pack_id: &'a str,
    /// The installed pack (read, execute).
    pub pack_dir: &'a Path,
    /// The resolved program (read, execute), when it lies outside the system paths.
    pub program: &'a Path,
    pub workdir: &'a Path,
    /// The working directory is writable (workspace and ephemeral modes, project mode for a `write` row).
    pub workdir_writable: bool,
    /// The child's `HOME` (the pack's workspace): readable; writable when it is the working directory.
    pub home: &'a Path,
    /// The call's private `TMPDIR` (read, write).
    pub tmpdir: &'a Path,
    /// The network kinds the pack declares (`wrap.network`).
    pub network: &'a [NetKind],
    /// The pathname UNIX sockets the pack declares (`wrap.unix_sockets`).
    pub unix_sockets: &'a [PathBuf],
    /// The port of the call's egress proxy, when it has one (ignored with `inet`, which reaches anywhere).
    pub egress: Option<u16>,
    /// Project mode: protect the project's `.git` when the working directory is writable.
    pub project: bool,
    pub timeout_ms: u64,
}

/// Whether the call may write its working directory (docs/spec.md §14), for a wrap's
/// working directory and a composite's preopen alike: the pack's own directories
/// (`workspace`, `ephemeral`) always, the caller's project only for a `write` row, the installed pack never.
pub fn workdir_writable(mode: WorkspaceMode, write: bool) -> bool {
    match mode {
        WorkspaceMode::Workspace | WorkspaceMode::Ephemeral => true,
        WorkspaceMode::Project => write,
        WorkspaceMode::None => false,
    }
}

/// What under a project's `.git` git reads as configuration or code, or that sends git to another directory
/// (#34): the repository's and a worktree's configuration, hooks, `info/` (attributes, excludes), a linked
/// worktree's pointers (`commondir`, `gitdir`), other object stores (`objects/info/alternates`), and the git
/// directories of linked worktrees and submodules (`worktrees/`, `modules/`). A write in the project keeps each
/// that exists read-only (a wrap's mount namespace, a composite's guarded preopen), and one the call makes is
/// moved aside after it ([`gitguard::GitWatch`]).
pub const GIT_GUARDED: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "gitdir",
    "objects/info/alternates",
    "worktrees",
    "modules",
];

/// Makes sure a project's `.git/hooks`, `.git/info` and `.git/config` exist before a write runs in it, so the
/// mount namespace can keep them read-only: a missing one could otherwise be created by the call and read by the
/// user's next `git`. Empty directories and an empty config are what `git init` leaves; nothing is overwritten.
pub fn ready_git_guard(project: &Path) {
    let git = project.join(".git");
    if !std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
        return;
    }
    let _ = std::fs::create_dir(git.join("hooks"));
    let _ = std::fs::create_dir(git.join("info"));
    let _ = std::fs::OpenOptions::new().write(true).create_new(true).open(git.join("config"));
}

/// What a write in a project must keep safe, for a wrap's mount namespace and a composite's guarded preopen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitGuard {
    /// `.git` when it is a directory: bind-mounted on itself, so it cannot be renamed away and replaced.
    pub pin: Option<PathBuf>,
    /// Kept read-only: the [`GIT_GUARDED`] paths that exist, or `.git` itself when it is a gitfile (a linked
    /// worktree's or a submodule's checkout, whose one line sends git to its git directory).
    pub protect: Vec<PathBuf>,
}

/// The [`GitGuard`] of `project`; `None` without a `.git` directory or gitfile (a `.git` that is a link is not
/// followed: what it leads to lies outside the project, which the call may not write).
pub fn git_guard(project: &Path) -> Option<GitGuard> {
    let git = project.join(".git");
    let meta = std::fs::symlink_metadata(&git).ok()?;
    if meta.is_file() {
        return Some(GitGuard { pin: None, protect: vec![git] });
    }
    if !meta.is_dir() {
        return None;
    }
    // What exists (a link is bound where it leads; a dangling one cannot be bound, and [`gitguard::GitWatch`]
    // sees any change to it).
    let protect = GIT_GUARDED.iter().map(|r| git.join(r)).filter(|p| p.exists()).collect();
    Some(GitGuard { pin: Some(git), protect })
}

/// Runs a call planned as `planned` with `run`. Where the kernel refuses the user namespace its settings
/// allowed (a container's seccomp profile, a security module), records that, plans again with `plan` and runs
/// once more, so the call and the process's later ones report those layers as not held (and a
/// `"require": "full"` plan refuses) instead of failing every call. Returns the confinement the call ran under.
pub fn run_confined<E>(
    planned: Confinement,
    plan: impl Fn(&KernelProbe) -> Result<Confinement, E>,
    run: impl Fn(&Confinement) -> Result<spawn::Finished, spawn::SpawnError>,
) -> Result<(Confinement, Result<spawn::Finished, spawn::SpawnError>), E> {
    match run(&planned) {
        Err(e) if e.namespaces_refused => {
            probe::refuse_user_namespaces();
            let c = plan(&KernelProbe::get())?;
            let out = run(&c);
            Ok((c, out))
        }
        out => Ok((planned, out)),
    }
}

/// For `hcpx doctor`: where a call would make a user namespace, tries one as a call would, and records a
/// refusal, so the layers doctor lists are the ones calls get.
pub fn confirm_user_namespaces() {
    if KernelProbe::get().call_user_namespace() && !view::user_namespace_works() {
        probe::refuse_user_namespaces();
    }
}

/// A call that cannot be confined as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// Refuses a pack that declares a network kind `sandbox.json` does not grant it (naming the command that would).
pub fn network_granted(pack_id: &str, declared: &[NetKind], cfg: &SandboxConfig) -> Result<(), Refusal> {
    let granted: &[NetKind] = cfg.for_pack(pack_id).map(|e| e.network.as_slice()).unwrap_or_default();
    match declared.iter().find(|k| !granted.contains(k)) {
        None => Ok(()),
        Some(missing) => Err(Refusal(format!(
            "sandbox: pack {pack_id} needs {} network access (wrap.network), which sandbox.json does not grant it; if you trust it, run hcpx allow-network {pack_id} {}",
            missing.as_str(),
            missing.as_str()
        ))),
    }
}

/// Refuses a pack that declares a UNIX socket path that is not absolute, or one `sandbox.json` does not grant
/// it (naming the entry that would).
pub fn sockets_granted(pack_id: &str, declared: &[PathBuf], cfg: &SandboxConfig) -> Result<(), Refusal> {
    let granted: &[PathBuf] = cfg.for_pack(pack_id).map(|e| e.unix_sockets.as_slice()).unwrap_or_default();
    if let Some(relative) = declared.iter().find(|p| !p.is_absolute()) {
        return Err(Refusal(format!(
            "sandbox: pack {pack_id} declares UNIX socket {:?} (wrap.unix_sockets), which is not an absolute path; give the full path and reinstall",
            relative.display().to_string()
        )));
    }
    match declared.iter().find(|p| !granted.contains(p)) {
        None => Ok(()),
        Some(missing) => Err(Refusal(format!(
            "sandbox: pack {pack_id} connects to the UNIX socket {} (wrap.unix_sockets), which sandbox.json does not grant it; if you trust it with what listens there, add it to packs.{pack_id}.unix_sockets in sandbox.json",
            missing.display()
        ))),
    }
}

impl Confinement {
    /// Plans a wrap call's confinement. Refuses a pack that asks for network `sandbox.json` does not grant it,
    /// and an operator path that is not absolute.
    pub fn for_wrap(
        view: &WrapView<'_>,
        cfg: &SandboxConfig,
        probe: &KernelProbe,
    ) -> Result<Confinement, Refusal> {
        let extra = cfg.for_pack(view.pack_id);
        network_granted(view.pack_id, view.network, cfg)?;
        sockets_granted(view.pack_id, view.unix_sockets, cfg)?;
        let network: Vec<NetKind> = view.network.to_vec();
        let mut read: Vec<PathBuf> = SYSTEM_READ.iter().map(PathBuf::from).collect();
        let mut write: Vec<PathBuf> = SYSTEM_WRITE.iter().map(PathBuf::from).collect();
        read.push(view.pack_dir.to_path_buf());
        read.push(view.program.to_path_buf());
        read.push(view.home.to_path_buf());
        if view.workdir_writable {
            write.push(view.workdir.to_path_buf());
        } else {
            read.push(view.workdir.to_path_buf());
        }
        write.push(view.tmpdir.to_path_buf());
        if let Some(e) = extra {
            for (list, into) in [(&e.read, &mut read), (&e.write, &mut write)] {
                for p in list {
                    if !p.is_absolute() {
                        return Err(Refusal(format!(
                            "sandbox: sandbox.json packs.{}: path {:?} is not absolute; give the full path",
                            view.pack_id,
                            p.display().to_string()
                        )));
                    }
                    into.push(p.clone());
                }
            }
        }
        let (pin, protect) =
            match (view.project && view.workdir_writable).then(|| git_guard(view.workdir)).flatten() {
                Some(g) => (g.pin.into_iter().collect(), g.protect),
                None => (Vec::new(), Vec::new()),
            };
        let l = cfg.limits();
        let limits = ChildLimits {
            max_processes: l.max_processes,
            max_open_files: l.max_open_files,
            max_file_bytes: l.max_file_mb.saturating_mul(1 << 20),
            memory_bytes: l.wrap_memory_mb.saturating_mul(1 << 20),
            cpu_seconds: view.timeout_ms.div_ceil(1000) + 1,
        };
        let mut disk_dirs = vec![view.tmpdir.to_path_buf()];
        if view.workdir_writable && !view.project {
            disk_dirs.push(view.workdir.to_path_buf());
        }
        let disk = disk::DiskCap { dirs: disk_dirs, max_bytes: l.max_disk_mb.saturating_mul(1 << 20) };
        let mut c = Confinement {
            read,
            write,
            network,
            unix_sockets: view.unix_sockets.to_vec(),
            egress: view.egress.filter(|_| !view.network.contains(&NetKind::Inet)),
            protect,
            pin,
            workdir: view.workdir.to_path_buf(),
            limits,
            disk,
            layers: Vec::new(),
        };
        c.layers = probe.layers_for(&c, cfg);
        if c.egress.is_some() && !c.applies(LayerName::Seccomp) {
            // Without seccomp no connect is held: no network rather than TCP to any host on the proxy's port.
            c.egress = None;
            c.layers = probe.layers_for(&c, cfg);
        }
        Ok(c)
    }

    /// Every layer held: the child's `HCP_SANDBOX` is `sandbox`.
    pub fn full(&self) -> bool {
        self.layers.iter().all(|l| l.status == LayerStatus::Enforced)
    }

    /// The child's `HCP_SANDBOX`: `sandbox` when every layer held, `native-local` otherwise.
    pub fn mode(&self) -> SandboxMode {
        if self.full() {
            SandboxMode::Sandbox
        } else {
            SandboxMode::NativeLocal
        }
    }

    /// Whether `name` applies to this call and is enforced.
    pub fn enforces(&self, name: LayerName) -> bool {
        self.layers.iter().any(|l| l.name == name && l.status == LayerStatus::Enforced)
    }

    /// Whether `name` applies at all (enforced or partial).
    pub fn applies(&self, name: LayerName) -> bool {
        self.layers.iter().any(|l| l.name == name && l.status != LayerStatus::Unavailable)
    }

    /// The layers that did not fully hold, in words (for `sandbox_denied` under `"require": "full"`).
    pub fn missing(&self) -> Vec<String> {
        self.layers
            .iter()
            .filter(|l| l.status != LayerStatus::Enforced)
            .map(|l| format!("{} ({})", l.name.as_str(), l.detail))
            .collect()
    }

    /// What a call's result reports: the mode and each layer's status.
    pub fn report(&self) -> SandboxReport {
        SandboxReport { mode: self.mode(), layers: self.layers.iter().map(|l| (l.name, l.status)).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::config::PackSandbox;

    fn probe(abi: u8, root: bool) -> KernelProbe {
        KernelProbe {
            landlock_abi: abi,
            seccomp: true,
            cap_eff: if root { u64::MAX >> 23 } else { 0 },
            cap_last: 40,
            pid_max_per_ns: true,
            root,
            user_namespaces: false,
        }
    }

    fn view<'a>(workdir: &'a Path, writable: bool, network: &'a [NetKind]) -> WrapView<'a> {
        WrapView {
            pack_id: "demo",
            pack_dir: Path::new("/store/packs/demo"),
            program: Path::new("/usr/bin/demo"),
            workdir,
            workdir_writable: writable,
            home: Path::new("/store/workspaces/demo"),
            tmpdir: Path::new("/tmp/hcpx-call-1"),
            network,
            unix_sockets: &[],
            egress: None,
            project: true,
            timeout_ms: 1500,
        }
    }

    #[test]
    fn a_read_gets_its_project_read_only_and_a_write_gets_it_writable() {
        let p = Path::new("/work/project");
        let cfg = SandboxConfig::default();
        let read = Confinement::for_wrap(&view(p, false, &[]), &cfg, &probe(7, true)).unwrap();
        assert!(read.read.contains(&p.to_path_buf()) && !read.write.contains(&p.to_path_buf()));
        let write = Confinement::for_wrap(&view(p, true, &[]), &cfg, &probe(7, true)).unwrap();
        assert!(write.write.contains(&p.to_path_buf()));
        for c in [&read, &write] {
            assert!(c.write.contains(&PathBuf::from("/tmp/hcpx-call-1")));
            assert!(!c
                .write
                .iter()
                .chain(&c.read)
                .any(|x| x == Path::new("/store") || x == Path::new("/tmp")));
            assert_eq!(c.limits.cpu_seconds, 3);
        }
        assert!(
            workdir_writable(WorkspaceMode::Workspace, false) && !workdir_writable(WorkspaceMode::None, true)
        );
        assert!(
            workdir_writable(WorkspaceMode::Project, true)
                && !workdir_writable(WorkspaceMode::Project, false)
        );
    }

    #[test]
    fn network_needs_the_pack_to_ask_and_the_operator_to_grant() {
        let p = Path::new("/work/project");
        let mut cfg = SandboxConfig::default();
        let refused =
            Confinement::for_wrap(&view(p, false, &[NetKind::Netlink]), &cfg, &probe(7, true)).unwrap_err();
        assert!(refused.0.contains("hcpx allow-network demo netlink"), "{}", refused.0);
        cfg.packs.insert(
            "demo".into(),
            PackSandbox { network: vec![NetKind::Netlink, NetKind::Inet], ..Default::default() },
        );
        let granted =
            Confinement::for_wrap(&view(p, false, &[NetKind::Netlink]), &cfg, &probe(7, true)).unwrap();
        assert_eq!(granted.network, vec![NetKind::Netlink], "a kind granted but not asked for gives nothing");
        let none = Confinement::for_wrap(&view(p, false, &[]), &cfg, &probe(7, true)).unwrap();
        assert!(none.network.is_empty());
        assert!(none.enforces(LayerName::LandlockNet));
    }

    #[test]
    fn an_egress_port_needs_seccomp_and_gives_way_to_inet() {
        let p = Path::new("/p");
        let mut v = view(p, false, &[]);
        v.egress = Some(8123);
        let c = Confinement::for_wrap(&v, &SandboxConfig::default(), &probe(7, true)).unwrap();
        assert_eq!(c.egress, Some(8123));
        let net = c.layers.iter().find(|l| l.name == LayerName::LandlockNet).unwrap();
        assert!(net.status == LayerStatus::Enforced && net.detail.contains("8123"), "{net:?}");
        // Without seccomp no connect is held: no proxy, so no network.
        let cfg = SandboxConfig { disable: vec![LayerName::Seccomp], ..Default::default() };
        let c = Confinement::for_wrap(&v, &cfg, &probe(7, true)).unwrap();
        assert_eq!(c.egress, None);
        // `inet` granted reaches anywhere: no proxy either.
        let mut cfg = SandboxConfig::default();
        cfg.packs.insert("demo".into(), PackSandbox { network: vec![NetKind::Inet], ..Default::default() });
        let mut v = view(p, false, &[NetKind::Inet]);
        v.egress = Some(8123);
        assert_eq!(Confinement::for_wrap(&v, &cfg, &probe(7, true)).unwrap().egress, None);
    }

    #[test]
    fn operator_paths_must_be_absolute() {
        let mut cfg = SandboxConfig::default();
        cfg.packs.insert(
            "demo".into(),
            PackSandbox { write: vec![PathBuf::from("relative/dir")], ..Default::default() },
        );
        let e = Confinement::for_wrap(&view(Path::new("/p"), false, &[]), &cfg, &probe(7, true)).unwrap_err();
        assert!(e.0.contains("not absolute"), "{}", e.0);
    }

    #[test]
    fn every_layer_on_a_full_kernel_is_enforced_and_says_sandbox() {
        let c = Confinement::for_wrap(
            &view(Path::new("/p"), false, &[]),
            &SandboxConfig::default(),
            &probe(7, true),
        )
        .unwrap();
        assert!(c.full(), "{:?}", c.missing());
        assert_eq!(c.mode(), SandboxMode::Sandbox);
        assert!(
            c.layers.iter().all(|l| l.name != LayerName::MountNamespace),
            "no .git here, so no mount namespace"
        );
    }

    #[test]
    fn an_older_kernel_or_a_disabled_layer_is_native_local() {
        let p = Path::new("/p");
        let c =
            Confinement::for_wrap(&view(p, false, &[]), &SandboxConfig::default(), &probe(3, true)).unwrap();
        assert_eq!(c.mode(), SandboxMode::NativeLocal);
        assert!(
            c.enforces(LayerName::Landlock)
                && !c.applies(LayerName::LandlockNet)
                && !c.applies(LayerName::LandlockScope)
        );
        let cfg = SandboxConfig { disable: vec![LayerName::Seccomp], ..Default::default() };
        let c = Confinement::for_wrap(&view(p, false, &[]), &cfg, &probe(7, true)).unwrap();
        assert!(!c.applies(LayerName::Seccomp) && c.missing().iter().any(|m| m.contains("seccomp")));
        let c =
            Confinement::for_wrap(&view(p, false, &[]), &SandboxConfig::default(), &probe(0, false)).unwrap();
        assert!(!c.applies(LayerName::Landlock) && !c.applies(LayerName::PidNamespace));
        assert_eq!(
            c.layers.iter().find(|l| l.name == LayerName::ProcessLimit).map(|l| l.status),
            Some(LayerStatus::Partial)
        );
    }

    #[test]
    fn a_landlock_abi_cap_in_sandbox_json_lowers_what_is_used() {
        let cfg = SandboxConfig { landlock_abi: Some(2), ..Default::default() };
        assert_eq!(probe(7, true).landlock_abi(&cfg), 2);
        let c = Confinement::for_wrap(&view(Path::new("/p"), false, &[]), &cfg, &probe(7, true)).unwrap();
        let l = c.layers.iter().find(|l| l.name == LayerName::Landlock).unwrap();
        assert_eq!(l.status, LayerStatus::Partial);
        assert!(l.detail.contains("capped"), "{}", l.detail);
    }
}
