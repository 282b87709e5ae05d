//! The seccomp-bpf programs a wrap's child loads before exec: socket families beyond `AF_UNIX` (and the kinds
//! the pack was granted), and calls no CLI needs and sandboxes are escaped through, fail with `EPERM`;
//! `clone3`, whose flags a filter cannot read, fails with `ENOSYS` so libc falls back to `clone`. Two programs,
//! not one per rule: the kernel compiles each program it loads, and that is most of this layer's cost.

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch,
};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use crate::pack::NetKind;

/// Calls refused outright, whatever else holds.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_unshare,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_syslog,
    libc::SYS_name_to_handle_at,
];

/// Calls that need a capability the child no longer holds once the capabilities layer held (and, for the
/// mount family, that Landlock refuses too); refused here as well when that layer is off. Each call in a
/// program costs at every spawn (the kernel walks the program once per system call number to build its
/// cache), so they are left out when they cannot succeed anyway.
const PRIVILEGED: &[libc::c_long] = &[
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_setns,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_open_by_handle_at,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
];

/// Namespace flags `clone` may not carry.
const CLONE_NS: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWCGROUP as u64,
];

/// Why the seccomp programs could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the seccomp filter: {0}")]
pub struct SeccompError(#[source] seccompiler::Error);

/// The programs for a call granted `network` (and UNIX sockets when `unix`), with the privileged calls too when
/// `caps_dropped` is false; compiled once per process and setting.
pub fn programs(
    network: &[NetKind],
    unix: bool,
    caps_dropped: bool,
) -> Result<Arc<Vec<BpfProgram>>, SeccompError> {
    type Key = (Vec<NetKind>, bool, bool);
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Vec<BpfProgram>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (network.to_vec(), unix, caps_dropped);
    if let Some(p) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(p);
    }
    let built = Arc::new(build(network, unix, caps_dropped).map_err(SeccompError)?);
    if let Ok(mut m) = cache.lock() {
        m.insert(key, built.clone());
    }
    Ok(built)
}

fn build(network: &[NetKind], unix: bool, caps_dropped: bool) -> Result<Vec<BpfProgram>, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let dword =
        |arg: u8, op: SeccompCmpOp, v: u64| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, v);
    let qword =
        |arg: u8, op: SeccompCmpOp, v: u64| SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, v);

    // socket(domain, ...): refused unless the domain is allowed. A UNIX socket only with a granted path
    // (Landlock before ABI 9 has no right for connecting to a pathname socket, and seccomp cannot read the
    // address: with a path granted, unotify.rs holds every connect); a socketpair needs no name.
    let mut allowed = Vec::new();
    if unix {
        allowed.push(libc::AF_UNIX as u64);
    }
    if network.contains(&NetKind::Inet) {
        allowed.extend([libc::AF_INET as u64, libc::AF_INET6 as u64]);
    }
    if network.contains(&NetKind::Netlink) {
        allowed.push(libc::AF_NETLINK as u64);
    }
    let not_allowed =
        allowed.iter().map(|d| dword(0, SeccompCmpOp::Ne, *d)).collect::<Result<Vec<_>, _>>()?;
    let privileged: &[libc::c_long] = if caps_dropped { &[] } else { PRIVILEGED };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().chain(privileged).map(|n| (*n, Vec::new())).collect();
    // A datagram UNIX socket (SOCK_RAW is one too) can send to any named socket, granted or not: refused
    // always, as socket and as socketpair. Stream and sequenced-packet ones reach a name only by `connect`,
    // which the supervisor holds (unotify.rs).
    let datagram = [libc::SOCK_DGRAM, libc::SOCK_RAW]
        .map(|t| dword(1, SeccompCmpOp::MaskedEq(0xf), t as u64))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    // An empty rule list matches every call: with nothing allowed, every socket is refused.
    let mut socket_rules =
        if not_allowed.is_empty() { Vec::new() } else { vec![SeccompRule::new(not_allowed)?] };
    if unix {
        for t in &datagram {
            socket_rules
                .push(SeccompRule::new(vec![dword(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?, t.clone()])?);
        }
    }
    rules.insert(libc::SYS_socket, socket_rules);
    rules.insert(
        libc::SYS_socketpair,
        datagram.into_iter().map(|t| SeccompRule::new(vec![t])).collect::<Result<Vec<_>, _>>()?,
    );
    let ns = CLONE_NS
        .iter()
        .map(|f| Ok(SeccompRule::new(vec![qword(0, SeccompCmpOp::MaskedEq(*f), *f)?])?))
        .collect::<Result<Vec<_>, seccompiler::Error>>()?;
    rules.insert(libc::SYS_clone, ns);
    let denied =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;

    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;

    Ok(vec![denied.try_into()?, clone3.try_into()?])
}
