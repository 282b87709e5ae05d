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

/// The hcpx crates a manifest's `[dependencies]` names, in order.
fn hcpx_dependencies(manifest: &Path) -> Vec<String> {
    let text = fs::read_to_string(manifest).unwrap();
    let table = text.split("\n[dependencies]\n").nth(1).unwrap_or("");
    let table = table.split("\n[").next().unwrap_or("");
    table
        .lines()
        .filter_map(|l| l.split(['.', ' ', '=']).next())
        .filter(|name| name.starts_with("hcpx-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn docs_architecture_draws_the_crate_graph_cargo_builds() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = fs::read_to_string(repo.join("docs/architecture.md")).unwrap();
    let graph = doc.split("<!-- crate graph").nth(1).expect("docs/architecture.md draws the crate graph");
    let block = graph.split("```").nth(1).unwrap();
    // Each crate drawn, top down, with the hcpx crates its Cargo.toml names.
    let mut drawn: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines().filter(|l| l.contains("──▶")) {
        let (left, right) = line.split_once("──▶").unwrap();
        let name = left.split_whitespace().next().unwrap().to_string();
        let mut deps: Vec<String> = right.split_whitespace().map(str::to_string).collect();
        let manifest = if name == "hcpx" {
            repo.join("Cargo.toml")
        } else {
            repo.join("crates").join(&name).join("Cargo.toml")
        };
        let mut built = hcpx_dependencies(&manifest);
        deps.sort();
        built.sort();
        assert_eq!(
            deps, built,
            "{name}: docs/architecture.md draws other dependencies than its Cargo.toml names"
        );
        drawn.push((name, built));
    }
    for entry in fs::read_dir(repo.join("crates")).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        assert!(
            drawn.iter().any(|(n, _)| *n == name),
            "docs/architecture.md's crate graph leaves out {name}"
        );
    }
    // Drawn top down: a crate appears above every crate it depends on.
    for (at, (name, deps)) in drawn.iter().enumerate() {
        for dep in deps {
            let below = drawn.iter().position(|(d, _)| d == dep).unwrap();
            assert!(below > at, "{name} depends on {dep}, which the graph draws above it");
        }
    }
}
