//! Compile once: precompiled components cached under `$HCP_HOME/cache`, keyed by the component's SHA-256, the
//! wasmtime version and the engine's compatibility hash, and trusted only when the file's own digest matches.
//! The directory may be `HCP_CACHE_DIR`, shared by several homes: it is used only while it is this user's and no
//! one else can write it, since what it holds is native code that is mapped and run. It lives in the sandbox
//! crate because trusting such a file is the one `unsafe` act of a composite call: which native code runs.

use crate::model::digest::sha256_hex;
use crate::store::write_atomic;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};
use wasmtime::component::Component;
use wasmtime::Engine;

use crate::store::memo::{Fingerprint, Memo};

/// The wasmtime release the cache files were compiled by (also covered by the compatibility hash).
pub const WASMTIME_VERSION: &str = "48";

/// The cache key of a component on this engine.
pub fn cache_key(engine: &Engine, component_sha: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{component_sha}-wasmtime{WASMTIME_VERSION}-{:016x}", h.finish())
}

/// Whether the cache directory may be read and written: a directory owned by this process's user that neither
/// its group nor others can write, or one not made yet (`make_dir` makes it so). Anything else (another user's
/// directory, a group- or world-writable one, a file) is neither read nor written: the component is compiled
/// afresh each time instead.
pub fn trusted(cache: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(cache) {
        Ok(m) => m.is_dir() && m.uid() == rustix::process::geteuid().as_raw() && m.mode() & 0o022 == 0,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Makes the cache directory (and its parents) private to this user, whatever the umask.
fn make_dir(cache: &Path) {
    use std::os::unix::fs::DirBuilderExt;
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(cache);
}

/// The memo of digests kept in the cache directory, or one that remembers nothing when the directory is not
/// [`trusted`] (a digest planted there could vouch for a changed component).
pub fn memo(cache: &Path) -> Memo {
    if trusted(cache) {
        Memo::new(cache.join("digests"))
    } else {
        Memo::off()
    }
}

/// Whether `file` is still the file `before` described (inode, size, change time).
fn unchanged(file: &Path, before: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(file).is_ok_and(|now| {
        (now.dev(), now.ino(), now.len(), now.ctime(), now.ctime_nsec())
            == (before.dev(), before.ino(), before.len(), before.ctime(), before.ctime_nsec())
    })
}

/// What a load did, told as it happens to a caller that reports compiles (progress on a terminal, the server's
/// log): a load that finds the component in the cache says nothing.
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// Compiling a component of `bytes` bytes has begun.
    Compiling { bytes: usize },
    /// It compiled, in `took`.
    Compiled { took: Duration },
    /// It did not compile.
    Failed { took: Duration },
}

/// A loaded component, and whether this load compiled it (rather than finding it compiled).
pub struct Loaded {
    pub component: Component,
    pub compiled: bool,
}

/// Compiles that may be under way in this process, by cache key: a load that finds one waits for it instead of
/// starting another. Held only while a load of that key runs (the map keeps weak references).
type Flights = Mutex<HashMap<String, Weak<Mutex<Option<(Engine, Component)>>>>>;

fn flights() -> &'static Flights {
    static FLIGHTS: OnceLock<Flights> = OnceLock::new();
    FLIGHTS.get_or_init(Flights::default)
}

/// The flight of `key`: joined when a load of it is under way, else begun.
fn flight(key: &str) -> Arc<Mutex<Option<(Engine, Component)>>> {
    let mut map = flights().lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(f) = map.get(key).and_then(Weak::upgrade) {
        return f;
    }
    map.retain(|_, f| f.strong_count() > 0);
    let f = Arc::new(Mutex::new(None));
    map.insert(key.to_string(), Arc::downgrade(&f));
    f
}

/// An exclusive lock on cache entry `key` across processes (`flock` on `KEY.lock` in the cache directory),
/// held until dropped: two processes sharing a cache (`HCP_CACHE_DIR`, a server and the CLI) compile a
/// component once, the second waiting for the first and then finding its file. `None` when the lock file
/// cannot be opened: the load goes on without it (at worst a second compile, never a wrong file: each writes
/// by rename).
fn lock_entry(cache: &Path, key: &str) -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    let file = cache.join(format!("{key}.lock"));
    let fd = open(
        &file,
        OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .ok()?;
    loop {
        match flock(&fd, FlockOperation::LockExclusive) {
            Ok(()) => return Some(fd),
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return None,
        }
    }
}

/// Compiles `bytes`, telling `on` when it begins and how long it took.
fn compile(engine: &Engine, bytes: &[u8], on: &dyn Fn(Step)) -> Result<Component, String> {
    on(Step::Compiling { bytes: bytes.len() });
    let began = Instant::now();
    match Component::new(engine, bytes) {
        Ok(c) => {
            on(Step::Compiled { took: began.elapsed() });
            Ok(c)
        }
        Err(e) => {
            on(Step::Failed { took: began.elapsed() });
            Err(format!("the component does not compile: {e:#}"))
        }
    }
}

/// Loads the component from the cache, or compiles it (reading its bytes with `bytes`) and fills the cache,
/// telling `on` of a compile. Within a process, one compile per cache key at a time: a load that arrives during
/// one waits for it and takes its result (or, on another engine, its file); across processes sharing a trusted
/// cache directory, the entry's lock file does the same. `Err` is a message.
pub fn load(
    cache: &Path,
    engine: &Engine,
    component_sha: &str,
    memo: &Memo,
    bytes: impl FnOnce() -> Result<Vec<u8>, String>,
    on: &dyn Fn(Step),
) -> Result<Loaded, String> {
    let key = cache_key(engine, component_sha);
    let trusted = trusted(cache);
    if trusted {
        if let Some(component) = found(cache, engine, &key, memo) {
            return Ok(Loaded { component, compiled: false });
        }
    }
    let flight = flight(&key);
    let mut slot = flight.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, c)) = slot.as_ref().filter(|(e, _)| Engine::same(e, engine)) {
        return Ok(Loaded { component: c.clone(), compiled: false });
    }
    if !trusted {
        let component = compile(engine, &bytes()?, on)?;
        *slot = Some((engine.clone(), component.clone()));
        return Ok(Loaded { component, compiled: true });
    }
    make_dir(cache);
    let _entry = lock_entry(cache, &key);
    // Another load (in this process on another engine, or in another process) may have filled it meanwhile.
    if let Some(component) = found(cache, engine, &key, memo) {
        return Ok(Loaded { component, compiled: false });
    }
    let component = fill(cache, engine, &key, &bytes()?, on)?;
    *slot = Some((engine.clone(), component.clone()));
    Ok(Loaded { component, compiled: true })
}

/// The component compiled under `key` in `cache`, when its file is there, a regular file, and its digest the
/// one recorded when it was written. A tampered or stale file is never loaded (the caller replaces it).
// The compile cache hands wasmtime compiled code to map (see SAFETY below).
fn found(cache: &Path, engine: &Engine, key: &str, memo: &Memo) -> Option<Component> {
    let file = cache.join(format!("{key}.cwasm"));
    let digest_file = cache.join(format!("{key}.sha256"));
    // Only a regular file is ever opened (never a link, a FIFO or a device planted in its place).
    let meta = std::fs::symlink_metadata(&file).ok().filter(|m| m.is_file())?;
    let expected = std::fs::read_to_string(&digest_file).ok()?;
    let mut fp = Fingerprint::new();
    fp.add(b"cwasm", &meta);
    // The file's digest as the kernel's word on it says it was (store/memo.rs), or read and hashed now.
    let mut read = None;
    let have = memo.digest(&file, fp, || match std::fs::read(&file) {
        Ok(bytes) => {
            let digest = sha256_hex(&bytes);
            read = Some(bytes);
            digest
        }
        Err(_) => String::new(),
    });
    if have != expected.trim() {
        return None;
    }
    // SAFETY: the file was written by `Component::serialize` on an engine with the same compatibility hash (it
    // is in the key), atomically (a rename), in a directory only this user can write (`trusted`), and its bytes
    // match the digest recorded when it was written: the bytes just read, or the file as the kernel described
    // it when they last did. It is mapped, not copied, and only while it is still the file described before the
    // check (same inode, size and change time).
    let mapped =
        unsafe { Component::deserialize_file(engine, &file) }.ok().filter(|_| unchanged(&file, &meta));
    match (mapped, &read) {
        (Some(c), _) => Some(c),
        // SAFETY: as above, for the bytes that were hashed.
        (None, Some(bytes)) => unsafe { Component::deserialize(engine, bytes) }.ok(),
        (None, None) => None,
    }
}

/// Compiles `bytes` and writes the result under `key` in `cache`, with its digest; the component as mapped
/// from the file just written when that works.
fn fill(
    cache: &Path,
    engine: &Engine,
    key: &str,
    bytes: &[u8],
    on: &dyn Fn(Step),
) -> Result<Component, String> {
    let component = compile(engine, bytes, on)?;
    let (file, digest_file) = (cache.join(format!("{key}.cwasm")), cache.join(format!("{key}.sha256")));
    if let Ok(serialized) = component.serialize() {
        let digest = sha256_hex(&serialized);
        if write_atomic(&file, &serialized, 0o644).is_ok()
            && write_atomic(&digest_file, digest.as_bytes(), 0o644).is_ok()
        {
            // The file just written, mapped, so this process's memory images too come from the file: an image
            // copied into a sealed memfd instead (what a component compiled in memory gets) can fail to seal
            // with EBUSY on a busy machine (a transient the kernel reports for pages still cached on another
            // CPU), failing the call. SAFETY: written above by `serialize` on this engine, in a directory only
            // this user can write.
            if let Some(mapped) = std::fs::symlink_metadata(&file)
                .ok()
                .filter(|m| m.len() == serialized.len() as u64)
                .and_then(|_| unsafe { Component::deserialize_file(engine, &file) }.ok())
            {
                return Ok(mapped);
            }
        }
    }
    Ok(component)
}

/// The most a remembered `describe` answer may be (a component's command names).
const MAX_COMMANDS_FILE: u64 = 1 << 20;

/// Where the answer of a component's `describe` is remembered: keyed by the component's SHA-256 alone, since
/// the answer is the component's (whatever engine runs it).
fn commands_file(cache: &Path, component_sha: &str) -> std::path::PathBuf {
    cache.join(format!("{component_sha}.commands.json"))
}

/// The command names the component with this digest answered `describe` with, when a process of this store
/// asked it before (`remember_commands`): a one-shot process then need not start an instance only to ask.
/// Only a regular file of sane size is read; anything else is asked again.
pub fn remembered_commands(cache: &Path, component_sha: &str) -> Option<Vec<String>> {
    if !trusted(cache) {
        return None;
    }
    let file = commands_file(cache, component_sha);
    let meta = std::fs::symlink_metadata(&file).ok()?;
    if !meta.is_file() || meta.len() > MAX_COMMANDS_FILE {
        return None;
    }
    serde_json::from_slice(&std::fs::read(&file).ok()?).ok()
}

/// Remembers a component's `describe` answer (best effort: a store whose cache cannot be written asks again).
pub fn remember_commands(cache: &Path, component_sha: &str, names: &[String]) {
    if !trusted(cache) {
        return;
    }
    if let Ok(json) = serde_json::to_vec(names) {
        make_dir(cache);
        let _ = write_atomic(&commands_file(cache, component_sha), &json, 0o644);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether this process maps `file`.
    fn mapped(file: &Path) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.lines().any(|l| l.ends_with(file.to_str().unwrap()))
    }

    /// A loaded component's code and memory images come from its cache file, mapped, whether this process compiled
    /// it or found it: never from a copy in a sealed memfd, whose sealing can fail on a busy machine.
    #[test]
    fn a_component_is_mapped_from_its_cache_file_when_compiled_and_when_found() {
        let wasm = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/transit-composite/adapter.wasm"),
        )
        .unwrap();
        let sha = sha256_hex(&wasm);
        // An engine configured as the composite adapter's is (its pool aside).
        let mut cfg = wasmtime::Config::new();
        cfg.wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&cfg).unwrap();
        let t = tempfile::tempdir().unwrap();
        let (cache, copy) = (t.path().join("cache"), t.path().join("copy"));
        let name = format!("{}.cwasm", cache_key(&engine, &sha));
        let compiled =
            load(&cache, &engine, &sha, &Memo::off(), || Ok(wasm.clone()), &|_| {}).unwrap().component;
        assert!(mapped(&cache.join(&name)), "the compiling process maps the file it wrote");
        drop(compiled);
        make_dir(&copy);
        for f in [name.clone(), name.replace(".cwasm", ".sha256")] {
            std::fs::copy(cache.join(&f), copy.join(&f)).unwrap();
        }
        // Not remembered (a memo that remembers nothing): the file is read and hashed, then mapped.
        let found = load(&copy, &engine, &sha, &Memo::off(), || panic!("compiled again"), &|_| {}).unwrap();
        assert!(!found.compiled);
        let found = found.component;
        assert!(mapped(&copy.join(&name)), "the file found is mapped, not copied");
        drop(found);
    }

    /// Loads of one key that arrive while it compiles wait for that compile and take its result: one compile,
    /// even where no cache file can be shared (a directory others can write is never used).
    #[test]
    fn loads_that_arrive_during_a_compile_wait_for_it() {
        use std::os::unix::fs::PermissionsExt;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::mpsc;
        let wasm = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/transit-composite/adapter.wasm"),
        )
        .unwrap();
        let sha = sha256_hex(&wasm);
        // An engine of its own configuration, so no other test's load shares its key.
        let mut cfg = wasmtime::Config::new();
        cfg.wasm_component_model(true).epoch_interruption(true).consume_fuel(true);
        let engine = Engine::new(&cfg).unwrap();
        let t = tempfile::tempdir().unwrap();
        let cache = t.path().join("open");
        std::fs::create_dir(&cache).unwrap();
        std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!trusted(&cache));
        let compiles = Arc::new(AtomicUsize::new(0));
        let (began, began_rx) = mpsc::channel();
        let (go, go_rx) = mpsc::channel::<()>();
        let load_one = |read: Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>| {
            let (cache, engine, sha, compiles) =
                (cache.clone(), engine.clone(), sha.clone(), compiles.clone());
            std::thread::spawn(move || {
                let counted = |s: Step| {
                    if let Step::Compiling { .. } = s {
                        compiles.fetch_add(1, Ordering::SeqCst);
                    }
                };
                load(&cache, &engine, &sha, &Memo::off(), read, &counted).unwrap().compiled
            })
        };
        let first = load_one(Box::new(move || {
            began.send(()).unwrap();
            go_rx.recv().unwrap();
            Ok(wasm)
        }));
        began_rx.recv().unwrap();
        let waiters: Vec<_> =
            (0..3).map(|_| load_one(Box::new(|| Err("a second compile began".to_string())))).collect();
        // Bounded: the three join the flight the first holds (its count: the first, the three, this look).
        let key = cache_key(&engine, &sha);
        let joined = || {
            let map = flights().lock().unwrap();
            map.get(&key).and_then(Weak::upgrade).map_or(0, |f| Arc::strong_count(&f))
        };
        let since = Instant::now();
        while joined() < 5 && since.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        go.send(()).unwrap();
        assert!(first.join().unwrap(), "the first load compiled");
        for w in waiters {
            assert!(!w.join().unwrap(), "a waiter took the first load's component");
        }
        assert_eq!(compiles.load(Ordering::SeqCst), 1);
    }
}
