//! `HARNESS.md`: the Skill's lead (everything before the first `##` heading) and its hot-path table, read
//! as CommonMark by pulldown-cmark.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

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
    /// Parses a Skill as CommonMark (with tables). Never fails: lint decides what is missing.
    ///
    /// The lead ends at the first top-level `##` heading (ATX or setext), wherever fences, indented code,
    /// block quotes or lists would hide one. The hot-path table is the first table whose first body row
    /// starts with a code span; its commands are the code spans of each row's first cell.
    pub fn parse(text: &str) -> Skill {
        let mut lead_end = None;
        let mut heading = String::new();
        let mut hot_path: Option<(Vec<String>, String)> = None;
        // Nesting of containers (quotes, lists): a heading inside one does not end the lead.
        let mut depth = 0usize;
        let mut in_h2: Option<usize> = None;
        // The current table: the first cells' code spans so far, and whether each row's first cell began
        // with one (only the first body row's counts).
        let mut table: Option<Table> = None;
        for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
            match event {
                Event::Start(Tag::BlockQuote(_) | Tag::List(_)) => depth += 1,
                Event::End(TagEnd::BlockQuote(_) | TagEnd::List(_)) => depth = depth.saturating_sub(1),
                Event::Start(Tag::Heading { level: HeadingLevel::H2, .. }) if depth == 0 => {
                    lead_end.get_or_insert(range.start);
                    in_h2 = Some(range.start);
                }
                Event::End(TagEnd::Heading(HeadingLevel::H2)) => {
                    if let Some(start) = in_h2.take() {
                        heading = heading_line(&text[start..range.end]);
                    }
                }
                Event::Start(Tag::Table(_)) if hot_path.is_none() => table = Some(Table::default()),
                Event::Start(Tag::TableHead) => {
                    if let Some(t) = &mut table {
                        t.in_head = true;
                    }
                }
                Event::End(TagEnd::TableHead) => {
                    if let Some(t) = &mut table {
                        t.in_head = false;
                    }
                }
                Event::Start(Tag::TableRow) => {
                    if let Some(t) = &mut table {
                        t.cell = 0;
                        t.row_start = true;
                    }
                }
                Event::Start(Tag::TableCell) => {
                    if let Some(t) = &mut table {
                        t.cell += 1;
                    }
                }
                Event::Code(code) => {
                    if let Some(t) = table.as_mut().filter(|t| !t.in_head && t.cell == 1) {
                        if t.row_start {
                            t.row_code = true;
                        }
                        let name = code.trim();
                        if !name.is_empty() {
                            t.row_names.push(name.to_string());
                        }
                    }
                }
                Event::End(TagEnd::TableRow) => {
                    if let Some(t) = &mut table {
                        // Only rows whose first cell opens with a code span name commands (a line of prose
                        // that runs on after the table is a row too, in GFM).
                        if t.row_code {
                            t.names.append(&mut t.row_names);
                        }
                        if t.rows == 0 {
                            t.starts_with_code = t.row_code;
                        }
                        t.row_names.clear();
                        t.row_code = false;
                        t.rows += 1;
                    }
                }
                Event::End(TagEnd::Table) => {
                    if let Some(t) = table.take().filter(|t| t.starts_with_code) {
                        let under = if lead_end.is_some() { heading.clone() } else { String::new() };
                        hot_path = Some((t.names, under));
                    }
                }
                _ => {
                    // Any other content in the first cell before a code span means the row does not start
                    // with one.
                    if let Some(t) = table.as_mut().filter(|t| !t.in_head && t.cell == 1) {
                        t.row_start = false;
                    }
                }
            }
        }
        let lead = text[..lead_end.unwrap_or(text.len())].trim().to_string();
        let (hot_path, hot_path_heading) = hot_path.unwrap_or_default();
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

/// A table being read.
#[derive(Default)]
struct Table {
    in_head: bool,
    /// 1-based index of the current cell in its row.
    cell: usize,
    /// Body rows seen so far.
    rows: usize,
    /// Nothing but a code span has been seen in the current row's first cell yet.
    row_start: bool,
    /// The current row's first cell opened with a code span, and its code spans.
    row_code: bool,
    row_names: Vec<String>,
    /// The first body row's first cell opened with a code span.
    starts_with_code: bool,
    names: Vec<String>,
}

/// A heading as one line: `## Title` for both ATX and setext headings.
fn heading_line(source: &str) -> String {
    let first = source.lines().next().unwrap_or("").trim();
    if first.starts_with('#') {
        first.trim_end_matches('#').trim().to_string()
    } else {
        format!("## {first}")
    }
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
    fn fences_of_any_length_and_indented_code_hide_headings() {
        let s = Skill::parse(
            "Intro\n````\n```\n## not a heading\n```\n````\n\n    ## indented code\n\nmore\n## Real\n",
        );
        assert!(s.lead.ends_with("more"), "{:?}", s.lead);
        let s = Skill::parse("Intro\n> ## quoted\n\n- ## in a list\n\nRest\n\nSetext\n------\n");
        assert!(s.lead.ends_with("Rest"), "{:?}", s.lead);
        assert_eq!(Skill::parse("a\n## Hot ##\n| c |\n|---|\n| `x` |\n").hot_path_heading, "## Hot");
    }

    #[test]
    fn first_table_without_code_is_skipped() {
        let s =
            Skill::parse("lead\n| a | b |\n|---|---|\n| plain | x |\n\n| c | d |\n|---|---|\n| `go` | x |\n");
        assert_eq!(s.hot_path, vec!["go"]);
    }
}
