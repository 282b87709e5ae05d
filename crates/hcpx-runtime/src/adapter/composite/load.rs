//! Loading a pack's component: read through a capability on the installed pack, checked against the digest
//! recorded at install, compiled (or read from the compile cache), and linked against WASI, wasi:http and the
//! host interface of either `hcp:adapter` world, with what it imports read once.

use std::io::Read;
use std::path::PathBuf;

use wasmtime::component::{Component, Linker};
use wasmtime::Engine;

use super::bindings::{self, Composite, CompositePre};
use super::host::CallState;
use super::{cache, wasi_link, Prepared, MAX_COMPONENT_BYTES, OUTGOING_HTTP, PREOPENS};
use crate::model::digest::sha256_hex;
use crate::model::io_reason;
use crate::store::memo::Fingerprint;

/// Every interface of wasi:http (`types`, `outgoing-handler`), linked together or not at all.
const WASI_HTTP: &str = "wasi:http/";
/// The host interface of the `hcp:adapter@0.2.0` world.
const HOST_V0_2: &str = "hcp:adapter/host@0.2.";

/// Where a pack's component comes from, owned, so it can be loaded on another thread.
pub(super) struct Source {
    pub(super) id: String,
    pub(super) dir: PathBuf,
    pub(super) component: Option<String>,
    /// The compile cache.
    pub(super) cache: PathBuf,
    /// The digest recorded at install.
    pub(super) installed: String,
}

impl Source {
    /// The component of a pack read from its directory, not an installed one (`hcpx check` and install's
    /// compile ahead of calls): no digest recorded at install to hold it to.
    pub(super) fn of_pack(pack: &crate::pack::Pack, cache: PathBuf) -> Source {
        Source {
            id: pack.id.clone(),
            dir: pack.dir.clone(),
            component: pack.component.clone(),
            cache,
            installed: String::new(),
        }
    }

    /// Reads the component, checks it is the one installed, compiles it (or reads the compile cache, or waits for
    /// the compile of it under way) and links it against WASI, wasi:http and the host interface; with what it
    /// imports. `on` is told of a compile. Blocks.
    pub(super) fn compile(&self, engine: &Engine, on: &dyn Fn(cache::Step)) -> Result<Prepared, String> {
        let memo = cache::memo(&self.cache);
        let (sha, mut bytes) = self.digest(&memo)?;
        if sha != self.installed {
            return Err(format!(
                "component of pack {} changed since install (sha256 {sha}, installed {}); it is not loaded: reinstall the pack",
                self.id, self.installed
            ));
        }
        let read = || match bytes.take() {
            Some(b) => Ok(b),
            None => self.read(),
        };
        let loaded = cache::load(&self.cache, engine, &sha, &memo, read, on)?;
        link(engine, &loaded.component)
    }

    /// The component's digest, remembered by the kernel's word on the file opened (store/memo.rs): a process
    /// that finds the compile cache never reads the component's tens of MiB at all. With its bytes when they
    /// were read to hash them.
    pub(super) fn digest(
        &self,
        memo: &crate::store::memo::Memo,
    ) -> Result<(String, Option<Vec<u8>>), String> {
        let (mut file, rel) = self.open()?;
        let meta =
            file.metadata().map_err(|e| format!("component {rel} cannot be read: {}", io_reason(&e)))?;
        let mut fp = Fingerprint::new();
        fp.add(rel.as_bytes(), &meta);
        let (mut bytes, mut failed) = (None, None);
        let sha = memo.digest(&self.dir.join(&rel), fp, || match read_capped(&mut file, &rel) {
            Ok(b) => {
                let sha = sha256_hex(&b);
                bytes = Some(b);
                sha
            }
            Err(e) => {
                failed = Some(e);
                String::new()
            }
        });
        match failed {
            Some(e) => Err(e),
            None => Ok((sha, bytes)),
        }
    }
}

/// Links a compiled component against WASI, wasi:http and the host interface of either world (0.1.0 or 0.2.0:
/// a component imports one of them, or neither); with what it imports, read once here.
pub(super) fn link(engine: &Engine, component: &Component) -> Result<Prepared, String> {
    let imports: Vec<String> =
        component.component_type().imports(engine).map(|(n, _)| n.to_string()).collect();
    let files = imports.iter().any(|name| name.starts_with(PREOPENS));
    let http = imports.iter().any(|name| name.starts_with(OUTGOING_HTTP));
    let mut linker: Linker<CallState> = Linker::new(engine);
    // Only the WASI interfaces it imports: an import not linked fails `instantiate_pre` below.
    wasi_link::add_imported(&mut linker, &imports).map_err(|e| format!("cannot link WASI: {e:#}"))?;
    // wasi:http and the 0.2.0 host only for a component that imports them: an import not linked fails
    // `instantiate_pre` below as it always did, and defining one a component does not import gives it nothing.
    // Defining them costs a one-shot `hcpx exec` about a tenth of its instructions (docs/perf-log.md, #39).
    if imports.iter().any(|name| name.starts_with(WASI_HTTP)) {
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| format!("cannot link wasi:http: {e:#}"))?;
    }
    Composite::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(&mut linker, |s| s)
        .map_err(|e| format!("cannot link the host interface: {e:#}"))?;
    if imports.iter().any(|name| name.starts_with(HOST_V0_2)) {
        bindings::v0_2::hcp::adapter::host::add_to_linker::<CallState, wasmtime::component::HasSelf<CallState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| format!("cannot link the host interface 0.2.0: {e:#}"))?;
    }
    let pre = linker
        .instantiate_pre(component)
        .map_err(|e| format!("the component does not fit the hcp:adapter world: {e:#}"))?;
    let pre = CompositePre::new(pre)
        .map_err(|e| format!("the component does not export the hcp:adapter world: {e:#}"))?;
    Ok(Prepared { pre, files, http })
}

impl Source {
    /// Opens the component through a capability on the installed pack directory; with its relative path.
    fn open(&self) -> Result<(std::fs::File, String), String> {
        let rel = self.component.as_deref().ok_or_else(|| format!("pack {} names no component", self.id))?;
        let root = cap_std::fs::Dir::open_ambient_dir(&self.dir, cap_std::ambient_authority())
            .map_err(|e| format!("the installed pack cannot be opened: {}", io_reason(&e)))?;
        let file =
            root.open(rel).map_err(|e| format!("component {rel} cannot be read: {}", io_reason(&e)))?;
        Ok((file.into_std(), rel.to_string()))
    }

    /// Reads the component through a capability on the installed pack directory.
    pub(super) fn read(&self) -> Result<Vec<u8>, String> {
        let (mut file, rel) = self.open()?;
        read_capped(&mut file, &rel)
    }
}

/// All of `file`, refused past [`MAX_COMPONENT_BYTES`].
fn read_capped(file: &mut std::fs::File, rel: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    file.take(MAX_COMPONENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("component {rel} cannot be read: {}", io_reason(&e)))?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err(format!("component {rel} is larger than {} MiB", MAX_COMPONENT_BYTES >> 20));
    }
    Ok(bytes)
}
