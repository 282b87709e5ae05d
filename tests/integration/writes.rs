//! Writes never lose data (#34 point 8): calls that write one workspace (the same pack, the same tenant) take
//! turns, on the file store and across replicas on PostgreSQL, and a workspace's disk is capped across calls.

use serde_json::Value;

use crate::escape::{evil, go};
use crate::helpers::{repo, Home};
use crate::serve::on_both_stores;

fn ledger(h: &Home) {
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
}

fn balance(h: &Home) -> String {
    let (code, v) = h.exec("ledger", "status", &[]);
    assert_eq!(code, 0, "{v}");
    v["result"]["balance"].as_str().unwrap_or_default().to_string()
}

on_both_stores! {
    /// Ten confirmed transfers at once, each its own `hcpx` process: every one answered ok moved the balance.
    fn concurrent_transfers_from_one_workspace_all_land / concurrent_transfers_from_one_workspace_all_land_postgres (h) {
        // The ledger starts at 100.00 EUR with its first transfer.
        ledger(&h);
        let answers: Vec<(i32, Value)> = std::thread::scope(|s| {
            let calls: Vec<_> = (0..10)
                .map(|_| s.spawn(|| h.exec("ledger", "transfer", &["amount=1.00", "payee=demo-transit", "confirm=true"])))
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        for (code, v) in &answers {
            assert_eq!((*code, v["ok"].as_bool()), (0, Some(true)), "{v}");
        }
        assert_eq!(balance(&h), "90.00", "ten transfers answered ok; the balance must show all ten");
        let (_, list) = h.exec("ledger", "list", &[]);
        assert_eq!(list["result"]["entries"].as_array().map(Vec::len), Some(10), "{list}");
    }
}

#[test]
fn a_workspace_is_capped_across_calls_not_only_per_call() {
    let h = Home::new();
    // Each call adds 3 MiB (under the cap of 8 on its own): the third passes the cap, and then nothing runs.
    evil(
        &h,
        "i=$(ls | grep -c '^part'); head -c 3145728 /dev/zero > part$i && echo \"wrote part$i\"",
        "write",
        "workspace",
    );
    h.write_store("sandbox.json", r#"{ "max_disk_mb": 8 }"#);
    let first = go(&h);
    assert_eq!(first["ok"], true, "{first}");
    let second = go(&h);
    assert_eq!(second["ok"], true, "{second}");
    let third = go(&h);
    assert_eq!(
        (third["ok"].as_bool(), third["code"].as_str()),
        (Some(false), Some("sandbox_denied")),
        "{third}"
    );
    let fourth = go(&h);
    assert_eq!(fourth["code"], "sandbox_denied", "{fourth}");
    let error = fourth["error"].as_str().unwrap_or("");
    assert!(error.contains("already holds") && error.contains("did not run"), "{fourth}");
    assert!(!h.store().join("workspaces/evil/part3").exists(), "the refused call ran");
}
