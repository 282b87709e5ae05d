//! A minted Binding (docs/spec.md §9 step 5, §16): the credential fields one call may use, never printed.

use std::collections::BTreeMap;

use super::wire::wire_enum;

wire_enum! {
    /// `binding.mode`: where a pack's credential comes from.
    pub enum BindingMode ("binding mode") {
        Public = "public",
        User = "user",
        Local = "local",
        Mothership = "mothership",
        Mock = "mock",
    }
}

/// A minted Binding: the fields the pack may receive. Values are secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct MintedBinding {
    pub mode: BindingMode,
    pub fields: BTreeMap<String, String>,
}

impl std::fmt::Debug for MintedBinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MintedBinding")
            .field("mode", &self.mode)
            .field("fields", &self.fields.keys().collect::<Vec<_>>())
            .finish()
    }
}
