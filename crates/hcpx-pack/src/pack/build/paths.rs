//! The paths a pack names (a wrap's bin, a component, an OpenAPI document, an eval fixture): each must stay
//! inside the pack and be what it is used as.

use cap_std::fs::Dir;

use crate::model::diagnostic::{Issues, LintKind};

/// What a pack path must name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    File,
    Exec,
    /// An eval fixture: a directory, or an executable setup script.
    DirOrExec,
}

/// Checks that `path` (at `ptr` of `file`) stays inside the pack and names what `want` says.
pub(super) fn check_pack_path(
    root: &Dir,
    (file, ptr): (&str, &str),
    path: &str,
    want: Want,
    is: &mut Issues,
) {
    let escapes = path.starts_with('/') || path.split('/').any(|c| c == "..");
    if escapes || path.is_empty() {
        is.push(
            LintKind::PathEscapes,
            file,
            ptr,
            format!("{path:?} leaves the pack: pack paths are relative and never use `..`"),
            "move the file into the pack and name it relative to the pack directory, e.g. \"./bin/tool\"",
        );
        return;
    }
    let rel = path.trim_start_matches("./");
    match root.metadata(rel) {
        Ok(meta) if meta.is_dir() && want == Want::DirOrExec => {}
        Ok(meta) if meta.is_file() => {
            if want != Want::File {
                use cap_std::fs::PermissionsExt;
                if meta.permissions().mode() & 0o111 == 0 {
                    is.push(
                        LintKind::BinNotExecutable,
                        file,
                        ptr,
                        format!("{path:?} is not executable"),
                        format!("run `chmod +x {rel}` in the pack and give it a `#!` line"),
                    );
                }
            }
        }
        Ok(_) => is.push(
            LintKind::PathMissing,
            file,
            ptr,
            format!("{path:?} is not a file"),
            "point at a file inside the pack",
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let through_link = root.symlink_metadata(rel).is_ok();
            if through_link {
                is.push(
                    LintKind::PathEscapes,
                    file,
                    ptr,
                    format!("{path:?} is a link that leads nowhere inside the pack"),
                    "replace the link with the file itself",
                );
            } else {
                is.push(
                    LintKind::PathMissing,
                    file,
                    ptr,
                    format!("{path:?} does not exist in the pack"),
                    "add the file to the pack or correct the path",
                );
            }
        }
        Err(_) => is.push(
            LintKind::PathEscapes,
            file,
            ptr,
            format!("{path:?} resolves outside the pack (through a link)"),
            "replace the link with the file itself: install copies only the pack",
        ),
    }
}
