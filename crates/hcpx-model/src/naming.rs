//! The naming rules of docs/spec.md §3: what a pack id, a command name and an argument name may be.

/// Longest accepted pack id, command name or argument name.
pub const MAX_NAME_LEN: usize = 64;

/// A pack id: lower-case ASCII letters, digits, `-` and `_`, starting with a letter.
pub fn is_pack_id(s: &str) -> bool {
    is_segment(s)
}

/// A command name (`verb_key`): lower-case segments joined by dots, as in `mail.list`.
pub fn is_command_name(s: &str) -> bool {
    s.len() <= MAX_NAME_LEN && !s.is_empty() && s.split('.').all(is_segment)
}

/// An argument name usable as a `{{placeholder}}`: letters, digits, `_` and `-`, not starting with a digit or `-`.
pub fn is_arg_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    s.len() <= MAX_NAME_LEN && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn is_segment(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_lowercase() => {}
        _ => return false,
    }
    s.len() <= MAX_NAME_LEN
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The tail of a command name that `{{verb}}` expands to: `setup.apply` gives `apply`.
pub fn command_tail(verb_key: &str) -> &str {
    verb_key.rsplit('.').next().unwrap_or(verb_key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["ledger", "hcp-cli", "transit_2"] {
            assert!(is_pack_id(ok), "{ok}");
        }
        for bad in ["", "Ledger", "2x", "a.b", "a b", "-a"] {
            assert!(!is_pack_id(bad), "{bad}");
        }
        for ok in ["list", "mail.list", "setup.apply", "a1.b-c"] {
            assert!(is_command_name(ok), "{ok}");
        }
        for bad in ["", "Mail.list", "mail..list", ".list", "list.", "mail list", "a.B"] {
            assert!(!is_command_name(bad), "{bad}");
        }
        for ok in ["amount", "optionId", "_x", "dry-run"] {
            assert!(is_arg_name(ok), "{ok}");
        }
        for bad in ["", "1a", "-a", "a.b", "a b"] {
            assert!(!is_arg_name(bad), "{bad}");
        }
    }

    #[test]
    fn tails() {
        assert_eq!(command_tail("mail.list"), "list");
        assert_eq!(command_tail("setup.apply"), "apply");
        assert_eq!(command_tail("status"), "status");
    }
}
