//! No error body gives a tenant a host path (#34.8, docs/security.md, A served runtime): what a served caller is
//! told when a command fails or writes to stderr, or when the store cannot read a document, names the call's
//! directories by placeholder (`$WORKSPACE`, `$PACK`, `$TMPDIR`, `$HCP_HOME/…`), never where they lie on the
//! operator's machine; over HTTP and over MCP at `/mcp` alike. The store's owner (the CLI, MCP over stdio) still
//! reads the real paths.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

use crate::helpers::{Fixture, Home};
use crate::mcp::client;
use crate::serve::{principal, request, Server, ALL};

/// A pack whose command tells, on stderr, every host path it runs with: its working directory (the tenant's
/// workspace), `HOME`, `TMPDIR`, the directory `TMPDIR` was made in, and its own bin (in the installed pack).
/// `fail` also prints them on stdout and exits 3; `noisy` succeeds.
fn leaky(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "leaky", "name": "Leaky", "kind": "wrap", "cliBin": "leak",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/leak", "json_flag": [], "workspace": { "mode": "workspace" } },
        "verbs": {
            "fail": { "description": "Fail, naming where it ran.", "cli": ["leak", "fail"] },
            "noisy": { "description": "Succeed, naming where it ran on stderr.", "cli": ["leak", "noisy"] }
        }
    });
    f.policy = json!({
        "surface_id": "leaky",
        "verbs": { "fail": { "operation": "read" }, "noisy": { "operation": "read" } }
    });
    f.harness = "# Leaky\n\nTells where it runs.\n".into();
    let script = r#"#!/bin/sh
where="cwd $(pwd -P) home $HOME tmp $TMPDIR root $(dirname "$TMPDIR") bin $0"
echo "cannot open $TMPDIR/scratch: $where" >&2
if [ "$1" = fail ]; then printf '{"where":"%s"}\n' "$where"; exit 3; fi
echo '{"ok":true}'
"#;
    f.files = vec![("bin/leak".into(), script.into(), true)];
    h.install(&f, "leaky");
}

/// `hcpx serve` with its own temp directory (where each call's `TMPDIR` is made), inside the test's.
fn serve(h: &Home, tmp: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .envs(h.store_env())
        .env("TMPDIR", tmp)
        .current_dir(h.t.path());
    Server::launch(cmd)
}

/// Fails when `body` names the test's directory, which holds every host path of this runtime: the store, the
/// tenant's workspace, the installed pack and the server's temp directory.
fn no_host_path(h: &Home, what: &str, body: &Value) {
    let text = body.to_string();
    let root = h.t.path().to_str().unwrap();
    assert!(!text.contains(root), "{what} names the host path {root}: {text}");
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not text: {v}"))
}

#[test]
fn a_served_caller_never_reads_a_host_path_in_an_error() {
    let h = Home::new();
    leaky(&h);
    let alice = principal(&h, "alice", "acme", ALL, false);
    let host_tmp = h.t.join("host-tmp");
    std::fs::create_dir_all(&host_tmp).unwrap();
    let store = h.store().to_str().unwrap().to_string();

    // The store's owner reads where things are.
    let (code, v) = h.exec("leaky", "fail", &[]);
    assert_ne!(code, 0, "{v}");
    assert!(text(&v["error"]).contains(&format!("{store}/workspaces/leaky")), "{v}");

    let s = serve(&h, &host_tmp);
    let url = format!("http://{}/mcp", s.addr);

    // A failing command: its stderr is the error, its stdout the result; both are failure text.
    let (st, v) = s.post("/v1/exec/leaky/fail", &alice, &json!({}));
    assert_eq!((st, v["code"].as_str()), (502, Some("exit_nonzero")), "{v}");
    no_host_path(&h, "a failed call over HTTP", &v);
    let error = text(&v["error"]);
    for placeholder in ["cannot open $TMPDIR/scratch", "cwd $WORKSPACE ", "home $WORKSPACE ", "bin $PACK/"] {
        assert!(error.contains(placeholder), "{placeholder:?} is not in {error}");
    }
    // A command that succeeds keeps its stderr, without the paths.
    let (st, v) = s.post("/v1/exec", &alice, &json!({"pack_id": "leaky", "verb_key": "noisy", "args": {}}));
    assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    no_host_path(&h, "a call's stderr over HTTP", &v);
    assert!(text(&v["stderr"]).starts_with("cannot open $TMPDIR/scratch"), "{v}");

    // The runtime's own report, which names its store, is no command's output.
    let (st, v) = s.post("/v1/exec/hcp-cli/hcp.doctor", &alice, &json!({}));
    assert_eq!(st, 200, "{v}");
    no_host_path(&h, "hcp.doctor over HTTP", &v);
    assert!(v.to_string().contains("HCP_HOME is $HCP_HOME"), "{v}");

    // The same over MCP at /mcp: the structured content, the envelope in `_meta` and the text the model reads.
    let plan = json!([["leaky__fail", {}], ["leaky__noisy", {}]]).to_string();
    let r = client(&h, "calls.py", &[&plan, &url, &alice]);
    let (failed, noisy) = (&r["results"][0], &r["results"][1]);
    assert_eq!(
        (failed["is_error"].as_bool(), failed["structured"]["code"].as_str()),
        (Some(true), Some("exit_nonzero")),
        "{r}"
    );
    no_host_path(&h, "a failed call over MCP", &r);
    assert!(text(&failed["text"]).contains("cwd $WORKSPACE "), "{r}");
    assert!(text(&noisy["envelope"]["stderr"]).starts_with("cannot open $TMPDIR/scratch"), "{r}");
    // The failure's output rides in `_meta` too, its paths hidden as in the error.
    assert!(text(&failed["envelope"]["result"]["where"]).contains("cwd $WORKSPACE "), "{r}");
    // Over stdio the client is the store's owner's.
    let r = client(&h, "calls.py", &[&plan]);
    assert!(text(&r["results"][0]["text"]).contains(&format!("{store}/workspaces/leaky")), "{r}");

    // A store document that does not parse: its path is the operator's.
    std::fs::write(h.store().join("sandbox.json"), "{ not json").unwrap();
    let (code, v) = h.exec("leaky", "noisy", &[]);
    assert_ne!(code, 0, "{v}");
    assert!(v.to_string().contains(&format!("{store}/sandbox.json")), "the owner reads which file: {v}");
    let (st, v) = s.post("/v1/exec/leaky/noisy", &alice, &json!({}));
    assert!(st >= 400, "{v}");
    no_host_path(&h, "a store failure over HTTP", &v);
    assert!(text(&v["error"]).contains("$HCP_HOME/sandbox.json is not valid"), "{v}");
    let r = client(&h, "calls.py", &[&json!([["leaky__noisy", {}]]).to_string(), &url, &alice]);
    assert_eq!(r["results"][0]["is_error"].as_bool(), Some(true), "{r}");
    no_host_path(&h, "a store failure over MCP", &r);

    // The store's state, which even a caller without a token is told of (`/healthz`), and every /v1 route reads.
    std::fs::write(h.store().join("state.json"), "{ not json").unwrap();
    let (st, _, v) = request(&s.addr, "GET", "/healthz", None, None);
    assert_eq!(st, 503, "{v}");
    no_host_path(&h, "/healthz", &v);
    assert!(text(&v["error"]).contains("$HCP_HOME/state.json is not valid"), "{v}");
    let (st, v) = s.get("/v1/packs", &alice);
    assert!(st >= 400, "{v}");
    no_host_path(&h, "GET /v1/packs", &v);
    let (st, v) = s.post("/v1/exec/leaky/fail", &alice, &json!({}));
    assert!(st >= 400, "{v}");
    no_host_path(&h, "a call on a broken store", &v);
}
