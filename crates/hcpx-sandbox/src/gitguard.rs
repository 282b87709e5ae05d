//! A composite's view of a project that keeps `.git` safe: a WASI preopen has no per-path permissions, so
//! the project is opened inside a private mount namespace where `.git` is pinned (it cannot be renamed away)
//! and `.git/config` and `.git/hooks` are read-only, and the component's preopen is that directory. The
//! runtime's own view of the filesystem is unchanged.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why `.git` could not be guarded, or what the component did to it.
#[derive(Debug, thiserror::Error)]
pub enum GitGuardError {
    #[error("cannot open the project's .git: {0}")]
    Open(#[source] std::io::Error),
    #[error(transparent)]
    Path(#[from] super::spawn::NulInPath),
    #[error("cannot guard the project's .git ({what}): {source}")]
    Namespace {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot guard the project's .git: the helper thread failed")]
    Thread,
    #[error("the project's .git cannot be checked after the call")]
    Unchecked,
    #[error("the component moved the project's .git and it cannot be found: {0}")]
    Lost(#[source] std::io::Error),
    #[error("the component replaced the project's .git, and it cannot be moved aside: {0}")]
    CannotMoveAside(#[source] std::io::Error),
    #[error("the component moved the project's .git to {}, and it cannot be moved back: {source}", to.display())]
    CannotRestore {
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A write made a `.git` in a project that had none; the call fails, and it is out of the way.
    #[error("the command created .git in {}, which had none, so the user's next git would have read it; hcpx moved it to {} (a write may not make the project a repository)", project.display(), aside.display())]
    PlantedMovedAside { project: PathBuf, aside: PathBuf },
    #[error("the command created .git in {}, which had none, and it cannot be moved aside ({source}); remove it before running git there", project.display())]
    PlantedStays {
        project: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A write made or replaced what git reads under `.git`; the call fails, and it is out of the way.
    #[error("the command made or replaced {} in the project's .git, which the user's next git would read as configuration or code; hcpx moved it to {} (a write may change the project, not what git runs)", moved.iter().map(|(p, _)| p.display().to_string()).collect::<Vec<_>>().join(", "), moved.iter().map(|(_, a)| a.display().to_string()).collect::<Vec<_>>().join(", "))]
    GitPathMovedAside { moved: Vec<(PathBuf, PathBuf)> },
    #[error("the command made or replaced {} in the project's .git, and it cannot be moved aside ({source}); remove it before running git there", path.display())]
    GitPathStays {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The call fails, though the project is whole again.
    #[error("the component moved the project's .git; hcpx put it back{}", aside.as_ref().map(|a| format!(", and moved what it left in its place to {}", a.display())).unwrap_or_default())]
    Restored { aside: Option<PathBuf> },
}

/// The project seen through the private namespace; the namespace lives as long as this value.
pub struct GuardedDir {
    dir: OwnedFd,
    _namespace: OwnedFd,
    project: PathBuf,
    /// The project's `.git`, held open to find it again if it is renamed.
    git: std::fs::File,
}

impl GuardedDir {
    /// A path that opens exactly this directory (its descriptor's magic link), for a WASI preopen.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd()))
    }

    /// After the call: the pin on `.git` holds only for processes inside the namespace, and a component's
    /// file calls run on the runtime's threads, outside it. If `.git` was renamed away, it is put back (what was
    /// left in its place is moved aside) and the call is reported as failed.
    pub fn restore(&self) -> Result<(), GitGuardError> {
        use std::os::unix::fs::MetadataExt;
        let here = self.project.join(".git");
        let Ok(orig) = self.git.metadata() else {
            return Err(GitGuardError::Unchecked);
        };
        let same =
            std::fs::symlink_metadata(&here).is_ok_and(|m| m.dev() == orig.dev() && m.ino() == orig.ino());
        if same {
            return Ok(());
        }
        let now = std::fs::read_link(format!("/proc/self/fd/{}", self.git.as_raw_fd()))
            .map_err(GitGuardError::Lost)?;
        let mut aside = None;
        if std::fs::symlink_metadata(&here).is_ok() {
            let to = self.project.join(crate::store::unique_name(".git.planted"));
            std::fs::rename(&here, &to).map_err(GitGuardError::CannotMoveAside)?;
            aside = Some(to);
        }
        std::fs::rename(&now, &here)
            .map_err(|source| GitGuardError::CannotRestore { to: now.clone(), source })?;
        Err(GitGuardError::Restored { aside })
    }
}

/// A write in a project, watched for what it does to the project's `.git` that a mount cannot stop: a `.git`
/// made where there was none, or a [`GIT_GUARDED`](super::GIT_GUARDED) path made or replaced (a new
/// `commondir`, `config.worktree` or `objects/info/alternates`; a link swapped). After the call, whatever
/// appeared is moved aside under a name git never reads and the call fails, naming it. The call's processes
/// are gone by then (its PID namespace; without one, a `setsid` child that outlives the call could make
/// another). Taken before every write in `project` mode, for wraps and composites alike.
pub struct GitWatch {
    project: PathBuf,
    /// Each watched path and what it was before: (device, inode), or `None` when it did not exist.
    seen: Vec<(PathBuf, Option<(u64, u64)>)>,
}

fn identity(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

impl GitWatch {
    /// What `project`'s `.git` holds now: `.git` itself, and when it is a directory every guarded path in it.
    pub fn before(project: &Path) -> GitWatch {
        let git = project.join(".git");
        let mut paths = vec![git.clone()];
        if std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
            paths.extend(super::GIT_GUARDED.iter().map(|r| git.join(r)));
        }
        let seen = paths
            .into_iter()
            .map(|p| {
                let was = identity(&p);
                (p, was)
            })
            .collect();
        GitWatch { project: project.to_path_buf(), seen }
    }

    /// After the call: moves aside each watched path that appeared or was replaced.
    pub fn after(&self) -> Result<(), GitGuardError> {
        let git = self.project.join(".git");
        let mut moved = Vec::new();
        for (path, was) in &self.seen {
            let now = identity(path);
            if now.is_none() || now == *was {
                continue;
            }
            let Some(name) = path.file_name() else { continue };
            let aside = path
                .with_file_name(crate::store::unique_name(&format!("{}.planted", name.to_string_lossy())));
            match (std::fs::rename(path, &aside), *path == git && was.is_none()) {
                (Ok(()), true) => {
                    return Err(GitGuardError::PlantedMovedAside { project: self.project.clone(), aside })
                }
                (Err(source), true) => {
                    return Err(GitGuardError::PlantedStays { project: self.project.clone(), source })
                }
                (Ok(()), false) => moved.push((path.clone(), aside)),
                (Err(source), false) => {
                    return Err(GitGuardError::GitPathStays { path: path.clone(), source })
                }
            }
        }
        if moved.is_empty() {
            return Ok(());
        }
        Err(GitGuardError::GitPathMovedAside { moved })
    }
}

/// Opens `project` with its `.git` guarded, or `Ok(None)` when it has no `.git` directory. The caller has
/// readied it first ([`super::ready_git_guard`], before its [`GitWatch`] looks).
pub fn guard_git(project: &Path) -> Result<Option<GuardedDir>, GitGuardError> {
    let Some(guard) = super::git_guard(project) else { return Ok(None) };
    let git = project.join(".git");
    let held = std::fs::File::open(&git).map_err(GitGuardError::Open)?;
    let pin: Vec<PathBuf> = guard.pin.into_iter().collect();
    let mounts = super::spawn::binds(&pin, &guard.protect)?;
    let dir = CString::new(project.as_os_str().as_bytes())
        .map_err(|_| super::spawn::NulInPath(project.to_path_buf()))?;
    // The namespace is made by a thread of its own, which leaves the runtime's threads where they are; the
    // namespace outlives the thread through the descriptor of /proc/thread-self/ns/mnt.
    let made = std::thread::spawn(move || -> Result<(OwnedFd, OwnedFd), GitGuardError> {
        let err =
            |what: &'static str| GitGuardError::Namespace { what, source: std::io::Error::last_os_error() };
        // SAFETY: unshare, mount and open act on this thread's own fs and mount namespace and on C strings
        // prepared above; every descriptor made is owned below.
        unsafe {
            if libc::unshare(libc::CLONE_FS | libc::CLONE_NEWNS) != 0 {
                return Err(err("a mount namespace"));
            }
            if !super::spawn::bind_mounts(&mounts) {
                return Err(err("read-only binds"));
            }
            let ns = libc::open(c"/proc/thread-self/ns/mnt".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            if ns < 0 {
                return Err(err("the namespace"));
            }
            let ns = OwnedFd::from_raw_fd(ns);
            let d = libc::open(dir.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
            if d < 0 {
                return Err(err("the project"));
            }
            Ok((OwnedFd::from_raw_fd(d), ns))
        }
    })
    .join()
    .map_err(|_| GitGuardError::Thread)??;
    Ok(Some(GuardedDir { dir: made.0, _namespace: made.1, project: project.to_path_buf(), git: held }))
}
