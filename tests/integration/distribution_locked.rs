//! `hcpx install --locked` with no reference: every pack hcp.lock pins is installed at exactly its digest and
//! signer, composite and wrap, or none is (a pack refused names itself, and the store stays as it was).

use serde_json::Value;
use std::fs;

use crate::distribution::{example, key, publish, reference, run_json, store_snapshot, trust};
use crate::helpers::Home;
use crate::registry::{registry, unavailable};

#[test]
fn locked_with_no_reference_installs_every_pinned_pack_or_none() {
    if unavailable() {
        return;
    }
    let h = Home::new();
    let (private, public) = key(&h, "a.pem");
    trust(&h, "a", &public, &registry().addr);
    let composite = reference("all-composite", "1");
    let wrap = reference("all-ledger", "1");
    let d1 = publish(&h, &example(&h, "transit-composite"), &composite, Some(&private));
    let ledger = example(&h, "ledger");
    let d2 = publish(&h, &ledger, &wrap, Some(&private));
    run_json(&h, &["install", &composite], 0);
    run_json(&h, &["install", &wrap], 0);
    run_json(&h, &["lock"], 0);
    // No reference and no --locked is a usage error.
    let out = h.run(&["install"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    // A fresh host (the packs uninstalled): every pinned pack, at its digest, signed by the pinned key.
    run_json(&h, &["uninstall", "transit-composite"], 0);
    run_json(&h, &["uninstall", "ledger"], 0);
    let v = run_json(&h, &["install", "--locked"], 0);
    let got: Vec<(&str, &str, &str)> = v["packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pack_id"].as_str().unwrap(),
                p["digest"].as_str().unwrap(),
                p["signer"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, vec![("transit-composite", d1.as_str(), "a"), ("ledger", d2.as_str(), "a")], "{v}");
    let list = run_json(&h, &["list"], 0);
    assert_eq!(list["packs"].as_array().unwrap().len(), 2, "{list}");
    // The publisher moves the ledger's tag. The whole locked install is refused, naming the ledger; the
    // composite (installed and activated before the run) stays exactly as it was, and no ledger appears.
    run_json(&h, &["uninstall", "ledger"], 0);
    run_json(&h, &["activate", "transit-composite"], 0);
    let skill = fs::read_to_string(ledger.join("HARNESS.md")).unwrap();
    fs::write(ledger.join("HARNESS.md"), format!("{skill}\nAlso balances on Sundays.\n")).unwrap();
    let moved = publish(&h, &ledger, &wrap, Some(&private));
    let before = store_snapshot(&h);
    let state = fs::read_to_string(h.store().join("state.json")).unwrap();
    let v = run_json(&h, &["install", "--locked"], 1);
    let err = v["error"].as_str().unwrap();
    assert!(
        err.contains("pack ledger (") && err.contains(&moved) && err.contains("nothing was installed"),
        "{err}"
    );
    assert_eq!(store_snapshot(&h), before);
    assert_eq!(fs::read_to_string(h.store().join("state.json")).unwrap(), state);
    assert_eq!(run_json(&h, &["list"], 0)["packs"][0]["activated"], Value::Bool(true));
    // A lock file naming a pack twice, or nothing, installs nothing either.
    let lock: Value = serde_json::from_str(&fs::read_to_string(h.t.join("hcp.lock")).unwrap()).unwrap();
    let mut twice = lock.clone();
    twice["packs"] = Value::Array(vec![lock["packs"][0].clone(), lock["packs"][0].clone()]);
    fs::write(h.t.join("twice.lock"), twice.to_string()).unwrap();
    let v = run_json(&h, &["install", "--locked", "--lock-file", "twice.lock"], 1);
    assert!(v["error"].as_str().unwrap().contains("twice"), "{v}");
    fs::write(h.t.join("empty.lock"), r#"{"version": 1, "packs": []}"#).unwrap();
    let v = run_json(&h, &["install", "--locked", "--lock-file", "empty.lock"], 1);
    assert!(v["error"].as_str().unwrap().contains("pins no pack"), "{v}");
    assert_eq!(store_snapshot(&h), before);
}
