//! Binding mint (pipeline step 5): credentials from the pack's hub for this Principal, pack and family.
//! A failure is a denial; nothing ever falls back to a token in the runtime's environment.

use std::collections::BTreeMap;

use crate::model::Principal;
use crate::model::{BindingMode, MintedBinding};
use crate::pack::{Hub, Pack};
use crate::store::{Store, StoreError};

/// The Binding fields a call of the pack needs: the `{{binding.FIELD}}` names of its `agent_env`, and every field
/// `binding.inject` binds to a host.
pub fn required_fields(pack: &Pack) -> Vec<String> {
    let mut out: Vec<String> = pack
        .wrap
        .iter()
        .flat_map(|w| w.agent_env.values())
        .flat_map(|t| {
            t.vars().filter_map(|v| v.strip_prefix("binding.")).map(String::from).collect::<Vec<_>>()
        })
        .collect();
    // A field bound to a host is one the call needs whatever the adapter: a composite reads it through
    // `credential()` and its requests carry it, so its absence is step 5's denial, not a request sent without it.
    out.extend(pack.binding.host_bound().into_iter().map(String::from));
    out.sort();
    out.dedup();
    out
}

/// Why a Binding could not be minted (step 5 denies with `binding_failed` and this message).
#[derive(Debug, thiserror::Error)]
pub enum MintError {
    #[error("binding family {0:?} is not a valid name; the pack must be fixed and reinstalled")]
    BadFamily(String),
    #[error(
        "pack {0} uses mock Binding, which must be asked for explicitly: pass mode=mock (`--mode mock`)"
    )]
    MockNotAsked(String),
    #[error("pack {0} needs a mothership Binding, and this runtime has no mothership hub; run it on a runtime connected to one")]
    NoMothership(String),
    #[error(
        "pack {0} names the keyring hub, which this runtime does not have; use \"hub\": \"local-credential\""
    )]
    NoKeyring(String),
    #[error("the credential hub cannot be read: {0}")]
    HubUnreadable(#[source] StoreError),
    #[error("pack {pack} asks for credential family {family}, which belongs to other packs; if you trust {pack} with them, run `hcpx credential allow {family} {pack}`")]
    FamilyNotAllowed { pack: String, family: String },
    #[error("principal {0:?} cannot hold user credentials: its id must be letters, digits, `_` and `-`")]
    BadPrincipal(String),
    #[error("the Binding for family {family} has no `{field}`; store it with `hcpx credential set {family} {field}{who}` (the value is read from stdin){connect}")]
    MissingField { family: String, field: String, who: String, connect: String },
    #[error("the Binding for family {family} was revoked for {principal} at {at}; link it again with `hcpx connect {pack}`")]
    Revoked { family: String, principal: String, at: String, pack: String },
    #[error("the last connect of family {family} for {principal} failed at {at} ({code}); run `hcpx connect {pack}` again")]
    ConnectFailed { family: String, principal: String, at: String, code: String, pack: String },
}

impl MintError {
    /// A failure a `connect` command itself runs past: it is how the missing or revoked link gets made.
    pub fn connect_may_run(&self) -> bool {
        matches!(
            self,
            MintError::MissingField { .. } | MintError::Revoked { .. } | MintError::ConnectFailed { .. }
        )
    }
}

/// The command that links the pack's Binding: its `connect` command, when it declares one.
pub fn connect_command(pack: &Pack) -> Option<&str> {
    pack.command(CONNECT).map(|_| CONNECT)
}

/// The name of the command that establishes a Binding (docs/spec.md §3); it needs `pack.connect`.
pub const CONNECT: &str = "connect";

/// Mints the pack's Binding. `mock` is the envelope's explicit `mode: "mock"`.
pub fn mint(
    store: &Store,
    pack: &Pack,
    principal: &Principal,
    mock: bool,
) -> Result<MintedBinding, MintError> {
    let needed = required_fields(pack);
    if mock {
        let fields = needed.iter().map(|f| (f.clone(), format!("mock-{f}"))).collect();
        return Ok(MintedBinding { mode: BindingMode::Mock, fields });
    }
    let family = &pack.binding.family;
    if !crate::model::naming::is_pack_id(family) {
        return Err(MintError::BadFamily(family.clone()));
    }
    let fields = match pack.binding.mode {
        BindingMode::Public => {
            return Ok(MintedBinding { mode: BindingMode::Public, fields: BTreeMap::new() })
        }
        BindingMode::Mock => return Err(MintError::MockNotAsked(pack.id.clone())),
        BindingMode::Mothership => return Err(MintError::NoMothership(pack.id.clone())),
        BindingMode::Local | BindingMode::User => {
            if pack.binding.hub == Some(Hub::Keyring) {
                return Err(MintError::NoKeyring(pack.id.clone()));
            }
            // A family belongs to the packs a person allowed; declaring it grants nothing.
            if !store.family_allows(family, &pack.id).map_err(MintError::HubUnreadable)? {
                return Err(MintError::FamilyNotAllowed { pack: pack.id.clone(), family: family.clone() });
            }
            let rel = if pack.binding.mode == BindingMode::User {
                let id = &principal.id;
                if !crate::model::naming::is_arg_name(id) {
                    return Err(MintError::BadPrincipal(id.clone()));
                }
                store.credential_file(&principal.tenant, family, Some(id))
            } else {
                store.credential_file(&principal.tenant, family, None)
            }
            .map_err(MintError::HubUnreadable)?;
            // The last connect decides: a revoked or failed link is not used, whatever is stored.
            let link =
                store.link(&principal.tenant, family, &principal.id).map_err(MintError::HubUnreadable)?;
            if let Some(link) = link {
                use crate::store::connections::LinkState;
                let (family, who, at, pack_id) =
                    (family.clone(), principal.id.clone(), link.at.clone(), pack.id.clone());
                match link.state {
                    LinkState::Linked => {}
                    LinkState::Revoked => {
                        return Err(MintError::Revoked { family, principal: who, at, pack: pack_id })
                    }
                    LinkState::Failed => {
                        let code = link.code.map_or("failed", |c| c.as_str()).to_string();
                        return Err(MintError::ConnectFailed {
                            family,
                            principal: who,
                            at,
                            code,
                            pack: pack_id,
                        });
                    }
                }
            }
            store
                .read_json::<BTreeMap<String, String>>(&rel)
                .map_err(MintError::HubUnreadable)?
                .unwrap_or_default()
        }
    };
    if let Some(missing) = needed.iter().find(|f| !fields.contains_key(*f)) {
        let mut who = String::new();
        if principal.tenant != crate::store::principals::LOCAL_TENANT {
            who.push_str(&format!(" --tenant {}", principal.tenant));
        }
        if pack.binding.mode == BindingMode::User {
            who.push_str(&format!(" --principal {}", principal.id));
        }
        let connect = connect_command(pack)
            .map(|_| format!(", or link it with `hcpx connect {}`", pack.id))
            .unwrap_or_default();
        return Err(MintError::MissingField { family: family.clone(), field: missing.clone(), who, connect });
    }
    // A wrap receives only the fields its agent_env names; a composite gets every field of its family, as
    // handles it resolves through the host.
    let composite = pack.kind == crate::pack::AdapterKind::Composite;
    let fields = fields.into_iter().filter(|(k, _)| composite || needed.contains(k)).collect();
    Ok(MintedBinding { mode: pack.binding.mode, fields })
}
