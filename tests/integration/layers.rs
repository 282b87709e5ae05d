//! The house: every crate of the workspace depends only on the crates below it, and every module still in the
//! `hcpx` package imports only the layers below it (docs/architecture.md). A dependency or a `use` that points
//! up, or a new module that is not placed in a layer, fails here. The crates below are held by the compiler
//! itself; this test goes as the last layers become crates (#35).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::helpers::rust_files;

/// The workspace's library crates, bottom first: each may depend only on crates earlier in this list.
const CRATES: &[&str] =
    &["hcpx-model", "hcpx-pack", "hcpx-store", "hcpx-registry", "hcpx-sandbox", "hcpx-runtime"];

/// What each crate gives the `hcpx` package under the names its modules use (`src/lib.rs` re-exports them).
const FROM_CRATES: &[&str] = &[
    "model",
    "args",
    "lint",
    "pack",
    "render",
    "template",
    "title",
    "store",
    "distribution",
    "sandbox",
    "adapter",
    "runtime",
];

/// The library's modules still in the `hcpx` package, bottom first (above every crate): each may import only
/// the crates and the modules earlier in this list. lib.rs declares them in this order.
const LAYERS: &[&str] = &["schema", "fixture", "trial", "eval", "check", "scaffold", "mcp", "serve"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The code of a file without its comments (doc links may name any module).
fn code(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names through `crate::`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        // `$crate::` in a macro is the crate itself, named from anywhere.
        if i > 0 && code.as_bytes()[i - 1] == b'$' {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        out.insert(name);
    }
    out
}

/// `(file, top module)` for every file of the library (the binaries: `main.rs`, `cli/`, `output.rs` and `bin/` are
/// the faces, above every layer).
fn library_files() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(src()).unwrap().to_path_buf();
            let first =
                rel.components().next()?.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string();
            (!matches!(first.as_str(), "main" | "cli" | "output" | "lib" | "bin")).then_some((p, first))
        })
        .collect()
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let mut upward = Vec::new();
    for (path, module) in library_files() {
        let rank = LAYERS.iter().position(|l| *l == module);
        let Some(rank) = rank else {
            upward.push(format!(
                "{}: module `{module}` is in no layer; add it to LAYERS and lib.rs",
                path.display()
            ));
            continue;
        };
        // super::super:: would reach past the module's root; imports go through crate::.
        if code(&path).contains("super::super::") {
            upward.push(format!("{}: uses super::super::; name the module through crate::", path.display()));
        }
        for target in imports(&code(&path)).into_iter().filter(|t| !FROM_CRATES.contains(&t.as_str())) {
            match LAYERS.iter().position(|l| *l == target) {
                Some(t) if t <= rank => {}
                Some(_) => upward
                    .push(format!("{}: `{module}` imports `{target}`, a layer above it", path.display())),
                None => {
                    upward.push(format!("{}: imports crate::{target}, which is in no layer", path.display()))
                }
            }
        }
    }
    assert!(upward.is_empty(), "imports that point up:\n{}", upward.join("\n"));
}

/// The hcpx crates a crate's Cargo.toml depends on (any table: dependencies, dev- and build-dependencies).
fn hcpx_dependencies(manifest: &Path) -> Vec<String> {
    fs::read_to_string(manifest)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().split(['.', ' ', '=']).next().map(str::to_string))
        .filter(|name| name.starts_with("hcpx-") && CRATES.contains(&name.as_str()))
        .collect()
}

#[test]
fn every_crate_depends_only_on_the_crates_below_it() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut found: Vec<String> = fs::read_dir(&crates)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    found.sort();
    let mut listed: Vec<String> = CRATES.iter().map(|c| c.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "every crate under crates/ is placed in CRATES, bottom first");
    for (rank, name) in CRATES.iter().enumerate() {
        let manifest = crates.join(name).join("Cargo.toml");
        for dep in hcpx_dependencies(&manifest) {
            let at = CRATES.iter().position(|c| *c == dep).unwrap();
            assert!(at < rank, "{name} depends on {dep}, which is not below it");
        }
        let lib = fs::read_to_string(crates.join(name).join("src/lib.rs")).unwrap();
        assert!(lib.starts_with(&format!("//! {name}: ")), "{name}'s lib.rs opens with what it is");
        // The sandbox makes the kernel's confinement calls and the runtime maps compiled components (one
        // function, allowed where it stands); every other crate forbids unsafe code.
        match *name {
            "hcpx-sandbox" => {}
            "hcpx-runtime" => assert!(lib.contains("#![deny(unsafe_code)]"), "{name} denies unsafe code"),
            _ => assert!(lib.contains("#![forbid(unsafe_code)]"), "{name} forbids unsafe code"),
        }
    }
}

#[test]
fn lib_rs_declares_the_layers_in_order() {
    let lib = code(&src().join("lib.rs"));
    let declared: Vec<&str> =
        lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';')).collect();
    assert_eq!(declared, LAYERS, "lib.rs must declare exactly the layers, bottom first");
}

#[test]
fn the_checker_sees_an_upward_import() {
    // The detector itself: a pack-layer line naming the runtime is caught, a `$crate` in a macro is not.
    let found = imports("use crate::runtime::Runtime;\nlet x = $crate::model::Code::Denied;");
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["runtime"]);
}
