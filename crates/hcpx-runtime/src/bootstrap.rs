//! The bootstrap pack `hcp-cli`, built into the runtime (docs/spec.md §17): its reads answer in-process, and the
//! commands that would change the store answer `deferred_to_cli: true` with a hint, since the CLI process owns it.
//! One table gives each command's operation, description and argument schema, so `exec` accepts exactly what
//! `commands`, `skill` and `availability` say.

use serde_json::{json, Map, Value};
use std::sync::OnceLock;

use super::report::{argument_rows, exec_line_for, CommandRow, CommandsReport, SkillReport};
use super::Runtime;
use crate::args::ArgSpec;
use crate::model::grants::Capability;
use crate::model::{Code, Denial, Envelope, Principal, ResultEnvelope};
use crate::pack::Operation;

/// The bootstrap pack's id.
pub const BOOTSTRAP_ID: &str = "hcp-cli";

/// One command of `hcp-cli`.
pub struct BootCommand {
    pub name: &'static str,
    pub operation: Operation,
    pub description: &'static str,
    /// For a write: the `hcpx` line it stands for, `{arg}` filled from the call.
    pub cli: &'static str,
    /// Its arguments: name, JSON type, required, description, example.
    args: &'static [(&'static str, &'static str, bool, &'static str, &'static str)],
}

const PACK_ID: (&str, &str, bool, &str, &str) =
    ("pack_id", "string", true, "An installed pack id.", "ledger");

/// Its commands.
pub const COMMANDS: &[BootCommand] = &[
    BootCommand {
        name: "hcp.doctor",
        operation: Operation::Read,
        description: "Health of the runtime and its store.",
        cli: "",
        args: &[],
    },
    BootCommand {
        name: "hcp.list",
        operation: Operation::Read,
        description: "Installed packs and their state.",
        cli: "",
        args: &[],
    },
    BootCommand {
        name: "hcp.availability",
        operation: Operation::Read,
        description: "The four flags of a pack: installed, activated, bound, runnable.",
        cli: "",
        args: &[PACK_ID],
    },
    BootCommand {
        name: "hcp.skill",
        operation: Operation::Read,
        description: "A pack's Skill: its lead, or the whole text with full.",
        cli: "",
        args: &[PACK_ID, ("full", "boolean", false, "The whole Skill, not only its lead.", "")],
    },
    BootCommand {
        name: "hcp.commands",
        operation: Operation::Read,
        description: "A pack's commands with their arguments and a ready-to-run exec line.",
        cli: "",
        args: &[PACK_ID, ("verb_key", "string", false, "Only this command.", "")],
    },
    BootCommand {
        name: "hcp.install",
        operation: Operation::Write,
        description: "Install a pack from a directory (deferred: the CLI owns the store).",
        cli: "hcpx install {dir}",
        args: &[("dir", "string", true, "The pack directory.", "./mypack")],
    },
    BootCommand {
        name: "hcp.uninstall",
        operation: Operation::Write,
        description: "Remove an installed pack (deferred).",
        cli: "hcpx uninstall {pack_id}",
        args: &[PACK_ID],
    },
    BootCommand {
        name: "hcp.activate",
        operation: Operation::Write,
        description: "Activate an installed pack (deferred).",
        cli: "hcpx activate {pack_id}",
        args: &[PACK_ID],
    },
    BootCommand {
        name: "hcp.deactivate",
        operation: Operation::Write,
        description: "Deactivate a pack (deferred).",
        cli: "hcpx deactivate {pack_id}",
        args: &[PACK_ID],
    },
    BootCommand {
        name: "hcp.allow",
        operation: Operation::Write,
        description: "Allow a bare bin on PATH to run (deferred).",
        cli: "hcpx allow {bin}",
        args: &[("bin", "string", true, "A bare bin name, as a pack's wrap.bin gives it.", "sqlite3")],
    },
    BootCommand {
        name: "hcp.disallow",
        operation: Operation::Write,
        description: "Remove a bin from the allow-list (deferred).",
        cli: "hcpx disallow {bin}",
        args: &[("bin", "string", true, "A bare bin name.", "sqlite3")],
    },
];

/// The Skill of `hcp-cli`.
const SKILL: &str = "# hcp-cli\n\nThe runtime's own pack, built in (nothing to install or activate): see which packs are installed, whether one can run, its Skill and its commands. Commands that would change the store answer `deferred_to_cli: true` with a `hint` naming the `hcpx` line a person runs in a terminal.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `hcp.list` | which packs are installed and active |\n| `hcp.availability` | why a pack cannot run (`pack_id`) |\n| `hcp.commands` | a pack's commands and arguments (`pack_id`, `verb_key`) |\n| `hcp.skill` | how to use a pack (`pack_id`, `full`) |\n| `hcp.doctor` | the runtime's health |\n\n## Store changes\n\n`hcp.install` (`dir`), `hcp.uninstall`, `hcp.activate`, `hcp.deactivate` (`pack_id`), `hcp.allow` and `hcp.disallow` (`bin`) change nothing: they are audited and answer the `hcpx` line to run.\n";

impl BootCommand {
    /// Its argument schema, as a pack would declare it.
    pub fn schema(&self) -> Value {
        let mut props = Map::new();
        for (name, ty, _, description, example) in self.args {
            let mut p = json!({ "type": ty, "description": description });
            if !example.is_empty() {
                p["examples"] = json!([example]);
            }
            props.insert(name.to_string(), p);
        }
        let required: Vec<&str> = self.args.iter().filter(|a| a.2).map(|a| a.0).collect();
        json!({ "type": "object", "properties": props, "required": required })
    }

    /// Its compiled argument spec: what `exec` checks a call against (compiled once).
    pub fn spec(&self) -> &'static ArgSpec {
        static SPECS: OnceLock<Vec<ArgSpec>> = OnceLock::new();
        let specs = SPECS.get_or_init(|| {
            COMMANDS
                .iter()
                .map(|c| ArgSpec::compile(Some(&c.schema())).unwrap_or_else(|_| ArgSpec::none()))
                .collect()
        });
        let i = COMMANDS.iter().position(|c| c.name == self.name).unwrap_or(0);
        &specs[i]
    }

    /// The row `commands` reports for it.
    fn row(&self) -> CommandRow {
        let spec = self.spec();
        CommandRow {
            verb_key: self.name.to_string(),
            description: Some(self.description.to_string()),
            operation: self.operation,
            confirm: false,
            args: spec.schema().clone(),
            arguments: argument_rows(spec),
            exec: exec_line_for(BOOTSTRAP_ID, self.name, spec, false),
        }
    }

    /// The `hcpx` line a deferred write stands for, filled from the call's arguments.
    fn cli_line(&self, args: &Map<String, Value>) -> String {
        let mut line = self.cli.to_string();
        for (name, ..) in self.args {
            let value = args.get(*name).and_then(Value::as_str).map(crate::adapter::wrap::shell_quote);
            line = line.replace(&format!("{{{name}}}"), &value.unwrap_or_else(|| name.to_uppercase()));
        }
        line
    }
}

/// The command named `verb`.
pub fn command(verb: &str) -> Option<&'static BootCommand> {
    COMMANDS.iter().find(|c| c.name == verb)
}

/// `commands hcp-cli [VERB]`.
pub fn commands_report(verb: Option<&str>) -> Result<CommandsReport, Denial> {
    let rows = match verb {
        Some(v) => vec![command(v).ok_or_else(|| no_command(v))?.row()],
        None => COMMANDS.iter().map(BootCommand::row).collect(),
    };
    Ok(CommandsReport { ok: true, pack_id: BOOTSTRAP_ID.to_string(), commands: rows })
}

/// `skill hcp-cli [--full]`.
pub fn skill_report(full: bool) -> SkillReport {
    let lead = SKILL.split("\n## ").next().unwrap_or(SKILL).trim_end().to_string() + "\n";
    let (lead, text) = if full { (None, Some(SKILL.to_string())) } else { (Some(lead), None) };
    SkillReport { ok: true, pack_id: BOOTSTRAP_ID.to_string(), lead, text }
}

fn no_command(verb: &str) -> Denial {
    super::fix::no_command(BOOTSTRAP_ID, verb, COMMANDS.iter().map(|c| c.name))
}

fn text_arg(args: &Map<String, Value>, name: &str) -> String {
    args.get(name).and_then(Value::as_str).unwrap_or_default().to_string()
}

impl Runtime {
    /// Runs a call on `hcp-cli`: grant check, arguments, then the answer; writes are audited like any other.
    pub(super) fn bootstrap(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        let verb = env.verb_key.as_str();
        let Some(cmd) = command(verb) else {
            return no_command(verb).into_envelope(BOOTSTRAP_ID, verb);
        };
        let out = match self.bootstrap_answer(principal, env, cmd) {
            Ok(out) => out,
            Err(d) => d.into_envelope(BOOTSTRAP_ID, verb),
        };
        let call = super::finish::Audited {
            principal,
            env,
            operation: cmd.operation,
            args: &env.args,
            project: None,
        };
        self.audit(&call, out, None)
    }

    fn bootstrap_answer(
        &self,
        principal: &Principal,
        env: &Envelope,
        cmd: &BootCommand,
    ) -> Result<ResultEnvelope, Denial> {
        let verb = cmd.name;
        let cap =
            if cmd.operation == Operation::Write { Capability::ExecWrite } else { Capability::ExecRead };
        if !principal.grants.allows(cap, BOOTSTRAP_ID, verb) {
            return Err(super::fix::missing_grant(principal, cap, BOOTSTRAP_ID, verb));
        }
        let target = format!("{BOOTSTRAP_ID}.{verb}");
        let args =
            cmd.spec().check(&target, &env.args).map_err(|e| Denial::new(Code::InvalidArgs, e.0))?.values;
        let pack_id = text_arg(&args, "pack_id");
        let result = match verb {
            "hcp.doctor" => json!(self.doctor(principal)),
            "hcp.list" => json!(self.list_for(principal)?),
            "hcp.availability" => json!(self.availability(principal, &pack_id)),
            "hcp.commands" => {
                let one = args.get("verb_key").and_then(Value::as_str);
                json!(self.commands_for(principal, &pack_id, one)?)
            }
            "hcp.skill" => {
                json!(self.skill_for(principal, &pack_id, args.get("full") == Some(&Value::Bool(true)))?)
            }
            _ => {
                let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
                out.deferred_to_cli = Some(true);
                out.hint = Some(format!(
                    "this changes the store, which the CLI process owns: run `{}` in a terminal",
                    cmd.cli_line(&args)
                ));
                return Ok(out);
            }
        };
        let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
        out.result = Some(result);
        Ok(out)
    }
}
