//! The confirm gate at a terminal: a gated write refused without `confirm=true` shows the person the approval
//! card and the exact line that runs it once they agree (and `--json` carries that line as the `hint`).

use super::ExecArgs;
use crate::report::Text;
use hcpx_model::{Code, Preview, ResultEnvelope};

/// The `hcpx exec` line that repeats this call with `confirm=true` (a `confirm=`/`apply=` word given is
/// replaced).
pub fn rerun_line(a: &ExecArgs) -> String {
    let mut line = format!("hcpx exec {} {}", shell_quote(&a.id), shell_quote(&a.verb));
    if let Some(m) = &a.mode {
        line.push_str(&format!(" --mode {}", shell_quote(m)));
    }
    if let Some(id) = &a.project_id {
        line.push_str(&format!(" --project-id {}", shell_quote(id)));
    }
    line.push_str(" --");
    let gate = |w: &str| ["confirm=", "apply=", "confirm:=", "apply:="].iter().any(|g| w.starts_with(g));
    for w in a.words.iter().filter(|w| !gate(w)) {
        line.push(' ');
        line.push_str(&shell_quote(w));
    }
    line.push_str(" confirm=true");
    line
}

/// `word` as a POSIX shell reads it back: bare when it is only safe characters, else in single quotes.
fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The approval card as lines of text: its kind, its title, one `field: value` line each.
pub fn card_lines(card: &Preview) -> Vec<String> {
    let mut lines = vec![format!("approval card ({}):", card.kind)];
    lines.extend(card.title.iter().map(|t| format!("  {t}")));
    lines.extend(card.fields.iter().map(|(k, v)| format!("  {k}: {v}")));
    lines
}

/// True when `out` is the confirm gate's refusal.
fn gated(out: &ResultEnvelope) -> bool {
    out.code == Some(Code::ConfirmRequired)
}

/// The envelope `--json` prints: on the gate's refusal, its `hint` is the rerun line.
pub fn with_hint(a: &ExecArgs, out: &ResultEnvelope) -> Option<ResultEnvelope> {
    if !gated(out) || out.hint.is_some() {
        return None;
    }
    let mut shown = out.clone();
    shown.hint = Some(format!("once the person agrees, run: {}", rerun_line(a)));
    Some(shown)
}

/// Text mode, on stderr: the approval card (the envelope's preview) and the rerun line, or the hint of a
/// command deferred to the CLI (`hcp-cli`'s store changes).
pub fn print_card(p: &Text<'_>, a: &ExecArgs, out: &ResultEnvelope) {
    for line in out.preview.as_ref().map(card_lines).unwrap_or_default() {
        p.message(&line);
    }
    if gated(out) {
        p.message("once the person agrees, run:");
        p.message(&format!("  {}", rerun_line(a)));
    } else if let Some(hint) = &out.hint {
        p.message(hint);
    }
}
