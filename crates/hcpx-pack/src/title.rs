//! Titles and approval previews (docs/spec.md §3): the words a host shows for a step, filled from args and result.

use indexmap::IndexMap;
use serde_json::{Map, Value};
use std::borrow::Cow;

use crate::model::{Preview, PreviewKind};
use crate::template::Template;

/// Longest value a title shows before it is cut.
pub const TITLE_VALUE_CHARS: usize = 60;

/// A command's `title`: templates tried in order.
#[derive(Debug, Clone, Default)]
pub struct TitleSpec {
    pub live: Vec<Template>,
    pub done: Vec<Template>,
}

/// A command's `preview`: the approval card's templates.
#[derive(Debug, Clone)]
pub struct PreviewSpec {
    pub kind: PreviewKind,
    pub title: Option<Template>,
    pub fields: IndexMap<String, Template>,
}

impl TitleSpec {
    /// True when the command declares no title at all.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty() && self.done.is_empty()
    }

    /// The live title (no result) or the done title (with a result); `None` when that form is not declared
    /// or no template can be filled.
    pub fn render(&self, args: &Map<String, Value>, result: Option<&Value>) -> Option<String> {
        let forms = if result.is_some() { &self.done } else { &self.live };
        forms.iter().find_map(|t| t.fill_with(|name| lookup(name, args, result, true)))
    }
}

impl PreviewSpec {
    /// Fills the card from args; a field whose placeholders have no value is left out. Values are not cut.
    pub fn render(&self, args: &Map<String, Value>) -> Preview {
        Preview {
            kind: self.kind,
            title: self.title.as_ref().and_then(|t| t.fill_with(|n| lookup(n, args, None, false))),
            fields: self
                .fields
                .iter()
                .filter_map(|(k, t)| t.fill_with(|n| lookup(n, args, None, false)).map(|v| (k.clone(), v)))
                .collect(),
        }
    }
}

fn lookup<'v>(
    name: &str,
    args: &'v Map<String, Value>,
    result: Option<&'v Value>,
    cut: bool,
) -> Option<Cow<'v, str>> {
    let value = if let Some(path) = name.strip_prefix("result.") {
        let mut v = result?;
        for seg in path.split('.') {
            v = match v {
                Value::Object(m) => m.get(seg)?,
                Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        v
    } else {
        args.get(name)?
    };
    let text = flatten(value)?;
    Some(if cut { cut_chars(text, TITLE_VALUE_CHARS) } else { text })
}

/// A value as one line of text: strings as is, numbers and booleans as written, a list joined with commas.
/// `None` for null, objects, empty text, or lists holding anything but scalars. Borrowed when the value is
/// already a line of text (the usual case: nothing to copy).
fn flatten(v: &Value) -> Option<Cow<'_, str>> {
    let raw: Cow<'_, str> = match v {
        Value::String(s) => Cow::Borrowed(s),
        Value::Number(n) => Cow::Owned(n.to_string()),
        Value::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::Array(items) => {
            let parts: Option<Vec<Cow<'_, str>>> = items
                .iter()
                .map(|i| match i {
                    Value::String(_) | Value::Number(_) | Value::Bool(_) => flatten(i),
                    _ => None,
                })
                .collect();
            Cow::Owned(parts?.join(", "))
        }
        Value::Null | Value::Object(_) => return None,
    };
    if one_line(&raw) {
        return (!raw.is_empty()).then_some(raw);
    }
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    (!one_line.is_empty()).then_some(Cow::Owned(one_line))
}

/// `s` is already what joining its words with single spaces gives: no whitespace at either end, and none but
/// single spaces between words.
fn one_line(s: &str) -> bool {
    let mut after_space = true;
    for c in s.chars() {
        if c == ' ' {
            if after_space {
                return false;
            }
            after_space = true;
        } else if c.is_whitespace() {
            return false;
        } else {
            after_space = false;
        }
    }
    !after_space || s.is_empty()
}

/// Cuts `s` to at most `max` characters, the last one an ellipsis when it was cut.
fn cut_chars(s: Cow<'_, str>, max: usize) -> Cow<'_, str> {
    // A character is at least one byte.
    if s.len() <= max || s.chars().count() <= max {
        return s;
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out = out.trim_end().to_string();
    out.push('…');
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(live: &[&str], done: &[&str]) -> TitleSpec {
        TitleSpec {
            live: live.iter().map(|t| Template::parse(t).unwrap()).collect(),
            done: done.iter().map(|t| Template::parse(t).unwrap()).collect(),
        }
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn flattens_and_cuts() {
        assert_eq!(flatten(&json!("a\n  b\tc")).as_deref(), Some("a b c"));
        assert_eq!(flatten(&json!(["x", "y", 3])).as_deref(), Some("x, y, 3"));
        assert_eq!(flatten(&json!(" ")), None);
        assert_eq!(flatten(&json!({"a": 1})), None);
        assert_eq!(flatten(&json!([{"a": 1}])), None);
        let long = "é".repeat(80);
        let cut = cut_chars(Cow::Borrowed(&long), 60);
        assert_eq!(cut.chars().count(), 60);
        assert!(cut.ends_with('…'));
        assert_eq!(cut_chars(Cow::Borrowed("short"), 60), "short");
        for s in ["a b", "a", "ab  c", " a", "a ", "a\tb", "a\u{a0}b", "", " ", "é è"] {
            let joined = s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(one_line(s), joined == s, "{s:?}");
        }
    }

    #[test]
    fn result_only_in_done() {
        let t =
            spec(&["Reading {{result.mail.subject}}", "Reading"], &["Read {{result.mail.subject}}", "Read"]);
        let r = json!({"mail": {"subject": "Hi there"}});
        assert_eq!(t.render(&Map::new(), None).as_deref(), Some("Reading"));
        assert_eq!(t.render(&Map::new(), Some(&r)).as_deref(), Some("Read Hi there"));
        assert_eq!(t.render(&Map::new(), Some(&json!("raw"))).as_deref(), Some("Read"));
        let arr = spec(&[], &["First {{result.items.0}}"]);
        assert_eq!(arr.render(&Map::new(), Some(&json!({"items": ["a"]}))).as_deref(), Some("First a"));
    }

    #[test]
    fn preview_leaves_out_unfilled_fields() {
        let p = PreviewSpec {
            kind: PreviewKind::Payment,
            title: Some(Template::parse("Pay {{payee}}").unwrap()),
            fields: [("amount", "{{amount}}"), ("currency", "EUR"), ("memo", "{{memo}}")]
                .iter()
                .map(|(k, v)| (k.to_string(), Template::parse(v).unwrap()))
                .collect(),
        };
        let out = p.render(&obj(json!({"amount": "2.80", "payee": "demo-transit"})));
        assert_eq!(out.title.as_deref(), Some("Pay demo-transit"));
        assert_eq!(out.fields.get("amount").map(String::as_str), Some("2.80"));
        assert_eq!(out.fields.get("currency").map(String::as_str), Some("EUR"));
        assert!(!out.fields.contains_key("memo"));
    }
}
