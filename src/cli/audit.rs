//! `hcpx audit`: the audit log, newest last.

use serde_json::json;

use super::{exit, fail, open_store};
use crate::output::Printer;

/// Runs `hcpx audit`.
pub fn run(p: &Printer) -> anyhow::Result<u8> {
    let records = match open_store()?.audit() {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if p.json {
        p.json_doc(&json!({ "ok": true, "records": records }));
    } else if records.is_empty() {
        p.message("the audit log is empty");
    } else {
        for r in &records {
            let outcome = if r.ok { "ok" } else { r.code.map_or("failed", |c| c.as_str()) };
            p.data(&format!(
                "{}  {}@{} via {}  {}.{}  {outcome}  args {}",
                r.at,
                r.principal,
                r.tenant,
                r.invoker,
                r.pack_id,
                r.verb_key,
                r.args_sha256.get(..12).unwrap_or(&r.args_sha256)
            ));
        }
    }
    Ok(exit::OK)
}
