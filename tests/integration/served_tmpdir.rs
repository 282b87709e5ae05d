//! A served wrap call's TMPDIR (#39 point 2): a server empties a call's directory and gives it to a later
//! call under a fresh name (no directory made and removed per call), but only when nothing of the first call
//! can reach it again, and always empty, `0700`, without following a link the call left, and gone when the
//! server stops.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::helpers::{Fixture, Home};
use crate::serve::{principal, Server, ALL};

/// A pack whose `leave` leaves what it can in its TMPDIR (files, a directory, mode 0777, a process that writes
/// there later when it can outlive the call), and whose `look` says what its own TMPDIR holds.
fn leaver(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "leaver", "name": "Leaver", "kind": "wrap", "cliBin": "leaver",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/leaver", "json_flag": [] },
        "verbs": {
            "leave": { "description": "Leave things in TMPDIR.", "cli": ["leaver", "leave"] },
            "look": { "description": "Say what TMPDIR holds.", "cli": ["leaver", "look"] }
        }
    });
    f.policy = json!({ "surface_id": "leaver", "verbs": { "leave": { "operation": "read" }, "look": { "operation": "read" } } });
    f.harness = "# Leaver\n\nLeaves things behind.\n".into();
    let script = r#"#!/bin/sh
t="$TMPDIR"
if [ "$1" = leave ]; then
  mkdir -p "$t/sub/deeper" && echo note > "$t/sub/deeper/note" && echo note > "$t/note"
  chmod 777 "$t"
  # Links out, for the emptying to follow if it would: to the pack's HOME and a file in it.
  ln -s "$HOME" "$t/home-link" && ln -s "$HOME/keep" "$t/keep-link" && mkdir "$t/sub/links" && ln -s "$HOME" "$t/sub/links/h"
  # A process that leaves the call's process group, and writes into this directory once the call is over.
  setsid sh -c 'sleep 0.4; echo late > "$0/late"' "$t" < /dev/null > /dev/null 2>&1 &
else
  sleep 0.8
fi
printf '{"tmp":"%s","ino":"%s","mode":"%s","holds":"%s"}\n' "$t" "$(stat -c %i "$t")" "$(stat -c %a "$t")" "$(ls -A "$t" | tr '\n' ' ')"
"#;
    f.files = vec![("bin/leaver".into(), script.into(), true)];
    h.install(&f, "leaver");
}

fn call(s: &Server, token: &str, verb: &str) -> Value {
    let (st, v) = s.post(&format!("/v1/exec/leaver/{verb}"), token, &json!({}));
    assert_eq!(st, 200, "{v}");
    v
}

/// Whether the call ran in a PID namespace of its own.
fn own_pid_namespace(v: &Value) -> bool {
    v["sandbox"]["layers"]["pid-namespace"] == "enforced"
}

#[test]
fn a_served_wrap_gets_an_emptied_tmpdir_only_when_nothing_of_an_earlier_call_can_reach_it() {
    let h = Home::new();
    leaver(&h);
    let token = principal(&h, "alice", "acme", ALL, false);
    let keep = h.store().join("workspaces/leaver/keep");
    std::fs::create_dir_all(keep.parent().unwrap()).unwrap();
    std::fs::write(&keep, "kept").unwrap();
    let mut s = Server::start(&h, &[]);
    let left = call(&s, &token, "leave");
    let looked = call(&s, &token, "look");
    let (first, second) = (&left["result"], &looked["result"]);
    assert_ne!(first["tmp"], second["tmp"], "a fresh name each call: {first} {second}");
    assert!(!std::path::Path::new(first["tmp"].as_str().unwrap()).exists(), "{first}");
    assert_eq!((second["mode"].as_str(), second["holds"].as_str()), (Some("700"), Some("")), "{second}");
    if own_pid_namespace(&left) {
        // The first call's directory, emptied: no directory made and removed per call.
        assert_eq!(first["ino"], second["ino"], "the directory is reused: {first} {second}");
    } else {
        eprintln!("note: no PID namespace for calls here; the reuse itself is not checked");
    }
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "kept", "the emptying followed a link out");
    // Stopped, the server removes the directories it kept.
    let kept = second["tmp"].as_str().unwrap().to_string();
    assert_eq!(s.terminate(), Some(0));
    assert!(!std::path::Path::new(&kept).exists(), "{kept} left behind");

    // Without a PID namespace of its own a call's processes can outlive it: its directory is never reused, so
    // what they write later reaches no other call.
    h.write_store("sandbox.json", &json!({ "disable": ["pid-namespace", "private-proc"] }).to_string());
    let s = Server::start(&h, &[]);
    let left = call(&s, &token, "leave");
    assert!(!own_pid_namespace(&left), "{left}");
    let looked = call(&s, &token, "look");
    let (first, second) = (&left["result"], &looked["result"]);
    assert_ne!(first["ino"], second["ino"], "not reused: {first} {second}");
    assert_eq!(second["holds"], "", "{second}");
    // The process the first call left behind is gone by now, its write refused.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2)
        && std::path::Path::new(first["tmp"].as_str().unwrap()).exists()
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!std::path::Path::new(first["tmp"].as_str().unwrap()).exists(), "{first}");
}
