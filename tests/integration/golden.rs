//! CLI output compared with expected files in `tests/expected/` (regenerate with `HCPX_BLESS=1 cargo test`).

use std::path::Path;

use crate::helpers::{repo, set, Fixture, Home, TestDir};

/// Compares `actual` with `tests/expected/<name>`, after replacing the temp dir with `$TMP`.
fn golden(name: &str, actual: &str, tmp: &Path) {
    let actual = actual.replace(&tmp.display().to_string(), "$TMP");
    let path = repo().join("tests/expected").join(name);
    if std::env::var_os("HCPX_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from the expected file:\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

#[test]
fn lint_text_and_json() {
    let t = TestDir::new();
    let mut f = Fixture::wrap();
    set(&mut f.policy, "/verbs/list/confirm", serde_json::json!(true));
    set(&mut f.surface, "/verbs/list/cli", serde_json::json!(["other", "list"]));
    let dir = f.write(t.path());
    let text = crate::helpers::hcpx(t.path(), &["lint", dir.to_str().unwrap()]);
    golden("lint-two-issues.txt", &String::from_utf8_lossy(&text.stdout), t.path());
    let json = crate::helpers::hcpx(t.path(), &["lint", dir.to_str().unwrap(), "--json"]);
    golden("lint-two-issues.json", &String::from_utf8_lossy(&json.stdout), t.path());
}

#[test]
fn commands_and_availability_text() {
    let h = Home::new();
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    let out = h.run(&["commands", "ledger"]);
    golden("commands-ledger.txt", &String::from_utf8_lossy(&out.stdout), h.t.path());
    let out = h.run(&["availability", "ledger"]);
    golden("availability-ledger-inactive.txt", &String::from_utf8_lossy(&out.stdout), h.t.path());
}
