//! A served composite call finds nothing an earlier call left in its memory: `hcpx serve` runs composites on a
//! pooled engine, which hands the next call of the same component the same memory slot, reset in place (the
//! pages the last call dirtied copied back or zeroed, found by `PAGEMAP_SCAN` where the kernel has it, the rest
//! returned to the kernel). A guest that leaves a secret in a static, in small and large heap blocks and on its
//! stack, then scans its whole linear memory on the next call, as another tenant, must find none of it.

use serde_json::{json, Value};

use crate::helpers::Home;
use crate::serve::{principal, Server};

/// `test-escape` as a composite pack, its read `residue` taking an optional `secret` and `check`.
fn install(h: &Home) {
    crate::composite::install_guest_with(h, "test-escape", &["residue"], None, |f| {
        let text = json!({ "type": "string", "description": "Text" });
        f.surface["verbs"]["residue"]["args"] =
            json!({ "type": "object", "properties": { "secret": text, "check": text } });
    });
}

fn found(v: &Value, key: &str) -> Vec<String> {
    serde_json::from_value(v["result"][key].clone()).unwrap_or_else(|e| panic!("{key} in {v}: {e}"))
}

#[test]
fn a_served_composite_call_finds_nothing_an_earlier_call_left_in_its_memory() {
    let h = Home::new();
    install(&h);
    let alice = principal(&h, "alice", "acme", &["verb.exec.read:*"], false);
    let bob = principal(&h, "bob", "beta", &["verb.exec.read:*"], false);
    let s = Server::start(&h, &[]);
    for round in 0..4 {
        let secret = format!("acme-secret-{round}");
        // The scan works: within one call it finds what that call left.
        let (st, v) =
            s.post("/v1/exec/test-escape/residue", &alice, &json!({ "secret": secret, "check": "yes" }));
        assert_eq!(st, 200, "{v}");
        assert_eq!(found(&v, "after"), vec![secret.clone()], "the guest's scan finds its own marker: {v}");
        assert!(found(&v, "found").is_empty(), "round {round}: a call found an earlier call's secret: {v}");
        // The next call, another tenant's, on the same slot: nothing of it.
        let (st, v) = s.post("/v1/exec/test-escape/residue", &bob, &json!({}));
        assert_eq!(st, 200, "{v}");
        assert!(found(&v, "found").is_empty(), "round {round}: beta's call read acme's secret: {v}");
    }
}
