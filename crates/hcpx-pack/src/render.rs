//! `cli[]` → argv (docs/spec.md §4): no shell, ever.

use serde_json::{Map, Value};
use std::fmt;

use crate::model::naming::command_tail;
pub use crate::pack::cli_selects_json;
use crate::pack::{Command, WrapTarget};
use crate::template::{Piece, Template};

/// Why a call's arguments cannot be rendered into argv (`code: invalid_args`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// A value in a positional slot starts with `-` and would be read as a flag.
    LooksLikeFlag { arg: String, value: String },
    /// A value holds a NUL byte, which no argv can carry.
    NulByte { arg: String },
    /// A required argument renders to nothing (empty text, null): dropped, it would shift the tokens after it
    /// into its place (a later literal flag read as its value).
    EmptyRequired { arg: String },
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::LooksLikeFlag { arg, value } => write!(
                f,
                "argument `{arg}` is {value:?}, which starts with '-' and would be read as a flag; pass a value that does not start with '-'"
            ),
            RenderError::NulByte { arg } => write!(f, "argument `{arg}` holds a NUL byte, which cannot be passed to a command"),
            RenderError::EmptyRequired { arg } => write!(f, "argument `{arg}` is required and empty; pass a value"),
        }
    }
}

impl std::error::Error for RenderError {}

/// `String(value)` as JS would give it, except that null and empty text count as missing and objects render as
/// compact JSON.
pub fn arg_text(v: &Value) -> Option<String> {
    let s = match v {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items
            .iter()
            .map(|i| if i.is_null() { String::new() } else { arg_text(i).unwrap_or_default() })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => v.to_string(),
    };
    (!s.is_empty()).then_some(s)
}

/// The JSON flag appended to this command's argv: none when `cli[]` already selects JSON, in a spelling the
/// runtime knows or with the pack's own `wrap.json_flag` (`-J`, `-json`), so it is never passed twice.
pub fn json_flag<'a>(wrap: &'a WrapTarget, cmd: &'a Command) -> &'a [String] {
    match &cmd.json_flag {
        Some(own) => own,
        None if cmd.cli_selects_json || cli_holds(cmd, &wrap.json_flag) => &[],
        None => &wrap.json_flag,
    }
}

/// Whether `cmd`'s `cli[]` holds `flag` as literal tokens in a row.
fn cli_holds(cmd: &Command, flag: &[String]) -> bool {
    let Some(cli) = &cmd.cli else { return false };
    !flag.is_empty()
        && cli.windows(flag.len()).any(|w| w.iter().zip(flag).all(|(t, f)| t.is_literal() && t.source() == f))
}

/// Renders the argv that follows the bin for `cmd` called with `args`.
pub fn render_argv(
    wrap: &WrapTarget,
    cmd: &Command,
    args: &Map<String, Value>,
) -> Result<Vec<String>, RenderError> {
    // Only an argument declared a number may start a token with '-' (a negative number); a string never may.
    let numeric = |name: &str| {
        cmd.args
            .props()
            .get(name)
            .is_some_and(|p| !p.types.is_empty() && p.types.iter().all(|t| t == "number" || t == "integer"))
    };
    let required = |name: &str| cmd.args.required().iter().any(|r| r == name);
    let rules = Rules { numeric: &numeric, required: &required };
    let mut argv = match &cmd.cli {
        Some(tokens) => render_tokens(tokens, args, None, &rules)?,
        None => render_tokens(&wrap.argv_template, args, Some(command_tail(&cmd.key)), &rules)?,
    };
    argv.extend(json_flag(wrap, cmd).iter().cloned());
    Ok(argv)
}

/// What the command's schema says of an argument, for rendering: declared a number (a negative one may follow a
/// flag), or required (it may not render to nothing).
pub struct Rules<'a> {
    pub numeric: &'a dyn Fn(&str) -> bool,
    pub required: &'a dyn Fn(&str) -> bool,
}

/// Substitutes placeholders token by token. A literal flag (a token starting with `-`) directly followed by a
/// lone placeholder takes it as its value: the two drop out together when the value is missing. A token that a
/// value starts (its first piece is a placeholder) may not start with '-' (the CLI would read an option), unless
/// `numeric(arg)` holds, it is a finite number, and it is the value a flag takes. A value joined to its flag in
/// one token (`--flag={{x}}`) does not start the token, so it may start with '-'.
pub fn render_tokens(
    tokens: &[Template],
    args: &Map<String, Value>,
    verb: Option<&str>,
    rules: &Rules<'_>,
) -> Result<Vec<String>, RenderError> {
    let numeric = rules.numeric;
    let mut out: Vec<String> = Vec::with_capacity(tokens.len() + 1);
    // Index in `out` of the flag emitted from the previous declared token, if it was a literal flag.
    let mut prev_flag: Option<usize> = None;
    for t in tokens {
        let lookup = |name: &str| -> Option<String> {
            match (name, verb) {
                ("verb", Some(v)) if !args.contains_key("verb") => Some(v.to_string()),
                _ => args.get(name).and_then(arg_text),
            }
        };
        if t.is_literal() {
            let text = t.source().to_string();
            prev_flag = text.starts_with('-').then_some(out.len());
            out.push(text);
            continue;
        }
        let rendered = t.fill(lookup);
        match (rendered, t.sole_var()) {
            (None, Some(var)) => {
                if (rules.required)(var) {
                    return Err(RenderError::EmptyRequired { arg: var.to_string() });
                }
                if let Some(i) = prev_flag.take() {
                    out.truncate(i);
                }
            }
            (None, None) => {
                if let Some(var) = t.vars().find(|v| (rules.required)(v)) {
                    return Err(RenderError::EmptyRequired { arg: var.to_string() });
                }
                prev_flag = None
            }
            (Some(value), _) => {
                let arg = t.vars().next().unwrap_or_default().to_string();
                if value.contains('\0') {
                    return Err(RenderError::NulByte { arg });
                }
                let value_leads = matches!(t.pieces().first(), Some(Piece::Var(_)));
                let number = numeric(&arg) && value.parse::<f64>().is_ok_and(f64::is_finite);
                let a_flags_number = prev_flag.is_some() && t.sole_var().is_some() && number;
                if value_leads && value.starts_with('-') && !a_flags_number {
                    return Err(RenderError::LooksLikeFlag { arg, value });
                }
                prev_flag = None;
                out.push(value);
            }
        }
    }
    Ok(out)
}
