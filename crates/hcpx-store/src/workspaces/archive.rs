//! A workspace directory as one archive, so the PostgreSQL store can keep it in a row: regular files (with
//! their executable bit) and directories only, in path order so the same tree always gives the same bytes and
//! digest. Extracting checks every path (relative, plain components, no NUL) and writes only into a directory
//! it created, never following a link, so no archive can write outside it.

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::StoreError;

/// The first bytes of every archive (and its format's version).
const MAGIC: &[u8] = b"HCPXWS1\n";
/// The most entries a workspace may hold (files and directories together).
pub const MAX_ENTRIES: usize = 100_000;
/// The deepest a workspace's tree may go.
const MAX_DEPTH: usize = 64;

/// Why a directory cannot be archived: the offending entry and what the operator or pack can do.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// An entry that is neither a regular file nor a directory (a symbolic link, a socket, a device).
    #[error("{path} is neither a file nor a directory (a link, socket or device); a workspace kept in the database holds only files and directories, so remove it from the workspace")]
    NotPlain { path: String },
    /// Past `limit` (bytes, or entries).
    #[error("the workspace holds more than {limit} {what}")]
    TooBig { limit: u64, what: &'static str },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The archive of `dir` (an empty archive when it does not exist), built while its size stays within `cap`
/// bytes: past it, `TooBig` without reading the rest.
pub fn pack(dir: &Path, cap: u64) -> Result<Vec<u8>, ArchiveError> {
    let mut out = MAGIC.to_vec();
    if !dir.exists() {
        return Ok(out);
    }
    let mut entries = Vec::new();
    walk(dir, &mut PathBuf::new(), 0, &mut entries)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (rel, kind) in entries {
        let path = rel.as_os_str().as_bytes();
        let full = dir.join(&rel);
        out.push(kind);
        out.extend_from_slice(&(path.len() as u32).to_be_bytes());
        out.extend_from_slice(path);
        if kind != b'd' {
            let f = fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(&full)
                .map_err(|e| StoreError::io(&full, e))?;
            let meta = f.metadata().map_err(|e| StoreError::io(&full, e))?;
            if !meta.is_file() {
                return Err(ArchiveError::NotPlain { path: rel.display().to_string() });
            }
            if out.len() as u64 + meta.len() + 8 > cap {
                return Err(ArchiveError::TooBig { limit: cap, what: "bytes" });
            }
            let bytes = fs::read(&full).map_err(|e| StoreError::io(&full, e))?;
            out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
        if out.len() as u64 > cap {
            return Err(ArchiveError::TooBig { limit: cap, what: "bytes" });
        }
    }
    Ok(out)
}

/// Collects the entries under `dir/rel` as (relative path, kind), refusing anything but files and directories.
fn walk(
    dir: &Path,
    rel: &mut PathBuf,
    depth: usize,
    out: &mut Vec<(PathBuf, u8)>,
) -> Result<(), ArchiveError> {
    let here = dir.join(&*rel);
    let read = fs::read_dir(&here).map_err(|e| StoreError::io(&here, e))?;
    for e in read {
        let e = e.map_err(|e| StoreError::io(&here, e))?;
        rel.push(e.file_name());
        let t = e.file_type().map_err(|x| StoreError::io(&e.path(), x))?;
        if out.len() >= MAX_ENTRIES {
            return Err(ArchiveError::TooBig { limit: MAX_ENTRIES as u64, what: "entries" });
        }
        if t.is_dir() {
            if depth >= MAX_DEPTH {
                return Err(ArchiveError::TooBig { limit: MAX_DEPTH as u64, what: "directory levels" });
            }
            out.push((rel.clone(), b'd'));
            walk(dir, rel, depth + 1, out)?;
        } else if t.is_file() {
            let meta = e.metadata().map_err(|x| StoreError::io(&e.path(), x))?;
            out.push((rel.clone(), if meta.permissions().mode() & 0o111 != 0 { b'x' } else { b'f' }));
        } else {
            return Err(ArchiveError::NotPlain { path: rel.display().to_string() });
        }
        rel.pop();
    }
    Ok(())
}

/// Whether `archive` holds no entry.
pub fn is_empty(archive: &[u8]) -> bool {
    archive == MAGIC
}

/// The archive of an empty workspace.
pub fn empty() -> Vec<u8> {
    MAGIC.to_vec()
}

fn bad(why: &str) -> StoreError {
    StoreError::Refused(format!("a stored workspace archive is damaged ({why}); nothing of it was written"))
}

/// Reads `n` bytes at `*at`, moving past them.
fn take<'a>(a: &'a [u8], at: &mut usize, n: usize) -> Result<&'a [u8], StoreError> {
    let end = at.checked_add(n).filter(|e| *e <= a.len()).ok_or_else(|| bad("it ends early"))?;
    let s = &a[*at..end];
    *at = end;
    Ok(s)
}

/// Writes `archive` into `into`, which must not exist yet (it is created).
pub fn unpack(archive: &[u8], into: &Path) -> Result<(), StoreError> {
    if !archive.starts_with(MAGIC) {
        return Err(bad("it does not start as one"));
    }
    fs::DirBuilder::new().mode(0o755).create(into).map_err(|e| StoreError::io(into, e))?;
    let mut at = MAGIC.len();
    let mut entries = 0usize;
    while at < archive.len() {
        entries += 1;
        if entries > MAX_ENTRIES {
            return Err(bad("too many entries"));
        }
        let kind = take(archive, &mut at, 1)?[0];
        let len = u32::from_be_bytes(take(archive, &mut at, 4)?.try_into().map_err(|_| bad("a length"))?);
        let raw = take(archive, &mut at, len as usize)?;
        let rel = Path::new(std::ffi::OsStr::from_bytes(raw));
        // Only plain names, so the path stays under `into` whatever it says.
        if raw.is_empty()
            || raw.contains(&0)
            || rel.components().count() > MAX_DEPTH + 1
            || rel.components().any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(bad(&format!("path {:?} is not a plain relative path", rel.display())));
        }
        let target = into.join(rel);
        match kind {
            b'd' => {
                fs::DirBuilder::new().mode(0o755).create(&target).map_err(|e| StoreError::io(&target, e))?
            }
            b'f' | b'x' => {
                let n =
                    u64::from_be_bytes(take(archive, &mut at, 8)?.try_into().map_err(|_| bad("a length"))?);
                let n = usize::try_from(n).map_err(|_| bad("a file length"))?;
                let bytes = take(archive, &mut at, n)?;
                // A new file (never one that is there, never through a link) in a directory this made.
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .mode(if kind == b'x' { 0o755 } else { 0o644 })
                    .open(&target)
                    .map_err(|e| StoreError::io(&target, e))?;
                f.write_all(bytes).map_err(|e| StoreError::io(&target, e))?;
            }
            _ => return Err(bad("an entry of an unknown kind")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: u8, path: &[u8], body: Option<&[u8]>) -> Vec<u8> {
        let mut v = vec![kind];
        v.extend_from_slice(&(path.len() as u32).to_be_bytes());
        v.extend_from_slice(path);
        if let Some(b) = body {
            v.extend_from_slice(&(b.len() as u64).to_be_bytes());
            v.extend_from_slice(b);
        }
        v
    }

    #[test]
    fn a_tree_goes_round_and_gives_the_same_bytes() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        fs::create_dir_all(src.join("a/b")).unwrap();
        fs::write(src.join("a/b/c.json"), b"{}").unwrap();
        fs::write(src.join("run.sh"), b"#!/bin/sh\n").unwrap();
        fs::set_permissions(src.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir(src.join("empty")).unwrap();
        let a = pack(&src, u64::MAX).unwrap();
        unpack(&a, &t.path().join("dst")).unwrap();
        let dst = t.path().join("dst");
        assert_eq!(fs::read(dst.join("a/b/c.json")).unwrap(), b"{}");
        assert!(dst.join("empty").is_dir());
        assert_ne!(fs::metadata(dst.join("run.sh")).unwrap().permissions().mode() & 0o111, 0);
        assert_eq!(pack(&dst, u64::MAX).unwrap(), a, "the same tree gives the same archive");
        assert!(is_empty(&pack(&t.path().join("missing"), u64::MAX).unwrap()));
        // The cap: refused without reading further.
        assert!(matches!(pack(&src, 20), Err(ArchiveError::TooBig { .. })));
    }

    #[test]
    fn links_are_refused_and_no_archive_writes_outside_its_directory() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("src");
        fs::create_dir_all(&src).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
        assert!(matches!(pack(&src, u64::MAX), Err(ArchiveError::NotPlain { .. })));
        for evil in [&b"../escaped"[..], b"/tmp/abs", b"a/../../x", b"", b"a\0b", b"./."] {
            let mut a = MAGIC.to_vec();
            a.extend(entry(b'f', evil, Some(b"pwned")));
            let into = t.path().join(format!("dst-{}", evil.len()));
            let _ = fs::remove_dir_all(&into);
            assert!(unpack(&a, &into).is_err(), "{evil:?} was extracted");
        }
        assert!(!t.path().join("escaped").exists());
        // A file written twice, or under a file, fails rather than replacing anything.
        let mut twice = MAGIC.to_vec();
        twice.extend(entry(b'f', b"x", Some(b"1")));
        twice.extend(entry(b'f', b"x", Some(b"2")));
        assert!(unpack(&twice, &t.path().join("twice")).is_err());
        // Truncated.
        let mut cut = MAGIC.to_vec();
        cut.extend(entry(b'f', b"x", Some(b"12345")));
        cut.truncate(cut.len() - 2);
        assert!(unpack(&cut, &t.path().join("cut")).is_err());
    }
}
