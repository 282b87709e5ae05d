//! The words of confinement a call's result, `doctor` and `sandbox.json` share: layers, their status,
//! and the mode a wrap ran in.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::wire::wire_enum;

wire_enum! {
    /// A confinement layer, as `doctor`, a call's result and `sandbox.json` `disable` name it.
    #[derive(PartialOrd, Ord)]
    pub enum LayerName ("sandbox layer") {
        /// Landlock on the filesystem: the only readable, writable and executable paths.
        Landlock = "landlock",
        /// Landlock on TCP: no connect, no bind (ABI 4).
        LandlockNet = "landlock-net",
        /// Landlock scopes: no signals to, and no abstract UNIX sockets of, processes outside the call (ABI 6).
        LandlockScope = "landlock-scope",
        /// seccomp-bpf: no socket families beyond `AF_UNIX` (and what the pack was granted), no io_uring, no
        /// namespace, module, key, bpf, ptrace or reboot calls.
        Seccomp = "seccomp",
        /// Every capability dropped (a child of a root runtime keeps uid 0, not its privileges).
        Capabilities = "capabilities",
        /// `no_new_privs`: set-user-ID and file capabilities give nothing.
        NoNewPrivs = "no-new-privs",
        /// The call's own PID namespace: when the command ends, everything it started ends.
        PidNamespace = "pid-namespace",
        /// A mount namespace keeping what git reads under `.git` as configuration or code read-only in a
        /// writable project.
        MountNamespace = "mount-namespace",
        /// A `/proc` of the call's own PID namespace: no other process, its command line, environment or
        /// descriptors is listed.
        PrivateProc = "private-proc",
        /// Every mount read-only but the call's writable paths: no mode, owner, time or extended-attribute
        /// change (which Landlock does not cover) to anything else.
        ReadOnlyMounts = "read-only-mounts",
        /// Resource limits: core dumps, open files, file size, data memory, CPU time.
        Rlimits = "rlimits",
        /// A cap on the call's processes (`max_processes`).
        ProcessLimit = "process-limit",
    }
}

wire_enum! {
    /// Whether a layer held.
    pub enum LayerStatus ("layer status") {
        Enforced = "enforced",
        Partial = "partial",
        Unavailable = "unavailable",
    }
}

wire_enum! {
    /// How a wrap ran, as its result and the child's `HCP_SANDBOX` say.
    pub enum SandboxMode ("sandbox mode") {
        /// Every layer held.
        Sandbox = "sandbox",
        /// Some layer did not hold on this kernel.
        NativeLocal = "native-local",
    }
}

/// The confinement a wrap call ran under, as its result reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    pub mode: SandboxMode,
    pub layers: BTreeMap<LayerName, LayerStatus>,
}
