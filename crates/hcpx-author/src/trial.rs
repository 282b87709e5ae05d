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

/// The least time a fixture's setup script gets, whatever the per-case timeout.
const FIXTURE_MIN_MS: u64 = 30_000;

/// A pack installed in a temporary `HCP_HOME`, removed on drop.
pub struct Trial {
    /// The throw-away store, removed when the trial is dropped.
    home: tempfile::TempDir,
    runtime: Runtime,
    agent: Principal,
    pack_id: String,
    project_dir: Option<PathBuf>,
    /// The fresh project made from the pack's fixture, when its hcp.eval.json names one (the project above).
    fixture: Option<crate::fixture::Fixture>,
    /// Writes may run in the project: it is a fixture's copy, or the caller named it (`--project`,
    /// `HCP_PROJECT_DIR`); never the directory `hcpx` merely started in.
    writes_allowed: bool,
    /// The pack's Binding is `mock`: every call asks for it, as its author would (`--mode mock`).
    mock: bool,
    /// The hosts the operator allowed the pack for the trial's tenant (the trial store keeps those grants).
    allowed_hosts: Vec<crate::pack::hosts::HostRule>,
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
    #[error("{0}")]
    Fixture(#[from] crate::fixture::FixtureError),
}

/// The project a trial's `project`-mode calls run in.
#[derive(Debug, Clone, Default)]
pub struct TrialProject {
    pub dir: Option<PathBuf>,
    /// The caller named it (`--project`, `HCP_PROJECT_DIR`), so write cases may run in it.
    pub explicit: bool,
}

/// Where a trial runs, the same for `hcpx check`, `hcpx eval` and `hcpx publish`: the project, the operator's
/// `sandbox.json`, the operator's store (refused as a project) and its compile cache.
#[derive(Debug, Clone, Default)]
pub struct TrialEnv {
    /// Where `project`-mode packs run (unless the pack names a fixture).
    pub project: TrialProject,
    /// The operator's `sandbox.json`: the trial store keeps its grants for this pack and its kernel settings.
    pub sandbox: SandboxConfig,
    /// The operator's store: a project that holds it is refused, as `hcpx exec` refuses it.
    pub store_home: Option<PathBuf>,
    /// The operator's compile cache (`Store::default_compile_cache`): the trial compiles a composite's component
    /// into it, once per component, instead of into its throw-away store. `None`: the trial's own.
    pub compile_cache: Option<PathBuf>,
}

impl TrialEnv {
    /// The operator's environment (its store as `HCP_HOME`/`HCP_STORE` name it), with `project`. Its
    /// `sandbox.json` is read without creating a file store (defaults when there is none); with `HCP_STORE`
    /// naming a database, it is that database's document, as every replica reads it.
    pub fn operator(project: TrialProject) -> Result<TrialEnv, String> {
        use crate::store::Store;
        let compile_cache = Store::default_compile_cache().map_err(|e| e.to_string())?;
        let sandbox = if Store::default_is_files() {
            let path = Store::default_home().join("sandbox.json");
            match std::fs::read_to_string(&path) {
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    let shown = path.display().to_string();
                    format!("{shown} is not valid: {e}; {}", crate::store::advice::corrupt_fix(&shown))
                })?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => SandboxConfig::default(),
                Err(e) => {
                    return Err(format!("cannot read {}: {}", path.display(), crate::model::io_reason(&e)))
                }
            }
        } else {
            let store = Store::open_default().map_err(|e| e.to_string())?.one_shot();
            store.sandbox().map(|s| (*s).clone()).map_err(|e| e.to_string())?
        };
        Ok(TrialEnv {
            project,
            sandbox,
            store_home: Some(Store::default_home()),
            compile_cache: Some(compile_cache),
        })
    }
}

impl Trial {
    /// Installs and activates the pack in `dir` in a fresh temporary store with a per-call `timeout_ms`.
    /// The operator's `sandbox.json` lends the trial what it grants this pack (`packs.<id>`), its kernel settings
    /// (`disable`, `landlock_abi`, `require`) and its limits; the timeout is the trial's own.
    /// A `project`-mode pack is refused a project that holds `store_home` (the operator's store), as `hcpx exec`
    /// would refuse it: the trial's own store is elsewhere, but the probe would read the real one. A composite's
    /// component is compiled into `compile_cache` when given (the operator's), else into the trial's own store.
    pub fn new(dir: &Path, pack: &Pack, timeout_ms: u64, env: &TrialEnv) -> Result<Trial, TrialError> {
        let (project, operator) = (env.project.clone(), &env.sandbox);
        let (store_home, compile_cache) = (env.store_home.as_deref(), env.compile_cache.as_deref());
        let home = tempfile::Builder::new().prefix("hcpx-trial-").tempdir().map_err(TrialError::TempStore)?;
        let mut store = Self::setup(home.path(), dir, pack, timeout_ms, operator)?;
        if let Some(cache) = compile_cache {
            // A component tried here is compiled once into the operator's cache (keyed by its digest and the
            // engine), not again by every check, eval and later call.
            store = store.with_compile_cache(cache.to_path_buf());
        }
        // A fixture gives every run a fresh project of its own: the caller's is never touched.
        let fixture = match pack.evals.as_ref().and_then(|e| e.fixture.as_deref()) {
            Some(f) => Some(crate::fixture::Fixture::make(
                &pack.id,
                &store.pack_dir(&pack.id),
                f,
                &*store.sandbox()?,
                std::time::Duration::from_millis(timeout_ms.max(FIXTURE_MIN_MS)),
            )?),
            None => None,
        };
        let writes_allowed =
            fixture.is_some() || project.explicit || pack.workspace != WorkspaceMode::Project;
        let project_dir = match &fixture {
            Some(f) => Some(f.project()),
            None => project.dir,
        };
        if let (WorkspaceMode::Project, Some(p), Some(home)) = (pack.workspace, &project_dir, store_home) {
            if let Some(why) = crate::adapter::workspace::store_overlap(home, p) {
                return Err(TrialError::Project(why));
            }
        }
        let runtime = Runtime::new(store).with_project_dir(project_dir.clone());
        let agent = Principal {
            id: "eval-agent".into(),
            tenant: "local".into(),
            grants: Grants::All,
            invoker: Invoker::Json,
        };
        if pack.kind == crate::pack::AdapterKind::Composite {
            // Compile and prepare the component before any call is timed: a first compile (seconds for a Python or
            // JavaScript component) is install-time work, paid once per component and cached, not a command's time.
            // Whether it loads is the calls' own finding, so the answer is not needed here.
            let _ = runtime.availability(&agent, &pack.id);
        }
        let allowed_hosts =
            operator.for_pack(&pack.id).map(|p| p.hosts_for(&agent.tenant)).unwrap_or_default();
        Ok(Trial {
            allowed_hosts,
            home,
            runtime,
            agent,
            pack_id: pack.id.clone(),
            project_dir,
            fixture,
            writes_allowed,
            mock: pack.binding.mode == BindingMode::Mock,
        })
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
        store.set_activated(std::slice::from_ref(&pack.id), true, None)?;
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

    /// What the default view hid from a call whose result `first` looks empty or says an access was denied:
    /// the system paths (`sandbox::hidden::CANDIDATES`) that, each lent alone to the pack, make the same call
    /// succeed with data; all of them together when no one alone does. `None` when Landlock did not confine
    /// the call, the result was not empty or denied, or no lent path changes it. Each try runs inside every
    /// other layer and only widens what may be read; the trial's sandbox.json is put back after each.
    pub fn hidden_paths(
        &self,
        verb: &str,
        args: &Map<String, Value>,
        first: &ResultEnvelope,
    ) -> Option<Vec<PathBuf>> {
        use crate::model::{LayerName, LayerStatus};
        use crate::sandbox::hidden;
        let confined = first
            .sandbox
            .as_ref()
            .is_some_and(|s| s.layers.get(&LayerName::Landlock) == Some(&LayerStatus::Enforced));
        let output = output_of(first);
        let denied = hidden::says_denied(first.error.as_deref().unwrap_or(""))
            || hidden::says_denied(first.stderr.as_deref().unwrap_or(""));
        let suspicious = if first.ok { hidden::looks_empty(&output) } else { denied };
        if !confined || !suspicious {
            return None;
        }
        let helps = |lent: &[PathBuf]| -> bool {
            let Ok(call) = self.call_with_read(verb, args.clone(), lent) else { return false };
            call.out.ok && !hidden::looks_empty(&output_of(&call.out))
        };
        let all = hidden::candidates(Some(self.home.path()));
        // The control: a read whose second run has data without any lent path (a list that filled, a clock) was
        // not blinded by the view.
        if all.is_empty() || !helps(&all) || helps(&[]) {
            return None;
        }
        let alone: Vec<PathBuf> = all.iter().filter(|p| helps(std::slice::from_ref(*p))).cloned().collect();
        Some(if alone.is_empty() { all } else { alone })
    }

    /// Runs `verb` with `lent` readable paths added to the pack's view in the trial's sandbox.json, then puts
    /// the file back as it was.
    fn call_with_read(
        &self,
        verb: &str,
        args: Map<String, Value>,
        lent: &[PathBuf],
    ) -> Result<TrialCall, StoreError> {
        let store = self.runtime.store();
        let before: SandboxConfig = (*store.sandbox()?).clone();
        let mut wider = before.clone();
        wider.packs.entry(self.pack_id.clone()).or_default().read.extend(lent.iter().cloned());
        store.write_json("sandbox.json", &wider)?;
        let call = self.call(verb, args);
        store.write_json("sandbox.json", &before)?;
        Ok(call)
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

    /// Whether a write may run in the project (see `writes_allowed`); `Err` says why not and what to do.
    pub fn may_write(&self) -> Result<(), String> {
        if self.writes_allowed {
            return Ok(());
        }
        let dir = self.project_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        Err(format!("not run: it would write to {dir}, the directory hcpx started in; name a fixture in hcp.eval.json (\"fixture\": \"fixture.sh\" or a directory) so cases run in a fresh copy, or pass --project DIR to run them there"))
    }

    /// Where calls run, in words, for `hcpx eval` and `hcpx check` to print.
    /// The hosts command `key` declares when the operator allowed none of them: a call could only be refused
    /// (empty when it declares none, or one of them is allowed).
    pub fn hosts_out_of_reach(&self, pack: &Pack, key: &str) -> Vec<crate::pack::hosts::HostRule> {
        let declared = pack.hosts_of(key);
        if declared.iter().any(|h| self.allowed_hosts.contains(h)) {
            return Vec::new();
        }
        declared.to_vec()
    }

    pub fn ran_in(&self, mode: WorkspaceMode) -> String {
        if let (WorkspaceMode::Project, Some(f)) = (mode, &self.fixture) {
            return format!(
                "a fresh project made from the fixture {} at {} (removed after the run)",
                f.source,
                f.project().display()
            );
        }
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

/// The command's stdout, or its JSON result when stdout is empty.
pub fn output_of(out: &ResultEnvelope) -> String {
    match (&out.stdout, &out.result) {
        (Some(s), _) if !s.trim().is_empty() => s.clone(),
        (_, Some(Value::String(s))) => s.clone(),
        (_, Some(v)) => v.to_string(),
        _ => String::new(),
    }
}
