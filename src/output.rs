//! The one printer: every byte the CLI writes goes through here (data on stdout, messages on stderr).

use serde::Serialize;
use std::io::{self, IsTerminal, Write};

/// Where and how the CLI writes.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    /// `--json`: exactly one JSON document on stdout.
    pub json: bool,
    /// Colour on stderr (a TTY, and `NO_COLOR` unset).
    pub color: bool,
    /// Colour on stdout (a TTY, and `NO_COLOR` unset).
    color_out: bool,
    /// Progress lines on stderr: a TTY, and not `--json`.
    progress: bool,
}

impl Printer {
    /// A printer for this process's streams.
    pub fn new(json: bool) -> Printer {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let err_tty = io::stderr().is_terminal();
        Printer { json, color: !no_color && err_tty, color_out: !no_color && io::stdout().is_terminal(), progress: !json && err_tty }
    }

    /// Writes one JSON document and a newline to stdout.
    pub fn json_doc<T: Serialize>(&self, value: &T) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|e| {
            format!("{{\"ok\":false,\"error\":\"cannot encode output: {e}\",\"code\":\"internal\"}}")
        });
        out_line(&text);
    }

    /// Writes a line of data to stdout.
    pub fn data(&self, line: &str) {
        out_line(line);
    }

    /// Writes a message to stderr.
    pub fn message(&self, line: &str) {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }

    /// Replaces the progress line on stderr with `line`; nothing without a terminal or under `--json`.
    pub fn progress(&self, line: &str) {
        if self.progress {
            let _ = write!(io::stderr().lock(), "\r\x1b[2K{line}");
        }
    }

    /// Clears the progress line.
    pub fn progress_done(&self) {
        if self.progress {
            let _ = write!(io::stderr().lock(), "\r\x1b[2K");
        }
    }

    /// Writes an error message to stderr, `error:` in red when colour is on.
    pub fn error(&self, line: &str) {
        let label = if self.color { "\x1b[31merror\x1b[0m" } else { "error" };
        let _ = writeln!(io::stderr().lock(), "{label}: {line}");
    }

    /// A severity label for data lines, coloured only when stdout is a terminal and `NO_COLOR` is unset.
    pub fn label(&self, text: &str, ansi: &str) -> String {
        if self.color_out {
            format!("\x1b[{ansi}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

fn out_line(text: &str) {
    let mut out = io::stdout().lock();
    // A closed pipe (`hcpx … | head`) is not an error worth a panic.
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
