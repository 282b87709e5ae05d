//! The fuzz targets' bodies, one plain function each (docs/fuzz.md). The cargo-fuzz targets in
//! fuzz/fuzz_targets/ call them under libFuzzer on nightly; tests/integration/fuzz_smoke.rs includes this
//! same file on stable and replays fuzz/corpus/<target>/ plus a few thousand seeded random inputs, so CI runs
//! every target without a fuzzer. Each function must accept any bytes: a panic is a finding, whether it comes
//! from hcpx or from one of the invariants asserted here.

#![allow(dead_code)]

use std::cell::RefCell;
use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use hcpx_pack::args::ArgSpec;
use hcpx_pack::pack::Skill;
use hcpx_pack::render::{render_argv, render_tokens};
use hcpx_pack::template::{Piece, Template};
use hcpx_pack::Pack;
use serde_json::{Map, Value};

/// The files `pack_load` writes, in the order its input gives them, separated by NUL bytes.
pub const PACK_FILES: [&str; 4] = ["surface.json", "policy.json", "HARNESS.md", "hcp.eval.json"];

/// Executables and files a pack may point at, made once in every scratch pack directory so that the seeds
/// taken from packs/ and tests/fixtures load cleanly and the fuzzer reaches what comes after the path checks.
const PACK_EXTRAS: [(&str, bool); 5] = [
    ("bin/ledger.mjs", true),
    ("bin/transit.mjs", true),
    ("bin/notes", true),
    ("bin/tool", true),
    ("adapter.wasm", false),
];

thread_local! {
    /// One scratch pack directory per thread, rewritten for every input (a directory per input would make
    /// the fuzzer measure mkdir). Removed when the thread ends.
    static PACK_DIR: RefCell<Option<tempfile::TempDir>> = const { RefCell::new(None) };
}

fn scratch_pack_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("hcpx-fuzz-pack").tempdir().expect("scratch dir");
    for (rel, exec) in PACK_EXTRAS {
        let path = dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir");
        }
        fs::write(&path, "#!/bin/sh\nexit 0\n").expect("write");
        if exec {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
    dir
}

/// Splits a `pack_load` input into its files: `surface \0 policy \0 HARNESS \0 evals`; a file the input
/// does not reach is absent.
pub fn split_pack_input(data: &[u8]) -> Vec<&[u8]> {
    data.splitn(PACK_FILES.len(), |b| *b == 0).collect()
}

/// Joins pack files into one `pack_load` input (for the seed corpus).
pub fn join_pack_input(files: &[&[u8]]) -> Vec<u8> {
    files.join(&0u8)
}

/// Target `pack_load`: manifest, policy, skill and evals bytes written to a pack directory and loaded with
/// `Pack::load`. A pack that loads is then used as the runtime would: every command's example arguments are
/// checked, parsed back from words, rendered to argv, titled and previewed.
pub fn pack_load(data: &[u8]) {
    PACK_DIR.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dir = slot.get_or_insert_with(scratch_pack_dir);
        let parts = split_pack_input(data);
        for (i, name) in PACK_FILES.iter().enumerate() {
            let path = dir.path().join(name);
            match parts.get(i) {
                Some(body) => fs::write(&path, body).expect("write pack file"),
                None => match fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => panic!("remove {name}: {e}"),
                },
            }
        }
        load_and_use(dir.path());
    });
}

fn load_and_use(dir: &Path) {
    let report = hcpx_pack::lint::lint_dir(dir);
    let pack = Pack::load(dir);
    assert_eq!(report.ok, pack.is_ok(), "lint and load disagree: {:?}", report.issues);
    let Ok(pack) = pack else { return };
    for (key, cmd) in &pack.commands {
        let mut args = Map::new();
        for (name, prop) in cmd.args.props() {
            if let Some(example) = &prop.example {
                args.insert(name.clone(), example.clone());
            }
        }
        let _ = hcpx_pack::command_title(&pack, key, &args, None);
        let _ = hcpx_pack::command_title(&pack, key, &args, Some(&Value::Null));
        if let Some(preview) = &cmd.preview {
            let _ = preview.render(&args);
        }
        if let Ok(checked) = cmd.args.check(key, &args) {
            if let Some(wrap) = &pack.wrap {
                if let Ok(argv) = render_argv(wrap, cmd, &checked.values) {
                    assert!(argv.iter().all(|t| !t.contains('\0')), "NUL in argv {argv:?}");
                }
            }
        }
        let words: Vec<String> = args
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}:={other}"),
            })
            .collect();
        if let Ok(parsed) = cmd.args.parse_words(key, &words) {
            assert_eq!(parsed, args, "example args do not survive k=v words");
        }
    }
}

/// Target `schema_compile`: arbitrary JSON as a command's `args` schema, compiled with `ArgSpec::compile`;
/// a schema that compiles then checks its own examples and parses a few words.
pub fn schema_compile(data: &[u8]) {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else { return };
    let Ok(spec) = ArgSpec::compile(Some(&schema)) else { return };
    let target = "fuzz.schema";
    let _ = spec.check(target, &Map::new());
    let mut args = Map::new();
    for (name, prop) in spec.props() {
        if let Some(example) = &prop.example {
            args.insert(name.clone(), example.clone());
        }
    }
    let _ = spec.check(target, &args);
    for name in spec.props().keys() {
        for raw in ["1", "-1.5", "1e999", "true", "null", "x", ""] {
            if let Ok(parsed) = spec.parse_words(target, &[format!("{name}={raw}")]) {
                let _ = spec.check(target, &parsed);
            }
        }
    }
    let _ = spec.parse_words(target, &["bare".to_string(), "-1".to_string()]);
}

/// Target `template`: arbitrary text parsed as a `{{placeholder}}` template. A template that parses must
/// fill to exactly its pieces in order, ask for each placeholder once, take no placeholder from a value, and
/// render as one argv token without a NUL byte.
pub fn template(data: &[u8]) {
    let source = String::from_utf8_lossy(data);
    let Ok(t) = Template::parse(&source) else { return };
    assert_eq!(t.source(), source);
    for piece in t.pieces() {
        match piece {
            Piece::Lit(s) => {
                assert!(!s.is_empty(), "empty literal piece in {source:?}");
                assert!(!s.contains("{{"), "literal {s:?} still holds a placeholder opening");
            }
            Piece::Var(v) => assert!(!v.is_empty() && v.trim() == v, "bad var {v:?}"),
        }
    }
    // Values that look like placeholders are copied, never expanded.
    let mut asked = Vec::new();
    let filled = t.fill(|v| {
        asked.push(v.to_string());
        Some(format!("{{{{{v}}}}}"))
    });
    assert_eq!(asked, t.vars().collect::<Vec<_>>());
    let expected: String = t
        .pieces()
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => s.clone(),
            Piece::Var(v) => format!("{{{{{v}}}}}"),
        })
        .collect();
    assert_eq!(filled.as_deref(), Some(expected.as_str()));
    assert_eq!(t.fill(|_| None).is_none(), !t.is_literal());
    // As one argv token, with each placeholder's value taken from the input itself.
    let mut args = Map::new();
    for (i, v) in t.vars().enumerate() {
        let value: String = source.chars().skip(i).take(8).collect();
        args.insert(v.to_string(), Value::String(value));
    }
    if let Ok(argv) = render_tokens(
        std::slice::from_ref(&t),
        &args,
        Some("verb"),
        &hcpx_pack::render::Rules { numeric: &|_| false, required: &|_| false },
    ) {
        // A NUL the pack itself wrote in a literal token is passed on (the spawn refuses it); one from a
        // value never is.
        let pack_nul = t.pieces().iter().any(|p| matches!(p, Piece::Lit(s) if s.contains('\0')));
        assert!(pack_nul || argv.iter().all(|a| !a.contains('\0')), "NUL in argv {argv:?}");
        if matches!(t.pieces().first(), Some(Piece::Var(_))) {
            assert!(argv.iter().all(|a| !a.starts_with('-')), "value-led token became an option: {argv:?}");
        }
    }
}

/// Target `skill`: arbitrary text parsed as a pack's HARNESS.md.
pub fn skill(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let s = Skill::parse(&text);
    assert_eq!(s.text, text);
    assert_eq!(s.lead.trim(), s.lead);
    assert!(s.hot_path.iter().all(|n| !n.is_empty() && n.trim() == n), "hot path {:?}", s.hot_path);
    if s.lead_has_text() {
        assert!(!s.lead.is_empty());
    }
}

/// The schemas `words` parses against: the shipped packs' shapes and every type the word parser converts.
const WORD_SCHEMAS: [&str; 6] = [
    r#"{"type":"object"}"#,
    r#"{"type":"object","properties":{"ref":{"type":"string","x-position":0},"path":{"type":"string","x-position":1}},"required":["ref"]}"#,
    r#"{"type":"object","properties":{"n":{"type":"integer","x-position":0},"x":{"type":"number"},"b":{"type":"boolean"},"s":{"type":"string"}}}"#,
    r#"{"type":"object","properties":{"v":{"type":["number","null"],"x-position":0},"w":{"type":["integer","boolean"]},"o":{"type":["array","object"]}}}"#,
    r#"{"type":"object","properties":{"limit":{"type":"integer","minimum":1,"maximum":500},"fmt":{"type":"string","enum":["short","long"],"x-position":0},"confirm":{"type":"boolean"}},"required":["fmt"]}"#,
    r#"{"type":"object","properties":{"q":{"type":"string","pattern":"^[a-z0-9_]+$","x-position":0},"mode2":{"type":"string","minLength":2}}}"#,
];

fn word_specs() -> &'static [ArgSpec] {
    static SPECS: OnceLock<Vec<ArgSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        WORD_SCHEMAS
            .iter()
            .map(|s| {
                let schema: Value = serde_json::from_str(s).expect("schema JSON");
                ArgSpec::compile(Some(&schema)).expect("schema compiles")
            })
            .collect()
    })
}

/// Target `words`: the first byte picks a schema, the rest (split at NUL bytes) are command-line words for
/// `parse_words`. Whatever parses names only argument names, and a declared string given as `k=v` keeps its
/// text exactly.
pub fn words(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else { return };
    let specs = word_specs();
    let spec = &specs[usize::from(which) % specs.len()];
    let text = String::from_utf8_lossy(rest);
    let words: Vec<String> = text.split('\0').map(String::from).collect();
    let target = "fuzz.words";
    match spec.parse_words(target, &words) {
        Ok(args) => {
            assert!(args.len() <= words.len());
            assert!(args.keys().all(|k| hcpx_model::naming::is_arg_name(k)), "{args:?}");
            for w in &words {
                if let Some((k, v)) = w.split_once('=') {
                    let string_typed =
                        spec.props().get(k).is_some_and(|p| p.types.iter().any(|t| t == "string"));
                    if string_typed && !k.ends_with(':') {
                        assert_eq!(args.get(k), Some(&Value::String(v.to_string())), "word {w:?}");
                    }
                }
            }
            let _ = spec.check(target, &args);
        }
        Err(e) => assert!(!e.0.is_empty()),
    }
}
