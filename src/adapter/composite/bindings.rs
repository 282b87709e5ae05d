//! The host bindings of the `hcp:adapter` WIT world, generated and nothing else.

wasmtime::component::bindgen!({
    world: "composite",
    path: "wit",
});
