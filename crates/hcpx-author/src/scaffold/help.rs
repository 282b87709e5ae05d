//! Reading a CLI's `--help` for `hcpx wrap`: its subcommands (never the column or field lists some CLIs print
//! in the same layout), its JSON output flag, and its options, listed for the author.

/// Most template commands a scaffold writes.
pub const MAX_TEMPLATES: usize = 8;
/// Most option lines listed for the author.
pub const MAX_OPTIONS: usize = 60;

/// Section headings whose entries are not subcommands: `findmnt`'s "Available output columns:", `lsblk`'s
/// columns, environment variables, exit codes, examples.
const NOT_COMMANDS: &[&str] =
    &["column", "field", "environment", "exit", "example", "option", "flag", "argument", "see also", "file"];

/// A section heading: a line at the left margin (or indented by one space) that ends with `:` or is all
/// capitals (`COMMANDS`, `OPTIONS`).
fn heading(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start().len();
    let t = line.trim();
    if indent > 1 || t.is_empty() || t.starts_with('-') {
        return None;
    }
    let caps = t.chars().any(|c| c.is_ascii_alphabetic())
        && t.chars().all(|c| !c.is_ascii_lowercase())
        && t.split_whitespace().count() <= 4;
    (t.ends_with(':') || caps).then(|| t.to_ascii_lowercase())
}

/// Subcommands listed in help text: indented lines `  name   summary`, never option lines, and nothing under a
/// heading of columns, fields, environment variables or the like.
pub fn parse_help(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if let Some(h) = heading(line) {
            skipping = NOT_COMMANDS.iter().any(|w| h.contains(w));
            continue;
        }
        if skipping {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        if !(2..=8).contains(&indent) {
            continue;
        }
        let rest = line.trim_start();
        let Some(name_end) = rest.find(|c: char| c.is_whitespace() || c == ',') else { continue };
        let name = &rest[..name_end];
        let after = &rest[name_end..];
        let summary = after.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        // The name and summary must be separated by two spaces (a column), as help output lays them out.
        let gap = after.len() - after.trim_start().len();
        if gap < 2 && !after.starts_with(',') {
            continue;
        }
        // A name in capitals is a column or a placeholder (`NAME`, `MAJ:MIN`), not a subcommand.
        if name.chars().any(|c| c.is_ascii_uppercase()) {
            continue;
        }
        let key = name.to_string();
        if summary.is_empty()
            || !crate::model::naming::is_command_name(&key)
            || key.contains('.')
            || out.iter().any(|(k, _)| *k == key)
        {
            continue;
        }
        out.push((key, summary.trim().to_string()));
        if out.len() == MAX_TEMPLATES {
            break;
        }
    }
    out
}

/// The option lines of the help text (`-J, --json   use JSON output format`), trimmed, for the author.
pub fn options(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('-') && t.len() > 1 && !out.iter().any(|o| o == t) {
            out.push(t.split_whitespace().collect::<Vec<_>>().join(" "));
            if out.len() == MAX_OPTIONS {
                break;
            }
        }
    }
    out
}

/// The flag that selects JSON output, as its option line declares it: `--json`, `-json` (sqlite3), `-J` when
/// its line says JSON and has no long form, `--format json` / `--output json` when the line names json.
pub fn json_flag(text: &str) -> Option<Vec<String>> {
    let mut found: Option<Vec<String>> = None;
    for line in text.lines() {
        let t = line.trim();
        if !t.starts_with('-') {
            continue;
        }
        let (flags, rest, takes_value) = split_option(t);
        let mentions_json = rest.to_ascii_lowercase().contains("json");
        if flags.iter().any(|f| f == "--json") {
            return Some(vec!["--json".into()]);
        }
        if flags.iter().any(|f| f == "-json") {
            found.get_or_insert_with(|| vec!["-json".into()]);
        } else if mentions_json {
            if let Some(long) = flags.iter().find(|f| matches!(f.as_str(), "--format" | "--output")) {
                found.get_or_insert_with(|| vec![long.clone(), "json".into()]);
            } else if flags.len() == 1 && flags[0].len() == 2 && !takes_value && selects_json_output(rest) {
                found.get_or_insert_with(|| vec![flags[0].clone()]);
            }
        }
    }
    found
}

/// Whether a short flag's description says it makes the output JSON, not that it reads JSON, colours it, or
/// prints something that is not JSON (jq's `-r  output raw strings, not JSON texts`).
fn selects_json_output(description: &str) -> bool {
    let d = description.to_ascii_lowercase();
    const NOT: &[&str] = &[
        "not json",
        "non-json",
        "instead of json",
        "don't",
        "do not",
        "colo",
        "monochrome",
        "read",
        "input",
        "parse",
    ];
    d.contains("json") && !NOT.iter().any(|n| d.contains(n))
}

/// An option line's flags (`-J`, `--json`; values like `<list>` or `=FMT` dropped), the text after them, and
/// whether a flag takes a value.
fn split_option(line: &str) -> (Vec<String>, &str, bool) {
    let mut flags = Vec::new();
    let mut rest = line;
    let mut takes_value = false;
    loop {
        let t = rest.trim_start_matches([' ', ',']);
        if !t.starts_with('-') {
            return (flags, t, takes_value);
        }
        let end = t.find([' ', ',']).unwrap_or(t.len());
        let word = &t[..end];
        let flag = word.split(['=', '[']).next().unwrap_or(word);
        takes_value |= flag.len() < word.len();
        flags.push(flag.to_string());
        rest = &t[end..];
        // A value placeholder after the flag (`--output <list>`, `-o FMT`).
        let after = rest.trim_start_matches(' ');
        if after.starts_with('<')
            || after.split(' ').next().is_some_and(|w| {
                !w.is_empty()
                    && w == w.to_uppercase()
                    && w.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            })
        {
            let skip = after.find([' ', ',']).unwrap_or(after.len());
            rest = &after[skip..];
            takes_value = true;
        }
    }
}

/// Interpreters: a pack of one runs whatever code its arguments name.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "bash",
    "sh",
    "zsh",
    "dash",
    "fish",
    "ksh",
    "lua",
    "luajit",
    "Rscript",
    "java",
    "pwsh",
    "powershell",
    "tclsh",
    "osascript",
];

/// Whether `bin` is an interpreter or a shell (`python3.12`, `node`, `bash` …).
pub fn is_interpreter(bin: &str) -> bool {
    let base = bin.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&bin) || INTERPRETERS.contains(&base)
}

/// A warning for an interpreter (`python3`, `node`, `bash` …).
pub fn interpreter_warning(bin: &str) -> Option<String> {
    is_interpreter(bin).then(|| {
        format!("`{bin}` is an interpreter: a command that hands it a script or `-c` text runs any code a caller passes, whatever policy.json says; wrap the program it runs instead, or give each command a fixed script of the pack and closed arguments (M027)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FINDMNT: &str = "Usage:\n findmnt [options]\n\nOptions:\n -J, --json             use JSON output format\n -o, --output <list>    the output columns to be shown\n\nAvailable output columns:\n      ACTION  action detected by --poll\n       AVAIL  filesystem size available\n      source  the device\n";
    const GIT: &str = "usage: git [-v | --version]\n\nThese are common Git commands used in various situations:\n\nstart a working area\n   clone     Clone a repository into a new directory\n   init      Create an empty Git repository\n";

    #[test]
    fn columns_are_not_subcommands_and_the_json_flag_is_found() {
        assert!(parse_help(FINDMNT).is_empty(), "{:?}", parse_help(FINDMNT));
        assert_eq!(json_flag(FINDMNT), Some(vec!["--json".to_string()]));
        assert_eq!(options(FINDMNT).len(), 2);
        let git: Vec<String> = parse_help(GIT).into_iter().map(|(k, _)| k).collect();
        assert_eq!(git, ["clone", "init"]);
        assert_eq!(json_flag(GIT), None);
    }

    #[test]
    fn json_flags_in_their_many_spellings() {
        assert_eq!(
            json_flag("   -json                set output mode to 'json'"),
            Some(vec!["-json".into()])
        );
        assert_eq!(
            json_flag("  -o, --output FMT   output format: text or json"),
            Some(vec!["--output".into(), "json".into()])
        );
        assert_eq!(json_flag("  -j   print JSON"), Some(vec!["-j".into()]));
        assert_eq!(json_flag("  -j <file>  read the JSON file"), None);
        assert_eq!(json_flag("  --jsonargs  remaining arguments are JSON"), None);
        // jq: every short line that names JSON says what is not JSON output; jq prints JSON by default.
        let jq = "  -r               output raw strings, not JSON texts;\n  -R               read raw strings, not JSON texts;\n  -C               colorize JSON;\n  -M               monochrome (don't colorize JSON);\n  -S               sort keys of objects on output;\n";
        assert_eq!(json_flag(jq), None);
    }

    #[test]
    fn interpreters_are_named() {
        assert!(interpreter_warning("python3").is_some());
        assert!(interpreter_warning("python3.12").is_some());
        assert!(interpreter_warning("git").is_none());
    }
}
