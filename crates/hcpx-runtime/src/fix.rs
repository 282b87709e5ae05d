//! The denials that name their fix: the exact `hcpx` line (or grants change) that would let the call through,
//! and the closest known name when a pack id or command is mistyped. Every face carries the same message.

use crate::model::grants::Capability;
use crate::model::suggest::closest;
use crate::model::{Code, Denial, Invoker, Principal};
use crate::pack::Pack;

/// `unknown_pack`: names the closest of `known` (the packs the caller may be told of) and the install command.
pub fn unknown_pack<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Denial {
    let message = match closest(id, known) {
        Some(near) => {
            format!("unknown pack {id}; did you mean `{near}`? otherwise install it with `hcpx install DIR`")
        }
        None => format!("unknown pack {id}; install it with `hcpx install DIR`"),
    };
    Denial::new(Code::UnknownPack, message)
}

/// `no_policy`: the pack has no command (nor pass-through subcommand) `verb`. The message starts with
/// docs/spec.md §9 step 1's `no policy for <verb_key>`, then names the closest command and the one that lists them.
pub fn no_command<'a>(pack_id: &str, verb: &str, known: impl IntoIterator<Item = &'a str>) -> Denial {
    let message = match closest(verb, known) {
        Some(near) => {
            format!("no policy for {verb}; pack {pack_id} has no command `{verb}`; did you mean `{near}`? `hcpx commands {pack_id}` lists them")
        }
        None => {
            format!("no policy for {verb}; pack {pack_id} has no command `{verb}`; `hcpx commands {pack_id}` lists them")
        }
    };
    Denial::new(Code::NoPolicy, message)
}

/// `no_policy` for an installed pack, its named commands and pass-through subcommands the candidates.
pub fn no_command_in(pack: &Pack, verb: &str) -> Denial {
    let pass = pack.pass_through.iter().flat_map(|p| p.policy.keys());
    no_command(&pack.id, verb, pack.commands.keys().chain(pass).map(String::as_str))
}

/// `not_activated`: names the activate command (for a served tenant, the one its operator runs).
pub fn not_activated(pack_id: &str, tenant: &str) -> Denial {
    let message = if tenant == crate::store::principals::LOCAL_TENANT {
        format!("pack {pack_id} not activated; {}", activate_fix(pack_id, tenant))
    } else {
        format!("pack {pack_id} not activated for tenant {tenant}; {}", activate_fix(pack_id, tenant))
    };
    Denial::new(Code::NotActivated, message)
}

/// How a pack gets activated for `tenant`: the local user runs it; a served tenant's operator does.
pub fn activate_fix(pack_id: &str, tenant: &str) -> String {
    if tenant == crate::store::principals::LOCAL_TENANT {
        format!("activate it with `hcpx activate {pack_id}`")
    } else {
        format!("its operator activates it with `hcpx activate {pack_id} --tenant {tenant}`")
    }
}

/// `denied` for a missing capability: the local Principal's fix is a `hcpx grant` line (grants.json); a served
/// Principal's (over HTTP, or in a tenant of its own) is the operator's `hcpx principal grant ID GRANT`.
pub fn missing_grant(principal: &Principal, cap: Capability, pack_id: &str, verb: &str) -> Denial {
    let grant = format!("{cap}:{pack_id}:{verb}");
    let fix =
        if principal.invoker == Invoker::Http || principal.tenant != crate::store::principals::LOCAL_TENANT {
            format!("an operator grants it with `hcpx principal grant {} {grant}`", principal.id)
        } else {
            format!("grant it with `hcpx grant {grant}`")
        };
    Denial::new(Code::Denied, format!("denied: missing {cap} for {pack_id}.{verb}; {fix}"))
}
