//! Installed packs' files in the database (`hcpx_pack_files`), keyed by pack id and the digest of the install,
//! so a replica never reads a pack from another replica's disk: it writes the files it needs into its own
//! `$HCP_HOME/packs/<id>`, and the digest recorded at install decides whether they are the pack's.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{db_error, Db};
use crate::StoreError;

/// One entry of a pack: a directory, a file, or an executable file.
struct Entry {
    path: String,
    kind: &'static str,
    bytes: Option<Vec<u8>>,
}

fn entries(dir: &Path) -> Result<Vec<Entry>, StoreError> {
    let mut found = Vec::new();
    let whole =
        crate::pack::tree::walk(dir, crate::packs::MAX_PACK_ENTRIES, usize::MAX, &|_| true, &mut |rel, m| {
            found.push((PathBuf::from(rel), m.file_type()))
        });
    if !whole {
        return Err(StoreError::Refused(format!("{} holds too many entries to store", dir.display())));
    }
    let mut out = Vec::new();
    for (rel, t) in found {
        let path =
            rel.to_str().ok_or_else(|| StoreError::Refused(format!("{} is not UTF-8", rel.display())))?;
        let full = dir.join(&rel);
        if t.is_dir() {
            out.push(Entry { path: path.into(), kind: "d", bytes: None });
        } else if t.is_file() {
            let meta = std::fs::symlink_metadata(&full).map_err(|e| StoreError::io(&full, e))?;
            let bytes = std::fs::read(&full).map_err(|e| StoreError::io(&full, e))?;
            let kind = if meta.permissions().mode() & 0o111 != 0 { "x" } else { "f" };
            out.push(Entry { path: path.into(), kind, bytes: Some(bytes) });
        } else {
            return Err(StoreError::Refused(format!(
                "{} is neither a file nor a directory; a pack stored in PostgreSQL holds only those",
                full.display()
            )));
        }
    }
    Ok(out)
}

impl Db {
    /// Stores the files of the installed pack at `dir` as install `digest` of `id` (replacing a partial earlier
    /// upload of the same digest).
    pub fn pack_upload(&self, id: &str, digest: &str, dir: &Path) -> Result<(), StoreError> {
        let files = entries(dir)?;
        let (pool, shown, id, digest) =
            (self.pool(), self.shown().to_string(), id.to_string(), digest.to_string());
        self.run(async move {
            let mut c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let tx = c.transaction().await.map_err(|e| db_error(&shown, e))?;
            tx.execute("DELETE FROM hcpx_pack_files WHERE pack_id = $1 AND digest = $2", &[&id, &digest])
                .await
                .map_err(|e| db_error(&shown, e))?;
            let st = tx
                .prepare("INSERT INTO hcpx_pack_files (pack_id, digest, path, kind, bytes) VALUES ($1, $2, $3, $4, $5)")
                .await
                .map_err(|e| db_error(&shown, e))?;
            for f in &files {
                let kind = f.kind.to_string();
                tx.execute(&st, &[&id, &digest, &f.path, &kind, &f.bytes])
                    .await
                    .map_err(|e| db_error(&shown, e))?;
            }
            tx.commit().await.map_err(|e| db_error(&shown, e))
        })
    }

    /// Writes install `digest` of pack `id` into `into` (which must not exist). The caller checks the digest
    /// of what was written before it uses it.
    pub fn pack_fetch(&self, id: &str, digest: &str, into: &Path) -> Result<(), StoreError> {
        let (pool, shown, id_, digest) =
            (self.pool(), self.shown().to_string(), id.to_string(), digest.to_string());
        let rows: Vec<(String, String, Option<Vec<u8>>)> = self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            let rows = c
                .query(
                    "SELECT path, kind::text, bytes FROM hcpx_pack_files WHERE pack_id = $1 AND digest = $2 ORDER BY path",
                    &[&id_, &digest],
                )
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
        })?;
        if rows.is_empty() {
            return Err(StoreError::Refused(format!(
                "the database holds no files for pack {id}; install it again with `hcpx install DIR`"
            )));
        }
        std::fs::create_dir_all(into).map_err(|e| StoreError::io(into, e))?;
        for (path, kind, bytes) in rows {
            // Paths were relative and clean when stored; one that is not is refused, never joined.
            let rel = Path::new(&path);
            if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
                return Err(StoreError::Refused(format!(
                    "pack {id}: stored path {path:?} is not a plain path"
                )));
            }
            let target = into.join(rel);
            if kind == "d" {
                std::fs::create_dir_all(&target).map_err(|e| StoreError::io(&target, e))?;
                continue;
            }
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
            }
            let mode = if kind == "x" { 0o755 } else { 0o644 };
            crate::write_atomic(&target, &bytes.unwrap_or_default(), mode)
                .map_err(|e| StoreError::io(&target, e))?;
        }
        Ok(())
    }

    /// Removes the stored files of pack `id`, all of them or all but install `keep`.
    pub fn pack_remove(&self, id: &str, keep: Option<&str>) -> Result<(), StoreError> {
        let (pool, shown, id, keep) =
            (self.pool(), self.shown().to_string(), id.to_string(), keep.unwrap_or("").to_string());
        self.run(async move {
            let c = pool.get().await.map_err(|e| db_error(&shown, e))?;
            c.execute("DELETE FROM hcpx_pack_files WHERE pack_id = $1 AND digest <> $2", &[&id, &keep])
                .await
                .map_err(|e| db_error(&shown, e))?;
            Ok(())
        })
    }
}
