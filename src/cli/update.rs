//! `hcpx update ID [--tag T] [--yes]`: shows what moving a registry pack to another tag changes in its
//! Policy, and applies it only with `--yes` (the same signer is required either way).

use serde::Serialize;

use super::UpdateArgs;
use crate::output::Printer;
use crate::report::{OrFail, Report, Text};
use hcpx_registry::update::{self, UpdateReport};

/// Runs `hcpx update`.
pub fn run(p: &Printer, a: &UpdateArgs) -> anyhow::Result<u8> {
    let store = super::compile::open_store_compiling(p)?;
    let how = update::UpdateOptions { apply: a.yes, allow_downgrade: a.allow_downgrade };
    let report = update::update(&store, &a.id, a.tag.as_deref(), &a.registry.options(), how).or_fail()?;
    if report.applied {
        super::compile::remember_installed(p, &store, std::slice::from_ref(&report.id));
    }
    Ok(p.report(&Updated { ok: true, update: report }))
}

/// The update: from and to which digest, what changes in the Policy, whether it was applied.
#[derive(Serialize)]
struct Updated {
    ok: bool,
    update: UpdateReport,
}

impl Report for Updated {
    fn text(&self, out: &Text<'_>) {
        let report = &self.update;
        if report.from_digest == report.to_digest {
            out.message(&format!("{} is up to date: {} is {}", report.id, report.to, report.to_digest));
            return;
        }
        out.message(&format!(
            "{}: {} ({}) -> {} ({}), signed by {}",
            report.id, report.from, report.from_digest, report.to, report.to_digest, report.signer
        ));
        if report.changes.is_empty() {
            out.message("Policy changes: none widen its reach (no new command or write, no confirm dropped, the same credential family, network, hosts, sockets, read paths, bin, workspace mode and agent_env)");
        } else {
            out.message("Policy changes:");
            for c in &report.changes {
                out.message(&format!("  {}", c.describe()));
            }
        }
        if report.applied {
            out.message(&format!("updated {} to {}", report.id, report.to_digest));
        } else {
            out.message(&format!(
                "not applied: review the changes, then run hcpx update {} --tag {} --yes",
                report.id,
                report.to.rsplit(':').next().unwrap_or("")
            ));
        }
    }
}
