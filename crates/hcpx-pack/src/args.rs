//! Command arguments: the `args` JSON Schema compiled once per command, and the checks every call passes before anything runs.

use indexmap::IndexMap;
use serde_json::{Map, Value};
use std::fmt;

use crate::model::naming::is_arg_name;
use crate::model::LintKind;

/// Arguments every command accepts, always as booleans: they satisfy the confirm gate.
pub const GATE_ARGS: [&str; 2] = ["confirm", "apply"];

/// The envelope's `mode` (`"mock"` asks for an explicit mock Binding): reserved, no command may declare it.
pub const MODE_ARG: &str = "mode";

/// The id of a person's approval (`sandbox.json` `human_approval`): reserved, no command may declare it.
pub const APPROVAL_ARG: &str = "approval_id";

/// One declared argument.
#[derive(Debug, Clone)]
pub struct Prop {
    /// JSON Schema `type`, as a list (empty when the schema gives none).
    pub types: Vec<String>,
    pub description: Option<String>,
    /// The first of `examples`, used by `hcpx commands` and `--init-evals`.
    pub example: Option<Value>,
    /// `x-position`: which bare word of a command line fills it (0 is the first).
    pub position: Option<usize>,
    /// `x-path`: `Some(true)` when the value names a file or directory beneath the working directory (the
    /// runtime resolves it there or refuses it), `Some(false)` when a path-like name is not one (a JSON path).
    pub path: Option<bool>,
    /// The values are closed: an `enum`, a `const`, a boolean, a number, or a string `pattern` that admits no
    /// quote, backslash, semicolon or whitespace (what query and script injection need).
    pub closed: bool,
}

/// Whether a string `pattern` admits none of the characters an injection into a quoted query or script
/// needs: it must be anchored and its only character class must exclude them.
fn pattern_is_closed(p: &str) -> bool {
    let anchored = p.starts_with('^') && p.ends_with('$');
    let body = p.get(1..p.len().saturating_sub(1)).unwrap_or_default();
    // Only character classes of letters, digits, `_`, `.`, `-` and quantifiers; no `.` wildcard outside one.
    let mut in_class = false;
    let mut ok = anchored;
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '\\' => {
                // Only \d and \w-like classes of word characters.
                ok &= matches!(chars.next(), Some('d' | 'w'));
            }
            c if in_class => ok &= c.is_ascii_alphanumeric() || "_.-".contains(c),
            '+' | '*' | '?' | '{' | '}' | ',' | '(' | ')' | '|' => {}
            c => ok &= c.is_ascii_alphanumeric() || c == '_' || c == '-',
        }
    }
    ok && !in_class
}

/// A command's compiled argument schema.
pub struct ArgSpec {
    /// The schema as the pack declares it (an empty object schema when it declares none): what hosts are
    /// given as a tool's input schema.
    schema: Value,
    props: IndexMap<String, Prop>,
    required: Vec<String>,
    positions: Vec<String>,
    validator: Validation,
}

/// How a command's argument values are validated.
enum Validation {
    /// The command takes no arguments: nothing to validate.
    Nothing,
    /// Every property declares one JSON type and nothing else constrains it: each value's type is checked
    /// here. This is what most commands' schemas are, and it spares every process compiling the JSON Schema
    /// meta-schema (about half a millisecond of each `hcpx exec`; docs/perf-log.md).
    Types,
    /// Anything richer: the schema compiled by `jsonschema`.
    Schema(Box<jsonschema::Validator>),
}

/// The annotation keywords a simple schema may carry; they constrain no value.
const SIMPLE_ANNOTATIONS: [&str; 4] = ["description", "title", "examples", "$comment"];

/// The types a simple property may declare.
const SIMPLE_TYPES: [&str; 4] = ["string", "integer", "number", "boolean"];

/// Whether `schema` is one `Validation::Types` validates exactly as JSON Schema would: an object with only
/// `properties` (each one `type` from `SIMPLE_TYPES`, well-formed annotations and `x-position`), `required`,
/// `type: "object"` and annotations. Anything else, or anything malformed, goes to `jsonschema`, which
/// validates it and reports the problem.
fn is_simple(schema: &Map<String, Value>) -> bool {
    let annotation_ok = |k: &str, v: &Value| match k {
        "examples" => v.is_array(),
        _ => v.is_string(),
    };
    schema.iter().all(|(k, v)| match k.as_str() {
        "type" => v == "object",
        "required" => v.as_array().is_some_and(|r| r.iter().all(Value::is_string)),
        "properties" => v.as_object().is_some_and(|props| {
            props.values().all(|p| {
                p.as_object().is_some_and(|p| {
                    p.get("type").and_then(Value::as_str).is_some_and(|t| SIMPLE_TYPES.contains(&t))
                        && p.iter().all(|(k, v)| {
                            k == "type"
                                || k == "x-position"
                                || k == "x-path"
                                || (SIMPLE_ANNOTATIONS.contains(&k.as_str()) && annotation_ok(k, v))
                        })
                })
            })
        }),
        _ => SIMPLE_ANNOTATIONS.contains(&k.as_str()) && annotation_ok(k, v),
    })
}

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

impl fmt::Debug for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgSpec")
            .field("props", &self.props)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

/// A problem in a command's `args` schema, found at load time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    pub kind: LintKind,
    /// JSON pointer below the command's `args`.
    pub pointer: String,
    pub message: String,
    pub fix: String,
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

struct NoFetch;

impl jsonschema::Retrieve for NoFetch {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("a pack schema may not load {uri}").into())
    }
}

impl ArgSpec {
    /// An empty spec: the command takes no arguments.
    pub fn none() -> ArgSpec {
        ArgSpec {
            schema: serde_json::json!({ "type": "object", "properties": {} }),
            props: IndexMap::new(),
            required: Vec::new(),
            positions: Vec::new(),
            validator: Validation::Nothing,
        }
    }

    /// The declared schema (an empty object schema when none was declared).
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Compiles a command's `args` schema, reporting every problem found.
    pub fn compile(schema: Option<&Value>) -> Result<ArgSpec, Vec<SchemaProblem>> {
        let Some(schema) = schema else { return Ok(ArgSpec::none()) };
        let mut problems = Vec::new();
        let bad = |problems: &mut Vec<SchemaProblem>, pointer: &str, message: String, fix: &str| {
            problems.push(SchemaProblem {
                kind: LintKind::InvalidSchema,
                pointer: pointer.to_string(),
                message,
                fix: fix.to_string(),
            })
        };
        let Some(obj) = schema.as_object() else {
            bad(
                &mut problems,
                "",
                "`args` must be a JSON Schema object".into(),
                "write `args` as {\"type\": \"object\", \"properties\": {…}}",
            );
            return Err(problems);
        };
        find_refs(schema, "", &mut problems);
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => bad(
                &mut problems,
                "/type",
                format!("`args` must describe an object, not {other}"),
                "set \"type\": \"object\"",
            ),
        }
        let mut props = IndexMap::new();
        match obj.get("properties") {
            None => {}
            Some(Value::Object(p)) => {
                for (name, prop) in p {
                    let ptr = format!("/properties/{}", crate::model::diagnostic::pointer_segment(name));
                    if !is_arg_name(name) {
                        problems.push(SchemaProblem {
                            kind: LintKind::BadName,
                            pointer: ptr.clone(),
                            message: format!("argument name `{name}` breaks the naming rules"),
                            fix: "use letters, digits, `_` and `-`, starting with a letter or `_`".into(),
                        });
                    }
                    let Some(po) = prop.as_object() else {
                        bad(
                            &mut problems,
                            &ptr,
                            format!("argument `{name}` must be a schema object"),
                            "describe it as {\"type\": …, \"description\": …}",
                        );
                        continue;
                    };
                    let types = match po.get("type") {
                        Some(Value::String(t)) => vec![t.clone()],
                        Some(Value::Array(ts)) => {
                            ts.iter().filter_map(|t| t.as_str().map(String::from)).collect()
                        }
                        _ => Vec::new(),
                    };
                    if name == APPROVAL_ARG {
                        bad(&mut problems, &ptr, "argument `approval_id` is reserved: it names a person's approval of a gated write".into(), "rename the argument");
                    }
                    if name == MODE_ARG {
                        bad(&mut problems, &ptr, "argument `mode` is reserved: `mode: \"mock\"` asks the runtime for a mock Binding".into(), "rename the argument, e.g. `run_mode`");
                    }
                    if GATE_ARGS.contains(&name.as_str()) && !(types.len() == 1 && types[0] == "boolean") {
                        bad(&mut problems, &ptr, format!("argument `{name}` satisfies the confirm gate and must be declared as a boolean"), "declare it as {\"type\": \"boolean\"} or leave it out: it is always accepted");
                    }
                    let position = match po.get("x-position") {
                        None => None,
                        Some(v) => {
                            match v.as_u64() {
                                Some(n) if n < 64 => Some(n as usize),
                                _ => {
                                    bad(&mut problems, &format!("{ptr}/x-position"), format!("x-position of `{name}` must be a whole number from 0 to 63, not {v}"), "number bare words from 0 (the first) up");
                                    None
                                }
                            }
                        }
                    };
                    let path = match po.get("x-path") {
                        None => None,
                        Some(Value::Bool(b)) => {
                            if *b && types.iter().any(|t| t != "string") {
                                bad(
                                    &mut problems,
                                    &format!("{ptr}/x-path"),
                                    format!("x-path marks `{name}` as a file path, which must be a string"),
                                    "give it \"type\": \"string\", or drop x-path",
                                );
                            }
                            Some(*b)
                        }
                        Some(v) => {
                            bad(&mut problems, &format!("{ptr}/x-path"), format!("x-path of `{name}` must be true or false, not {v}"), "true when the value names a file beneath the working directory, false when it only looks like one");
                            None
                        }
                    };
                    let scalar = !types.is_empty()
                        && types.iter().all(|t| matches!(t.as_str(), "integer" | "number" | "boolean"));
                    props.insert(
                        name.clone(),
                        Prop {
                            types,
                            description: po.get("description").and_then(|d| d.as_str()).map(String::from),
                            example: po
                                .get("examples")
                                .and_then(|e| e.as_array())
                                .and_then(|e| e.first())
                                .cloned(),
                            position,
                            path,
                            closed: po.contains_key("enum")
                                || po.contains_key("const")
                                || scalar
                                || po.get("pattern").and_then(|p| p.as_str()).is_some_and(pattern_is_closed),
                        },
                    );
                }
            }
            Some(_) => bad(
                &mut problems,
                "/properties",
                "`properties` must be an object".into(),
                "map each argument name to its schema",
            ),
        }
        let mut required = Vec::new();
        match obj.get("required") {
            None => {}
            Some(Value::Array(r)) => {
                for (i, n) in r.iter().enumerate() {
                    match n.as_str() {
                        Some(n) if props.contains_key(n) => required.push(n.to_string()),
                        Some(n) => bad(
                            &mut problems,
                            &format!("/required/{i}"),
                            format!("required argument `{n}` is not declared in `properties`"),
                            "declare it under `properties` or remove it from `required`",
                        ),
                        None => bad(
                            &mut problems,
                            &format!("/required/{i}"),
                            format!("`required` entries must be names, not {n}"),
                            "list argument names as strings",
                        ),
                    }
                }
            }
            Some(_) => bad(
                &mut problems,
                "/required",
                "`required` must be a list of argument names".into(),
                "write \"required\": [\"name\", …]",
            ),
        }
        let mut by_pos: Vec<(usize, String)> =
            props.iter().filter_map(|(n, p)| p.position.map(|pos| (pos, n.clone()))).collect();
        by_pos.sort();
        let mut positions = Vec::new();
        for (i, (pos, name)) in by_pos.iter().enumerate() {
            if *pos != i {
                bad(&mut problems, &format!("/properties/{}/x-position", crate::model::diagnostic::pointer_segment(name)), format!("x-position values must run 0, 1, 2 … without gaps or repeats; `{name}` has {pos} where {i} was expected"), "number the positional arguments 0, 1, 2 … in command-line order");
                break;
            }
            positions.push(name.clone());
        }
        if problems.is_empty() && is_simple(obj) {
            return Ok(ArgSpec {
                schema: schema.clone(),
                props,
                required,
                positions,
                validator: Validation::Types,
            });
        }
        if problems.is_empty() {
            let mut options = jsonschema::options().with_retriever(NoFetch).should_validate_formats(true);
            if !obj.contains_key("$schema") {
                // Draft 7 covers what argument schemas use, and its meta-schema compiles several times faster
                // than 2020-12's, which every process would otherwise pay once (docs/perf-log.md).
                options = options.with_draft(jsonschema::Draft::Draft7);
            }
            match options.build(schema) {
                Ok(v) => {
                    return Ok(ArgSpec {
                        schema: schema.clone(),
                        props,
                        required,
                        positions,
                        validator: Validation::Schema(Box::new(v)),
                    });
                }
                Err(e) => bad(
                    &mut problems,
                    e.schema_path().as_str(),
                    format!("`args` is not a valid JSON Schema: {}", lower_first(&e.to_string())),
                    "fix the schema keyword named (see json-schema.org)",
                ),
            }
        }
        Err(problems)
    }

    /// The declared arguments, in manifest order.
    pub fn props(&self) -> &IndexMap<String, Prop> {
        &self.props
    }

    /// The required arguments.
    pub fn required(&self) -> &[String] {
        &self.required
    }

    /// True when `name` is a declared argument.
    pub fn declares(&self, name: &str) -> bool {
        self.props.contains_key(name)
    }

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

fn find_refs(v: &Value, at: &str, problems: &mut Vec<SchemaProblem>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let ptr = format!("{at}/{}", crate::model::diagnostic::pointer_segment(k));
                if matches!(k.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef") {
                    if let Some(r) = child.as_str() {
                        if !r.starts_with('#') {
                            problems.push(SchemaProblem {
                                kind: LintKind::SchemaRef,
                                pointer: ptr.clone(),
                                message: format!("{k} {r:?} points outside the schema; a pack schema may not load a URL or a file"),
                                fix: "copy the referenced schema into `$defs` and point at it with \"#/$defs/…\"".into(),
                            });
                        }
                    }
                }
                find_refs(child, &ptr, problems);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                find_refs(child, &format!("{at}/{i}"), problems);
            }
        }
        _ => {}
    }
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod closed_pattern_tests {
    use super::pattern_is_closed;

    #[test]
    fn only_anchored_word_patterns_close_an_argument() {
        for ok in ["^[A-Za-z_][A-Za-z0-9_]*$", "^[a-z0-9-]+$", "^\\d{1,4}$", "^(main|dev)$"] {
            assert!(pattern_is_closed(ok), "{ok}");
        }
        for open in ["[A-Za-z]+", "^.*$", "^[^']*$", "^[a-z ]+$", "^[a-z;]+$", "^\\S+$", "^[a-z]+"] {
            assert!(!pattern_is_closed(open), "{open}");
        }
    }
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
