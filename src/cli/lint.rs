//! `hcpx lint DIR`: prints the lint report; exit 0 clean, 1 otherwise.

use super::{exit, LintArgs};
use crate::output::Printer;
use crate::report::{Report, Text};
use hcpx_pack::lint::{lint_dir, LintReport};

/// Runs `hcpx lint`.
pub fn run(printer: &Printer, args: &LintArgs) -> anyhow::Result<u8> {
    Ok(printer.report(&lint_dir(&args.dir)))
}

impl Report for LintReport {
    fn text(&self, out: &Text<'_>) {
        let name = self.pack_id.as_deref().unwrap_or("pack");
        for i in &self.issues {
            let where_ =
                if i.pointer.is_empty() { i.file.clone() } else { format!("{} {}", i.file, i.pointer) };
            out.data_labeled("error", "31", &format!("[{}] {where_}", i.kind.as_str()));
            out.data(&format!("  {}", i.message));
            out.data(&format!("  fix: {}", i.fix));
        }
        if self.ok {
            out.data(&format!("{name}: ok, no lint issues"));
        } else {
            out.data(&format!("{name}: {} lint issue(s)", self.issues.len()));
        }
    }

    fn exit(&self) -> u8 {
        if self.ok {
            exit::OK
        } else {
            exit::FAILURE
        }
    }
}
