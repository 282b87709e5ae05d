//! Manifest rules: can an agent pick the right command from its description and fill its arguments unaided?

use std::collections::HashMap;

use super::{Ctx, Hits};
use crate::model::diagnostic::pointer;
use crate::pack::{AdapterKind, Bin, BindingMode, Command, WorkspaceMode};
use crate::template::{Piece, Template};

const SURFACE: &str = "surface.json";

/// Descriptions shorter than this do not tell an agent when to pick the command.
pub const MIN_DESCRIPTION: usize = 20;
/// Descriptions longer than this crowd the tool list every agent reads.
pub const MAX_DESCRIPTION: usize = 300;

/// The description `hcpx wrap` leaves on every template command.
pub const SCAFFOLD_MARK: &str = "TODO";

fn commands<'a>(c: &'a Ctx) -> impl Iterator<Item = (&'a String, &'a Command)> {
    c.pack.commands.iter()
}

fn arg_ptr(key: &str, name: &str) -> String {
    pointer(&["verbs", key, "args", "properties", name])
}

pub(super) fn is_scaffold(cmd: &Command) -> bool {
    cmd.description.as_deref().is_some_and(|d| d.trim_start().starts_with(SCAFFOLD_MARK))
}

/// M001
pub fn no_description(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        if cmd.description.as_deref().is_none_or(|d| d.trim().is_empty()) {
            h.push(SURFACE, pointer(&["verbs", key, "description"]), format!("command `{key}` has no description, so an agent cannot tell when to pick it"), format!("add \"description\" to `{key}`: one sentence on what it returns or changes, and when to use it"));
        }
    }
}

/// M002
pub fn short_description(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        let Some(d) = cmd.description.as_deref().map(str::trim).filter(|d| !d.is_empty()) else { continue };
        if d.chars().count() < MIN_DESCRIPTION && !is_scaffold(cmd) {
            h.push(SURFACE, pointer(&["verbs", key, "description"]), format!("the description of `{key}` ({d:?}) is under {MIN_DESCRIPTION} characters and does not say what it returns"), format!("write one sentence for `{key}`: what it returns, and when an agent should pick it"));
        }
    }
}

/// M003
pub fn long_description(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        let n = cmd.description.as_deref().map_or(0, |d| d.chars().count());
        if n > MAX_DESCRIPTION {
            h.push(SURFACE, pointer(&["verbs", key, "description"]), format!("the description of `{key}` is {n} characters; every agent reads every description"), format!("cut `{key}`'s description to one sentence under {MAX_DESCRIPTION} characters and move the detail to HARNESS.md"));
        }
    }
}

/// M004
pub fn duplicate_description(c: &Ctx, h: &mut Hits) {
    let mut seen: HashMap<String, &str> = HashMap::new();
    for (key, cmd) in commands(c) {
        let Some(d) = cmd.description.as_deref().map(|d| d.trim().to_lowercase()).filter(|d| !d.is_empty())
        else {
            continue;
        };
        if is_scaffold(cmd) {
            continue;
        }
        match seen.get(&d) {
            Some(first) => h.push(
                SURFACE,
                pointer(&["verbs", key, "description"]),
                format!(
                    "`{key}` and `{first}` have the same description, so an agent cannot choose between them"
                ),
                format!("say in `{key}`'s description how it differs from `{first}`"),
            ),
            None => {
                seen.insert(d, key);
            }
        }
    }
}

/// M005
pub fn arg_no_description(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for (name, prop) in cmd.args.props() {
            if prop.description.as_deref().is_none_or(|d| d.trim().is_empty()) {
                h.push(SURFACE, arg_ptr(key, name), format!("argument `{name}` of `{key}` has no description"), format!("add \"description\" to `{name}`: what value it takes and in what form (an id, a path, a date)"));
            }
        }
    }
}

/// M006
pub fn arg_no_type(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for (name, prop) in cmd.args.props() {
            if prop.types.is_empty() {
                h.push(
                    SURFACE,
                    arg_ptr(key, name),
                    format!("argument `{name}` of `{key}` has no type, so any JSON value passes validation"),
                    format!("add \"type\" to `{name}` (\"string\", \"integer\", \"number\", \"boolean\")"),
                );
            }
        }
    }
}

/// M007
pub fn required_no_example(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for name in cmd.args.required() {
            if cmd.args.props().get(name).is_some_and(|p| p.example.is_none()) {
                h.push(SURFACE, arg_ptr(key, name), format!("required argument `{name}` of `{key}` has no example, so `hcpx commands` cannot show a ready-to-run line and probes cannot reach `{key}`"), format!("add \"examples\": [<a real value>] to `{name}`"));
            }
        }
    }
}

const VAGUE: &[&str] = &[
    "arg", "args", "val", "value", "values", "data", "input", "param", "params", "thing", "stuff", "obj",
    "opt", "opts", "str", "foo", "bar", "tmp", "misc", "other",
];

/// M008
pub fn vague_arg_name(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for name in cmd.args.props().keys() {
            if name.chars().count() == 1 || VAGUE.contains(&name.as_str()) {
                h.push(SURFACE, arg_ptr(key, name), format!("argument `{name}` of `{key}` does not say what it holds; agents guess at vague names"), format!("rename `{name}` after what it holds (`file`, `query`, `repo`, `table`) in args, cli[] and titles"));
            }
        }
    }
}

const MEGA: &[&str] =
    &["run", "exec", "shell", "sh", "eval", "raw", "cmd", "passthrough", "pass_through", "invoke"];

/// M009
pub fn mega_command(c: &Ctx, h: &mut Hits) {
    for (key, _) in commands(c) {
        let last = key.rsplit('.').next().unwrap_or(key);
        if MEGA.contains(&last) {
            h.push(SURFACE, pointer(&["verbs", key]), format!("`{key}` is named like a mega-command that forwards arbitrary arguments; Execute does not cover a shell"), format!("replace `{key}` with named commands, one per task (docs/packs.md#agent-safe-commands)"));
        }
    }
}

fn name_segments(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch == '.' || ch.is_ascii_uppercase() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if ch.is_ascii_uppercase() {
                cur.push(ch.to_ascii_lowercase());
            }
        } else {
            cur.push(ch);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn secret_like(name: &str) -> bool {
    let segs = name_segments(name);
    let joined = segs.join("");
    segs.iter().any(|s| {
        [
            "token",
            "password",
            "passwd",
            "pwd",
            "secret",
            "apikey",
            "credential",
            "credentials",
            "auth",
            "passphrase",
        ]
        .contains(&s.as_str())
    }) || ["apikey", "privatekey", "accesskey", "clientsecret"].iter().any(|k| joined.contains(k))
}

/// M010
pub fn secret_arg(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for name in cmd.args.props().keys() {
            if secret_like(name) {
                h.push(SURFACE, arg_ptr(key, name), format!("argument `{name}` of `{key}` looks like a credential; arguments land in transcripts, titles and logs"), format!("remove `{name}`; declare a `binding` and pass the secret through `wrap.agent_env` as `{{{{binding.FIELD}}}}` (docs/format.md#surface-binding)"));
            }
        }
    }
}

fn vars_of<'a>(ts: impl IntoIterator<Item = &'a Template>) -> Vec<String> {
    ts.into_iter().flat_map(|t| t.vars().map(str::to_string).collect::<Vec<_>>()).collect()
}

/// M011
pub fn unused_arg(c: &Ctx, h: &mut Hits) {
    let Some(wrap) = &c.pack.wrap else { return };
    for (key, cmd) in commands(c) {
        let used = match &cmd.cli {
            Some(cli) => vars_of(cli),
            None => vars_of(&wrap.argv_template),
        };
        for name in cmd.args.props().keys() {
            if !used.iter().any(|u| u == name) {
                h.push(SURFACE, arg_ptr(key, name), format!("argument `{name}` of `{key}` never reaches the CLI: no cli[] token uses `{{{{{name}}}}}`"), format!("use `{{{{{name}}}}}` in `{key}`.cli, or remove `{name}` from its args"));
            }
        }
    }
}

/// M012
pub fn no_name(c: &Ctx, h: &mut Hits) {
    if c.pack.name.as_deref().is_none_or(|n| n.trim().is_empty()) {
        h.push(
            SURFACE,
            "/name",
            format!("pack `{}` has no display name", c.pack.id),
            "add \"name\": the product's name as people say it (\"GitHub\", \"SQLite\")",
        );
    }
}

/// M013
pub fn no_cli_bin(c: &Ctx, h: &mut Hits) {
    if c.pack.kind == AdapterKind::Wrap && c.pack.cli_bin.is_none() {
        h.push(SURFACE, "/cliBin", "the wrap declares no `cliBin`, so the twin face (the same command typed in a terminal) is not shown to people", "add \"cliBin\": the command people type, as cli[] starts with it");
    }
}

/// M014
pub fn optional_before_required(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        let mut by_pos: Vec<(usize, &String)> =
            cmd.args.props().iter().filter_map(|(n, p)| p.position.map(|i| (i, n))).collect();
        by_pos.sort();
        let mut optional_seen: Option<&String> = None;
        for (_, name) in by_pos {
            let required = cmd.args.required().contains(name);
            match (required, optional_seen) {
                (false, None) => optional_seen = Some(name),
                (true, Some(opt)) => {
                    h.push(SURFACE, arg_ptr(key, name), format!("required `{name}` of `{key}` takes a bare word after optional `{opt}`, so one bare word fills the wrong slot"), format!("give required arguments the lowest `x-position`s, or drop `x-position` from `{opt}`"));
                    break;
                }
                _ => {}
            }
        }
    }
}

/// M015
pub fn positional_not_scalar(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for (name, prop) in cmd.args.props() {
            let scalar = prop.types.iter().all(|t| matches!(t.as_str(), "string" | "integer" | "number"));
            if prop.position.is_some() && !scalar {
                h.push(SURFACE, arg_ptr(key, name), format!("`{name}` of `{key}` takes a bare word but is {}, which a bare word cannot spell unambiguously", prop.types.join(" or ")), format!("remove \"x-position\" from `{name}` and pass it as {name}=… or {name}:=…"));
            }
        }
    }
}

fn style(name: &str) -> Option<&'static str> {
    if name.contains('_') {
        Some("snake_case")
    } else if name.contains('-') {
        Some("kebab-case")
    } else if name.chars().any(|c| c.is_ascii_uppercase()) {
        Some("camelCase")
    } else {
        None
    }
}

/// M016
pub fn mixed_arg_style(c: &Ctx, h: &mut Hits) {
    let mut first: Option<(&'static str, String)> = None;
    for (key, cmd) in commands(c) {
        for name in cmd.args.props().keys() {
            let Some(s) = style(name) else { continue };
            match &first {
                None => first = Some((s, format!("{key}.{name}"))),
                Some((f, at)) if *f != s => {
                    h.push(SURFACE, arg_ptr(key, name), format!("argument `{name}` of `{key}` is {s} while `{at}` is {f}; agents carry names across commands"), format!("rename arguments to one style ({f}) across the pack"));
                    return;
                }
                _ => {}
            }
        }
    }
}

/// M018
pub fn scaffold_template(c: &Ctx, h: &mut Hits) {
    let left: Vec<&str> = commands(c).filter(|(_, cmd)| is_scaffold(cmd)).map(|(k, _)| k.as_str()).collect();
    if !left.is_empty() {
        let bin = c.pack.cli_bin.clone().unwrap_or_else(|| "the CLI".into());
        h.push(SURFACE, "/verbs", format!("{} command(s) still carry the scaffold template ({})", left.len(), left.join(", ")), format!("Replace the template commands with 5 to 12 real commands from \"{bin} --help\": a description, cli[] and args each, a policy.json row and a HARNESS.md hot-path row"));
    }
}

/// M019
pub fn no_title(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        if cmd.title.is_empty() {
            let shown = if c.pack.kind == crate::pack::AdapterKind::Composite {
                "only its pack and command name, not what the call does"
            } else {
                "its raw command line"
            };
            h.push(SURFACE, pointer(&["verbs", key, "title"]), format!("`{key}` declares no title, so hosts show {shown}"), format!("add \"title\": {{\"live\": [\"…ing …\"], \"done\": [\"…ed …\"]}} to `{key}` (docs/packs.md#titles-and-previews)"));
        }
    }
}

/// M021
pub fn mock_binding(c: &Ctx, h: &mut Hits) {
    if c.pack.binding.mode == BindingMode::Mock {
        h.push(SURFACE, "/binding/mode", "the Binding is `mock`: commands never receive a real credential", "set binding.mode to what the CLI really needs (`public`, `local`, `user`) once it is past a demo");
    }
}

/// M023
pub fn path_cli_in_pack_dir(c: &Ctx, h: &mut Hits) {
    if let Some(w) = &c.pack.wrap {
        if let (Bin::Name(name), WorkspaceMode::None) = (&w.bin, w.workspace) {
            h.push(SURFACE, "/wrap/workspace/mode", format!("`{name}` is a CLI on PATH and would run in the installed pack's directory, not the caller's project"), "set \"wrap\": {\"workspace\": {\"mode\": \"project\"}} (or `workspace`/`ephemeral` for a CLI that needs no project)");
        }
    }
}

const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "fish", "ksh", "csh", "tcsh", "busybox", "env", "xargs", "python",
    "python3", "node", "perl", "ruby", "php", "sudo", "doas", "eval",
];

/// M024
pub fn shell_bin(c: &Ctx, h: &mut Hits) {
    let Some(w) = &c.pack.wrap else { return };
    let Bin::Name(name) = &w.bin else { return };
    if SHELLS.contains(&name.as_str()) {
        h.push(SURFACE, "/wrap/bin", format!("wrap.bin is `{name}`, an interpreter: allow-listing it lets a pack run any program"), format!("ship the script inside the pack (\"bin\": \"./bin/tool\") or wrap the real CLI; never allow-list `{name}`"));
    }
}

/// CLIs whose arguments are code: a value spliced into one of their tokens is code too.
const INTERPRETERS: &[&str] = &[
    "sqlite3", "psql", "mysql", "mariadb", "duckdb", "jq", "yq", "gojq", "awk", "gawk", "mawk", "sed",
    "python", "python3", "perl", "ruby", "node", "deno", "bun", "sh", "bash", "zsh", "dash", "lua", "php",
    "pwsh",
];

/// Flags after which the next token is a program (`sh -c`, `node -e`, `python -c`, `sqlite3 -cmd`).
const CODE_FLAGS: &[&str] = &["-c", "-e", "-E", "--eval", "--command", "-cmd", "--execute"];

/// M027
pub fn spliced_into_interpreter(c: &Ctx, h: &mut Hits) {
    let Some(w) = &c.pack.wrap else { return };
    let pack_bin = match &w.bin {
        Bin::Name(n) => n.clone(),
        Bin::Path(p) => p.rsplit('/').next().unwrap_or(p).to_string(),
    };
    for (key, cmd) in commands(c) {
        let tokens: &[Template] = cmd.cli.as_deref().unwrap_or(&w.argv_template);
        let bin = cmd.cli_bin.clone().unwrap_or_else(|| pack_bin.clone());
        let interpreter = INTERPRETERS.contains(&bin.as_str());
        for (i, t) in tokens.iter().enumerate() {
            if t.is_literal() || t.sole_var().is_some() {
                continue;
            }
            let after_code_flag =
                i > 0 && tokens[i - 1].is_literal() && CODE_FLAGS.contains(&tokens[i - 1].source());
            if !(interpreter || after_code_flag) {
                continue;
            }
            for v in t.vars() {
                let open = cmd.args.props().get(v).is_some_and(|p| !p.closed);
                if open {
                    h.push(
                        SURFACE,
                        pointer(&["verbs", key, "cli", &(i + 1).to_string()]),
                        format!("`{key}` splices `{{{{{v}}}}}` into the {bin} code {:?}: a caller's value becomes code there", t.source()),
                        format!("pass `{v}` to {bin} as data (its own token, read as a value), or close it with `enum` or a `pattern` such as \"^[A-Za-z_][A-Za-z0-9_]*$\""),
                    );
                }
            }
        }
    }
}

/// Argument-name segments that usually name a file or directory.
const PATH_WORDS: &[&str] = &[
    "file",
    "files",
    "filename",
    "filepath",
    "path",
    "paths",
    "database",
    "db",
    "dir",
    "directory",
    "folder",
];

/// M028
pub fn path_arg_unmarked(c: &Ctx, h: &mut Hits) {
    if c.pack.kind != AdapterKind::Wrap {
        return;
    }
    for (key, cmd) in commands(c) {
        for (name, prop) in cmd.args.props() {
            if prop.path.is_none() && name_segments(name).iter().any(|s| PATH_WORDS.contains(&s.as_str())) {
                h.push(
                    SURFACE,
                    arg_ptr(key, name),
                    format!("argument `{name}` of `{key}` looks like a file path but says neither \"x-path\": true nor false"),
                    format!("add \"x-path\": true to `{name}` so the runtime keeps it inside the working directory (or false if it is not a file)"),
                );
            }
        }
    }
}

/// M026
pub fn bad_title(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in commands(c) {
        for (form, list) in [("live", &cmd.title.live), ("done", &cmd.title.done)] {
            for (i, t) in list.iter().enumerate() {
                let ptr = pointer(&["verbs", key, "title", form, &i.to_string()]);
                for v in t.vars() {
                    if let Some(field) = v.strip_prefix("result.").or((v == "result").then_some("")) {
                        if form == "live" {
                            h.push(SURFACE, &ptr, format!("the live title of `{key}` uses `{{{{result{}}}}}`, but there is no result while the command runs", if field.is_empty() { String::new() } else { format!(".{field}") }), format!("move `{{{{{v}}}}}` to the done title of `{key}`"));
                        }
                    } else if !cmd.args.declares(v) {
                        h.push(SURFACE, &ptr, format!("the {form} title of `{key}` uses `{{{{{v}}}}}`, which is not an argument of `{key}`"), format!("use a declared argument of `{key}`, or `{{{{result.FIELD}}}}` in done"));
                    }
                }
            }
            if let Some(last) = list.last() {
                if last.pieces().iter().any(|p| matches!(p, Piece::Var(_))) {
                    let ptr = pointer(&["verbs", key, "title", form, &(list.len() - 1).to_string()]);
                    h.push(SURFACE, ptr, format!("the {form} title of `{key}` has no plain fallback: its last template {:?} has placeholders", last.source()), format!("end `{key}`'s {form} list with a title without placeholders, e.g. \"{}\"", plain_fallback(last)));
                }
            }
        }
    }
}

/// Words a title cannot end on.
const DANGLING: &[&str] =
    &["of", "the", "a", "an", "in", "for", "to", "from", "on", "at", "with", "by", "into", "as", "and", "or"];

/// A plain title made from `t` for M026's fix, in English: placeholders at the end are dropped with the words
/// that led to them ("Finding the filesystem of {{path}}" → "Finding the filesystem"); where too little would be
/// left ("Listing {{dir}}"), each placeholder becomes the thing it names ("Listing the dir").
fn plain_fallback(t: &Template) -> String {
    let pieces = t.pieces();
    let text_of = |p: &Piece| match p {
        Piece::Lit(s) => s.clone(),
        Piece::Var(v) => {
            let name = v.rsplit('.').next().unwrap_or(v).replace(['_', '-'], " ");
            format!("the {}", if name.is_empty() { "result".into() } else { name })
        }
    };
    // The literal text before the first placeholder, when the placeholders close the title.
    let first_var = pieces.iter().position(|p| matches!(p, Piece::Var(_)));
    let tail_is_plain = first_var.is_some_and(|i| {
        pieces[i..].iter().all(|p| match p {
            Piece::Var(_) => true,
            Piece::Lit(s) => !s.chars().any(char::is_alphanumeric),
        })
    });
    if let (Some(i), true) = (first_var, tail_is_plain) {
        let head: String = pieces[..i].iter().map(text_of).collect();
        let mut words: Vec<&str> = head.split_whitespace().collect();
        while words.last().is_some_and(|w| DANGLING.contains(&w.to_lowercase().as_str())) {
            words.pop();
        }
        if words.len() >= 2 {
            return capitalized(words.join(" ").trim_end_matches(|c: char| !c.is_alphanumeric()));
        }
    }
    let whole: String = pieces.iter().map(text_of).collect();
    let words: Vec<&str> = whole.split_whitespace().collect();
    if words.is_empty() {
        "Done".into()
    } else {
        capitalized(words.join(" ").trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')'))
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::plain_fallback;
    use crate::template::Template;

    #[test]
    fn fallback_titles_are_english() {
        let f = |s: &str| plain_fallback(&Template::parse(s).unwrap());
        assert_eq!(f("Finding the filesystem of {{path}}"), "Finding the filesystem");
        assert_eq!(f("Listing {{dir}}"), "Listing the dir");
        assert_eq!(f("Showing {{id}}..."), "Showing the id");
        assert_eq!(f("Pay {{payee}} now"), "Pay the payee now");
        assert_eq!(f("{{result.count}} rows read"), "The count rows read");
        assert_eq!(f("Listed {{result.n}} files in {{dir}}"), "Listed the n files in the dir");
        assert_eq!(f("{{x}}"), "The x");
    }
}
