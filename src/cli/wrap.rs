//! `hcpx wrap BIN`: scaffolds a pack from a CLI on PATH, then points at the check loop.

use super::{exit, fail, WrapArgs};
use crate::output::Printer;
use hcpx::scaffold::scaffold;

/// Runs `hcpx wrap`.
pub fn run(p: &Printer, a: &WrapArgs) -> anyhow::Result<u8> {
    let s = match scaffold(&a.bin, a.out.as_deref()) {
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
        p.message(&format!(
            "next: hcpx check {} --probe --agent, and fix until it scores 90 or more with no errors",
            s.dir
        ));
    }
    Ok(exit::OK)
}
