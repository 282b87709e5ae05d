//! The pipeline of docs/spec.md §9, one function per step, in the spec's order and under its names. Each step
//! returns its typed denial; nothing runs after one. What a step learns is handed to the next as a value
//! (`Resolved`, `Checked`, then the admitted `Job`), never kept aside in a variable for later.
//!
//! A call is admitted (`admit`: the slot, steps 1–5 and the inputs of step 6, synchronous and cheap), run (step
//! 6: blocking here, or as a future through `Adapter::run_async`), then finished (`finish.rs`: step 7).

use serde_json::{Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use super::{fix, pass_through};
use super::{mint, ArgsInput, CallContext, Runtime, Slot};
use crate::adapter::{AdapterResult, ExecHooks, OwnedCall};
use crate::args::CheckedArgs;
use crate::model::code::CONFIRM_REQUIRED;
use crate::model::Invoker;
use crate::model::{Code, Denial, Envelope, MintedBinding, Principal, ResultEnvelope};
use crate::pack::{Command, Land, Pack, PolicyRow};
use crate::store::approvals::{ApprovalError, CallKey};
use crate::store::config::SandboxConfig;
use crate::store::Layout;
use crate::trace::{Clock, Step};

/// What step 1 found: the installed pack, its Policy row for the call, and the arguments as given.
pub(super) struct Resolved<'a> {
    pack: Arc<Pack>,
    verb: String,
    /// The verb is a pass-through subcommand, not a named command.
    pass_through: bool,
    row: PolicyRow,
    activated: bool,
    component_sha256: Option<String>,
    /// The arguments: the JSON object (borrowed from the envelope), or the command-line words parsed against
    /// the command's schema. A parse error is reported when arguments are checked (after the capability), so
    /// every face denies in the same order.
    args: Result<Cow<'a, Map<String, Value>>, String>,
}

impl Resolved<'_> {
    /// The named command, or `None` for a pass-through subcommand.
    fn command(&self) -> Option<&Command> {
        command(&self.pack, &self.verb, self.pass_through)
    }

    fn target(&self) -> String {
        format!("{}.{}", self.pack.id, self.verb)
    }

    /// The arguments as given, for the audit line (none when they could not be parsed).
    fn given(&self) -> Cow<'_, Map<String, Value>> {
        match &self.args {
            Ok(a) => Cow::Borrowed(a.as_ref()),
            Err(_) => Cow::Owned(Map::new()),
        }
    }
}

/// The named command `verb` of `pack`, or `None` for a pass-through subcommand.
pub(super) fn command<'p>(pack: &'p Pack, verb: &str, pass_through: bool) -> Option<&'p Command> {
    if pass_through {
        None
    } else {
        pack.command(verb)
    }
}

/// The arguments once checked: the declared values and the gates, plus a pass-through call's argv.
pub(super) struct Checked {
    args: CheckedArgs,
    pass_argv: Vec<String>,
}

pub(super) use super::job::{Admission, Admitted, Job, Runner};

/// What the run of step 6 needs beyond the checked call: the adapter, the sandbox settings, where its files go.
struct Setup<'a> {
    runner: Runner<'a>,
    sandbox: Arc<SandboxConfig>,
    layout: Arc<Layout>,
    live_title: Option<String>,
}

/// The operator's settings with the call's own deadline, when it asks for less time than `timeout_ms` gives.
fn within_deadline(sandbox: Arc<SandboxConfig>, deadline: Option<std::time::Duration>) -> Arc<SandboxConfig> {
    let Some(d) = deadline else { return sandbox };
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
    if ms >= sandbox.limits().timeout_ms {
        return sandbox;
    }
    Arc::new(SandboxConfig { timeout_ms: Some(ms), ..(*sandbox).clone() })
}

impl Runtime {
    /// The seven steps for one synchronous call: admit, run the adapter on this thread, finish.
    pub(super) fn pipeline(
        &self,
        principal: &Principal,
        env: &Envelope,
        input: ArgsInput<'_>,
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
    ) -> ResultEnvelope {
        match self.admit(principal, env, input, ctx, hooks, &mut crate::trace::Clock::off()) {
            Admission::Answered(out) => *out,
            Admission::Run(admitted) => {
                let ran = match self.workspace_turn(&admitted.job) {
                    Ok(held) => {
                        let ran = self.run(&admitted, hooks);
                        self.workspace_done(&admitted.job, held, ran)
                    }
                    Err(refused) => *refused,
                };
                self.finish(principal, env, admitted, ran)
            }
        }
    }

    /// Admission: the call slot, then steps 1–5 and the inputs of step 6, each synchronous and cheap (the
    /// store's files are cached reads). Past the concurrency limit nothing runs, not even the lookup. Once the
    /// Policy row is known, a refusal is audited when the row is a write (docs/spec.md §18).
    pub(super) fn admit<'a>(
        &'a self,
        principal: &Principal,
        env: &'a Envelope,
        input: ArgsInput<'a>,
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
        clock: &mut Clock,
    ) -> Admission<'a> {
        let (pack_id, verb) = (env.pack_id.as_str(), env.verb_key.as_str());
        let slot = match self.slot() {
            Ok(s) => s,
            Err(d) => {
                clock.failed(Some(d.code));
                return Admission::Answered(Box::new(d.into_envelope(pack_id, verb)));
            }
        };
        let r = match self.resolve(principal, env, input) {
            Ok(r) => r,
            Err(d) => {
                clock.failed(Some(d.code));
                return Admission::Answered(Box::new(d.into_envelope(pack_id, verb)));
            }
        };
        clock.mark(Step::Resolve);
        let admitted = self.admit_resolved(principal, env, &r, ctx, clock).and_then(|(checked, binding)| {
            self.setup_run(principal, &r, &checked, hooks).map(|setup| (checked, binding, setup))
        });
        match admitted {
            Ok((checked, binding, setup)) => {
                let mut admitted = build_job(principal, r, (checked, binding), setup, Some(slot), ctx);
                if let Err(out) = self.intend(principal, env, &mut admitted) {
                    clock.failed(out.code);
                    return Admission::Answered(out);
                }
                Admission::Run(admitted)
            }
            Err(d) => {
                clock.failed(Some(d.code));
                let out = d.into_envelope(pack_id, verb);
                let given = r.given();
                let call = super::finish::Audited {
                    principal,
                    env,
                    operation: r.row.operation,
                    args: &given,
                    project: super::finish::project_of(&r.pack, ctx.project_dir.as_deref()),
                };
                let out = self.audit(&call, out, None);
                if call.operation == crate::pack::Operation::Write {
                    clock.mark(Step::Audit);
                }
                Admission::Answered(Box::new(out))
            }
        }
    }

    /// Step 6's inputs for a call steps 1–5 admitted: the adapter and the call's owned inputs.
    pub(super) fn job<'a>(
        &'a self,
        principal: &Principal,
        r: Resolved<'a>,
        (checked, binding): (Checked, MintedBinding),
        ctx: &CallContext,
        hooks: &dyn ExecHooks,
    ) -> Result<Admitted<'a>, Denial> {
        let setup = self.setup_run(principal, &r, &checked, hooks)?;
        Ok(build_job(principal, r, (checked, binding), setup, None, ctx))
    }
}

/// The owned inputs of step 6, from steps 1–5 and the run's setup.
fn build_job<'a>(
    principal: &Principal,
    r: Resolved<'a>,
    (checked, binding): (Checked, MintedBinding),
    setup: Setup<'a>,
    slot: Option<Slot>,
    ctx: &CallContext,
) -> Admitted<'a> {
    let Resolved { pack, verb, pass_through, row, component_sha256, args, .. } = r;
    let job = Job {
        _slot: slot,
        pack,
        verb,
        pass_through,
        row,
        args: checked.args,
        pass_argv: checked.pass_argv,
        binding,
        layout: setup.layout,
        sandbox: within_deadline(setup.sandbox, ctx.deadline),
        component_sha256,
        principal: principal.clone(),
        project_dir: ctx.project_dir.clone(),
        cancel: ctx.cancel.clone(),
        live_title: setup.live_title,
    };
    Admitted { runner: setup.runner, job: Arc::new(job), given: args.unwrap_or_default(), intent: None }
}

impl Runtime {
    /// Steps 1 (end) to 5, on what step 1 found.
    fn admit_resolved(
        &self,
        principal: &Principal,
        env: &Envelope,
        r: &Resolved<'_>,
        ctx: &CallContext,
        clock: &mut Clock,
    ) -> Result<(Checked, MintedBinding), Denial> {
        let checked = checked(principal, env, r)?;
        clock.mark(Step::Check);
        self.enforce_gate(principal, r, &checked, ctx.ask_person)?;
        clock.mark(Step::Gate);
        let binding = self.mint_binding(principal, r, &checked)?;
        clock.mark(Step::Mint);
        Ok((checked, binding))
    }

    /// Step 1: resolve the pack and the command's Policy row (a named command's, or the pass-through row).
    pub(super) fn resolve<'a>(
        &self,
        principal: &Principal,
        env: &Envelope,
        input: ArgsInput<'a>,
    ) -> Result<Resolved<'a>, Denial> {
        let (pack_id, verb) = (env.pack_id.as_str(), env.verb_key.as_str());
        let state = self.store.state().map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?;
        let unknown = || self.unknown_pack_for(principal, pack_id);
        let (pack, record) = self
            .held(pack_id, &state)
            .map_err(|e| Denial::new(Code::UnknownPack, e.to_string()))?
            .ok_or_else(unknown)?;
        let (pass_through, row) = match pack.command(verb) {
            Some(c) => (false, c.policy),
            None => match pack.pass_through.as_ref().and_then(|p| p.policy.get(verb)) {
                Some(row) => (true, *row),
                None => return Err(fix::no_command_in(&pack, verb)),
            },
        };
        let args = match input {
            ArgsInput::Json(a) => Ok(Cow::Borrowed(a)),
            ArgsInput::Words(words) if pass_through => Ok(Cow::Owned(pass_through::words(words))),
            ArgsInput::Words(words) => match pack.command(verb) {
                Some(c) => {
                    c.args.parse_words(&format!("{pack_id}.{verb}"), words).map(Cow::Owned).map_err(|e| e.0)
                }
                None => Err(fix::no_command_in(&pack, verb).message),
            },
        };
        Ok(Resolved {
            pack,
            verb: verb.to_string(),
            pass_through,
            row,
            activated: record.is_none_or(|r| r.activated_for(&principal.tenant)),
            component_sha256: record.and_then(|r| r.component_sha256.clone()),
            args,
        })
    }

    /// Step 5: mint the Binding from the pack's hub for this Principal (`mock` only when the call says so).
    pub(super) fn mint_binding(
        &self,
        principal: &Principal,
        r: &Resolved<'_>,
        a: &Checked,
    ) -> Result<MintedBinding, Denial> {
        match mint(&self.store, &r.pack, principal, a.args.mock) {
            Ok(b) => Ok(b),
            // The connect command is how a missing, revoked or failed link gets made: it runs without one.
            Err(e) if !r.pass_through && r.verb == super::binding::CONNECT && e.connect_may_run() => {
                Ok(MintedBinding { mode: r.pack.binding.mode, fields: Default::default() })
            }
            Err(e) => {
                self.sense_mint_failed(principal, &r.pack, &e);
                Err(Denial::new(Code::BindingFailed, e.to_string()))
            }
        }
    }

    /// Step 6 (its inputs): the operator's sandbox settings and nothing else of the store, and the adapter for
    /// the pack's kind.
    fn setup_run(
        &self,
        principal: &Principal,
        r: &Resolved<'_>,
        a: &Checked,
        hooks: &dyn ExecHooks,
    ) -> Result<Setup<'_>, Denial> {
        let sandbox =
            self.store.sandbox().map_err(|e| Denial::new(Code::SandboxDenied, format!("sandbox: {e}")))?;
        let runner = self.runner(&r.pack).ok_or_else(|| {
            Denial::new(
                Code::AdapterFailed,
                format!(
                    "pack {} is kind {}, which this runtime cannot execute; only wrap and composite packs run here",
                    r.pack.id, r.pack.kind
                ),
            )
        })?;
        let live_title =
            r.command().filter(|_| hooks.watching()).and_then(|c| c.title.render(&a.args.values, None));
        // The tenant's own workspaces: a served tenant's pack never gets another tenant's files.
        let layout = self
            .layout_for(&principal.tenant)
            .map_err(|e| Denial::new(Code::Denied, format!("denied: {e}")))?;
        Ok(Setup { runner, sandbox, layout, live_title })
    }
}

impl Runtime {
    /// Step 6, blocking: the adapter runs the call in the sandbox on this thread (the runtime answers a
    /// built-in pack's itself).
    fn run(&self, a: &Admitted<'_>, hooks: &dyn ExecHooks) -> AdapterResult {
        let ran = match a.runner {
            Runner::Adapter(adapter) => adapter.run(&a.job.call(hooks)),
            Runner::BuiltIn => self.answer_built_in(&a.job),
        };
        hooks.exited(ran.exit_code);
        ran
    }
}

/// Steps 1 (end) to 3 and the argument check, in that order: what a call and a dry run both pass before the
/// confirm gate.
pub(super) fn checked(principal: &Principal, env: &Envelope, r: &Resolved<'_>) -> Result<Checked, Denial> {
    ensure_activated(principal, r)?;
    authenticate(env, r)?;
    assert_capability(principal, r)?;
    check_arguments(r)
}

/// Step 1 (end): the pack is activated on this store, for the Principal's tenant.
fn ensure_activated(principal: &Principal, r: &Resolved<'_>) -> Result<(), Denial> {
    if r.activated {
        Ok(())
    } else {
        Err(fix::not_activated(&r.pack.id, &principal.tenant))
    }
}

/// Step 2: the Principal was authenticated by its face; land `brain` needs a project id in scope.
fn authenticate(env: &Envelope, r: &Resolved<'_>) -> Result<(), Denial> {
    if r.row.land == Land::Brain && env.project_id.as_deref().is_none_or(str::is_empty) {
        return Err(Denial::new(Code::ProjectRequired, "privacy.land brain requires project_id"));
    }
    Ok(())
}

/// Step 3: assert the capability the row needs, scoped by pack and command.
fn assert_capability(principal: &Principal, r: &Resolved<'_>) -> Result<(), Denial> {
    let cap = super::visible::capability(&r.verb, r.row.operation);
    if principal.grants.allows(cap, &r.pack.id, &r.verb) {
        Ok(())
    } else {
        Err(fix::missing_grant(principal, cap, &r.pack.id, &r.verb))
    }
}

/// Between steps 3 and 4: the arguments match the command's schema (or the pass-through rules) before
/// anything runs.
fn check_arguments(r: &Resolved<'_>) -> Result<Checked, Denial> {
    let invalid = |m: String| Denial::new(Code::InvalidArgs, m);
    let given = r.args.as_ref().map_err(|e| invalid(e.clone()))?;
    let target = r.target();
    match r.command() {
        Some(c) => {
            let args = c.args.check(&target, given).map_err(|e| invalid(e.0))?;
            Ok(Checked { args, pass_argv: Vec::new() })
        }
        None => {
            let (args, pass_argv) = pass_through::args(&r.pack, &target, given)?;
            Ok(Checked { args, pass_argv })
        }
    }
}

/// The confirm gate's refusal (with the approval card), when the call as given would be stopped there.
pub(super) fn confirm_gate(r: &Resolved<'_>, a: &Checked) -> Option<Denial> {
    enforce_confirm(r, a).err()
}

/// Step 4: a row with `confirm: true` runs only with `confirm: true` (or `apply: true`); the denial carries
/// the approval card.
fn enforce_confirm(r: &Resolved<'_>, a: &Checked) -> Result<(), Denial> {
    if !r.row.confirm || a.args.confirmed {
        return Ok(());
    }
    let mut d = Denial::new(Code::ConfirmRequired, CONFIRM_REQUIRED);
    d.preview = card(r, a).map(Box::new);
    Err(d)
}

/// The approval card of the call, when its command declares one.
fn card(r: &Resolved<'_>, a: &Checked) -> Option<crate::model::Preview> {
    r.command().and_then(|c| c.preview.as_ref()).map(|p| p.render(&a.args.values))
}

/// The SHA-256 an approval binds: everything that decides what the call does — its declared arguments (without
/// the gate arguments), a pass-through call's argv, and whether it asked for a mock Binding.
fn approval_digest(a: &Checked) -> String {
    let mut values = a.args.values.clone();
    for g in crate::args::GATE_ARGS {
        values.remove(g);
    }
    // Neither name can be a declared argument (`mode` is reserved; a pass-through call declares none).
    if a.args.mock {
        values.insert(crate::args::MODE_ARG.into(), Value::String("mock".into()));
    }
    if !a.pass_argv.is_empty() {
        values.insert("\0argv".into(), Value::from(a.pass_argv.clone()));
    }
    crate::model::digest::args_digest(&values)
}

impl Runtime {
    /// Step 4 with the operator's `human_approval`: a confirm-gated write it covers, from MCP or HTTP, runs only
    /// with a person's approval of this exact call (`approval_id`), never on the caller's own `confirm: true`;
    /// without one it is held as a pending approval (`approval_pending`, with its id and card). An approval
    /// given satisfies the gate wherever it is given, and is spent by this call. Elsewhere step 4 is the spec's.
    fn enforce_gate(
        &self,
        principal: &Principal,
        r: &Resolved<'_>,
        a: &Checked,
        ask_person: bool,
    ) -> Result<(), Denial> {
        let Some(id) = a.args.approval.as_deref() else {
            if !r.row.confirm {
                return Ok(());
            }
            let required = self.needs_person(principal, r)?;
            if !(ask_person || required) {
                return enforce_confirm(r, a);
            }
            return Err(self.hold_for_approval(principal, r, a, required)?);
        };
        if !r.row.confirm {
            return Err(Denial::new(
                Code::InvalidArgs,
                format!(
                    "argument `approval_id` for {}: the command has no confirm gate; leave it out",
                    r.target()
                ),
            ));
        }
        let digest = approval_digest(a);
        let call = CallKey { principal, pack_id: &r.pack.id, verb_key: &r.verb, args_sha256: &digest };
        self.store.approval_use(id, &call).map(|_| ()).map_err(|e| match e {
            ApprovalError::Store(e) => Denial::new(Code::Denied, format!("denied: approvals: {e}")),
            e => Denial::new(Code::Denied, format!("denied: {e}")),
        })
    }

    /// Whether the operator requires a person's approval for this call: `human_approval` covers the command and
    /// the call comes from MCP or HTTP (the CLI is the store's owner at a terminal).
    fn needs_person(&self, principal: &Principal, r: &Resolved<'_>) -> Result<bool, Denial> {
        if !matches!(principal.invoker, Invoker::Mcp | Invoker::Http) {
            return Ok(false);
        }
        let sandbox =
            self.store.sandbox().map_err(|e| Denial::new(Code::SandboxDenied, format!("sandbox: {e}")))?;
        Ok(sandbox.human_approval.as_ref().is_some_and(|h| h.covers(&r.pack.id, &r.verb)))
    }

    /// Records a pending approval of the call and answers `approval_pending` with its id and card.
    /// Held only because the face asks the person itself (not `required` by the operator), it is the spec's
    /// `confirm_required`, carrying the approval the person's answer decides.
    fn hold_for_approval(
        &self,
        principal: &Principal,
        r: &Resolved<'_>,
        a: &Checked,
        required: bool,
    ) -> Result<Denial, Denial> {
        let ttl = self.store.sandbox().ok().and_then(|s| s.human_approval.as_ref().map(|h| h.ttl_s()));
        let digest = approval_digest(a);
        let call = CallKey { principal, pack_id: &r.pack.id, verb_key: &r.verb, args_sha256: &digest };
        let preview = card(r, a);
        let held = self
            .store
            .approval_request(
                &call,
                preview.clone(),
                ttl.unwrap_or(crate::store::config::DEFAULT_APPROVAL_TTL_S),
            )
            .map_err(|e| {
                Denial::new(Code::Denied, format!("denied: the approval could not be recorded: {e}"))
            })?;
        let id = &held.id;
        let mut d = if !required {
            Denial::new(Code::ConfirmRequired, CONFIRM_REQUIRED)
        } else {
            // Said to the caller, which may be a model with a shell: ask the person, never how to approve. The
            // operator's channels (`hcpx approve`, GET /v1/approvals) name the commands that decide it.
            Denial::new(
                Code::ApprovalPending,
                format!(
                    "approval pending: the operator requires a person's approval of this call; ask the person to have approval {id} decided by an approver, then call again with the same arguments and \"approval_id\": \"{id}\" (it expires at {})",
                    held.expires_at()
                ),
            )
        };
        d.preview = preview.map(Box::new);
        d.approval_id = Some(held.id);
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Capability, Grant, Grants, Invoker, PreviewKind};
    use serde_json::json;
    use std::path::Path;

    fn ledger() -> Arc<Pack> {
        Arc::new(Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/ledger")).unwrap())
    }

    fn resolved(verb: &str, args: Value) -> Resolved<'static> {
        let pack = ledger();
        let row = pack.command(verb).unwrap().policy;
        Resolved {
            pack,
            verb: verb.into(),
            pass_through: false,
            row,
            activated: true,
            component_sha256: None,
            args: Ok(Cow::Owned(args.as_object().cloned().unwrap())),
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
        let local = Principal { tenant: "local".into(), ..principal(Grants::All) };
        assert!(ensure_activated(&local, &r).is_ok());
        r.activated = false;
        let d = ensure_activated(&local, &r).unwrap_err();
        assert_eq!(
            (d.code, d.message.as_str()),
            (Code::NotActivated, "pack ledger not activated; activate it with `hcpx activate ledger`")
        );
        let d = ensure_activated(&principal(Grants::All), &r).unwrap_err();
        assert_eq!(
            d.message,
            "pack ledger not activated for tenant t; its operator activates it with `hcpx activate ledger --tenant t`"
        );
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
        assert!(
            d.message.starts_with("denied: missing verb.exec.write for ledger.transfer; "),
            "{}",
            d.message
        );
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
    fn an_approval_binds_what_the_call_does_not_the_gate() {
        let digest = |args: Value| approval_digest(&check_arguments(&resolved("transfer", args)).unwrap());
        let base = digest(json!({"amount": "2.80", "payee": "demo-transit"}));
        assert_eq!(base, digest(json!({"amount": "2.80", "payee": "demo-transit", "confirm": true})));
        assert_eq!(base, digest(json!({"payee": "demo-transit", "amount": "2.80", "approval_id": "ap_x"})));
        assert_ne!(base, digest(json!({"amount": "9.99", "payee": "demo-transit"})));
        assert_ne!(base, digest(json!({"amount": "2.80", "payee": "demo-transit", "mode": "mock"})));
        let argv = |words: &[&str]| Checked {
            args: check_arguments(&resolved("status", json!({}))).unwrap().args,
            pass_argv: words.iter().map(|w| w.to_string()).collect(),
        };
        assert_ne!(approval_digest(&argv(&["a"])), approval_digest(&argv(&["b"])));
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
}
