//! What to do about a store document or log line that does not parse. Each fix is the safe one for what the
//! document holds: removing `grants.json` would grant every capability, removing `sandbox.json` would drop
//! the operator's settings, and removing an audit log would destroy the evidence, so no advice here ever says
//! to remove, empty or edit away a record (docs/security.md, Advice that never fails open).

/// The fix for the damaged document or log line at `path`, as `StoreError::Corrupt` names it: a path of the
/// file store (maybe with ` line N`), or a PostgreSQL store's document (`postgres:grants.json`) or rows.
pub fn corrupt_fix(path: &str) -> String {
    let in_db =
        path.starts_with("postgres:") || matches!(path, "audit" | "sense" | "audit head" | "audit intent");
    let file = path.split(" line ").next().unwrap_or(path).trim_start_matches("postgres:");
    let name = file.rsplit('/').next().unwrap_or(file);
    let (where_, how) = if in_db {
        let where_ = format!("the `{file}` document of the store's database (table hcpx_documents)");
        let how = format!(
            "correct {where_} in place (`hcpx store export DIR` writes the store out as files to compare)"
        );
        (where_, how)
    } else {
        (file.to_string(), "fix its JSON by hand, keeping a copy of it first".to_string())
    };
    let is_log = name.starts_with("audit.log")
        || name == "audit"
        || name.starts_with("audit row")
        || name.starts_with("audit/");
    if is_log {
        return "keep the log as it is: the line is evidence, and `hcpx audit` lists the readable rows around it; `hcpx audit verify` says whether the chain still holds; do not edit the log, and never remove it".into();
    }
    match name {
        "grants.json" => format!(
            "until it parses every call of the local Principal is refused; {how}, or replace it with exactly the grants to hold: `hcpx grant --only CAP:PACK…`; never remove it: without it the local Principal holds every grant"
        ),
        "principals.json" => format!(
            "until it parses no token authenticates; {how} (`hcpx principal list` reads it once it does); never remove it: that drops every Principal and its grants"
        ),
        "sandbox.json" => format!(
            "`hcpx config unset KEY` takes out a key it names (`hcpx config set KEY VALUE` sets a wrong value right); if it is not JSON at all, {how}; never remove it: that drops the operator's settings (the allow-list, `require`, per-pack paths and limits) for the defaults"
        ),
        "state.json" => format!(
            "{how} (`hcpx list` reads it once it parses); never remove it: that forgets every installed pack and its activation"
        ),
        "audit.head" | "audit head" => format!(
            "keep it and the log as they are and run `hcpx audit verify`; {how} only if it was damaged in storage; never remove it: without it the chain cannot be vouched for"
        ),
        "families.json" => format!(
            "{how}; never remove it: that forgets which pack owns each credential family, and another pack could claim one"
        ),
        "sense" | "sense.log" | "audit intent" => format!(
            "keep {where_} as it is; {how} only if it was damaged in storage; never remove it: its records would be lost"
        ),
        _ => format!("{how}; never remove it: what it records would be lost"),
    }
}

#[cfg(test)]
mod tests {
    use super::corrupt_fix;

    #[test]
    fn no_fix_removes_a_document_or_a_record() {
        for path in [
            "/h/grants.json",
            "postgres:grants.json",
            "/h/principals.json",
            "/h/sandbox.json",
            "/h/state.json",
            "/h/audit.log line 3",
            "/h/audit.log.2 line 1",
            "postgres:audit row 4",
            "audit",
            "/h/audit.head",
            "/h/tenants/acme/connections.json",
            "/h/families.json",
            "sense",
        ] {
            let fix = corrupt_fix(path);
            let lower = fix.to_lowercase();
            assert!(!lower.contains("or remove") && !lower.contains("delete"), "{path}: {fix}");
            assert!(lower.contains("never remove"), "{path}: {fix}");
        }
        assert!(corrupt_fix("/h/grants.json").contains("hcpx grant --only"));
        assert!(corrupt_fix("postgres:grants.json").contains("database"));
        assert!(!corrupt_fix("h/grants.json").contains("database"));
        assert!(corrupt_fix("/h/audit.log line 3").contains("hcpx audit verify"));
    }
}
