//! No input file can make the library panic: truncated, wrong-typed and huge inputs to the loader and renderer.

use serde_json::{json, Map, Value};
use std::fs;
use std::path::Path;

use crate::helpers::{hcpx, repo, stdout_json, Fixture, TestDir};
use hcpx_pack::lint::lint_dir;
use hcpx_pack::render::render_argv;

fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, c)| pointers(c, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")), out)),
        Value::Array(a) => a.iter().enumerate().for_each(|(i, c)| pointers(c, format!("{at}/{i}"), out)),
        _ => {}
    }
}

fn copy_pack(from: &Path, to: &Path) {
    fs::create_dir_all(to.join("bin")).unwrap();
    for f in ["surface.json", "policy.json", "HARNESS.md"] {
        fs::copy(from.join(f), to.join(f)).unwrap();
    }
    for e in fs::read_dir(from.join("bin")).unwrap() {
        let e = e.unwrap();
        fs::copy(e.path(), to.join("bin").join(e.file_name())).unwrap();
    }
}

#[test]
fn truncated_files_never_panic() {
    let t = TestDir::new();
    let dir = t.join("ledger");
    copy_pack(&repo().join("packs/ledger"), &dir);
    for file in ["surface.json", "policy.json", "HARNESS.md"] {
        let full = fs::read(dir.join(file)).unwrap();
        // A cut that leaves only trailing white space out is the whole file.
        let whole = full.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |p| p + 1);
        let cuts: Vec<usize> = (0..whole).filter(|i| *i < 64 || i % 13 == 0).collect();
        for cut in cuts {
            fs::write(dir.join(file), &full[..cut]).unwrap();
            let report = lint_dir(&dir);
            if file != "HARNESS.md" {
                assert!(!report.ok, "{file} cut at {cut} passed lint");
            }
        }
        fs::write(dir.join(file), &full).unwrap();
        assert!(lint_dir(&dir).ok);
    }
}

#[test]
fn wrong_typed_values_never_panic() {
    let replacements = [
        json!(null),
        json!(0),
        json!(-1),
        json!(1e308),
        json!(u64::MAX),
        json!(""),
        json!("{{"),
        json!("../../etc/passwd"),
        json!([]),
        json!({}),
        json!(true),
        json!(["{{x}}", 1, null]),
        Value::String("x".repeat(100_000)),
    ];
    let base = Fixture::wrap();
    for (which, doc) in [("surface", &base.surface), ("policy", &base.policy)] {
        let mut ptrs = Vec::new();
        pointers(doc, String::new(), &mut ptrs);
        for ptr in ptrs.iter().filter(|p| !p.is_empty()) {
            for r in &replacements {
                let t = TestDir::new();
                let mut f = base.clone();
                let target = if which == "surface" { &mut f.surface } else { &mut f.policy };
                *target.pointer_mut(ptr).unwrap() = r.clone();
                let dir = f.write(t.path());
                let report = lint_dir(&dir);
                if let Ok(pack) = hcpx_pack::Pack::load(&dir) {
                    assert!(report.ok);
                    render_every_command(&pack);
                }
            }
        }
    }
}

#[test]
fn huge_inputs_are_refused_or_handled() {
    let t = TestDir::new();
    // Over the size limit: refused without reading it all.
    let mut f = Fixture::wrap();
    f.harness = format!("# Demo\n\nlead\n{}", "x".repeat(5 * 1024 * 1024));
    let dir = f.write(t.path());
    let out = hcpx(t.path(), &["lint", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = stdout_json(&out);
    assert_eq!(report["issues"][0]["kind"], "file_unreadable", "{report}");

    // Nesting deeper than the parser allows is an error, not a stack overflow.
    let t = TestDir::new();
    let dir = Fixture::wrap().write(t.path());
    let deep = format!(
        "{{\"id\":\"demo\",\"verbs\":{{\"x\":{{\"args\":{}{}}}}}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    fs::write(dir.join("surface.json"), deep).unwrap();
    let report = lint_dir(&dir);
    assert!(!report.ok);

    // Thousands of commands and a long Skill load, lint, and render.
    let t = TestDir::new();
    let mut verbs = Map::new();
    let mut rows = Map::new();
    for i in 0..3000 {
        verbs.insert(
            format!("c{i}"),
            json!({ "description": "d.", "cli": ["demo", format!("c{i}"), "{{v}}"], "args": { "type": "object", "properties": { "v": { "type": "string", "maxLength": 10 } } } }),
        );
        rows.insert(format!("c{i}"), json!({ "operation": "read" }));
    }
    let mut f = Fixture::wrap();
    f.surface["verbs"] = Value::Object(verbs);
    f.policy["verbs"] = Value::Object(rows);
    f.harness = format!("# Demo\n\nlead\n\n{}", "| a | b |\n|---|---|\n| x | y |\n".repeat(20_000));
    let dir = f.write(t.path());
    let pack = hcpx_pack::Pack::load(&dir).unwrap();
    assert_eq!(pack.commands.len(), 3000);
    render_every_command(&pack);
}

fn render_every_command(pack: &hcpx_pack::Pack) {
    let hostile = [
        json!(null),
        json!("-rf"),
        json!("a\u{0}b"),
        json!("x".repeat(200_000)),
        json!(["--a", null, {"b": [1, 2]}]),
        json!({"deep": [[[[[[[[[[1]]]]]]]]]]}),
        json!(f64::MAX),
        json!("ünïcödé \u{202e} rtl"),
    ];
    for (key, cmd) in &pack.commands {
        let names: Vec<String> = cmd.args.props().keys().cloned().collect();
        for h in &hostile {
            let mut args = Map::new();
            for n in &names {
                args.insert(n.clone(), h.clone());
            }
            let _ = cmd.args.check(key, &args);
            if let Some(w) = &pack.wrap {
                let _ = render_argv(w, cmd, &args);
            }
            let _ = hcpx_pack::command_title(pack, key, &args, None);
            let _ = hcpx_pack::command_title(pack, key, &args, Some(h));
            if let Some(p) = &cmd.preview {
                let _ = p.render(&args);
            }
        }
    }
}
