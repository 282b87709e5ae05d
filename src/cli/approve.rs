//! `hcpx approve [ID]` and `hcpx refuse ID`: the store owner, at a terminal, decides a write the operator's
//! `human_approval` holds for a person. With no id, `approve` lists what waits, each with its card.

use serde::Serialize;

use super::{open_store, ApproveArgs, RefuseArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_model::Invoker;
use hcpx_runtime::{DecidedThrough, Runtime};
use hcpx_store::approvals::Approval;

/// `hcpx approve [ID]`.
pub fn approve(p: &Printer, a: &ApproveArgs) -> anyhow::Result<u8> {
    match &a.id {
        Some(id) => decide(p, id, true),
        None => list(p),
    }
}

/// `hcpx refuse ID`.
pub fn refuse(p: &Printer, a: &RefuseArgs) -> anyhow::Result<u8> {
    decide(p, &a.id, false)
}

fn decide(p: &Printer, id: &str, approve: bool) -> anyhow::Result<u8> {
    let store = open_store()?;
    let by = store.local_principal(Invoker::Cli).map_err(|e| anyhow::anyhow!("{e}"))?;
    let runtime = Runtime::new(store);
    let done = runtime
        .decide_approval(&by, id, approve, DecidedThrough::Terminal)
        .map_err(|r| CliError::new(r.denial.message))?;
    Ok(p.report(&Decided { ok: true, approval: done, id, approved: approve }))
}

/// The approval as decided.
#[derive(Serialize)]
struct Decided<'a> {
    ok: bool,
    approval: Approval,
    /// The id as the person gave it.
    #[serde(skip)]
    id: &'a str,
    #[serde(skip)]
    approved: bool,
}

impl Report for Decided<'_> {
    fn text(&self, out: &Text<'_>) {
        let (done, id) = (&self.approval, self.id);
        if self.approved {
            out.message(&format!(
                "approved {id}: {}.{} for principal {} (tenant {}) runs once when it is called again with \"approval_id\": \"{id}\", until {}",
                done.pack_id, done.verb_key, done.principal, done.tenant, done.expires_at()
            ));
        } else {
            out.message(&format!("refused {id}: {}.{} never runs", done.pack_id, done.verb_key));
        }
    }
}

fn list(p: &Printer) -> anyhow::Result<u8> {
    let pending = open_store()?.approvals_pending().or_fail()?;
    Ok(p.report(&Pending { ok: true, pending }))
}

/// The writes that wait for a person, each with its card.
#[derive(Serialize)]
struct Pending {
    ok: bool,
    pending: Vec<Approval>,
}

impl Report for Pending {
    fn text(&self, out: &Text<'_>) {
        if self.pending.is_empty() {
            out.message("no write waits for a person");
        }
        for a in &self.pending {
            out.data(&card_text(a));
        }
    }
}

/// One pending approval as a person reads it: what, for whom, the card, until when, and how to decide it.
fn card_text(a: &Approval) -> String {
    let mut text = format!(
        "{}  {}.{} for {} (tenant {}, through {}), until {}",
        a.id,
        a.pack_id,
        a.verb_key,
        a.principal,
        a.tenant,
        a.invoker.as_str(),
        a.expires_at()
    );
    if let Some(card) = &a.preview {
        if let Some(t) = &card.title {
            text.push_str(&format!("\n    {t}"));
        }
        for (k, v) in &card.fields {
            text.push_str(&format!("\n    {k}: {v}"));
        }
    }
    text.push_str(&format!("\n    hcpx approve {0}   |   hcpx refuse {0}", a.id));
    text
}
