//! `hcpx check --agent`: the report as a fix list for a coding agent (docs/check.md, `--agent`).

use super::{CheckReport, Finding, Severity};

fn location(f: &Finding) -> String {
    match (f.file.is_empty(), f.pointer.is_empty()) {
        (true, _) => "pack".into(),
        (false, true) => f.file.clone(),
        (false, false) => format!("{} `{}`", f.file, f.pointer),
    }
}

fn section(out: &mut String, title: &str, findings: &[&Finding]) {
    if findings.is_empty() {
        return;
    }
    out.push_str(&format!("\n## {title}\n\n"));
    for (i, f) in findings.iter().enumerate() {
        out.push_str(&format!(
            "{}. **{}** ({}): {}\n   Do: {}\n   Why: {}\n",
            i + 1,
            location(f),
            f.id,
            f.message,
            f.fix,
            f.docs
        ));
    }
}

/// The Markdown `--agent` prints; `dir` is how the user named the pack directory.
pub fn agent_markdown(r: &CheckReport, dir: &str) -> String {
    let name = r.pack_id.clone().unwrap_or_else(|| dir.to_string());
    let mut out = format!(
        "# hcpx check: {name}\n\nScore {}/100, grade {}. {} error(s), {} warning(s).",
        r.score, r.grade, r.errors, r.warnings
    );
    if r.ready {
        out.push_str(" Ready to share.");
    }
    out.push('\n');
    let of = |s: Severity| r.findings.iter().filter(|f| f.severity == s).collect::<Vec<_>>();
    section(&mut out, "Fix now (errors)", &of(Severity::Error));
    section(&mut out, "Fix next (warnings)", &of(Severity::Warning));
    section(&mut out, "Notes (never fail)", &of(Severity::Info));
    if let Some(e) = &r.evals {
        out.push_str("\n## Evals\n\n| case | result | ms | tokens |\n|------|--------|----|--------|\n");
        for c in &e.cases {
            let result = match &c.reason {
                None => "pass".to_string(),
                Some(why) => format!("FAIL: {}", why.replace('|', "\\|")),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                c.name.replace('|', "\\|"),
                result,
                c.ms,
                c.tokens
            ));
        }
        out.push_str(&format!("\n{}.\n", e.summary()));
    }
    out.push_str(&format!(
        "\n## Loop\n\nFix the errors, then the warnings, and run `hcpx check {dir} --probe --agent` again after each change. \
Stop at 90 or more with no errors. Never weaken an eval expectation to make a case pass.\n"
    ));
    out
}
