//! The bootstrap pack `hcp-cli`, built into the runtime (execution.md): its reads answer in-process, and the
//! commands that would change the store answer `deferred_to_cli: true` with a hint, since the CLI process owns it.

use serde_json::{json, Map, Value};

use super::Runtime;
use crate::model::grants::Capability;
use crate::model::wire::parse_bool;
use crate::model::{Code, Envelope, Principal, ResultEnvelope};
use crate::pack::Operation;

/// The bootstrap pack's id.
pub const BOOTSTRAP_ID: &str = "hcp-cli";

/// Its commands: name, operation, and the `hcpx` command a deferred one stands for.
pub const COMMANDS: &[(&str, Operation, &str)] = &[
    ("hcp.doctor", Operation::Read, ""),
    ("hcp.list", Operation::Read, ""),
    ("hcp.availability", Operation::Read, ""),
    ("hcp.skill", Operation::Read, ""),
    ("hcp.install", Operation::Write, "hcpx install DIR"),
    ("hcp.uninstall", Operation::Write, "hcpx uninstall ID"),
    ("hcp.activate", Operation::Write, "hcpx activate ID…"),
    ("hcp.deactivate", Operation::Write, "hcpx deactivate ID…"),
    ("hcp.allow", Operation::Write, "hcpx allow BIN…"),
    ("hcp.disallow", Operation::Write, "hcpx disallow BIN…"),
];

fn text_arg(args: &Map<String, Value>, name: &str, target: &str) -> Result<String, String> {
    match args.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(other) => Err(format!("argument `{name}` for {target} must be a string, not {other}")),
        None => Err(format!("missing required argument `{name}` for {target}")),
    }
}

impl Runtime {
    /// Runs a call on `hcp-cli`: grant check, arguments, then the answer; writes are audited like any other.
    pub(super) fn bootstrap(&self, principal: &Principal, env: &Envelope) -> ResultEnvelope {
        let verb = env.verb_key.as_str();
        let target = format!("{BOOTSTRAP_ID}.{verb}");
        let deny = |code: Code, msg: String| ResultEnvelope::denied(BOOTSTRAP_ID, verb, code, msg);
        let Some((_, op, cli)) = COMMANDS.iter().find(|(n, _, _)| *n == verb) else {
            return deny(Code::NoPolicy, format!("no policy for {verb}"));
        };
        let audit = |out: ResultEnvelope| self.audit(principal, env, *op, &env.args, out);
        let cap = if *op == Operation::Write { Capability::ExecWrite } else { Capability::ExecRead };
        if !principal.grants.allows(cap, BOOTSTRAP_ID, verb) {
            return audit(deny(Code::Denied, format!("denied: missing {} for {target}", cap.as_str())));
        }
        let allowed: &[&str] = match verb {
            "hcp.availability" => &["pack_id"],
            "hcp.skill" => &["pack_id", "full"],
            _ if *op == Operation::Write => &["dir", "pack_id", "pack_ids", "bins", "confirm", "apply"],
            _ => &[],
        };
        if let Some(k) = env.args.keys().find(|k| !allowed.contains(&k.as_str())) {
            return audit(deny(Code::InvalidArgs, format!("unknown argument `{k}` for {target}")));
        }
        let result = match verb {
            "hcp.doctor" => {
                let store = self.store();
                let state = store.state();
                let sandbox = store.sandbox();
                let grants = store.local_grants();
                let errors: Vec<String> = [
                    state.as_ref().err().map(|e| e.to_string()),
                    sandbox.as_ref().err().map(|e| e.to_string()),
                    grants.as_ref().err().map(|e| e.to_string()),
                ]
                .into_iter()
                .flatten()
                .collect();
                json!({
                    "ok": errors.is_empty(),
                    "home": store.home(),
                    "packs": state.as_ref().map(|s| s.packs.len()).ok(),
                    "allow": sandbox.as_ref().map(|s| s.allow.clone()).ok(),
                    "errors": errors,
                })
            }
            "hcp.list" => match self.store().state() {
                Ok(s) => {
                    json!({ "ok": true, "packs": s.packs.iter().map(|(id, p)| json!({ "id": id, "activated": p.activated })).collect::<Vec<_>>() })
                }
                Err(e) => return deny(Code::AdapterFailed, e.to_string()),
            },
            "hcp.availability" => match text_arg(&env.args, "pack_id", &target) {
                Ok(id) => json!(self.availability(principal, &id)),
                Err(e) => return deny(Code::InvalidArgs, e),
            },
            "hcp.skill" => {
                let id = match text_arg(&env.args, "pack_id", &target) {
                    Ok(id) => id,
                    Err(e) => return deny(Code::InvalidArgs, e),
                };
                let full = match env.args.get("full") {
                    None => false,
                    Some(Value::Bool(b)) => *b,
                    Some(Value::String(t)) if parse_bool(t).is_some() => parse_bool(t) == Some(true),
                    Some(other) => {
                        return deny(
                            Code::InvalidArgs,
                            format!("argument `full` for {target} must be true or false, not {other}"),
                        )
                    }
                };
                match self.store().load_pack(&id) {
                    Ok(Some(p)) => {
                        let (key, text) =
                            if full { ("text", &p.skill.text) } else { ("lead", &p.skill.lead) };
                        let mut doc = json!({ "ok": true, "pack_id": id });
                        doc[key] = json!(text);
                        doc
                    }
                    Ok(None) => return deny(Code::UnknownPack, format!("unknown pack {id}")),
                    Err(e) => return deny(Code::UnknownPack, e.to_string()),
                }
            }
            _ => {
                let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
                out.deferred_to_cli = Some(true);
                out.hint = Some(format!(
                    "this changes the store, which the CLI process owns: run `{cli}` in a terminal"
                ));
                return audit(out);
            }
        };
        let mut out = ResultEnvelope::empty(BOOTSTRAP_ID, verb, true);
        out.result = Some(result);
        out
    }
}
