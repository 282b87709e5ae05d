//! `hcpx doctor`: health of the runtime and the store. Exit 0 healthy, 2 degraded but usable, 1 broken.

use super::{exit, open_store};
use crate::output::Printer;
use hcpx_runtime::report::Health;
use hcpx_runtime::Runtime;

/// Runs `hcpx doctor`: renders the runtime's doctor report (the same one `hcp.doctor` returns).
pub fn run(p: &Printer) -> anyhow::Result<u8> {
    let store = open_store()?;
    let principal = super::exec::local_principal(&store)?;
    let report = Runtime::new(store).doctor(&principal);
    if p.json {
        p.json_doc(&report);
    } else {
        for c in &report.checks {
            p.data(&format!("{:<8} {}: {}", c.status.as_str(), c.check, c.detail));
        }
    }
    Ok(match report.status {
        Health::Error => exit::FAILURE,
        Health::Warning => exit::WARNING,
        Health::Ok => exit::OK,
    })
}
