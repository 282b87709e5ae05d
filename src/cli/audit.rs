//! `hcpx audit [--pack ID] [--since WHEN] [--limit N]`: the audit log, newest last; `hcpx audit verify`: its
//! hash chain.

use serde_json::json;
use std::time::SystemTime;

use super::{exit, fail, open_store, AuditArgs};
use crate::output::Printer;
use hcpx_store::audit::{AuditRecord, AuditRow};

/// `--since`: a time (`2026-01-31`, `2026-01-31T09:00:00Z`) or an age before now (`90m`, `2h`, `7d`).
fn since(text: &str) -> Result<SystemTime, String> {
    if let Ok(age) = humantime::parse_duration(text) {
        return Ok(SystemTime::now().checked_sub(age).unwrap_or(SystemTime::UNIX_EPOCH));
    }
    let full = if text.len() == 10 { format!("{text}T00:00:00Z") } else { text.to_string() };
    humantime::parse_rfc3339_weak(&full).map_err(|_| {
        format!("--since {text:?} is neither a time nor an age; give 2026-01-31, 2026-01-31T09:00:00Z or 2h")
    })
}

/// A SHA-256 hash as the chain writes it: 64 lowercase hex digits.
fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn at(r: &AuditRecord) -> SystemTime {
    humantime::parse_rfc3339_weak(&r.at).unwrap_or(SystemTime::UNIX_EPOCH)
}

/// `hcpx audit verify`: 0 when the chain holds, 1 naming its first broken link.
fn verify(p: &Printer, a: &super::AuditVerifyArgs) -> anyhow::Result<u8> {
    if let Some(h) = a.head.as_deref().filter(|h| !is_sha256_hex(h)) {
        return Ok(fail(
            p,
            &format!("--head {h:?} is not a head: a head is a SHA-256 hash, 64 hex digits, as the `head:` line of `hcpx audit verify` printed it; pass that line's value as it is"),
        ));
    }
    let verified = match &a.log {
        Some(log) => hcpx_store::chain::verify_exported(log, a.head.as_deref()),
        None => open_store()?.verify_audit_of(a.tenant.as_deref(), a.head.as_deref()),
    };
    let v = match verified {
        Ok(v) => v,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    if p.json {
        p.json_doc(&v);
    } else if let Some(b) = &v.broken {
        p.error(&format!("audit chain broken ({}): {}", b.kind.as_str(), b.message));
    } else {
        p.data(&format!("audit chain intact: {} line(s) in {}", v.lines, v.files.join(", ")));
        if let Some(h) = &v.head {
            p.data(&format!("head: {h}"));
            p.message(
                "keep the head somewhere hcpx cannot write, and pass it back with --head to verify later",
            );
        }
    }
    Ok(if v.ok { exit::OK } else { exit::FAILURE })
}

/// Runs `hcpx audit`.
pub fn run(p: &Printer, a: &AuditArgs) -> anyhow::Result<u8> {
    if let Some(super::AuditCmd::Verify(v)) = &a.action {
        return verify(p, v);
    }
    let from = match a.since.as_deref().map(since).transpose() {
        Ok(t) => t,
        Err(e) => return Ok(fail(p, &e)),
    };
    let mut rows = match open_store()?.audit_rows(None) {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    // A damaged line matches every filter: it is shown where it lies, whatever it was.
    rows.retain(|r| match r {
        AuditRow::Record(r) => {
            a.pack.as_ref().is_none_or(|id| &r.pack_id == id) && from.is_none_or(|t| at(r) >= t)
        }
        AuditRow::Unreadable { .. } => true,
    });
    if let Some(n) = a.limit {
        let skip = rows.len().saturating_sub(n);
        rows.drain(..skip);
    }
    let damaged: Vec<(&String, &String)> = rows
        .iter()
        .filter_map(|r| match r {
            AuditRow::Unreadable { place, reason } => Some((place, reason)),
            AuditRow::Record(_) => None,
        })
        .collect();
    let advice = "the damaged line is kept as evidence: do not edit the log, and never remove it; `hcpx audit verify` says whether the chain still holds";
    if p.json {
        let records: Vec<&AuditRecord> = rows
            .iter()
            .filter_map(|r| match r {
                AuditRow::Record(r) => Some(r),
                AuditRow::Unreadable { .. } => None,
            })
            .collect();
        let unreadable: Vec<_> =
            damaged.iter().map(|(place, reason)| json!({ "place": place, "reason": reason })).collect();
        let mut doc = json!({ "ok": damaged.is_empty(), "records": records });
        if !damaged.is_empty() {
            doc["unreadable"] = json!(unreadable);
            doc["error"] = json!(format!("{} audit line(s) cannot be read; {advice}", damaged.len()));
        }
        p.json_doc(&doc);
    } else if rows.is_empty() {
        let filtered = a.pack.is_some() || a.since.is_some() || a.limit.is_some();
        p.message(if filtered { "no audit records match" } else { "the audit log is empty" });
    } else {
        for row in &rows {
            match row {
                AuditRow::Record(r) => {
                    let mut outcome = (match (r.ok, r.outcome) {
                        (_, Some(hcpx_store::audit::Outcome::Unknown)) => "unknown",
                        (true, None) => "ok",
                        (false, None) => r.code.map_or("failed", |c| c.as_str()),
                    })
                    .to_string();
                    // A person's decision on an approval, or the approval a write waits for or ran with.
                    match (&r.decision, &r.approval) {
                        (Some(d), Some(id)) => outcome = format!("{d} {id}"),
                        (None, Some(id)) => outcome.push_str(&format!(" ({id})")),
                        _ => {}
                    }
                    p.data(&format!(
                        "{}  {}@{} via {}  {}.{}  {outcome}  args {}",
                        r.at,
                        r.principal,
                        r.tenant,
                        r.invoker,
                        r.pack_id,
                        r.verb_key,
                        r.args_sha256.get(..12).unwrap_or(&r.args_sha256)
                    ));
                }
                AuditRow::Unreadable { place, reason } => {
                    p.data(&format!("UNREADABLE  {place}: {reason}"));
                }
            }
        }
        if !damaged.is_empty() {
            p.error(&format!("{} audit line(s) cannot be read; {advice}", damaged.len()));
        }
    }
    Ok(if damaged.is_empty() { exit::OK } else { exit::FAILURE })
}
