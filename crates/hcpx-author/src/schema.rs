//! The files hcpx reads as JSON Schemas, derived from the very serde types their loaders parse, so the
//! shipped `schemas/` and the field tables of `docs/format.md` are generated from the code and cannot drift.

use std::collections::BTreeSet;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::model::grants::Grant;
use crate::pack::raw::{RawEvalFile, RawManifest, RawPolicy};
use crate::store::config::SandboxConfig;
use crate::store::issuers::IssuerRow;
use crate::store::principals::PrincipalRow;

/// One file format: the file's name, where its schema is shipped (pack files only) and the schema.
#[derive(Debug, Clone)]
pub struct FileFormat {
    /// The file's name, as a pack or `$HCP_HOME` holds it.
    pub file: &'static str,
    /// The schema's path in the repository, for the files a pack author writes.
    pub shipped: Option<&'static str>,
    /// The JSON Schema (draft 2020-12).
    pub schema: Value,
}

/// A field the generated docs cannot describe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "{file}: field `{path}` has no doc comment; add a `///` line to it in the loader's serde type (the text becomes its row in docs/format.md)"
    )]
    Undocumented { file: &'static str, path: String },
}

fn schema_of<T: JsonSchema>(file: &'static str) -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let generated = generator.into_root_schema_for::<T>().to_value();
    // `$schema`, the title and the description first, for a reader of the shipped file.
    let mut out = Map::new();
    let mut rest = match generated {
        Value::Object(m) => m,
        other => return other,
    };
    if let Some(dialect) = rest.remove("$schema") {
        out.insert("$schema".to_string(), dialect);
    }
    out.insert("title".to_string(), Value::from(file));
    if let Some(d) = rest.remove("description") {
        out.insert("description".to_string(), d);
    }
    out.extend(rest);
    Value::Object(out)
}

/// `kind` is also read as `adapter_kind` (a serde alias, which schemars does not list).
fn add_kind_alias(schema: &mut Value) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        if let Some(mut kind) = props.get("kind").cloned() {
            if let Some(k) = kind.as_object_mut() {
                k.insert("description".to_string(), Value::from("An alias of `kind`; give one of the two."));
            }
            props.insert("adapter_kind".to_string(), kind);
        }
    }
}

/// Every file format hcpx reads, pack files first.
pub fn formats() -> Vec<FileFormat> {
    let mut surface = schema_of::<RawManifest>("surface.json");
    add_kind_alias(&mut surface);
    vec![
        FileFormat { file: "surface.json", shipped: Some("schemas/surface.schema.json"), schema: surface },
        FileFormat {
            file: "policy.json",
            shipped: Some("schemas/policy.schema.json"),
            schema: schema_of::<RawPolicy>("policy.json"),
        },
        FileFormat {
            file: "hcp.eval.json",
            shipped: Some("schemas/hcp.eval.schema.json"),
            schema: schema_of::<RawEvalFile>("hcp.eval.json"),
        },
        FileFormat { file: "grants.json", shipped: None, schema: schema_of::<Vec<Grant>>("grants.json") },
        FileFormat {
            file: "sandbox.json",
            shipped: None,
            schema: schema_of::<SandboxConfig>("sandbox.json"),
        },
        FileFormat {
            file: "principals.json",
            shipped: None,
            schema: schema_of::<Vec<PrincipalRow>>("principals.json"),
        },
        FileFormat {
            file: "issuers.json",
            shipped: None,
            schema: schema_of::<Vec<IssuerRow>>("issuers.json"),
        },
    ]
}

/// The schema as it is committed: pretty JSON with a final newline.
pub fn shipped_text(f: &FileFormat) -> String {
    let mut s = serde_json::to_string_pretty(&f.schema).unwrap_or_default();
    s.push('\n');
    s
}

/// The HTML anchor of the table of the object at `path` in `file` (`surface-verbs-name-title`).
pub fn anchor(file: &str, path: &str) -> String {
    let stem = file.trim_end_matches(".json").replace('.', "-");
    let mut out = stem;
    for word in path.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').filter(|w| !w.is_empty()) {
        out.push('-');
        out.push_str(&word.to_ascii_lowercase());
    }
    out
}

/// The field tables of `f` for `docs/format.md`: one table per object, each row a field with its type,
/// whether it is required (or its default) and the doc comment of the serde field.
pub fn field_tables(f: &FileFormat) -> Result<String, SchemaError> {
    let empty = Map::new();
    let defs = f.schema.get("$defs").and_then(Value::as_object).unwrap_or(&empty);
    let mut walk = Walk { file: f.file, defs, out: String::new(), seen: BTreeSet::new() };
    match walk.nested(&f.schema) {
        Some((suffix, obj)) => walk.object(&suffix, obj)?,
        None => walk.object("", &f.schema)?,
    }
    Ok(walk.out)
}

struct Walk<'a> {
    file: &'static str,
    defs: &'a Map<String, Value>,
    out: String,
    /// Object paths already written (a type reached twice is described once per path).
    seen: BTreeSet<String>,
}

impl<'a> Walk<'a> {
    /// Follows a local `$ref`.
    fn resolve(&self, s: &'a Value) -> &'a Value {
        match s.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            Some(name) => self.defs.get(name).map(|d| self.resolve(d)).unwrap_or(s),
            None => s,
        }
    }

    /// The alternatives of `s` other than `null`, when it is a union.
    fn alternatives(&self, s: &'a Value) -> Option<Vec<&'a Value>> {
        let list = s.get("anyOf").or_else(|| s.get("oneOf"))?.as_array()?;
        Some(list.iter().map(|a| self.resolve(a)).filter(|a| !is_null(a)).collect())
    }

    /// True when `s` accepts `null` (an `Option` field), or anything at all.
    fn allows_null(&self, s: &'a Value) -> bool {
        let s = self.resolve(s);
        let null_type = match s.get("type") {
            Some(Value::String(t)) => t == "null",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
            None => s.get("anyOf").or_else(|| s.get("oneOf")).is_none() && s.get("enum").is_none(),
            _ => false,
        };
        let null_alt = s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array)
            .is_some_and(|alts| alts.iter().any(|a| self.allows_null(a)));
        null_type || null_alt
    }

    /// The object with properties that `s` holds, directly or through arrays and maps, with the path suffix
    /// leading to it (`[]` for an array item, `.<name>` for a map value).
    fn nested(&self, s: &'a Value) -> Option<(String, &'a Value)> {
        let s = self.resolve(s);
        if let Some(alts) = self.alternatives(s) {
            return match alts.as_slice() {
                [one] => self.nested(one),
                _ => None,
            };
        }
        if s.get("properties").is_some() {
            return Some((String::new(), s));
        }
        if let Some(items) = s.get("items") {
            return self.nested(items).map(|(p, o)| (format!("[]{p}"), o));
        }
        match s.get("additionalProperties") {
            Some(v) if v.is_object() => self.nested(v).map(|(p, o)| (format!(".<name>{p}"), o)),
            _ => None,
        }
    }

    /// How the docs name the type of `s`.
    fn type_of(&self, s: &'a Value) -> String {
        let s = self.resolve(s);
        if let Some(values) = enum_values(s) {
            return format!(
                "one of {}",
                values.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
            );
        }
        if let Some(alts) = self.alternatives(s) {
            return alts.iter().map(|a| self.type_of(a)).collect::<Vec<_>>().join(" or ");
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect(),
            _ => vec![],
        };
        let words: Vec<String> = types
            .iter()
            .map(|t| match *t {
                "array" => match s.get("items") {
                    Some(items) => format!("array of {}", self.type_of(items)),
                    None => "array".to_string(),
                },
                "object" if s.get("properties").is_none() => match s.get("additionalProperties") {
                    Some(v) if v.is_object() => format!("map of {}", self.type_of(v)),
                    _ => "object".to_string(),
                },
                other => other.to_string(),
            })
            .collect();
        if words.is_empty() {
            "any JSON".to_string()
        } else {
            words.join(" or ")
        }
    }

    /// Writes the table of the object at `path`, then the tables of the objects its fields hold.
    fn object(&mut self, path: &str, obj: &'a Value) -> Result<(), SchemaError> {
        if !self.seen.insert(path.to_string()) {
            return Ok(());
        }
        let required: BTreeSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let heading = if path.is_empty() { "(top level)".to_string() } else { format!("`{path}`") };
        self.out.push_str(&format!(
            "<a id=\"{}\"></a>\n**{heading}**\n\n| field | type | required / default | meaning |\n|-------|------|--------------------|---------|\n",
            anchor(self.file, path)
        ));
        let mut children = Vec::new();
        let props = obj.get("properties").and_then(Value::as_object).into_iter().flatten();
        for (name, prop) in props {
            let field = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            let Some(doc) = prop.get("description").and_then(Value::as_str) else {
                return Err(SchemaError::Undocumented { file: self.file, path: field });
            };
            let need = if required.contains(name.as_str()) {
                "required".to_string()
            } else {
                match prop.get("default") {
                    Some(d) => format!("default `{d}`"),
                    // A field that may be absent but not null has a serde default: the type's empty value.
                    None if !self.allows_null(prop) => {
                        match self.resolve(prop).get("type").and_then(Value::as_str) {
                            Some("array") => "default `[]`".to_string(),
                            Some("object") => "default `{}`".to_string(),
                            Some("boolean") => "default `false`".to_string(),
                            _ => "optional".to_string(),
                        }
                    }
                    None => "optional".to_string(),
                }
            };
            self.out.push_str(&format!(
                "| `{name}` | {} | {need} | {} |\n",
                cell(&self.type_of(prop)),
                cell(&doc.replace('\n', " "))
            ));
            if let Some((suffix, child)) = self.nested(prop) {
                children.push((format!("{field}{suffix}"), child));
            }
        }
        self.out.push('\n');
        for (p, child) in children {
            self.object(&p, child)?;
        }
        Ok(())
    }
}

fn is_null(s: &Value) -> bool {
    s.get("type").and_then(Value::as_str) == Some("null")
}

/// The string values of an enum (`enum`, or a `oneOf` of `const`s), without `null`.
fn enum_values(s: &Value) -> Option<Vec<String>> {
    if let Some(list) = s.get("enum").and_then(Value::as_array) {
        return Some(list.iter().filter_map(Value::as_str).map(str::to_string).collect());
    }
    let list = s.get("oneOf")?.as_array()?;
    list.iter()
        .map(|v| v.get("const").and_then(Value::as_str).map(str::to_string))
        .collect::<Option<Vec<_>>>()
}

/// Text safe inside a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_documented() {
        for f in formats() {
            let tables = field_tables(&f).unwrap();
            assert!(tables.contains("| field |"), "{}", f.file);
        }
    }

    #[test]
    fn anchors() {
        assert_eq!(anchor("surface.json", ""), "surface");
        assert_eq!(anchor("surface.json", "verbs.<name>.title"), "surface-verbs-name-title");
        assert_eq!(anchor("hcp.eval.json", "cases[].expect"), "hcp-eval-cases-expect");
        assert_eq!(anchor("principals.json", "[].grants[]"), "principals-grants");
    }
}
