//! Text a person reads (a terminal, an approval card, a metrics page) that hcpx did not write itself: every
//! control character and every invisible formatting character that reorders or hides text (the bidirectional
//! overrides and isolates, zero-width marks, the byte-order mark) is shown as `\xNN` / `\u{NNNN}`, so a pack
//! or caller cannot make a card or a label read differently from what it says (a `U+202E` turning
//! `transfer 5 to evil` around).

use std::borrow::Cow;

/// Whether `c` is hidden or rearranges what a person sees: C0, DEL and C1 controls but tab and newline, and the
/// invisible formatting characters of bidirectional text and zero-width joins.
pub fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// `text` with every [`hidden`] character shown escaped: `\xNN` below U+0100, `\u{NNNN}` above.
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match (hidden(c), c as u32) {
            (false, _) => out.push(c),
            (true, n) if n < 0x100 => out.push_str(&format!("\\x{n:02x}")),
            (true, n) => out.push_str(&format!("\\u{{{n:04x}}}")),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn controls_and_bidirectional_overrides_are_shown_not_obeyed() {
        assert_eq!(shown("plain text\twith tab\n"), "plain text\twith tab\n");
        assert_eq!(shown("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(shown("pay \u{202E}live\u{202C} now"), "pay \\u{202e}live\\u{202c} now");
        assert_eq!(
            shown("\u{2066}x\u{2069}\u{200B}\u{FEFF}\u{85}"),
            "\\u{2066}x\\u{2069}\\u{200b}\\u{feff}\\x85"
        );
        assert_eq!(shown("naïve café ✓"), "naïve café ✓");
    }
}
