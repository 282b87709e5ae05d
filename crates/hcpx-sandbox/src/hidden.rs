//! What the default view hides: a wrap's child under Landlock sees no `/sys`, `/dev`, `/run` or `/var`, and a
//! CLI that reads them often says nothing about it (`lsblk` prints `{"blockdevices": []}`) or only "Permission
//! denied". These are the pure parts of naming that: when a result looks empty or denied, and which system
//! paths `hcpx check --probe` and `hcpx eval` lend a read, one at a time, to find the one it needs
//! (`Trial::hidden_paths`), so the operator can grant it with `hcpx allow-read PACK PATH`.

use serde_json::Value;
use std::path::{Path, PathBuf};

/// System directories outside the default view that a read may need, lent one at a time in a diagnosis.
/// Never a user's files (`/home`, `/root`, `/tmp`) and never the store: the diagnosis runs inside every other
/// layer, and only widens what may be read.
pub const CANDIDATES: &[&str] = &["/sys", "/dev", "/run", "/var", "/etc", "/srv", "/mnt", "/media", "/boot"];

/// The candidates that exist here and do not hold `store_home`.
pub fn candidates(store_home: Option<&Path>) -> Vec<PathBuf> {
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .filter(|p| p.exists() && store_home.is_none_or(|h| !h.starts_with(p)))
        .collect()
}

/// Output with no data in it: nothing, or JSON whose every array and object is empty (`{"blockdevices": []}`).
pub fn looks_empty(output: &str) -> bool {
    fn no_data(v: &Value) -> bool {
        match v {
            Value::Array(a) => a.iter().all(no_data),
            Value::Object(o) => o.values().all(no_data),
            Value::Null => true,
            _ => false,
        }
    }
    let t = output.trim();
    t.is_empty() || serde_json::from_str::<Value>(t).is_ok_and(|v| no_data(&v))
}

/// Whether a message says the kernel refused an access (EACCES, EPERM).
pub fn says_denied(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("permission denied") || t.contains("operation not permitted")
}

/// The sentence a failed wrap call under Landlock gets when its message says an access was refused: which
/// layer, what it hides, and how the operator lends a path, for a person who never runs `hcpx check`.
/// `asked`: the paths of the pack's `wrap.read` the operator has not lent, named exactly when there are any.
pub fn landlock_hint(pack_id: &str, asked: &[PathBuf]) -> String {
    let view = "a wrap's command may read only the system programs and libraries, its pack, its working directory and TMPDIR, not /sys, /dev, /run or /var";
    if asked.is_empty() {
        return format!(
            "sandbox (landlock): {view}; if it needs one, the operator lends it with `hcpx allow-read {pack_id} PATH` (sandbox.json packs.{pack_id}.read), and `hcpx check DIR --probe` names the path"
        );
    }
    let shown: Vec<String> = asked.iter().map(|p| p.display().to_string()).collect();
    format!(
        "sandbox (landlock): {view}; the pack asks to read {} (wrap.read), which the operator has not lent it: `hcpx allow-read {pack_id} {}`",
        shown.join(" and "),
        shown.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_results_and_denials_are_recognised() {
        assert!(looks_empty("{\n   \"blockdevices\": [\n\n   ]\n}\n"));
        assert!(looks_empty("  "));
        assert!(looks_empty("[[], {}]"));
        assert!(!looks_empty("{\"blockdevices\": [{\"name\": \"vda\"}]}"));
        assert!(!looks_empty("0"));
        assert!(!looks_empty("plain text"));
        assert!(says_denied("lsblk: /dev/vda: failed to get sysfs name: Permission denied"));
        assert!(!says_denied("no such file"));
        assert!(candidates(Some(Path::new("/var/lib/hcp"))).iter().all(|p| p != Path::new("/var")));
    }
}
