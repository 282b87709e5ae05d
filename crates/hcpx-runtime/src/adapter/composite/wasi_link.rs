//! WASI 0.2 linked interface by interface, only those a component imports: `add_to_linker_async` defines all
//! twenty-seven (the sockets' dozens of functions among them) for a component that may import half of them, and a
//! one-shot `hcpx exec` paid for every definition, about a fifth of its instructions (docs/perf-log.md, #39).
//!
//! The same host functions as `wasmtime_wasi::p2::add_to_linker_async`, from its list of interfaces (the test
//! checks each against it). An interface not in the list is not linked, and `instantiate_pre` refuses a component
//! that imports it, as it refuses any import it does not know.

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::cli::{WasiCli, WasiCliView};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::{self as p2, cli, clocks, filesystem, random, sockets};
use wasmtime_wasi::random::{WasiRandom, WasiRandomView};
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView};
use wasmtime_wasi::WasiView;

/// wasi:io's host state: the call's resource table.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Defines in `l` the async WASI 0.2 host of each interface in `imports` (import names, with their versions);
/// other names are left to the caller. Returns how many interfaces it defined.
pub(super) fn add_imported<T: WasiView>(l: &mut Linker<T>, imports: &[String]) -> wasmtime::Result<usize> {
    let options = p2::LinkOptions::default();
    let mut linked: Vec<&str> = Vec::new();
    for name in imports {
        let bare = name.split('@').next().unwrap_or(name);
        // A component may import one interface at two 0.2 versions (parts built against different WASI); one
        // definition serves both, as wasmtime matches 0.2.x imports to it, and a second would be a duplicate.
        if linked.contains(&bare) {
            continue;
        }
        match bare {
            "wasi:io/error" => p2::io::error::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?,
            "wasi:io/poll" => p2::io::poll::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?,
            "wasi:io/streams" => p2::io::streams::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)?,
            "wasi:clocks/wall-clock" => clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?,
            "wasi:clocks/monotonic-clock" => {
                clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)?
            }
            "wasi:filesystem/preopens" => {
                filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?
            }
            "wasi:filesystem/types" => {
                filesystem::types::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)?
            }
            "wasi:random/random" => random::random::add_to_linker::<T, WasiRandom>(l, T::random)?,
            "wasi:random/insecure" => random::insecure::add_to_linker::<T, WasiRandom>(l, T::random)?,
            "wasi:random/insecure-seed" => {
                random::insecure_seed::add_to_linker::<T, WasiRandom>(l, T::random)?
            }
            "wasi:cli/exit" => cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/environment" => cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/stdin" => cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/stdout" => cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/stderr" => cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/terminal-input" => cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/terminal-output" => cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/terminal-stdin" => cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/terminal-stdout" => cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:cli/terminal-stderr" => cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)?,
            "wasi:sockets/tcp-create-socket" => {
                sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?
            }
            "wasi:sockets/instance-network" => {
                sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets)?
            }
            "wasi:sockets/network" => {
                sockets::network::add_to_linker::<T, WasiSockets>(l, &(&options).into(), T::sockets)?
            }
            "wasi:sockets/ip-name-lookup" => {
                sockets::ip_name_lookup::add_to_linker::<T, WasiSockets>(l, T::sockets)?
            }
            "wasi:sockets/tcp" => sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)?,
            "wasi:sockets/udp" => sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)?,
            "wasi:sockets/udp-create-socket" => {
                sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)?
            }
            // Not WASI 0.2's (wasi:http, the hcp:adapter host), or not one wasmtime-wasi defines.
            _ => continue,
        }
        linked.push(bare);
    }
    Ok(linked.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::composite::host::CallState;
    use wasmtime::Engine;

    /// The interfaces of WASI 0.2 that `add_to_linker_async` defines (wasmtime-wasi 48), without their version.
    const INTERFACES: [&str; 27] = [
        "wasi:io/error",
        "wasi:io/poll",
        "wasi:io/streams",
        "wasi:clocks/wall-clock",
        "wasi:clocks/monotonic-clock",
        "wasi:filesystem/preopens",
        "wasi:filesystem/types",
        "wasi:random/random",
        "wasi:random/insecure",
        "wasi:random/insecure-seed",
        "wasi:cli/exit",
        "wasi:cli/environment",
        "wasi:cli/stdin",
        "wasi:cli/stdout",
        "wasi:cli/stderr",
        "wasi:cli/terminal-input",
        "wasi:cli/terminal-output",
        "wasi:cli/terminal-stdin",
        "wasi:cli/terminal-stdout",
        "wasi:cli/terminal-stderr",
        "wasi:sockets/tcp-create-socket",
        "wasi:sockets/instance-network",
        "wasi:sockets/network",
        "wasi:sockets/ip-name-lookup",
        "wasi:sockets/tcp",
        "wasi:sockets/udp",
        "wasi:sockets/udp-create-socket",
    ];

    /// Each interface of the table is one of wasmtime-wasi's own (linking it beside `add_to_linker_async`
    /// defines its functions twice), linked alone whatever 0.2 version the component names, once when it names
    /// two, and nothing else is linked here.
    #[test]
    fn each_interface_is_wasmtime_wasis_own_and_linked_alone() -> wasmtime::Result<()> {
        let engine = Engine::default();
        for name in INTERFACES {
            let mut all: Linker<CallState> = Linker::new(&engine);
            wasmtime_wasi::p2::add_to_linker_async(&mut all)?;
            let again = add_imported(&mut all, &[format!("{name}@0.2.0")]);
            assert!(again.is_err(), "{name} is not one wasmtime-wasi links");
            let mut one: Linker<CallState> = Linker::new(&engine);
            assert_eq!(add_imported(&mut one, &[format!("{name}@0.2.3")])?, 1, "{name}");
        }
        let twice =
            ["wasi:cli/stdin@0.2.0", "wasi:cli/stdin@0.2.6", "wasi:io/streams@0.2.3"].map(String::from);
        assert_eq!(add_imported(&mut Linker::<CallState>::new(&engine), &twice)?, 2);
        let others = ["wasi:http/types@0.2.0", "wasi:http/outgoing-handler@0.2.0", "hcp:adapter/host@0.1.0"];
        let mut none: Linker<CallState> = Linker::new(&engine);
        assert_eq!(add_imported(&mut none, &others.map(String::from))?, 0);
        Ok(())
    }
}
