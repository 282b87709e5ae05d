//! Reads pack files through a cap-std directory, bounded in size, and parses JSON with a pointer to any error.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use serde::de::DeserializeOwned;
use std::io::Read;
use std::path::Path;

use crate::model::diagnostic::{pointer_segment, push_pointer_segment, Issues, LintKind};
use crate::model::io_reason;

/// The largest pack file the runtime reads.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Opens the pack directory as a capability; every later read stays beneath it.
pub(crate) fn open_dir(dir: &Path, issues: &mut Issues) -> Option<Dir> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            issues.push(
                LintKind::MissingFile,
                ".",
                "",
                format!("{} is not a directory", dir.display()),
                "pass the directory that holds surface.json, policy.json and HARNESS.md",
            );
            return None;
        }
        Err(e) => {
            issues.push(
                LintKind::MissingFile,
                ".",
                "",
                format!("pack directory {} cannot be opened: {}", dir.display(), io_reason(&e)),
                "pass the directory that holds surface.json, policy.json and HARNESS.md",
            );
            return None;
        }
    }
    match Dir::open_ambient_dir(dir, ambient_authority()) {
        Ok(d) => Some(d),
        Err(e) => {
            issues.push(
                LintKind::MissingFile,
                ".",
                "",
                format!("pack directory {} cannot be opened: {}", dir.display(), io_reason(&e)),
                "check the directory's permissions",
            );
            None
        }
    }
}

/// Reads `name` from the pack. `None` (with an issue when `required`) when it is absent or unreadable.
pub(crate) fn read_text(root: &Dir, name: &str, required: bool, issues: &mut Issues) -> Option<String> {
    // Opened first, never through a link and without blocking (a FIFO put in a file's place cannot hang the
    // runtime), then checked on the open file itself, so nothing can be swapped in between.
    let mut opts = cap_std::fs::OpenOptions::new();
    opts.read(true);
    cap_std::fs::OpenOptionsExt::custom_flags(&mut opts, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    let file = match root.open_with(name, &opts) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if required {
                issues.push(
                    LintKind::MissingFile,
                    name,
                    "",
                    format!("{name} is missing"),
                    format!("create {name} in the pack directory (see docs/packs.md)"),
                );
            }
            return None;
        }
        Err(e) => {
            let link = e.raw_os_error() == Some(libc::ELOOP)
                || root.symlink_metadata(name).is_ok_and(|m| m.is_symlink());
            let (what, fix) = if link {
                (format!("{name} is a link"), format!("make {name} a plain file inside the pack, not a link"))
            } else {
                (
                    format!("{name} cannot be read: {}", io_reason(&e)),
                    format!("make {name} a plain file inside the pack, not a link out of it"),
                )
            };
            issues.push(LintKind::FileUnreadable, name, "", what, fix);
            return None;
        }
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => {
            issues.push(
                LintKind::FileUnreadable,
                name,
                "",
                format!("{name} cannot be read: {}", io_reason(&e)),
                format!("make {name} a plain file"),
            );
            return None;
        }
    };
    if !meta.is_file() {
        issues.push(
            LintKind::FileUnreadable,
            name,
            "",
            format!("{name} is not a regular file"),
            format!("make {name} a plain file"),
        );
        return None;
    }
    if meta.len() > MAX_FILE_BYTES {
        issues.push(
            LintKind::FileUnreadable,
            name,
            "",
            format!("{name} is {} bytes, over the limit of {MAX_FILE_BYTES}", meta.len()),
            format!("shrink {name} below {} MiB", MAX_FILE_BYTES / (1024 * 1024)),
        );
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let read = file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes);
    if let Err(e) = read {
        issues.push(
            LintKind::FileUnreadable,
            name,
            "",
            format!("{name} cannot be read: {}", io_reason(&e)),
            format!("make {name} a readable plain file inside the pack"),
        );
        return None;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        issues.push(
            LintKind::FileUnreadable,
            name,
            "",
            format!("{name} grew past the limit of {MAX_FILE_BYTES} bytes while being read"),
            format!("shrink {name} below {} MiB", MAX_FILE_BYTES / (1024 * 1024)),
        );
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(e) => {
            issues.push(
                LintKind::FileUnreadable,
                name,
                "",
                format!("{name} is not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to()),
                format!("save {name} as UTF-8"),
            );
            None
        }
    }
}

/// Parses `text` as `T`; on failure records one issue with the JSON pointer of the failing field.
pub(crate) fn parse_json<T: DeserializeOwned>(file: &str, text: &str, issues: &mut Issues) -> Option<T> {
    // A file that parses is parsed once, untracked: tracking every field's path costs a one-shot `hcpx exec`
    // about a tenth of its instructions (#39, docs/perf-log.md). One that does not is parsed again, tracked, and
    // fails there at the same place, for the pointer its issue names.
    if let Ok(value) = serde_json::from_str::<T>(text) {
        return Some(value);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed: Result<T, _> = serde_path_to_error::deserialize(&mut de);
    let value = match parsed {
        Ok(v) => v,
        Err(err) => {
            let ptr = path_pointer(err.path());
            let inner = err.into_inner();
            record_json_error(file, ptr, &inner, issues);
            return None;
        }
    };
    if let Err(e) = de.end() {
        record_json_error(file, String::new(), &e, issues);
        return None;
    }
    Some(value)
}

fn record_json_error(file: &str, ptr: String, err: &serde_json::Error, issues: &mut Issues) {
    use serde_json::error::Category;
    let msg = err.to_string();
    match err.classify() {
        Category::Syntax | Category::Eof | Category::Io => issues.push(
            LintKind::InvalidJson,
            file,
            "",
            format!("{file} is not valid JSON: {msg}"),
            format!("fix the JSON syntax of {file} at the line and column named"),
        ),
        Category::Data => {
            if msg.starts_with("unknown field") {
                let field = msg.split('`').nth(1).unwrap_or("").to_string();
                let parent =
                    ptr.strip_suffix(&format!("/{}", pointer_segment(&field))).unwrap_or(&ptr).to_string();
                let place = if parent.is_empty() { "the top level".to_string() } else { parent };
                issues.push(
                    LintKind::UnknownField,
                    file,
                    ptr,
                    format!("{file}: {msg} (at {place})"),
                    format!("remove `{field}` or correct its spelling to one of the fields named"),
                );
            } else {
                let at = if ptr.is_empty() { "the top level".to_string() } else { ptr.clone() };
                issues.push(
                    LintKind::InvalidField,
                    file,
                    ptr,
                    format!("{file}: {msg} (at {at})"),
                    "give the field the type and value the format documents (docs/format.md)",
                );
            }
        }
    }
}

fn path_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for seg in path.iter() {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => {
                out.push('/');
                push_pointer_segment(&mut out, key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}
