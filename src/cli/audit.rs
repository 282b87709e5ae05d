//! `hcpx audit [--tenant T] [--pack ID] [--egress] [--since WHEN] [--limit N]`: the audit log, newest last; `hcpx audit
//! verify`: its hash chain.

use serde::Serialize;
use std::time::SystemTime;

use super::{exit, open_store, AuditArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_store::audit::{AuditRecord, AuditRow};
use hcpx_store::chain::Verified;

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
        return Err(CliError::new(format!("--head {h:?} is not a head: a head is a SHA-256 hash, 64 hex digits, as the `head:` line of `hcpx audit verify` printed it; pass that line's value as it is")).into());
    }
    let verified = match &a.log {
        Some(log) => hcpx_store::chain::verify_exported(log, a.head.as_deref()),
        None => open_store()?.verify_audit_of(a.tenant.as_deref(), a.head.as_deref()),
    };
    Ok(p.report(&verified.or_fail()?))
}

impl Report for Verified {
    fn text(&self, out: &Text<'_>) {
        if let Some(b) = &self.broken {
            out.error(&format!("audit chain broken ({}): {}", b.kind.as_str(), b.message));
            return;
        }
        out.data(&format!("audit chain intact: {} line(s) in {}", self.lines, self.files.join(", ")));
        if let Some(h) = &self.head {
            out.data(&format!("head: {h}"));
            out.message(
                "keep the head somewhere hcpx cannot write, and pass it back with --head to verify later",
            );
        }
    }

    fn exit(&self) -> u8 {
        if self.ok {
            exit::OK
        } else {
            exit::FAILURE
        }
    }
}

/// What a person is told of damaged lines in the log.
const ADVICE: &str = "the damaged line is kept as evidence: do not edit the log, and never remove it; `hcpx audit verify` says whether the chain still holds";

/// Runs `hcpx audit`.
pub fn run(p: &Printer, a: &AuditArgs) -> anyhow::Result<u8> {
    if let Some(super::AuditCmd::Verify(v)) = &a.action {
        return verify(p, v);
    }
    let from = a.since.as_deref().map(since).transpose().map_err(CliError::new)?;
    let store = open_store()?;
    if let Some(t) = &a.tenant {
        let known = store.tenants().or_fail()?;
        if !known.contains(t) {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            return Err(CliError::new(format!(
                "tenant {t:?} is not a tenant of this store ({}): no Principal, issuer, activation or audit line names it; its tenants are {}",
                super::store_named(&store),
                names.join(", ")
            ))
            .into());
        }
    }
    let mut rows = store.audit_rows(a.tenant.as_deref()).or_fail()?;
    // A damaged line matches every filter: it is shown where it lies, whatever it was.
    rows.retain(|r| match r {
        AuditRow::Record(r) => {
            a.pack.as_ref().is_none_or(|id| &r.pack_id == id)
                && from.is_none_or(|t| at(r) >= t)
                && (!a.egress || r.egress.is_some())
        }
        AuditRow::Unreadable { .. } => true,
    });
    if let Some(n) = a.limit {
        let skip = rows.len().saturating_sub(n);
        rows.drain(..skip);
    }
    let records = rows
        .iter()
        .filter_map(|r| match r {
            AuditRow::Record(r) => Some(r.as_ref()),
            AuditRow::Unreadable { .. } => None,
        })
        .collect();
    let unreadable: Vec<Unreadable<'_>> = rows
        .iter()
        .filter_map(|r| match r {
            AuditRow::Unreadable { place, reason } => Some(Unreadable { place, reason }),
            AuditRow::Record(_) => None,
        })
        .collect();
    let error = (!unreadable.is_empty())
        .then(|| format!("{} audit line(s) cannot be read; {ADVICE}", unreadable.len()));
    Ok(p.report(&Records {
        ok: unreadable.is_empty(),
        records,
        unreadable,
        error,
        rows: &rows,
        filtered: a.pack.is_some()
            || a.since.is_some()
            || a.limit.is_some()
            || a.egress
            || a.tenant.is_some(),
    }))
}

/// The audit records that match, and the lines that cannot be read (which fail the command).
#[derive(Serialize)]
struct Records<'a> {
    ok: bool,
    records: Vec<&'a AuditRecord>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unreadable: Vec<Unreadable<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Records and damaged lines in the order of the log.
    #[serde(skip)]
    rows: &'a [AuditRow],
    /// Whether a filter was given.
    #[serde(skip)]
    filtered: bool,
}

/// An outgoing request's row: who, which command, the request, what it was answered, its class, the rule that
/// allowed it or why it was refused, and its bytes (up to the origin / down to the command).
fn egress_line(r: &AuditRecord) -> String {
    let Some(e) = &r.egress else { return String::new() };
    let mut line = format!(
        "{}  egress {} {}://{}:{} {} {}",
        who_and_what(r),
        if e.method.is_empty() { "-" } else { &e.method },
        e.scheme.as_deref().unwrap_or("-"),
        e.host,
        e.port,
        e.status.map_or("-".to_string(), |s| s.to_string()),
        e.class()
    );
    match (&e.refused, &e.rule, &e.reason) {
        (None, Some(rule), _) => line.push_str(&format!(" by {rule}")),
        (Some(_), _, Some(reason)) => line.push_str(&format!(" ({reason})")),
        _ => {}
    }
    line.push_str(&format!("  {}/{} B", e.bytes_up, e.bytes_down));
    line
}

/// An operator's change of a setting (`hcpx config`): who, the document, the key, old → new.
fn setting_line(r: &AuditRecord) -> String {
    let Some(s) = &r.setting else { return String::new() };
    let v = |v: &Option<serde_json::Value>| v.as_ref().map_or("(not set)".to_string(), |v| v.to_string());
    let action = if r.action == Some(hcpx_store::audit::AuditAction::ConfigUnset) { "unset" } else { "set" };
    format!(
        "{}  {}@{} via {}  config {action} {} {}: {} → {}",
        r.at,
        r.principal,
        r.tenant,
        r.invoker,
        s.document,
        s.key,
        v(&s.old),
        v(&s.new)
    )
}

/// When, who through which face, and which command: how every line of `hcpx audit` starts.
fn who_and_what(r: &AuditRecord) -> String {
    format!("{}  {}@{} via {}  {}.{}", r.at, r.principal, r.tenant, r.invoker, r.pack_id, r.verb_key)
}

/// A line of the log that cannot be read: where, and why.
#[derive(Serialize)]
struct Unreadable<'a> {
    place: &'a str,
    reason: &'a str,
}

impl Report for Records<'_> {
    fn text(&self, out: &Text<'_>) {
        if self.rows.is_empty() {
            out.message(if self.filtered { "no audit records match" } else { "the audit log is empty" });
            return;
        }
        for row in self.rows {
            match row {
                AuditRow::Record(r) if r.egress.is_some() => out.data(&egress_line(r)),
                AuditRow::Record(r) if r.setting.is_some() => out.data(&setting_line(r)),
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
                    out.data(&format!(
                        "{}  {outcome}  args {}",
                        who_and_what(r),
                        r.args_sha256.get(..12).unwrap_or(&r.args_sha256)
                    ));
                }
                AuditRow::Unreadable { place, reason } => {
                    out.data(&format!("UNREADABLE  {place}: {reason}"));
                }
            }
        }
        if let Some(e) = &self.error {
            out.error(e);
        }
    }

    fn exit(&self) -> u8 {
        if self.ok {
            exit::OK
        } else {
            exit::FAILURE
        }
    }
}
