//! Step 7 (docs/spec.md §9), after the run: the structured result (done title, scrub of minted secrets) and the
//! audit line of a write, after one line per outgoing request of a wrap call (read or write) through its egress
//! proxy. The same for a call run blocking and one awaited.

use serde_json::{Map, Value};

use super::pipeline::Admitted;
use super::{scrub, Runtime};
use crate::adapter::egress::EgressRow;
use crate::adapter::AdapterResult;
use crate::model::digest::args_digest;
use crate::model::{Code, Envelope, MintedBinding, Principal, ResultEnvelope};
use crate::pack::{Command, Operation};
use crate::store::audit::AuditRecord;

impl Runtime {
    /// Step 7 for an admitted call: its result, audited when its row is a write. The call's slot is given back
    /// when the last of its inputs is dropped, after the audit line.
    pub(super) fn finish(
        &self,
        principal: &Principal,
        env: &Envelope,
        admitted: Admitted<'_>,
        mut ran: AdapterResult,
    ) -> ResultEnvelope {
        let egress = std::mem::take(&mut ran.egress);
        let job = &admitted.job;
        let out =
            structured_result(&job.pack.id, &job.verb, job.command(), &job.args.values, ran, &job.binding);
        if !job.pass_through && job.verb == super::binding::CONNECT {
            self.record_link(principal, &job.pack, &out);
        }
        let call = Audited {
            principal,
            env,
            operation: job.row.operation,
            args: &admitted.given,
            project: project_of(&job.pack, job.project_dir.as_deref()),
        };
        let out = self.audit_egress(&call, &egress, out);
        self.audit(&call, out, admitted.intent)
    }

    /// Step 7 (#36 point 6): each outgoing request of the call, allowed or refused, is an audit line of its own
    /// (`egress`), in the order they ended, before a write's line; a read's requests get lines, the read none.
    /// The rows carry no intent: a write's intent is cleared by its own line. Rows that cannot be written fail
    /// the call, as a write's line does: never an unrecorded request.
    fn audit_egress(&self, call: &Audited<'_>, rows: &[EgressRow], out: ResultEnvelope) -> ResultEnvelope {
        if rows.is_empty() {
            return out;
        }
        if let Some(o) = &self.observer {
            o.egress(call.principal, call.env, rows);
        }
        let base = record(call, true, None);
        let recs: Vec<AuditRecord> = rows
            .iter()
            .map(|r| AuditRecord {
                at: r.at.clone(),
                ok: r.egress.refused.is_none(),
                egress: Some(r.egress.clone()),
                ..base.clone()
            })
            .collect();
        // One append for all of them: the file store syncs its log and head once a call, not once a request.
        let written = blocking_section(|| self.store.append_audit_all(&recs));
        match written {
            Ok(()) => out,
            Err(e) if out.ok => {
                let mut o = out;
                o.ok = false;
                o.code = Some(Code::AdapterFailed);
                o.error = Some(format!(
                    "the command ran but the audit rows of its outgoing requests could not be written: {e}"
                ));
                o
            }
            Err(_) => out,
        }
    }

    /// Before step 6 of a write: the store records what is about to run (the PostgreSQL store; the file store
    /// records nothing), so a replica killed mid-call leaves a `cancelled` audit line for it, never a write
    /// without one (docs/hosting.md). A write whose intent cannot be recorded does not run.
    pub(super) fn intend(
        &self,
        principal: &Principal,
        env: &Envelope,
        admitted: &mut Admitted<'_>,
    ) -> Result<(), Box<ResultEnvelope>> {
        let job = &admitted.job;
        if job.row.operation != Operation::Write || !self.store.records_intents() {
            return Ok(());
        }
        let call = Audited {
            principal,
            env,
            operation: Operation::Write,
            args: &admitted.given,
            project: project_of(&job.pack, job.project_dir.as_deref()),
        };
        // What the line says if this replica stops before the call ends (another replica writes it then): not
        // `cancelled`, which would say the command was stopped, but that nobody knows whether it ran.
        let rec = crate::store::audit::AuditRecord {
            outcome: Some(crate::store::audit::Outcome::Unknown),
            ..record(&call, false, None)
        };
        match blocking_section(|| self.store.audit_intent(&rec)) {
            Ok(id) => {
                admitted.intent = id;
                Ok(())
            }
            Err(e) => Err(Box::new(
                crate::model::Denial::new(
                    Code::AdapterFailed,
                    format!("the write did not run: the store could not record it before it ran ({e})"),
                )
                .into_envelope(&env.pack_id, &env.verb_key),
            )),
        }
    }

    /// Step 7 (second half): a write, denied or not, appends its attribution tuple to the audit log, clearing
    /// its intent (`Runtime::intend`) in the same commit. A write that cannot be audited is reported as failed:
    /// never an unrecorded write.
    pub(super) fn audit(
        &self,
        call: &Audited<'_>,
        out: ResultEnvelope,
        intent: Option<i64>,
    ) -> ResultEnvelope {
        if call.operation != Operation::Write {
            return out;
        }
        let mut rec = record(call, out.ok, out.code);
        // The approval it waits for, or the one it ran (or was refused) with.
        rec.approval = out.approval_id.clone().or_else(|| {
            let given = call.args.get(crate::args::APPROVAL_ARG).and_then(Value::as_str);
            given.filter(|id| crate::store::approvals::is_approval_id(id)).map(String::from)
        });
        match blocking_section(|| self.store.append_audit_after(&rec, intent)) {
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
}

/// A call as its audit line names it: who, what, its arguments as given, and the project it ran in.
pub(super) struct Audited<'a> {
    pub principal: &'a Principal,
    pub env: &'a Envelope,
    pub operation: Operation,
    pub args: &'a Map<String, Value>,
    pub project: Option<&'a std::path::Path>,
}

/// The audit line of a write as it stands now (the store sets `prev` when it appends it).
fn record(call: &Audited<'_>, ok: bool, code: Option<Code>) -> AuditRecord {
    AuditRecord {
        ok,
        code,
        args_sha256: args_digest(call.args),
        project_dir: call.project.map(|p| p.display().to_string()),
        ..AuditRecord::attributed(call.principal, &call.env.pack_id, &call.env.verb_key, call.operation)
    }
}

impl Runtime {
    /// A connect command ran: its outcome is the family's link for this Principal (linked or failed). A link
    /// that cannot be recorded leaves the last one in place; the call's own result says what happened.
    fn record_link(&self, principal: &Principal, pack: &crate::pack::Pack, out: &ResultEnvelope) {
        use crate::store::connections::{Link, LinkState};
        if matches!(pack.binding.mode, crate::model::BindingMode::Public | crate::model::BindingMode::Mock) {
            return;
        }
        // Only a connect that ran is an outcome: one refused before it started (its arguments, the sandbox, no
        // project) links nothing and fails nothing.
        if !out.ok && !matches!(out.code, Some(Code::ExitNonzero | Code::Timeout | Code::AdapterFailed)) {
            return;
        }
        // A failed connect does not undo a working link (a person who cancels a re-link keeps the old one).
        let family = &pack.binding.family;
        let current = self.store.link(&principal.tenant, family, &principal.id).ok().flatten();
        if !out.ok && current.is_some_and(|l| l.state == LinkState::Linked) {
            return;
        }
        let link = Link {
            state: if out.ok { LinkState::Linked } else { LinkState::Failed },
            at: crate::model::clock::now_rfc3339(),
            pack_id: pack.id.clone(),
            code: out.code,
        };
        let _ = self.store.record_link(&principal.tenant, family, &principal.id, link);
    }
}

/// The project a call of `pack` runs in: the caller's, for a `project`-mode pack (recorded in its audit line).
pub(super) fn project_of<'a>(
    pack: &crate::pack::Pack,
    project: Option<&'a std::path::Path>,
) -> Option<&'a std::path::Path> {
    project.filter(|_| pack.workspace == crate::pack::WorkspaceMode::Project)
}

/// Step 7 (first half): the structured result of `pack_id`.`verb`, with the done title of its `command` (none
/// for a pass-through subcommand) from its checked `values`, and no minted secret left in it.
fn structured_result(
    pack_id: &str,
    verb: &str,
    command: Option<&Command>,
    values: &Map<String, Value>,
    ran: AdapterResult,
    binding: &MintedBinding,
) -> ResultEnvelope {
    let mut out = ResultEnvelope::empty(pack_id, verb, ran.ok);
    out.code = ran.code;
    out.error = ran.error;
    out.stdout = ran.stdout;
    out.stderr = ran.stderr;
    out.truncated = ran.truncated;
    out.sandbox = ran.sandbox;
    if let Some(hint) = ran.deferred_to_cli {
        out.deferred_to_cli = Some(true);
        out.hint = Some(hint);
    }
    if ran.ok {
        out.title =
            command.and_then(|c| c.title.render(values, Some(ran.result.as_ref().unwrap_or(&Value::Null))));
    }
    out.result = ran.result;
    scrub::scrub(&mut out, binding);
    out
}

/// Runs `f`, which waits on the disk or the database (an audit line's commit, a write's intent), telling a
/// multi-threaded tokio runtime first that this worker blocks, so the calls on its other tasks go on meanwhile
/// and concurrent writes reach the store together (where they share a commit) instead of one per worker.
/// Anywhere else (the CLI, a blocking-pool thread, a current-thread runtime) `f` just runs.
fn blocking_section<R>(f: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Pack;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn step_7_titles_and_scrubs_the_result() {
        let pack = Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/ledger")).unwrap();
        let command = pack.command("transfer").unwrap();
        let given = json!({"amount": "2.80", "payee": "demo-transit", "confirm": true});
        let checked = command.args.check("ledger.transfer", given.as_object().unwrap()).unwrap();
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
        let out = structured_result("ledger", "transfer", Some(command), &checked.values, ran, &binding);
        assert!(out.ok);
        assert_eq!(out.title.as_deref(), Some("Paid 2.80 to demo-transit"));
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("s3cr3t-v4lue"), "{text}");
    }
}
