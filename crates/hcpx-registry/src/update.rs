//! `hcpx update ID`: moves a registry pack to another tag only when the same key signed it and the build is not
//! older than the installed one, and first names every change that widens the pack's reach: a read that became
//! a write, a write that no longer asks to confirm, a new command, another credential family, a new network
//! kind, host, UNIX socket or read path, another bin, another workspace mode, a new or changed `agent_env` name.
//! Nothing is applied unasked (`--yes`); `hcpx install` of other content for an installed pack shows the same.

use serde::Serialize;

use super::{DistError, PackRef, PullOptions};
use crate::pack::{Bin, NetKind, Operation, Pack, WrapTarget};
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
    /// The pack declares a host it did not (its own `hosts` or a command's); `verbs` names the commands
    /// that reach it (empty: every command).
    NewHost { host: String, verbs: Vec<String> },
    /// The wrap connects to a UNIX socket it did not.
    NewSocket { path: String },
    /// The wrap asks to read a path it did not.
    NewReadPath { path: String },
    /// The wrap runs another bin.
    BinChanged { from: String, to: String },
    /// The wrap's workspace mode changed (`project`: it may write the user's project).
    WorkspaceModeChanged { from: String, to: String },
    /// The wrap sets an environment variable it did not, or sets one to another value.
    AgentEnv { name: String },
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
            PolicyChange::NewHost { host, verbs } if verbs.is_empty() => format!("a new host: {host}"),
            PolicyChange::NewHost { host, verbs } => format!("a new host: {host} ({})", verbs.join(", ")),
            PolicyChange::NewSocket { path } => format!("a new UNIX socket: {path}"),
            PolicyChange::NewReadPath { path } => format!("a new read path: {path}"),
            PolicyChange::BinChanged { from, to } => format!("runs another bin: {from} -> {to}"),
            PolicyChange::WorkspaceModeChanged { from, to } => format!("workspace mode {from} -> {to}"),
            PolicyChange::AgentEnv { name } => format!("sets agent_env {name} (new or changed)"),
        }
    }
}

/// What a wrap reaches that it did not: sockets, read paths, its bin, its workspace mode, its environment.
fn wrap_changes(old: Option<&WrapTarget>, new: Option<&WrapTarget>) -> Vec<PolicyChange> {
    let Some(new) = new else { return Vec::new() };
    let mut out = Vec::new();
    let shown = |p: &std::path::Path| p.display().to_string();
    for s in &new.unix_sockets {
        if old.is_none_or(|o| !o.unix_sockets.contains(s)) {
            out.push(PolicyChange::NewSocket { path: shown(s) });
        }
    }
    for r in &new.read {
        if old.is_none_or(|o| !o.read.contains(r)) {
            out.push(PolicyChange::NewReadPath { path: shown(r) });
        }
    }
    let bin = |w: &WrapTarget| match &w.bin {
        Bin::Name(n) => n.clone(),
        Bin::Path(p) => p.clone(),
    };
    let (from_bin, to_bin) = (old.map(bin).unwrap_or_else(|| "(a component)".into()), bin(new));
    if from_bin != to_bin {
        out.push(PolicyChange::BinChanged { from: from_bin, to: to_bin });
    }
    let from_mode = old.map_or("none", |o| o.workspace.as_str());
    if from_mode != new.workspace.as_str() {
        out.push(PolicyChange::WorkspaceModeChanged {
            from: from_mode.to_string(),
            to: new.workspace.as_str().to_string(),
        });
    }
    for (name, value) in &new.agent_env {
        let same =
            old.and_then(|o| o.agent_env.get(name)).is_some_and(|v| format!("{v:?}") == format!("{value:?}"));
        if !same {
            out.push(PolicyChange::AgentEnv { name: name.clone() });
        }
    }
    out
}

fn network(p: &Pack) -> Vec<NetKind> {
    p.wrap.as_ref().map(|w| w.network.clone()).unwrap_or_default()
}

/// Every Policy row of a pack, named commands and pass-through subcommands alike.
fn rows(p: &Pack) -> Vec<(String, crate::pack::PolicyRow)> {
    let named = p.commands.iter().map(|(v, c)| (v.clone(), c.policy));
    let passed = p.pass_through.iter().flat_map(|pt| pt.policy.iter().map(|(v, r)| (v.clone(), *r)));
    named.chain(passed).collect()
}

/// What widens from `old` to `new`: the Policy, the credential family and what the wrap reaches.
pub fn policy_changes(old: &Pack, new: &Pack) -> Vec<PolicyChange> {
    let mut out = Vec::new();
    let before = rows(old);
    for (verb, row) in rows(new) {
        let (op, confirm) = (row.operation, row.confirm);
        match before.iter().find(|(v, _)| *v == verb).map(|(_, r)| r) {
            Some(o) => {
                if o.operation == Operation::Read && op == Operation::Write {
                    out.push(PolicyChange::ReadBecameWrite { verb: verb.clone() });
                }
                if op == Operation::Write && o.confirm && !confirm {
                    out.push(PolicyChange::ConfirmDropped { verb: verb.clone() });
                }
            }
            None if op == Operation::Write && !confirm => {
                out.push(PolicyChange::NewConfirmFreeWrite { verb: verb.clone() })
            }
            None => out.push(PolicyChange::NewCommand { verb: verb.clone(), operation: op }),
        }
    }
    out.extend(wrap_changes(old.wrap.as_ref(), new.wrap.as_ref()));
    if new.binding.family != old.binding.family {
        out.push(PolicyChange::NewCredentialFamily { family: new.binding.family.clone() });
    }
    let before = network(old);
    for n in network(new) {
        if !before.contains(&n) {
            out.push(PolicyChange::NewNetworkNeed { network: n });
        }
    }
    out.extend(host_changes(old, new));
    out
}

/// The hosts `new` declares that `old` did not, each with the commands that reach it (none named: every one).
fn host_changes(old: &Pack, new: &Pack) -> Vec<PolicyChange> {
    let before = old.declared_hosts();
    new.declared_hosts()
        .into_iter()
        .filter(|h| !before.contains(h))
        .map(|h| {
            let verbs: Vec<String> =
                new.commands.keys().filter(|k| new.hosts_of(k).contains(&h)).cloned().collect();
            let verbs = if verbs.len() == new.commands.len() { Vec::new() } else { verbs };
            PolicyChange::NewHost { host: h.to_string(), verbs }
        })
        .collect()
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

/// How `update` runs.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateOptions {
    /// Apply it (`--yes`); otherwise only show it.
    pub apply: bool,
    /// Move to a build signed before the installed one (`--allow-downgrade`).
    pub allow_downgrade: bool,
}

/// Resolves pack `id`'s repository at `tag` (default: the tag it came from), checks it is signed by the key
/// that signed the installed one, and compares the Policies; installs it only when `apply`.
pub fn update(
    store: &Store,
    id: &str,
    tag: Option<&str>,
    registry: &super::Options,
    how: UpdateOptions,
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
        allow_downgrade: how.allow_downgrade,
        reviewed: how.apply,
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
    super::refuse_downgrade(id, rec, &new_ref, &pulled, how.allow_downgrade)?;
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
    if how.apply {
        let origin = Origin {
            source: new_ref.to_string(),
            digest: Some(pulled.digest.clone()),
            signer: Some(signer),
            signed_at: pulled.signed_at,
        };
        store.install_origin(&pulled.dir, origin, Replace::No)?;
        report.applied = true;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    /// The ledger example with `edit` applied to its surface.json.
    fn ledger_with(t: &std::path::Path, edit: impl FnOnce(&mut serde_json::Value)) -> Pack {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/ledger");
        crate::store::packs::copy_pack(&src, t).unwrap();
        let path = t.join("surface.json");
        let mut surface: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        edit(&mut surface);
        std::fs::write(&path, surface.to_string()).unwrap();
        Pack::load(t).unwrap()
    }

    #[test]
    fn every_change_that_widens_a_wraps_reach_is_named() {
        let t = tempfile::tempdir().unwrap();
        let old = ledger_with(&t.path().join("old"), |_| {});
        assert_eq!(policy_changes(&old, &old), vec![]);
        let new = ledger_with(&t.path().join("new"), |s| {
            let w = &mut s["wrap"];
            w["network"] = json!(["inet"]);
            w["unix_sockets"] = json!(["/run/postgresql/.s.PGSQL.5432"]);
            w["read"] = json!(["/etc/ssl/certs"]);
            w["bin"] = json!("node");
            w["workspace"]["mode"] = json!("project");
            w["agent_env"] = json!({ "LEDGER_COLOR": "never" });
            s["hosts"] = json!(["api.bank.example"]);
            s["verbs"]["transfer"]["hosts"] = json!(["api.bank.example", "pay.bank.example:8443"]);
        });
        let said: Vec<String> = policy_changes(&old, &new).iter().map(PolicyChange::describe).collect();
        for want in [
            "a new network need: inet",
            "a new UNIX socket: /run/postgresql/.s.PGSQL.5432",
            "a new read path: /etc/ssl/certs",
            "runs another bin: bin/ledger.mjs -> node",
            "workspace mode workspace -> project",
            "sets agent_env LEDGER_COLOR (new or changed)",
            "a new host: api.bank.example",
            "a new host: pay.bank.example:8443 (transfer)",
        ] {
            assert!(said.iter().any(|s| s == want), "{want:?} not in {said:?}");
        }
        // What narrows is not a change to review.
        assert_eq!(
            policy_changes(&new, &old)
                .iter()
                .filter(|c| !matches!(
                    c,
                    PolicyChange::BinChanged { .. } | PolicyChange::WorkspaceModeChanged { .. }
                ))
                .count(),
            0
        );
    }
}
