//! Where a wrap runs (`wrap.workspace.mode`): the directory, its `HOME` and `TMPDIR`, and what is removed after.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use std::fs;
use std::path::{Path, PathBuf};

use crate::pack::{Pack, WorkspaceMode};
use crate::runtime::Code;
use crate::store::Store;

/// A prepared working directory; per-call directories are removed on drop.
pub struct Workdir {
    pub path: PathBuf,
    /// The working directory opened as a capability (wraps; a component's preopen is opened by WASI).
    pub dir: Option<Dir>,
    pub home: PathBuf,
    pub tmpdir: PathBuf,
    remove: Vec<PathBuf>,
}

impl Drop for Workdir {
    fn drop(&mut self) {
        for p in &self.remove {
            let _ = fs::remove_dir_all(p);
        }
    }
}

/// Prepares the working directory of `pack` under `mode`.
/// `for_wrap`: a wrap also gets a private `HOME`, a fresh per-call `TMPDIR` and its cwd opened as a `Dir`;
/// a component has no environment to take them, so it gets only the directory.
pub fn prepare(
    store: &Store,
    pack: &Pack,
    mode: WorkspaceMode,
    project: Option<&Path>,
    for_wrap: bool,
) -> Result<Workdir, (Code, String)> {
    let io = |p: &Path, e: std::io::Error| {
        (Code::AdapterFailed, format!("cannot prepare {}: {}", p.display(), crate::pack::io_reason(&e)))
    };
    let private = store.path("workspaces").join(&pack.id);
    let home_for = |cwd: &Path| -> Result<PathBuf, (Code, String)> {
        if for_wrap {
            ensure(&private).map_err(|e| io(&private, e))
        } else {
            Ok(cwd.to_path_buf())
        }
    };
    let mut remove = Vec::new();
    let (path, home) = match mode {
        WorkspaceMode::None => (pack.dir.clone(), home_for(&pack.dir)?),
        WorkspaceMode::Workspace => {
            let p = ensure(&private).map_err(|e| io(&private, e))?;
            (p.clone(), p)
        }
        WorkspaceMode::Project => {
            let Some(project) = project else {
                return Err((
                    Code::NoProject,
                    format!("pack {} runs in the caller's project (workspace mode project), and this runtime has no project directory; run it from a project or set HCP_PROJECT_DIR", pack.id),
                ));
            };
            if let Some(why) = store_overlap(store.home(), project) {
                return Err((Code::NoProject, why));
            }
            (project.to_path_buf(), home_for(project)?)
        }
        WorkspaceMode::Ephemeral => {
            let p = store.temp_path(&format!("ephemeral-{}", pack.id));
            fs::create_dir_all(&p).map_err(|e| io(&p, e))?;
            remove.push(p.clone());
            (p.clone(), p)
        }
    };
    // Outside the store, so a child's TMPDIR does not point it at $HCP_HOME.
    if !for_wrap {
        return Ok(Workdir { path, dir: None, tmpdir: home.clone(), home, remove });
    }
    let tmpdir = std::env::temp_dir().join(crate::store::unique_name("hcpx-call"));
    let made = fs::create_dir_all(&tmpdir);
    remove.push(tmpdir.clone());
    let dir = made.map_err(|e| io(&tmpdir, e)).and_then(|_| {
        Dir::open_ambient_dir(&path, ambient_authority()).map(Some).map_err(|e| {
            (
                Code::AdapterFailed,
                format!(
                    "cannot open the working directory {}: {}",
                    path.display(),
                    crate::pack::io_reason(&e)
                ),
            )
        })
    });
    let dir = match dir {
        Ok(d) => d,
        Err(e) => {
            for p in &remove {
                let _ = fs::remove_dir_all(p);
            }
            return Err(e);
        }
    };
    Ok(Workdir { path, dir, home, tmpdir, remove })
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
