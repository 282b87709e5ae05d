//! The four availability flags of a pack for a Principal: installed, activated, bound, runnable.

use serde::Serialize;

use super::pipeline::Runner;
use super::{mint, Runtime};
use crate::adapter::Env;
use crate::model::Principal;

/// What `hcpx availability` and `hcp.availability` report; `notes` says why a flag is false.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Availability {
    pub pack_id: String,
    pub installed: bool,
    pub activated: bool,
    pub bound: bool,
    pub runnable: bool,
    pub notes: Notes,
}

/// Why a flag is false, and what to do: one field per flag, absent when the flag holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Notes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub activated: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runnable: Option<String>,
}

impl Availability {
    /// The four flags in order: name, value, and the note when false.
    pub fn flags(&self) -> [(&'static str, bool, Option<&str>); 4] {
        [
            ("installed", self.installed, self.notes.installed.as_deref()),
            ("activated", self.activated, self.notes.activated.as_deref()),
            ("bound", self.bound, self.notes.bound.as_deref()),
            ("runnable", self.runnable, self.notes.runnable.as_deref()),
        ]
    }
}

impl Runtime {
    /// The four flags of `pack_id` for `principal`. `runnable` asks the pack's adapter, the same check a call
    /// makes before it runs.
    pub fn availability(&self, principal: &Principal, pack_id: &str) -> Availability {
        let mut notes = Notes::default();
        let store = self.store();
        // A pack the Principal holds no grant for is, to it, not installed.
        let seen = self.sees_pack(principal, pack_id);
        let state = store.state().unwrap_or_default();
        let record = state.packs.get(pack_id).filter(|_| seen);
        let pack = match self.held(pack_id, &state) {
            Ok(p) => p.filter(|_| seen).map(|(pack, _)| pack),
            Err(e) => {
                notes.installed = Some(e.to_string());
                None
            }
        };
        // A built-in pack has no install record: nothing to install, and every tenant has it activated.
        let built_in = pack.as_ref().is_some_and(|p| p.built_in);
        let activated = built_in || record.is_some_and(|r| r.activated_for(&principal.tenant));
        if record.is_none() && !built_in {
            notes.installed = Some("install it with `hcpx install DIR`".into());
        }
        let installed = pack.is_some();
        if installed && !activated {
            notes.activated = Some(super::fix::activate_fix(pack_id, &principal.tenant));
        }
        let (mut bound, mut runnable) = (false, false);
        if let Some(pack) = &pack {
            match mint(store, pack, principal, false) {
                Ok(_) => bound = true,
                Err(e) => notes.bound = Some(e.to_string()),
            }
            match store.sandbox() {
                Err(e) => notes.runnable = Some(e.to_string()),
                Ok(sandbox) => {
                    let layout = store.layout();
                    let env = Env {
                        layout: &layout,
                        sandbox: &sandbox,
                        component_sha256: record.and_then(|r| r.component_sha256.as_deref()),
                    };
                    let ready = match self.runner(pack) {
                        Some(Runner::Adapter(adapter)) => adapter.runnable(pack, env).map_err(|d| d.message),
                        Some(Runner::BuiltIn) => Ok(()),
                        None => Err(format!("kind {} cannot be executed by this runtime", pack.kind)),
                    };
                    match ready {
                        Ok(()) => runnable = true,
                        Err(m) => notes.runnable = Some(m),
                    }
                }
            }
        }
        Availability { pack_id: pack_id.to_string(), installed, activated, bound, runnable, notes }
    }
}
