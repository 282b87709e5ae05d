//! `{{placeholder}}` templates, parsed once at load and shared by argv rendering, titles and previews.

use std::fmt;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text copied as is.
    Lit(String),
    /// A placeholder: an argument name, `verb`, or a `result.a.b` path.
    Var(String),
}

/// A parsed template such as `--flag={{name}}` or `Paid {{amount}} to {{payee}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    pieces: Vec<Piece>,
}

/// Why a template could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplateError {
    /// `{{` with no closing `}}`.
    Unclosed,
    /// `{{}}` or a name with characters outside `[A-Za-z0-9_.-]`.
    BadName(String),
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TemplateError::Unclosed => f.write_str("`{{` has no closing `}}`"),
            TemplateError::BadName(n) => write!(f, "`{{{{{n}}}}}` is not a valid placeholder name"),
        }
    }
}

impl Template {
    /// Parses `source`; text outside `{{…}}` is literal.
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                pieces.push(Piece::Lit(rest[..start].to_string()));
            }
            let after = &rest[start + 2..];
            let end = after.find("}}").ok_or(TemplateError::Unclosed)?;
            let name = after[..end].trim();
            if !valid_placeholder(name) {
                return Err(TemplateError::BadName(after[..end].to_string()));
            }
            pieces.push(Piece::Var(name.to_string()));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Lit(rest.to_string()));
        }
        Ok(Template { source: source.to_string(), pieces })
    }

    /// The text the template was parsed from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The pieces in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The placeholder names, in order of appearance.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Var(v) => Some(v.as_str()),
            Piece::Lit(_) => None,
        })
    }

    /// `Some(name)` when the whole template is one placeholder, like `{{payee}}`.
    pub fn sole_var(&self) -> Option<&str> {
        match self.pieces.as_slice() {
            [Piece::Var(v)] => Some(v),
            _ => None,
        }
    }

    /// True when the template has no placeholder.
    pub fn is_literal(&self) -> bool {
        self.vars().next().is_none()
    }

    /// Fills every placeholder through `lookup`; `None` when any of them has no value.
    pub fn fill<F>(&self, lookup: F) -> Option<String>
    where
        F: FnMut(&str) -> Option<String>,
    {
        self.fill_with(lookup)
    }

    /// `fill`, taking values that may be borrowed (`&str`, `Cow`), so a value that is already text is not copied
    /// on its way in.
    pub fn fill_with<F, S>(&self, mut lookup: F) -> Option<String>
    where
        F: FnMut(&str) -> Option<S>,
        S: AsRef<str>,
    {
        let mut out = String::with_capacity(self.source.len());
        for piece in &self.pieces {
            match piece {
                Piece::Lit(s) => out.push_str(s),
                Piece::Var(v) => out.push_str(lookup(v)?.as_ref()),
            }
        }
        Some(out)
    }
}

fn valid_placeholder(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !name.starts_with('.')
        && !name.ends_with('.')
        && !name.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals_and_vars() {
        let t = Template::parse("--flag={{name}}").unwrap();
        assert_eq!(t.pieces(), &[Piece::Lit("--flag=".into()), Piece::Var("name".into())]);
        assert_eq!(Template::parse("{{ a }}").unwrap().sole_var(), Some("a"));
        assert!(Template::parse("plain").unwrap().is_literal());
    }

    #[test]
    fn refuses_malformed() {
        assert_eq!(Template::parse("{{a"), Err(TemplateError::Unclosed));
        assert!(matches!(Template::parse("{{}}"), Err(TemplateError::BadName(_))));
        assert!(matches!(Template::parse("{{a b}}"), Err(TemplateError::BadName(_))));
        assert!(matches!(Template::parse("{{result..x}}"), Err(TemplateError::BadName(_))));
    }

    #[test]
    fn fill_needs_every_value() {
        let t = Template::parse("Paid {{a}} to {{b}}").unwrap();
        assert_eq!(t.fill(|v| Some(v.to_uppercase())).as_deref(), Some("Paid A to B"));
        assert_eq!(t.fill(|v| (v == "a").then(|| "x".to_string())), None);
    }
}
