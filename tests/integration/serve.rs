//! `hcpx serve` driven over loopback HTTP as a hosted platform drives it: every endpoint, bearer Principals
//! (none, wrong, removed), tenants kept apart (workspaces, credentials, audit rows), the `project`-mode
//! refusal, the body limit, a busy 503, a graceful SIGTERM, the access log, and MCP over Streamable HTTP.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::{repo, stdout_json, Fixture, Home};

/// A test over the file store (its name unchanged) and the same test over a fresh PostgreSQL database (named
/// `…_postgres`; skipped with a reason where no PostgreSQL is installed, a failure under `CI=true`).
macro_rules! on_both_stores {
    ($(#[doc = $doc:literal])* fn $files:ident / $postgres:ident ($h:ident) $body:block) => {
        $(#[doc = $doc])*
        #[test]
        fn $files() {
            let $h = crate::helpers::Home::new();
            $body
        }

        $(#[doc = $doc])*
        #[test]
        fn $postgres() {
            if crate::pg::unavailable() {
                return;
            }
            let $h = crate::helpers::Home::postgres();
            $body
        }
    };
}
pub(crate) use on_both_stores;

/// A running `hcpx serve` on a free loopback port; killed when dropped.
pub struct Server {
    child: Child,
    pub addr: String,
    /// Everything it wrote on stderr (the access log).
    log: Arc<Mutex<String>>,
}

impl Server {
    pub fn start(h: &Home, flags: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .args(flags)
            .env("HCP_HOME", h.store())
            .envs(h.store_env())
            .current_dir(h.t.path());
        Server::launch(cmd)
    }

    /// Starts `cmd` (an `hcpx serve` already given its flags and environment) and waits for its address.
    pub fn launch(mut cmd: Command) -> Server {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn hcpx serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("a first line").expect("utf8");
        let addr = first
            .split("http://")
            .nth(1)
            .unwrap_or_else(|| panic!("hcpx serve did not start: {first}"))
            .trim()
            .to_string();
        let log = Arc::new(Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        Server { child, addr, log }
    }

    /// `METHOD path` with an optional bearer token and body → (status, headers, JSON body).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> (u16, String, Value) {
        request(&self.addr, method, path, token, body)
    }

    pub fn get(&self, path: &str, token: &str) -> (u16, Value) {
        let (s, _, v) = self.call("GET", path, Some(token), None);
        (s, v)
    }

    pub fn post(&self, path: &str, token: &str, body: &Value) -> (u16, Value) {
        let (s, _, v) = self.call("POST", path, Some(token), Some(body.to_string().as_bytes()));
        (s, v)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The server's process id (`hcpx serve` becomes `hcpx-serve` in the same process).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: no shutdown, no flush; waits until it is gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(crate) fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on the child we spawned and have not reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, sig) };
    }

    /// Sends SIGTERM and waits (bounded) for the exit status.
    pub(crate) fn terminate(&mut self) -> Option<i32> {
        self.signal(libc::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a fresh loopback connection (`Connection: close`).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> (u16, String, Value) {
    request_with(addr, method, path, token, body, &[])
}

/// `request` with more headers.
pub fn request_with(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    extra: &[(&str, &str)],
) -> (u16, String, Value) {
    let (status, head, body) = request_raw(addr, method, path, token, body, extra);
    let value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"));
    (status, head, value)
}

/// `request_with` whose body is text → (status, lowercased head, body).
pub fn request_raw(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    extra: &[(&str, &str)],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let body = body.unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) before it reads the whole body; a write it refused is not the test's failure.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).expect("status");
    (status, head.to_lowercase(), body.to_string())
}

/// `hcpx principal add ID --tenant T --grant …` → the token.
pub fn principal(h: &Home, id: &str, tenant: &str, grants: &[&str], operator: bool) -> String {
    let mut args = vec!["principal", "add", id, "--tenant", tenant, "--json"];
    for g in grants {
        args.extend(["--grant", g]);
    }
    if operator {
        args.push("--operator");
    }
    let out = h.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    stdout_json(&out)["token"].as_str().unwrap().to_string()
}

pub(crate) fn install_repo_packs(h: &Home, packs: &[&str]) {
    for p in packs {
        let out = h.run(&["install", repo().join("packs").join(p).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(h.run(&[&["activate"][..], packs].concat()).status.code(), Some(0));
}

pub(crate) const ALL: &[&str] = &["verb.exec.read:*", "verb.exec.write:*"];

on_both_stores! {
    fn every_endpoint_answers_a_bearer_principal / every_endpoint_answers_a_bearer_principal_postgres (h) {
        install_repo_packs(&h, &["transit-composite", "ledger"]);
        let alice = principal(&h, "alice", "acme", ALL, false);
        let ops = principal(&h, "ops", "acme", &[], true);
        let s = Server::start(&h, &[]);

        let (st, _, v) = s.call("GET", "/healthz", None, None);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)));

        // The document lists the fixed routes and one path per command the caller may call, with its argument
        // schema.
        let (st, _, doc) = s.call("GET", "/openapi.json", Some(&alice), None);
        assert_eq!((st, doc["openapi"].as_str()), (200, Some("3.1.0")));
        let plan = &doc["paths"]["/v1/exec/transit-composite/plan"]["post"];
        let schema = &plan["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(schema["required"], json!(["from", "to"]), "{plan}");
        assert!(doc["paths"]["/v1/exec/ledger/transfer"].is_object());
        for p in ["/v1/exec", "/v1/packs", "/v1/packs/{id}/availability", "/v1/title", "/healthz", "/readyz", "/metrics"] {
            assert!(doc["paths"][p].is_object(), "{p} missing");
        }

        let (st, v) = s.get("/v1/packs", &alice);
        assert_eq!(st, 200);
        assert_eq!(v["packs"].as_array().unwrap().len(), 2, "{v}");
        let (st, v) = s.get("/v1/packs/ledger", &alice);
        assert_eq!((st, v["pack"]["id"].as_str()), (200, Some("ledger")));
        // Where a pack was installed from names the host's paths: for operators only.
        assert!(v["pack"].get("source").is_none(), "{v}");
        let (_, v) = s.get("/v1/packs", &alice);
        assert!(v["packs"].as_array().unwrap().iter().all(|p| p.get("source").is_none()), "{v}");
        let (_, v) = s.get("/v1/packs/ledger", &ops);
        assert!(v["pack"]["source"].as_str().unwrap().ends_with("packs/ledger"), "{v}");
        let (st, v) = s.get("/v1/packs/nope", &alice);
        assert_eq!((st, v["code"].as_str()), (404, Some("unknown_pack")));
        let (st, v) = s.get("/v1/packs/transit-composite/availability", &alice);
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["availability"]["runnable"], true, "{v}");
        let (st, v) = s.get("/v1/packs/ledger/commands", &alice);
        assert_eq!(st, 200);
        let transfer = v["commands"].as_array().unwrap().iter().find(|c| c["verb_key"] == "transfer").unwrap();
        assert_eq!(transfer["args"]["required"], json!(["amount", "payee"]));
        let (st, v) = s.get("/v1/packs/ledger/skill", &alice);
        assert!(st == 200 && v["lead"].as_str().unwrap().contains("ledger"), "{v}");
        let (st, v) = s.get("/v1/packs/ledger/skill?full=true", &alice);
        assert!(st == 200 && v["text"].as_str().unwrap().contains("## "), "{v}");

        let (st, v) = s.get("/v1/title?pack_id=transit-composite&verb_key=plan&args=%7B%22from%22%3A%22A%22%2C%22to%22%3A%22B%22%7D", &alice);
        assert_eq!((st, v["title"].as_str()), (200, Some("Planning a trip from A to B")), "{v}");
        let body = json!({ "pack_id": "transit-composite", "verb_key": "plan", "args": { "from": "A", "to": "B" }, "result": { "optionId": "opt-9" } });
        let (st, v) = s.post("/v1/title", &alice, &body);
        assert_eq!((st, v["title"].as_str()), (200, Some("Planned A to B: opt-9")), "{v}");

        // The envelope in, the result envelope out; and the same call on its own path.
        let env =
            json!({ "pack_id": "transit-composite", "verb_key": "plan", "args": { "from": "A", "to": "B" } });
        let (st, v) = s.post("/v1/exec", &alice, &env);
        assert_eq!((st, v["result"]["optionId"].as_str()), (200, Some("opt-1")), "{v}");
        let (st, v) = s.post("/v1/exec/transit-composite/plan", &alice, &json!({ "from": "A", "to": "B" }));
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
        // A denial carries its code and the status the one table gives it.
        let (st, v) = s.post("/v1/exec/transit-composite/plan", &alice, &json!({ "from": "A" }));
        assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{v}");
        let (st, v) = s.post("/v1/exec/ledger/transfer", &alice, &json!({ "amount": "1", "payee": "p" }));
        assert_eq!((st, v["code"].as_str()), (428, Some("confirm_required")), "{v}");
        assert_eq!(v["preview"]["title"], "Pay p");
        let (st, _, v) = s.call("POST", "/v1/exec", Some(&alice), Some(b"{not json"));
        assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{v}");

        // The audit rows of the caller's tenant: the gated write, with invoker http.
        let (st, v) = s.get("/v1/audit", &alice);
        assert_eq!(st, 200);
        let rows = v["records"].as_array().unwrap();
        assert!(
            rows.iter().any(|r| r["verb_key"] == "transfer"
                && r["invoker"] == "http"
                && r["principal"] == "alice"
                && r["tenant"] == "acme"),
            "{v}"
        );

        // The doctor is for operators.
        let (st, v) = s.get("/v1/doctor", &alice);
        assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
        let (st, v) = s.get("/v1/doctor", &ops);
        assert_eq!(st, 200, "{v}");
        assert!(v["checks"].is_array());

        let (st, v) = s.get("/v1/nothing-here", &alice);
        assert_eq!(st, 404, "{v}");

        // The access log has a line per request, and never an argument, a token or a body.
        let log = s.log();
        assert!(log.lines().filter(|l| l.contains("\"path\":\"/v1/exec\"")).count() >= 2, "{log}");
        assert!(log.contains("\"principal\":\"alice\"") && log.contains("\"tenant\":\"acme\""), "{log}");
        for secret in [alice.as_str(), ops.as_str(), "opt-9", "\"from\"", "Pay p"] {
            assert!(!log.contains(secret), "the access log holds {secret:?}:\n{log}");
        }
    }
}

on_both_stores! {
    fn no_token_a_wrong_token_and_a_removed_principal_are_refused_before_anything_runs / no_token_a_wrong_token_and_a_removed_principal_are_refused_before_anything_runs_postgres (h) {
        let f = crate::helpers::probe_fixture(&h.marker);
        h.install(&f, "probe");
        let good = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &[]);
        let env = json!({ "pack_id": "probe", "verb_key": "look" }).to_string();
        for token in [None, Some("not-a-token"), Some("")] {
            let (st, head, v) = s.call("POST", "/v1/exec", token, Some(env.as_bytes()));
            assert_eq!((st, v["code"].as_str()), (401, Some("denied")), "{token:?}: {v}");
            assert!(head.contains("www-authenticate: bearer"), "{head}");
        }
        // Other routes too, and MCP.
        for path in ["/v1/packs", "/v1/audit", "/mcp"] {
            let (st, _, _) = s.call("GET", path, None, None);
            assert_eq!(st, 401, "{path}");
        }
        assert_eq!(h.runs(), 0, "a refused call ran the command");
        let (st, v) = s.post("/v1/exec", &good, &json!({ "pack_id": "probe", "verb_key": "look" }));
        assert_eq!(st, 200, "{v}");
        assert_eq!(h.runs(), 1);
        // Removed: the token stops working with the server still running: at once on the file store, and on
        // the database store as soon as the change's notification arrives (docs/hosting.md: within a second).
        assert_eq!(h.run(&["principal", "rm", "alice"]).status.code(), Some(0));
        let removed = std::time::Instant::now();
        loop {
            let (st, _) = s.post("/v1/exec", &good, &json!({ "pack_id": "probe", "verb_key": "look" }));
            if st == 401 {
                break;
            }
            assert!(removed.elapsed() < Duration::from_secs(1), "a removed Principal still called after 1 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let ran = h.runs();
        let (st, _) = s.post("/v1/exec", &good, &json!({ "pack_id": "probe", "verb_key": "look" }));
        assert_eq!(st, 401);
        assert_eq!(h.runs(), ran, "a refused call ran the command");
    }
}

/// A wrap that needs a credential field and keeps state in its private workspace: `save` writes a file
/// there, `peek` lists it; the credential reaches it as `$DEMO_TOKEN`.
fn tenant_pack(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "vault", "name": "Vault", "kind": "wrap", "cliBin": "vault",
        "binding": { "mode": "local", "hub": "local-credential", "family": "vault" },
        "wrap": { "bin": "./bin/vault", "json_flag": [], "workspace": { "mode": "workspace" },
                  "agent_env": { "DEMO_TOKEN": "{{binding.token}}" } },
        "verbs": {
            "save": { "description": "Save a note.", "cli": ["vault", "save"] },
            "peek": { "description": "List the notes.", "cli": ["vault", "peek"] }
        }
    });
    f.policy = json!({ "surface_id": "vault", "verbs": { "save": { "operation": "write" }, "peek": { "operation": "read" } } });
    f.harness = "# Vault\n\nNotes.\n".into();
    let script = "#!/bin/sh\nif [ \"$1\" = save ]; then echo note > note.txt; fi\nn=$(ls | tr '\\n' ' ')\nprintf '{\"files\":\"%s\",\"len\":%s}\\n' \"$n\" \"${#DEMO_TOKEN}\"\n";
    f.files = vec![("bin/vault".into(), script.into(), true)];
    h.install(&f, "vault");
}

on_both_stores! {
    fn tenants_never_reach_each_others_workspace_credentials_or_audit_rows / tenants_never_reach_each_others_workspace_credentials_or_audit_rows_postgres (h) {
        tenant_pack(&h);
        let a = principal(&h, "alice", "acme", ALL, false);
        let b = principal(&h, "bob", "beta", ALL, false);
        // acme's credential, set by the operator for that tenant only.
        let out = h.run_with(&["credential", "set", "vault", "token", "--tenant", "acme"], &[], Some("acme-secret-value"));
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let s = Server::start(&h, &[]);

        let (st, v) = s.post("/v1/exec/vault/save", &a, &json!({}));
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["result"]["len"], 17, "acme's call got its credential: {v}");
        let (st, v) = s.post("/v1/exec/vault/peek", &a, &json!({}));
        assert_eq!((st, v["result"]["files"].as_str()), (200, Some("note.txt ")), "{v}");

        // beta: no credential of acme's, and none of its files.
        let (st, v) = s.post("/v1/exec/vault/peek", &b, &json!({}));
        assert_eq!((st, v["code"].as_str()), (424, Some("binding_failed")), "{v}");
        assert!(v["error"].as_str().unwrap().contains("--tenant beta"), "{v}");
        let out = h.run_with(&["credential", "set", "vault", "token", "--tenant", "beta"], &[], Some("b"));
        assert_eq!(out.status.code(), Some(0));
        let (st, v) = s.post("/v1/exec/vault/peek", &b, &json!({}));
        assert_eq!(st, 200, "{v}");
        assert_eq!((v["result"]["files"].as_str(), v["result"]["len"].as_i64()), (Some(""), Some(1)), "{v}");
        // The local user (the CLI) sees neither tenant's credential nor files.
        let (code, v) = h.exec("vault", "peek", &[]);
        assert_eq!((code, v["code"].as_str()), (1, Some("binding_failed")), "{v}");
        assert!(!h.store().join("workspaces/vault/note.txt").exists());

        // An envelope naming another tenant is no way in: the field does not exist.
        let (st, v) =
            s.post("/v1/exec", &b, &json!({ "pack_id": "vault", "verb_key": "peek", "tenant": "acme" }));
        assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{v}");

        // Audit rows: each tenant sees its own.
        let (_, v) = s.get("/v1/audit", &b);
        assert!(v["records"].as_array().unwrap().iter().all(|r| r["tenant"] == "beta"), "{v}");
        let (_, v) = s.get("/v1/audit", &a);
        let rows = v["records"].as_array().unwrap();
        assert!(!rows.is_empty() && rows.iter().all(|r| r["tenant"] == "acme"), "{v}");
        assert!(!s.log().contains("acme-secret-value"));
    }
}

on_both_stores! {
    fn a_served_runtime_refuses_project_mode_commands_with_no_project / a_served_runtime_refuses_project_mode_commands_with_no_project_postgres (h) {
        let mut f = crate::helpers::probe_fixture(&h.marker);
        f.surface["wrap"]["workspace"] = json!({ "mode": "project" });
        h.install(&f, "probe");
        let a = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &[]);
        let (st, v) = s.post("/v1/exec/probe/look", &a, &json!({}));
        assert_eq!((st, v["code"].as_str()), (409, Some("no_project")), "{v}");
        assert_eq!(h.runs(), 0);
    }
}

on_both_stores! {
    /// Issue #24 point 5: without a token the document names no pack and no command; with one, exactly the
    /// commands of the packs activated for that Principal's tenant that its grants allow.
    fn openapi_tells_a_stranger_only_the_api_and_a_principal_only_its_commands / openapi_tells_a_stranger_only_the_api_and_a_principal_only_its_commands_postgres (h) {
        install_repo_packs(&h, &["transit-composite", "ledger"]);
        let reader = principal(&h, "reader", "acme", &["verb.exec.read:*"], false);
        let other = principal(&h, "other", "beta", ALL, false);
        let out = h.run(&["deactivate", "ledger", "--tenant", "beta"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let s = Server::start(&h, &[]);
        let commands = |doc: &Value| -> Vec<String> {
            let mut c: Vec<String> = doc["paths"].as_object().unwrap().keys()
                .filter(|p| p.starts_with("/v1/exec/")).cloned().collect();
            c.sort();
            c
        };

        let (st, _, stranger) = s.call("GET", "/openapi.json", None, None);
        assert_eq!(st, 200);
        assert!(commands(&stranger).is_empty(), "{:?}", commands(&stranger));
        let text = stranger.to_string();
        for installed in ["ledger", "transit", "transfer", "acme", "beta"] {
            assert!(!text.contains(installed), "a stranger reads {installed:?} in the document");
        }
        for p in ["/v1/exec", "/v1/packs", "/healthz", "/readyz", "/metrics", "/openapi.json"] {
            assert!(stranger["paths"][p].is_object(), "{p} missing");
        }

        // A reader sees the reads of every pack activated for its tenant, and no write.
        let (_, _, doc) = s.call("GET", "/openapi.json", Some(&reader), None);
        let mine = commands(&doc);
        assert!(mine.contains(&"/v1/exec/ledger/status".to_string()), "{mine:?}");
        assert!(mine.contains(&"/v1/exec/transit-composite/plan".to_string()), "{mine:?}");
        assert!(!mine.iter().any(|c| c.ends_with("/transfer") || c.ends_with("/connect")), "{mine:?}");
        // Another tenant, with every grant, sees nothing of a pack its tenant has deactivated.
        let (_, _, doc) = s.call("GET", "/openapi.json", Some(&other), None);
        let theirs = commands(&doc);
        assert!(!theirs.is_empty() && theirs.iter().all(|c| c.starts_with("/v1/exec/transit-composite/")), "{theirs:?}");
        // A wrong token is refused, not taken for a stranger.
        let (st, _, v) = s.call("GET", "/openapi.json", Some("not-a-token"), None);
        assert_eq!((st, v["code"].as_str()), (401, Some("denied")), "{v}");
    }
}

/// A wrap whose one read takes `secs` seconds.
fn sleepy(h: &Home, secs: u32) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "sleepy", "name": "Sleepy", "kind": "wrap", "cliBin": "sleepy",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/sleepy", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": { "nap": { "description": "Nap a while.", "cli": ["sleepy", "nap"] } }
    });
    f.policy = json!({ "surface_id": "sleepy", "verbs": { "nap": { "operation": "read" } } });
    f.harness = "# Sleepy\n\nNaps.\n".into();
    f.files =
        vec![("bin/sleepy".into(), format!("#!/bin/sh\nsleep {secs}\necho '{{\"napped\":true}}'\n"), true)];
    h.install(&f, "sleepy");
}

on_both_stores! {
    fn the_body_limit_and_the_concurrency_limit_answer_before_anything_runs / the_body_limit_and_the_concurrency_limit_answer_before_anything_runs_postgres (h) {
        sleepy(&h, 3);
        let a = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &["--max-body-bytes", "2048", "--max-calls", "1"]);
        let big = json!({ "pack_id": "sleepy", "verb_key": "nap", "args": { "pad": "x".repeat(10_000) } });
        let (st, v) = s.post("/v1/exec", &a, &big);
        assert_eq!((st, v["code"].as_str()), (413, Some("invalid_args")), "{v}");

        let addr = s.addr.clone();
        let tok = a.clone();
        let first =
            std::thread::spawn(move || request(&addr, "POST", "/v1/exec/sleepy/nap", Some(&tok), Some(b"{}")));
        // The first call holds the one slot for about 3 s; a second one meanwhile is busy.
        std::thread::sleep(Duration::from_millis(1000));
        let (st, head, v) = s.call("POST", "/v1/exec/sleepy/nap", Some(&a), Some(b"{}"));
        assert_eq!((st, v["code"].as_str()), (503, Some("busy")), "{v}");
        assert!(head.contains("retry-after: 1"), "{head}");
        let (st, _, v) = first.join().unwrap();
        assert_eq!((st, v["result"]["napped"].as_bool()), (200, Some(true)), "{v}");
        // The slot is free again.
        let (st, v) = s.post("/v1/exec/sleepy/nap", &a, &json!({}));
        assert_eq!(st, 200, "{v}");
    }
}

on_both_stores! {
    fn sigterm_lets_the_call_in_flight_finish_then_stops / sigterm_lets_the_call_in_flight_finish_then_stops_postgres (h) {
        sleepy(&h, 2);
        let a = principal(&h, "alice", "acme", ALL, false);
        let mut s = Server::start(&h, &[]);
        let addr = s.addr.clone();
        let tok = a.clone();
        let call =
            std::thread::spawn(move || request(&addr, "POST", "/v1/exec/sleepy/nap", Some(&tok), Some(b"{}")));
        std::thread::sleep(Duration::from_millis(700));
        let code = s.terminate();
        let (st, _, v) = call.join().unwrap();
        assert_eq!((st, v["result"]["napped"].as_bool()), (200, Some(true)), "the call in flight was cut: {v}");
        assert_eq!(code, Some(0), "{}", s.log());
        assert!(TcpStream::connect(&s.addr).is_err(), "still listening after SIGTERM");
    }
}

on_both_stores! {
    fn an_agent_host_reaches_the_same_tools_over_streamable_http / an_agent_host_reaches_the_same_tools_over_streamable_http_postgres (h) {
        let tok = crate::escape::token();
        crate::mcp::slow_pack(&h, &tok);
        install_repo_packs(&h, &["ledger", "transit-composite"]);
        let alice = principal(&h, "alice", "acme", ALL, false);
        // Made before the server starts: a Principal added while it runs reaches a PostgreSQL replica within the
        // documented second (docs/hosting.md), not necessarily before the next request.
        let ops = principal(&h, "ops", "acme", &[], true);
        let s = Server::start(&h, &[]);
        let url = format!("http://{}/mcp", s.addr);
        let r =
            crate::mcp::client(&h, "client.py", &[repo().join("packs/transit").to_str().unwrap(), &url, &alice]);
        crate::mcp::check_session(&h, &r, &tok);
        let audit = h.audit_log();
        assert!(
            audit.lines().any(|l| l.contains("\"invoker\":\"mcp\"")
                && l.contains("\"principal\":\"alice\"")
                && l.contains("\"tenant\":\"acme\"")),
            "{audit}"
        );
        // The calls over /mcp are counted with the HTTP ones, under invoker mcp.
        let (st, _, text) = request_raw(&s.addr, "GET", "/metrics", Some(&ops), None, &[]);
        assert_eq!(st, 200, "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("hcp_calls_total{tenant=\"acme\",invoker=\"mcp\",")),
            "{text}"
        );
    }
}

on_both_stores! {
    fn schemathesis_finds_no_failure_against_the_openapi_document / schemathesis_finds_no_failure_against_the_openapi_document_postgres (h) {
        install_repo_packs(&h, &["transit-composite", "transit", "ledger"]);
        let token =
            principal(&h, "st", "acme", &["verb.exec.read:*", "verb.exec.write:*", "pack.connect:*"], false);
        let s = Server::start(&h, &[]);
        // Bounded: a fixed number of examples per operation, deterministic, each request under 30 s. What the
        // generated inputs probe (parsing, schemas, status codes) is the HTTP face's, whatever the store: the
        // PostgreSQL run takes fewer examples, enough to reach every operation on that store.
        let examples = if h.store_env.iter().any(|(k, _)| k == "HCP_STORE") { "10" } else { "25" };
        let out = Command::new("python3")
            .args(["-m", "schemathesis.cli", "--config-file"])
            .arg(repo().join("tests/http/schemathesis.toml"))
            .args([
                "run",
                &format!("http://{}/openapi.json", s.addr),
                "-H",
                &format!("Authorization: Bearer {token}"),
            ])
            .args([
                "--checks",
                "all",
                "-n",
                examples,
                "--generation-deterministic",
                "--request-timeout",
                "30",
                "--no-color",
            ])
            .current_dir(h.t.path())
            .output()
            .expect("python3 -m schemathesis.cli (scripts/setup.sh installs schemathesis)");
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "schemathesis found failures:\n{report}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(report.contains("passed"), "{report}");
    }
}

/// The status line of a raw MCP `initialize` POST to `/mcp` naming `host`.
fn mcp_initialize_status(addr: &str, host: &str, token: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string()
}

on_both_stores! {
    fn mcp_over_http_answers_only_the_hosts_it_serves / mcp_over_http_answers_only_the_hosts_it_serves_postgres (h) {
        install_repo_packs(&h, &["transit-composite"]);
        let a = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &["--allow-host", "hcp.internal"]);
        // A page that rebinds its own name to 127.0.0.1 sends its own Host: refused before MCP runs.
        assert!(mcp_initialize_status(&s.addr, "evil.example", &a).contains(" 403 "));
        assert!(mcp_initialize_status(&s.addr, &s.addr, &a).contains(" 200 "));
        assert!(mcp_initialize_status(&s.addr, "hcp.internal", &a).contains(" 200 "));
    }
}

on_both_stores! {
    fn a_request_can_give_its_call_less_time_than_the_operator_allows / a_request_can_give_its_call_less_time_than_the_operator_allows_postgres (h) {
        sleepy(&h, 5);
        let a = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &[]);
        let started = Instant::now();
        let (st, _, v) = request_with(
            &s.addr,
            "POST",
            "/v1/exec/sleepy/nap",
            Some(&a),
            Some(b"{}"),
            &[("Hcp-Timeout-Ms", "400")],
        );
        assert_eq!((st, v["code"].as_str()), (504, Some("timeout")), "{v}");
        assert!(started.elapsed() < Duration::from_secs(4), "the call ran past its own deadline");
        for bad in ["0", "soon", "-1"] {
            let (st, _, v) = request_with(
                &s.addr,
                "POST",
                "/v1/exec/sleepy/nap",
                Some(&a),
                Some(b"{}"),
                &[("Hcp-Timeout-Ms", bad)],
            );
            assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{bad}: {v}");
        }
    }
}

on_both_stores! {
    fn a_confirm_gated_write_over_http_asks_the_person_and_runs_only_on_approval / a_confirm_gated_write_over_http_asks_the_person_and_runs_only_on_approval_postgres (h) {
        install_repo_packs(&h, &["ledger"]);
        let alice = principal(&h, "alice", "acme", ALL, false);
        let s = Server::start(&h, &[]);
        let url = format!("http://{}/mcp", s.addr);
        let r = crate::mcp::client(&h, "elicit.py", &[&url, &alice]);
        crate::mcp::check_elicitation(&h, &r);
        let audit = h.audit_log();
        assert!(
            audit.lines().all(|l| l.contains("\"principal\":\"alice\"") && l.contains("\"invoker\":\"mcp\"")),
            "{audit}"
        );
    }
}
