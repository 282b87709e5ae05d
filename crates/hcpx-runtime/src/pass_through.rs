//! Pass-through subcommands (`pass_through` in the manifest): their arguments are a bounded list of words,
//! checked against the pack's allowed options, plus the gate and mock arguments.

use serde_json::{Map, Value};

use crate::args::{ArgSpec, CheckedArgs, GATE_ARGS};
use crate::model::wire::parse_bool;
use crate::model::{Code, Denial};
use crate::pack::Pack;

/// A pass-through call takes `argv` (a list of strings, at most `maxArgv`) plus the gate and mock arguments.
pub(super) fn args(
    pack: &Pack,
    target: &str,
    args: &Map<String, Value>,
) -> Result<(CheckedArgs, Vec<String>), Denial> {
    let invalid = |m: String| Denial::new(Code::InvalidArgs, m);
    let max = pack.pass_through.as_ref().map(|p| p.max_argv as usize).unwrap_or(0);
    let mut rest = Map::new();
    let mut argv = Vec::new();
    for (k, v) in args {
        if k == "argv" {
            let list = v
                .as_array()
                .ok_or_else(|| invalid(format!("argument `argv` for {target} must be a list of strings")))?;
            for item in list {
                let s = item.as_str().ok_or_else(|| {
                    invalid(format!("argument `argv` for {target} must be a list of strings, not {item}"))
                })?;
                if s.contains('\0') {
                    return Err(invalid(format!("argument `argv` for {target} holds a NUL byte")));
                }
                if !pack.pass_through.as_ref().is_some_and(|p| p.allows_word(s)) {
                    return Err(invalid(format!(
                        "argument `argv` for {target}: {s:?} is an option the pack does not list in pass_through.allowedOptions (an option such as `--output=FILE` could make a read write); pass only the listed options, or ask the pack's author to name the command"
                    )));
                }
                argv.push(s.to_string());
            }
        } else if GATE_ARGS.contains(&k.as_str()) || k == "mode" || k == crate::args::APPROVAL_ARG {
            rest.insert(k.clone(), v.clone());
        } else {
            return Err(invalid(format!("unknown argument `{k}` for {target}; a pass-through subcommand takes only argv (a list of strings)")));
        }
    }
    if argv.len() > max {
        return Err(invalid(format!(
            "{target} takes at most {max} further argument(s) (pass_through.maxArgv), not {}",
            argv.len()
        )));
    }
    let checked = ArgSpec::none().check(target, &rest).map_err(|e| invalid(e.0))?;
    Ok((checked, argv))
}

/// The bare words of a pass-through call become its argv; `confirm=`, `apply=` and `mode=` stay arguments.
pub(super) fn words(words: &[String]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut argv = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k @ ("confirm" | "apply"), v)) if parse_bool(v).is_some() => {
                out.insert(k.to_string(), Value::Bool(parse_bool(v) == Some(true)));
            }
            Some(("mode", v)) => {
                out.insert("mode".into(), Value::String(v.to_string()));
            }
            _ => argv.push(Value::String(w.clone())),
        }
    }
    out.insert("argv".into(), Value::Array(argv));
    out
}
