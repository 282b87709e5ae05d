//! Where a wrap runs (`wrap.workspace.mode`): the directory, its `HOME` and `TMPDIR`, and what is removed after.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::model::{Code, Denial};
use crate::pack::{Pack, WorkspaceMode};
use crate::store::Layout;

/// A prepared working directory; per-call directories are removed on drop.
pub struct Workdir {
    pub path: PathBuf,
    /// The working directory opened as a capability (wraps; a component's preopen is opened by WASI).
    pub dir: Option<Dir>,
    /// A wrap's `HOME` and `TMPDIR` (empty for a component, which has no environment to take them).
    pub home: PathBuf,
    pub tmpdir: PathBuf,
    /// Per-call directories (the ephemeral workspace), removed when the call ends.
    _per_call: Vec<TempDir>,
    /// The wrap's TMPDIR, removed when the call ends (or, in a server, emptied and kept for a later call).
    call_tmp: Option<crate::sandbox::calltmp::CallTmp>,
}

impl Workdir {
    /// Says the call's processes are all gone and none could hand its TMPDIR out (its own PID namespace, no UNIX
    /// socket), so a server may empty it and give it to a later call (hcpx-sandbox's calltmp.rs).
    pub fn call_ended_in_own_pid_namespace(&mut self, had_unix_sockets: bool) {
        if let Some(t) = self.call_tmp.as_mut() {
            t.call_ended_in_own_pid_namespace(had_unix_sockets);
        }
    }
}

/// Prepares the working directory of `pack` under `mode`.
/// `for_wrap`: a wrap also gets a private `HOME`, a fresh per-call `TMPDIR` and its cwd opened as a `Dir`;
/// a component has no environment to take them, so it gets only the directory.
pub fn prepare(
    layout: &Layout,
    pack: &Pack,
    mode: WorkspaceMode,
    project: Option<&Path>,
    for_wrap: bool,
) -> Result<Workdir, Denial> {
    let io = |p: &Path, e: std::io::Error| {
        Denial::new(
            Code::AdapterFailed,
            format!("cannot prepare {}: {}", p.display(), crate::model::io_reason(&e)),
        )
    };
    let private = || {
        let p = layout.workspaces.join(&pack.id);
        ensure(&p).map_err(|e| io(&p, e))
    };
    // A wrap's HOME is the pack's private directory (unless the working directory is one of its own).
    let home_for = || if for_wrap { private() } else { Ok(PathBuf::new()) };
    let mut per_call = Vec::new();
    let (path, home) = match mode {
        WorkspaceMode::None => (pack.dir.clone(), home_for()?),
        WorkspaceMode::Workspace => {
            let p = private()?;
            (p.clone(), if for_wrap { p } else { PathBuf::new() })
        }
        WorkspaceMode::Project => {
            let Some(project) = project else {
                return Err(Denial::new(
                    Code::NoProject,
                    format!("pack {} runs in the caller's project (workspace mode project), and this runtime has no project directory; run it from a project or set HCP_PROJECT_DIR", pack.id),
                ));
            };
            if let Some(why) = store_overlap(&layout.home, project) {
                return Err(Denial::new(Code::NoProject, why));
            }
            (project.to_path_buf(), home_for()?)
        }
        WorkspaceMode::Ephemeral => {
            fs::create_dir_all(&layout.tmp).map_err(|e| io(&layout.tmp, e))?;
            let dir = tempfile::Builder::new()
                .prefix(&format!("ephemeral-{}-", pack.id))
                .tempdir_in(&layout.tmp)
                .map_err(|e| io(&layout.tmp, e))?;
            let p = dir.path().to_path_buf();
            per_call.push(dir);
            (p.clone(), if for_wrap { p } else { PathBuf::new() })
        }
    };
    if !for_wrap {
        return Ok(Workdir {
            path,
            dir: None,
            home,
            tmpdir: PathBuf::new(),
            _per_call: per_call,
            call_tmp: None,
        });
    }
    // Outside the store, so a child's TMPDIR does not point it at $HCP_HOME.
    let tmp = crate::sandbox::calltmp::CallTmp::new().map_err(|e| io(&std::env::temp_dir(), e))?;
    let tmpdir = tmp.path().to_path_buf();
    let dir = Dir::open_ambient_dir(&path, ambient_authority()).map_err(|e| {
        Denial::new(
            Code::AdapterFailed,
            format!("cannot open the working directory {}: {}", path.display(), crate::model::io_reason(&e)),
        )
    })?;
    Ok(Workdir { path, dir: Some(dir), home, tmpdir, _per_call: per_call, call_tmp: Some(tmp) })
}

/// Why `project` cannot be a call's project: it holds the store at `home` (its credentials, grants, other
/// packs) or lies inside it, so the call would be handed the store. Refused for both adapters.
pub fn store_overlap(home: &Path, project: &Path) -> Option<String> {
    let Ok(p) = fs::canonicalize(project) else {
        return Some(format!("the project directory {} cannot be resolved; run from an existing project or set HCP_PROJECT_DIR", project.display()));
    };
    // A store that does not exist yet cannot be handed over.
    let home = fs::canonicalize(home).ok()?;
    if home.starts_with(&p) {
        return Some(format!("the project directory {} holds the runtime's store ({}); run from the project itself or set HCP_PROJECT_DIR", p.display(), home.display()));
    }
    if p.starts_with(&home) {
        return Some(format!("the project directory {} is inside the runtime's store; run from a project outside {} or set HCP_PROJECT_DIR", p.display(), home.display()));
    }
    None
}

fn ensure(p: &Path) -> std::io::Result<PathBuf> {
    fs::create_dir_all(p)?;
    Ok(p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pack(name: &str) -> Pack {
        Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs").join(name)).unwrap()
    }

    fn layout(home: &Path) -> Layout {
        Layout {
            home: home.to_path_buf(),
            workspaces: home.join("workspaces"),
            tmp: home.join("tmp"),
            cache: home.join("cache"),
        }
    }

    #[test]
    fn each_mode_gets_its_directory_and_per_call_ones_go_away() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        fs::create_dir_all(&home).unwrap();
        let l = layout(&home);
        // workspace: the pack's private directory, kept; HOME is the same directory.
        let w = prepare(&l, &pack("ledger"), WorkspaceMode::Workspace, None, true).unwrap();
        assert_eq!(w.path, home.join("workspaces/ledger"));
        assert_eq!(w.home, w.path);
        let tmpdir = w.tmpdir.clone();
        assert!(tmpdir.is_dir() && !tmpdir.starts_with(&home), "TMPDIR lies outside the store");
        drop(w);
        assert!(home.join("workspaces/ledger").is_dir() && !tmpdir.exists());
        // ephemeral: a fresh directory under the store's tmp, removed with the call.
        let e = prepare(&l, &pack("ip"), WorkspaceMode::Ephemeral, None, true).unwrap();
        let p = e.path.clone();
        assert!(p.starts_with(home.join("tmp")) && p.is_dir());
        drop(e);
        assert!(!p.exists());
    }

    #[test]
    fn project_mode_needs_a_project_outside_the_store() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        fs::create_dir_all(home.join("inner")).unwrap();
        let l = layout(&home);
        let jq = pack("jq");
        let no = prepare(&l, &jq, WorkspaceMode::Project, None, true).err().unwrap();
        assert_eq!(no.code, Code::NoProject);
        for bad in [t.path().to_path_buf(), home.join("inner")] {
            let d = prepare(&l, &jq, WorkspaceMode::Project, Some(&bad), true).err().unwrap();
            assert_eq!(d.code, Code::NoProject, "{}", d.message);
        }
        let project = t.path().join("project");
        fs::create_dir_all(&project).unwrap();
        let ok = prepare(&l, &jq, WorkspaceMode::Project, Some(&project), true).unwrap();
        assert_eq!(ok.path, project);
        assert!(ok.dir.is_some());
    }
}
