//! `hcpx connect PACK`: runs the pack's `connect` command through the pipeline (it needs `pack.connect`), whose
//! outcome becomes the family's link for the local Principal; `--revoke` takes the link back.

use super::{exit, fail, open_store, ConnectArgs};
use crate::output::Printer;
use hcpx_model::{Envelope, Invoker};
use hcpx_runtime::binding::{connect_command, CONNECT};
use hcpx_runtime::Runtime;
use hcpx_store::connections::{Link, LinkState};

/// Runs `hcpx connect`.
pub fn run(p: &Printer, a: &ConnectArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    let principal = store.local_principal(Invoker::Cli).map_err(|e| anyhow::anyhow!("{e}"))?;
    let runtime =
        Runtime::new(store).one_shot().with_project_dir(super::exec::project_dir(&Default::default())?);
    let pack = match runtime.installed_pack(&a.id) {
        Ok(pack) => pack,
        Err(d) => return Ok(fail(p, &d.message)),
    };
    let family = pack.binding.family.clone();
    if a.revoke {
        let link = Link {
            state: LinkState::Revoked,
            at: hcpx_model::clock::now_rfc3339(),
            pack_id: pack.id.clone(),
            code: None,
        };
        if let Err(e) = runtime.store().record_link(&principal.tenant, &family, &principal.id, link) {
            return Ok(fail(p, &e.to_string()));
        }
        if p.json {
            p.json_doc(&serde_json::json!({ "ok": true, "family": family, "principal": principal.id, "state": "revoked" }));
        } else {
            p.data(&format!("revoked the link of family {family} for {}", principal.id));
            p.message(&format!("calls of every pack of {family} are refused until `hcpx connect {}` succeeds again; the stored credential is kept (`hcpx credential rm {family}` removes it)", pack.id));
        }
        return Ok(exit::OK);
    }
    if connect_command(&pack).is_none() {
        return Ok(fail(
            p,
            &format!("pack {} has no `connect` command; store its credential with `hcpx credential set {family} FIELD`", pack.id),
        ));
    }
    let out = runtime.exec_words(
        &principal,
        &Envelope::new(&pack.id, CONNECT, Default::default()),
        &a.words,
        &hcpx_runtime::adapter::NoHooks,
    );
    if p.json {
        p.json_doc(&out);
    } else if out.ok {
        p.data(&format!("linked family {family} for {} (pack {})", principal.id, pack.id));
    } else {
        super::exec::print_failure(p, &out);
    }
    Ok(super::exec::exit_of(&out))
}
