//! What a Principal is shown of the installed packs: only the packs and commands it holds a grant for, so a model
//! plans with the tools it can run and learns nothing of the rest. Every face that lists packs, commands, Skills,
//! availability or titles asks here; a pack a Principal may not see answers as one that is not installed.

use super::report::{CommandsReport, ListReport, SkillReport};
use super::Runtime;
use crate::model::grants::{Capability, Grants};
use crate::model::{Denial, Principal};
use crate::pack::{Operation, Pack};

/// The capability a call of `verb` (a command whose row says `operation`) needs: what step 3 of the pipeline
/// asks for.
pub fn capability(verb: &str, operation: Operation) -> Capability {
    if verb == "connect" {
        Capability::PackConnect
    } else if operation == Operation::Write {
        Capability::ExecWrite
    } else {
        Capability::ExecRead
    }
}

/// Whether `grants` let a Principal call `verb` of `pack` (a named command or a pass-through subcommand).
pub fn may_call(grants: &Grants, pack: &Pack, verb: &str) -> bool {
    let row = match pack.command(verb) {
        Some(c) => c.policy,
        None => match pack.pass_through.as_ref().and_then(|p| p.policy.get(verb)) {
            Some(row) => *row,
            None => return false,
        },
    };
    grants.allows(capability(verb, row.operation), &pack.id, verb)
}

/// Whether `grants` show `pack`: they let its holder call one of its commands, or receive its stimuli.
pub fn sees(grants: &Grants, pack: &Pack) -> bool {
    let pass_through = pack.pass_through.as_ref().map(|p| p.policy.keys()).into_iter().flatten();
    pack.commands.keys().chain(pass_through).any(|verb| may_call(grants, pack, verb))
        || super::sense::holds_announce(grants, Some(&pack.id))
}

/// Whether any grant names pack `id` (or every pack): what decides whether a pack that does not load is shown.
fn names_any(grants: &Grants, id: &str) -> bool {
    match grants {
        Grants::All => true,
        Grants::Only(list) => list.iter().any(|g| g.pack_id == "*" || g.pack_id == id),
    }
}

impl Runtime {
    /// Whether `principal` sees pack `id` (installed or built in; a pack that does not load: when a grant names
    /// it).
    pub fn sees_pack(&self, principal: &Principal, id: &str) -> bool {
        match self.installed_pack(id) {
            Ok(pack) => sees(&principal.grants, &pack),
            Err(_) => names_any(&principal.grants, id),
        }
    }

    /// `unknown_pack` for `id` as `principal` may be told it: the closest pack it sees, never one it does not.
    pub fn unknown_pack_for(&self, principal: &Principal, id: &str) -> Denial {
        let state = self.store().state().ok();
        let installed = state.iter().flat_map(|s| s.packs.keys()).map(String::as_str);
        let seen: Vec<&str> = installed
            .chain(crate::store::built_in::IDS.iter().copied())
            .filter(|p| self.sees_pack(principal, p))
            .collect();
        super::fix::unknown_pack(id, seen)
    }

    /// Nothing when `principal` sees installed pack `id`, else `unknown_pack` as for a pack not installed.
    pub fn visible_pack(&self, principal: &Principal, id: &str) -> Result<(), Denial> {
        if self.sees_pack(principal, id) {
            Ok(())
        } else {
            Err(self.unknown_pack_for(principal, id))
        }
    }

    /// The packs `principal` sees, as `list` gives them for its tenant. Where a pack was installed from a
    /// directory names the operator's host: a caller other than the store's owner is told only that.
    pub fn list_for(&self, principal: &Principal) -> Result<ListReport, Denial> {
        let mut list = self.list(Some(&principal.tenant))?;
        list.packs.retain(|row| self.sees_pack(principal, &row.id));
        let owner = principal.tenant == crate::store::principals::LOCAL_TENANT
            && principal.invoker != crate::model::Invoker::Http;
        for row in list.packs.iter_mut().filter(|r| !owner && !r.source.starts_with("oci://")) {
            row.source = "a directory on the operator's host".into();
        }
        Ok(list)
    }

    /// The commands of pack `id` (or only `verb`) that `principal` may call; a pack it does not see is unknown and a
    /// command it may not call is as absent as one the pack does not have.
    pub fn commands_for(
        &self,
        principal: &Principal,
        id: &str,
        verb: Option<&str>,
    ) -> Result<CommandsReport, Denial> {
        self.visible_pack(principal, id)?;
        let mut report = self.commands_of(id, verb)?;
        let pack = self.installed_pack(id).ok();
        let callable = |verb: &str| pack.as_ref().is_some_and(|pack| may_call(&principal.grants, pack, verb));
        report.commands.retain(|c| callable(&c.verb_key));
        if let Some(v) = verb.filter(|_| report.commands.is_empty()) {
            let all = self.commands_of(id, None)?;
            let seen = all.commands.iter().map(|c| c.verb_key.as_str()).filter(|k| callable(k));
            return Err(super::fix::no_command(id, v, seen));
        }
        Ok(report)
    }

    /// The Skill of pack `id`, when `principal` sees the pack.
    pub fn skill_for(&self, principal: &Principal, id: &str, full: bool) -> Result<SkillReport, Denial> {
        self.visible_pack(principal, id)?;
        self.skill(id, full)
    }
}
