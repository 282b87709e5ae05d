//! Links the `hcpx` binary for a fast start on x86-64 Linux (glibc); the library and the tests are unaffected.
//! - Not a PIE: a PIE of this size spends ~1.5 ms of every start applying ~48,000 relative relocations
//!   (measured with LD_DEBUG=statistics), most of a trivial `hcpx exec`'s overhead.
//! - The unwinder linked in from GCC's `libgcc_eh.a` (as `gcc -static-libgcc` does) instead of loading
//!   `libgcc_s.so.1`: one shared library fewer to map and bind, and no run of its constructor, whose CPUID
//!   instructions each trap to the hypervisor in a VM (about 0.1 ms of every start on the project machine,
//!   docs/perf.md, #25). Backtraces and wasmtime's registration of compiled code's unwind tables use it alike.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("x86_64") && target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bin=hcpx=-no-pie");
        println!("cargo:rustc-link-arg-bin=hcpx=-Wl,--push-state,--whole-archive,-lgcc_eh,--pop-state");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
