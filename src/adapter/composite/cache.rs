//! Compile once: precompiled components cached under `$HCP_HOME/cache`, keyed by the component's SHA-256, the
//! wasmtime version and the engine's compatibility hash, and trusted only when the file's own digest matches.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::store::Store;

/// The wasmtime release the cache files were compiled by (also covered by the compatibility hash).
pub const WASMTIME_VERSION: &str = "48";

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The cache key of a component on this engine.
pub fn cache_key(engine: &Engine, component_sha: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{component_sha}-wasmtime{WASMTIME_VERSION}-{:016x}", h.finish())
}

/// Loads the component from the cache, or compiles it and fills the cache. `Err` is a message.
pub fn load(store: &Store, engine: &Engine, bytes: &[u8], component_sha: &str) -> Result<Component, String> {
    let key = cache_key(engine, component_sha);
    let file = store.path("cache").join(format!("{key}.cwasm"));
    let digest_file = store.path("cache").join(format!("{key}.sha256"));
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
        let _ = std::fs::create_dir_all(store.path("cache"));
        let digest = sha256_hex(&serialized);
        let rel = format!("cache/{key}.cwasm");
        if store.write_atomic(&rel, &serialized).is_ok() {
            let _ = store.write_atomic(&format!("cache/{key}.sha256"), digest.as_bytes());
        }
    }
    Ok(component)
}
