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
    /// The person the calling MCP client showed the card to: only the approval of that very call.
    Elicitation,
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
            DecidedThrough::Elicitation => {
                if a.principal != by.id || a.tenant != by.tenant {
                    return Err(refused(ApprovalError::Unknown(id.to_string())));
                }
            }
        }
        let decider = Decider {
            principal: by.id.clone(),
            invoker: by.invoker,
            via: (through == DecidedThrough::Elicitation).then(|| "elicitation".to_string()),
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
