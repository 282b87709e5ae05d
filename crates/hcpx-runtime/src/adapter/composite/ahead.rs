//! Compiled ahead of its calls: install, update and activate compile a composite's component into the operator's
//! compile cache (and remember what it describes), so no call pays a compile (seconds for a Python or JavaScript
//! component); a component that does not compile is refused there, before its pack is installed.

use std::path::Path;

use super::{cache, describe, link, Blocking, CompositeAdapter, Source, Step};
use crate::model::digest::sha256_hex;
use crate::pack::{AdapterKind, Pack};

/// What compiling a pack's component ahead of its calls did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Precompiled {
    /// The component's SHA-256 (the cache key's first part, and the digest an install records).
    pub component_sha256: String,
    /// Its size.
    pub bytes: u64,
    /// Whether it was compiled now (`false`: the cache held it already).
    pub compiled: bool,
}

/// Compiles the component of the composite pack in `pack.dir` into `cache` (the compile cache its calls will
/// use) unless the cache holds it already, on the engine a call compiles on, and remembers the commands it
/// describes. `on` is told of a compile as it happens. `Ok(None)`: nothing to compile (not a composite), or
/// `expected` (the digest recorded at install) is not the component's any more, which its calls refuse, naming
/// the fix. `Err`: the component cannot be read, or does not compile. What it describes is its calls' finding,
/// as before: a component that compiles but does not link or describe is not refused here. Blocks.
pub fn precompile(
    pack: &Pack,
    cache: &Path,
    expected: Option<&str>,
    on: &dyn Fn(Step),
) -> Result<Option<Precompiled>, String> {
    if pack.kind != AdapterKind::Composite || pack.component.is_none() {
        return Ok(None);
    }
    let adapter = CompositeAdapter::one_shot();
    let (engine, _) = adapter.engine()?;
    let source = Source::of_pack(pack, cache.to_path_buf());
    let memo = cache::memo(cache);
    // An installed pack's component digest goes through the memo its calls use (so, once its file is settled,
    // the first call reads nothing it did not); a staged one is read and hashed.
    let (sha, mut bytes) = match expected {
        Some(_) => source.digest(&memo)?,
        None => {
            let b = source.read()?;
            (sha256_hex(&b), Some(b))
        }
    };
    if expected.is_some_and(|e| e != sha) {
        return Ok(None);
    }
    let size = std::fs::metadata(pack.dir.join(pack.component.as_deref().unwrap_or_default()))
        .map_or(0, |m| m.len());
    let read = || match bytes.take() {
        Some(b) => Ok(b),
        None => source.read(),
    };
    let loaded = cache::load(cache, engine, &sha, &memo, read, on)?;
    if cache::remembered_commands(cache, &sha).is_none() {
        if let Ok(linked) = link(engine, &loaded.component) {
            if let Ok(Ok(names)) = adapter.block_on(describe(&adapter, &linked.pre, Blocking::Inline)) {
                cache::remember_commands(cache, &sha, &names);
            }
        }
    }
    Ok(Some(Precompiled { component_sha256: sha, bytes: size, compiled: loaded.compiled }))
}
