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
    hcpx_with(home, args, &[], None)
}

/// A compile cache every test of this run (and later runs) may share through `HCP_CACHE_DIR`, so a component of
/// tens of MiB is compiled once, not once per test: `target/tmp/compile-cache-<uid>`, private to this user. `None`
/// when it cannot be made so (a test then compiles into its own home). Tests of the cache itself never use it.
pub fn shared_compile_cache() -> Option<&'static str> {
    static DIR: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        // SAFETY: geteuid has no failure mode.
        let uid = unsafe { libc::geteuid() };
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compile-cache-{uid}"));
        let _ = fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir);
        let m = fs::metadata(&dir).ok()?;
        (m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0).then(|| dir.to_str().map(String::from))?
    })
    .as_deref()
}

/// Not a timing assertion: a run that has not ended after this long is a hang (a regressed deadline, a
/// guest that waits for ever), and is killed so the test fails instead of holding CI until its limit.
const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(300);

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
        fs::write(p.join("surface.json"), serde_json::to_string_pretty(&self.surface).expect("json"))
            .expect("write");
        fs::write(p.join("policy.json"), serde_json::to_string_pretty(&self.policy).expect("json"))
            .expect("write");
        fs::write(p.join("HARNESS.md"), &self.harness).expect("write");
        if let Some(e) = &self.evals {
            fs::write(p.join("hcp.eval.json"), serde_json::to_string_pretty(e).expect("json"))
                .expect("write");
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
    pub fn load(&self, dir: &TestDir) -> hcpx_pack::Pack {
        let p = self.write(dir.path());
        match hcpx_pack::Pack::load(&p) {
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

/// Runs the real `hcpx` with extra environment and optional stdin.
pub fn hcpx_with(home: &Path, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(args).env("HCP_HOME", home.join("hcp-home")).env_remove("NO_COLOR").current_dir(home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn hcpx");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write stdin");
    }
    let pid = child.id() as libc::pid_t;
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let guard = std::thread::spawn(move || {
        if wait.recv_timeout(HANG_GUARD).is_err() {
            // SAFETY: kill(2) on the child we spawned, which has not been reaped (`done` was not sent).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            eprintln!("hcpx {pid} ran past the {HANG_GUARD:?} hang guard and was killed");
        }
    });
    let out = child.wait_with_output().expect("hcpx output");
    let _ = done.send(());
    let _ = guard.join();
    out
}

/// A store with one installed and activated pack, driven through the real binary.
pub struct Home {
    pub t: TestDir,
    /// Where the probe bin records its runs: in `marks/`, the one directory outside its own that `install`
    /// grants the pack in sandbox.json (a wrap is confined to its working directory and TMPDIR).
    pub marker: PathBuf,
    /// What every hcpx this Home runs gets in its environment besides `HCP_HOME`: the store it uses
    /// (`HCP_STORE`, `HCP_SEAL_KEY_FILE`) when it is not the files under `HCP_HOME`.
    pub store_env: Vec<(String, String)>,
}

impl Home {
    pub fn new() -> Home {
        let t = TestDir::new();
        let marks = t.join("marks");
        fs::create_dir_all(&marks).expect("mkdir marks");
        let marker = marks.join("marker");
        Home { t, marker, store_env: Vec::new() }
    }

    /// A Home whose hcpx runs compile components into the run's shared compile cache (`shared_compile_cache`).
    pub fn sharing_compiles() -> Home {
        let mut h = Home::new();
        if let Some(dir) = shared_compile_cache() {
            h.store_env.push(("HCP_CACHE_DIR".into(), dir.into()));
        }
        h
    }

    /// The compile cache this Home's runs use: the shared one, or the store's own.
    pub fn compile_cache(&self) -> PathBuf {
        match self.store_env.iter().find(|(k, _)| k == "HCP_CACHE_DIR") {
            Some((_, dir)) => PathBuf::from(dir),
            None => self.store().join("cache"),
        }
    }

    /// A Home whose hcpx runs keep their store in a fresh PostgreSQL database of the test cluster
    /// (tests/integration/pg.rs), credentials sealed with a new random 32-byte key in the temp dir. Check
    /// `crate::pg::unavailable()` first.
    pub fn postgres() -> Home {
        use std::io::Read;
        let mut h = Home::new();
        let url = crate::pg::fresh_database();
        let mut key = [0u8; 32];
        fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut key)).expect("random key");
        let key_file = h.t.join("seal.key");
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f =
                fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&key_file).expect("key");
            f.write_all(&key).expect("write key");
        }
        h.store_env = vec![
            ("HCP_STORE".into(), url),
            ("HCP_SEAL_KEY_FILE".into(), key_file.to_str().expect("utf8").into()),
        ];
        h
    }

    /// The store environment as `hcpx_with` takes it.
    pub fn store_env(&self) -> Vec<(&str, &str)> {
        self.store_env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    /// Runs hcpx with the store environment, then `env`, and optional stdin.
    pub fn run_with(&self, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
        let mut all = self.store_env();
        all.extend_from_slice(env);
        hcpx_with(self.t.path(), args, &all, stdin)
    }

    /// The directory of the marker, writable by installed packs.
    pub fn marks(&self) -> PathBuf {
        self.t.join("marks")
    }

    /// The store directory.
    pub fn store(&self) -> PathBuf {
        self.t.join("hcp-home")
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, &[], None)
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.run_with(args, env, None)
    }

    /// The audit log as `hcpx audit --json` reads it from whichever store this is: one compact JSON record per
    /// line, as the file store writes them.
    pub fn audit_log(&self) -> String {
        let out = self.run(&["audit", "--json"]);
        assert_eq!(out.status.code(), Some(0), "hcpx audit: {}", String::from_utf8_lossy(&out.stderr));
        let v = stdout_json(&out);
        v["records"].as_array().expect("records").iter().map(|r| format!("{r}\n")).collect()
    }

    /// `hcpx exec ID VERB --json -- words…` → (exit code, envelope).
    pub fn exec(&self, id: &str, verb: &str, words: &[&str]) -> (i32, Value) {
        self.exec_env(id, verb, words, &[])
    }

    pub fn exec_env(&self, id: &str, verb: &str, words: &[&str], env: &[(&str, &str)]) -> (i32, Value) {
        let mut args = vec!["exec", id, verb, "--json", "--"];
        args.extend_from_slice(words);
        let out = self.run_env(&args, env);
        (out.status.code().unwrap_or(-1), stdout_json(&out))
    }

    /// Installs and activates the fixture; panics when either fails.
    pub fn install(&self, f: &Fixture, name: &str) -> String {
        let src = self.t.join(&format!("src-{name}"));
        std::fs::create_dir_all(&src).expect("mkdir");
        let dir = f.write(&src);
        let out = self.run(&["install", dir.to_str().expect("utf8"), "--json"]);
        assert_eq!(out.status.code(), Some(0), "install: {}", String::from_utf8_lossy(&out.stdout));
        let id = f.surface["id"].as_str().expect("id").to_string();
        let out = self.run(&["activate", &id]);
        assert_eq!(out.status.code(), Some(0), "activate: {}", String::from_utf8_lossy(&out.stderr));
        let mut packs = serde_json::Map::new();
        packs.insert(id.clone(), json!({ "write": [self.marks()] }));
        self.write_store("sandbox.json", &json!({ "packs": packs }).to_string());
        id
    }

    /// Whether the probe bin ran (and how many times).
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(&self.marker).map(|s| s.lines().count()).unwrap_or(0)
    }

    /// Writes a file of the store. `sandbox.json` given as a JSON object is merged over the one there, field by
    /// field and pack by pack, so a test's limits keep the marker grants `install` wrote; anything else (and a
    /// body that is not an object) is written as it is.
    pub fn write_store(&self, rel: &str, body: &str) {
        std::fs::create_dir_all(self.store()).expect("mkdir");
        let path = self.store().join(rel);
        // A PostgreSQL store keeps its documents as rows (the paths the file store would use): read and written
        // there, the change announced as hcpx announces it.
        let db = self.store_env.iter().find(|(k, _)| k == "HCP_STORE").map(|(_, v)| v.clone());
        if db.is_some() {
            // The schema is there before any row is written (a fresh database has none until hcpx opens it).
            let out = self.run(&["store", "migrate"]);
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let read = |path: &Path| -> Option<String> {
            match &db {
                Some(url) => {
                    let sql = format!("SELECT body FROM hcpx_documents WHERE path = $hcpx${rel}$hcpx$");
                    Some(crate::pg::cluster().psql(crate::pg::database_of(url), &sql))
                        .filter(|s| !s.is_empty())
                }
                None => fs::read_to_string(path).ok(),
            }
        };
        let write = |path: &Path, text: &str| match &db {
            Some(url) => {
                let sql = format!(
                    "INSERT INTO hcpx_documents (path, body) VALUES ($hcpx${rel}$hcpx$, $hcpx${text}$hcpx$)
                     ON CONFLICT (path) DO UPDATE SET body = EXCLUDED.body, sealed = NULL, updated_at = now();
                     SELECT pg_notify('hcpx', 'doc')"
                );
                crate::pg::cluster().psql(crate::pg::database_of(url), &sql);
            }
            None => fs::write(path, text).expect("write"),
        };
        if rel == "sandbox.json" {
            let old: Option<Value> = read(&path).and_then(|s| serde_json::from_str(&s).ok());
            if let (Some(Value::Object(mut old)), Ok(Value::Object(new))) =
                (old, serde_json::from_str::<Value>(body))
            {
                for (k, v) in new {
                    match (k.as_str(), old.get_mut("packs"), &v) {
                        ("packs", Some(Value::Object(have)), Value::Object(more)) => {
                            for (id, g) in more {
                                have.insert(id.clone(), g.clone());
                            }
                        }
                        _ => {
                            old.insert(k, v);
                        }
                    }
                }
                write(&path, &Value::Object(old).to_string());
                return;
            }
        }
        write(&path, body);
    }
}

/// A wrap pack whose bin records each run in `marker` and prints its cwd, HOME, TMPDIR, env names and argv.
pub fn probe_fixture(marker: &Path) -> Fixture {
    let mut f = Fixture::wrap();
    f.surface["id"] = json!("probe");
    f.surface["cliBin"] = json!("probe");
    f.surface["wrap"] = json!({ "bin": "./bin/probe", "json_flag": [] });
    f.surface["verbs"] = json!({
        "look": { "description": "Show where it runs.", "cli": ["probe", "look"] },
        "echo": {
            "description": "Echo a word.",
            "cli": ["probe", "echo", "{{word}}"],
            "args": { "type": "object", "properties": { "word": { "type": "string", "description": "A word", "examples": ["hi"] } }, "required": ["word"] }
        },
        "put": { "description": "A gated write.", "cli": ["probe", "put"] }
    });
    f.surface.as_object_mut().expect("obj").remove("stimulusTriggers");
    f.policy = json!({
        "surface_id": "probe",
        "verbs": {
            "look": { "operation": "read" },
            "echo": { "operation": "read" },
            "put": { "operation": "write", "confirm": true }
        }
    });
    f.harness = "# Probe\n\nA probe pack for tests.\n".into();
    let script = format!(
        "#!/bin/sh\necho ran >> '{}'\nenvnames=$(env | cut -d= -f1 | grep -v '^PWD$' | sort | tr '\\n' ' ')\nprintf '{{\"cwd\":\"%s\",\"home\":\"%s\",\"tmp\":\"%s\",\"sandbox\":\"%s\",\"env\":\"%s\",\"argv\":\"%s\"}}\\n' \"$(pwd -P)\" \"$HOME\" \"$TMPDIR\" \"$HCP_SANDBOX\" \"$envnames\" \"$*\"\n",
        marker.display()
    );
    f.files = vec![("bin/probe".into(), script, true)];
    f
}

/// Copies a directory tree, keeping each file's mode.
pub fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every `.rs` file under `dir`, appended to `out`.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The `(kind, pointer)` of each issue of a lint report (`hcpx lint --json`), in order.
pub fn issue_pointers(report: &Value) -> Vec<(String, String)> {
    report["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["kind"].as_str().unwrap().to_string(), i["pointer"].as_str().unwrap().to_string()))
        .collect()
}
