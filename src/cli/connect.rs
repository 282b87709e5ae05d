//! `hcpx connect PACK`: runs the pack's `connect` command through the pipeline (it needs `pack.connect`), whose
//! outcome becomes the family's link for the local Principal; `--revoke` takes the link back.

use serde::Serialize;

use super::{open_store, ConnectArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
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
    let pack = runtime.installed_pack(&a.id).map_err(|d| CliError::new(d.message))?;
    let family = pack.binding.family.clone();
    if a.revoke {
        let link = Link {
            state: LinkState::Revoked,
            at: hcpx_model::clock::now_rfc3339(),
            pack_id: pack.id.clone(),
            code: None,
        };
        runtime.store().record_link(&principal.tenant, &family, &principal.id, link).or_fail()?;
        return Ok(p.report(&Revoked {
            ok: true,
            family: &family,
            principal: &principal.id,
            state: "revoked",
            pack_id: &pack.id,
        }));
    }
    if connect_command(&pack).is_none() {
        return Err(CliError::new(format!(
            "pack {} has no `connect` command; store its credential with `hcpx credential set {family} FIELD`",
            pack.id
        ))
        .into());
    }
    let out = runtime.exec_words(
        &principal,
        &Envelope::new(&pack.id, CONNECT, Default::default()),
        &a.words,
        &hcpx_runtime::adapter::NoHooks,
    );
    Ok(p.report(&super::exec::Call::new(&out, |t: &Text<'_>| {
        if out.ok {
            t.data(&format!("linked family {family} for {} (pack {})", principal.id, pack.id));
        } else {
            super::exec::print_failure(t, &out);
        }
    })))
}

/// `hcpx connect --revoke`: the link taken back.
#[derive(Serialize)]
struct Revoked<'a> {
    ok: bool,
    family: &'a str,
    principal: &'a str,
    state: &'static str,
    #[serde(skip)]
    pack_id: &'a str,
}

impl Report for Revoked<'_> {
    fn text(&self, out: &Text<'_>) {
        let (family, pack) = (self.family, self.pack_id);
        out.data(&format!("revoked the link of family {family} for {}", self.principal));
        out.message(&format!("calls of every pack of {family} are refused until `hcpx connect {pack}` succeeds again; the stored credential is kept (`hcpx credential rm {family}` removes it)"));
    }
}
