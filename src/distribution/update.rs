//! `hcpx update ID`: moves a registry pack to another tag only when the same key signed it, and first names
//! what the move changes in the Policy: a read that became a write, a write that no longer asks to confirm
//! (or a new one that never did), a new credential family, a new network need. Nothing is applied unasked.

use serde::Serialize;

use super::{DistError, PackRef, PullOptions};
use crate::pack::{NetKind, Operation, Pack};
use crate::store::packs::{Origin, Replace};
use crate::store::Store;

/// One change of the Policy a reviewer must see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicyChange {
    /// A command that read now writes.
    ReadBecameWrite { verb: String },
    /// A write that asked to confirm no longer does.
    ConfirmDropped { verb: String },
    /// A new command that writes without asking to confirm.
    NewConfirmFreeWrite { verb: String },
    /// A new command (of any other kind).
    NewCommand { verb: String, operation: Operation },
    /// The pack asks for another credential family.
    NewCredentialFamily { family: String },
    /// The pack needs a network kind it did not.
    NewNetworkNeed { network: NetKind },
}

impl PolicyChange {
    /// The change in one line.
    pub fn describe(&self) -> String {
        match self {
            PolicyChange::ReadBecameWrite { verb } => format!("{verb}: a read became a write"),
            PolicyChange::ConfirmDropped { verb } => {
                format!("{verb}: a write that asked to confirm no longer does")
            }
            PolicyChange::NewConfirmFreeWrite { verb } => {
                format!("{verb}: a new write that runs without confirm")
            }
            PolicyChange::NewCommand { verb, operation } => {
                format!("{verb}: a new {} command", operation.as_str())
            }
            PolicyChange::NewCredentialFamily { family } => format!("a new credential family: {family}"),
            PolicyChange::NewNetworkNeed { network } => format!("a new network need: {}", network.as_str()),
        }
    }
}

fn network(p: &Pack) -> Vec<NetKind> {
    p.wrap.as_ref().map(|w| w.network.clone()).unwrap_or_default()
}

/// What changes in the Policy from `old` to `new`.
pub fn policy_changes(old: &Pack, new: &Pack) -> Vec<PolicyChange> {
    let mut out = Vec::new();
    for (verb, c) in &new.commands {
        let (op, confirm) = (c.policy.operation, c.policy.confirm);
        match old.commands.get(verb) {
            Some(o) => {
                if o.policy.operation == Operation::Read && op == Operation::Write {
                    out.push(PolicyChange::ReadBecameWrite { verb: verb.clone() });
                }
                if op == Operation::Write && o.policy.confirm && !confirm {
                    out.push(PolicyChange::ConfirmDropped { verb: verb.clone() });
                }
            }
            None if op == Operation::Write && !confirm => {
                out.push(PolicyChange::NewConfirmFreeWrite { verb: verb.clone() })
            }
            None => out.push(PolicyChange::NewCommand { verb: verb.clone(), operation: op }),
        }
    }
    if new.binding.family != old.binding.family {
        out.push(PolicyChange::NewCredentialFamily { family: new.binding.family.clone() });
    }
    let before = network(old);
    for n in network(new) {
        if !before.contains(&n) {
            out.push(PolicyChange::NewNetworkNeed { network: n });
        }
    }
    out
}

/// What an update found, and whether it applied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateReport {
    pub id: String,
    pub from: String,
    pub from_digest: String,
    pub to: String,
    pub to_digest: String,
    pub signer: String,
    pub changes: Vec<PolicyChange>,
    pub applied: bool,
}

/// Resolves pack `id`'s repository at `tag` (default: the tag it came from), checks it is signed by the key
/// that signed the installed one, and compares the Policies; installs it only when `apply`.
pub fn update(
    store: &Store,
    id: &str,
    tag: Option<&str>,
    registry: &super::Options,
    apply: bool,
) -> Result<UpdateReport, DistError> {
    let state = store.state()?;
    let Some(rec) = state.packs.get(id) else {
        return Err(DistError::Lock(format!(
            "pack {id} is not installed; install it with hcpx install oci://…"
        )));
    };
    let (Some(from_digest), true) = (&rec.digest, rec.source.starts_with("oci://")) else {
        return Err(DistError::Lock(format!(
            "pack {id} was installed from {}, not a registry; update it by installing the directory again",
            rec.source
        )));
    };
    let Some(fingerprint) = rec.signer.as_ref().and_then(|s| s.split_whitespace().last()) else {
        return Err(DistError::Lock(format!(
            "pack {id} was installed without a trusted signature, so there is no signer to hold the update to; install the new version with hcpx install REF --allow-unsigned --replace after reviewing it"
        )));
    };
    let old_ref = PackRef::parse(&rec.source)?;
    let tag = match tag.map(str::to_string).or(old_ref.tag.clone()) {
        Some(t) => t,
        None => {
            return Err(DistError::Lock(format!(
                "pack {id} was installed by digest; name the tag to move to with --tag"
            )))
        }
    };
    let new_ref = old_ref.at_tag(&tag);
    PackRef::parse(&new_ref.to_string())?;
    let opts = PullOptions {
        registry: registry.clone(),
        allow_unsigned: false,
        expect_digest: None,
        expect_signer: Some(fingerprint.to_string()),
    };
    let pulled = super::pull(store, &new_ref, &opts)?;
    let old = store
        .load_pack(id)?
        .ok_or_else(|| DistError::Lock(format!("pack {id} does not load; reinstall it")))?;
    let new = Pack::load(&pulled.dir).map_err(|e| DistError::Artifact(format!("{new_ref}: {e}")))?;
    if new.id != id {
        return Err(DistError::Artifact(format!(
            "{new_ref} holds pack {}, not {id}; install it under its own id instead",
            new.id
        )));
    }
    let changes = policy_changes(&old, &new);
    let signer = pulled.signer.as_ref().map(|s| format!("{} {}", s.name, s.fingerprint)).unwrap_or_default();
    let mut report = UpdateReport {
        id: id.to_string(),
        from: rec.source.clone(),
        from_digest: from_digest.clone(),
        to: new_ref.to_string(),
        to_digest: pulled.digest.clone(),
        signer: signer.clone(),
        changes,
        applied: false,
    };
    if apply {
        let origin =
            Origin { source: new_ref.to_string(), digest: Some(pulled.digest.clone()), signer: Some(signer) };
        store.install_origin(&pulled.dir, origin, Replace::No)?;
        report.applied = true;
    }
    Ok(report)
}
