//! Human approvals of confirm-gated writes (docs/security.md, Approvals a model cannot forge). When the operator
//! requires one (`sandbox.json` `human_approval`), a gated write from MCP or HTTP is held as a pending approval:
//! a document `approvals/<id>.json` in the store (a file, or a row of the PostgreSQL store, so every replica sees
//! it). A person decides it (`hcpx approve|refuse ID`, or an approver Principal over HTTP), and the caller's
//! retry with the id runs the write once. An approval is bound to the Principal, the command and the SHA-256 of
//! the exact arguments, and expires; every decision and use happens under the store lock, so it is used at
//! most once across processes and replicas.

use serde::{Deserialize, Serialize};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{Store, StoreError};
use crate::model::{Invoker, Preview, Principal};

/// Where approvals live, relative to the store.
pub const APPROVALS_DIR: &str = "approvals";

/// How long an expired approval is kept (so a late retry is told it expired) before it is removed.
const KEEP_EXPIRED_MS: u64 = 60 * 60 * 1000;

/// One tenant's approvals waiting for a person (`Store::approvals_waiting`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub tenant: String,
    pub count: u64,
    /// When the oldest of them was requested, in milliseconds since the Unix epoch.
    pub oldest_ms: u64,
}

/// The prefix of every approval id.
const ID_PREFIX: &str = "ap_";

/// Where an approval is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// Waiting for a person.
    Pending,
    /// A person approved it; the caller's retry may run it once.
    Approved,
    /// A person refused it; it never runs.
    Refused,
    /// It ran (or was spent by a retry that was then refused later in the pipeline); never again.
    Used,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Refused => "refused",
            ApprovalState::Used => "used",
        }
    }
}

/// Who decided an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decider {
    pub principal: String,
    pub invoker: Invoker,
    /// `elicitation`: the person answered the card their MCP client showed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// One approval as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    pub id: String,
    /// The Principal whose call it is, and its tenant and face.
    pub principal: String,
    pub tenant: String,
    pub invoker: Invoker,
    pub pack_id: String,
    pub verb_key: String,
    /// The SHA-256 of the call's arguments (without the gate arguments and the approval id).
    pub args_sha256: String,
    /// The card a person decides on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<Preview>,
    pub requested_at: String,
    /// When it stops being usable, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
    pub state: ApprovalState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<Decider>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_at: Option<String>,
}

impl Approval {
    /// Whether it has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_at_ms
    }

    /// Its expiry as RFC 3339.
    pub fn expires_at(&self) -> String {
        let at = UNIX_EPOCH + std::time::Duration::from_millis(self.expires_at_ms);
        humantime::format_rfc3339_seconds(at).to_string()
    }
}

/// What one call is: who, which command, which arguments. An approval is used only by the call it was made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallKey<'a> {
    pub principal: &'a Principal,
    pub pack_id: &'a str,
    pub verb_key: &'a str,
    pub args_sha256: &'a str,
}

/// Why an approval cannot be decided or used: each is a refusal whose message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("no approval {0}; call the command again without approval_id to ask for a new one")]
    Unknown(String),
    #[error("approval {0} is not an approval id (ap_ and 24 hex digits); copy it from the approval_pending answer")]
    BadId(String),
    #[error(
        "approval {id} expired at {at}; call the command again without approval_id to ask for a new one"
    )]
    Expired { id: String, at: String },
    #[error("approval {id} was refused by {by}; nothing ran, and it never will")]
    Refused { id: String, by: String },
    #[error("approval {0} was already used; an approval runs its call once: call again without approval_id to ask for a new one")]
    Used(String),
    #[error("approval {0} still waits for a person; ask the person to have an approver decide it, then call again")]
    Pending(String),
    #[error("approval {id} was already {state}; a person decides an approval once, and it runs its call once: call again without it to ask anew")]
    Decided { id: String, state: &'static str },
    #[error("approval {id} was made for {what}, not this call; an approval runs only the exact call it was asked for: call again without approval_id to ask for one")]
    Mismatch { id: String, what: String },
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Whether `id` is an approval id: `ap_` and 24 lowercase hex digits (it is joined to a store path only then).
pub fn is_approval_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX)
        .is_some_and(|h| h.len() == 24 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

fn rel(id: &str) -> String {
    format!("{APPROVALS_DIR}/{id}.json")
}

impl Store {
    /// Records a pending approval for `call`, with its card, expiring `ttl_s` seconds from now.
    pub fn approval_request(
        &self,
        call: &CallKey<'_>,
        preview: Option<Preview>,
        ttl_s: u64,
    ) -> Result<Approval, StoreError> {
        let bytes = super::random_bytes::<12>()?;
        let id = format!("{ID_PREFIX}{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
        let approval = Approval {
            id,
            principal: call.principal.id.clone(),
            tenant: call.principal.tenant.clone(),
            invoker: call.principal.invoker,
            pack_id: call.pack_id.to_string(),
            verb_key: call.verb_key.to_string(),
            args_sha256: call.args_sha256.to_string(),
            preview,
            requested_at: crate::model::clock::now_rfc3339(),
            expires_at_ms: now_ms().saturating_add(ttl_s.saturating_mul(1000)),
            state: ApprovalState::Pending,
            decided_by: None,
            decided_at: None,
            used_at: None,
        };
        // About one new approval in 64 (and every listing) clears out the long-expired ones, so the store does not
        // grow without bound (the audit log keeps the record of each) and a held call rarely reads them all.
        if bytes[0] < 4 {
            let _ = self.approvals_all().map(|all| self.prune(&all));
        }
        self.approval_put(&approval)?;
        Ok(approval)
    }

    /// Removes the approvals of `all` that expired more than [`KEEP_EXPIRED_MS`] ago; the ones left.
    fn prune(&self, all: &[Approval]) -> Vec<Approval> {
        let stale = now_ms().saturating_sub(KEEP_EXPIRED_MS);
        let (old, kept): (Vec<&Approval>, Vec<&Approval>) = all.iter().partition(|a| a.expires_at_ms < stale);
        for a in old {
            let _ = self.remove_json(&rel(&a.id));
        }
        kept.into_iter().cloned().collect()
    }

    fn approval_put(&self, a: &Approval) -> Result<(), StoreError> {
        self.backend.doc_dir(std::path::Path::new(APPROVALS_DIR), false)?;
        self.write_json_mode(&rel(&a.id), a, 0o600)
    }

    /// Approval `id` as stored.
    pub fn approval(&self, id: &str) -> Result<Approval, ApprovalError> {
        if !is_approval_id(id) {
            return Err(ApprovalError::BadId(id.to_string()));
        }
        self.read_json::<Approval>(&rel(id))?.ok_or_else(|| ApprovalError::Unknown(id.to_string()))
    }

    /// Every approval still waiting for a person (not expired), oldest first.
    pub fn approvals_pending(&self) -> Result<Vec<Approval>, StoreError> {
        let now = now_ms();
        let all = self.approvals_all()?;
        let mut out: Vec<Approval> = self
            .prune(&all)
            .into_iter()
            .filter(|a| a.state == ApprovalState::Pending && !a.expired(now))
            .collect();
        out.sort_by(|a, b| a.requested_at.cmp(&b.requested_at));
        Ok(out)
    }

    /// Per tenant, how many approvals wait for a person now and when the oldest was requested (ms since the Unix
    /// epoch), tenants in order: `/metrics`' `hcp_approvals_waiting`. Read only (nothing is pruned).
    pub fn approvals_waiting(&self) -> Result<Vec<Waiting>, StoreError> {
        let now = now_ms();
        let mut by: std::collections::BTreeMap<String, Waiting> = Default::default();
        for a in self.approvals_all()? {
            if a.state != ApprovalState::Pending || a.expired(now) {
                continue;
            }
            let at = humantime::parse_rfc3339_weak(&a.requested_at)
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(now, |d| d.as_millis() as u64);
            let w =
                by.entry(a.tenant.clone()).or_insert(Waiting { tenant: a.tenant, count: 0, oldest_ms: at });
            w.count += 1;
            w.oldest_ms = w.oldest_ms.min(at);
        }
        Ok(by.into_values().collect())
    }

    /// Every approval in the store, whatever its state (an unreadable one is skipped).
    fn approvals_all(&self) -> Result<Vec<Approval>, StoreError> {
        let names = self.backend.doc_names(std::path::Path::new(APPROVALS_DIR))?;
        Ok(names
            .iter()
            .filter_map(|n| n.strip_suffix(".json"))
            .filter(|id| is_approval_id(id))
            .filter_map(|id| self.read_json::<Approval>(&rel(id)).ok().flatten())
            .collect())
    }

    /// A person approves (`approve`) or refuses approval `id`. It must be pending and not expired.
    pub fn approval_decide(&self, id: &str, approve: bool, by: Decider) -> Result<Approval, ApprovalError> {
        let _lock = self.lock()?;
        let mut a = self.approval(id)?;
        if a.state != ApprovalState::Pending {
            return Err(ApprovalError::Decided { id: id.to_string(), state: a.state.as_str() });
        }
        if a.expired(now_ms()) {
            return Err(ApprovalError::Expired { id: id.to_string(), at: a.expires_at() });
        }
        a.state = if approve { ApprovalState::Approved } else { ApprovalState::Refused };
        a.decided_by = Some(by);
        a.decided_at = Some(crate::model::clock::now_rfc3339());
        self.approval_put(&a)?;
        Ok(a)
    }

    /// Takes an approval back to refused when its decision could not be audited.
    pub fn approval_decide_undo(&self, id: &str, by: Decider) -> Result<(), ApprovalError> {
        let _lock = self.lock()?;
        let mut a = self.approval(id)?;
        if a.state == ApprovalState::Approved {
            a.state = ApprovalState::Refused;
            a.decided_by = Some(by);
            self.approval_put(&a)?;
        }
        Ok(())
    }

    /// Spends approval `id` on `call`: it must be approved, unused, unexpired and made for exactly this call.
    /// Once spent it never satisfies another call.
    pub fn approval_use(&self, id: &str, call: &CallKey<'_>) -> Result<Approval, ApprovalError> {
        let _lock = self.lock()?;
        let mut a = self.approval(id)?;
        let p = call.principal;
        let mismatch = if a.principal != p.id || a.tenant != p.tenant {
            Some("another caller".to_string())
        } else if a.pack_id != call.pack_id || a.verb_key != call.verb_key {
            Some(format!("{}.{}", a.pack_id, a.verb_key))
        } else if a.args_sha256 != call.args_sha256 {
            Some("other arguments".to_string())
        } else {
            None
        };
        if let Some(what) = mismatch {
            return Err(ApprovalError::Mismatch { id: id.to_string(), what });
        }
        match a.state {
            ApprovalState::Pending => return Err(ApprovalError::Pending(id.to_string())),
            ApprovalState::Refused => {
                let by =
                    a.decided_by.as_ref().map_or_else(|| "a person".to_string(), |d| d.principal.clone());
                return Err(ApprovalError::Refused { id: id.to_string(), by });
            }
            ApprovalState::Used => return Err(ApprovalError::Used(id.to_string())),
            ApprovalState::Approved => {}
        }
        if a.expired(now_ms()) {
            return Err(ApprovalError::Expired { id: id.to_string(), at: a.expires_at() });
        }
        a.state = ApprovalState::Used;
        a.used_at = Some(crate::model::clock::now_rfc3339());
        self.approval_put(&a)?;
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Grants;

    fn ana() -> Principal {
        Principal { id: "ana".into(), tenant: "t".into(), grants: Grants::All, invoker: Invoker::Mcp }
    }

    fn key<'a>(p: &'a Principal, digest: &'a str) -> CallKey<'a> {
        CallKey { principal: p, pack_id: "ledger", verb_key: "transfer", args_sha256: digest }
    }

    fn person() -> Decider {
        Decider { principal: "local".into(), invoker: Invoker::Cli, via: None }
    }

    #[test]
    fn an_approval_runs_its_own_call_once() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let p = ana();
        let a = store.approval_request(&key(&p, "d1"), None, 60).unwrap();
        assert!(is_approval_id(&a.id), "{}", a.id);
        assert!(matches!(store.approval_use(&a.id, &key(&p, "d1")), Err(ApprovalError::Pending(_))));
        assert_eq!(store.approvals_pending().unwrap().len(), 1);
        store.approval_decide(&a.id, true, person()).unwrap();
        assert!(store.approvals_pending().unwrap().is_empty());
        assert!(matches!(store.approval_decide(&a.id, false, person()), Err(ApprovalError::Decided { .. })));
        // Other arguments, another Principal, another command: refused, and the approval is still unspent.
        assert!(matches!(store.approval_use(&a.id, &key(&p, "d2")), Err(ApprovalError::Mismatch { .. })));
        let bob = Principal { id: "bob".into(), ..ana() };
        assert!(matches!(store.approval_use(&a.id, &key(&bob, "d1")), Err(ApprovalError::Mismatch { .. })));
        let other = CallKey { verb_key: "refund", ..key(&p, "d1") };
        assert!(matches!(store.approval_use(&a.id, &other), Err(ApprovalError::Mismatch { .. })));
        assert_eq!(store.approval_use(&a.id, &key(&p, "d1")).unwrap().state, ApprovalState::Used);
        assert!(matches!(store.approval_use(&a.id, &key(&p, "d1")), Err(ApprovalError::Used(_))));
    }

    #[test]
    fn refused_expired_and_made_up_ids_never_run() {
        let t = tempfile::tempdir().unwrap();
        let store = Store::open(t.path()).unwrap();
        let p = ana();
        let a = store.approval_request(&key(&p, "d"), None, 60).unwrap();
        store.approval_decide(&a.id, false, person()).unwrap();
        assert!(matches!(store.approval_use(&a.id, &key(&p, "d")), Err(ApprovalError::Refused { .. })));
        let gone = store.approval_request(&key(&p, "d"), None, 0).unwrap();
        assert!(matches!(
            store.approval_decide(&gone.id, true, person()),
            Err(ApprovalError::Expired { .. })
        ));
        assert!(matches!(store.approval("ap_../../grants"), Err(ApprovalError::BadId(_))));
        assert!(matches!(store.approval("ap_000000000000000000000000"), Err(ApprovalError::Unknown(_))));
        // Long expired approvals are removed (by a listing, and now and then by a new one); recent ones stay to
        // say "expired".
        let mut old = store.approval(&gone.id).unwrap();
        old.expires_at_ms = now_ms() - KEEP_EXPIRED_MS - 1;
        store.approval_put(&old).unwrap();
        store.approvals_pending().unwrap();
        assert!(matches!(store.approval(&gone.id), Err(ApprovalError::Unknown(_))));
        assert!(store.approval(&a.id).is_ok());
    }
}
