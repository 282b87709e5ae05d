//! The loader of `sandbox.json`: the one function that turns the stored text into the checked settings, used by
//! every reader (the runtime through `Store::sandbox`, `hcpx config` before it writes, `/readyz`).

use crate::config::SandboxConfig;

impl SandboxConfig {
    /// The loader every reader of `sandbox.json` uses (the runtime through [`crate::Store::sandbox`], `hcpx config` before
    /// it writes): the text parsed (unknown fields refused) and then checked; the reason names what is wrong.
    pub fn load(text: &str) -> Result<SandboxConfig, String> {
        let raw: SandboxConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        raw.checked()
    }

    /// What serde cannot say: a name that could never match, which would leave a setting silently unapplied (a
    /// `human_approval` that names `Ledger` guards nothing).
    pub fn checked(self) -> Result<SandboxConfig, String> {
        use crate::model::naming::{is_command_name, is_pack_id};
        if let Some(id) = self.packs.keys().find(|id| !is_pack_id(id)) {
            return Err(format!(
                "packs: {id:?} is not a pack id (a lower-case letter, then letters, digits, `-` or `_`); name an installed pack as `hcpx list` shows it"
            ));
        }
        for s in self.human_approval.iter().flat_map(|h| &h.commands) {
            if s.pack_id != "*" && !is_pack_id(&s.pack_id) {
                return Err(format!(
                    "human_approval.commands: pack_id {:?} is not a pack id or `*`; name a pack as `hcpx list` shows it",
                    s.pack_id
                ));
            }
            if let Some(k) = s.verb_keys.iter().flatten().find(|k| !is_command_name(k)) {
                return Err(format!(
                    "human_approval.commands: verb_key {k:?} of pack {} is not a command name; name one as `hcpx commands {}` shows it",
                    s.pack_id, s.pack_id
                ));
            }
        }
        Ok(self)
    }
}
