//! An eval fixture: a fresh project directory made for one `hcpx eval` or `hcpx check` run, from a directory of
//! the pack (copied) or the pack's setup script (run confined, like a wrap call, with no network), so eval
//! cases and probes work on a copy and never on the user's files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sandbox::spawn::{self, Spawn};
use crate::sandbox::{Confinement, KernelProbe, WrapView};
use crate::store::config::SandboxConfig;

/// A setup script's output past this is cut (it is only shown when the script fails).
const SCRIPT_OUTPUT: u64 = 64 * 1024;

/// A fresh project made from a fixture, removed on drop.
pub struct Fixture {
    root: tempfile::TempDir,
    /// What it was made from, as `hcp.eval.json` names it.
    pub source: String,
}

/// Why a fixture could not be made.
#[derive(Debug, thiserror::Error)]
#[error("fixture {source_name:?} of hcp.eval.json: {reason}")]
pub struct FixtureError {
    source_name: String,
    reason: String,
}

impl Fixture {
    /// Makes a fresh project from `fixture` (relative to the installed pack at `pack_dir`, which lint keeps
    /// inside the pack): a directory is copied; an executable is run with the new directory as its only
    /// argument and working directory, confined by `sandbox` as a wrap call of pack `pack_id` is, without
    /// network, within `timeout`.
    pub fn make(
        pack_id: &str,
        pack_dir: &Path,
        fixture: &str,
        sandbox: &SandboxConfig,
        timeout: Duration,
    ) -> Result<Fixture, FixtureError> {
        let fail = |reason: String| FixtureError { source_name: fixture.to_string(), reason };
        let rel = fixture.trim_start_matches("./");
        let root = tempfile::Builder::new()
            .prefix("hcpx-fixture-")
            .tempdir()
            .map_err(|e| fail(format!("cannot make a temporary directory: {e}")))?;
        let made = Fixture { root, source: fixture.to_string() };
        let project = made.project();
        let source = pack_dir.join(rel);
        if source.is_dir() {
            crate::store::packs::copy_pack(&source, &project).map_err(|e| fail(e.to_string()))?;
            return Ok(made);
        }
        for d in [&project, &made.root.path().join("home"), &made.root.path().join("tmp")] {
            std::fs::create_dir_all(d).map_err(|e| fail(format!("cannot make {}: {e}", d.display())))?;
        }
        run_script(pack_id, pack_dir, &source, made.root.path(), sandbox, timeout).map_err(fail)?;
        Ok(made)
    }

    /// The fresh project directory.
    pub fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }
}

/// Runs the setup script confined: it reads the pack and the system, writes only the new project (and its own
/// home and temp directory), and reaches no network.
fn run_script(
    pack_id: &str,
    pack_dir: &Path,
    script: &Path,
    root: &Path,
    sandbox: &SandboxConfig,
    timeout: Duration,
) -> Result<(), String> {
    let (project, home, tmp) = (root.join("project"), root.join("home"), root.join("tmp"));
    let probe = KernelProbe::get();
    let view = WrapView {
        pack_id,
        pack_dir,
        program: script,
        workdir: &project,
        workdir_writable: true,
        home: &home,
        tmpdir: &tmp,
        network: &[],
        unix_sockets: &[],
        egress: None,
        project: false,
        timeout_ms: timeout.as_millis() as u64,
    };
    let plan = |p: &KernelProbe| Confinement::for_wrap(&view, sandbox, p).map_err(|r| r.0);
    let cwd = cap_std::fs::Dir::open_ambient_dir(&project, cap_std::ambient_authority())
        .map_err(|e| format!("cannot open {}: {e}", project.display()))?;
    let run = |c: &Confinement| {
        let env: Vec<(String, String)> = vec![
            ("PATH".into(), crate::adapter::wrap::CHILD_PATH.into()),
            ("HOME".into(), home.display().to_string()),
            ("TMPDIR".into(), tmp.display().to_string()),
            ("LANG".into(), "C".into()),
            ("HCP_SANDBOX".into(), c.mode().as_str().into()),
        ];
        spawn::run(&Spawn {
            program: script,
            argv: &[project.display().to_string()],
            cwd: &cwd,
            env: &env,
            timeout,
            max_output: SCRIPT_OUTPUT,
            confine: Some((c, probe.landlock_abi(sandbox))),
            cancel: None,
        })
    };
    let (_, fin) = crate::sandbox::run_confined(plan(&probe)?, plan, run)?;
    let fin = fin.map_err(|e| format!("cannot run it: {e}"))?;
    if fin.timed_out {
        return Err(format!("it ran past {} ms and was stopped", timeout.as_millis()));
    }
    if !fin.status.success() {
        let said = String::from_utf8_lossy(&fin.stderr);
        let last = said.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(format!(
            "it failed ({}){}; run it by hand with a new directory to see why",
            fin.describe_exit(),
            if last.is_empty() { String::new() } else { format!(": {last}") }
        ));
    }
    Ok(())
}
