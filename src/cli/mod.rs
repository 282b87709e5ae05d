//! The `hcpx` command line: one module per subcommand, each running it over the library; the clap types are
//! hcpx-cli's.

pub mod approve;
pub mod audit;
pub mod auth;
pub mod check;
pub mod compile;
pub mod completions;
pub mod config;
pub mod confirm;
pub mod connect;
pub mod credential;
pub mod doctor;
pub mod eval;
pub mod exec;
pub mod grant;
pub mod info;
pub mod key;
pub mod lint;
pub mod lock;
pub mod manage;
pub mod mcp;
pub mod new;
pub mod principal;
pub mod publish;
pub mod pull;
pub mod sense;
pub mod store;
pub mod tasks;
pub mod trust;
pub mod update;
pub mod usage;
pub mod wrap;

pub use hcpx_cli::*;

use hcpx_store::Store;

/// Opens the store at `$HCP_HOME` (or `~/.hcp`) for a command that makes one call and exits: its read cache
/// never watches the store, whose teardown at exit would hold the process's end (`Store::one_shot`).
pub fn open_store() -> anyhow::Result<Store> {
    Ok(Store::open_default()?.one_shot())
}

/// Opens the store as [`open_store`] does, for a command that only reads it (`hcpx doctor`): a database is never
/// migrated by it.
pub fn open_store_to_read() -> anyhow::Result<Store> {
    Ok(Store::open_default_to_read()?.one_shot())
}

/// Opens the store for a command that keeps running (`hcpx sense watch --follow` reads it at every poll): its
/// read cache watches the store once a file is read twice.
pub fn open_store_watched() -> anyhow::Result<Store> {
    Ok(Store::open_default()?)
}

/// How a command's message names the store it wrote: the database with its password masked
/// (`postgres://hcpx@db:5432/hcpx`), or `HCP_HOME PATH` for the files.
pub fn store_named(store: &Store) -> String {
    match store.db() {
        Some(_) => store.shown(),
        None => format!("HCP_HOME {}", store.home().display()),
    }
}
