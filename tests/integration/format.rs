//! `docs/format.md` and `schemas/` are generated from the loaders' serde types (a field added without docs
//! fails here); the example packs and every example on the page validate against them.

use serde_json::Value;
use std::fs;

use crate::docs::bless;
use crate::helpers::{hcpx, repo, stdout_json, TestDir};
use hcpx::schema::{field_tables, formats, shipped_text};

const END: &str = "<!-- end of generated fields -->";

fn begin(file: &str) -> String {
    format!("<!-- generated fields of {file}: HCPX_BLESS=1 cargo test format -->")
}

/// `doc` with each file's generated block replaced by the tables of the loaders as they are now.
fn regenerate(doc: &str) -> String {
    let mut out = doc.to_string();
    for f in formats() {
        let tables = field_tables(&f).unwrap_or_else(|e| panic!("{e}"));
        let start = begin(f.file);
        let at = out.find(&start).unwrap_or_else(|| {
            panic!("docs/format.md has no block for {}: add the line {start:?} and {END:?}", f.file)
        }) + start.len();
        let end = at + out[at..].find(END).unwrap_or_else(|| panic!("the {} block has no {END:?}", f.file));
        out.replace_range(at..end, &format!("\n{}", tables));
    }
    out
}

#[test]
fn format_md_field_tables_are_generated_from_the_loaders() {
    let path = repo().join("docs/format.md");
    let have = fs::read_to_string(&path).unwrap();
    let want = regenerate(&have);
    bless(&path, &want);
    let have = fs::read_to_string(&path).unwrap();
    assert!(
        have == want,
        "docs/format.md is stale (a loader field was added, removed or changed): run `HCPX_BLESS=1 cargo test format` and read the diff"
    );
}

#[test]
fn shipped_schemas_are_generated_from_the_loaders() {
    let mut shipped = Vec::new();
    for f in formats() {
        let Some(rel) = f.shipped else { continue };
        shipped.push(rel.trim_start_matches("schemas/").to_string());
        let path = repo().join(rel);
        let want = shipped_text(&f);
        bless(&path, &want);
        let have = fs::read_to_string(&path).unwrap_or_default();
        assert!(have == want, "{rel} is stale: run `HCPX_BLESS=1 cargo test format` and read the diff");
    }
    let mut present: Vec<String> = fs::read_dir(repo().join("schemas"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    present.sort();
    shipped.sort();
    assert_eq!(present, shipped, "schemas/ holds exactly the generated schemas");
}

fn validate(schema: &Value, instance: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema).unwrap();
    let errors: Vec<String> =
        validator.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{what} does not match its schema: {errors:#?}");
}

#[test]
fn every_example_in_format_md_matches_its_schema() {
    let doc = fs::read_to_string(repo().join("docs/format.md")).unwrap();
    let mut seen = Vec::new();
    for section in doc.split("\n## ").skip(1) {
        let heading = section.lines().next().unwrap_or("");
        let Some(f) = formats().into_iter().find(|f| heading == format!("`{}`", f.file)) else { continue };
        let mut blocks = section.split("```json\n").skip(1).peekable();
        assert!(blocks.peek().is_some(), "docs/format.md: the {} section has no ```json example", f.file);
        for block in blocks {
            let text = block.split("```").next().unwrap();
            let value: Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("docs/format.md: a {} example is not JSON: {e}", f.file));
            validate(&f.schema, &value, &format!("a docs/format.md example of {}", f.file));
        }
        seen.push(f.file);
    }
    assert_eq!(seen.len(), formats().len(), "docs/format.md has a `## `file`` section per format: {seen:?}");
}

#[test]
fn example_packs_name_and_match_the_shipped_schemas() {
    let mut checked = 0;
    for pack in fs::read_dir(repo().join("packs")).unwrap() {
        let dir = pack.unwrap().path();
        for f in formats() {
            let Some(rel) = f.shipped else { continue };
            let path = dir.join(f.file);
            let Ok(text) = fs::read_to_string(&path) else { continue };
            let value: Value = serde_json::from_str(&text).unwrap();
            let committed: Value =
                serde_json::from_str(&fs::read_to_string(repo().join(rel)).unwrap()).unwrap();
            validate(&committed, &value, &path.display().to_string());
            let named = value["$schema"]
                .as_str()
                .unwrap_or_else(|| panic!("{} names no \"$schema\"", path.display()));
            assert!(
                dir.join(named).canonicalize().unwrap() == repo().join(rel).canonicalize().unwrap(),
                "{}: \"$schema\" {named:?} is not {rel}",
                path.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 3 * 7, "every example pack's three files are checked ({checked})");
}

#[test]
fn a_pack_naming_its_schemas_lints_checks_and_installs() {
    let home = TestDir::new();
    let pack = repo().join("packs/jq");
    let dir = pack.to_str().unwrap();
    let lint = hcpx(home.path(), &["lint", dir, "--json"]);
    assert_eq!(lint.status.code(), Some(0), "lint: {}", String::from_utf8_lossy(&lint.stdout));
    let check = stdout_json(&hcpx(home.path(), &["check", dir, "--no-eval", "--json"]));
    let text = check.to_string();
    assert!(!text.contains("\"L-") && !text.contains("$schema"), "check complains: {text}");
    let install = hcpx(home.path(), &["install", dir, "--json"]);
    assert_eq!(install.status.code(), Some(0), "install: {}", String::from_utf8_lossy(&install.stdout));
}
