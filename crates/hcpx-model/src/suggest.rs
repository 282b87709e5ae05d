//! "Did you mean": the closest known name to a mistyped pack id or command, so a denial can name the fix.

/// The candidate closest to `word` by edit distance, when it is close enough to be a likely typo (at most a
/// third of the word's length, and at least one edit allowed), or when one starts with the other.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (distance(word, c), c))
        .filter(|(d, c)| *d <= limit || (word.len() >= 3 && (c.starts_with(word) || word.starts_with(*c))))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(cur).min(row[j]) };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_and_prefixes() {
        assert_eq!(closest("lst", ["list", "show", "put"]), Some("list"));
        assert_eq!(closest("lederg", ["ledger", "transit"]), Some("ledger"));
        assert_eq!(closest("trans", ["ledger", "transit"]), Some("transit"));
        assert_eq!(closest("zzz", ["ledger", "transit"]), None);
        assert_eq!(closest("x", Vec::<&str>::new()), None);
    }
}
