//! Links the `hcpx` binary for a fast start on x86-64 Linux (glibc); the library and the tests are unaffected.
//! - Not a PIE: a PIE of this size spends ~1.5 ms of every start applying ~48,000 relative relocations
//!   (measured with LD_DEBUG=statistics), most of a trivial `hcpx exec`'s overhead.
//! - The unwinder linked in from GCC's `libgcc_eh.a` (as `gcc -static-libgcc` does) instead of loading
//!   `libgcc_s.so.1`: one shared library fewer to map and bind, and no run of its constructor, whose CPUID
//!   instructions each trap to the hypervisor in a VM (about 0.1 ms of every start on the project machine,
//!   docs/perf-log.md, #25). Backtraces and wasmtime's registration of compiled code's unwind tables use it
//!   alike.
//! - The functions a one-shot call runs placed side by side (`link/hcpx.order`, written by
//!   scripts/link-order.sh), so a call faults in fewer windows of code: with rustc's own lld only (the default
//!   linker of x86_64-unknown-linux-gnu since Rust 1.90), as other linkers do not take the option.

use std::path::Path;

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("x86_64") && target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bin=hcpx=-no-pie");
        println!("cargo:rustc-link-arg-bin=hcpx=-Wl,--push-state,--whole-archive,-lgcc_eh,--pop-state");
        let order =
            Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("link/hcpx.order");
        if target == "x86_64-unknown-linux-gnu" && rustc_links_with_its_lld() && order.is_file() {
            // One argument each through -Xlinker, so no comma in the path can split it. Names the binary does not
            // have (a file older than the toolchain or a dependency) are skipped, silently.
            for arg in
                [format!("--symbol-ordering-file={}", order.display()), "--no-warn-symbol-ordering".into()]
            {
                println!("cargo:rustc-link-arg-bin=hcpx=-Xlinker");
                println!("cargo:rustc-link-arg-bin=hcpx={arg}");
            }
        }
        println!("cargo:rerun-if-changed=link/hcpx.order");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
}

/// Whether rustc links with its own lld: no linker configured for this build (cargo's `RUSTC_LINKER`, or a
/// linker flag in the rustflags) and a rustc of 1.90 or later.
fn rustc_links_with_its_lld() -> bool {
    if std::env::var_os("RUSTC_LINKER").is_some() {
        return false;
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["linker", "link-self-contained", "fuse-ld"].iter().any(|f| flags.contains(f)) {
        return false;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("-vV").output() else { return false };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(release) = text.lines().find_map(|l| l.strip_prefix("release: ")) else { return false };
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (1, 90)
}
