//! Shared helpers: temp dirs, fixture packs, and running the real `hcpx` binary.

use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temp dir that lives as long as the test.
pub struct TestDir {
    pub dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> TestDir {
        TestDir { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the real `hcpx` binary with `HCP_HOME` inside `home`.
pub fn hcpx(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(args)
        .env("HCP_HOME", home.join("hcp-home"))
        .env_remove("NO_COLOR")
        .current_dir(home)
        .output()
        .expect("run hcpx")
}

/// Parses stdout as exactly one JSON document.
pub fn stdout_json(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{text}"))
}

/// A pack built from JSON values, written to disk on demand.
#[derive(Clone)]
pub struct Fixture {
    pub surface: Value,
    pub policy: Value,
    pub harness: String,
    pub evals: Option<Value>,
    /// Extra files: (relative path, contents, executable).
    pub files: Vec<(String, String, bool)>,
}

impl Fixture {
    /// A small clean wrap pack with a bin inside it, two reads, a gated write, a trigger and a preview.
    pub fn wrap() -> Fixture {
        Fixture {
            surface: json!({
                "id": "demo",
                "name": "Demo",
                "kind": "wrap",
                "cliBin": "demo",
                "binding": { "mode": "public" },
                "wrap": { "bin": "./bin/demo", "agent_env": { "DEMO_MODE": "agent" } },
                "verbs": {
                    "list": { "description": "List items.", "cli": ["demo", "list"] },
                    "show": {
                        "description": "Show one item.",
                        "cli": ["demo", "show", "{{id}}", "--format={{format}}"],
                        "args": {
                            "type": "object",
                            "properties": {
                                "id": { "type": "string", "description": "Item id", "examples": ["i-1"], "x-position": 0 },
                                "format": { "type": "string", "description": "Output detail", "enum": ["short", "long"] }
                            },
                            "required": ["id"]
                        },
                        "title": { "live": ["Showing {{id}}", "Showing an item"], "done": ["Showed {{id}}", "Showed an item"] }
                    },
                    "remove": {
                        "description": "Remove one item.",
                        "cli": ["demo", "remove", "{{id}}", "--confirm"],
                        "args": {
                            "type": "object",
                            "properties": { "id": { "type": "string", "description": "Item id", "examples": ["i-1"] } },
                            "required": ["id"]
                        },
                        "preview": { "kind": "removal", "title": "Remove {{id}}", "fields": { "id": "{{id}}" } }
                    }
                },
                "stimulusTriggers": [{ "ref": "item.changed" }]
            }),
            policy: json!({
                "surface_id": "demo",
                "verbs": {
                    "list": { "operation": "read" },
                    "show": { "operation": "read" },
                    "remove": { "operation": "write", "confirm": true }
                },
                "stimuli": { "item.changed": { "delivery": "announce" } }
            }),
            harness: "# Demo\n\nA demo pack for tests.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `list` | first |\n| `show` | one item |\n| `remove` | after a person agreed |\n".into(),
            evals: None,
            files: vec![("bin/demo".into(), "#!/bin/sh\necho '{\"ok\":true}'\n".into(), true)],
        }
    }

    /// A pack with the given manifest; its Policy gives every command a read row.
    pub fn with_surface(surface: Value) -> Fixture {
        let mut f = Fixture::wrap();
        let id = surface["id"].as_str().unwrap_or("demo").to_string();
        let rows: serde_json::Map<String, Value> = surface["verbs"]
            .as_object()
            .map(|v| v.keys().map(|k| (k.clone(), json!({ "operation": "read" }))).collect())
            .unwrap_or_default();
        f.policy = json!({ "surface_id": id, "verbs": rows });
        f.harness = "# Pack\n\nA pack for tests.\n".into();
        f.surface = surface;
        f
    }

    /// Writes the pack into `dir` and returns the pack directory.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let p = dir.join("pack");
        fs::create_dir_all(&p).expect("mkdir");
        fs::write(p.join("surface.json"), serde_json::to_string_pretty(&self.surface).expect("json")).expect("write");
        fs::write(p.join("policy.json"), serde_json::to_string_pretty(&self.policy).expect("json")).expect("write");
        fs::write(p.join("HARNESS.md"), &self.harness).expect("write");
        if let Some(e) = &self.evals {
            fs::write(p.join("hcp.eval.json"), serde_json::to_string_pretty(e).expect("json")).expect("write");
        }
        for (rel, body, exec) in &self.files {
            let f = p.join(rel);
            fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            fs::write(&f, body).expect("write");
            if *exec {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).expect("chmod");
            }
        }
        p
    }

    /// Writes and loads the pack through the library.
    pub fn load(&self, dir: &TestDir) -> hcpx::Pack {
        let p = self.write(dir.path());
        match hcpx::Pack::load(&p) {
            Ok(pack) => pack,
            Err(e) => panic!("fixture does not load: {e}"),
        }
    }
}

/// Sets a value at a JSON pointer, creating objects on the way.
pub fn set(v: &mut Value, ptr: &str, new: Value) {
    let mut cur = v;
    let segs: Vec<&str> = ptr.trim_start_matches('/').split('/').collect();
    for (i, s) in segs.iter().enumerate() {
        if i + 1 == segs.len() {
            match cur {
                Value::Object(m) => {
                    m.insert(s.to_string(), new);
                }
                Value::Array(a) => {
                    let idx: usize = s.parse().expect("index");
                    a[idx] = new;
                }
                _ => panic!("cannot set {ptr}"),
            }
            return;
        }
        cur = match cur {
            Value::Object(m) => m.entry(s.to_string()).or_insert_with(|| json!({})),
            Value::Array(a) => &mut a[s.parse::<usize>().expect("index")],
            _ => panic!("cannot walk {ptr}"),
        };
    }
}

/// Removes the value at a JSON pointer.
pub fn remove(v: &mut Value, ptr: &str) {
    let (parent, last) = ptr.rsplit_once('/').expect("pointer");
    let target = if parent.is_empty() { Some(v) } else { v.pointer_mut(parent) };
    if let Some(Value::Object(m)) = target {
        m.shift_remove(last);
    }
}
