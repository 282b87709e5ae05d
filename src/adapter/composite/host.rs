//! The host side of `hcp:adapter/host`: logging and credential handles, and the per-call state a Store holds.

use wasmtime::component::ResourceTable;
use wasmtime::StoreLimits;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::hcp::adapter::host::{Host, Level};
use super::bindings::hcp::adapter::types;

/// Most log text one call may produce.
pub const MAX_LOG_BYTES: usize = 64 * 1024;

/// Everything one call's Store owns.
pub struct CallState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limits: StoreLimits,
    /// Credential values by handle; the guest sees only handles.
    pub credentials: Vec<String>,
    /// What the guest logged, one line per call of `log`.
    pub log: String,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl Host for CallState {
    fn log(&mut self, level: Level, message: String) {
        if self.log.len() >= MAX_LOG_BYTES {
            return;
        }
        let name = match level {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        };
        let mut line: String = message.chars().take(4096).collect();
        line = line.replace('\n', " ");
        self.log.push_str(&format!("{name}: {line}\n"));
    }

    fn credential(&mut self, handle: u32) -> Option<String> {
        self.credentials.get(handle as usize).cloned()
    }
}

impl types::Host for CallState {}
