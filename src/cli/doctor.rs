//! `hcpx doctor`: health of the runtime and the store. Exit 0 healthy, 2 degraded but usable, 1 broken.

use super::{exit, open_store};
use crate::output::Printer;
use crate::report::{Report, Text};
use hcpx_runtime::report::{DoctorReport, Health};
use hcpx_runtime::Runtime;

/// Runs `hcpx doctor`: renders the runtime's doctor report (the same one `hcp.doctor` returns).
pub fn run(p: &Printer) -> anyhow::Result<u8> {
    let store = open_store()?;
    let principal = super::exec::local_principal(&store)?;
    Ok(p.report(&Runtime::new(store).doctor(&principal)))
}

impl Report for DoctorReport {
    fn text(&self, out: &Text<'_>) {
        for c in &self.checks {
            out.data(&format!("{:<8} {}: {}", c.status.as_str(), c.check, c.detail));
        }
    }

    fn exit(&self) -> u8 {
        match self.status {
            Health::Error => exit::FAILURE,
            Health::Warning => exit::WARNING,
            Health::Ok => exit::OK,
        }
    }
}
