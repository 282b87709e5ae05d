//! Generated docs stay in step with the registries they come from.

use crate::helpers::repo;

/// `HCPX_BLESS` rewrites the generated file, except in CI, where a stale file must fail.
pub fn bless(path: &std::path::Path, want: &str) {
    if std::env::var_os("HCPX_BLESS").is_some() {
        assert!(std::env::var_os("CI").is_none(), "HCPX_BLESS is refused in CI: regenerate docs by hand");
        std::fs::write(path, want).unwrap();
    }
}

#[test]
fn docs_lint_md_is_generated_from_the_registry() {
    let path = repo().join("docs/lint.md");
    let want = hcpx_pack::lint::docs_markdown();
    bless(&path, &want);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/lint.md is stale: run `HCPX_BLESS=1 cargo test docs_lint_md`");
}

#[test]
fn docs_rules_md_is_generated_from_the_registry() {
    let path = repo().join("docs/rules.md");
    let want = hcpx_author::check::docs_markdown();
    bless(&path, &want);
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(have == want, "docs/rules.md is stale: run `HCPX_BLESS=1 cargo test docs_rules_md`");
}
