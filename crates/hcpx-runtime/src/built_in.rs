//! Step 6 for a pack built into the runtime (`hcp-cli`, docs/spec.md §17, which the store returns beside the
//! installed packs): the runtime answers the call itself. A read returns the report its `hcpx` command prints,
//! for the calling Principal; a write changes nothing and answers `deferred_to_cli: true` with a hint naming the
//! `hcpx` line a person runs, since the CLI process owns the store. Everything before and after (grants,
//! arguments, the audit line of a write) is the pipeline's, as for any pack.

use serde_json::{json, Map, Value};

use super::job::Job;
use super::Runtime;
use crate::adapter::{AdapterResult, Plan};
use crate::model::Denial;
use crate::pack::Command;

impl Runtime {
    /// The answer of an admitted call of a built-in pack.
    pub(super) fn answer_built_in(&self, job: &Job) -> AdapterResult {
        match self.built_in_result(job) {
            Ok(ran) => ran,
            Err(d) => d.into(),
        }
    }

    fn built_in_result(&self, job: &Job) -> Result<AdapterResult, Denial> {
        let (principal, args) = (&job.principal, &job.args.values);
        let pack_id = args.get("pack_id").and_then(Value::as_str).unwrap_or_default();
        let result = match job.verb.as_str() {
            "hcp.doctor" => json!(self.doctor(principal)),
            "hcp.list" => json!(self.list_for(principal)?),
            "hcp.availability" => json!(self.availability(principal, pack_id)),
            "hcp.commands" => {
                let one = args.get("verb_key").and_then(Value::as_str);
                json!(self.commands_for(principal, pack_id, one)?)
            }
            "hcp.skill" => {
                json!(self.skill_for(principal, pack_id, args.get("full") == Some(&Value::Bool(true)))?)
            }
            _ => {
                let line = job
                    .command()
                    .and_then(|c| hcpx_line(c, args))
                    .ok_or_else(|| super::fix::no_command_in(&job.pack, &job.verb))?;
                let hint =
                    format!("this changes the store, which the CLI process owns: run `{line}` in a terminal");
                return Ok(AdapterResult {
                    ok: true,
                    deferred_to_cli: Some(hint),
                    ..AdapterResult::default()
                });
            }
        };
        Ok(AdapterResult { ok: true, result: Some(result), ..AdapterResult::default() })
    }
}

/// The `hcpx` line a deferred write stands for: the command's `cli` words, each filled from the call's checked
/// arguments and quoted for a shell.
fn hcpx_line(command: &Command, args: &Map<String, Value>) -> Option<String> {
    let words = command.cli.as_ref()?;
    let mut line = command.cli_bin.clone()?;
    for word in words {
        let filled = word.fill(|name| args.get(name).and_then(Value::as_str).map(str::to_string))?;
        line.push(' ');
        line.push_str(&crate::adapter::wrap::shell_quote(&filled));
    }
    Some(line)
}

/// What a call of a built-in pack would do (`hcpx exec --dry-run`): the runtime answers it in-process, with no
/// directory, process or component; a write changes nothing but its audit line.
pub(super) fn plan(job: &Job) -> Plan {
    let workdir = match job.command().and_then(|c| hcpx_line(c, &job.args.values)) {
        Some(line) => format!("none: answered in-process with the line to run, `{line}`"),
        None => "none: answered in-process from the store".to_string(),
    };
    Plan {
        program: format!("built-in:{}", job.pack.id),
        argv: vec![job.verb.clone(), Value::Object(job.args.values.clone()).to_string()],
        workdir,
        workdir_writable: false,
        env: Vec::new(),
    }
}
