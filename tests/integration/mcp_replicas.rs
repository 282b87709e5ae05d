//! `/mcp` on several `hcpx serve` replicas of one store, behind a balancer with no affinity (docs/hosting.md):
//! every HTTP request of one SDK client goes to the next replica in turn. The SDK's default client (protocol
//! 2026-07-28) gets no session: `server/discover`, tools/list, a read and the confirm gate's `input_required`
//! round each work wherever they land. An older client's session (2025-11-25, 2025-03-26) lives in the store, so
//! any replica serves it, until its DELETE ends it everywhere. A session is its Principal's: another Principal
//! naming its id, on the replica that holds it or on another, is answered as an unknown session (404) and can
//! neither use nor end it; a session idle past its bound is unknown to every replica.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Command;

use crate::helpers::{repo, Home};
use crate::serve::{on_both_stores, principal, request_raw, Server};

const READS: &[&str] = &["verb.exec.read:*"];
const WRITER: &[&str] = &["verb.exec.read:*", "verb.exec.write:*"];

/// `n` replicas of `h`'s store: on PostgreSQL each with a home of its own (its local cache), as on separate
/// machines; on the file store all on the one home, as processes of one machine share it.
pub(crate) fn replicas(h: &Home, n: usize) -> Vec<Server> {
    (0..n)
        .map(|i| {
            let home = if h.store_env.is_empty() { h.store() } else { h.t.join(&format!("r{i}/hcp-home")) };
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
            cmd.args(["serve", "--listen", "127.0.0.1:0"])
                .env("HCP_HOME", home)
                .envs(h.store_env())
                .current_dir(h.t.path());
            Server::launch(cmd)
        })
        .collect()
}

fn urls(rs: &[Server]) -> String {
    rs.iter().map(|r| format!("http://{}/mcp", r.addr)).collect::<Vec<_>>().join(",")
}

fn ledger(h: &Home) {
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
}

/// Runs `tests/mcp/SCRIPT HCPX HCP_HOME ARGS…` with the routes file set; (its report, the routes it took).
fn client(h: &Home, script: &str, args: &[&str]) -> (Value, Vec<Value>) {
    let routes = h.t.join("routes.json");
    let _ = std::fs::remove_file(&routes);
    // Bounded: a client whose answer is lost would otherwise wait for its SDK's read timeout.
    let report = crate::mcp::client_with(h, script, args, &[("HCPX_ROUTES_FILE", &routes)], Some(120));
    let routes = std::fs::read(&routes).map(|b| serde_json::from_slice(&b).unwrap()).unwrap_or(Value::Null);
    (report, routes.as_array().cloned().unwrap_or_default())
}

/// Each route's (replica, JSON-RPC method), for messages.
fn trail(routes: &[Value]) -> String {
    routes
        .iter()
        .map(|r| format!("{}:{}:{} ", r["replica"], r["rpc"].as_str().unwrap_or(""), r["status"]))
        .collect()
}

/// Every replica answered `rpc` at least once with a 2xx.
fn each_replica_answered(routes: &[Value], rpc: &str, n: u64) {
    for i in 0..n {
        assert!(
            routes.iter().any(|r| r["replica"] == i
                && r["rpc"] == rpc
                && r["status"].as_u64().is_some_and(|s| s < 300)),
            "replica {i} answered no {rpc}: {}",
            trail(routes)
        );
    }
}

/// Three rounds of tools/list and a read, each answered.
fn check_rounds(r: &Value) {
    let rounds = r["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 3, "{r}");
    for round in rounds {
        assert!(round["tools"].as_array().unwrap().iter().any(|t| t == "ledger__status"), "{round}");
        assert_eq!(round["read"]["is_error"], false, "{round}");
    }
}

#[test]
fn the_newest_mcp_client_needs_no_session_on_any_of_three_replicas_postgres() {
    if crate::pg::unavailable() {
        return;
    }
    let h = Home::postgres();
    ledger(&h);
    let alice = principal(&h, "alice", "acme", WRITER, false);
    let rs = replicas(&h, 3);

    let (r, routes) = client(&h, "replicas.py", &[&urls(&rs), &alice, "modern"]);
    assert_eq!(r["protocol"], "2026-07-28", "{r}");
    assert_eq!((r["discovered"].as_bool(), r["server"].as_str()), (Some(true), Some("hcpx")), "{r}");
    check_rounds(&r);
    assert!(
        routes.iter().all(|x| x["session_id_issued"] == false),
        "no session for 2026-07-28: {}",
        trail(&routes)
    );
    assert!(routes.iter().all(|x| x["named_session"] == false), "{}", trail(&routes));
    assert!(routes.iter().any(|x| x["rpc"] == "server/discover" && x["status"] == 200), "{}", trail(&routes));
    each_replica_answered(&routes, "tools/list", 3);
    each_replica_answered(&routes, "tools/call", 3);

    // The confirm gate's input_required round, its every request on the next replica: the retry that brings the
    // person's answer and the sealed state is answered by another replica than the one that asked.
    let (m, routes) = client(&h, "modern.py", &[&urls(&rs), &alice]);
    crate::approvals::check_modern(&h, &m);
    assert!(routes.iter().all(|x| x["session_id_issued"] == false), "{}", trail(&routes));
    let calls: Vec<&Value> = routes.iter().filter(|x| x["rpc"] == "tools/call").collect();
    assert!(calls.len() >= 8, "{}", trail(&routes));
    assert!(calls.windows(2).all(|w| w[0]["replica"] != w[1]["replica"]), "{}", trail(&routes));
}

/// An older client over three replicas: `initialize` on one, the requests of its session on the others, its
/// DELETE on another yet; afterwards no replica serves the session.
fn older_client_over_three_replicas(h: &Home, version: &str) {
    ledger(h);
    let alice = principal(h, "alice", "acme", READS, false);
    let rs = replicas(h, 3);
    let (r, routes) = client(h, "replicas.py", &[&urls(&rs), &alice, version]);
    assert_eq!(r["protocol"], version, "{r}");
    assert_eq!(r["server"], "hcpx", "{r}");
    check_rounds(&r);
    assert_eq!(r["session_ids"].as_array().unwrap().len(), 1, "one session: {r}");
    let init: Vec<&Value> = routes.iter().filter(|x| x["rpc"] == "initialize").collect();
    assert_eq!(init.len(), 1, "{}", trail(&routes));
    assert_eq!((&init[0]["session_id_issued"], &init[0]["status"]), (&json!(true), &json!(200)));
    let home = init[0]["replica"].clone();
    // Every request after it names the session, and each replica answered some of them.
    for x in routes.iter().filter(|x| x["rpc"] != "initialize") {
        assert_eq!(x["named_session"], true, "{x}: {}", trail(&routes));
    }
    for rpc in ["tools/list", "tools/call"] {
        each_replica_answered(&routes, rpc, 3);
    }
    let delete: Vec<&Value> = routes.iter().filter(|x| x["http"] == "DELETE").collect();
    assert_eq!(delete.len(), 1, "{}", trail(&routes));
    assert!(delete[0]["status"].as_u64().is_some_and(|s| s < 300), "{}", trail(&routes));
    assert_ne!(delete[0]["replica"], home, "ended on another replica than it began: {}", trail(&routes));
    assert_eq!(r["after_delete"], json!([404, 404, 404]), "a deleted session is unknown everywhere: {r}");
}

on_both_stores! {
    fn an_mcp_session_of_2025_11_25_is_served_by_any_replica / an_mcp_session_of_2025_11_25_is_served_by_any_replica_postgres (h) {
        older_client_over_three_replicas(&h, "2025-11-25");
    }
}

on_both_stores! {
    fn an_mcp_session_of_2025_03_26_is_served_by_any_replica / an_mcp_session_of_2025_03_26_is_served_by_any_replica_postgres (h) {
        older_client_over_three_replicas(&h, "2025-03-26");
    }
}

/// A client on 2025-11-25 asked by the server for the person's approval (`elicitation/create`, in the call's
/// response stream) answers with a POST of its own, which the balancer sends to another replica than the one
/// waiting for it: the answer still reaches the question, the approval runs the write once, the refusal nothing.
fn older_client_answers_through_another_replica(h: &Home) {
    ledger(h);
    let alice = principal(h, "alice", "acme", WRITER, false);
    let rs = replicas(h, 3);
    let (r, routes) = client(h, "elicit.py", &[&urls(&rs), &alice]);
    crate::mcp::check_elicitation(h, &r);
    let mut pairs = Vec::new();
    for (i, call) in routes.iter().enumerate().filter(|(_, x)| x["rpc"] == "tools/call") {
        let answer = routes[i..]
            .iter()
            .find(|x| x["rpc"] == "response")
            .unwrap_or_else(|| panic!("{}", trail(&routes)));
        assert!(answer["status"].as_u64().is_some_and(|s| s < 300), "{}", trail(&routes));
        pairs.push((call["replica"].clone(), answer["replica"].clone()));
    }
    assert_eq!(pairs.len(), 2, "{}", trail(&routes));
    assert!(pairs.iter().any(|(c, a)| c != a), "an answer went to another replica: {}", trail(&routes));
}

on_both_stores! {
    fn an_older_client_answers_the_persons_question_through_any_replica / an_older_client_answers_the_persons_question_through_any_replica_postgres (h) {
        older_client_answers_through_another_replica(&h);
    }
}

/// A request in session `session` (or none) of protocol 2025-11-25 → (status, lowercased head, body).
fn mcp(
    addr: &str,
    method: &str,
    token: &str,
    session: Option<&str>,
    body: Option<&Value>,
) -> (u16, String, String) {
    let body = body.map(|b| b.to_string());
    let mut extra =
        vec![("Accept", "application/json, text/event-stream"), ("MCP-Protocol-Version", "2025-11-25")];
    if let Some(s) = session {
        extra.push(("Mcp-Session-Id", s));
    }
    request_raw(addr, method, "/mcp", Some(token), body.as_deref().map(str::as_bytes), &extra)
}

/// Opens a 2025-11-25 session on `addr` for `token`: its id.
fn open_session(addr: &str, token: &str) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let (st, head, body) = mcp(addr, "POST", token, None, Some(&init));
    assert_eq!(st, 200, "{head}{body}");
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .unwrap_or_else(|| panic!("no session id: {head}"))
        .trim()
        .to_string();
    let done = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let (st, head, _) = mcp(addr, "POST", token, Some(&id), Some(&done));
    assert_eq!(st, 202, "{head}");
    id
}

fn list(id: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {} })
}

fn status_call(id: u64) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "ledger__status", "arguments": {} } })
}

/// Whether `addr` answers tools/list in session `session` for `token`: the status, and the answer when 200.
fn lists(addr: &str, token: &str, session: &str) -> (u16, String) {
    let (st, _, body) = mcp(addr, "POST", token, Some(session), Some(&list(7)));
    (st, body)
}

on_both_stores! {
    fn another_principal_naming_a_session_id_is_answered_as_an_unknown_session / another_principal_naming_a_session_id_is_answered_as_an_unknown_session_postgres (h) {
        ledger(&h);
        let alice = principal(&h, "alice", "acme", READS, false);
        // bob is of the same tenant with the same grants: the session is alice's, not her tenant's.
        let bob = principal(&h, "bob", "acme", READS, false);
        let mallory = principal(&h, "mallory", "other", READS, false);
        let rs = replicas(&h, 2);
        let (a0, a1) = (rs[0].addr.as_str(), rs[1].addr.as_str());
        let session = open_session(a0, &alice);
        let (st, body) = lists(a0, &alice, &session);
        assert_eq!(st, 200, "{body}");
        assert!(body.contains("ledger__status"), "{body}");

        for thief in [&bob, &mallory] {
            // On the replica that holds the session in memory, and on one that would restore it from the store.
            for addr in [a0, a1] {
                let (st, body) = lists(addr, thief, &session);
                assert_eq!(st, 404, "a replayed session id is unknown to another Principal ({addr}): {body}");
                assert!(!body.contains("ledger__status"), "{body}");
                let (st, _, body) = mcp(addr, "POST", thief, Some(&session), Some(&status_call(8)));
                assert_eq!(st, 404, "{body}");
                let (st, _, body) = request_raw(addr, "GET", "/mcp", Some(thief), None, &[
                    ("Accept", "text/event-stream"), ("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", &session)]);
                assert_eq!(st, 404, "another's session has no stream for it either: {body}");
                let (st, _, body) = mcp(addr, "DELETE", thief, Some(&session), None);
                assert_eq!(st, 404, "nor can it end another's session: {body}");
                let answer = json!({ "jsonrpc": "2.0", "id": 0, "result": { "action": "accept", "content": { "approve": true } } });
                let (st, _, body) = mcp(addr, "POST", thief, Some(&session), Some(&answer));
                assert_eq!(st, 404, "nor answer what the server asks its owner: {body}");
            }
        }
        // alice's session is untouched: both replicas still serve it, and her read ran; nobody else's did.
        for addr in [a0, a1] {
            let (st, body) = lists(addr, &alice, &session);
            assert_eq!(st, 200, "{addr}: {body}");
            let (st, _, body) = mcp(addr, "POST", &alice, Some(&session), Some(&status_call(9)));
            assert_eq!(st, 200, "{body}");
            assert!(body.contains("\"isError\":false"), "{body}");
        }
        let audit = h.audit_log();
        assert!(!audit.contains("\"bob\"") && !audit.contains("\"mallory\""), "{audit}");
        // Answers nobody asked for are kept only so far: a client cannot fill the store with them.
        let answer = |id: u64| json!({ "jsonrpc": "2.0", "id": 1000 + id, "result": { "action": "decline" } });
        for i in 0..16 {
            assert_eq!(mcp(a1, "POST", &alice, Some(&session), Some(&answer(i))).0, 202, "{i}");
        }
        assert_eq!(mcp(a1, "POST", &alice, Some(&session), Some(&answer(16))).0, 429);
        // Her DELETE ends it everywhere.
        let (st, _, body) = mcp(a1, "DELETE", &alice, Some(&session), None);
        assert!(st < 300, "{st} {body}");
        for addr in [a0, a1] {
            assert_eq!(lists(addr, &alice, &session).0, 404, "{addr}");
        }
        // A session id that is not one (a path, a huge header) is unknown too, and reaches no file.
        for bad in ["../../principals", "x".repeat(300).as_str()] {
            assert_eq!(lists(a0, &alice, bad).0, 404, "{bad}");
        }
    }
}

/// Where the file store keeps MCP sessions.
fn session_files(h: &Home) -> Vec<PathBuf> {
    match std::fs::read_dir(h.store().join("mcp-sessions")) {
        Ok(d) => d.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

on_both_stores! {
    fn an_mcp_session_idle_past_its_bound_is_unknown_to_every_replica / an_mcp_session_idle_past_its_bound_is_unknown_to_every_replica_postgres (h) {
        use std::os::unix::fs::PermissionsExt;
        ledger(&h);
        let alice = principal(&h, "alice", "acme", READS, false);
        let rs = replicas(&h, 2);
        let (a0, a1) = (rs[0].addr.as_str(), rs[1].addr.as_str());
        let session = open_session(a0, &alice);
        assert_eq!(lists(a1, &alice, &session).0, 200);
        // The store keeps the session under a digest of its id, never the id itself (a dump names no session),
        // owner-only on the file store.
        if h.store_env.is_empty() {
            let files = session_files(&h);
            assert_eq!(files.len(), 1, "{files:?}");
            let dir = h.store().join("mcp-sessions");
            assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o077, 0, "owner-only directory");
            assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o077, 0, "owner-only file");
            let text = std::fs::read_to_string(&files[0]).unwrap();
            assert!(!text.contains(&session) && !files[0].to_string_lossy().contains(&session), "{text}");
            // Two hours without a request.
            let mut v: Value = serde_json::from_str(&text).unwrap();
            v["last_used_ms"] = json!(v["last_used_ms"].as_u64().unwrap() - 2 * 3600 * 1000);
            std::fs::write(&files[0], v.to_string()).unwrap();
        } else {
            let db = crate::pg::database_of(&h.store_env[0].1).to_string();
            let dump = crate::pg::cluster().psql(&db, "SELECT * FROM hcpx_mcp_sessions");
            assert!(dump.contains("alice") && !dump.contains(&session), "{dump}");
            crate::pg::cluster().psql(&db, "UPDATE hcpx_mcp_sessions SET last_used = now() - interval '2 hours'");
        }
        // Unknown everywhere: on the replica that restored it, and on the one that opened it and holds it.
        for addr in [a1, a0] {
            assert_eq!(lists(addr, &alice, &session).0, 404, "{addr}");
        }
        if h.store_env.is_empty() {
            assert!(session_files(&h).is_empty(), "an expired session is removed: {:?}", session_files(&h));
        }
    }
}
