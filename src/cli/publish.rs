//! `hcpx publish DIR REF`: lint and check the pack (refusing below `--min-score`), then push its artifact and
//! print the manifest digest; `--sign KEY` adds a cosign-compatible signature.

use serde_json::json;

use super::{exit, fail, PublishArgs};
use crate::output::Printer;
use hcpx_author::check::CheckOptions;
use hcpx_registry::{self as distribution, sign::PrivateKey, PackRef};

/// Runs `hcpx publish`.
pub fn run(p: &Printer, a: &PublishArgs) -> anyhow::Result<u8> {
    let r = match PackRef::parse(&a.reference) {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if r.tag.is_none() {
        return Ok(fail(
            p,
            &format!(
                "publish to a tag: {}:TAG (the digest is printed once it is pushed)",
                a.reference.split('@').next().unwrap_or("")
            ),
        ));
    }
    let key = match &a.sign {
        Some(path) => match std::fs::read_to_string(path) {
            Ok(pem) => match PrivateKey::from_pem(&pem) {
                Ok(k) => Some(k),
                Err(e) => return Ok(fail(p, &format!("{}: {e}", path.display()))),
            },
            Err(e) => {
                return Ok(fail(
                    p,
                    &format!("cannot read the signing key {}: {}", path.display(), hcpx_model::io_reason(&e)),
                ))
            }
        },
        None => None,
    };
    let lint = hcpx_pack::lint::lint_dir(&a.dir);
    if !lint.ok {
        return Ok(fail(
            p,
            &format!(
                "pack {} fails lint with {} issue(s); run hcpx lint {} and fix them before publishing",
                a.dir.display(),
                lint.issues.len(),
                a.dir.display()
            ),
        ));
    }
    let env = match super::exec::trial_env(&super::ProjectArg::default()) {
        Ok(env) => env,
        Err(e) => return Ok(fail(p, &e)),
    };
    let opts = CheckOptions { probe: false, eval: true, timeout_ms: a.timeout, env };
    let report = super::check::checked_with_progress(p, &a.dir, &opts);
    if report.errors > 0 || report.score < a.min_score {
        return Ok(fail(p, &format!(
            "pack {} scores {} with {} error(s) and {} warning(s), below the {} a publish needs; run hcpx check {} and fix what it lists (or lower --min-score)",
            a.dir.display(),
            report.score,
            report.errors,
            report.warnings,
            a.min_score,
            a.dir.display()
        )));
    }
    match distribution::publish(&a.dir, &r, key.as_ref(), &a.registry.options()) {
        Ok(done) => {
            let pinned = done.reference.at_digest(&done.digest);
            if p.json {
                p.json_doc(&json!({
                    "ok": true, "pack_id": done.id, "reference": done.reference.to_string(), "digest": done.digest,
                    "pinned": pinned.to_string(), "score": report.score, "signed_by": done.signed_by,
                }));
            } else {
                p.message(&format!("published {} (score {}) as {}", done.id, report.score, done.reference));
                match &done.signed_by {
                    Some(f) => p.message(&format!("signed by key {f}")),
                    None => p.message("not signed: hosts will need --allow-unsigned; sign with --sign KEY"),
                }
                p.message(&format!("install it pinned: hcpx install {pinned}"));
                p.data(&done.digest);
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}
