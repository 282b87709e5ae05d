//! Capabilities and grants (docs/spec.md §7): what a Principal may do, scoped by pack and command.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::wire::wire_enum;

wire_enum! {
    /// A capability a grant carries.
    pub enum Capability ("capability") {
        ExecRead = "verb.exec.read",
        ExecWrite = "verb.exec.write",
        PackConnect = "pack.connect",
        SenseAnnounce = "sense.announce",
    }
}

/// One grant: a capability on a pack (or `*`), optionally only for some commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// What the grant allows: run reads or writes, connect a pack, or receive its stimuli.
    pub capability: Capability,
    /// The pack it applies to, or `*` for every pack.
    pub pack_id: String,
    /// When present, only these commands of the pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb_keys: Option<Vec<String>>,
}

/// A Principal's grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grants {
    /// Every capability on every pack (the local Principal without `grants.json`).
    All,
    /// Exactly these.
    Only(Vec<Grant>),
}

impl Grants {
    /// True when `cap` is granted for `pack_id`'s `verb_key`.
    pub fn allows(&self, cap: Capability, pack_id: &str, verb_key: &str) -> bool {
        match self {
            Grants::All => true,
            Grants::Only(list) => list.iter().any(|g| {
                g.capability == cap
                    && (g.pack_id == "*" || g.pack_id == pack_id)
                    && g.verb_keys.as_ref().is_none_or(|v| v.iter().any(|k| k == verb_key))
            }),
        }
    }
}

/// A grant written as text (`CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`) that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GrantError(pub String);

impl std::str::FromStr for Grant {
    type Err = GrantError;

    /// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`, as `hcpx grant` and `hcpx principal add --grant` take it.
    fn from_str(text: &str) -> Result<Grant, GrantError> {
        let bad = |m: String| GrantError(m);
        let mut parts = text.splitn(3, ':');
        let (Some(cap), Some(pack)) = (parts.next(), parts.next()) else {
            return Err(bad(format!(
                "grant {text:?} must be CAPABILITY:PACK or CAPABILITY:PACK:VERB,VERB, e.g. verb.exec.read:*"
            )));
        };
        let capability: Capability = cap.parse().map_err(|_| {
            bad(format!(
                "grant {text:?}: unknown capability {cap:?}; use one of {}",
                Capability::NAMES.join(", ")
            ))
        })?;
        if pack != "*" && !super::naming::is_pack_id(pack) {
            return Err(bad(format!("grant {text:?}: {pack:?} is not a pack id or `*`")));
        }
        let verb_keys = parts.next().map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>());
        if let Some(b) = verb_keys.iter().flatten().find(|v| !super::naming::is_command_name(v)) {
            return Err(bad(format!("grant {text:?}: {b:?} is not a command name")));
        }
        Ok(Grant { capability, pack_id: pack.to_string(), verb_keys })
    }
}

impl std::fmt::Display for Grant {
    /// The text form `FromStr` reads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.verb_keys {
            Some(v) => write!(f, "{}:{}:{}", self.capability, self.pack_id, v.join(",")),
            None => write!(f, "{}:{}", self.capability, self.pack_id),
        }
    }
}

/// Every capability on every pack, as a list of grants: what "no grants.json" means, written out so that one
/// grant can be taken from it.
pub fn every_grant() -> Vec<Grant> {
    [Capability::ExecRead, Capability::ExecWrite, Capability::PackConnect, Capability::SenseAnnounce]
        .into_iter()
        .map(|capability| Grant { capability, pack_id: "*".into(), verb_keys: None })
        .collect()
}

/// Adds `new` to `list`: a grant of the same capability and pack gains its commands (or all of them).
pub fn add_grant(list: &mut Vec<Grant>, new: &Grant) {
    let same = list.iter_mut().find(|g| g.capability == new.capability && g.pack_id == new.pack_id);
    match (same, &new.verb_keys) {
        (None, _) => list.push(new.clone()),
        (Some(g), None) => g.verb_keys = None,
        (Some(g), Some(verbs)) => {
            if let Some(have) = &mut g.verb_keys {
                for v in verbs {
                    if !have.contains(v) {
                        have.push(v.clone());
                    }
                }
            }
        }
    }
}

/// Takes `old` from `list`: the grant of the same capability and pack, or only the named commands of it.
/// Refuses what the list does not hold as such (a command of a pack-wide grant, a pack of a `*` grant), naming
/// the wider grant to revoke instead.
pub fn remove_grant(list: &mut Vec<Grant>, old: &Grant) -> Result<(), GrantError> {
    let Some(i) = list.iter().position(|g| g.capability == old.capability && g.pack_id == old.pack_id) else {
        let wider = list.iter().find(|g| g.capability == old.capability && g.pack_id == "*");
        return Err(GrantError(match wider {
            Some(w) => format!(
                "grant {old} is not held as such: it is part of {w}; revoke {w} and grant what should remain"
            ),
            None => format!("no grant {old} to revoke; `hcpx grant` lists the grants held"),
        }));
    };
    match (&old.verb_keys, &mut list[i].verb_keys) {
        (None, _) => {
            list.remove(i);
        }
        (Some(_), None) => {
            let held = list[i].to_string();
            return Err(GrantError(format!(
                "grant {old} is not held as such: it is part of {held}; revoke {held} and grant the commands that should remain"
            )));
        }
        (Some(drop), Some(have)) => {
            if let Some(v) = drop.iter().find(|v| !have.contains(v)) {
                return Err(GrantError(format!("no grant of command {v} in {}; nothing to revoke", list[i])));
            }
            have.retain(|v| !drop.contains(v));
            if have.is_empty() {
                list.remove(i);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoping() {
        let g = Grants::Only(vec![
            Grant { capability: Capability::ExecRead, pack_id: "*".into(), verb_keys: None },
            Grant {
                capability: Capability::ExecWrite,
                pack_id: "ledger".into(),
                verb_keys: Some(vec!["transfer".into()]),
            },
        ]);
        assert!(g.allows(Capability::ExecRead, "any", "x"));
        assert!(g.allows(Capability::ExecWrite, "ledger", "transfer"));
        assert!(!g.allows(Capability::ExecWrite, "ledger", "setup.apply"));
        assert!(!g.allows(Capability::ExecWrite, "other", "transfer"));
        assert!(!Grants::Only(vec![]).allows(Capability::ExecRead, "a", "b"));
        assert!(Grants::All.allows(Capability::PackConnect, "a", "b"));
    }

    #[test]
    fn text_form_add_and_remove() {
        let g: Grant = "verb.exec.write:ledger:transfer".parse().unwrap();
        assert_eq!(g.to_string(), "verb.exec.write:ledger:transfer");
        assert!("verb.exec.nope:*".parse::<Grant>().is_err());
        let mut list = vec![g.clone()];
        add_grant(&mut list, &"verb.exec.write:ledger:refund".parse().unwrap());
        assert_eq!(list[0].to_string(), "verb.exec.write:ledger:transfer,refund");
        remove_grant(&mut list, &g).unwrap();
        assert_eq!(list[0].to_string(), "verb.exec.write:ledger:refund");
        let mut all = every_grant();
        assert!(remove_grant(&mut all, &"verb.exec.write:ledger".parse().unwrap()).is_err());
        remove_grant(&mut all, &"verb.exec.write:*".parse().unwrap()).unwrap();
        assert_eq!(all.len(), 3);
    }
}
