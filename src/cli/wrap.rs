//! `hcpx wrap BIN`: scaffolds a pack from a CLI on PATH (with its JSON flag, starter evals and proof script),
//! lists the CLI's options for the author, then points at the check loop.

use serde::Serialize;

use super::WrapArgs;
use crate::output::Printer;
use crate::report::{OrFail, Report, Text};
use hcpx_author::scaffold::{scaffold, Scaffold};

/// Runs `hcpx wrap`.
pub fn run(p: &Printer, a: &WrapArgs) -> anyhow::Result<u8> {
    let s = scaffold(&a.bin, a.out.as_deref(), a.id.as_deref()).or_fail()?;
    Ok(p.report(&Wrapped { ok: true, scaffold: s }))
}

/// The pack scaffolded: its files, the CLI's JSON flag and options, and what to do next.
#[derive(Serialize)]
struct Wrapped {
    ok: bool,
    scaffold: Scaffold,
}

impl Report for Wrapped {
    fn text(&self, out: &Text<'_>) {
        let s = &self.scaffold;
        out.data(&format!(
            "wrote pack {} to {} with {} template command(s): {}",
            s.pack_id,
            s.dir,
            s.commands.len(),
            s.commands.join(", ")
        ));
        out.data(&format!("files: {}", s.files.join(", ")));
        let json = if s.json_flag.is_empty() { "none found".to_string() } else { s.json_flag.join(" ") };
        out.data(&format!("json flag (wrap.json_flag): {json}"));
        if !s.options.is_empty() {
            out.data(&format!("options `{} --help` lists, for cli[] and args:", s.bin));
            for o in &s.options {
                out.data(&format!("  {o}"));
            }
        }
        for w in &s.warnings {
            out.message(&format!("warning: {w}"));
        }
        out.message(&format!(
            "next: hcpx check {} --probe --agent, and fix until it scores 90 or more with no errors",
            s.dir
        ));
    }
}
