//! Activation per tenant: one install serves every tenant, and each runs only what is activated for it, on
//! every face (a call, `GET /v1/packs`, MCP's tool list) and on both stores.

use serde_json::{json, Value};
use std::time::{Duration, Instant};

use crate::helpers::{stdout_json, Home};
use crate::serve::{install_repo_packs, on_both_stores, principal, Server, ALL};

fn ok(h: &Home, args: &[&str]) -> String {
    let out = h.run(args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The names of the tools one MCP-over-HTTP session of `token` is offered.
fn mcp_tools(h: &Home, s: &Server, token: &str) -> Vec<String> {
    let url = format!("http://{}/mcp", s.addr);
    let r = crate::mcp::client(h, "tools.py", &[&url, token]);
    r["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
}

fn activated(list: &Value, id: &str) -> bool {
    list["packs"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap()["activated"].as_bool().unwrap()
}

on_both_stores! {
    fn a_pack_runs_only_for_the_tenants_it_is_activated_for / a_pack_runs_only_for_the_tenants_it_is_activated_for_postgres (h) {
        install_repo_packs(&h, &["transit-composite", "ledger"]);
        let alice = principal(&h, "alice", "acme", ALL, false);
        let bob = principal(&h, "bob", "beta", ALL, false);

        // transit-composite for everyone but beta; ledger for acme only.
        let said = ok(&h, &["deactivate", "transit-composite", "--tenant", "beta"]);
        assert!(said.contains("deactivated transit-composite for tenant beta"), "{said}");
        ok(&h, &["deactivate", "ledger"]);
        ok(&h, &["activate", "ledger", "--tenant", "acme"]);
        // A tenant no Principal belongs to is a typo, refused with the near name; nothing changes.
        let out = h.run(&["activate", "ledger", "--tenant", "acmee"]);
        assert_ne!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("no Principal belongs to tenant \"acmee\"") && err.contains("did you mean `acme`"), "{err}");

        // The operator's list: the store-wide choice and each tenant's own.
        let list = stdout_json(&h.run(&["list", "--json"]));
        let row = |id: &str| list["packs"].as_array().unwrap().iter().find(|p| p["id"] == id).unwrap().clone();
        assert_eq!((row("ledger")["activated"].clone(), row("ledger")["tenants"].clone()), (json!(false), json!({ "acme": true })));
        assert_eq!(row("transit-composite")["tenants"], json!({ "beta": false }));
        let table = ok(&h, &["list"]);
        assert!(table.lines().any(|l| l.starts_with("ledger") && l.contains("no (yes: acme)")), "{table}");

        let s = Server::start(&h, &[]);
        let plan = json!({ "from": "A", "to": "B" });
        let (st, v) = s.post("/v1/exec/transit-composite/plan", &alice, &plan);
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
        let (st, v) = s.post("/v1/exec/transit-composite/plan", &bob, &plan);
        assert_eq!((st, v["code"].as_str()), (409, Some("not_activated")), "{v}");
        assert_eq!(
            v["error"],
            "pack transit-composite not activated for tenant beta; its operator activates it with `hcpx activate transit-composite --tenant beta`"
        );
        let pay = json!({ "amount": "1", "payee": "p" });
        let (st, v) = s.post("/v1/exec/ledger/transfer", &alice, &pay);
        assert_eq!((st, v["code"].as_str()), (428, Some("confirm_required")), "{v}");
        let (st, v) = s.post("/v1/exec/ledger/transfer", &bob, &pay);
        assert_eq!((st, v["code"].as_str()), (409, Some("not_activated")), "{v}");

        // Each tenant's view of the packs, and of the tools.
        let (_, a) = s.get("/v1/packs", &alice);
        let (_, b) = s.get("/v1/packs", &bob);
        assert!(activated(&a, "ledger") && activated(&a, "transit-composite"), "{a}");
        assert!(!activated(&b, "ledger") && !activated(&b, "transit-composite"), "{b}");
        assert!(a["packs"][0].get("tenants").is_none(), "a tenant does not see the others' choices: {a}");
        let (_, v) = s.get("/v1/packs/transit-composite/availability", &bob);
        assert_eq!(v["availability"]["activated"], false, "{v}");
        let tools = mcp_tools(&h, &s, &alice);
        assert!(tools.iter().any(|t| t.starts_with("ledger")) && tools.iter().any(|t| t.starts_with("transit")), "{tools:?}");
        assert_eq!(mcp_tools(&h, &s, &bob), Vec::<String>::new());

        // Activated for beta while the server runs: its next calls run (the cache follows the change).
        ok(&h, &["activate", "transit-composite", "--tenant", "beta"]);
        let started = Instant::now();
        loop {
            let (st, v) = s.post("/v1/exec/transit-composite/plan", &bob, &plan);
            if st == 200 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(2), "still refused: {v}");
            std::thread::sleep(Duration::from_millis(50));
        }
        // A store-wide change leaves beta's own choice, and says so.
        let said = ok(&h, &["deactivate", "transit-composite"]);
        assert!(said.contains("tenant beta keeps its own choice for transit-composite"), "{said}");
        let started = Instant::now();
        loop {
            let (st, _) = s.post("/v1/exec/transit-composite/plan", &alice, &plan);
            if st == 409 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(2), "acme still runs a deactivated pack");
            std::thread::sleep(Duration::from_millis(50));
        }
        let (st, v) = s.post("/v1/exec/transit-composite/plan", &bob, &plan);
        assert_eq!(st, 200, "{v}");
    }
}
