//! `hcpx new`: the on-ramp for a pack author. A composite scaffold is a pack whose component is built from a guest
//! inside it (a Rust crate, a Python module or a JavaScript module), with the `hcp:adapter` WIT vendored and the
//! toolchain pinned so it builds anywhere; a wrap scaffold is `hcpx wrap`'s, with its template commands left as
//! writes for a person to classify.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

use super::{pretty, scaffold, write, ScaffoldError};
use crate::model::naming::is_pack_id;

/// The `hcp:adapter` world the runtime implements, written to the guest's `wit/`, with the WASI packages its
/// `wasi:http/outgoing-handler` import needs in `wit/deps/`.
pub const ADAPTER_WIT: &str = include_str!("../../../../wit/adapter.wit");
const WIT_DEPS: [(&str, &str); 3] = [
    ("guest/wit/deps/http.wit", include_str!("../../../../wit/deps/http.wit")),
    ("guest/wit/deps/io.wit", include_str!("../../../../wit/deps/io.wit")),
    ("guest/wit/deps/clocks.wit", include_str!("../../../../wit/deps/clocks.wit")),
];
/// The lock file of the repository's own guests: the scaffold's guest starts from the versions hcpx is tested
/// with (cargo drops the entries it does not need on the first build).
const GUEST_LOCK: &str = include_str!("../../../../guest-adapters/Cargo.lock");
const GUEST_CARGO: &str = include_str!("templates/guest-Cargo.toml");
const GUEST_LIB: &str = include_str!("templates/guest-lib.rs.tmpl");
const BUILD_SH: &str = include_str!("templates/build.sh");
const PROOF_SH: &str = include_str!("templates/proof.sh");
const HARNESS: &str = include_str!("templates/HARNESS.md");
/// The host the scaffold's `fetch` reaches, declared in its surface.json: IANA's domain for examples.
const FETCH_HOST: &str = "example.com";
const PY_APP: &str = include_str!("templates/python/app.py");
const PY_BUILD_SH: &str = include_str!("templates/python/build.sh");
/// The pinned Python toolchain (componentize-py), shared with the repository's Python guests.
pub const PY_REQUIREMENTS: &str = include_str!("templates/python/requirements.txt");
const JS_APP: &str = include_str!("templates/js/app.js");
const JS_BUILD_SH: &str = include_str!("templates/js/build.sh");
/// The pinned JavaScript toolchain (componentize-js), shared with the repository's JavaScript guests.
pub const JS_PACKAGE: &str = include_str!("templates/js/package.json");
/// The lock file of that toolchain: `npm ci` installs exactly these versions.
pub const JS_LOCK: &str = include_str!("templates/js/package-lock.json");

// The guest languages are check's (it reads them from a component); scaffolding writes them.
pub use crate::check::guest::GuestLang;

/// What `hcpx new` can scaffold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NewKind {
    /// A WASI component built from a Rust guest crate in the pack.
    Composite,
    /// A wrap of a CLI on PATH.
    Wrap,
}

/// Why a pack could not be scaffolded.
#[derive(Debug, thiserror::Error)]
pub enum NewError {
    #[error("{} already exists and is not empty; pass a new directory, or empty this one first", .0.display())]
    NotEmpty(PathBuf),
    #[error("{} exists and is not a directory; pass a new directory", .0.display())]
    NotDir(PathBuf),
    #[error(
        "{0:?} is not a pack id; pass --id with lower-case words joined by `-` or `_`, such as `greeter`"
    )]
    BadId(String),
    #[error("cannot name a pack after {}; pass --id, such as --id greeter", .0.display())]
    NoId(PathBuf),
    #[error("{0}")]
    Wrap(#[from] ScaffoldError),
    #[error("cannot write {}: {reason}", .path.display())]
    Io { path: PathBuf, reason: String },
}

/// What was written, and how to go on.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewPack {
    pub kind: NewKind,
    pub pack_id: String,
    pub dir: String,
    /// The files written, relative to `dir`.
    pub files: Vec<String>,
    /// The commands the pack declares.
    pub commands: Vec<String>,
    /// The language of the component's guest (composites).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lang: Option<GuestLang>,
    /// The command that builds the component (composites).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// The next commands to run, in order.
    pub next: Vec<String>,
}

/// The pack id named by `--id`, else made from the directory's name.
fn pack_id(dir: &Path, id: Option<&str>) -> Result<String, NewError> {
    if let Some(id) = id {
        return if is_pack_id(id) { Ok(id.to_string()) } else { Err(NewError::BadId(id.to_string())) };
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    let made: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let made = made.trim_matches('-').to_string();
    if is_pack_id(&made) {
        Ok(made)
    } else {
        Err(NewError::NoId(dir.to_path_buf()))
    }
}

/// `dir` is new, or an empty directory.
fn fresh(dir: &Path) -> Result<(), NewError> {
    match std::fs::metadata(dir) {
        Err(_) => Ok(()),
        Ok(m) if !m.is_dir() => Err(NewError::NotDir(dir.to_path_buf())),
        Ok(_) if std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none()) => Ok(()),
        Ok(_) => Err(NewError::NotEmpty(dir.to_path_buf())),
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> NewError + '_ {
    move |e| NewError::Io { path: path.to_path_buf(), reason: crate::model::io_reason(&e) }
}

/// The wit-bindgen version the repository's guests are locked to.
pub fn wit_bindgen_version() -> &'static str {
    GUEST_LOCK
        .split("[[package]]")
        .find(|p| p.contains("name = \"wit-bindgen\"\n"))
        .and_then(|p| p.split("version = \"").nth(1))
        .and_then(|v| v.split('"').next())
        .unwrap_or("0.61")
}

/// `Greeter` for `greeter`, `My Tool` for `my-tool`.
fn display_name(id: &str) -> String {
    id.split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn fill(template: &str, id: &str, name: &str) -> String {
    template.replace("{{id}}", id).replace("{{name}}", name).replace("{{wit_bindgen}}", wit_bindgen_version())
}

/// The shell word for `path`: quoted when it holds anything but plain characters.
fn shell_word(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+,:@".contains(c)) {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The surface: `greet`, `count`, and `fetch`, which reaches `FETCH_HOST` over HTTPS.
fn composite_surface(id: &str, name: &str) -> Value {
    let mut surface = json!({
        "id": id,
        "name": name,
        "kind": "composite",
        "transports": ["cli", "json_exec"],
        "binding": { "mode": "public", "hub": "public" },
        "component": { "path": "./adapter.wasm" },
        "verbs": {
            "greet": {
                "description": "Greets a person by name and returns the greeting as JSON; use it to say hello to someone.",
                "args": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "description": "The person's name, as it should appear in the greeting", "examples": ["Ada"], "x-position": 0 }
                    },
                    "required": ["name"]
                },
                "title": {
                    "live": ["Greeting {{name}}", "Greeting someone"],
                    "done": ["Greeted {{name}}", "Greeted someone"]
                }
            },
            "count": {
                "description": "Counts the characters and words of a phrase and returns both as JSON; use it to measure a text.",
                "args": {
                    "type": "object",
                    "properties": {
                        "phrase": { "type": "string", "description": "The text to measure; words are separated by whitespace", "examples": ["two words"], "x-position": 0 }
                    },
                    "required": ["phrase"]
                },
                "title": {
                    "live": ["Counting the words of a phrase"],
                    "done": ["Counted {{result.words}} words", "Counted the words of a phrase"]
                }
            }
        }
    });
    {
        surface["verbs"]["fetch"] = json!({
            "description": format!("Fetches a page of {FETCH_HOST} over HTTPS and returns its status and size as JSON; use it to check that the site answers."),
            "hosts": [FETCH_HOST],
            "args": {
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": format!("The page's path on {FETCH_HOST}, starting with /"), "examples": ["/"], "x-position": 0 }
                }
            },
            "title": {
                "live": [format!("Fetching {FETCH_HOST}{{{{path}}}}"), format!("Fetching a page of {FETCH_HOST}")],
                "done": [format!("Fetched {FETCH_HOST}{{{{path}}}}"), format!("Fetched a page of {FETCH_HOST}")]
            }
        });
    }
    surface
}

/// The commands of the scaffold in `lang`.
fn composite_commands() -> Vec<String> {
    let mut out = vec!["greet".to_string(), "count".to_string()];
    out.push("fetch".to_string());
    out
}

fn composite_policy(id: &str) -> Value {
    let verbs: serde_json::Map<String, Value> = composite_commands()
        .into_iter()
        .map(|c| (c, json!({ "operation": "read", "privacy": { "land": "public" } })))
        .collect();
    json!({ "surface_id": id, "verbs": verbs })
}

/// The cases: `greet` and `count`, and a refusal of `fetch` that sends no request (a case
/// that reached example.com would need the network, and the operator's allow).
fn composite_evals() -> Value {
    let mut evals = json!({
        "cases": [
            { "name": "greet says hello to the name given", "verb": "greet", "args": { "name": "Ada" },
              "expect": { "ok": true, "json": true, "contains": ["Hello, Ada!"], "max_ms": 3000, "max_tokens": 200 } },
            { "name": "greet refuses a blank name", "verb": "greet", "args": { "name": "  " },
              "expect": { "ok": false, "error": "name is blank" } },
            { "name": "count gives characters and words", "verb": "count", "args": { "phrase": "two words" },
              "expect": { "ok": true, "json": true, "contains": ["characters", "words"], "max_ms": 3000, "max_tokens": 200 } }
        ]
    });
    {
        if let Some(cases) = evals["cases"].as_array_mut() {
            cases.push(json!({ "name": "fetch refuses a path without a leading slash", "verb": "fetch",
                               "args": { "path": "index.html" }, "expect": { "ok": false, "error": "path must start with /" } }));
        }
    }
    evals
}

/// The guest's files for `lang`: the build script, the source, the pinned toolchain, and the WIT.
fn guest_files(lang: GuestLang, id: &str, name: &str) -> Vec<(&'static str, String, bool)> {
    let mut files = match lang {
        GuestLang::Rust => vec![
            ("build.sh", fill(BUILD_SH, id, name), true),
            ("guest/Cargo.toml", fill(GUEST_CARGO, id, name), false),
            ("guest/Cargo.lock", GUEST_LOCK.to_string(), false),
            ("guest/src/lib.rs", fill(GUEST_LIB, id, name), false),
        ],
        GuestLang::Python => vec![
            ("build.sh", fill(PY_BUILD_SH, id, name), true),
            ("guest/app.py", fill(PY_APP, id, name), false),
            ("guest/requirements.txt", PY_REQUIREMENTS.to_string(), false),
        ],
        GuestLang::Js => vec![
            ("build.sh", fill(JS_BUILD_SH, id, name), true),
            ("guest/app.js", fill(JS_APP, id, name), false),
            ("guest/package.json", JS_PACKAGE.to_string(), false),
            ("guest/package-lock.json", JS_LOCK.to_string(), false),
        ],
    };
    files.push(("guest/wit/adapter.wit", ADAPTER_WIT.to_string(), false));
    files.extend(WIT_DEPS.iter().map(|(path, text)| (*path, text.to_string(), false)));
    files
}

/// Writes a composite pack into `dir` (new or empty): the three files, evals, proof and build scripts, and the
/// guest in `lang` with its WIT and pinned toolchain. The component itself is built by `build.sh`.
pub fn new_composite(dir: &Path, id: Option<&str>, lang: GuestLang) -> Result<NewPack, NewError> {
    let id = pack_id(dir, id)?;
    fresh(dir)?;
    let name = display_name(&id);
    let mut files: Vec<(&str, String, bool)> = vec![
        ("surface.json", pretty(&composite_surface(&id, &name)), false),
        ("policy.json", pretty(&composite_policy(&id)), false),
        ("HARNESS.md", fill(HARNESS, &id, &name), false),
        ("hcp.eval.json", pretty(&composite_evals()), false),
        ("proof.sh", fill(PROOF_SH, &id, &name), true),
    ];
    files.extend(guest_files(lang, &id, &name));
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    for (rel, text, exe) in &files {
        write(dir, rel, text, *exe)?;
    }
    let d = shell_word(dir);
    Ok(NewPack {
        kind: NewKind::Composite,
        pack_id: id,
        dir: dir.display().to_string(),
        files: files.iter().map(|(rel, _, _)| rel.to_string()).collect(),
        commands: composite_commands(),
        lang: Some(lang),
        build: Some(format!("{d}/build.sh")),
        next: vec![format!("{d}/build.sh"), format!("hcpx check {d} --probe --strict")],
    })
}

/// Writes `hcpx wrap BIN`'s scaffold into `dir` (new or empty), under `id` when given. Its template commands are
/// confirm-gated writes until a person classifies them (`scaffold`), so no probe runs a guess.
pub fn new_wrap(dir: &Path, bin: &str, id: Option<&str>) -> Result<NewPack, NewError> {
    let id = id.map(|i| pack_id(dir, Some(i))).transpose()?;
    fresh(dir)?;
    let s = scaffold(bin, Some(dir), id.as_deref())?;
    let pack_id = s.pack_id;
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .collect();
    files.sort();
    let d = shell_word(dir);
    Ok(NewPack {
        kind: NewKind::Wrap,
        pack_id,
        dir: dir.display().to_string(),
        files,
        commands: s.commands,
        lang: None,
        build: None,
        next: vec![format!("hcpx check {d} --agent"), format!("hcpx check {d} --probe --strict")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_come_from_the_directory_or_from_id() {
        assert_eq!(pack_id(Path::new("/tmp/My Tool"), None).ok().as_deref(), Some("my-tool"));
        assert_eq!(pack_id(Path::new("x/greeter"), Some("hello")).ok().as_deref(), Some("hello"));
        assert!(matches!(pack_id(Path::new("x"), Some("Bad Id")), Err(NewError::BadId(_))));
        assert!(matches!(pack_id(Path::new("/"), None), Err(NewError::NoId(_))));
    }

    #[test]
    fn the_guest_uses_the_locked_wit_bindgen() {
        let v = wit_bindgen_version();
        assert!(v.starts_with("0.") && v.split('.').count() == 3, "{v}");
        assert_eq!(display_name("my-tool"), "My Tool");
    }
}
