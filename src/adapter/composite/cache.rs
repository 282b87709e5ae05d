//! Compile once: precompiled components cached under `$HCP_HOME/cache`, keyed by the component's SHA-256, the
//! wasmtime version and the engine's compatibility hash, and trusted only when the file's own digest matches.

use crate::model::digest::sha256_hex;
use crate::store::write_atomic;
use std::hash::{Hash, Hasher};
use wasmtime::component::Component;
use wasmtime::Engine;

use std::path::Path;

/// The wasmtime release the cache files were compiled by (also covered by the compatibility hash).
pub const WASMTIME_VERSION: &str = "48";

/// The cache key of a component on this engine.
pub fn cache_key(engine: &Engine, component_sha: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{component_sha}-wasmtime{WASMTIME_VERSION}-{:016x}", h.finish())
}

/// Loads the component from the cache, or compiles it and fills the cache. `Err` is a message.
pub fn load(cache: &Path, engine: &Engine, bytes: &[u8], component_sha: &str) -> Result<Component, String> {
    let key = cache_key(engine, component_sha);
    let file = cache.join(format!("{key}.cwasm"));
    let digest_file = cache.join(format!("{key}.sha256"));
    if let (Ok(cached), Ok(expected)) = (std::fs::read(&file), std::fs::read_to_string(&digest_file)) {
        if sha256_hex(&cached) == expected.trim() {
            // SAFETY: the file was written by `Component::serialize` on an engine with the same compatibility
            // hash (it is in the key), and its bytes match the digest recorded when it was written.
            if let Ok(c) = unsafe { Component::deserialize(engine, &cached) } {
                return Ok(c);
            }
        }
        // A tampered or stale file is never loaded: it is replaced below.
    }
    let component =
        Component::new(engine, bytes).map_err(|e| format!("the component does not compile: {e:#}"))?;
    if let Ok(serialized) = component.serialize() {
        let _ = std::fs::create_dir_all(cache);
        let digest = sha256_hex(&serialized);
        if write_atomic(&file, &serialized, 0o644).is_ok() {
            let _ = write_atomic(&digest_file, digest.as_bytes(), 0o644);
        }
    }
    Ok(component)
}
