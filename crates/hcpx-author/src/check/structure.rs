//! Structure rules: what a shippable pack directory holds beside its three files, and what it must not.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::{Ctx, Hits};

const EVALS: &str = "hcp.eval.json";
const PROOF: &str = "proof.sh";

/// S001
pub fn no_eval_file(c: &Ctx, h: &mut Hits) {
    if c.pack.evals.is_none() {
        h.push(
            EVALS,
            "",
            "the pack has no hcp.eval.json, so nothing shows its commands work on a realistic task",
            format!(
                "run `hcpx check {} --init-evals`, then replace every TODO with a real value",
                c.dir.display()
            ),
        );
    }
}

/// S002
pub fn no_proof_script(c: &Ctx, h: &mut Hits) {
    if fs::symlink_metadata(c.dir.join(PROOF)).is_err() {
        h.push(PROOF, "", "the pack ships no proof.sh", "add proof.sh: lint, install, activate, one read, a gated write refused without confirm, then confirmed against a throw-away project or workspace (`--mode mock` swaps only the Binding's credential: the write still runs; `hcpx exec --dry-run` runs nothing) (docs/packs.md#the-proof-script)");
    }
}

/// S003
pub fn proof_not_executable(c: &Ctx, h: &mut Hits) {
    if let Ok(m) = fs::symlink_metadata(c.dir.join(PROOF)) {
        if m.is_file() && m.permissions().mode() & 0o111 == 0 {
            h.push(
                PROOF,
                "",
                "proof.sh is not executable",
                format!("chmod +x {}", c.dir.join(PROOF).display()),
            );
        }
    }
}

/// File names that hold secrets or keys and must never ship in a pack.
fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == ".env"
        || lower.starts_with(".env.")
        || lower.starts_with("id_rsa")
        || lower.starts_with("id_ed25519")
        || lower.starts_with("id_ecdsa")
        || [".netrc", ".npmrc", ".pypirc", "credentials.json", "secrets.json", ".git-credentials"]
            .contains(&lower.as_str())
        || [".pem", ".key", ".p12", ".pfx", ".keystore", ".jks"].iter().any(|ext| lower.ends_with(ext))
}

/// Directories that are build or VCS leftovers, not part of a pack.
fn debris_name(name: &str) -> bool {
    [".git", "node_modules", "target", "__pycache__", ".venv", ".DS_Store"].contains(&name)
}

/// Walks the pack, bounded, without entering build or VCS leftovers.
fn walk(dir: &Path, f: &mut dyn FnMut(&str, &fs::Metadata)) {
    crate::pack::tree::walk(dir, 10_000, 16, &|name| !debris_name(name), f);
}

/// S004
pub fn secret_file(c: &Ctx, h: &mut Hits) {
    let mut found = Vec::new();
    walk(c.dir, &mut |rel, m| {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if m.is_file() && secret_name(name) {
            found.push(rel.to_string());
        }
    });
    for rel in found {
        h.push(&rel, "", format!("`{rel}` looks like a secret or a private key, and everything in a pack is copied on install"), format!("delete `{rel}` from the pack; credentials reach a command through its Binding (`hcpx credential set`), never as a file in the pack"));
    }
}

/// The size past which a pack is too large to review or copy cheaply.
pub const MAX_PACK_BYTES: u64 = 16 * 1024 * 1024;

/// S005. A composite's component is not counted: it is build output a reviewer reads through its source, and the
/// runtime bounds it on its own (a Python or JavaScript component is tens of MiB, its interpreter included).
pub fn pack_too_large(c: &Ctx, h: &mut Hits) {
    let component = c.pack.component.as_deref().map(|p| p.trim_start_matches("./").to_string());
    let mut total = 0u64;
    walk(c.dir, &mut |rel, m| {
        if m.is_file() && component.as_deref() != Some(rel) {
            total += m.len();
        }
    });
    if total > MAX_PACK_BYTES {
        h.push("", "", format!("the pack holds {} MiB of files, over the {} MiB a reviewer can read", total / (1024 * 1024), MAX_PACK_BYTES / (1024 * 1024)), "remove what the commands do not need (data sets, build output); a wrap of a CLI on PATH ships only its three files");
    }
}

/// S006
pub fn build_debris(c: &Ctx, h: &mut Hits) {
    let mut found = Vec::new();
    walk(c.dir, &mut |rel, _| {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if debris_name(name) {
            found.push(rel.to_string());
        }
    });
    for rel in found {
        h.push(
            &rel,
            "",
            format!("`{rel}` is a build or version-control leftover and would be copied on install"),
            format!("remove `{rel}` from the pack directory"),
        );
    }
}

/// S007: once for the pack, however many commands and eval cases the mismatch would fail.
pub fn describe_mismatch(c: &Ctx, h: &mut Hits) {
    let Some(described) = c.described else { return };
    let file = c.pack.component.as_deref().unwrap_or("adapter.wasm").trim_start_matches("./");
    match described {
        Err(why) => h.push(
            file,
            "",
            format!("the component cannot say which commands it implements: {why}"),
            format!("make the guest's `describe()` return the name of every command in surface.json without failing, {}, and check again", super::guest::rebuild(c.lang)),
        ),
        Ok(names) => {
            let missing: Vec<String> =
                c.pack.commands.keys().filter(|k| !names.contains(k)).map(|k| format!("`{k}`")).collect();
            if !missing.is_empty() {
                let listed = if names.is_empty() { "nothing".to_string() } else { names.join(", ") };
                h.push(
                    file,
                    "",
                    format!("the component's describe() does not list {} (it lists {listed}), so the runtime refuses every call of this pack", missing.join(", ")),
                    format!("implement {} in the guest and return {} from `describe()`, then {}; or remove {} from surface.json, policy.json and HARNESS.md", missing.join(", "), if missing.len() == 1 { "it" } else { "them" }, super::guest::rebuild(c.lang), if missing.len() == 1 { "it" } else { "them" }),
                );
            }
        }
    }
}
