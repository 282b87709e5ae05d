//! `hcpx update ID [--tag T] [--yes]`: shows what moving a registry pack to another tag changes in its
//! Policy, and applies it only with `--yes` (the same signer is required either way).

use serde_json::json;

use super::{exit, fail, open_store, UpdateArgs};
use crate::output::Printer;
use hcpx_registry::update;

/// Runs `hcpx update`.
pub fn run(p: &Printer, a: &UpdateArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let how = update::UpdateOptions { apply: a.yes, allow_downgrade: a.allow_downgrade };
    let report = match update::update(&store, &a.id, a.tag.as_deref(), &a.registry.options(), how) {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if p.json {
        p.json_doc(&json!({ "ok": true, "update": report }));
        return Ok(exit::OK);
    }
    if report.from_digest == report.to_digest {
        p.message(&format!("{} is up to date: {} is {}", report.id, report.to, report.to_digest));
        return Ok(exit::OK);
    }
    p.message(&format!(
        "{}: {} ({}) -> {} ({}), signed by {}",
        report.id, report.from, report.from_digest, report.to, report.to_digest, report.signer
    ));
    if report.changes.is_empty() {
        p.message("Policy changes: none widen its reach (no new command or write, no confirm dropped, the same credential family, network, sockets, read paths, bin, workspace mode and agent_env)");
    } else {
        p.message("Policy changes:");
        for c in &report.changes {
            p.message(&format!("  {}", c.describe()));
        }
    }
    if report.applied {
        p.message(&format!("updated {} to {}", report.id, report.to_digest));
    } else {
        p.message(&format!(
            "not applied: review the changes, then run hcpx update {} --tag {} --yes",
            report.id,
            report.to.rsplit(':').next().unwrap_or("")
        ));
    }
    Ok(exit::OK)
}
