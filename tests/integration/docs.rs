//! Generated docs stay in step with the registries they come from.

use crate::helpers::repo;

#[test]
fn docs_lint_md_is_generated_from_the_registry() {
    let path = repo().join("docs/lint.md");
    let want = hcpx::lint::docs_markdown();
    if std::env::var_os("HCPX_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/lint.md is stale: run `HCPX_BLESS=1 cargo test docs_lint_md`");
}

#[test]
fn docs_rules_md_is_generated_from_the_registry() {
    let path = repo().join("docs/rules.md");
    let want = hcpx::check::docs_markdown();
    if std::env::var_os("HCPX_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/rules.md is stale: run `HCPX_BLESS=1 cargo test docs_rules_md`");
}
