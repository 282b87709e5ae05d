//! The honest floor of a whole-process composite call: what any host pays to run a precompiled component once.
//! It builds a wasmtime `Engine` configured as hcpx's one-shot engine is (component model, epoch interruption,
//! on-demand instance allocation, the default memory reservation), maps the `.cwasm` hcpx's compile cache holds
//! for the component (`Component::deserialize_file`, as hcpx does), links WASI and the `hcp:adapter@0.1.0` host
//! interface, instantiates it with an empty WASI context, calls `exec` once and prints the answer. No store, no
//! policy, no audit, no digest check, no ticker, no async runtime.
//!
//! Usage: `composite-floor CWASM VERB ARGS_JSON [PRINCIPAL]`, e.g. `composite-floor $HCP_HOME/cache/<key>.cwasm
//! plan '{"from":"A","to":"B"}'`. Exit 0 when the component answered `ok`.

use std::io::Write;
use std::process::ExitCode;

use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

wasmtime::component::bindgen!({ world: "composite", path: "../../wit/0.1.0" });

use hcp::adapter::host::Level;

/// A call's state: WASI and its resources, and nothing of hcpx's.
struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl hcp::adapter::host::Host for State {
    fn log(&mut self, _level: Level, _message: String) {}

    fn credential(&mut self, _handle: u32) -> Option<String> {
        None
    }
}

impl hcp::adapter::types::Host for State {}

/// `pow` from the `libm` crate, as the `hcpx` binary defines it (src/main.rs there): the one function the floor
/// takes from `libm.so.6`, which it then need not load.
#[unsafe(no_mangle)]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// wasi:io's host state: the call's resource table.
struct HasIo;

impl wasmtime::component::HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// The sync WASI 0.2 host of each interface in `imports` that a command-line component imports; a sockets
/// interface is refused (the floor's components import none).
fn link_imported(l: &mut Linker<State>, imports: &[String]) -> wasmtime::Result<()> {
    use wasmtime_wasi::cli::{WasiCli, WasiCliView};
    use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
    use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
    use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sync};
    use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
    type S = State;
    for name in imports {
        match name.split('@').next().unwrap_or(name) {
            "wasi:io/error" => sync::io::error::add_to_linker::<S, HasIo>(l, |t| t.ctx().table)?,
            "wasi:io/poll" => sync::io::poll::add_to_linker::<S, HasIo>(l, |t| t.ctx().table)?,
            "wasi:io/streams" => sync::io::streams::add_to_linker::<S, HasIo>(l, |t| t.ctx().table)?,
            "wasi:clocks/wall-clock" => clocks::wall_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?,
            "wasi:clocks/monotonic-clock" => {
                clocks::monotonic_clock::add_to_linker::<S, WasiClocks>(l, S::clocks)?
            }
            "wasi:filesystem/preopens" => {
                filesystem::preopens::add_to_linker::<S, WasiFilesystem>(l, S::filesystem)?
            }
            "wasi:filesystem/types" => {
                sync::filesystem::types::add_to_linker::<S, WasiFilesystem>(l, S::filesystem)?
            }
            "wasi:random/random" => random::random::add_to_linker::<S, WasiRandom>(l, S::random)?,
            "wasi:random/insecure" => random::insecure::add_to_linker::<S, WasiRandom>(l, S::random)?,
            "wasi:random/insecure-seed" => {
                random::insecure_seed::add_to_linker::<S, WasiRandom>(l, S::random)?
            }
            "wasi:cli/exit" => cli::exit::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/environment" => cli::environment::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/stdin" => cli::stdin::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/stdout" => cli::stdout::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/stderr" => cli::stderr::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/terminal-input" => cli::terminal_input::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/terminal-output" => cli::terminal_output::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/terminal-stdin" => cli::terminal_stdin::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/terminal-stdout" => cli::terminal_stdout::add_to_linker::<S, WasiCli>(l, S::cli)?,
            "wasi:cli/terminal-stderr" => cli::terminal_stderr::add_to_linker::<S, WasiCli>(l, S::cli)?,
            other if other.starts_with("wasi:") => wasmtime::bail!("FLOOR_IMPORTED does not link {name}"),
            _ => {}
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "composite-floor: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run() -> wasmtime::Result<bool> {
    let args: Vec<String> = std::env::args().collect();
    let [_, cwasm, verb, json, rest @ ..] = args.as_slice() else {
        wasmtime::bail!("usage: composite-floor CWASM VERB ARGS_JSON [PRINCIPAL]");
    };
    let principal = rest.first().cloned().unwrap_or_else(|| "local".into());
    // hcpx's one-shot engine (crates/hcpx-runtime/src/adapter/composite/mod.rs, `make_engine(false)`): any other
    // setting that changes code generation changes the engine's compatibility hash, and the cache file is then
    // refused here, so a floor built on other settings cannot be measured by mistake.
    let mut cfg = Config::new();
    cfg.wasm_component_model(true).epoch_interruption(true);
    let engine = Engine::new(&cfg)?;
    // FLOOR_TICKER set (a diagnostic row of the script, not the floor): the epoch ticker thread hcpx starts with its
    // engine, a thread that advances the epoch every 2 ms, to show what that thread alone costs a process.
    if std::env::var_os("FLOOR_TICKER").is_some() {
        let ticker = engine.weak();
        std::thread::spawn(move || loop {
            std::thread::sleep(std::time::Duration::from_millis(2));
            match ticker.upgrade() {
                Some(e) => e.increment_epoch(),
                None => return,
            }
        });
    }
    // SAFETY: the file is hcpx's compile cache's, written by `Component::serialize` on an engine of this
    // configuration and this wasmtime; the bench trusts it as hcpx does after its checks.
    let component = unsafe { wasmtime::component::Component::deserialize_file(&engine, cwasm) }?;
    let mut linker: Linker<State> = Linker::new(&engine);
    // FLOOR_IMPORTED set (a diagnostic row of the script): only the WASI interfaces the component imports, as
    // hcpx links them (crates/hcpx-runtime/src/adapter/composite/wasi_link.rs), to show the floor of a host that
    // does so too; otherwise all of WASI 0.2, as wasmtime documents a host doing.
    if std::env::var_os("FLOOR_IMPORTED").is_some() {
        let imports: Vec<String> =
            component.component_type().imports(&engine).map(|(n, _)| n.to_string()).collect();
        link_imported(&mut linker, &imports)?;
    } else {
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    }
    Composite::add_to_linker::<State, HasSelf<State>>(&mut linker, |s| s)?;
    let pre = CompositePre::new(linker.instantiate_pre(&component)?)?;
    let mut store =
        Store::new(&engine, State { wasi: WasiCtxBuilder::new().build(), table: ResourceTable::new() });
    store.set_epoch_deadline(u64::MAX / 2);
    let instance = pre.instantiate(&mut store)?;
    let ctx = CallContext {
        principal: principal.clone(),
        tenant: principal,
        workspace_mode: "none".into(),
        credentials: Vec::new(),
    };
    let answer = instance.call_exec(&mut store, &ctx, verb, json)?;
    let mut out = std::io::stdout().lock();
    match answer {
        Ok(text) => {
            writeln!(out, "{text}")?;
            Ok(true)
        }
        Err(msg) => {
            writeln!(out, "{msg}")?;
            Ok(false)
        }
    }
}
