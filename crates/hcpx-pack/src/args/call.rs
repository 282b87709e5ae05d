//! Call time: a call's arguments read from command-line words, then checked against the compiled schema
//! before anything runs.

use serde_json::{Map, Value};
use std::fmt;

use super::{lower_first, ArgSpec, Validation, APPROVAL_ARG, GATE_ARGS, MODE_ARG};
use crate::model::naming::is_arg_name;

/// Whether `v` is of JSON Schema type `t` (drafts 6 and later: a number with no fractional part is an integer).
fn has_type(v: &Value, t: &str) -> bool {
    match (t, v) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// Why a call's arguments were refused (`code: invalid_args`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

/// Arguments that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedArgs {
    /// The declared arguments, as given.
    pub values: Map<String, Value>,
    /// `confirm: true` or `apply: true` was given.
    pub confirmed: bool,
    /// `mode: "mock"` was given (explicit mock Binding).
    pub mock: bool,
    /// `approval_id` was given: the approval a person gave this exact call.
    pub approval: Option<String>,
}

impl ArgSpec {
    /// Turns command-line words (`k=v`, `k:=json`, bare words for `x-position`) into an args object.
    pub fn parse_words(&self, target: &str, words: &[String]) -> Result<Map<String, Value>, ArgError> {
        let mut out = Map::new();
        let mut bare = 0usize;
        for word in words {
            let (key, value) = if let Some((k, raw)) = split_key(word, ":=") {
                let v: Value = serde_json::from_str(raw).map_err(|e| {
                    ArgError(format!("argument `{k}` for {target}: {raw:?} is not JSON ({e}); quote strings as k:='\"text\"' or use k=text"))
                })?;
                (k.to_string(), v)
            } else if let Some((k, raw)) = split_key(word, "=") {
                (k.to_string(), self.convert(target, k, raw)?)
            } else {
                let Some(name) = self.positions.get(bare) else {
                    let hint = if self.positions.is_empty() {
                        "this command takes no bare words; pass arguments as name=value".to_string()
                    } else {
                        format!(
                            "it takes {} bare word(s) ({}); pass the rest as name=value",
                            self.positions.len(),
                            self.positions.join(", ")
                        )
                    };
                    return Err(ArgError(format!("unexpected bare word {word:?} for {target}: {hint}")));
                };
                bare += 1;
                (name.clone(), self.convert(target, name, word)?)
            };
            if out.contains_key(&key) {
                return Err(ArgError(format!("argument `{key}` is given twice for {target}; give it once")));
            }
            out.insert(key, value);
        }
        Ok(out)
    }

    /// Converts a `k=v` string to the argument's declared scalar type.
    fn convert(&self, target: &str, key: &str, raw: &str) -> Result<Value, ArgError> {
        let types: Vec<&str> = if GATE_ARGS.contains(&key) && !self.declares(key) {
            vec!["boolean"]
        } else {
            self.props.get(key).map(|p| p.types.iter().map(String::as_str).collect()).unwrap_or_default()
        };
        if types.is_empty() || types.contains(&"string") {
            return Ok(Value::String(raw.to_string()));
        }
        if types.contains(&"integer") {
            if let Ok(n) = raw.parse::<i64>() {
                return Ok(Value::from(n));
            }
        }
        if types.contains(&"number") {
            if let Ok(n) = raw.parse::<i64>() {
                return Ok(Value::from(n));
            }
            if let Some(n) =
                raw.parse::<f64>().ok().filter(|f| f.is_finite()).and_then(serde_json::Number::from_f64)
            {
                return Ok(Value::Number(n));
            }
        }
        if types.contains(&"boolean") {
            if let Some(b) = crate::model::wire::parse_bool(raw) {
                return Ok(Value::Bool(b));
            }
        }
        if types.contains(&"null") && raw == "null" {
            return Ok(Value::Null);
        }
        if types.iter().any(|t| *t == "array" || *t == "object") {
            return Err(ArgError(format!(
                "argument `{key}` for {target} takes {}; pass it as JSON: {key}:=<json>",
                types.join(" or ")
            )));
        }
        Err(ArgError(format!("argument `{key}` for {target} must be {}, not {raw:?}", types.join(" or "))))
    }

    /// Refuses unknown and missing arguments, then validates against the schema.
    pub fn check(&self, target: &str, args: &Map<String, Value>) -> Result<CheckedArgs, ArgError> {
        let mut values = Map::new();
        let mut confirmed = false;
        let mut mock = false;
        let mut approval = None;
        let mut unknown = Vec::new();
        for (k, v) in args {
            if GATE_ARGS.contains(&k.as_str()) {
                match v {
                    Value::Bool(b) => confirmed |= *b,
                    other => {
                        return Err(ArgError(format!(
                            "argument `{k}` for {target} must be true or false, not {other}"
                        )))
                    }
                }
                if self.declares(k) {
                    values.insert(k.clone(), v.clone());
                }
                continue;
            }
            if k == APPROVAL_ARG {
                match v.as_str() {
                    Some(id) => approval = Some(id.to_string()),
                    None => {
                        return Err(ArgError(format!(
                            "argument `approval_id` for {target} must be the approval's id as text (ap_…), not {v}"
                        )))
                    }
                }
                continue;
            }
            if k == MODE_ARG {
                match v.as_str() {
                    Some("mock") => mock = true,
                    _ => {
                        return Err(ArgError(format!(
                        "argument `mode` for {target} may only be \"mock\" (explicit mock Binding), not {v}"
                    )))
                    }
                }
                continue;
            }
            if self.declares(k) {
                values.insert(k.clone(), v.clone());
            } else {
                unknown.push(k.as_str());
            }
        }
        if !unknown.is_empty() {
            let list = unknown.iter().map(|u| format!("`{u}`")).collect::<Vec<_>>().join(", ");
            let declared = if self.props.is_empty() {
                "it takes no arguments".to_string()
            } else {
                format!("it takes {}", self.props.keys().map(String::as_str).collect::<Vec<_>>().join(", "))
            };
            let noun = if unknown.len() == 1 { "argument" } else { "arguments" };
            return Err(ArgError(format!("unknown {noun} {list} for {target}; {declared}")));
        }
        let missing: Vec<&str> =
            self.required.iter().filter(|r| !values.contains_key(*r)).map(String::as_str).collect();
        if !missing.is_empty() {
            let parts: Vec<String> = missing
                .iter()
                .map(|m| match self.props.get(*m).and_then(|p| p.example.as_ref()) {
                    Some(Value::String(e)) => format!("`{m}` (e.g. {m}={e})"),
                    Some(e) => format!("`{m}` (e.g. {m}:={e})"),
                    None => format!("`{m}`"),
                })
                .collect();
            let noun = if missing.len() == 1 { "argument" } else { "arguments" };
            return Err(ArgError(format!("missing required {noun} {} for {target}", parts.join(", "))));
        }
        match &self.validator {
            Validation::Nothing => {}
            Validation::Types => {
                for (k, v) in &values {
                    let Some(t) = self.props.get(k).and_then(|p| p.types.first()) else { continue };
                    if !has_type(v, t) {
                        // Worded as jsonschema words a type error, so both paths read the same.
                        return Err(ArgError(format!(
                            "invalid argument `{k}` for {target}: {v} is not of type \"{t}\""
                        )));
                    }
                }
            }
            Validation::Schema(v) => {
                let instance = Value::Object(values);
                if let Some(e) = v.iter_errors(&instance).next() {
                    let at = e.instance_path().as_str().trim_start_matches('/').to_string();
                    let which = if at.is_empty() { String::new() } else { format!("argument `{at}` ") };
                    return Err(ArgError(format!(
                        "invalid {which}for {target}: {}",
                        lower_first(&e.to_string())
                    )));
                }
                let Value::Object(values) = instance else {
                    return Err(ArgError("internal: args lost their shape".into()));
                };
                return Ok(CheckedArgs { values, confirmed, mock, approval });
            }
        }
        Ok(CheckedArgs { values, confirmed, mock, approval })
    }
}

/// Splits `k<sep>v` when `k` is a valid argument name (so a bare word like `a=b c` stays bare).
fn split_key<'a>(word: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let idx = word.find(sep)?;
    let key = &word[..idx];
    if sep == "=" && key.ends_with(':') {
        return None;
    }
    is_arg_name(key).then(|| (key, &word[idx + sep.len()..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(schema: Value) -> ArgSpec {
        ArgSpec::compile(Some(&schema)).unwrap()
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn words_take_the_declared_types() {
        let s = spec(json!({
            "type": "object",
            "properties": {
                "n": { "type": "integer" }, "on": { "type": "boolean" }, "name": { "type": "string" },
                "raw": { "type": "object" }, "q": { "type": "string", "x-position": 0 }
            }
        }));
        let got =
            s.parse_words("p.v", &words(&["n=3", "on=true", "name=007", "raw:={\"a\":1}", "hello"])).unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"n": 3, "on": true, "name": "007", "raw": {"a": 1}, "q": "hello"})
        );
        // A second bare word has no position to fill.
        let e = s.parse_words("p.v", &words(&["a", "b"])).unwrap_err();
        assert!(e.0.contains("bare word"), "{}", e.0);
        let e = s.parse_words("p.v", &words(&["raw:={"])).unwrap_err();
        assert!(e.0.contains("is not JSON"), "{}", e.0);
    }

    #[test]
    fn check_refuses_unknown_missing_and_mistyped_arguments() {
        let s = spec(json!({
            "type": "object",
            "properties": { "to": { "type": "string" }, "n": { "type": "integer" } },
            "required": ["to"]
        }));
        let obj = |v: Value| v.as_object().cloned().unwrap();
        let ok = s.check("p.v", &obj(json!({"to": "x", "confirm": true}))).unwrap();
        assert!(ok.confirmed && !ok.mock);
        assert!(!ok.values.contains_key("confirm"), "gate arguments are not the command's");
        for bad in [json!({}), json!({"to": "x", "zzz": 1}), json!({"to": "x", "n": "three"})] {
            assert!(s.check("p.v", &obj(bad.clone())).is_err(), "{bad}");
        }
        assert!(s.check("p.v", &obj(json!({"to": "x", "mode": "mock"}))).unwrap().mock);
    }

    #[test]
    fn approval_id_is_reserved_text_and_never_a_commands_argument() {
        let s = spec(json!({ "type": "object", "properties": { "to": { "type": "string" } } }));
        let obj = |v: Value| v.as_object().cloned().unwrap();
        let ok = s.check("p.v", &obj(json!({"to": "x", "approval_id": "ap_1"}))).unwrap();
        assert_eq!(ok.approval.as_deref(), Some("ap_1"));
        assert!(!ok.values.contains_key("approval_id"));
        let e = s.check("p.v", &obj(json!({"to": "x", "approval_id": true}))).unwrap_err();
        assert!(e.0.contains("approval's id as text"), "{}", e.0);
        let declared = ArgSpec::compile(Some(
            &json!({ "type": "object", "properties": { "approval_id": { "type": "string" } } }),
        ));
        let Err(problems) = declared else { panic!("a pack may not declare approval_id") };
        assert!(problems.iter().any(|p| p.message.contains("reserved")), "{problems:?}");
    }
}
