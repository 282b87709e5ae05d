//! `Runtime::exec`: the seven fail-closed steps of execution.md, in order, for every face. The steps
//! themselves are in `pipeline.rs`, one function each.

mod availability;
mod binding;
pub mod bootstrap;
mod pass_through;
mod pipeline;
pub mod report;
pub mod scrub;

pub use availability::{Availability, Notes};
pub use binding::{mint, required_fields, MintError};

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::adapter::composite::CompositeAdapter;
use crate::adapter::wrap::WrapAdapter;
use crate::adapter::{Adapter, ExecHooks, NoHooks};
use crate::model::{Envelope, Principal, ResultEnvelope};
use crate::pack::{AdapterKind, Pack};
use crate::store::packs::PackState;
use crate::store::{Store, StoreError};

/// The runtime over one store.
pub struct Runtime {
    store: Store,
    project_dir: Option<PathBuf>,
    composite: CompositeAdapter,
    packs: Mutex<HashMap<String, (String, Arc<Pack>)>>,
}

/// The arguments of a call: a JSON object, or command-line words parsed against the command's schema.
pub enum ArgsInput<'a> {
    Json(&'a Map<String, Value>),
    Words(&'a [String]),
}

impl Runtime {
    /// A runtime over `store`, with no project directory (a served runtime).
    pub fn new(store: Store) -> Runtime {
        Runtime {
            store,
            project_dir: None,
            composite: CompositeAdapter::new(),
            packs: Mutex::new(HashMap::new()),
        }
    }

    /// For a process that runs one call and exits (the `hcpx exec` CLI): composites allocate on demand
    /// instead of reserving the pooling allocator, which only pays off across many calls.
    pub fn one_shot(mut self) -> Runtime {
        self.composite = CompositeAdapter::one_shot();
        self
    }

    /// Sets the caller's project directory, for `project` mode wraps.
    pub fn with_project_dir(mut self, dir: Option<PathBuf>) -> Runtime {
        self.project_dir = dir;
        self
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Runs one call through the pipeline.
    pub fn exec(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        self.exec_with(principal, env, &NoHooks)
    }

    /// Runs one call, telling `hooks` when the adapter starts.
    pub fn exec_with(&self, principal: &Principal, env: &Envelope, hooks: &dyn ExecHooks) -> ResultEnvelope {
        self.pipeline(principal, env, ArgsInput::Json(&env.args), hooks)
    }

    /// Runs a call whose arguments are command-line words (`k=v`, `k:=json`, bare words); `env.args` is ignored.
    pub fn exec_words(
        &self,
        principal: &Principal,
        env: &Envelope,
        words: &[String],
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        self.pipeline(principal, env, ArgsInput::Words(words), hooks)
    }

    /// The adapter that runs packs of `kind`, when this runtime has one.
    fn adapter(&self, kind: AdapterKind) -> Option<&dyn Adapter> {
        match kind {
            AdapterKind::Wrap => Some(&WrapAdapter),
            AdapterKind::Composite => Some(&self.composite),
            AdapterKind::Openapi | AdapterKind::SenseOnly => None,
        }
    }

    /// The installed pack, loaded once per install (keyed by its install time) and shared across calls.
    fn pack(&self, id: &str, record: &PackState) -> Result<Option<Arc<Pack>>, StoreError> {
        if let Some((at, p)) = self.packs.lock().ok().and_then(|m| m.get(id).cloned()) {
            if at == record.installed_at {
                return Ok(Some(p));
            }
        }
        let Some(pack) = self.store.load_pack(id)? else { return Ok(None) };
        let pack = Arc::new(pack);
        if let Ok(mut m) = self.packs.lock() {
            m.insert(id.to_string(), (record.installed_at.clone(), pack.clone()));
        }
        Ok(Some(pack))
    }
}
