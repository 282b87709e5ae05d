//! Sense (docs/sense.md): upstream pushes of a pack's declared `stimulusTriggers`, the runtime's own
//! `binding.degraded`, and their delivery to the Principals of the same tenant holding `sense.announce` for the
//! pack. The store keeps the events (`store::sense`); this module decides who may push and who may see, and
//! audits each push (recorded or refused) and each refused watch with the attribution tuple, in the chain.

use serde_json::{json, Map, Value};

use super::{fix, MintError, Runtime};
use crate::model::digest::sha256_hex;
use crate::model::grants::{Capability, Grants};
use crate::model::suggest::closest;
use crate::model::{BindingMode, Code, Denial, Invoker, Principal};
use crate::pack::Operation;
use crate::pack::Pack;
use crate::store::audit::{AuditAction, AuditRecord};
use crate::store::sense::{NewEvent, SenseEvent, MAX_PAYLOAD_BYTES};
use crate::store::{Store, StoreError};

/// The trigger the runtime announces itself when a pack's Binding cannot be minted or its credential is removed.
pub const DEGRADED: &str = "binding.degraded";

/// Whether `grants` hold `sense.announce` for any trigger of `pack_id` (or, with `None`, of any pack).
pub(crate) fn holds_announce(grants: &Grants, pack_id: Option<&str>) -> bool {
    match grants {
        Grants::All => true,
        Grants::Only(list) => list.iter().any(|g| {
            g.capability == Capability::SenseAnnounce
                && pack_id.is_none_or(|p| g.pack_id == "*" || g.pack_id == p)
        }),
    }
}

/// `denied` for a missing `sense.announce`, naming the fix for this Principal's face.
fn missing_announce(principal: &Principal, pack_id: Option<&str>) -> Denial {
    let (what, grant) = match pack_id {
        Some(p) => (p.to_string(), format!("sense.announce:{p}")),
        None => ("any pack".to_string(), "sense.announce:PACK".to_string()),
    };
    let fix =
        if principal.invoker == Invoker::Http || principal.tenant != crate::store::principals::LOCAL_TENANT {
            format!("an operator grants it with `hcpx principal grant {} {grant}`", principal.id)
        } else {
            format!("grant it with `hcpx grant {grant}`")
        };
    Denial::new(Code::Denied, format!("denied: missing sense.announce for {what}; {fix}"))
}

/// `no_policy` for a ref the pack does not declare, naming the closest declared one and all of them.
fn undeclared(pack: &Pack, reference: &str) -> Denial {
    if pack.triggers.is_empty() {
        return Denial::new(
            Code::NoPolicy,
            format!(
                "pack {} declares no stimulusTriggers, so `{reference}` is refused; declare {{\"ref\": \"{reference}\"}} in its surface.json with a stimuli row in policy.json",
                pack.id
            ),
        );
    }
    let near = closest(reference, pack.triggers.iter().map(String::as_str))
        .map(|n| format!("did you mean `{n}`? "))
        .unwrap_or_default();
    Denial::new(
        Code::NoPolicy,
        format!(
            "pack {} declares no stimulus trigger `{reference}`; {near}its triggers are: {}",
            pack.id,
            pack.triggers.join(", ")
        ),
    )
}

fn store_failed(e: StoreError) -> Denial {
    Denial::new(Code::AdapterFailed, format!("sense: {e}"))
}

/// The audit line of a Sense push or a refused watch (the store sets `prev` when it appends it).
fn sense_record(
    principal: &Principal,
    action: AuditAction,
    pack_id: &str,
    reference: &str,
    payload_sha256: String,
    refused: Option<Code>,
) -> AuditRecord {
    let operation = if action == AuditAction::SenseEmit { Operation::Write } else { Operation::Read };
    AuditRecord {
        ok: refused.is_none(),
        code: refused,
        args_sha256: payload_sha256,
        action: Some(action),
        ..AuditRecord::attributed(principal, pack_id, reference, operation)
    }
}

impl Runtime {
    /// An upstream push of `pack_id`'s trigger `reference` with `payload`, recorded in the Principal's tenant.
    /// The pack must be installed and activated, declare the ref (`binding.degraded` is the runtime's own and
    /// never pushed), and the Principal must hold `sense.announce` for it. Recorded or refused, the push is an
    /// audit line; a recorded push whose line cannot be written is reported as failed, never unaudited.
    pub fn sense_emit(
        &self,
        principal: &Principal,
        pack_id: &str,
        reference: &str,
        payload: Value,
    ) -> Result<SenseEvent, Denial> {
        let digest = sha256_hex(serde_json::to_string(&payload).unwrap_or_default().as_bytes());
        let out = self.sense_emit_unaudited(principal, pack_id, reference, payload);
        let code = out.as_ref().err().map(|d| d.code);
        let rec = sense_record(principal, AuditAction::SenseEmit, pack_id, reference, digest, code);
        match (self.store.append_audit(&rec), out) {
            (Err(e), Ok(event)) => Err(Denial::new(
                Code::AdapterFailed,
                format!(
                    "sense: event {} was recorded but its audit line could not be written: {e}",
                    event.id
                ),
            )),
            (_, out) => out,
        }
    }

    fn sense_emit_unaudited(
        &self,
        principal: &Principal,
        pack_id: &str,
        reference: &str,
        payload: Value,
    ) -> Result<SenseEvent, Denial> {
        let pack = self.installed_pack(pack_id)?;
        if !pack.triggers.iter().any(|t| t == reference) {
            return Err(undeclared(&pack, reference));
        }
        if reference == DEGRADED {
            return Err(Denial::new(
                Code::Denied,
                format!("denied: {DEGRADED} is announced by the runtime itself when a Binding of {pack_id} fails; an upstream cannot push it"),
            ));
        }
        let activated = self
            .store
            .state()
            .map_err(store_failed)?
            .packs
            .get(pack_id)
            .is_some_and(|p| p.activated_for(&principal.tenant));
        if !activated {
            return Err(fix::not_activated(pack_id, &principal.tenant));
        }
        if !principal.grants.allows(Capability::SenseAnnounce, pack_id, reference) {
            return Err(missing_announce(principal, Some(pack_id)));
        }
        let size = serde_json::to_string(&payload).map_or(usize::MAX, |t| t.len());
        if size > MAX_PAYLOAD_BYTES {
            return Err(Denial::new(
                Code::InvalidArgs,
                format!("the payload is {size} bytes; a Sense payload is at most {MAX_PAYLOAD_BYTES} bytes of JSON, so send a smaller one (or a reference to the data)"),
            ));
        }
        let new = NewEvent {
            pack_id: pack_id.to_string(),
            reference: reference.to_string(),
            payload,
            principal: Some(principal.id.clone()),
        };
        self.store
            .append_sense(&principal.tenant, new, false)
            .map_err(store_failed)?
            .ok_or_else(|| Denial::new(Code::AdapterFailed, "sense: the event was not recorded"))
    }

    /// Checks, before any delivery, that the Principal may watch: `sense.announce` for `pack_id` (or for some
    /// pack, when none is named). A refusal is an audit line (best effort: the caller gets the denial either way).
    pub fn sense_may_watch(&self, principal: &Principal, pack_id: Option<&str>) -> Result<(), Denial> {
        let out = self.sense_may_watch_unaudited(principal, pack_id);
        if let Err(d) = &out {
            let pack = pack_id.unwrap_or("*");
            let rec =
                sense_record(principal, AuditAction::SenseWatch, pack, "*", sha256_hex(b""), Some(d.code));
            let _ = self.store.append_audit(&rec);
        }
        out
    }

    fn sense_may_watch_unaudited(&self, principal: &Principal, pack_id: Option<&str>) -> Result<(), Denial> {
        if !holds_announce(&principal.grants, pack_id) {
            return Err(missing_announce(principal, pack_id));
        }
        if let Some(p) = pack_id {
            self.installed_pack(p)?;
        }
        Ok(())
    }

    /// The events of the Principal's tenant after `after`, oldest first, only of the packs and triggers it holds
    /// `sense.announce` for (and only `pack_id`'s when named). Refused as `sense_may_watch` refuses.
    pub fn sense_events(
        &self,
        principal: &Principal,
        after: u64,
        pack_id: Option<&str>,
    ) -> Result<Vec<SenseEvent>, Denial> {
        self.sense_may_watch(principal, pack_id)?;
        let events = self.store.sense_events(&principal.tenant, after).map_err(store_failed)?;
        Ok(events
            .into_iter()
            .filter(|e| pack_id.is_none_or(|p| e.pack_id == p))
            .filter(|e| principal.grants.allows(Capability::SenseAnnounce, &e.pack_id, &e.reference))
            .collect())
    }

    /// What identifies the Principal's tenant's event log now (a watcher reads again only when it changed).
    pub fn sense_version(&self, principal: &Principal) -> Option<(u64, u64, i64, i64)> {
        self.store.sense_version(&principal.tenant).ok().flatten()
    }

    /// Step 5 failed: announces `binding.degraded` for the pack when it declares the trigger. Best effort: the
    /// call's answer is the denial either way. A mistake of the call itself (mock not asked for, a Principal id no
    /// hub can hold) degrades nothing.
    pub(super) fn sense_mint_failed(&self, principal: &Principal, pack: &Pack, e: &MintError) {
        let cause = match e {
            MintError::MockNotAsked(_) | MintError::BadPrincipal(_) => return,
            MintError::BadFamily(_) => "bad_family",
            MintError::NoMothership(_) => "no_mothership",
            MintError::NoKeyring(_) => "no_keyring",
            MintError::HubUnreadable(_) => "hub_unreadable",
            MintError::FamilyNotAllowed { .. } => "family_not_allowed",
            MintError::MissingField { .. } => "missing_field",
            MintError::Revoked { .. } => "revoked",
            MintError::ConnectFailed { .. } => "connect_failed",
        };
        if !pack.triggers.iter().any(|t| t == DEGRADED) {
            return;
        }
        let mut payload = Map::new();
        payload.insert("family".into(), json!(pack.binding.family));
        payload.insert("reason".into(), json!("mint_failed"));
        payload.insert("cause".into(), json!(cause));
        if let MintError::MissingField { field, .. } = e {
            payload.insert("field".into(), json!(field));
        }
        if pack.binding.mode == BindingMode::User {
            payload.insert("principal".into(), json!(principal.id));
        }
        let new = NewEvent {
            pack_id: pack.id.clone(),
            reference: DEGRADED.into(),
            payload: Value::Object(payload),
            principal: None,
        };
        let _ = self.store.append_sense(&principal.tenant, new, true);
    }
}

/// A credential of `family` was removed from `tenant`'s hub (one field, or all; one Principal's, or the shared
/// file): announces `binding.degraded` for every installed pack that mints from it and declares the trigger.
/// Returns the events recorded.
pub fn credential_removed(
    store: &Store,
    tenant: &str,
    family: &str,
    principal: Option<&str>,
    field: Option<&str>,
) -> Result<Vec<SenseEvent>, StoreError> {
    let mode = if principal.is_some() { BindingMode::User } else { BindingMode::Local };
    let mut out = Vec::new();
    for id in store.state()?.packs.keys() {
        let Some(pack) = store.load_pack(id)? else { continue };
        if pack.binding.family != family
            || pack.binding.mode != mode
            || !pack.triggers.iter().any(|t| t == DEGRADED)
        {
            continue;
        }
        let mut payload = Map::new();
        payload.insert("family".into(), json!(family));
        payload.insert("reason".into(), json!("credential_removed"));
        if let Some(f) = field {
            payload.insert("field".into(), json!(f));
        }
        if let Some(p) = principal {
            payload.insert("principal".into(), json!(p));
        }
        let new = NewEvent {
            pack_id: pack.id.clone(),
            reference: DEGRADED.into(),
            payload: Value::Object(payload),
            principal: None,
        };
        out.extend(store.append_sense(tenant, new, false)?);
    }
    Ok(out)
}
