//! `availability`, `commands`, `skill`, `title`: read-only views of an installed pack.

use serde::Serialize;
use serde_json::Value;

use super::{open_store, CommandsArgs, IdArgs, SkillArgs, TitleArgs};
use crate::output::Printer;
use crate::report::{CliError, Report, Text};
use hcpx_runtime::report::{CommandsReport, SkillReport};
use hcpx_runtime::Availability;
use hcpx_runtime::Runtime;

/// `hcpx availability ID`: installed, activated, bound, runnable, each with the reason when false.
pub fn availability(p: &Printer, a: &IdArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let principal = super::exec::local_principal(&store)?;
    let av = Runtime::new(store).availability(&principal, &a.id);
    Ok(p.report(&AvailabilityReport { av, ok: true }))
}

/// The availability, then `ok`.
#[derive(Serialize)]
struct AvailabilityReport {
    #[serde(flatten)]
    av: Availability,
    ok: bool,
}

impl Report for AvailabilityReport {
    fn text(&self, out: &Text<'_>) {
        for (flag, yes, note) in self.av.flags() {
            let why = note.map(|w| format!("  ({w})")).unwrap_or_default();
            out.data(&format!("{flag:<10} {}{why}", if yes { "yes" } else { "no" }));
        }
    }
}

/// `hcpx commands ID [VERB]`: renders the runtime's commands report: each command, its exec line and its
/// arguments (name, type, required, description).
pub fn commands(p: &Printer, a: &CommandsArgs) -> anyhow::Result<u8> {
    let report = Runtime::new(open_store()?)
        .commands_of(&a.id, a.verb.as_deref())
        .map_err(|d| CliError::new(d.message))?;
    Ok(p.report(&report))
}

impl Report for CommandsReport {
    fn text(&self, out: &Text<'_>) {
        for c in &self.commands {
            let gate = if c.confirm { ", needs confirm" } else { "" };
            out.data(&format!(
                "{} ({}{gate}): {}",
                c.verb_key,
                c.operation,
                c.description.as_deref().unwrap_or("")
            ));
            out.data(&format!("  {}", c.exec));
            let width = c.arguments.iter().map(|g| g.name.len()).max().unwrap_or(0);
            for g in &c.arguments {
                let mut what = g.ty.clone();
                if let Some(values) = &g.values {
                    let shown: Vec<String> = values
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                        .collect();
                    what = format!("{what}: {}", shown.join("|"));
                }
                let need = if g.required { ", required" } else { "" };
                out.data(&format!(
                    "    {:<width$}  {what}{need}  {}",
                    g.name,
                    g.description.as_deref().unwrap_or(""),
                ));
            }
        }
    }
}

/// `hcpx skill ID [--full]`: renders the runtime's skill report (the same one `hcp.skill` returns).
pub fn skill(p: &Printer, a: &SkillArgs) -> anyhow::Result<u8> {
    let report = Runtime::new(open_store()?).skill(&a.id, a.full).map_err(|d| CliError::new(d.message))?;
    Ok(p.report(&report))
}

impl Report for SkillReport {
    fn text(&self, out: &Text<'_>) {
        out.data(self.body().trim_end());
    }
}

/// `hcpx title`: the title, or null when the pack declares none.
#[derive(Serialize)]
struct TitleReport {
    ok: bool,
    title: Option<String>,
}

impl Report for TitleReport {
    fn text(&self, out: &Text<'_>) {
        if let Some(t) = &self.title {
            out.data(t);
        }
    }
}

/// `hcpx title ID VERB [--result JSON] -- k=v…`: prints nothing (exit 0) when the pack declares no title.
pub fn title(p: &Printer, a: &TitleArgs) -> anyhow::Result<u8> {
    let pack = Runtime::new(open_store()?).installed_pack(&a.id).map_err(|d| CliError::new(d.message))?;
    let Some(cmd) = pack.command(&a.verb) else {
        return Err(CliError::new(hcpx_runtime::fix::no_command_in(&pack, &a.verb).message).into());
    };
    let args =
        cmd.args.parse_words(&format!("{}.{}", pack.id, a.verb), &a.words).map_err(|e| CliError::new(e.0))?;
    let result = match &a.result {
        Some(r) => match serde_json::from_str::<Value>(r) {
            Ok(v) => Some(v),
            Err(_) => Some(Value::String(r.clone())),
        },
        None => None,
    };
    let title = hcpx_pack::command_title(&pack, &a.verb, &args, result.as_ref());
    Ok(p.report(&TitleReport { ok: true, title }))
}
