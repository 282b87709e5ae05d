//! The Landlock ruleset of one call, built in the runtime (where paths can still be opened) and handed to the
//! child as a descriptor, which restricts itself with it just before exec.

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};
use std::os::fd::{AsFd, OwnedFd};
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
        source: landlock::RulesetError,
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
    for p in &c.read {
        created = add(created, p, AccessFs::from_read(abi), abi)?;
    }
    for p in &c.write {
        created = add(created, p, AccessFs::from_all(abi), abi)?;
    }
    Ok(created.into())
}

/// Adds a rule for `path` (skipped when it does not exist); a file gets only the rights files have.
fn add(
    rs: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> Result<RulesetCreated, LandlockError> {
    let Ok(fd) = PathFd::new(path) else { return Ok(rs) };
    // The type of what was opened, from its descriptor: no second lookup of the path (one system call fewer
    // for each of the ~40 paths of a call, and no path swapped in between).
    let is_dir = rustix::fs::fstat(fd.as_fd())
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir());
    let access = if is_dir { access } else { access & AccessFs::from_file(abi) };
    rs.add_rule(PathBeneath::new(fd, access))
        .map_err(|source| LandlockError::Rule { path: path.to_path_buf(), source })
}
