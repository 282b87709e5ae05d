//! Links `composite-floor` as build.rs at the top links the `hcpx` binary (no PIE, the unwinder from
//! `libgcc_eh.a`), so the floor does not count against hcpx the start-up costs hcpx's own build already removes
//! (about 25,000 relative relocations of a PIE, and `libgcc_s.so.1`'s constructor). Not the link order: that
//! file lists hcpx's functions.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.starts_with("x86_64") && target.contains("linux-gnu") {
        println!("cargo:rustc-link-arg-bin=composite-floor=-no-pie");
        println!(
            "cargo:rustc-link-arg-bin=composite-floor=-Wl,--push-state,--whole-archive,-lgcc_eh,--pop-state"
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
}
