//! A throw-away store where `hcpx eval` and `hcpx check --probe` run a pack the way an agent would: installed,
//! activated, its own CLI (and nothing else) allow-listed, called by an agent Principal holding every grant.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::adapter::ExecHooks;
use crate::model::grants::Grants;
use crate::model::{Envelope, Invoker, Principal, ResultEnvelope};
use crate::pack::{Bin, BindingMode, Pack, WorkspaceMode};
use crate::runtime::Runtime;
use crate::store::config::SandboxConfig;
use crate::store::packs::InstallError;
use crate::store::{Store, StoreError};

/// A pack installed in a temporary `HCP_HOME`, removed on drop.
pub struct Trial {
    /// The throw-away store, removed when the trial is dropped.
    home: tempfile::TempDir,
    runtime: Runtime,
    agent: Principal,
    pack_id: String,
    project_dir: Option<PathBuf>,
    /// The pack's Binding is `mock`: every call asks for it, as its author would (`--mode mock`).
    mock: bool,
}

/// One call's outcome, with what the result envelope does not carry.
pub struct TrialCall {
    pub out: ResultEnvelope,
    pub ms: u64,
    /// The CLI's exit code when a process ran.
    pub exit_code: Option<i32>,
}

struct ExitHook(Mutex<Option<i32>>);

impl ExecHooks for ExitHook {
    fn watching(&self) -> bool {
        false
    }

    fn exited(&self, code: Option<i32>) {
        if let Ok(mut c) = self.0.lock() {
            *c = code;
        }
    }
}

/// Why a trial store could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// The project would hand the call the operator's store.
    #[error("{0}")]
    Project(String),
    #[error("cannot make the throw-away store: {0}")]
    TempStore(#[source] std::io::Error),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Install(#[from] InstallError),
}

impl Trial {
    /// Installs and activates the pack in `dir` in a fresh temporary store with a per-call `timeout_ms`.
    /// The operator's `sandbox.json` lends the trial what it grants this pack (`packs.<id>`), its kernel settings
    /// (`disable`, `landlock_abi`, `require`) and its limits; the timeout is the trial's own.
    /// A `project`-mode pack is refused a project that holds `store_home` (the operator's store), as `hcpx exec`
    /// would refuse it: the trial's own store is elsewhere, but the probe would read the real one.
    pub fn new(
        dir: &Path,
        pack: &Pack,
        timeout_ms: u64,
        project_dir: Option<PathBuf>,
        operator: &SandboxConfig,
        store_home: Option<&Path>,
    ) -> Result<Trial, TrialError> {
        if let (WorkspaceMode::Project, Some(p), Some(home)) = (pack.workspace, &project_dir, store_home) {
            if let Some(why) = crate::adapter::workspace::store_overlap(home, p) {
                return Err(TrialError::Project(why));
            }
        }
        let home = tempfile::Builder::new().prefix("hcpx-trial-").tempdir().map_err(TrialError::TempStore)?;
        let made = Self::setup(home.path(), dir, pack, timeout_ms, operator);
        match made {
            Ok(store) => Ok(Trial {
                home,
                runtime: Runtime::new(store).with_project_dir(project_dir.clone()),
                agent: Principal {
                    id: "eval-agent".into(),
                    tenant: "local".into(),
                    grants: Grants::All,
                    invoker: Invoker::Json,
                },
                pack_id: pack.id.clone(),
                project_dir,
                mock: pack.binding.mode == BindingMode::Mock,
            }),
            Err(e) => Err(e),
        }
    }

    fn setup(
        home: &Path,
        dir: &Path,
        pack: &Pack,
        timeout_ms: u64,
        operator: &SandboxConfig,
    ) -> Result<Store, TrialError> {
        let store = Store::open(home)?;
        store.install(dir)?;
        store.set_activated(std::slice::from_ref(&pack.id), true)?;
        let mut sandbox = SandboxConfig {
            timeout_ms: Some(timeout_ms),
            allow: Vec::new(),
            allow_components: None,
            packs: operator
                .packs
                .get(&pack.id)
                .map(|g| [(pack.id.clone(), g.clone())].into_iter().collect())
                .unwrap_or_default(),
            ..operator.clone()
        };
        if let Some(Bin::Name(name)) = pack.wrap.as_ref().map(|w| &w.bin) {
            // Trying a pack explicitly allows its own CLI, and nothing else.
            sandbox.allow.push(name.clone());
        }
        store.write_json("sandbox.json", &sandbox)?;
        Ok(store)
    }

    /// Runs one command through the whole pipeline.
    pub fn call(&self, verb: &str, mut args: Map<String, Value>) -> TrialCall {
        if self.mock && !args.contains_key(crate::args::MODE_ARG) {
            args.insert(crate::args::MODE_ARG.into(), Value::String("mock".into()));
        }
        let hook = ExitHook(Mutex::new(None));
        let started = Instant::now();
        let out = self.runtime.exec_with(&self.agent, &Envelope::new(&self.pack_id, verb, args), &hook);
        TrialCall {
            ms: started.elapsed().as_millis() as u64,
            exit_code: hook.0.lock().ok().and_then(|c| *c),
            out,
        }
    }

    /// Where calls run, in words, for `hcpx eval` and `hcpx check` to print.
    pub fn ran_in(&self, mode: WorkspaceMode) -> String {
        match (mode, &self.project_dir) {
            (WorkspaceMode::Project, Some(p)) => format!(
                "the project {} (read-only for reads, under the same confinement as hcpx exec)",
                p.display()
            ),
            (WorkspaceMode::Project, None) => "no project: project-mode calls are refused".to_string(),
            (WorkspaceMode::None, _) => {
                format!("the installed pack, read-only, in a throw-away store {}", self.home.path().display())
            }
            (WorkspaceMode::Workspace, _) => {
                format!("the pack's workspace in a throw-away store {}", self.home.path().display())
            }
            (WorkspaceMode::Ephemeral, _) => "a fresh directory per call, removed after it".to_string(),
        }
    }

    /// The directory a command of this pack works in, when it is the same for every call
    /// (`None` for `ephemeral`, or `project` without a project).
    pub fn workdir(&self, mode: WorkspaceMode) -> Option<PathBuf> {
        let store = self.runtime.store();
        match mode {
            WorkspaceMode::None => Some(store.pack_dir(&self.pack_id)),
            WorkspaceMode::Workspace => Some(store.path("workspaces").join(&self.pack_id)),
            WorkspaceMode::Project => self.project_dir.clone(),
            WorkspaceMode::Ephemeral => None,
        }
    }
}
