//! The house (docs/architecture.md): the compiler holds the layers, since a crate can only use the crates its
//! Cargo.toml names and Cargo refuses a cycle. What it cannot hold is checked here: every library crate says
//! what it is, what it may use and what it must never do, and forbids `unsafe` code unless it is the sandbox.

use std::fs;
use std::path::Path;

/// The one library crate that holds `unsafe` code: the kernel's confinement calls (the binary crate, src/, is
/// the other).
const UNSAFE_CRATE: &str = "hcpx-sandbox";

#[test]
fn every_crate_says_what_it_is_may_use_and_must_never_do() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut seen = 0;
    for entry in fs::read_dir(&crates).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let lib = fs::read_to_string(entry.path().join("src/lib.rs")).unwrap();
        assert!(lib.starts_with(&format!("//! {name}: ")), "{name}'s lib.rs opens with what it is");
        let head: Vec<&str> = lib.lines().map_while(|l| l.strip_prefix("//!")).map(str::trim).collect();
        let head = head.join(" ");
        for part in ["May use:", "Must never:"] {
            assert!(head.contains(part), "{name}'s lib.rs says {part:?} in its opening lines");
        }
        let forbids = lib.contains("#![forbid(unsafe_code)]");
        assert_eq!(forbids, name != UNSAFE_CRATE, "{name}: only {UNSAFE_CRATE} may hold unsafe code");
        seen += 1;
    }
    assert!(seen >= 9, "the library crates are under crates/ ({seen} found)");
}
