//! `hcpx wrap BIN`: scaffolds a pack from a CLI on PATH (with its JSON flag, starter evals and proof script),
//! lists the CLI's options for the author, then points at the check loop.

use super::{exit, fail, WrapArgs};
use crate::output::Printer;
use hcpx_author::scaffold::scaffold;

/// Runs `hcpx wrap`.
pub fn run(p: &Printer, a: &WrapArgs) -> anyhow::Result<u8> {
    let s = match scaffold(&a.bin, a.out.as_deref(), a.id.as_deref()) {
        Ok(s) => s,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if p.json {
        p.json_doc(&serde_json::json!({ "ok": true, "scaffold": s }));
    } else {
        p.data(&format!(
            "wrote pack {} to {} with {} template command(s): {}",
            s.pack_id,
            s.dir,
            s.commands.len(),
            s.commands.join(", ")
        ));
        p.data(&format!("files: {}", s.files.join(", ")));
        let json = if s.json_flag.is_empty() { "none found".to_string() } else { s.json_flag.join(" ") };
        p.data(&format!("json flag (wrap.json_flag): {json}"));
        if !s.options.is_empty() {
            p.data(&format!("options `{} --help` lists, for cli[] and args:", s.bin));
            for o in &s.options {
                p.data(&format!("  {o}"));
            }
        }
        for w in &s.warnings {
            p.message(&format!("warning: {w}"));
        }
        p.message(&format!(
            "next: hcpx check {} --probe --agent, and fix until it scores 90 or more with no errors",
            s.dir
        ));
    }
    Ok(exit::OK)
}
