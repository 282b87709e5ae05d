//! The store's documents as JSON files under `$HCP_HOME`: read straight, or through the read cache that a
//! `stat` (or the watch, `cache`) keeps honest; listed by directory.

use std::any::TypeId;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::cache::{self, Lookup};
use super::Files;
use crate::backend::{is_type, Parse, Parsed};
use crate::StoreError;

fn file_key(meta: &fs::Metadata) -> cache::FileKey {
    use std::os::unix::fs::MetadataExt;
    (meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec())
}

impl Files {
    /// The text of the file at `rel`; `None` when it does not exist.
    pub(super) fn text(&self, rel: &str) -> Result<Option<String>, StoreError> {
        let p = self.path(rel);
        match fs::read_to_string(&p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(&p, e)),
        }
    }

    /// The file at `rel` parsed by `parse` as `ty`, through the read cache: a value cached for the file's
    /// current version (inode, size, mtime) is used without reading it, one read as another type is read again.
    pub(super) fn cached(
        &self,
        rel: &str,
        ty: TypeId,
        parse: Parse<'_>,
    ) -> Result<Option<Parsed>, StoreError> {
        let (cached, ticket) = match self.cache.lookup(&self.home, rel) {
            Lookup::Trusted(None) => return Ok(None),
            Lookup::Trusted(Some(v)) if is_type(&v, ty) => return Ok(Some(v)),
            Lookup::Trusted(Some(_)) => (None, None), // read as another type before: read again
            Lookup::Check { cached, ticket } => (cached, Some(ticket)),
        };
        let p = self.path(rel);
        let key = match fs::metadata(&p) {
            Ok(m) => Some(file_key(&m)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io(&p, e)),
        };
        if let Some((cached_key, value)) = cached.filter(|(k, _)| *k == key) {
            let typed = match value {
                None => Some(None),
                Some(v) => is_type(&v, ty).then_some(Some(v)),
            };
            if let Some(typed) = typed {
                if let Some(ticket) = ticket {
                    self.cache.store(rel, cached_key, typed.clone(), ticket);
                }
                return Ok(typed);
            }
        }
        let Some(text) = self.text(rel)? else {
            if let Some(ticket) = ticket.filter(|_| key.is_none()) {
                self.cache.store(rel, None, None, ticket);
            }
            return Ok(None);
        };
        let v = parse(&text)?;
        if let Some(ticket) = ticket {
            self.cache.store(rel, key, Some(v.clone()), ticket);
        }
        Ok(Some(v))
    }

    /// The names of the `.json` files directly in the directory `rel` (none when it is missing).
    pub(super) fn names(&self, rel: &Path) -> Result<Vec<String>, StoreError> {
        let dir = self.home.join(rel);
        match fs::read_dir(&dir) {
            Ok(entries) => Ok(entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".json"))
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(StoreError::io(&dir, e)),
        }
    }

    /// Makes the directory `rel` (and its parents); owner-only when `private` (best effort).
    pub(super) fn dir(&self, rel: &Path, private: bool) -> Result<(), StoreError> {
        let dir = self.home.join(rel);
        fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        if private {
            let _ = fs::set_permissions(&dir, fs::Permissions::from_mode(0o700));
        }
        Ok(())
    }
}
