//! Load time: a command's `args` JSON Schema checked and compiled once, every problem reported.

use indexmap::IndexMap;
use serde_json::{Map, Value};
use std::fmt::Write;

use super::{lower_first, ArgSpec, Prop, Validation, APPROVAL_ARG, GATE_ARGS, MODE_ARG};
use crate::model::naming::is_arg_name;
use crate::model::LintKind;

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

/// A problem in a command's `args` schema, found at load time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaProblem {
    pub kind: LintKind,
    /// JSON pointer below the command's `args`.
    pub pointer: String,
    pub message: String,
    pub fix: String,
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
        find_refs(schema, &mut String::new(), &mut problems);
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
}

/// Every `$ref` (or `$dynamicRef`, `$recursiveRef`) under `v` that points outside the schema. `at` is `v`'s JSON
/// pointer, grown and cut back in place as the walk goes down and up (every call of a pack's load walks each
/// command's schema: one buffer, not a string per key).
fn find_refs(v: &Value, at: &mut String, problems: &mut Vec<SchemaProblem>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let len = at.len();
                at.push('/');
                crate::model::diagnostic::push_pointer_segment(at, k);
                if matches!(k.as_str(), "$ref" | "$dynamicRef" | "$recursiveRef") {
                    if let Some(r) = child.as_str() {
                        if !r.starts_with('#') {
                            problems.push(SchemaProblem {
                                kind: LintKind::SchemaRef,
                                pointer: at.clone(),
                                message: format!("{k} {r:?} points outside the schema; a pack schema may not load a URL or a file"),
                                fix: "copy the referenced schema into `$defs` and point at it with \"#/$defs/…\"".into(),
                            });
                        }
                    }
                }
                find_refs(child, at, problems);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let len = at.len();
                // Writing to a String cannot fail.
                let _ = write!(at, "/{i}");
                find_refs(child, at, problems);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod find_refs_tests {
    use super::find_refs;
    use crate::model::diagnostic::pointer;
    use serde_json::json;

    #[test]
    fn an_outside_ref_is_named_by_its_escaped_pointer_at_any_depth() {
        let schema = json!({
            "properties": {
                "a/b~c": { "$ref": "https://example.com/x.json" },
                "ok": { "$ref": "#/$defs/ok" },
                "list": { "anyOf": [ { "type": "string" }, { "$dynamicRef": "file:///etc/passwd" } ] }
            }
        });
        let mut problems = Vec::new();
        let mut at = String::new();
        find_refs(&schema, &mut at, &mut problems);
        let got: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        let want = [
            pointer(&["properties", "a/b~c", "$ref"]),
            pointer(&["properties", "list", "anyOf", "1", "$dynamicRef"]),
        ];
        assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(at.is_empty(), "the buffer is back where it started: {at:?}");
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
