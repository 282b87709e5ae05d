//! `HARNESS.md`: the Skill's lead (everything before the first `##` heading) and its hot-path table.

/// The parsed Skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The whole text.
    pub text: String,
    /// Everything before the first `##` heading, trimmed.
    pub lead: String,
    /// The commands named in the hot-path table, in order, with the heading the table sits under.
    pub hot_path: Vec<String>,
    /// The heading above the hot-path table (empty when it sits in the lead).
    pub hot_path_heading: String,
}

impl Skill {
    /// Parses a Skill. Never fails: lint decides what is missing.
    pub fn parse(text: &str) -> Skill {
        let lines: Vec<&str> = text.lines().collect();
        let mut in_fence = false;
        let mut lead_end = lines.len();
        let mut heading = String::new();
        let mut table: Option<(Vec<String>, String)> = None;
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i];
            let trimmed = line.trim_start();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
                i += 1;
                continue;
            }
            if in_fence {
                i += 1;
                continue;
            }
            if is_level2_heading(trimmed) {
                if lead_end == lines.len() {
                    lead_end = i;
                }
                heading = trimmed.trim().to_string();
            } else if table.is_none()
                && trimmed.starts_with('|')
                && i + 1 < lines.len()
                && is_separator(lines[i + 1])
            {
                let mut rows = Vec::new();
                let mut j = i + 2;
                while j < lines.len() && lines[j].trim_start().starts_with('|') {
                    rows.push(first_cell(lines[j]));
                    j += 1;
                }
                if rows.first().is_some_and(|c| c.starts_with('`')) {
                    let names = rows.iter().flat_map(|c| code_spans(c)).collect();
                    let under = if lead_end == lines.len() { String::new() } else { heading.clone() };
                    table = Some((names, under));
                }
                i = j;
                continue;
            }
            i += 1;
        }
        let lead = lines[..lead_end].join("\n").trim().to_string();
        let (hot_path, hot_path_heading) = table.unwrap_or_default();
        Skill { text: text.to_string(), lead, hot_path, hot_path_heading }
    }

    /// True when the lead holds some text other than headings.
    pub fn lead_has_text(&self) -> bool {
        self.lead.lines().any(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
    }
}

fn is_level2_heading(line: &str) -> bool {
    line.strip_prefix("##")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t'))
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
}

fn first_cell(line: &str) -> String {
    let t = line.trim().trim_start_matches('|');
    t.split('|').next().unwrap_or("").trim().to_string()
}

fn code_spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .enumerate()
        .filter(|(i, s)| i % 2 == 1 && !s.trim().is_empty())
        .map(|(_, s)| s.trim().to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_and_table() {
        let s = Skill::parse(
            "# Ledger\n\nUse it.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `list` | always |\n| `transfer` / `status` | pay |\n\n## More\n| `x` | y |\n|--|--|\n| `not` | z |\n",
        );
        assert_eq!(s.lead, "# Ledger\n\nUse it.");
        assert!(s.lead_has_text());
        assert_eq!(s.hot_path, vec!["list", "transfer", "status"]);
        assert_eq!(s.hot_path_heading, "## Hot path");
    }

    #[test]
    fn headings_in_fences_do_not_end_the_lead() {
        let s = Skill::parse("Intro\n```\n## not a heading\n```\nmore\n## Real\n");
        assert!(s.lead.ends_with("more"));
    }

    #[test]
    fn no_lead() {
        let s = Skill::parse("## Start\ntext\n");
        assert_eq!(s.lead, "");
        assert!(!s.lead_has_text());
        assert!(!Skill::parse("# Title only\n\n## Next\n").lead_has_text());
    }

    #[test]
    fn first_table_without_code_is_skipped() {
        let s =
            Skill::parse("lead\n| a | b |\n|---|---|\n| plain | x |\n\n| c | d |\n|---|---|\n| `go` | x |\n");
        assert_eq!(s.hot_path, vec!["go"]);
    }
}
