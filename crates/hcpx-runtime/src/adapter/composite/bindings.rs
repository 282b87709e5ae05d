//! The host bindings of the `hcp:adapter` WIT world, generated and nothing else.

wasmtime::component::bindgen!({
    world: "composite",
    path: "../../wit/0.1.0",
    // Exports are called async, so a call blocked in a WASI host call can be dropped at its deadline.
    exports: { default: async },
});
