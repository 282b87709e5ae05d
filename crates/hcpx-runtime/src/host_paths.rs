//! Host paths out of what a served caller reads (#34.8): an error, a hint or a command's stderr often names
//! where the store, a tenant's workspace, an installed pack or a call's `TMPDIR` lie on the operator's machine.
//! `hcpx serve` tells a tenant the same text with each replaced by a placeholder (docs/security.md, A served
//! runtime); the store's owner (the CLI, MCP over stdio) reads the real paths.
//!
//! What a path becomes (its tail kept only where it names the call's own files, which the command sees anyway):
//!
//! | host path | placeholder |
//! |-----------|-------------|
//! | `$HCP_HOME/tenants/<t>/workspaces/<pack>/rest`, `$HCP_HOME/workspaces/<pack>/rest`, `$HCP_HOME/tmp/ephemeral-…/rest` | `$WORKSPACE/rest` |
//! | `$HCP_HOME/packs/<pack>/rest` | `$PACK/rest` |
//! | `$HCP_HOME/<document>` (one name: `state.json`, `sandbox.json`, …) | `$HCP_HOME/<document>` |
//! | any other path in the store | `$HCP_HOME/…` (its tail names the store's layout and tenants: dropped) |
//! | `<temp dir>/hcpx-call-…/rest` | `$TMPDIR/rest` |
//! | any other path in the system temp directory | `$TMPDIR/../…` |
//! | any path in a compile cache outside the store (`HCP_CACHE_DIR`) | `$HCP_CACHE_DIR/…` |

use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;

use crate::store::Store;

/// The operator's directories a served caller is never told, longest first (so the store inside the temp
/// directory is named as the store).
#[derive(Debug, Clone, Default)]
pub struct HostPaths {
    roots: Vec<Root>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Store,
    Cache,
    Temp,
}

#[derive(Debug, Clone)]
struct Root {
    path: String,
    kind: Kind,
    /// `path` as JSON writes it inside a string (its escapes), to look for it in a JSON text.
    json: String,
}

impl HostPaths {
    /// The paths of `store`, and the system temp directory each call's `TMPDIR` is made in.
    pub fn of(store: &Store) -> HostPaths {
        HostPaths::new(store.home(), &store.layout().cache, &std::env::temp_dir())
    }

    /// The store at `home`, its compile cache `cache` (named only when outside the store) and the temp
    /// directory `temp`; each also as the kernel resolves it, where that differs.
    pub fn new(home: &Path, cache: &Path, temp: &Path) -> HostPaths {
        let mut roots = Vec::new();
        let cache_outside = !cache.starts_with(home);
        for (path, kind, on) in
            [(home, Kind::Store, true), (cache, Kind::Cache, cache_outside), (temp, Kind::Temp, true)]
        {
            if !on {
                continue;
            }
            let resolved = std::fs::canonicalize(path).ok();
            for p in std::iter::once(path).chain(resolved.as_deref()) {
                let text = p.display().to_string();
                let text = text.trim_end_matches('/');
                // `/` (or a relative path) would take every path of the text.
                if text.starts_with('/') && !roots.iter().any(|r: &Root| r.path == text) {
                    let quoted = serde_json::to_string(text).unwrap_or_default();
                    let json = quoted.get(1..quoted.len().saturating_sub(1)).unwrap_or_default().to_string();
                    roots.push(Root { path: text.to_string(), kind, json });
                }
            }
        }
        roots.sort_by_key(|r| std::cmp::Reverse(r.path.len()));
        HostPaths { roots }
    }

    /// `text` with each host path replaced by its placeholder (the module's table).
    pub fn hide<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.roots.iter().any(|r| text.contains(r.path.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        while let Some(c) = text.get(i..).and_then(|t| t.chars().next()) {
            match self.root_at(text, i) {
                Some(root) => {
                    let after = i + root.path.len();
                    let tail = text.get(after..).unwrap_or_default();
                    let len = tail.find(|c| !is_path_char(c)).unwrap_or(tail.len());
                    out.push_str(&placeholder(root.kind, tail.get(..len).unwrap_or_default()));
                    i = after + len;
                }
                None => {
                    out.push(c);
                    i += c.len_utf8();
                }
            }
        }
        Cow::Owned(out)
    }

    /// Whether no host path appears in `json`, a JSON text (each path looked for as JSON writes it in a string,
    /// so in every string and key of the value it encodes): then [`HostPaths::hide_in_answer`] and
    /// [`HostPaths::hide_all`] would change nothing of that value, and a served face may send the text as it is.
    pub fn absent_from_json(&self, json: &str) -> bool {
        self.roots.iter().all(|r| !r.json.is_empty() && !json.contains(r.json.as_str()))
    }

    /// A result envelope (or an object answered in its place) as a served caller reads it: a failure's every
    /// string (its output is failure text too); a success's all but the command's own output (`result`,
    /// `stdout` and the `title` made from it). Anything not an envelope that says `ok: true` is a failure. A
    /// built-in pack's results are the runtime's own reports (`hcp.doctor` names the store), not a command's
    /// output: every string of them.
    pub fn hide_in_answer(&self, v: &mut Value) {
        match v {
            Value::Object(m) if carries_output(m) => {
                for (k, x) in m.iter_mut() {
                    if !matches!(k.as_str(), "result" | "stdout" | "title") {
                        self.hide_all(x);
                    }
                }
            }
            _ => self.hide_all(v),
        }
    }

    /// Every string of `v`, keys too.
    pub fn hide_all(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                if let Cow::Owned(h) = self.hide(s) {
                    *s = h;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.hide_all(x)),
            Value::Object(m) => {
                *m = std::mem::take(m)
                    .into_iter()
                    .map(|(k, mut x)| {
                        self.hide_all(&mut x);
                        (self.hide(&k).into_owned(), x)
                    })
                    .collect();
            }
            _ => {}
        }
    }

    /// The root that starts a path at byte `i` of `text`: not inside a longer name before it, and followed by
    /// `/` or the path's end.
    fn root_at(&self, text: &str, i: usize) -> Option<&Root> {
        let before = text.get(..i).and_then(|t| t.chars().next_back());
        if before.is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~')) {
            return None;
        }
        let rest = text.get(i..)?;
        self.roots.iter().find(|r| {
            rest.strip_prefix(r.path.as_str())
                .is_some_and(|t| t.chars().next().is_none_or(|c| c == '/' || !is_path_char(c)))
        })
    }
}

/// Whether an answer is a command's success, whose output (`result`, `stdout`, `title`) is the command's own and
/// passes unchanged: `ok: true`, and not of a built-in pack (whose results are the runtime's reports).
pub fn carries_output(answer: &serde_json::Map<String, Value>) -> bool {
    let ok = answer.get("ok").and_then(Value::as_bool) == Some(true);
    ok && !answer.get("pack_id").and_then(Value::as_str).is_some_and(crate::store::built_in::is_built_in)
}

/// Whether `c` may continue a path in error text: it ends at white space, a quote, a bracket or the `:` and `,`
/// that error text puts after a path.
fn is_path_char(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || "\"'`:,;()[]{}<>|\\".contains(c))
}

/// What a path in `kind`'s root, with `tail` after it (`""` or `/…`), is shown as.
fn placeholder(kind: Kind, tail: &str) -> String {
    let kept = |name: &str, rest: &str| format!("{name}{rest}");
    match kind {
        Kind::Store => {
            if let Some((p, rest)) = split(tail, 4) {
                if p[0] == "tenants" && p[2] == "workspaces" && !p[3].starts_with('.') {
                    return kept("$WORKSPACE", rest);
                }
            }
            if let Some((p, rest)) = split(tail, 2) {
                let workspace = p[0] == "workspaces" && !p[1].starts_with('.');
                if workspace || (p[0] == "tmp" && p[1].starts_with("ephemeral-")) {
                    return kept("$WORKSPACE", rest);
                }
                if p[0] == "packs" {
                    return kept("$PACK", rest);
                }
            }
            // A document at the store's top (`state.json`, `sandbox.json`): its name is in the docs, and says
            // which one to fix.
            if let Some((_, "")) = split(tail, 1) {
                return kept("$HCP_HOME", tail);
            }
            dropped("$HCP_HOME", tail)
        }
        Kind::Cache => dropped("$HCP_CACHE_DIR", tail),
        Kind::Temp => match split(tail, 1) {
            Some((p, rest)) if p[0].starts_with("hcpx-call-") => kept("$TMPDIR", rest),
            _ => dropped("$TMPDIR/..", tail),
        },
    }
}

/// `name`, then `/…` where a tail was dropped.
fn dropped(name: &str, tail: &str) -> String {
    if tail.trim_matches('/').is_empty() {
        name.to_string()
    } else {
        format!("{name}/…")
    }
}

/// The first `n` components of `tail` (`/a/b/c`) and what follows them (`/c`, or `""`); `None` when it has
/// fewer.
fn split(tail: &str, n: usize) -> Option<(Vec<&str>, &str)> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = tail;
    for _ in 0..n {
        let r = rest.strip_prefix('/')?;
        let (part, after) = r.split_at(r.find('/').unwrap_or(r.len()));
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        rest = after;
    }
    Some((parts, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn paths() -> HostPaths {
        HostPaths::new(Path::new("/srv/op/.hcp"), Path::new("/var/cache/hcpx"), Path::new("/tmp"))
    }

    #[test]
    fn a_json_text_names_a_host_path_wherever_a_string_or_key_would() {
        let p = paths();
        let clean = json!({"ok": true, "result": {"to": "B", "path": "/var/cache/other"}, "title": "x"});
        assert!(p.absent_from_json(&clean.to_string()));
        for v in [
            json!({"ok": false, "error": "cannot open /srv/op/.hcp/state.json"}),
            json!({"ok": true, "result": {"/tmp/x": 1}}),
            json!(["a", {"b": "see /var/cache/hcpx/ab.cwasm"}]),
        ] {
            assert!(!p.absent_from_json(&v.to_string()), "{v}");
        }
        // A path JSON escapes is looked for as JSON writes it.
        let quoted = HostPaths::new(Path::new("/srv/a\"b"), Path::new("/srv/a\"b/cache"), Path::new("/tmp"));
        let v = json!({"ok": false, "error": "in /srv/a\"b/x"});
        assert!(!quoted.absent_from_json(&v.to_string()));
        let mut hidden = v.clone();
        quoted.hide_in_answer(&mut hidden);
        assert_ne!(hidden, v);
    }

    #[test]
    fn each_root_becomes_its_placeholder() {
        let p = paths();
        let cases = [
            ("/srv/op/.hcp/tenants/acme/workspaces/ledger/notes.txt", "$WORKSPACE/notes.txt"),
            ("/srv/op/.hcp/workspaces/ledger", "$WORKSPACE"),
            ("/srv/op/.hcp/tmp/ephemeral-x-Ab12/out", "$WORKSPACE/out"),
            ("/srv/op/.hcp/packs/ledger/bin/run", "$PACK/bin/run"),
            ("/srv/op/.hcp/tenants/acme/workspaces/.ledger.lock", "$HCP_HOME/…"),
            ("/srv/op/.hcp/tenants/acme/credentials.json", "$HCP_HOME/…"),
            ("/srv/op/.hcp/tenants/acme", "$HCP_HOME/…"),
            ("/srv/op/.hcp/sandbox.json", "$HCP_HOME/sandbox.json"),
            ("/srv/op/.hcp", "$HCP_HOME"),
            ("/srv/op/.hcp/", "$HCP_HOME"),
            ("/tmp/hcpx-call-Xy12/scratch", "$TMPDIR/scratch"),
            ("/tmp", "$TMPDIR/.."),
            ("/tmp/other", "$TMPDIR/../…"),
            ("/var/cache/hcpx/ab.cwasm", "$HCP_CACHE_DIR/…"),
        ];
        for (path, shown) in cases {
            assert_eq!(
                p.hide(&format!("cannot open {path}: denied")),
                format!("cannot open {shown}: denied")
            );
        }
    }

    #[test]
    fn only_whole_paths_are_taken_and_the_longest_root_wins() {
        let p = HostPaths::new(Path::new("/tmp/t1/home"), Path::new("/tmp/t1/home/cache"), Path::new("/tmp"));
        assert_eq!(p.hide("\"/tmp/t1/home/approvals/a.json\" is not valid"), "\"$HCP_HOME/…\" is not valid");
        assert_eq!(
            p.hide("at /var/tmp/x and /tmpfile and /srv/tmp"),
            "at /var/tmp/x and /tmpfile and /srv/tmp"
        );
        assert_eq!(p.hide("cwd=/tmp/hcpx-call-1/a,b"), "cwd=$TMPDIR/a,b");
        assert!(matches!(p.hide("nothing here"), Cow::Borrowed(_)));
        // `/` is never a root: it would take every path.
        assert!(HostPaths::new(Path::new("/"), Path::new("/"), Path::new("/")).roots.is_empty());
    }

    #[test]
    fn a_success_keeps_the_commands_output_and_a_failure_does_not() {
        let p = paths();
        let ws = "/srv/op/.hcp/tenants/a/workspaces/x";
        let mut ok = json!({"ok": true, "result": {"cwd": ws}, "stdout": ws, "stderr": ws, "hint": ws});
        p.hide_in_answer(&mut ok);
        assert_eq!(
            ok,
            json!({"ok": true, "result": {"cwd": ws}, "stdout": ws, "stderr": "$WORKSPACE", "hint": "$WORKSPACE"})
        );
        let mut failed = json!({"ok": false, "result": {ws: ws}, "stdout": ws, "error": ws});
        p.hide_in_answer(&mut failed);
        let w = "$WORKSPACE";
        assert_eq!(failed, json!({"ok": false, "result": {w: w}, "stdout": w, "error": w}));
        let mut report =
            json!({"ok": true, "pack_id": "hcp-cli", "result": {"detail": "HCP_HOME is /srv/op/.hcp"}});
        p.hide_in_answer(&mut report);
        assert_eq!(report["result"]["detail"], "HCP_HOME is $HCP_HOME");
    }
}
