//! Capabilities and grants (decisions.md §4): what a Principal may do, scoped by pack and command.

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
}
