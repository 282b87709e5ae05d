//! `hcpx tasks [--after-ms MS] [--keep-ms MS]`: when a served call becomes a task and how long a task is kept
//! once it ended (`sandbox.json` `tasks`, docs/mcp.md), set as the other `sandbox.json` settings are: by command,
//! on whichever store `HCP_STORE` names.

use serde::Serialize;

use super::{open_store, TasksArgs};
use crate::output::Printer;
use crate::report::{OrFail, Report, Text};

/// Sets what is given, then reports the settings now (defaults filled in).
pub fn run(p: &Printer, a: &TasksArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let settings = if a.after_ms.is_some() || a.keep_ms.is_some() {
        store.edit_tasks(a.after_ms, a.keep_ms).or_fail()?
    } else {
        store.sandbox().or_fail()?.tasks.clone().unwrap_or_default()
    };
    Ok(p.report(&Tasks {
        ok: true,
        after_ms: settings.after().as_millis() as u64,
        keep_ms: settings.keep_ms(),
    }))
}

/// `hcpx tasks`: the settings in force.
#[derive(Serialize)]
struct Tasks {
    ok: bool,
    after_ms: u64,
    keep_ms: u64,
}

impl Report for Tasks {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "a served call becomes a task after {} ms (a command its pack marks long: at once); a task is kept {} ms after it ended",
            self.after_ms, self.keep_ms
        ));
    }
}
