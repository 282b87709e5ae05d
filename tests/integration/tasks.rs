//! Tasks (docs/mcp.md, Tasks; docs/http.md): a served call that runs past the operator's bound (or of a command
//! its pack marks `long`) becomes a task kept in the store. Driven with raw 2026-07-28 JSON-RPC over `/mcp` (a
//! request declaring the `io.modelcontextprotocol/tasks` extension in its `_meta`; the Python SDK has no tasks
//! client) and over `/v1` with `Prefer: respond-async`: `tasks/get` on another replica of three on one
//! PostgreSQL, a cancellation from another replica that kills the wrap's process group, another Principal's id
//! answered as an unknown one, a SIGKILLed replica's task recorded `unknown`, a kept result that expires, and a
//! client without the extension that waits as before.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::escape::{survivors, token};
use crate::helpers::{Fixture, Home};
use crate::serve::{principal, request_raw, request_with, Server};
use crate::store_pg::PgStore;
use crate::store_pg_replicas::Replica;

const VERSION: &str = "2026-07-28";
const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A wrap whose commands take a while: `wait` answers after 2 s; `nap` after 15 s; `quick`, marked `long`, after
/// 1 s; `hang` (a read) and `save` (a write), both marked `long`, start a child and wait on a sleep named by
/// `tok` (far past any test), so only a cancellation stops them.
fn slow_fixture(tok: &str) -> Fixture {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "slow", "name": "Slow", "kind": "wrap", "cliBin": "slow",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/slow", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": {
            "wait": { "description": "Wait two seconds, then answer.", "cli": ["slow", "wait"] },
            "nap": { "description": "Wait fifteen seconds, then answer.", "cli": ["slow", "nap"] },
            "hang": { "description": "Hang until stopped.", "cli": ["slow", "hang"], "long": true },
            "save": { "description": "Save, slowly.", "cli": ["slow", "save"], "long": true },
            "quick": { "description": "Answer after a second.", "cli": ["slow", "quick"], "long": true }
        }
    });
    f.policy = json!({ "surface_id": "slow", "verbs": {
        "wait": { "operation": "read" }, "nap": { "operation": "read" },
        "hang": { "operation": "read" }, "save": { "operation": "write" }, "quick": { "operation": "read" }
    } });
    f.harness = "# Slow\n\nTakes its time.\n".into();
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in\n  wait) sleep 2; echo '{{\"waited\":true}}' ;;\n  nap) sleep 15; echo '{{\"napped\":true}}' ;;\n  quick) sleep 1; echo '{{\"quick\":true}}' ;;\n  *) sleep {tok} &\n     sleep {tok} ;;\nesac\n"
    );
    f.files = vec![("bin/slow".into(), script, true)];
    f
}

/// `slow_fixture` installed and activated on `db`; the token its hanging commands sleep on.
fn slow_on(db: &PgStore) -> String {
    let tok = token();
    let src = db.t.join("src-slow");
    std::fs::create_dir_all(&src).unwrap();
    let dir = slow_fixture(&tok).write(&src);
    db.ok("admin", &["install", dir.to_str().unwrap()]);
    db.ok("admin", &["activate", "slow"]);
    tok
}

/// The `_meta` a 2026-07-28 client sends with each request; `tasks`: it declares the tasks extension.
fn meta(tasks: bool) -> Value {
    let caps = if tasks { json!({ "extensions": { EXTENSION: {} } }) } else { json!({}) };
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "tasks-test", "version": "1" },
    })
}

/// One 2026-07-28 request to `/mcp` (no session: any replica answers it) → its JSON-RPC response.
fn rpc(addr: &str, token: &str, method: &str, mut params: Value, tasks: bool) -> Value {
    params["_meta"] = meta(tasks);
    let name =
        params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_string);
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }).to_string();
    let mut headers = vec![
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", VERSION),
        ("Mcp-Method", method),
    ];
    if let Some(n) = &name {
        headers.push(("Mcp-Name", n.as_str()));
    }
    let (st, _, text) = request_raw(addr, "POST", "/mcp", Some(token), Some(body.as_bytes()), &headers);
    // A JSON-RPC error the transport itself answers (a capability the request lacks) comes with a 400.
    assert!(st == 200 || (st == 400 && text.contains("\"error\"")), "{method}: {st} {text}");
    let json = if text.trim_start().starts_with('{') {
        text.trim().to_string()
    } else {
        // An event stream: the response is the `data:` of the event that carries our id.
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| serde_json::from_str::<Value>(d).is_ok_and(|v| v["id"] == 7))
            .unwrap_or_else(|| panic!("no response in {text:?}"))
            .to_string()
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}"))
}

fn call(addr: &str, token: &str, tool: &str, tasks: bool) -> Value {
    rpc(addr, token, "tools/call", json!({ "name": tool, "arguments": {} }), tasks)
}

fn get(addr: &str, token: &str, id: &str) -> Value {
    rpc(addr, token, "tasks/get", json!({ "taskId": id }), true)
}

fn cancel(addr: &str, token: &str, id: &str) -> Value {
    rpc(addr, token, "tasks/cancel", json!({ "taskId": id }), true)
}

/// The task id of a `tools/call` answered with a task.
fn task_id(answer: &Value) -> String {
    assert_eq!(answer["result"]["resultType"], "task", "not a task: {answer}");
    assert_eq!(answer["result"]["status"], "working", "{answer}");
    answer["result"]["taskId"].as_str().unwrap().to_string()
}

/// Polls `tasks/get` (on `addr`) until the task is no longer working; its last answer. Bounded.
fn settled(addr: &str, token: &str, id: &str, within: Duration) -> Value {
    let start = Instant::now();
    loop {
        let r = get(addr, token, id);
        if r["result"]["status"] != "working" || start.elapsed() > within {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The result envelope of a tool result: `_meta["dev.hcpx/envelope"]` first, else `structuredContent`.
fn envelope_of(result: &Value) -> Value {
    let m = &result["_meta"]["dev.hcpx/envelope"];
    if m.is_object() {
        m.clone()
    } else {
        result["structuredContent"].clone()
    }
}

/// Waits (bounded) until `f` holds.
fn eventually(within: Duration, f: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    f()
}

/// The error a request for a task that does not exist gets, with the id in its message made generic.
fn unknown_shape(answer: &Value, id: &str) -> Value {
    let mut e = answer["error"].clone();
    assert!(e.is_object(), "not an error: {answer}");
    e["message"] = json!(e["message"].as_str().unwrap_or_default().replace(id, "ID"));
    e
}

/// A file-store home with the slow pack, a bound of 500 ms, and Principals ana and bob (tenant acme) and carol
/// (tenant beta), every read and write.
fn served_home(tok: &str) -> (Home, [String; 3]) {
    let h = Home::new();
    h.install(&slow_fixture(tok), "slow");
    h.write_store("sandbox.json", r#"{ "timeout_ms": 600000 }"#);
    let out = h.run(&["tasks", "--after-ms", "500"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let all = crate::serve::ALL;
    let tokens = [
        principal(&h, "ana", "acme", all, false),
        principal(&h, "bob", "acme", all, false),
        principal(&h, "carol", "beta", all, false),
    ];
    (h, tokens)
}

#[test]
fn a_long_call_becomes_a_task_and_every_replica_answers_for_it() {
    let Some(db) = PgStore::new() else { return };
    slow_on(&db);
    let set = db.ok("admin", &["tasks", "--after-ms", "500"]);
    assert_eq!((set["after_ms"].as_u64(), set["keep_ms"].as_u64()), (Some(500), Some(3_600_000)), "{set}");
    let ana = db.added(&["ana", "--tenant", "acme", "--grant", "verb.exec.read:*"]);
    let r: Vec<Replica> = (0..3).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();

    // The server says it takes tasks; a 2 s call past the 500 ms bound answers a task on replica 0.
    let started = Instant::now();
    let answer = call(&r[0].addr, &ana, "slow__wait", true);
    let id = task_id(&answer);
    assert!(
        started.elapsed() < Duration::from_millis(1800),
        "the call was waited for: {:?}",
        started.elapsed()
    );
    assert!(answer["result"]["pollIntervalMs"].is_u64(), "{answer}");
    // Replica 1 sees it working; replica 2 sees it end with the call's result, as the tool call would have
    // answered it.
    let working = get(&r[1].addr, &ana, &id);
    assert_eq!(working["result"]["status"], "working", "{working}");
    assert_eq!(working["result"]["resultType"], "complete", "{working}");
    let done = settled(&r[2].addr, &ana, &id, Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let result = &done["result"]["result"];
    assert_eq!(result["isError"], false, "{done}");
    let env = envelope_of(result);
    // The command's result is the structured content; the envelope rides in `_meta`.
    assert_eq!(
        (env["ok"].as_bool(), result["structuredContent"]["waited"].as_bool()),
        (Some(true), Some(true)),
        "{done}"
    );
    assert!(done["result"]["ttlMs"].as_u64().is_some_and(|t| t >= 3_600_000), "{done}");
    assert_eq!(db.psql("SELECT status FROM hcpx_tasks").trim(), "completed");
    // Another replica answers the same again.
    assert_eq!(get(&r[0].addr, &ana, &id)["result"]["status"], "completed");
}

#[test]
fn a_cancel_from_another_replica_kills_the_process_group_and_is_audited() {
    let Some(db) = PgStore::new() else { return };
    let tok = slow_on(&db);
    let ana = db.added(&["ana", "--tenant", "acme", "--grant", "verb.exec.write:*"]);
    let r: Vec<Replica> = (0..3).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();

    // `save` is marked long: a task at once, before the command has even started.
    let started = Instant::now();
    let id = task_id(&call(&r[0].addr, &ana, "slow__save", true));
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(eventually(Duration::from_secs(20), || survivors(&tok).len() == 2), "the command never started");
    let asked = Instant::now();
    let ack = cancel(&r[1].addr, &ana, &id);
    assert!(ack["result"].is_object() && ack.get("error").is_none(), "{ack}");
    // The replica running it notices within a poll and the wrap's whole process group (the child too) dies.
    assert!(
        eventually(Duration::from_secs(10), || survivors(&tok).is_empty()),
        "processes of the cancelled task survive: {:?}",
        survivors(&tok)
    );
    let took = asked.elapsed();
    let done = settled(&r[2].addr, &ana, &id, Duration::from_secs(20));
    assert_eq!(done["result"]["status"], "cancelled", "{done}");
    eprintln!("cancelled across replicas in {took:?}");
    // A poll every 200 ms: well under a second even on a loaded machine.
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");
    // Audited as a cancelled write is, its intent cleared.
    let rows = db.ok("admin", &["audit"]);
    let line = rows["records"].as_array().unwrap().iter().find(|r| r["verb_key"] == "save").cloned();
    let line = line.unwrap_or_else(|| panic!("no audit line: {rows}"));
    assert_eq!((line["ok"].as_bool(), line["code"].as_str()), (Some(false), Some("cancelled")), "{line}");
    assert_eq!(db.psql("SELECT count(*) FROM hcpx_audit_intents").trim(), "0");
}

#[test]
fn a_sigkilled_replicas_task_is_recorded_unknown() {
    let Some(db) = PgStore::new() else { return };
    slow_on(&db);
    db.ok("admin", &["tasks", "--after-ms", "300"]);
    let ana = db.added(&["ana", "--tenant", "acme", "--grant", "verb.exec.read:*"]);
    let mut doomed = Replica::start(&db, "doomed", &db.url);
    let witness = Replica::start(&db, "witness", &db.url);
    let id = task_id(&call(&doomed.addr, &ana, "slow__nap", true));
    assert_eq!(get(&witness.addr, &ana, &id)["result"]["status"], "working");
    doomed.kill();
    // The witness's sweep (every 2 s) finds the dead replica's task: failed, outcome unknown — the audit's word
    // for a call whose replica stopped mid-way (it may or may not have done its work).
    let done = settled(&witness.addr, &ana, &id, Duration::from_secs(20));
    assert_eq!(done["result"]["status"], "failed", "{done}");
    assert_eq!(done["result"]["error"]["data"]["outcome"], "unknown", "{done}");
    let message = done["result"]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("unknown: "), "{done}");
    // The same over /v1.
    let (st, _, v) = request_with(&witness.addr, "GET", &format!("/v1/tasks/{id}"), Some(&ana), None, &[]);
    assert_eq!(
        (st, v["task"]["status"].as_str(), v["task"]["outcome"].as_str()),
        (200, Some("failed"), Some("unknown")),
        "{v}"
    );
}

#[test]
fn another_principals_task_is_answered_as_one_that_does_not_exist() {
    let tok = token();
    let (h, [ana, bob, carol]) = served_home(&tok);
    let s = Server::start(&h, &[]);
    let id = task_id(&call(&s.addr, &ana, "slow__hang", true));
    assert!(eventually(Duration::from_secs(20), || survivors(&tok).len() == 2), "the command never started");
    let made_up = "tk_0123456789abcdef0123456789abcdef";
    let nothing = unknown_shape(&get(&s.addr, &ana, made_up), made_up);
    assert_eq!(nothing["code"], -32602, "{nothing}");
    // Bob (same tenant) and carol (another tenant): for them ana's task is exactly an id that does not exist,
    // whether they ask for it, cancel it or answer it.
    for who in [&bob, &carol] {
        assert_eq!(unknown_shape(&get(&s.addr, who, &id), &id), nothing);
        assert_eq!(unknown_shape(&cancel(&s.addr, who, &id), &id), nothing);
        let update = rpc(&s.addr, who, "tasks/update", json!({ "taskId": id, "inputResponses": {} }), true);
        assert_eq!(unknown_shape(&update, &id), nothing);
        for method in ["GET", "DELETE"] {
            let (st, _, mine) =
                request_with(&s.addr, method, &format!("/v1/tasks/{id}"), Some(who), None, &[]);
            let (st2, _, none) =
                request_with(&s.addr, method, &format!("/v1/tasks/{made_up}"), Some(who), None, &[]);
            assert_eq!((st, st2), (404, 404));
            assert_eq!(
                mine["error"].as_str().unwrap().replace(&id, "ID"),
                none["error"].as_str().unwrap().replace(made_up, "ID")
            );
        }
    }
    // Their cancels changed nothing: ana's task still runs, uncancelled.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(survivors(&tok).len(), 2, "another Principal's cancel stopped the call");
    let still = get(&s.addr, &ana, &id);
    assert_eq!(still["result"]["status"], "working", "{still}");
    assert_ne!(still["result"]["statusMessage"], "cancelling", "{still}");
    // Ana's own cancel stops it.
    cancel(&s.addr, &ana, &id);
    assert!(eventually(Duration::from_secs(10), || survivors(&tok).is_empty()), "{:?}", survivors(&tok));
    assert_eq!(settled(&s.addr, &ana, &id, Duration::from_secs(10))["result"]["status"], "cancelled");
}

#[test]
fn a_client_without_the_extension_waits_as_before() {
    let tok = token();
    let (h, [ana, ..]) = served_home(&tok);
    let s = Server::start(&h, &[]);
    // No tasks capability: the 2 s call is waited for, past the 500 ms bound, and answered whole.
    let started = Instant::now();
    let answer = call(&s.addr, &ana, "slow__wait", false);
    assert!(started.elapsed() >= Duration::from_millis(1900), "{:?}", started.elapsed());
    assert!(answer["result"].get("resultType").is_none_or(|t| t == "complete"), "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["waited"], true, "{answer}");
    // Even a command marked long (which a client that takes tasks gets as a task at once).
    let answer = call(&s.addr, &ana, "slow__quick", false);
    assert_eq!(answer["result"]["structuredContent"]["quick"], true, "{answer}");
    task_id(&call(&s.addr, &ana, "slow__quick", true));
    // Nor may it ask about tasks: the extension is required for that.
    let refused =
        rpc(&s.addr, &ana, "tasks/get", json!({ "taskId": "tk_0123456789abcdef0123456789abcdef" }), false);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // A client that takes tasks, on a call that ends within the bound: the plain answer.
    h.run(&["tasks", "--after-ms", "10000"]);
    std::thread::sleep(Duration::from_millis(50));
    let answer = call(&s.addr, &ana, "slow__wait", true);
    assert!(answer["result"].get("resultType").is_none_or(|t| t == "complete"), "{answer}");
    assert_eq!(answer["result"]["structuredContent"]["waited"], true, "{answer}");
}

#[test]
fn a_kept_result_expires() {
    let tok = token();
    let (h, [ana, ..]) = served_home(&tok);
    h.run(&["tasks", "--keep-ms", "1000"]);
    let s = Server::start(&h, &[]);
    let id = task_id(&call(&s.addr, &ana, "slow__wait", true));
    let done = settled(&s.addr, &ana, &id, Duration::from_secs(30));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let ttl = done["result"]["ttlMs"].as_u64().unwrap();
    assert!((2000..10_000).contains(&ttl), "ttl is its run as a task plus the keep time: {ttl}");
    let file = h.store().join("tenants/acme/tasks").join(format!("{id}.json"));
    assert!(file.exists());
    // Past the keep time it is unknown, and the sweep removes it.
    std::thread::sleep(Duration::from_millis(1100));
    let gone = get(&s.addr, &ana, &id);
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(eventually(Duration::from_secs(5), || !file.exists()), "the expired task was not swept");
}

#[test]
fn over_v1_prefer_respond_async_answers_202_with_a_task() {
    let tok = token();
    let (h, [ana, bob, _]) = served_home(&tok);
    let s = Server::start(&h, &[]);
    let prefer = [("Prefer", "respond-async")];
    // Without the preference: waited for, 200.
    let (st, _, v) = request_with(&s.addr, "POST", "/v1/exec/slow/wait", Some(&ana), Some(b"{}"), &[]);
    assert_eq!((st, v["result"]["waited"].as_bool()), (200, Some(true)), "{v}");
    // With it: 202, a task and where to find it.
    let (st, head, v) = request_with(&s.addr, "POST", "/v1/exec/slow/wait", Some(&ana), Some(b"{}"), &prefer);
    assert_eq!((st, v["task"]["status"].as_str()), (202, Some("working")), "{v}");
    let id = v["task"]["id"].as_str().unwrap().to_string();
    assert!(head.contains(&format!("location: /v1/tasks/{id}")), "{head}");
    assert!(head.contains("preference-applied: respond-async"), "{head}");
    let start = Instant::now();
    let done = loop {
        let (st, _, v) = request_with(&s.addr, "GET", &format!("/v1/tasks/{id}"), Some(&ana), None, &[]);
        assert_eq!(st, 200, "{v}");
        if v["task"]["status"] != "working" || start.elapsed() > Duration::from_secs(30) {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["task"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["waited"], true, "{done}");
    // The envelope form takes it too; a call that ends within the bound answers as always.
    let body = json!({ "pack_id": "slow", "verb_key": "nope", "args": {} }).to_string();
    let (st, _, v) = request_with(&s.addr, "POST", "/v1/exec", Some(&ana), Some(body.as_bytes()), &prefer);
    assert_eq!((st, v["code"].as_str()), (404, Some("no_policy")), "{v}");
    // DELETE cancels: the process group dies and the task ends cancelled, with the cancelled call's envelope.
    let (st, _, v) = request_with(&s.addr, "POST", "/v1/exec/slow/hang", Some(&ana), Some(b"{}"), &prefer);
    assert_eq!(st, 202, "{v}");
    let hung = v["task"]["id"].as_str().unwrap().to_string();
    assert!(eventually(Duration::from_secs(20), || survivors(&tok).len() == 2), "the command never started");
    let (st, _, v) = request_with(&s.addr, "DELETE", &format!("/v1/tasks/{hung}"), Some(&bob), None, &[]);
    assert_eq!(st, 404, "another Principal cancels nothing: {v}");
    let (st, _, v) = request_with(&s.addr, "DELETE", &format!("/v1/tasks/{hung}"), Some(&ana), None, &[]);
    assert_eq!((st, v["task"]["cancel_requested"].as_bool()), (202, Some(true)), "{v}");
    assert!(eventually(Duration::from_secs(10), || survivors(&tok).is_empty()), "{:?}", survivors(&tok));
    let v = v1_settled(&s.addr, &ana, &hung);
    assert_eq!(
        (v["task"]["status"].as_str(), v["result"]["code"].as_str()),
        (Some("cancelled"), Some("cancelled")),
        "{v}"
    );
    // The OpenAPI document says all of it.
    let (st, _, doc) = request_with(&s.addr, "GET", "/openapi.json", Some(&ana), None, &[]);
    assert_eq!(st, 200);
    let task_path = &doc["paths"]["/v1/tasks/{id}"];
    assert!(task_path["get"].is_object() && task_path["delete"].is_object(), "{task_path}");
    for p in ["/v1/exec", "/v1/exec/slow/hang"] {
        let accepted = &doc["paths"][p]["post"]["responses"]["202"]["content"]["application/json"]["schema"];
        assert_eq!(accepted["$ref"], "#/components/schemas/TaskAnswer", "{p}");
        assert!(doc["paths"][p]["post"]["description"].as_str().unwrap().contains("Prefer: respond-async"));
    }
    // Once ended, a DELETE changes nothing.
    let (st, _, v) = request_with(&s.addr, "DELETE", &format!("/v1/tasks/{hung}"), Some(&ana), None, &[]);
    assert_eq!((st, v["task"]["status"].as_str()), (200, Some("cancelled")), "{v}");
}

#[test]
fn a_file_store_task_whose_server_died_is_settled_unknown_by_the_next_one() {
    let tok = token();
    let (h, [ana, ..]) = served_home(&tok);
    let mut first = Server::start(&h, &[]);
    let id = task_id(&call(&first.addr, &ana, "slow__nap", true));
    first.kill();
    let next = Server::start(&h, &[]);
    let done = settled(&next.addr, &ana, &id, Duration::from_secs(10));
    assert_eq!(done["result"]["status"], "failed", "{done}");
    assert_eq!(done["result"]["error"]["data"]["outcome"], "unknown", "{done}");
}

#[test]
fn sigterm_lets_a_running_task_finish() {
    let tok = token();
    let (h, [ana, ..]) = served_home(&tok);
    let mut first = Server::start(&h, &[]);
    let id = task_id(&call(&first.addr, &ana, "slow__wait", true));
    // The server stops taking connections, then lets the task's call end and records it before it exits.
    assert_eq!(first.terminate(), Some(0), "{}", first.log());
    let next = Server::start(&h, &[]);
    let done = get(&next.addr, &ana, &id);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(done["result"]["result"]["structuredContent"]["waited"], true, "{done}");
}

#[test]
fn a_cancelled_composite_task_stops_its_component() {
    let h = Home::new();
    let id = crate::composite::install_guest_with(&h, "test-loop", &["sleep", "ok"], None, |f| {
        f.surface["verbs"]["sleep"]["long"] = json!(true);
    });
    h.write_store("sandbox.json", r#"{ "timeout_ms": 600000 }"#);
    let ana = principal(&h, "ana", "acme", crate::serve::ALL, false);
    let s = Server::start(&h, &[]);
    let prefer = [("Prefer", "respond-async")];
    // `sleep` blocks in a WASI host call for an hour; only the cancellation ends it.
    let (st, _, v) =
        request_with(&s.addr, "POST", &format!("/v1/exec/{id}/sleep"), Some(&ana), Some(b"{}"), &prefer);
    assert_eq!(st, 202, "{v}");
    let task = v["task"]["id"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(300));
    let (st, _, v) = request_with(&s.addr, "DELETE", &format!("/v1/tasks/{task}"), Some(&ana), None, &[]);
    assert_eq!(st, 202, "{v}");
    let start = Instant::now();
    let v = v1_settled(&s.addr, &ana, &task);
    assert_eq!(
        (v["task"]["status"].as_str(), v["result"]["code"].as_str()),
        (Some("cancelled"), Some("cancelled")),
        "{v}"
    );
    eprintln!("the composite stopped {:?} after the cancel", start.elapsed());
    // The component is not wedged: the next call runs.
    let (st, _, v) =
        request_with(&s.addr, "POST", &format!("/v1/exec/{id}/ok"), Some(&ana), Some(b"{}"), &[]);
    assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
}

/// `GET /v1/tasks/ID` until the task no longer works (10 s at most): its last answer.
fn v1_settled(addr: &str, token: &str, id: &str) -> Value {
    let start = Instant::now();
    loop {
        let (_, _, v) = request_with(addr, "GET", &format!("/v1/tasks/{id}"), Some(token), None, &[]);
        if v["task"]["status"] != "working" || start.elapsed() > Duration::from_secs(10) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
