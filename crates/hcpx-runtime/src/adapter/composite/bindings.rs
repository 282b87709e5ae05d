//! The host bindings of the `hcp:adapter` WIT worlds, generated and nothing else: 0.1.0 (wit/0.1.0/) and 0.2.0
//! (wit/, which adds `wasi:http/outgoing-handler`). Both worlds export the same `exec` and `describe`, so one
//! set of export bindings (0.1.0's, type-checked against a component's exports when it is linked) calls either;
//! each version's `host` interface is linked under its own name.

/// `hcp:adapter@0.1.0`: its exports call every component, its `host` serves 0.1.0 components.
pub mod v0_1 {
    wasmtime::component::bindgen!({
        world: "composite",
        path: "../../wit/0.1.0",
        // Exports are called async, so a call blocked in a WASI host call can be dropped at its deadline.
        exports: { default: async },
    });
}

/// `hcp:adapter@0.2.0`'s `host`, for 0.2.0 components: a world of that one import over wit/ (its
/// `wasi:http/outgoing-handler` is wasmtime-wasi-http's, linked apart).
pub mod v0_2 {
    wasmtime::component::bindgen!({
        inline: "package hcpx:link; world host-v0-2 { import hcp:adapter/host@0.2.0; }",
        path: "../../wit",
        world: "host-v0-2",
    });
}

pub use v0_1::*;
