//! The seccomp-bpf programs a wrap's child loads before exec: socket families beyond `AF_UNIX` (and the kinds
//! the pack was granted), and calls no CLI needs and sandboxes are escaped through, fail with `EPERM`;
//! `clone3`, whose flags a filter cannot read, fails with `ENOSYS` so libc falls back to `clone`. One program on
//! x86-64 (two elsewhere), not one per rule: the kernel compiles each program it loads and runs it once per call
//! number to cache the calls it always allows, and that is most of this layer's cost.

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

/// The programs for a call granted `network` (and UNIX sockets when `unix`, TCP sockets for its egress proxy
/// when `egress`), with the privileged calls too when `caps_dropped` is false; compiled once per process and
/// setting.
pub fn programs(
    network: &[NetKind],
    unix: bool,
    egress: bool,
    caps_dropped: bool,
) -> Result<Arc<Vec<BpfProgram>>, SeccompError> {
    type Key = (Vec<NetKind>, bool, bool, bool);
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Vec<BpfProgram>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let key = (network.to_vec(), unix, egress, caps_dropped);
    if let Some(p) = cache.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(p);
    }
    let built = Arc::new(build(network, unix, egress, caps_dropped, true).map_err(SeccompError)?);
    if let Ok(mut m) = cache.lock() {
        m.insert(key, built.clone());
    }
    Ok(built)
}

/// The programs; `merge`: one program where [`dispatched`] can make it (the tests build both forms).
fn build(
    network: &[NetKind],
    unix: bool,
    egress: bool,
    caps_dropped: bool,
    merge: bool,
) -> Result<Vec<BpfProgram>, seccompiler::Error> {
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
    // With an egress proxy, TCP sockets only (refused below: every other type and protocol): their every
    // connect goes to the supervisor, which connects them to the proxy only (unotify.rs).
    let inet_anywhere = network.contains(&NetKind::Inet);
    if inet_anywhere || egress {
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
    if egress && !inet_anywhere {
        // The type's low four bits: every value but SOCK_STREAM (1) in four masks (0, 2-3, 4-7, 8-15); the
        // protocol: 0 or TCP only (no SCTP or MPTCP, which can send to an address without `connect`).
        let not_stream = [(0xf, 0), (0xe, 2), (0xc, 4), (0x8, 8)];
        for domain in [libc::AF_INET, libc::AF_INET6] {
            let is = || dword(0, SeccompCmpOp::Eq, domain as u64);
            for (mask, v) in not_stream {
                socket_rules.push(SeccompRule::new(vec![is()?, dword(1, SeccompCmpOp::MaskedEq(mask), v)?])?);
            }
            socket_rules.push(SeccompRule::new(vec![
                is()?,
                dword(2, SeccompCmpOp::Ne, 0)?,
                dword(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
            ])?);
        }
        // A TCP socket that listens gets a port of its own (`listen` binds one, which Landlock's bind rule does
        // not see): nothing may wait for connections from outside. The filter cannot tell a socket's family,
        // so no `listen` at all with an egress proxy.
        rules.insert(libc::SYS_listen, Vec::new());
        // TCP Fast Open connects in `sendto`/`sendmsg`, never asking `connect`.
        let fastopen = libc::MSG_FASTOPEN as u64;
        for (call, arg) in [(libc::SYS_sendto, 3), (libc::SYS_sendmsg, 2), (libc::SYS_sendmmsg, 3)] {
            rules.insert(
                call,
                vec![SeccompRule::new(vec![dword(arg, SeccompCmpOp::MaskedEq(fastopen), fastopen)?])?],
            );
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
    let named: Vec<u32> = rules.keys().map(|n| *n as u32).collect();
    let denied =
        SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)?;

    let denied: BpfProgram = denied.try_into()?;
    if let Some(one) = dispatched(&denied, &named).filter(|_| merge) {
        return Ok(vec![one]);
    }
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    Ok(vec![denied, clone3.try_into()?])
}

/// One program in place of two on x86-64: a binary search over the call numbers the rules name goes in front of
/// `denied`, so a call no rule names is allowed after about eight instructions, `clone3` gets `ENOSYS` there, and
/// only the named calls (and every other architecture) go on to `denied`, which decides as before; an x32 call
/// (a number from 0x40000000, which the rules' numbers never match) gets `ENOSYS`. The kernel runs a new
/// program once for every call number to cache which ones it always allows, at about 2 µs per instruction a
/// linear program walks (docs/perf-log.md, #25): loading both took 0.11 ms of every spawn. `None` if a jump
/// would not fit (a program this module never makes). `a_dispatched_program_decides_as_the_two_did` checks
/// every call number and argument class against the two programs.
#[cfg(target_arch = "x86_64")]
fn dispatched(denied: &[seccompiler::sock_filter], named: &[u32]) -> Option<BpfProgram> {
    use super::unotify::{AUDIT_ARCH, X32_BIT};
    use seccompiler::sock_filter;
    #[derive(Clone, Copy)]
    enum To {
        Next,
        Allow,
        Enosys,
        Denied,
        At(usize),
    }
    let mut calls: Vec<(u32, To)> = named.iter().map(|n| (*n, To::Denied)).collect();
    calls.push((libc::SYS_clone3 as u32, To::Enosys));
    calls.sort_by_key(|c| c.0);
    calls.dedup_by_key(|c| c.0);
    // (code, k, jump if true, jump if false), targets resolved below.
    let mut code: Vec<(u16, u32, To, To)> = vec![
        ((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 4, To::Next, To::Next),
        ((libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16, AUDIT_ARCH, To::Next, To::Denied),
        ((libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16, 0, To::Next, To::Next),
        // x32 calls share the architecture with numbers from 0x40000000, which no rule below names: refused.
        ((libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16, X32_BIT, To::Enosys, To::Next),
    ];
    fn search(calls: &[(u32, To)], code: &mut Vec<(u16, u32, To, To)>) {
        let (jeq, jge) = (
            (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
        );
        if calls.len() <= 3 {
            for (i, (nr, to)) in calls.iter().enumerate() {
                let otherwise = if i + 1 == calls.len() { To::Allow } else { To::Next };
                code.push((jeq, *nr, *to, otherwise));
            }
            return;
        }
        let mid = calls.len() / 2;
        let at = code.len();
        code.push((jge, calls[mid].0, To::Next, To::Next));
        search(&calls[..mid], code);
        let right = code.len();
        code[at].2 = To::At(right);
        search(&calls[mid..], code);
    }
    search(&calls, &mut code);
    let (allow, enosys, start) = (code.len(), code.len() + 1, code.len() + 2);
    let mut out = Vec::with_capacity(start + denied.len());
    for (i, (c, k, t, f)) in code.iter().enumerate() {
        let offset = |to: To| -> Option<u8> {
            let target = match to {
                To::Next => i + 1,
                To::Allow => allow,
                To::Enosys => enosys,
                To::Denied => start,
                To::At(n) => n,
            };
            u8::try_from(target.checked_sub(i + 1)?).ok()
        };
        out.push(sock_filter { code: *c, jt: offset(*t)?, jf: offset(*f)?, k: *k });
    }
    let ret = (libc::BPF_RET | libc::BPF_K) as u16;
    out.push(sock_filter { code: ret, jt: 0, jf: 0, k: libc::SECCOMP_RET_ALLOW });
    out.push(sock_filter { code: ret, jt: 0, jf: 0, k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32 });
    out.extend_from_slice(denied);
    Some(out)
}

/// Other architectures keep the two programs.
#[cfg(not(target_arch = "x86_64"))]
fn dispatched(_denied: &[seccompiler::sock_filter], _named: &[u32]) -> Option<BpfProgram> {
    None
}

// The dispatch, and so what these tests check, is x86-64's only.
#[cfg(test)]
#[cfg(target_arch = "x86_64")]
mod tests {
    use super::*;
    use seccompiler::sock_filter;

    use crate::unotify::AUDIT_ARCH as X86_64;

    /// A classic-BPF interpreter for what these programs use, over a `seccomp_data` of `nr`, `arch` and `args`.
    fn run(prog: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let i = &prog[pc];
            pc += 1;
            let (code, k) = (u32::from(i.code), i.k);
            match code & 0x07 {
                0x00 => {
                    assert_eq!(code, libc::BPF_LD | libc::BPF_W | libc::BPF_ABS);
                    let at = k as usize;
                    acc = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                }
                0x04 => {
                    assert_eq!(code, libc::BPF_ALU | libc::BPF_AND | libc::BPF_K);
                    acc &= k;
                }
                0x05 if code & 0xf0 == libc::BPF_JA => pc += k as usize,
                0x05 => {
                    let taken = match code & 0xf0 {
                        libc::BPF_JEQ => acc == k,
                        libc::BPF_JGT => acc > k,
                        libc::BPF_JGE => acc >= k,
                        libc::BPF_JSET => acc & k != 0,
                        other => panic!("jump {other:#x}"),
                    };
                    pc += usize::from(if taken { i.jt } else { i.jf });
                }
                0x06 => return k,
                other => panic!("class {other:#x}"),
            }
        }
    }

    /// What the kernel returns for a stack of programs: the most restrictive action (the lowest as signed).
    fn decide(progs: &[BpfProgram], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let all = progs.iter().map(|p| run(p, nr, arch, args));
        all.min_by_key(|r| (r & libc::SECCOMP_RET_ACTION_FULL) as i32).unwrap()
    }

    #[test]
    fn a_dispatched_program_decides_as_the_two_did() {
        let first: Vec<u64> =
            [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK, libc::AF_PACKET, 0, 4242]
                .iter()
                .map(|d| *d as u64)
                .chain(CLONE_NS.iter().copied())
                .chain([libc::CLONE_VM as u64 | libc::CLONE_THREAD as u64, 1u64 << 40, libc::SIGCHLD as u64])
                .collect();
        let second: Vec<u64> = [
            libc::SOCK_STREAM,
            libc::SOCK_DGRAM,
            libc::SOCK_RAW,
            libc::SOCK_SEQPACKET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
        ]
        .iter()
        .map(|t| *t as u64)
        .collect();
        let numbers: Vec<u32> =
            (0..=470).chain([0x4000_0000 + 41, 0x4000_0000 + 56, 0x4000_0000 + 435]).collect();
        let settings: [(&[NetKind], bool, bool, bool); 7] = [
            (&[], false, false, true),
            (&[], false, false, false),
            (&[NetKind::Inet], false, false, true),
            (&[NetKind::Netlink], true, false, true),
            (&[NetKind::Inet, NetKind::Netlink], true, false, false),
            (&[], false, true, true),
            (&[NetKind::Netlink], true, true, false),
        ];
        for (network, unix, egress, caps) in settings {
            let two = build(network, unix, egress, caps, false).unwrap();
            let one = build(network, unix, egress, caps, true).unwrap();
            assert_eq!((two.len(), one.len()), (2, 1));
            for nr in &numbers {
                for a in &first {
                    for b in &second {
                        let args = [*a, *b, 0, 0, 0, 0];
                        if *nr >= 0x4000_0000 {
                            // x32: the two programs let it through (no number matched); the one refuses it.
                            let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
                            assert_eq!(decide(&one, *nr, X86_64, args), enosys, "x32 call {nr:#x}");
                            continue;
                        }
                        assert_eq!(
                            decide(&one, *nr, X86_64, args),
                            decide(&two, *nr, X86_64, args),
                            "call {nr} args {a:#x} {b:#x} for {network:?} {unix} {egress} {caps}"
                        );
                    }
                }
            }
            // Another architecture (i386's int 0x80) is killed, as before.
            for nr in [0, 41, 102, 435] {
                assert_eq!(decide(&one, nr, 0x4000_0003, [0; 6]), libc::SECCOMP_RET_KILL_PROCESS);
            }
            // The dispatch itself: an unnamed call allowed, clone3 ENOSYS, a named one refused.
            assert_eq!(decide(&one, libc::SYS_read as u32, X86_64, [0; 6]), libc::SECCOMP_RET_ALLOW);
            assert_eq!(
                decide(&one, libc::SYS_clone3 as u32, X86_64, [0; 6]),
                libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
            );
            assert_eq!(
                decide(&one, libc::SYS_ptrace as u32, X86_64, [0; 6]),
                libc::SECCOMP_RET_ERRNO | libc::EPERM as u32
            );
        }
    }

    #[test]
    fn egress_allows_tcp_sockets_only_no_fast_open_and_no_listen() {
        let progs = build(&[], false, true, true, true).unwrap();
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let socket = |d: i32, t: i32, p: i32| {
            decide(&progs, libc::SYS_socket as u32, X86_64, [d as u64, t as u64, p as u64, 0, 0, 0])
        };
        for d in [libc::AF_INET, libc::AF_INET6] {
            assert_eq!(socket(d, libc::SOCK_STREAM, 0), libc::SECCOMP_RET_ALLOW);
            assert_eq!(
                socket(d, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, libc::IPPROTO_TCP),
                libc::SECCOMP_RET_ALLOW
            );
            for t in [
                0,
                libc::SOCK_DGRAM,
                libc::SOCK_RAW,
                libc::SOCK_SEQPACKET,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK,
                10,
                15,
            ] {
                assert_eq!(socket(d, t, 0), eperm, "type {t}");
            }
            for p in [libc::IPPROTO_SCTP, 262, libc::IPPROTO_UDP] {
                assert_eq!(socket(d, libc::SOCK_STREAM, p), eperm, "protocol {p}");
            }
        }
        assert_eq!(socket(libc::AF_PACKET, libc::SOCK_RAW, 0), eperm);
        assert_eq!(socket(libc::AF_UNIX, libc::SOCK_STREAM, 0), eperm);
        let fastopen = libc::MSG_FASTOPEN as u64;
        let send = |nr: libc::c_long, args: [u64; 6]| decide(&progs, nr as u32, X86_64, args);
        assert_eq!(send(libc::SYS_sendto, [3, 0, 0, fastopen, 0, 0]), eperm);
        assert_eq!(send(libc::SYS_sendmsg, [3, 0, fastopen | 0x40, 0, 0, 0]), eperm);
        assert_eq!(send(libc::SYS_sendmmsg, [3, 0, 1, fastopen, 0, 0]), eperm);
        assert_eq!(
            send(libc::SYS_sendto, [3, 0, 0, libc::MSG_NOSIGNAL as u64, 0, 0]),
            libc::SECCOMP_RET_ALLOW
        );
        assert_eq!(send(libc::SYS_listen, [3, 1, 0, 0, 0, 0]), eperm);
        // Without egress, no network stays no inet socket at all.
        let none = build(&[], false, false, true, true).unwrap();
        let args = [libc::AF_INET as u64, libc::SOCK_STREAM as u64, 0, 0, 0, 0];
        assert_eq!(decide(&none, libc::SYS_socket as u32, X86_64, args), eperm);
    }
}
