//! Typed reports and errors, shared by the output modes: a command builds one value saying what it found or did,
//! and [`Printer::report`] prints it as text or, under `--json`, as the one JSON document (its `Serialize`); a
//! command that fails returns a [`CliError`] through `?`, which `main` prints the same way, in one place.

use serde::Serialize;
use std::fmt;

use crate::cli::exit;
use crate::output::Printer;
use hcpx_model::Code;

/// What a command reports: its JSON document is its `Serialize`, its text is [`Report::text`].
pub trait Report: Serialize {
    /// Writes the report as text: data on stdout, messages on stderr.
    fn text(&self, out: &Text<'_>);

    /// The exit code the report ends the process with.
    fn exit(&self) -> u8 {
        exit::OK
    }
}

/// Where a report's text goes: the printer's text half (no JSON, no output-mode branch).
pub struct Text<'a> {
    p: &'a Printer,
}

impl<'a> Text<'a> {
    pub(crate) fn new(p: &'a Printer) -> Text<'a> {
        Text { p }
    }

    /// A line of data on stdout.
    pub fn data(&self, line: &str) {
        self.p.data(line);
    }

    /// A line of data on stdout that starts with a severity label (coloured on a terminal).
    pub fn data_labeled(&self, label: &str, ansi: &str, rest: &str) {
        self.p.data_labeled(label, ansi, rest);
    }

    /// Rows of data on stdout, in columns under a header.
    pub fn table(&self, header: &[&str], rows: &[Vec<String>]) {
        self.p.table(header, rows);
    }

    /// A message on stderr.
    pub fn message(&self, line: &str) {
        self.p.message(line);
    }

    /// An `error:` line on stderr.
    pub fn error(&self, line: &str) {
        self.p.error(line);
    }
}

/// A command's failure: its message (`error: …` on stderr, or `{"ok":false,"error":…}` under `--json`), the
/// denial code some commands add, the fields a few add to the JSON document, the lines they add under the
/// error in text, and the exit code.
#[derive(Debug)]
pub struct CliError {
    message: String,
    code: Option<Code>,
    exit: u8,
    fields: Option<Box<serde_json::Map<String, serde_json::Value>>>,
    notes: Vec<String>,
}

impl CliError {
    /// A failure with this message, exit 1.
    pub fn new(message: impl Into<String>) -> CliError {
        CliError { message: message.into(), code: None, exit: exit::FAILURE, fields: None, notes: Vec::new() }
    }

    /// A denial: `code` is in the JSON document (before `error`), and its exit status is the exit code.
    pub fn denied(code: Code, message: impl Into<String>) -> CliError {
        CliError { code: Some(code), exit: code.status().exit, ..CliError::new(message) }
    }

    /// Ends the process with `code` rather than 1.
    pub fn with_exit(mut self, code: u8) -> CliError {
        self.exit = code;
        self
    }

    /// Adds `name` to the JSON document, after `error`.
    pub fn with_field(mut self, name: &str, value: &impl Serialize) -> CliError {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        self.fields.get_or_insert_default().insert(name.to_string(), value);
        self
    }

    /// Adds a line to the text, on stderr under the `error:` line.
    pub fn with_note(mut self, line: String) -> CliError {
        self.notes.push(line);
        self
    }

    /// The document `--json` prints.
    fn doc(&self) -> ErrorDoc<'_> {
        ErrorDoc { ok: false, code: self.code, error: &self.message, fields: self.fields.as_deref() }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

#[derive(Serialize)]
struct ErrorDoc<'a> {
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<Code>,
    error: &'a str,
    #[serde(flatten)]
    fields: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// Turns any error into a [`CliError`] whose message is the error's own (`to_string`, not its chain).
pub trait OrFail<T> {
    /// The value, or a [`CliError`] with the error's message.
    fn or_fail(self) -> Result<T, CliError>;
}

impl<T, E: fmt::Display> OrFail<T> for Result<T, E> {
    fn or_fail(self) -> Result<T, CliError> {
        self.map_err(|e| CliError::new(e.to_string()))
    }
}

/// Prints a command's error the way the output mode wants it and returns its exit code: a [`CliError`] as it
/// says, any other error as its message with its chain of causes, exit 1.
pub fn print_error(p: &Printer, e: &anyhow::Error) -> u8 {
    let owned;
    let err = match e.downcast_ref::<CliError>() {
        Some(c) => c,
        None => {
            owned = CliError::new(format!("{e:#}"));
            &owned
        }
    };
    if p.json {
        p.json_doc(&err.doc());
    } else {
        p.error(&err.message);
        for line in &err.notes {
            p.message(line);
        }
    }
    err.exit
}
