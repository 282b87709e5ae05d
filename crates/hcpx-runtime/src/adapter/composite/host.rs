//! The host side of `hcp:adapter/host`: logging and credential handles, and the per-call state a Store holds.

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::hcp::adapter::host::{Host, Level};
use super::bindings::hcp::adapter::types;
use super::bindings::v0_2::hcp::adapter::host as host_v0_2;
use super::http::Outgoing;

/// Most log text one call may produce.
pub const MAX_LOG_BYTES: usize = 64 * 1024;

/// Everything one call's Store owns.
pub struct CallState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limits: CallLimits,
    /// Credential values by handle; the guest sees only handles.
    pub credentials: Vec<String>,
    /// What the guest logged, one line per call of `log`.
    pub log: String,
    /// wasi:http's resources of the call (fields, requests, bodies live in `table`).
    pub http: wasmtime_wasi_http::WasiHttpCtx,
    /// How the call's requests are decided, sent and reported (http.rs).
    pub outgoing: Outgoing,
}

impl CallState {
    /// A call's state: its WASI context, memory budget, credential values and send hook, with an empty table
    /// and log.
    pub fn new(wasi: WasiCtx, limits: CallLimits, credentials: Vec<String>, outgoing: Outgoing) -> CallState {
        CallState {
            wasi,
            table: ResourceTable::new(),
            limits,
            credentials,
            log: String::new(),
            http: wasmtime_wasi_http::WasiHttpCtx::new(),
            outgoing,
        }
    }
}

/// The limiter's refusal when a call would pass its memory cap; the adapter finds it in the error chain (by
/// type, not by its words) and reports the cap.
#[derive(Debug, thiserror::Error)]
#[error("hcpx memory cap reached: {asked} bytes asked, {allowed} allowed")]
pub struct MemoryCapReached {
    pub asked: usize,
    pub allowed: usize,
}

/// Most table elements a call may grow to.
pub const MAX_TABLE_ELEMENTS: usize = 100_000;

/// One call's memory budget, summed over every linear memory of every instance (not per memory).
#[derive(Debug, Clone)]
pub struct CallLimits {
    pub memory_cap: usize,
    used: usize,
}

impl CallLimits {
    /// A budget of `memory_cap` bytes.
    pub fn new(memory_cap: usize) -> CallLimits {
        CallLimits { memory_cap, used: 0 }
    }
}

impl wasmtime::ResourceLimiter for CallLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let next = self.used.saturating_sub(current).saturating_add(desired);
        if next > self.memory_cap {
            return Err(wasmtime::Error::new(MemoryCapReached { asked: next, allowed: self.memory_cap }));
        }
        self.used = next;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Err(wasmtime::Error::msg(format!(
                "table limit of {MAX_TABLE_ELEMENTS} elements reached"
            )));
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        64
    }

    fn tables(&self) -> usize {
        256
    }

    fn memories(&self) -> usize {
        64
    }
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

/// The 0.2.0 world's `host` is 0.1.0's.
impl host_v0_2::Host for CallState {
    fn log(&mut self, level: host_v0_2::Level, message: String) {
        let level = match level {
            host_v0_2::Level::Debug => Level::Debug,
            host_v0_2::Level::Info => Level::Info,
            host_v0_2::Level::Warn => Level::Warn,
            host_v0_2::Level::Error => Level::Error,
        };
        Host::log(self, level, message);
    }

    fn credential(&mut self, handle: u32) -> Option<String> {
        Host::credential(self, handle)
    }
}

impl wasmtime_wasi_http::WasiHttpView for CallState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outgoing,
        }
    }
}
