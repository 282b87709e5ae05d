//! `availability`, `commands`, `skill`, `title`: read-only views of an installed pack.

use serde_json::{json, Value};

use super::{exit, fail, open_store, CommandsArgs, IdArgs, SkillArgs, TitleArgs};
use crate::output::Printer;
use hcpx_runtime::Runtime;

/// `hcpx availability ID`: installed, activated, bound, runnable, each with the reason when false.
pub fn availability(p: &Printer, a: &IdArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let principal = super::exec::local_principal(&store)?;
    let av = Runtime::new(store).availability(&principal, &a.id);
    if p.json {
        let mut doc = json!(av);
        doc["ok"] = json!(true);
        p.json_doc(&doc);
    } else {
        for (flag, yes, note) in av.flags() {
            let why = note.map(|w| format!("  ({w})")).unwrap_or_default();
            p.data(&format!("{flag:<10} {}{why}", if yes { "yes" } else { "no" }));
        }
    }
    Ok(exit::OK)
}

/// `hcpx commands ID [VERB]`: renders the runtime's commands report: each command, its exec line and its
/// arguments (name, type, required, description).
pub fn commands(p: &Printer, a: &CommandsArgs) -> anyhow::Result<u8> {
    let report = match Runtime::new(open_store()?).commands_of(&a.id, a.verb.as_deref()) {
        Ok(r) => r,
        Err(d) => return Ok(fail(p, &d.message)),
    };
    if p.json {
        p.json_doc(&report);
        return Ok(exit::OK);
    }
    for c in &report.commands {
        let gate = if c.confirm { ", needs confirm" } else { "" };
        p.data(&format!(
            "{} ({}{gate}): {}",
            c.verb_key,
            c.operation,
            c.description.as_deref().unwrap_or("")
        ));
        p.data(&format!("  {}", c.exec));
        let width = c.arguments.iter().map(|g| g.name.len()).max().unwrap_or(0);
        for g in &c.arguments {
            let mut what = g.ty.clone();
            if let Some(values) = &g.values {
                let shown: Vec<String> =
                    values.iter().map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string)).collect();
                what = format!("{what}: {}", shown.join("|"));
            }
            let need = if g.required { ", required" } else { "" };
            p.data(&format!(
                "    {:<width$}  {what}{need}  {}",
                g.name,
                g.description.as_deref().unwrap_or(""),
            ));
        }
    }
    Ok(exit::OK)
}

/// `hcpx skill ID [--full]`: renders the runtime's skill report (the same one `hcp.skill` returns).
pub fn skill(p: &Printer, a: &SkillArgs) -> anyhow::Result<u8> {
    let report = match Runtime::new(open_store()?).skill(&a.id, a.full) {
        Ok(r) => r,
        Err(d) => return Ok(fail(p, &d.message)),
    };
    if p.json {
        p.json_doc(&report);
    } else {
        p.data(report.body().trim_end());
    }
    Ok(exit::OK)
}

/// `hcpx title ID VERB [--result JSON] -- k=v…`: prints nothing (exit 0) when the pack declares no title.
pub fn title(p: &Printer, a: &TitleArgs) -> anyhow::Result<u8> {
    use hcpx_runtime::bootstrap::{command, BOOTSTRAP_ID, COMMANDS};
    if a.id == BOOTSTRAP_ID {
        // The bootstrap pack declares no titles: its commands answer in-process.
        if command(&a.verb).is_none() {
            let d = hcpx_runtime::fix::no_command(BOOTSTRAP_ID, &a.verb, COMMANDS.iter().map(|c| c.name));
            return Ok(fail(p, &d.message));
        }
        if p.json {
            p.json_doc(&json!({ "ok": true, "title": null }));
        }
        return Ok(exit::OK);
    }
    let pack = match Runtime::new(open_store()?).installed_pack(&a.id) {
        Ok(x) => x,
        Err(d) => return Ok(fail(p, &d.message)),
    };
    let Some(cmd) = pack.command(&a.verb) else {
        return Ok(fail(p, &hcpx_runtime::fix::no_command_in(&pack, &a.verb).message));
    };
    let args = match cmd.args.parse_words(&format!("{}.{}", pack.id, a.verb), &a.words) {
        Ok(args) => args,
        Err(e) => return Ok(fail(p, &e.0)),
    };
    let result = match &a.result {
        Some(r) => match serde_json::from_str::<Value>(r) {
            Ok(v) => Some(v),
            Err(_) => Some(Value::String(r.clone())),
        },
        None => None,
    };
    let title = hcpx_pack::command_title(&pack, &a.verb, &args, result.as_ref());
    if p.json {
        p.json_doc(&json!({ "ok": true, "title": title }));
    } else if let Some(t) = title {
        p.data(&t);
    }
    Ok(exit::OK)
}
