//! `hcpx publish DIR REF`: lint and check the pack (refusing below `--min-score`), then push its artifact and
//! print the manifest digest; `--sign KEY` adds a cosign-compatible signature.

use serde::Serialize;

use super::PublishArgs;
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_author::check::CheckOptions;
use hcpx_registry::{self as distribution, sign::PrivateKey, PackRef};

/// Runs `hcpx publish`.
pub fn run(p: &Printer, a: &PublishArgs) -> anyhow::Result<u8> {
    let r = PackRef::parse(&a.reference).or_fail()?;
    if r.tag.is_none() {
        return Err(CliError::new(format!(
            "publish to a tag: {}:TAG (the digest is printed once it is pushed)",
            a.reference.split('@').next().unwrap_or("")
        ))
        .into());
    }
    let key = match &a.sign {
        Some(path) => {
            let pem = std::fs::read_to_string(path).map_err(|e| {
                CliError::new(format!(
                    "cannot read the signing key {}: {}",
                    path.display(),
                    hcpx_model::io_reason(&e)
                ))
            })?;
            Some(PrivateKey::from_pem(&pem).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?)
        }
        None => None,
    };
    let lint = hcpx_pack::lint::lint_dir(&a.dir);
    if !lint.ok {
        return Err(CliError::new(format!(
            "pack {} fails lint with {} issue(s); run hcpx lint {} and fix them before publishing",
            a.dir.display(),
            lint.issues.len(),
            a.dir.display()
        ))
        .into());
    }
    let env = super::exec::trial_env(&super::ProjectArg::default()).map_err(CliError::new)?;
    let opts = CheckOptions { probe: false, eval: true, timeout_ms: a.timeout, env };
    let report = super::check::checked_with_progress(p, &a.dir, &opts);
    if report.errors > 0 || report.score < a.min_score {
        return Err(CliError::new(format!(
            "pack {} scores {} with {} error(s) and {} warning(s), below the {} a publish needs; run hcpx check {} and fix what it lists (or lower --min-score)",
            a.dir.display(),
            report.score,
            report.errors,
            report.warnings,
            a.min_score,
            a.dir.display()
        ))
        .into());
    }
    let done = distribution::publish(&a.dir, &r, key.as_ref(), &a.registry.options()).or_fail()?;
    let pinned = done.reference.at_digest(&done.digest);
    Ok(p.report(&Pushed {
        ok: true,
        pack_id: done.id,
        reference: done.reference.to_string(),
        digest: done.digest,
        pinned: pinned.to_string(),
        score: report.score,
        signed_by: done.signed_by,
    }))
}

/// The pack pushed: where, at which digest, with which score and signer.
#[derive(Serialize)]
struct Pushed {
    ok: bool,
    pack_id: String,
    reference: String,
    digest: String,
    pinned: String,
    score: u32,
    signed_by: Option<String>,
}

impl Report for Pushed {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("published {} (score {}) as {}", self.pack_id, self.score, self.reference));
        match &self.signed_by {
            Some(f) => out.message(&format!("signed by key {f}")),
            None => out.message("not signed: hosts will need --allow-unsigned; sign with --sign KEY"),
        }
        out.message(&format!("install it pinned: hcpx install {}", self.pinned));
        out.data(&self.digest);
    }
}
