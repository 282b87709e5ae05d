//! `hcpx lint DIR`: prints the lint report; exit 0 clean, 1 otherwise.

use super::{exit, LintArgs};
use crate::output::Printer;
use hcpx_pack::lint::lint_dir;

/// Runs `hcpx lint`.
pub fn run(printer: &Printer, args: &LintArgs) -> anyhow::Result<u8> {
    let report = lint_dir(&args.dir);
    if printer.json {
        printer.json_doc(&report);
    } else {
        let name = report.pack_id.as_deref().unwrap_or("pack");
        for i in &report.issues {
            let where_ =
                if i.pointer.is_empty() { i.file.clone() } else { format!("{} {}", i.file, i.pointer) };
            printer.data_labeled("error", "31", &format!("[{}] {where_}", i.kind.as_str()));
            printer.data(&format!("  {}", i.message));
            printer.data(&format!("  fix: {}", i.fix));
        }
        if report.ok {
            printer.data(&format!("{name}: ok, no lint issues"));
        } else {
            printer.data(&format!("{name}: {} lint issue(s)", report.issues.len()));
        }
    }
    Ok(if report.ok { exit::OK } else { exit::FAILURE })
}
