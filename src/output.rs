//! The one printer: every byte the CLI writes goes through here (data on stdout, messages on stderr). Text it
//! did not write itself (a command's output, a pack's titles and descriptions, a caller's arguments) has its
//! control characters shown escaped, so nothing a pack or caller says can move the cursor, set the title or
//! reach the clipboard (OSC 52) of the terminal it is shown on.

use serde::Serialize;
use std::borrow::Cow;
use std::io::{self, IsTerminal, Write};

use crate::report::{Report, Text};

/// `text` with every control character but tab and newline shown as `\xNN` (C0, DEL and C1 alike), and the
/// invisible characters that reorder text (bidirectional overrides, zero-width marks) as `\u{NNNN}`.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    hcpx_model::shown::shown(text)
}

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
        Printer {
            json,
            color: !no_color && err_tty,
            color_out: !no_color && io::stdout().is_terminal(),
            progress: !json && err_tty,
        }
    }

    /// Prints a command's report: its JSON document under `--json`, else its text; returns its exit code.
    pub fn report(&self, r: &impl Report) -> u8 {
        if self.json {
            self.json_doc(r);
        } else {
            r.text(&Text::new(self));
        }
        r.exit()
    }

    /// Prints one record of a stream (`hcpx sense watch --follow`): a JSON line under `--json`, else its text.
    pub fn report_line(&self, r: &impl Report) {
        if self.json {
            self.json_line(r);
        } else {
            r.text(&Text::new(self));
        }
    }

    /// Whether live progress may be drawn on stderr: a terminal, and not `--json`.
    pub fn live(&self) -> bool {
        self.progress
    }

    /// Writes one JSON document and a newline to stdout.
    pub fn json_doc<T: Serialize>(&self, value: &T) {
        let text = serde_json::to_string_pretty(value).unwrap_or_else(|e| {
            format!("{{\"ok\":false,\"error\":\"cannot encode output: {e}\",\"code\":\"internal\"}}")
        });
        out_line(&text);
    }

    /// Writes one JSON value as a single line on stdout: a stream's record (`hcpx sense watch --follow --json`).
    pub fn json_line<T: Serialize>(&self, value: &T) {
        let text = serde_json::to_string(value).unwrap_or_else(|e| {
            format!("{{\"ok\":false,\"error\":\"cannot encode output: {e}\",\"code\":\"internal\"}}")
        });
        out_line(&text);
    }

    /// Writes a line of data to stdout (control characters shown escaped).
    pub fn data(&self, line: &str) {
        out_line(&terminal_safe(line));
    }

    /// Writes a line of data to stdout that starts with a severity label, coloured only when stdout is a
    /// terminal and `NO_COLOR` is unset; the rest is shown with its control characters escaped.
    pub fn data_labeled(&self, label: &str, ansi: &str, rest: &str) {
        let label = if self.color_out { format!("\x1b[{ansi}m{label}\x1b[0m") } else { label.to_string() };
        out_line(&format!("{label}{}", terminal_safe(rest)));
    }

    /// Writes rows of data to stdout as columns under a header, each padded to its widest cell (by characters),
    /// two spaces apart; the last column is not padded.
    pub fn table(&self, header: &[&str], rows: &[Vec<String>]) {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(terminal_safe(cell).chars().count());
            }
        }
        let line = |cells: Vec<String>| {
            let last = cells.len().saturating_sub(1);
            let mut out = String::new();
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                out.push_str(cell);
                if i < last {
                    out.push_str(&" ".repeat(w - cell.chars().count() + 2));
                }
            }
            out_line(out.trim_end());
        };
        line(header.iter().map(|h| h.to_string()).collect());
        for row in rows {
            line(row.iter().map(|c| terminal_safe(c).into_owned()).collect());
        }
    }

    /// Writes a message to stderr (control characters shown escaped).
    pub fn message(&self, line: &str) {
        let _ = writeln!(io::stderr().lock(), "{}", terminal_safe(line));
    }

    /// Replaces the progress line on stderr with `line`; nothing without a terminal or under `--json`.
    pub fn progress(&self, line: &str) {
        if self.progress {
            let _ = write!(io::stderr().lock(), "\r\x1b[2K{}", terminal_safe(line));
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
        let _ = writeln!(io::stderr().lock(), "{label}: {}", terminal_safe(line));
    }
}

fn out_line(text: &str) {
    let mut out = io::stdout().lock();
    // A closed pipe (`hcpx … | head`) is not an error worth a panic.
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
