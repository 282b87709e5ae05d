//! `hcpx eval`: cases run on the pipeline; failing, timing-out, non-JSON and over-budget commands fail their cases.

use serde_json::{json, Value};

use crate::helpers::{probe_fixture, repo, stdout_json, Home};

#[test]
fn the_example_packs_pass_their_evals() {
    let h = Home::new();
    for p in ["ledger", "transit", "transit-composite"] {
        let out = h.run(&["eval", repo().join("packs").join(p).to_str().unwrap(), "--json"]);
        let v = stdout_json(&out);
        assert_eq!(out.status.code(), Some(0), "{p}: {v:#}");
        assert_eq!(v["failed"], json!(0));
        assert!(v["p95_ms"].as_u64().unwrap() >= v["p50_ms"].as_u64().unwrap());
    }
    assert!(!h.store().join("packs").exists(), "eval never touches the user's store");
}

crate::serve::on_both_stores! {
    /// On the PostgreSQL store the operator's grant is its `sandbox.json` document, as every replica reads it.
    fn failing_slow_text_and_verbose_commands_fail_their_cases / failing_slow_text_and_verbose_commands_fail_their_cases_postgres (h) {
    let mut f = probe_fixture(&h.marker);
    f.files[0].1 = format!(
        "#!/bin/sh\necho ran >> '{}'\ncase \"$1\" in\n  look) echo '{{\"ok\":true,\"where\":\"here\"}}' ;;\n  echo) case \"$2\" in\n    slow) sleep 5 ;;\n    text) echo 'plain words' ;;\n    big) head -c 40000 /dev/zero | tr '\\0' x ;;\n    *) echo 'it broke' >&2; exit 2 ;;\n  esac ;;\nesac\n",
        h.marker.display()
    );
    f.evals = Some(json!({ "cases": [
        { "name": "passes", "verb": "look", "expect": { "ok": true, "json": true, "contains": ["here"] } },
        { "name": "command fails", "verb": "echo", "args": { "word": "boom" }, "expect": { "ok": true } },
        { "name": "times out", "verb": "echo", "args": { "word": "slow" }, "expect": { "ok": true } },
        { "name": "not json", "verb": "echo", "args": { "word": "text" }, "expect": { "ok": true, "json": true } },
        { "name": "over budget", "verb": "echo", "args": { "word": "big" }, "expect": { "ok": true, "max_tokens": 5000 } },
        { "name": "still a todo", "verb": "echo", "args": { "word": "TODO word" }, "expect": { "ok": true } },
        { "name": "gate holds", "verb": "put", "expect": { "ok": false, "error": "confirm required" } }
    ] }));
    let dir = f.write(h.t.path());
    // The operator's grant of the marker directory reaches the trial store eval runs in.
    h.write_store("sandbox.json", &json!({ "packs": { "probe": { "write": [h.marks()] } } }).to_string());
    let out = h.run(&["eval", dir.to_str().unwrap(), "--json", "--timeout", "1500"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    let by: std::collections::HashMap<String, Value> = v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_string(), c.clone()))
        .collect();
    assert_eq!(by["passes"]["passed"], json!(true));
    assert_eq!(by["gate holds"]["passed"], json!(true));
    assert!(by["command fails"]["reason"].as_str().unwrap().contains("it broke"), "{v:#}");
    assert!(by["times out"]["reason"].as_str().unwrap().starts_with("timed out"), "{v:#}");
    assert!(by["times out"]["ms"].as_u64().unwrap() < 3000);
    assert_eq!(by["not json"]["reason"], "expected JSON output, got text");
    assert!(by["over budget"]["reason"].as_str().unwrap().contains("over max_tokens 5000"), "{v:#}");
    assert_eq!(by["still a todo"]["ran"], json!(false));
    assert_eq!((v["passed"].clone(), v["failed"].clone()), (json!(2), json!(5)));
    assert!(
        v["ran_in"].as_str().unwrap().contains("the installed pack, read-only, in a throw-away store"),
        "{v}"
    );
    // The TODO case never ran the bin: 5 runs for the 6 cases that ran minus the gated one.
    assert_eq!(h.runs(), 5);
    let text = h.run(&["eval", dir.to_str().unwrap(), "--timeout", "1500"]);
    let s = String::from_utf8_lossy(&text.stdout);
    assert!(s.contains("PASS passes") && s.contains("FAIL not json: expected JSON output, got text"), "{s}");
    assert!(s.contains("probe: 2 of 7 case(s) passed"), "{s}");
}
}

#[test]
fn a_pack_without_cases_or_failing_lint_is_a_clear_error() {
    let h = Home::new();
    let dir = probe_fixture(&h.marker).write(h.t.path());
    let out = h.run(&["eval", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout_json(&out)["error"].as_str().unwrap().contains("no hcp.eval.json"));
}
