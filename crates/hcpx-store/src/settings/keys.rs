//! The dotted keys of `sandbox.json` (`timeout_ms`, `human_approval.ttl_s`, `packs.<id>.write`,
//! `egress.hosts.<name>`), read off the document's own JSON schema, so every setting the loader knows has a key
//! and a new field needs nothing here.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The JSON schema of a settings document, with its definitions.
pub(crate) struct Keys {
    root: Value,
}

/// What a schema node is, once its `$ref` and `Option` are seen through.
enum Node<'a> {
    /// An object with named fields (`human_approval`).
    Fields(&'a Map<String, Value>),
    /// A map from names to values of one kind (`packs`, `egress.hosts`).
    Names(&'a Value),
    /// A value set as a whole: a number, a string, a list.
    Leaf,
}

/// Where a key leads: the path of names in the document, and the schema of the value there.
pub(crate) struct Located<'a> {
    pub path: Vec<String>,
    /// The value's schema as its parent names it (its description and default are here).
    pub field: &'a Value,
    /// The same, its `$ref` followed.
    pub schema: &'a Value,
}

impl Keys {
    /// The keys of the document `T`.
    pub(crate) fn of<T: JsonSchema>() -> Keys {
        let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        Keys { root: generator.into_root_schema_for::<T>().to_value() }
    }

    /// `s` with its `$ref` followed and an `Option`'s `null` branch dropped.
    fn resolve<'a>(&'a self, mut s: &'a Value) -> &'a Value {
        for _ in 0..16 {
            if let Some(name) = s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/"))
            {
                match self.root.get("$defs").and_then(|d| d.get(name)) {
                    Some(d) => s = d,
                    None => return s,
                }
                continue;
            }
            let branches = s.get("anyOf").or_else(|| s.get("oneOf")).and_then(Value::as_array);
            let mut some =
                branches.into_iter().flatten().filter(|b| b.get("type") != Some(&Value::from("null")));
            match (some.next(), some.next()) {
                (Some(only), None) => s = only,
                _ => return s,
            }
        }
        s
    }

    fn node<'a>(&'a self, s: &'a Value) -> Node<'a> {
        if let Some(p) = s.get("properties").and_then(Value::as_object) {
            return Node::Fields(p);
        }
        match s.get("additionalProperties") {
            Some(v) if v.is_object() => Node::Names(v),
            _ => Node::Leaf,
        }
    }

    /// The whole document.
    pub(crate) fn whole(&self) -> Located<'_> {
        Located { path: Vec::new(), field: &self.root, schema: self.resolve(&self.root) }
    }

    /// Where `key` leads. A name in a map whose values are set whole takes the rest of the key, dots and all
    /// (`egress.hosts.api.internal.example`); a name in a map of objects takes one part (`packs.<id>.write`).
    pub(crate) fn locate(&self, key: &str) -> Result<Located<'_>, String> {
        let parts: Vec<&str> = key.split('.').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(format!(
                "{key:?} is not a setting's key; keys are names joined by dots, e.g. human_approval.ttl_s"
            ));
        }
        let (mut field, mut path, mut i) = (&self.root, Vec::new(), 0);
        let mut s = self.resolve(field);
        while i < parts.len() {
            match self.node(s) {
                Node::Fields(fields) => match fields.get(parts[i]) {
                    Some(f) => {
                        path.push(parts[i].to_string());
                        field = f;
                        s = self.resolve(f);
                        i += 1;
                    }
                    None => return Err(self.unknown(key, &path, fields)),
                },
                Node::Names(raw) => {
                    let v = self.resolve(raw);
                    if matches!(self.node(v), Node::Leaf) {
                        path.push(parts[i..].join("."));
                        i = parts.len();
                    } else {
                        path.push(parts[i].to_string());
                        i += 1;
                    }
                    (field, s) = (raw, v);
                }
                Node::Leaf => {
                    let whole = path.join(".");
                    return Err(format!(
                        "{key} is not a setting: {whole} is set as a whole, with nothing under it; set {whole} itself (`hcpx config show {whole}` shows it)"
                    ));
                }
            }
        }
        Ok(Located { path, field, schema: s })
    }

    /// The refusal of an unknown `key`, naming the closest key when one is near.
    fn unknown(&self, key: &str, path: &[String], fields: &Map<String, Value>) -> String {
        let at = path.join(".");
        let here: Vec<String> =
            fields.keys().map(|f| if at.is_empty() { f.clone() } else { format!("{at}.{f}") }).collect();
        let every = self.every_key();
        let near = crate::model::suggest::closest(key, here.iter().chain(every.iter()).map(String::as_str))
            .or_else(|| {
                // A nested key given without its parent (`ttl_s` for `human_approval.ttl_s`).
                let last = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
                let tails: Vec<String> = every.iter().map(|k| last(k)).collect();
                let t = crate::model::suggest::closest(key, tails.iter().map(String::as_str))
                    .map(str::to_string)
                    .or_else(|| tails.iter().find(|t| t.as_str() == key).cloned())?;
                every.iter().find(|k| last(k) == t).map(String::as_str)
            });
        let known = if at.is_empty() {
            "`hcpx config show` lists them".to_string()
        } else {
            format!("{at} has {}", fields.keys().cloned().collect::<Vec<_>>().join(", "))
        };
        match near {
            Some(n) => format!("{key} is not a setting; did you mean {n}? ({known})"),
            None => format!("{key} is not a setting ({known})"),
        }
    }

    /// Every key that names a field (a map's own names left out: `packs`, not `packs.<id>`).
    pub(crate) fn every_key(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.fields_under(self.resolve(&self.root), "", &mut out, 0);
        out
    }

    fn fields_under(&self, s: &Value, prefix: &str, out: &mut Vec<String>, depth: usize) {
        if depth > 8 {
            return;
        }
        match self.node(s) {
            Node::Fields(fields) => {
                for (name, f) in fields {
                    let key = join(prefix, name);
                    out.push(key.clone());
                    self.fields_under(self.resolve(f), &key, out, depth + 1);
                }
            }
            Node::Names(v) => {
                let v = self.resolve(v);
                if !matches!(self.node(v), Node::Leaf) {
                    self.fields_under(v, &join(prefix, "<name>"), out, depth + 1);
                }
            }
            Node::Leaf => {}
        }
    }

    /// Every setting of `doc` with its value, in the schema's order: a field that is not set shows its
    /// default (`None` when it has none); a map shows its entries (or itself, empty).
    pub(crate) fn entries(
        &self,
        doc: &Value,
        under: &Located<'_>,
    ) -> Vec<(String, Option<Value>, Option<Value>)> {
        let mut at = Some(doc);
        for p in &under.path {
            at = at.and_then(|v| v.get(p));
        }
        let mut out = Vec::new();
        self.walk(under.field, at, &under.path.join("."), &mut out, 0);
        out
    }

    fn walk(
        &self,
        field: &Value,
        at: Option<&Value>,
        key: &str,
        out: &mut Vec<(String, Option<Value>, Option<Value>)>,
        depth: usize,
    ) {
        if depth > 8 {
            return;
        }
        let s = self.resolve(field);
        match self.node(s) {
            Node::Fields(fields) => {
                for (name, f) in fields {
                    self.walk(f, at.and_then(|v| v.get(name)), &join(key, name), out, depth + 1);
                }
            }
            Node::Names(v) => match at.and_then(Value::as_object).filter(|m| !m.is_empty()) {
                Some(m) => {
                    for (name, value) in m {
                        self.walk(v, Some(value), &join(key, name), out, depth + 1);
                    }
                }
                None => out.push((key.to_string(), None, Some(Value::Object(Map::new())))),
            },
            Node::Leaf => out.push((key.to_string(), at.cloned(), self.default_of(field, s))),
        }
    }

    /// The default the schema records for a value.
    fn default_of(&self, field: &Value, s: &Value) -> Option<Value> {
        field.get("default").or_else(|| s.get("default")).cloned()
    }

    /// The default of the setting at `key`, when it has one.
    pub(crate) fn default_at(&self, key: &str) -> Option<Value> {
        self.locate(key).ok().and_then(|l| self.default_of(l.field, l.schema))
    }

    /// What the value at `located` is, for a message: its type and description.
    pub(crate) fn describe(&self, located: &Located<'_>) -> String {
        let s = located.schema;
        let kind = match (s.get("type").or_else(|| located.field.get("type")), s.get("enum")) {
            (_, Some(Value::Array(e))) => {
                format!("one of {}", e.iter().map(Value::to_string).collect::<Vec<_>>().join(", "))
            }
            (Some(Value::String(t)), _) => type_name(t).to_string(),
            (Some(Value::Array(ts)), _) => ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .map(type_name)
                .collect::<Vec<_>>()
                .join(" or "),
            _ if s.get("properties").is_some() => "an object".to_string(),
            _ if consts(s).is_some() => format!("one of {}", consts(s).unwrap_or_default().join(", ")),
            _ => "a value".to_string(),
        };
        match located.field.get("description").or_else(|| s.get("description")).and_then(Value::as_str) {
            Some(d) => format!("{kind}: {}", d.split("\n\n").next().unwrap_or(d).replace('\n', " ")),
            None => kind,
        }
    }
}

/// The values of an enum written as `oneOf` constants (each with its own description).
fn consts(s: &Value) -> Option<Vec<String>> {
    let branches = s.get("oneOf").or_else(|| s.get("anyOf"))?.as_array()?;
    branches.iter().map(|b| b.get("const").or_else(|| b.get("enum")?.get(0)).map(Value::to_string)).collect()
}

fn type_name(t: &str) -> &str {
    match t {
        "integer" => "a whole number",
        "number" => "a number",
        "string" => "a string",
        "boolean" => "true or false",
        "array" => "a JSON list",
        "object" => "a JSON object",
        other => other,
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}
