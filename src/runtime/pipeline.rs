//! The pipeline of execution.md, one function per step, in the spec's order and under its names. Each step
//! returns its typed denial; nothing runs after one. What a step learns is handed to the next as a value
//! (`Resolved`, `Admitted`), never kept aside in a variable for later.

use serde_json::{Map, Value};
use std::sync::Arc;

use super::pass_through;
use super::{bootstrap, mint, scrub, ArgsInput, CallContext, Runtime};
use crate::adapter::{AdapterResult, Call, Env, ExecHooks};
use crate::args::{ArgSpec, CheckedArgs};
use crate::model::code::CONFIRM_REQUIRED;
use crate::model::digest::args_digest;
use crate::model::{Capability, Code, Denial, Envelope, MintedBinding, Principal, ResultEnvelope};
use crate::pack::{Command, Land, Operation, Pack, PolicyRow};
use crate::store::audit::AuditRecord;

/// What step 1 found: the installed pack, its Policy row for the call, and the arguments as given.
pub(super) struct Resolved {
    pack: Arc<Pack>,
    verb: String,
    /// The verb is a pass-through subcommand, not a named command.
    pass_through: bool,
    row: PolicyRow,
    activated: bool,
    component_sha256: Option<String>,
    /// The arguments: the JSON object, or the command-line words parsed against the command's schema. A
    /// parse error is reported when arguments are checked (after the capability), so every face denies in
    /// the same order.
    args: Result<Map<String, Value>, String>,
}

impl Resolved {
    /// The named command, or `None` for a pass-through subcommand.
    fn command(&self) -> Option<&Command> {
        if self.pass_through {
            None
        } else {
            self.pack.command(&self.verb)
        }
    }

    fn target(&self) -> String {
        format!("{}.{}", self.pack.id, self.verb)
    }
}

/// The arguments once checked: the declared values and the gates, plus a pass-through call's argv.
pub(super) struct Admitted {
    args: CheckedArgs,
    pass_argv: Vec<String>,
}

impl Runtime {
    /// The seven steps for one call. Once the Policy row is known, the result (a denial included) is audited
    /// when the row is a write (decisions.md §10).
    pub(super) fn pipeline(
        &self,
        principal: &Principal,
        env: &Envelope,
        input: ArgsInput<'_>,
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        let (pack_id, verb) = (env.pack_id.as_str(), env.verb_key.as_str());
        // Past the concurrency limit nothing runs, not even the lookup.
        let _slot = match self.slot() {
            Ok(s) => s,
            Err(d) => return d.into_envelope(pack_id, verb),
        };
        if pack_id == bootstrap::BOOTSTRAP_ID {
            return self.bootstrap_input(principal, env, input);
        }
        let resolved = match self.resolve(env, input) {
            Ok(r) => r,
            Err(d) => return d.into_envelope(pack_id, verb),
        };
        let out = self
            .admit_and_run(principal, env, &resolved, ctx, hooks)
            .unwrap_or_else(|d| d.into_envelope(pack_id, verb));
        let empty = Map::new();
        let args = resolved.args.as_ref().unwrap_or(&empty);
        self.audit(principal, env, resolved.row.operation, args, out)
    }

    fn admit_and_run(
        &self,
        principal: &Principal,
        env: &Envelope,
        r: &Resolved,
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
    ) -> Result<ResultEnvelope, Denial> {
        ensure_activated(r)?;
        authenticate(env, r)?;
        assert_capability(principal, r)?;
        let admitted = check_arguments(r)?;
        enforce_confirm(r, &admitted)?;
        let binding = self.mint_binding(principal, r, &admitted)?;
        let ran = self.run_adapter(principal, r, &admitted, &binding, ctx, hooks)?;
        Ok(structured_result(r, &admitted, ran, &binding))
    }

    /// Step 1: resolve the pack and the command's Policy row (a named command's, or the pass-through row).
    fn resolve(&self, env: &Envelope, input: ArgsInput<'_>) -> Result<Resolved, Denial> {
        let (pack_id, verb) = (env.pack_id.as_str(), env.verb_key.as_str());
        let unknown = || Denial::new(Code::UnknownPack, format!("unknown pack {pack_id}"));
        let state = self.store.state().map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?;
        let record = state.packs.get(pack_id).cloned().ok_or_else(unknown)?;
        let pack = self
            .pack(pack_id, &record)
            .map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?
            .ok_or_else(unknown)?;
        let (pass_through, row) = match pack.command(verb) {
            Some(c) => (false, c.policy),
            None => match pack.pass_through.as_ref().and_then(|p| p.policy.get(verb)) {
                Some(row) => (true, *row),
                None => return Err(Denial::new(Code::NoPolicy, format!("no policy for {verb}"))),
            },
        };
        let args = match input {
            ArgsInput::Json(a) => Ok(a.clone()),
            ArgsInput::Words(words) if pass_through => Ok(pass_through::words(words)),
            ArgsInput::Words(words) => match pack.command(verb) {
                Some(c) => c.args.parse_words(&format!("{pack_id}.{verb}"), words).map_err(|e| e.0),
                None => Err(format!("no policy for {verb}")),
            },
        };
        Ok(Resolved {
            pack,
            verb: verb.to_string(),
            pass_through,
            row,
            activated: record.activated,
            component_sha256: record.component_sha256,
            args,
        })
    }

    /// Step 5: mint the Binding from the pack's hub for this Principal (`mock` only when the call says so).
    fn mint_binding(
        &self,
        principal: &Principal,
        r: &Resolved,
        a: &Admitted,
    ) -> Result<MintedBinding, Denial> {
        mint(&self.store, &r.pack, principal, a.args.mock)
            .map_err(|e| Denial::new(Code::BindingFailed, e.to_string()))
    }

    /// Step 6: run the adapter in the sandbox, with the operator's sandbox settings and nothing else of the
    /// store.
    fn run_adapter(
        &self,
        principal: &Principal,
        r: &Resolved,
        a: &Admitted,
        binding: &MintedBinding,
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
    ) -> Result<AdapterResult, Denial> {
        let sandbox =
            self.store.sandbox().map_err(|e| Denial::new(Code::SandboxDenied, format!("sandbox: {e}")))?;
        let adapter = self.adapter(r.pack.kind).ok_or_else(|| {
            Denial::new(
                Code::AdapterFailed,
                format!(
                    "pack {} is kind {}, which this runtime cannot execute; only wrap and composite packs run here",
                    r.pack.id, r.pack.kind
                ),
            )
        })?;
        let command = r.command();
        let live_title =
            command.filter(|_| hooks.watching()).and_then(|c| c.title.render(&a.args.values, None));
        let layout = self
            .store
            .layout_for(&principal.tenant)
            .map_err(|e| Denial::new(Code::Denied, format!("denied: {e}")))?;
        let call = Call {
            env: Env { layout: &layout, sandbox: &sandbox, component_sha256: r.component_sha256.as_deref() },
            pack: &r.pack,
            verb_key: &r.verb,
            command,
            write: r.row.operation == Operation::Write,
            args: &a.args.values,
            pass_argv: &a.pass_argv,
            binding,
            project_dir: ctx.project_dir.as_deref(),
            principal,
            live_title: live_title.as_deref(),
            hooks,
            cancel: &ctx.cancel,
        };
        let ran = adapter.run(&call);
        hooks.exited(ran.exit_code);
        Ok(ran)
    }

    /// Step 7 (second half): a write, denied or not, appends its attribution tuple to the audit log. A write
    /// that cannot be audited is reported as failed: never an unrecorded write.
    pub(super) fn audit(
        &self,
        principal: &Principal,
        env: &Envelope,
        operation: Operation,
        args: &Map<String, Value>,
        out: ResultEnvelope,
    ) -> ResultEnvelope {
        if operation != Operation::Write {
            return out;
        }
        let rec = AuditRecord {
            at: crate::model::clock::now_rfc3339(),
            principal: principal.id.clone(),
            tenant: principal.tenant.clone(),
            invoker: principal.invoker,
            pack_id: env.pack_id.clone(),
            verb_key: env.verb_key.clone(),
            operation,
            ok: out.ok,
            code: out.code,
            args_sha256: args_digest(args),
        };
        match self.store.append_audit(&rec) {
            Ok(()) => out,
            Err(e) if out.ok => {
                let mut o = out;
                o.ok = false;
                o.code = Some(Code::AdapterFailed);
                o.error = Some(format!("the command ran but its audit line could not be written: {e}"));
                o
            }
            Err(_) => out,
        }
    }

    /// The bootstrap pack's commands take the same words as any command (no schema: `k=v`, `k:=json`).
    fn bootstrap_input(&self, principal: &Principal, env: &Envelope, input: ArgsInput<'_>) -> ResultEnvelope {
        match input {
            ArgsInput::Json(_) => self.bootstrap(principal, env),
            ArgsInput::Words(words) => {
                match ArgSpec::none().parse_words(&format!("{}.{}", env.pack_id, env.verb_key), words) {
                    Ok(args) => self.bootstrap(principal, &Envelope { args, ..env.clone() }),
                    Err(e) => Denial::new(Code::InvalidArgs, e.0).into_envelope(&env.pack_id, &env.verb_key),
                }
            }
        }
    }
}

/// Step 1 (end): the pack is activated on this store.
fn ensure_activated(r: &Resolved) -> Result<(), Denial> {
    if r.activated {
        Ok(())
    } else {
        Err(Denial::new(Code::NotActivated, format!("pack {} not activated", r.pack.id)))
    }
}

/// Step 2: the Principal was authenticated by its face; land `brain` needs a project id in scope.
fn authenticate(env: &Envelope, r: &Resolved) -> Result<(), Denial> {
    if r.row.land == Land::Brain && env.project_id.as_deref().is_none_or(str::is_empty) {
        return Err(Denial::new(Code::ProjectRequired, "privacy.land brain requires project_id"));
    }
    Ok(())
}

/// Step 3: assert the capability the row needs, scoped by pack and command.
fn assert_capability(principal: &Principal, r: &Resolved) -> Result<(), Denial> {
    let cap = if r.verb == "connect" {
        Capability::PackConnect
    } else if r.row.operation == Operation::Write {
        Capability::ExecWrite
    } else {
        Capability::ExecRead
    };
    if principal.grants.allows(cap, &r.pack.id, &r.verb) {
        Ok(())
    } else {
        Err(Denial::new(Code::Denied, format!("denied: missing {cap} for {}", r.target())))
    }
}

/// Between steps 3 and 4: the arguments match the command's schema (or the pass-through rules) before
/// anything runs.
fn check_arguments(r: &Resolved) -> Result<Admitted, Denial> {
    let invalid = |m: String| Denial::new(Code::InvalidArgs, m);
    let given = r.args.as_ref().map_err(|e| invalid(e.clone()))?;
    let target = r.target();
    match r.command() {
        Some(c) => {
            let args = c.args.check(&target, given).map_err(|e| invalid(e.0))?;
            Ok(Admitted { args, pass_argv: Vec::new() })
        }
        None => {
            let (args, pass_argv) = pass_through::args(&r.pack, &target, given)?;
            Ok(Admitted { args, pass_argv })
        }
    }
}

/// Step 4: a row with `confirm: true` runs only with `confirm: true` (or `apply: true`); the denial carries
/// the approval card.
fn enforce_confirm(r: &Resolved, a: &Admitted) -> Result<(), Denial> {
    if !r.row.confirm || a.args.confirmed {
        return Ok(());
    }
    let mut d = Denial::new(Code::ConfirmRequired, CONFIRM_REQUIRED);
    d.preview = r.command().and_then(|c| c.preview.as_ref()).map(|p| Box::new(p.render(&a.args.values)));
    Err(d)
}

/// Step 7 (first half): the structured result, with the done title, and no minted secret left in it.
fn structured_result(
    r: &Resolved,
    a: &Admitted,
    ran: AdapterResult,
    binding: &MintedBinding,
) -> ResultEnvelope {
    let mut out = ResultEnvelope::empty(&r.pack.id, &r.verb, ran.ok);
    out.code = ran.code;
    out.error = ran.error;
    out.stdout = ran.stdout;
    out.stderr = ran.stderr;
    out.truncated = ran.truncated;
    out.sandbox = ran.sandbox;
    if ran.ok {
        out.title = r
            .command()
            .and_then(|c| c.title.render(&a.args.values, Some(ran.result.as_ref().unwrap_or(&Value::Null))));
    }
    out.result = ran.result;
    scrub::scrub(&mut out, binding);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Grant, Grants, Invoker, PreviewKind};
    use serde_json::json;
    use std::path::Path;

    fn ledger() -> Arc<Pack> {
        Arc::new(Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("packs/ledger")).unwrap())
    }

    fn resolved(verb: &str, args: Value) -> Resolved {
        let pack = ledger();
        let row = pack.command(verb).unwrap().policy;
        Resolved {
            pack,
            verb: verb.into(),
            pass_through: false,
            row,
            activated: true,
            component_sha256: None,
            args: Ok(args.as_object().cloned().unwrap()),
        }
    }

    fn principal(grants: Grants) -> Principal {
        Principal { id: "ana".into(), tenant: "t".into(), grants, invoker: Invoker::Json }
    }

    fn grant(cap: Capability, verbs: Option<&[&str]>) -> Grants {
        Grants::Only(vec![Grant {
            capability: cap,
            pack_id: "ledger".into(),
            verb_keys: verbs.map(|v| v.iter().map(|s| s.to_string()).collect()),
        }])
    }

    #[test]
    fn step_1_refuses_a_pack_that_is_not_activated() {
        let mut r = resolved("status", json!({}));
        assert!(ensure_activated(&r).is_ok());
        r.activated = false;
        let d = ensure_activated(&r).unwrap_err();
        assert_eq!((d.code, d.message.as_str()), (Code::NotActivated, "pack ledger not activated"));
    }

    #[test]
    fn step_2_land_brain_needs_a_project_id() {
        let mut r = resolved("status", json!({}));
        let env = Envelope::new("ledger", "status", Map::new());
        assert!(authenticate(&env, &r).is_ok());
        r.row.land = Land::Brain;
        assert_eq!(authenticate(&env, &r).unwrap_err().code, Code::ProjectRequired);
        let with = Envelope { project_id: Some(String::new()), ..env.clone() };
        assert_eq!(authenticate(&with, &r).unwrap_err().code, Code::ProjectRequired);
        let with = Envelope { project_id: Some("p1".into()), ..env };
        assert!(authenticate(&with, &r).is_ok());
    }

    #[test]
    fn step_3_asks_the_capability_the_row_needs() {
        let read = resolved("status", json!({}));
        let write = resolved("transfer", json!({}));
        let connect = resolved("connect", json!({}));
        let reader = principal(grant(Capability::ExecRead, None));
        assert!(assert_capability(&reader, &read).is_ok());
        let d = assert_capability(&reader, &write).unwrap_err();
        assert_eq!(d.message, "denied: missing verb.exec.write for ledger.transfer");
        // `connect` is a write row, and still needs pack.connect, not verb.exec.write.
        let writer = principal(grant(Capability::ExecWrite, None));
        assert_eq!(assert_capability(&writer, &connect).unwrap_err().code, Code::Denied);
        assert!(assert_capability(&principal(grant(Capability::PackConnect, None)), &connect).is_ok());
        // Scoped to commands.
        let only_list = principal(grant(Capability::ExecRead, Some(&["list"])));
        assert!(assert_capability(&only_list, &read).is_err());
    }

    #[test]
    fn arguments_are_checked_and_a_word_parse_error_waits_for_this_step() {
        let ok = resolved("transfer", json!({"amount": "2.80", "payee": "demo-transit"}));
        assert!(check_arguments(&ok).is_ok());
        let missing = resolved("transfer", json!({"amount": "2.80"}));
        let d = check_arguments(&missing).err().unwrap();
        assert_eq!(d.code, Code::InvalidArgs);
        assert!(d.message.contains("payee"), "{}", d.message);
        let mut words = resolved("transfer", json!({}));
        words.args = Err("cannot parse `=x`".into());
        assert_eq!(check_arguments(&words).err().unwrap().message, "cannot parse `=x`");
    }

    #[test]
    fn step_4_confirm_gate_carries_the_card() {
        let r = resolved("transfer", json!({"amount": "2.80", "payee": "demo-transit"}));
        let a = check_arguments(&r).unwrap();
        let d = enforce_confirm(&r, &a).unwrap_err();
        assert_eq!((d.code, d.message.as_str()), (Code::ConfirmRequired, "confirm required"));
        let card = d.preview.unwrap();
        assert_eq!((card.kind, card.title.as_deref()), (PreviewKind::Payment, Some("Pay demo-transit")));
        let confirmed =
            resolved("transfer", json!({"amount": "2.80", "payee": "demo-transit", "confirm": true}));
        let a = check_arguments(&confirmed).unwrap();
        assert!(enforce_confirm(&confirmed, &a).is_ok());
        // A row without the gate needs nothing.
        let read = resolved("status", json!({}));
        assert!(enforce_confirm(&read, &check_arguments(&read).unwrap()).is_ok());
    }

    #[test]
    fn step_7_titles_and_scrubs_the_result() {
        let r = resolved("transfer", json!({"amount": "2.80", "payee": "demo-transit", "confirm": true}));
        let a = check_arguments(&r).unwrap();
        let ran = AdapterResult {
            ok: true,
            result: Some(json!({"token": "s3cr3t-v4lue"})),
            stdout: Some("paid with s3cr3t-v4lue".into()),
            ..AdapterResult::default()
        };
        let binding = MintedBinding {
            mode: crate::model::BindingMode::Local,
            fields: [("token".to_string(), "s3cr3t-v4lue".to_string())].into(),
        };
        let out = structured_result(&r, &a, ran, &binding);
        assert!(out.ok);
        assert_eq!(out.title.as_deref(), Some("Paid 2.80 to demo-transit"));
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("s3cr3t-v4lue"), "{text}");
    }
}
