//! Usage errors under `--json`: clap's own error, as the one JSON document on stdout (`code: usage`, exit 2),
//! so a caller that asked for JSON never has to parse clap's text.

use serde::Serialize;

use super::exit;
use crate::output::Printer;

/// `--help` or `--version` under `--json`: clap's text.
#[derive(Serialize)]
struct Help {
    ok: bool,
    help: String,
}

/// A usage error under `--json`: clap's message, and the usage line of the command it is about.
#[derive(Serialize)]
struct UsageError {
    ok: bool,
    code: &'static str,
    error: String,
    usage: Option<String>,
}

/// Whether `--json` is on the command line (before a `--`, after which words are a command's arguments).
pub fn json_requested() -> bool {
    std::env::args_os().skip(1).take_while(|a| a != "--").any(|a| a == "--json")
}

/// Reports a clap error (or `--help` / `--version`, which clap raises as one) and returns the exit code.
pub fn report(e: &clap::Error) -> u8 {
    let code = if e.use_stderr() { exit::USAGE } else { exit::OK };
    if !json_requested() {
        let _ = e.print();
        return code;
    }
    let text = e.render().to_string();
    let p = Printer::new(true);
    if code == exit::OK {
        p.json_doc(&Help { ok: true, help: text });
        return code;
    }
    // clap's text: `error: …`, tips, a blank line, `Usage: …`, and where to read more.
    let mut error = String::new();
    let mut usage = None;
    let mut in_error = false;
    let mut listed = false;
    for line in text.lines().map(str::trim) {
        if let Some(m) = line.strip_prefix("error: ") {
            error = m.trim_end_matches(':').to_string();
            in_error = true;
        } else if let Some(tip) = line.strip_prefix("tip: ") {
            error = format!("{error}; {tip}");
        } else if let Some(u) = line.strip_prefix("Usage: ") {
            usage = Some(u.replace(" --json", ""));
        } else if line.is_empty() {
            in_error = false;
        } else if in_error {
            // The values an error lists on the lines below it (`<ID>` for a missing argument).
            error = format!("{error}{}{line}", if listed { ", " } else { ": " });
            listed = true;
        }
    }
    let words: Vec<&str> = usage
        .as_deref()
        .unwrap_or("hcpx")
        .split(' ')
        .take_while(|w| !w.starts_with(['[', '<', '-']))
        .collect();
    let usage_of = if words.is_empty() { "hcpx".to_string() } else { words.join(" ") };
    let error = format!("{error}; see `{usage_of} --help`");
    p.json_doc(&UsageError { ok: false, code: "usage", error, usage });
    code
}
