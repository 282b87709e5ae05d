//! Install, update and activate compile a composite's component ahead of its calls, into the compile cache its
//! calls use (the operator's: `HCP_CACHE_DIR` or `$HCP_HOME/cache`), with progress on a terminal, so no call
//! pays a compile. A component that does not compile is refused there (`adapter_failed`, naming the pack and
//! the fix): an install leaves nothing installed, an activate leaves the pack as it was (docs/composites.md).

use std::path::Path;

use crate::output::Printer;
use crate::report::CliError;
use hcpx_model::Code;
use hcpx_pack::pack::Pack;
use hcpx_runtime::adapter::composite::{precompile, Step};
use hcpx_store::{InstallCheck, Store};

/// The store as `open_store` opens it, compiling a composite's component as it installs the pack.
pub fn open_store_compiling(p: &Printer) -> anyhow::Result<Store> {
    let p = *p;
    let check = InstallCheck::new(move |pack, layout| {
        compile(&p, pack, &layout.cache, None).map_err(|e| {
            format!(
                "pack {} is not installed: {e}; fix the component (`hcpx check DIR` runs it), rebuild it for wasm32-wasip2, and install again",
                pack.id
            )
        })
    });
    Ok(super::open_store()?.with_install_check(check))
}

/// The refusal of an install whose check failed: `adapter_failed`, as a call of that component would be.
pub fn refused(message: String) -> CliError {
    CliError::denied(Code::AdapterFailed, message)
}

/// Compiles installed packs `ids` that are composites, unless their compile cache holds them already (an
/// activate: the cache entry may have been removed, or the pack installed by an older hcpx or another host).
/// A component that does not compile refuses the activation before anything changed.
pub fn compile_installed(p: &Printer, store: &Store, ids: &[String]) -> Result<(), CliError> {
    let Ok(state) = store.state() else { return Ok(()) };
    let cache = store.layout().cache;
    for id in ids {
        let Some(sha) = component_sha256(&state, id) else { continue };
        // A pack that does not load (changed since install, say) is refused by its calls, naming the fix.
        let Ok(Some(pack)) = store.load_pack(id) else { continue };
        compile(p, &pack, &cache, Some(sha)).map_err(|e| {
            refused(format!(
                "pack {id} is not activated: {e}; reinstall it from a component that compiles (`hcpx install DIR --replace`)"
            ))
        })?;
    }
    Ok(())
}

/// The component digest install recorded for pack `id`: a composite's.
fn component_sha256<'a>(state: &'a hcpx_store::packs::State, id: &str) -> Option<&'a str> {
    state.packs.get(id).and_then(|r| r.component_sha256.as_deref())
}

/// After an install or an update, the digests of what it has just written (the pack's files, whatever its kind,
/// and a composite's component and compiled component) remembered at once, checked as a call checks them, once
/// the kernel's clock has moved past those writes (a few milliseconds: store/memo.rs): the first call reads
/// nothing the hundredth does not (#39). What fails here is its calls' to report, naming the fix, as before.
/// Returns the packs as loaded, for the report (one that does not load is left out).
pub fn remember_installed(p: &Printer, store: &Store, ids: &[String]) -> Vec<Pack> {
    hcpx_store::memo::wait_until_settled();
    let state = store.state().ok();
    let cache = store.layout().cache;
    let mut loaded = Vec::new();
    for id in ids {
        // Loading checks the pack's files as a call does, which remembers their digest.
        let Ok(Some(pack)) = store.load_pack(id) else { continue };
        if let Some(sha) = state.as_deref().and_then(|s| component_sha256(s, id)) {
            let _ = compile(p, &pack, &cache, Some(sha));
        }
        loaded.push(pack);
    }
    loaded
}

/// Compiles `pack`'s component into `cache` unless it is there, drawing progress on a terminal: what is
/// compiled and its size, then the time it took. `Err` is the reason, starting lowercase.
fn compile(p: &Printer, pack: &Pack, cache: &Path, expected: Option<&str>) -> Result<(), String> {
    let id = &pack.id;
    let size = std::cell::Cell::new(0usize);
    let on = |step: Step| match step {
        Step::Compiling { bytes } => {
            size.set(bytes);
            p.progress(&format!("compiling the component of {id} ({})…", mib(bytes)));
        }
        Step::Compiled { took } => {
            p.progress_done();
            if p.live() {
                p.message(&format!(
                    "compiled the component of {id} ({}) in {:.1} s",
                    mib(size.get()),
                    took.as_secs_f64()
                ));
            }
        }
        Step::Failed { .. } => p.progress_done(),
    };
    precompile(pack, cache, expected, &on).map(|_| ())
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}
