//! A person's decision on a pending approval (`sandbox.json` `human_approval`), the same for every face that
//! takes one: `hcpx approve|refuse` at the store owner's terminal, an approver Principal over HTTP, or the
//! person an MCP client asked (elicitation). Who may decide is checked here, and every decision is an audit row.

use super::Runtime;
use crate::model::{Code, Denial, Principal};
use crate::pack::Operation;
use crate::store::approvals::{Approval, ApprovalError, Decider};
use crate::store::audit::AuditRecord;

/// How the person reached the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedThrough {
    /// `hcpx approve|refuse` on the store itself: its owner.
    Terminal,
    /// An approver Principal (`"approver": true` in principals.json) over HTTP: any approval of its own tenant
    /// but never one its own calls asked for.
    Approver,
    /// The person the calling MCP client showed the card to: only the approval of that very call. Where the
    /// operator requires a person's approval (`human_approval`), it counts only when `person_approver`: the
    /// Principal is an approver whose client the operator marked as a person's (`"person": true`), or the
    /// store's owner over stdio.
    Elicitation { person_approver: bool },
}

/// Why a decision was refused, for a face that reports it with a status of its own (HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No such approval for this person (none at all, not an id, or another tenant's).
    Unknown,
    /// The person may not decide it (their own call).
    NotTheirs,
    /// It is decided already, or expired.
    Closed,
    /// The store failed.
    Store,
}

/// A refused decision: the denial (code and message naming the fix) and its kind.
#[derive(Debug, Clone)]
pub struct DecisionRefused {
    pub denial: Denial,
    pub refusal: Refusal,
}

fn refusal(e: ApprovalError) -> DecisionRefused {
    let refusal = match &e {
        ApprovalError::Unknown(_) | ApprovalError::BadId(_) => Refusal::Unknown,
        ApprovalError::Store(_) => Refusal::Store,
        _ => Refusal::Closed,
    };
    DecisionRefused { denial: Denial::new(Code::Denied, format!("denied: {e}")), refusal }
}

impl Runtime {
    /// `by` approves (`approve`) or refuses approval `id`; the decision is audited in the approval's tenant.
    pub fn decide_approval(
        &self,
        by: &Principal,
        id: &str,
        approve: bool,
        through: DecidedThrough,
    ) -> Result<Approval, DecisionRefused> {
        let refused = refusal;
        let a = self.store.approval(id).map_err(refused)?;
        match through {
            DecidedThrough::Terminal => {}
            DecidedThrough::Approver => {
                if a.tenant != by.tenant {
                    // Another tenant's approval is as unknown to this Principal as one that does not exist.
                    return Err(refused(ApprovalError::Unknown(id.to_string())));
                }
                if a.principal == by.id {
                    let denial = Denial::new(
                        Code::Denied,
                        format!(
                            "denied: approval {id} was asked for by principal {} itself; a call is approved by another person (an approver of tenant {})",
                            by.id, a.tenant
                        ),
                    );
                    return Err(DecisionRefused { denial, refusal: Refusal::NotTheirs });
                }
            }
            DecidedThrough::Elicitation { person_approver } => {
                if a.principal != by.id || a.tenant != by.tenant {
                    return Err(refused(ApprovalError::Unknown(id.to_string())));
                }
                // Where the operator requires a person's approval, a client's answer is the person's only when the
                // operator said so: elicitation not switched off, and a Principal that is an approver with a
                // person's client. Checked at the decision, so a question asked before the setting changed counts
                // for nothing after.
                let sandbox = self.store.sandbox().map_err(|e| refused(ApprovalError::Store(e)))?;
                let held = sandbox.human_approval.as_ref().filter(|h| h.covers(&a.pack_id, &a.verb_key));
                if let Some(h) = held.filter(|h| !h.elicitation() || !person_approver) {
                    let why = if h.elicitation() {
                        format!(
                            "principal {} is not an approver whose client the operator marked as a person's",
                            by.id
                        )
                    } else {
                        "sandbox.json human_approval.elicitation is false".to_string()
                    };
                    let denial = Denial::new(
                        Code::Denied,
                        format!(
                            "denied: the operator takes approvals of {}.{} only from an approver ({why}); ask the person to have approval {id} decided by one, then call again with \"approval_id\"",
                            a.pack_id, a.verb_key
                        ),
                    );
                    return Err(DecisionRefused { denial, refusal: Refusal::NotTheirs });
                }
            }
        }
        let decider = Decider {
            principal: by.id.clone(),
            invoker: by.invoker,
            via: matches!(through, DecidedThrough::Elicitation { .. }).then(|| "elicitation".to_string()),
        };
        let decided = self.store.approval_decide(id, approve, decider).map_err(refused)?;
        let rec = AuditRecord {
            at: crate::model::clock::now_rfc3339(),
            principal: by.id.clone(),
            tenant: decided.tenant.clone(),
            invoker: by.invoker,
            pack_id: decided.pack_id.clone(),
            verb_key: decided.verb_key.clone(),
            operation: Operation::Write,
            ok: true,
            code: None,
            args_sha256: decided.args_sha256.clone(),
            project_dir: None,
            approval: Some(decided.id.clone()),
            decision: Some(if approve { "approved" } else { "refused" }.to_string()),
            outcome: None,
            egress: None,
            action: None,
            setting: None,
            prev: None,
        };
        // A decision that cannot be audited is taken back: never an unrecorded approval.
        if let Err(e) = self.store.append_audit(&rec) {
            let undo =
                Decider { principal: "hcpx".into(), invoker: by.invoker, via: Some("audit failed".into()) };
            if approve {
                let _ = self.store.approval_decide_undo(id, undo);
            }
            let denial = Denial::new(
                Code::Denied,
                format!(
                    "denied: the decision on approval {id} could not be audited ({e}); it was not recorded"
                ),
            );
            return Err(DecisionRefused { denial, refusal: Refusal::Store });
        }
        Ok(decided)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Grants, Invoker};
    use crate::store::approvals::CallKey;
    use crate::store::Store;

    #[test]
    fn an_mcp_answer_decides_only_its_own_call_and_under_human_approval_only_a_person_approvers() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let ana =
            Principal { id: "ana".into(), tenant: "t".into(), grants: Grants::All, invoker: Invoker::Mcp };
        let call = CallKey { principal: &ana, pack_id: "ledger", verb_key: "transfer", args_sha256: "d" };
        let rt = Runtime::new(store.clone());
        let first = store.approval_request(&call, None, 60).unwrap();
        let bob = Principal { id: "bob".into(), ..ana.clone() };
        let (anyone, person) = (
            DecidedThrough::Elicitation { person_approver: false },
            DecidedThrough::Elicitation { person_approver: true },
        );
        let other = rt.decide_approval(&bob, &first.id, true, person).unwrap_err();
        assert_eq!(other.refusal, Refusal::Unknown, "another caller's answer finds no such approval");
        // Without human_approval the answer is the person's confirm, whoever the Principal is.
        assert!(rt.decide_approval(&ana, &first.id, true, anyone).is_ok());
        // The operator requires a person's approval: only an approver with a person's client decides by answering.
        let require = |elicitation: bool| {
            let cfg = format!(
                r#"{{"human_approval": {{"commands": [{{"pack_id": "ledger"}}], "elicitation": {elicitation}}}}}"#
            );
            store.write_atomic("sandbox.json", cfg.as_bytes()).unwrap();
        };
        require(true);
        let held = store.approval_request(&call, None, 60).unwrap();
        let refused = rt.decide_approval(&ana, &held.id, true, anyone).unwrap_err();
        assert_eq!(refused.refusal, Refusal::NotTheirs);
        assert!(
            refused.denial.message.contains("not an approver whose client"),
            "{}",
            refused.denial.message
        );
        assert!(!refused.denial.message.contains("hcpx approve"), "{}", refused.denial.message);
        assert!(rt.decide_approval(&ana, &held.id, true, person).is_ok());
        // The operator switches elicitation off: a question asked before counts for nothing now.
        require(false);
        let second = store.approval_request(&call, None, 60).unwrap();
        let refused = rt.decide_approval(&ana, &second.id, true, person).unwrap_err();
        assert_eq!(refused.refusal, Refusal::NotTheirs);
        assert!(refused.denial.message.contains("only from an approver"), "{}", refused.denial.message);
        // An approver still may, and its decision is an audit row.
        assert!(rt.decide_approval(&bob, &second.id, true, DecidedThrough::Approver).is_ok());
        let rows = store.audit().unwrap();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!((rows[2].principal.as_str(), rows[1].decision.as_deref()), ("bob", Some("approved")));
    }
}
