//! `hcpx doctor`: health of the runtime and the store. Exit 0 healthy, 2 degraded but usable, 1 broken.

use super::{exit, open_store_to_read};
use crate::output::Printer;
use crate::report::{Report, Text};
use hcpx_model::{Grants, Invoker, Principal};
use hcpx_runtime::report::{DoctorReport, Health};
use hcpx_runtime::Runtime;

/// Runs `hcpx doctor`: renders the runtime's doctor report (the same one `hcp.doctor` returns).
pub fn run(p: &Printer) -> anyhow::Result<u8> {
    // Doctor reads: it never migrates the database it reports on (an older schema is its finding).
    let store = open_store_to_read()?;
    // Grants that do not read (or a database with no schema yet) are a finding of the report, not its end: the
    // local Principal then holds none.
    let principal = super::exec::local_principal(&store)
        .unwrap_or_else(|_| Principal::local(Grants::Only(Vec::new()), Invoker::Cli));
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
