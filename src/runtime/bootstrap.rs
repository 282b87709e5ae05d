//! The bootstrap pack `hcp-cli`, built into the runtime (execution.md): its reads answer in-process, and the
//! commands that would change the store answer `deferred_to_cli: true` with a hint, since the CLI process owns it.

use serde_json::{json, Map, Value};

use super::Runtime;
use crate::model::grants::Capability;
use crate::model::wire::parse_bool;
use crate::model::{Code, Denial, Envelope, Principal, ResultEnvelope};
use crate::pack::Operation;

/// The bootstrap pack's id.
pub const BOOTSTRAP_ID: &str = "hcp-cli";

/// Its commands: name, operation, and the `hcpx` command a deferred one stands for.
pub const COMMANDS: &[(&str, Operation, &str)] = &[
    ("hcp.doctor", Operation::Read, ""),
    ("hcp.list", Operation::Read, ""),
    ("hcp.availability", Operation::Read, ""),
    ("hcp.skill", Operation::Read, ""),
    ("hcp.commands", Operation::Read, ""),
    ("hcp.install", Operation::Write, "hcpx install DIR"),
    ("hcp.uninstall", Operation::Write, "hcpx uninstall ID"),
    ("hcp.activate", Operation::Write, "hcpx activate ID…"),
    ("hcp.deactivate", Operation::Write, "hcpx deactivate ID…"),
    ("hcp.allow", Operation::Write, "hcpx allow BIN…"),
    ("hcp.disallow", Operation::Write, "hcpx disallow BIN…"),
];

fn text_arg(args: &Map<String, Value>, name: &str, target: &str) -> Result<String, Denial> {
    match args.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(invalid(format!("argument `{name}` for {target} must be a string, not {other}"))),
        None => Err(invalid(format!("missing required argument `{name}` for {target}"))),
    }
}

fn bool_arg(args: &Map<String, Value>, name: &str, target: &str) -> Result<bool, Denial> {
    match args.get(name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(t)) if parse_bool(t).is_some() => Ok(parse_bool(t) == Some(true)),
        Some(other) => {
            Err(invalid(format!("argument `{name}` for {target} must be true or false, not {other}")))
        }
    }
}

fn invalid(message: String) -> Denial {
    Denial::new(Code::InvalidArgs, message)
}

impl Runtime {
    /// Runs a call on `hcp-cli`: grant check, arguments, then the answer; writes are audited like any other.
    pub(super) fn bootstrap(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        let verb = env.verb_key.as_str();
        let Some((_, op, cli)) = COMMANDS.iter().find(|(n, _, _)| *n == verb) else {
            return super::fix::no_command(BOOTSTRAP_ID, verb, COMMANDS.iter().map(|(n, _, _)| *n))
                .into_envelope(BOOTSTRAP_ID, verb);
        };
        let out = match self.bootstrap_answer(principal, env, *op, cli) {
            Ok(out) => out,
            Err(d) => d.into_envelope(BOOTSTRAP_ID, verb),
        };
        self.audit(principal, env, *op, &env.args, out)
    }

    fn bootstrap_answer(
        &self,
        principal: &Principal,
        env: &Envelope,
        op: Operation,
        cli: &str,
    ) -> Result<ResultEnvelope, Denial> {
        let verb = env.verb_key.as_str();
        let target = format!("{BOOTSTRAP_ID}.{verb}");
        let cap = if op == Operation::Write { Capability::ExecWrite } else { Capability::ExecRead };
        if !principal.grants.allows(cap, BOOTSTRAP_ID, verb) {
            return Err(super::fix::missing_grant(principal, cap, BOOTSTRAP_ID, verb));
        }
        let allowed: &[&str] = match verb {
            "hcp.availability" => &["pack_id"],
            "hcp.skill" => &["pack_id", "full"],
            "hcp.commands" => &["pack_id"],
            _ if op == Operation::Write => &["dir", "pack_id", "pack_ids", "bins", "confirm", "apply"],
            _ => &[],
        };
        if let Some(k) = env.args.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(invalid(format!("unknown argument `{k}` for {target}")));
        }
        let result = match verb {
            "hcp.doctor" => json!(self.doctor(principal)),
            "hcp.list" => json!(self.list()?),
            "hcp.availability" => {
                json!(self.availability(principal, &text_arg(&env.args, "pack_id", &target)?))
            }
            "hcp.commands" => json!(self.commands(&text_arg(&env.args, "pack_id", &target)?)?),
            "hcp.skill" => {
                let id = text_arg(&env.args, "pack_id", &target)?;
                json!(self.skill(&id, bool_arg(&env.args, "full", &target)?)?)
            }
            _ => {
                let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
                out.deferred_to_cli = Some(true);
                out.hint = Some(format!(
                    "this changes the store, which the CLI process owns: run `{cli}` in a terminal"
                ));
                return Ok(out);
            }
        };
        let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
        out.result = Some(result);
        Ok(out)
    }
}
