//! The Landlock ruleset of one call, built in the runtime (where paths can still be opened) and handed to the
//! child as a descriptor, which restricts itself with it just before exec.

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use super::Confinement;
use crate::model::LayerName;

fn abi_of(n: u8) -> ABI {
    match n {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        // Later ABIs add no access rights this ruleset uses (7 adds logging).
        _ => ABI::V6,
    }
}

/// Why the Landlock ruleset could not be built.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[source] landlock::RulesetError),
    #[error("cannot add the Landlock rule for {}: {source}", path.display())]
    Rule {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The ruleset for `c` at Landlock ABI `abi`, or `None` when Landlock does not apply.
pub fn build(c: &Confinement, abi: u8) -> Result<Option<OwnedFd>, LandlockError> {
    if abi == 0 || !c.applies(LayerName::Landlock) {
        return Ok(None);
    }
    let abi = abi_of(abi);
    let err = LandlockError::Ruleset;
    let mut rs = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if c.enforces(LayerName::LandlockNet) {
        rs = rs.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp).map_err(err)?;
    }
    if c.enforces(LayerName::LandlockScope) {
        rs = rs.scope(Scope::AbstractUnixSocket | Scope::Signal).map_err(err)?;
    }
    let mut created = rs.create().map_err(err)?;
    // TCP is handled with no rule but this one: connecting to the egress proxy's port, binding nothing. The
    // connect supervisor makes the connect itself, to 127.0.0.1 only; this holds the port should it not.
    if let (true, Some(port)) = (c.enforces(LayerName::LandlockNet), c.egress) {
        created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp)).map_err(err)?;
    }
    let created: Option<OwnedFd> = created.into();
    let Some(fd) = created else { return Ok(None) };
    for p in &c.read {
        add(fd.as_fd(), p, AccessFs::from_read(abi), abi)?;
    }
    for p in &c.write {
        add(fd.as_fd(), p, AccessFs::from_all(abi), abi)?;
    }
    Ok(Some(fd))
}

/// The rights a readable directory gets at Landlock ABI `abi` (for the call's own `/proc`, whose rule the child
/// adds once it has mounted it: see view.rs).
pub fn read_access(abi: u8) -> u64 {
    AccessFs::from_read(abi_of(abi)).bits()
}

/// `struct landlock_path_beneath_attr`, packed as the kernel declares it.
#[repr(C, packed)]
pub(super) struct PathBeneathAttr {
    pub(super) allowed_access: u64,
    pub(super) parent_fd: i32,
}

pub(super) const RULE_PATH_BENEATH: libc::c_int = 1;

/// Adds a rule for `path` to `ruleset` (skipped when it does not exist); a file gets only the rights files have.
/// The rule goes straight to `landlock_add_rule`: the crate's `add_rule` asks the kernel for the type of the
/// path a second time, and for the ~40 paths of every call that was most of the ruleset's cost (#25). The
/// rights are the crate's, for the ABI the ruleset was created with, so the kernel refuses none it handles.
fn add(
    ruleset: BorrowedFd<'_>,
    path: &Path,
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> Result<(), LandlockError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let Ok(fd) = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) else { return Ok(()) };
    // The type of what was opened, from its descriptor: no second lookup of the path, and no path swapped in
    // between.
    let is_dir = rustix::fs::fstat(&fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode).is_dir());
    let access = if is_dir { access } else { access & AccessFs::from_file(abi) };
    let attr = PathBeneathAttr { allowed_access: access.bits(), parent_fd: fd.as_raw_fd() };
    // SAFETY: landlock_add_rule reads one `landlock_path_beneath_attr` from the pointer, which lives across the
    // call; both descriptors are open.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc != 0 {
        return Err(LandlockError::Rule {
            path: path.to_path_buf(),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}
