//! One source for every wire name: `wire_enum!` declares an enum and the one spelling of each variant, and
//! derives `as_str`, `FromStr`, `Display`, serde and the list of names from it.

/// A name that is not one of an enum's wire spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {given:?}; expected one of {}", .expected.join(", "))]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
    pub expected: &'static [&'static str],
}

/// `true` or `false` as a word (`confirm=true`); anything else is `None`.
pub fn parse_bool(word: &str) -> Option<bool> {
    match word {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// Declares a fieldless enum whose variants each carry one wire spelling:
///
/// ```ignore
/// wire_enum! {
///     /// What the enum is.
///     pub enum Operation ("operation") { Read = "read", Write = "write" }
/// }
/// ```
///
/// The spelling is written once; `as_str`, `NAMES`, `ALL`, `FromStr`, `Display`, `Serialize`,
/// `Deserialize` (with serde's own "unknown variant" message) and `JsonSchema` all come from it.
#[macro_export]
macro_rules! wire_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every wire spelling, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire),+
                }
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::wire::UnknownName;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok($name::$variant),)+
                    _ => Err($crate::wire::UnknownName {
                        what: $what,
                        given: s.to_string(),
                        expected: $name::NAMES,
                    }),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl ::schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let mut map = ::serde_json::Map::new();
                map.insert("type".to_string(), ::serde_json::Value::from("string"));
                map.insert("enum".to_string(), $name::NAMES.iter().map(|n| ::serde_json::Value::from(*n)).collect());
                ::schemars::Schema::from(map)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Names;
                impl<'de> ::serde::de::Visitor<'de> for Names {
                    type Value = $name;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        write!(f, "one of {}", $name::NAMES.join(", "))
                    }
                    fn visit_str<E: ::serde::de::Error>(self, s: &str) -> Result<$name, E> {
                        s.parse().map_err(|_| E::unknown_variant(s, $name::NAMES))
                    }
                }
                d.deserialize_str(Names)
            }
        }
    };
}

pub use crate::wire_enum;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bool_words() {
        assert_eq!(parse_bool("true"), Some(true));
        assert_eq!(parse_bool("false"), Some(false));
        assert_eq!(parse_bool("True"), None);
        assert_eq!(parse_bool(""), None);
    }
}
