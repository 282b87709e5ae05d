//! `docs/format.md` and `schemas/` are generated from the loaders' serde types (a field added without docs
//! fails here); the example packs and every example on the page validate against them.

use serde_json::Value;
use std::fs;

use crate::docs::bless;
use crate::helpers::{hcpx, repo, rust_files, stdout_json, TestDir};
use hcpx_author::schema::{field_tables, formats, shipped_text};

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

/// The GitHub anchors of a Markdown file: its headings' slugs and its `<a id="…">` anchors.
fn anchors(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in md.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        if let Some(h) = line.strip_prefix('#') {
            let text = h.trim_start_matches('#').trim().to_lowercase();
            let slug: String = text
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect();
            out.push(slug);
        }
        for part in line.split("<a id=\"").skip(1) {
            out.push(part.split('"').next().unwrap_or("").to_string());
        }
    }
    out
}

/// Each `path.md` or `path.md#anchor` in `text`, with what precedes it.
fn md_references(text: &str) -> Vec<(String, Option<String>, String)> {
    let mut out = Vec::new();
    let word = |c: char| c.is_ascii_alphanumeric() || "_./-".contains(c);
    for (i, _) in text.match_indices(".md") {
        let before = &text[..i];
        let start = before.rfind(|c: char| !word(c)).map(|p| p + 1).unwrap_or(0);
        let after = &text[i + 3..];
        if after.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            continue; // `.mdx`, `.mdown`: not a reference
        }
        let anchor = after
            .strip_prefix('#')
            .map(|a| {
                a.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                    .collect::<String>()
            })
            .filter(|a| !a.is_empty());
        out.push((text[start..i + 3].to_string(), anchor, text[..start].to_string()));
    }
    out
}

/// The references of `text` checked: how many, and the ones that name no file or anchor of the repository.
fn reference_problems(where_: &str, text: &str) -> (usize, Vec<String>) {
    let (mut seen, mut bad) = (0, Vec::new());
    for (path, anchor, before) in md_references(text) {
        // A pack's own Skill, not a file of this repository.
        // Nor is a URI's path (`skill://PACK/SKILL.md`, the MCP resource of a pack's Skill), or any absolute path.
        if path == "HARNESS.md" || before.ends_with('[') || path.starts_with('/') {
            continue; // (or a link's text: its target is checked)
        }
        // A Markdown link in generated docs (`[lint.md](lint.md)`) is relative to docs/.
        let file = if before.ends_with("](") { repo().join("docs").join(&path) } else { repo().join(&path) };
        seen += 1;
        let Ok(md) = fs::read_to_string(&file) else {
            bad.push(format!("{where_}: {path} is not a file of the repository"));
            continue;
        };
        if let Some(a) = anchor {
            if !anchors(&md).contains(&a) {
                bad.push(format!("{where_}: {path}#{a}: no such heading or anchor"));
            }
        }
    }
    (seen, bad)
}

#[test]
fn the_reference_scan_refuses_spec_pages_and_missing_anchors() {
    let text = "see (command.md, Titles), docs/packs.md#nope and [lint.md](lint.md), docs/format.md#surface-binding, docs/packs.md#harnessmd, HARNESS.md";
    let (seen, bad) = reference_problems("t", text);
    assert_eq!(seen, 5);
    assert_eq!(
        bad,
        ["t: command.md is not a file of the repository", "t: docs/packs.md#nope: no such heading or anchor"]
    );
}

/// Every `*.md` a message, fix or rule text of the library names is a file of this repository (a spec page
/// that is not here helps no reader), and each `#anchor` is a heading or anchor of that file.
#[test]
fn every_md_file_a_message_names_exists_in_the_repo() {
    let mut texts: Vec<(String, String)> = Vec::new();
    for r in hcpx_author::check::RULES {
        for t in [r.what, r.why, r.fix] {
            texts.push((format!("rule {}", r.id), t.to_string()));
        }
    }
    let mut files = Vec::new();
    rust_files(&repo().join("src"), &mut files);
    rust_files(&repo().join("crates"), &mut files);
    for f in files {
        let code: String = fs::read_to_string(&f)
            .unwrap()
            .lines()
            // Comments, and the files the code embeds (`include_str!`, relative to the source file, checked by
            // the compiler).
            .filter(|l| !l.trim_start().starts_with("//") && !l.contains("include_str!("))
            .collect::<Vec<_>>()
            .join("\n");
        texts.push((f.strip_prefix(repo()).unwrap().display().to_string(), code));
    }
    let mut bad = Vec::new();
    let mut seen = 0;
    for (where_, text) in &texts {
        let (n, mut problems) = reference_problems(where_, text);
        seen += n;
        bad.append(&mut problems);
    }
    assert!(seen > 10, "the scan found the references ({seen})");
    assert!(bad.is_empty(), "point these at a doc of this repository:\n{}", bad.join("\n"));
}
