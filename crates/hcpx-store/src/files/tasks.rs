//! Tasks on the file store: one owner-only file per task, `[tenants/T/]tasks/<id>.json` (mode 0600 in a 0700
//! directory), changed under `tasks.lock`. A process that runs tasks holds an exclusive lock on
//! `task-owners/<owner>.lock` for its life; a sweep that can take that lock knows the owner is gone (the kernel
//! released it, whatever killed the process) and settles its working tasks as failed, outcome unknown.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::Files;
use crate::tasks::{dir_of, is_task_id, now_ms, TaskRecord, TaskStatus};
use crate::StoreError;

/// Where the owners' liveness locks are, relative to the store.
const OWNERS: &str = "task-owners";

/// The lock every read-modify-write of a task file takes.
const LOCK: &str = "tasks.lock";

/// This process as the owner of tasks: its name and the lock that shows it alive (held until the process ends).
#[derive(Debug)]
pub(super) struct Owner {
    name: String,
    _alive: File,
}

/// Whether `name` is an owner's name as [`Files::owner`] makes them (only then is it joined to a path).
fn is_owner(name: &str) -> bool {
    !name.is_empty() && name.len() <= 40 && name.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
}

impl Files {
    /// This process's owner name, made (and its lock taken) the first time.
    pub(super) fn owner(&self) -> Result<String, StoreError> {
        if let Some(o) = self.owner.get() {
            return Ok(o.name.clone());
        }
        let bytes = crate::random_bytes::<4>()?;
        let name = format!(
            "{}-{}",
            std::process::id(),
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        self.dir(Path::new(OWNERS), true)?;
        let p = self.path(&format!("{OWNERS}/{name}.lock"));
        let file = crate::lock_file(&p)?;
        file.lock().map_err(|e| StoreError::io(&p, e))?;
        let _ = self.owner.set(Owner { name, _alive: file });
        self.owner
            .get()
            .map(|o| o.name.clone())
            .ok_or_else(|| StoreError::Refused("the task owner could not be recorded".into()))
    }

    fn task_rel(tenant: &str, id: &str) -> Result<String, StoreError> {
        Ok(dir_of(tenant)?.join(format!("{id}.json")).display().to_string())
    }

    fn task_lock(&self) -> Result<File, StoreError> {
        let p = self.path(LOCK);
        let f = crate::lock_file(&p)?;
        f.lock().map_err(|e| StoreError::io(&p, e))?;
        Ok(f)
    }

    fn task_write(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        self.dir(&dir_of(&rec.tenant)?, true)?;
        let mut text = serde_json::to_string_pretty(rec)
            .map_err(|e| StoreError::Corrupt { path: rec.id.clone(), reason: e.to_string() })?;
        text.push('\n');
        let target = self.path(&Files::task_rel(&rec.tenant, &rec.id)?);
        crate::write_atomic(&target, text.as_bytes(), 0o600).map_err(|e| StoreError::io(&target, e))
    }

    pub(super) fn task_put(&self, rec: &TaskRecord) -> Result<(), StoreError> {
        let _lock = self.task_lock()?;
        self.task_write(rec)
    }

    pub(super) fn task_get(&self, tenant: &str, id: &str) -> Result<Option<TaskRecord>, StoreError> {
        if !is_task_id(id) {
            return Ok(None);
        }
        let rel = Files::task_rel(tenant, id)?;
        match self.text(&rel)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| StoreError::Corrupt {
                path: self.path(&rel).display().to_string(),
                reason: e.to_string(),
            }),
        }
    }

    pub(super) fn task_mark_cancel(&self, tenant: &str, id: &str) -> Result<(), StoreError> {
        let _lock = self.task_lock()?;
        if let Some(mut t) = self.task_get(tenant, id)? {
            if t.status == TaskStatus::Working && !t.cancel_requested {
                t.cancel_requested = true;
                t.updated_at_ms = now_ms();
                self.task_write(&t)?;
            }
        }
        Ok(())
    }

    pub(super) fn task_end(&self, rec: &TaskRecord) -> Result<bool, StoreError> {
        let _lock = self.task_lock()?;
        match self.task_get(&rec.tenant, &rec.id)? {
            Some(t) if t.status == TaskStatus::Working => {
                let done = TaskRecord { cancel_requested: t.cancel_requested, ..rec.clone() };
                self.task_write(&done)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub(super) fn task_cancels(&self, ids: &[(String, String)]) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for (tenant, id) in ids {
            if self.task_get(tenant, id)?.is_some_and(|t| t.cancel_requested) {
                out.push(id.clone());
            }
        }
        Ok(out)
    }

    /// Every task file of every tenant.
    fn task_files(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.path("tasks")];
        if let Ok(tenants) = fs::read_dir(self.path("tenants")) {
            dirs.extend(tenants.flatten().map(|t| t.path().join("tasks")));
        }
        dirs.iter()
            .filter_map(|d| fs::read_dir(d).ok())
            .flat_map(|entries| entries.flatten().map(|e| e.path()))
            .filter(|p| p.file_stem().and_then(|s| s.to_str()).is_some_and(is_task_id))
            .collect()
    }

    /// How many tasks each tenant has in each state; a file that does not parse is left out.
    pub(super) fn task_tally(&self) -> Vec<(String, TaskStatus, u64)> {
        let mut counts: std::collections::BTreeMap<(String, &'static str), (TaskStatus, u64)> =
            Default::default();
        for p in self.task_files() {
            let Some(t) =
                fs::read_to_string(&p).ok().and_then(|s| serde_json::from_str::<TaskRecord>(&s).ok())
            else {
                continue;
            };
            counts.entry((t.tenant, t.status.as_str())).or_insert((t.status, 0)).1 += 1;
        }
        counts.into_iter().map(|((tenant, _), (status, n))| (tenant, status, n)).collect()
    }

    /// Whether owner `name` is gone: its liveness lock can be taken (or was never there).
    fn owner_gone(&self, name: &str) -> bool {
        if !is_owner(name) || self.owner.get().is_some_and(|o| o.name == name) {
            return false;
        }
        let p = self.path(&format!("{OWNERS}/{name}.lock"));
        match File::open(&p) {
            Ok(f) => match f.try_lock() {
                Ok(()) => true,
                Err(fs::TryLockError::WouldBlock) => false,
                Err(fs::TryLockError::Error(_)) => false,
            },
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        }
    }

    pub(super) fn task_sweep(&self) -> Result<usize, StoreError> {
        let _lock = self.task_lock()?;
        let now = now_ms();
        let mut changed = 0;
        let mut gone = Vec::new();
        for p in self.task_files() {
            let Some(t) =
                fs::read_to_string(&p).ok().and_then(|s| serde_json::from_str::<TaskRecord>(&s).ok())
            else {
                continue;
            };
            if t.expired(now) {
                if fs::remove_file(&p).is_ok() {
                    changed += 1;
                }
            } else if t.status == TaskStatus::Working && self.owner_gone(&t.owner) {
                gone.push(t.owner.clone());
                self.task_write(&t.settled_unknown(now))?;
                changed += 1;
            }
        }
        for name in gone {
            let _ = fs::remove_file(self.path(&format!("{OWNERS}/{name}.lock")));
        }
        Ok(changed)
    }
}
