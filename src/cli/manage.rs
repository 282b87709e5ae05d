//! `install`, `uninstall`, `activate`, `deactivate`, `list`, `allow`, `disallow`: the store's write commands.

use serde_json::json;

use super::{exit, fail, open_store, ActivateArgs, BinsArgs, IdArgs};
use crate::output::Printer;
use hcpx_runtime::Runtime;
use hcpx_store::packs::InstallError;
use hcpx_store::packs::Replace;

/// `hcpx install DIR`.
pub fn install(p: &Printer, a: &super::InstallArgs) -> anyhow::Result<u8> {
    let Some(dir) = &a.dir else { return super::pull::install_locked(p, a) };
    if let Some(reference) = dir.to_str().filter(|s| s.starts_with("oci://")) {
        return super::pull::install(p, a, reference);
    }
    if a.locked || a.allow_unsigned {
        return Ok(fail(p, "--locked and --allow-unsigned are for registry installs (oci://host/repo:tag); a directory install needs neither"));
    }
    let store = open_store()?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    match store.install_with(dir, replace) {
        Ok(o) => {
            let id = &o.id;
            // Which credential family the pack asks for, and who else may use it.
            let family = store
                .load_pack(id)
                .ok()
                .flatten()
                .filter(|pk| {
                    matches!(
                        pk.binding.mode,
                        hcpx_pack::pack::BindingMode::Local | hcpx_pack::pack::BindingMode::User
                    )
                })
                .map(|pk| {
                    let allowed = store.family_allowed(&pk.binding.family).unwrap_or_default();
                    (pk.binding.family.clone(), allowed.contains(id), allowed)
                });
            if p.json {
                p.json_doc(&json!({
                    "ok": true, "pack_id": id, "replaced": o.replaced, "path": store.pack_dir(id),
                    "replaced_source": o.replaced_other, "deactivated": o.deactivated, "workspace_removed": o.workspace_removed,
                    "credential_family": family.as_ref().map(|(f, ok, allowed)| json!({ "family": f, "allowed": ok, "packs": allowed })),
                }));
            } else {
                match &family {
                    Some((f, true, allowed)) => p.message(&format!("{id} uses credential family {f} (packs that may use it: {})", allowed.join(", "))),
                    Some((f, false, allowed)) => p.message(&format!(
                        "{id} asks for credential family {f}, which belongs to {}; it gets none of them unless you run hcpx credential allow {f} {id}",
                        allowed.join(", ")
                    )),
                    None => {}
                }
                p.message(&format!(
                    "{} {id} into {}",
                    if o.replaced { "reinstalled" } else { "installed" },
                    store.pack_dir(id).display()
                ));
                if let Some(old) = &o.replaced_other {
                    p.message(&format!("replaced the pack {id} installed from {old}"));
                }
                if o.workspace_removed {
                    p.message("removed its workspace; the new pack starts with an empty one");
                }
                // A bare bin the allow-list does not name: the pack cannot run until the operator allows it.
                let unlisted =
                    store.load_pack(id).ok().flatten().and_then(|pk| match pk.wrap.map(|w| w.bin) {
                        Some(hcpx_pack::pack::Bin::Name(b))
                            if !store.sandbox().is_ok_and(|s| s.allows_bin(&b)) =>
                        {
                            Some(b)
                        }
                        _ => None,
                    });
                if let Some(b) = &unlisted {
                    p.message(&format!(
                        "{id} runs `{b}` from PATH, which sandbox.json does not allow-list: its calls are refused until you run hcpx allow {b}"
                    ));
                }
                // What the pack asks to read beyond the default view (wrap.read) and the operator has not lent.
                let asked = store
                    .load_pack(id)
                    .ok()
                    .flatten()
                    .and_then(|pk| pk.wrap)
                    .map(|w| {
                        let lent = store
                            .sandbox()
                            .ok()
                            .and_then(|s| s.for_pack(id).map(|e| e.read.clone()))
                            .unwrap_or_default();
                        w.read_not_lent(&lent)
                    })
                    .unwrap_or_default();
                if !asked.is_empty() {
                    let shown: Vec<String> = asked.iter().map(|x| x.display().to_string()).collect();
                    p.message(&format!(
                        "{id} asks to read {} (wrap.read), outside the default view; if you trust it, lend it with hcpx allow-read {id} {}",
                        shown.join(" and "),
                        shown.join(" ")
                    ));
                }
                let allow = unlisted.map(|b| format!("hcpx allow {b}, then ")).unwrap_or_default();
                if o.deactivated {
                    p.message(&format!("it is not active: review it, then run {allow}hcpx activate {id}"));
                } else {
                    p.message(&format!("next: {allow}hcpx activate {id}"));
                }
            }
            Ok(exit::OK)
        }
        Err(InstallError::Lint { dir, issues }) => {
            let msg =
                format!("pack {dir} fails lint with {} issue(s); fix them and install again", issues.len());
            if p.json {
                p.json_doc(&json!({ "ok": false, "error": msg, "issues": issues }));
            } else {
                p.error(&msg);
                for i in &issues {
                    p.message(&format!(
                        "  [{}] {} {}: {}\n    fix: {}",
                        i.kind.as_str(),
                        i.file,
                        i.pointer,
                        i.message,
                        i.fix
                    ));
                }
            }
            Ok(exit::FAILURE)
        }
        Err(InstallError::Store(e)) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx uninstall ID`.
pub fn uninstall(p: &Printer, a: &IdArgs) -> anyhow::Result<u8> {
    match open_store()?.uninstall(&a.id) {
        Ok(()) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "pack_id": a.id }));
            } else {
                p.message(&format!("uninstalled {} (its workspace, if any, is kept)", a.id));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx activate ID… [--tenant T]` / `hcpx deactivate ID… [--tenant T]`.
pub fn set_activated(p: &Printer, a: &ActivateArgs, on: bool) -> anyhow::Result<u8> {
    let store = open_store()?;
    match store.set_activated(&a.ids, on, a.tenant.as_deref()) {
        Ok(()) => {
            let key = if on { "activated" } else { "deactivated" };
            if p.json {
                p.json_doc(&json!({ "ok": true, key: a.ids, "tenant": a.tenant }));
                return Ok(exit::OK);
            }
            match &a.tenant {
                Some(t) => p.message(&format!("{key} {} for tenant {t}", a.ids.join(", "))),
                None => p.message(&format!("{key} {}", a.ids.join(", "))),
            }
            // A store-wide change leaves the tenants that chose otherwise as they are: say which.
            if a.tenant.is_none() {
                if let Ok(state) = store.state() {
                    for id in &a.ids {
                        let other: Vec<&str> = state.packs.get(id).map_or(Vec::new(), |s| {
                            s.tenants.iter().filter(|(_, v)| **v != on).map(|(t, _)| t.as_str()).collect()
                        });
                        if !other.is_empty() {
                            let flip = if on { "activate" } else { "deactivate" };
                            let who = match other.as_slice() {
                                [one] => format!("tenant {one} keeps its own choice"),
                                many => format!("tenants {} keep their own choice", many.join(", ")),
                            };
                            p.message(&format!(
                                "{who} for {id}; change it with `hcpx {flip} {id} --tenant TENANT`"
                            ));
                        }
                    }
                }
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx list`: renders the runtime's list report (the same one `hcp.list` returns).
pub fn list(p: &Printer) -> anyhow::Result<u8> {
    let report = match Runtime::new(open_store()?).list(None) {
        Ok(r) => r,
        Err(d) => return Ok(fail(p, &d.message)),
    };
    if p.json {
        p.json_doc(&report);
    } else if report.packs.is_empty() {
        p.message("no packs installed; install one with `hcpx install DIR`");
    } else {
        // The columns of docs/cli.md; the source last, as the one of unbounded width.
        let rows: Vec<Vec<String>> = report
            .packs
            .iter()
            .map(|r| {
                vec![
                    r.id.clone(),
                    r.name.clone().unwrap_or_else(|| "-".into()),
                    r.kind.map_or("?", |k| k.as_str()).to_string(),
                    activation_cell(r),
                    r.commands.to_string(),
                    r.installed_at.clone(),
                    r.source.clone(),
                ]
            })
            .collect();
        // Packs from a registry add their manifest digest (shortened; --json has it whole) before the source.
        if report.packs.iter().any(|r| r.digest.is_some()) {
            let rows: Vec<Vec<String>> = rows
                .into_iter()
                .zip(&report.packs)
                .map(|(mut row, r)| {
                    let short = r.digest.as_deref().map_or("-".to_string(), |d| d.chars().take(19).collect());
                    row.insert(6, short);
                    row
                })
                .collect();
            p.table(&["ID", "NAME", "KIND", "ACTIVATED", "COMMANDS", "INSTALLED", "DIGEST", "SOURCE"], &rows);
        } else {
            p.table(&["ID", "NAME", "KIND", "ACTIVATED", "COMMANDS", "INSTALLED", "SOURCE"], &rows);
        }
        for r in &report.packs {
            if let Some(e) = &r.error {
                p.message(&format!("pack {} does not load: {e}", r.id));
            }
        }
    }
    Ok(exit::OK)
}

/// The ACTIVATED cell: the store-wide choice, then the tenants that chose otherwise (`no (yes: acme)`).
fn activation_cell(r: &hcpx_runtime::report::PackRow) -> String {
    let base = if r.activated { "yes" } else { "no" };
    let other: Vec<&str> =
        r.tenants.iter().filter(|(_, on)| **on != r.activated).map(|(t, _)| t.as_str()).collect();
    if other.is_empty() {
        base.to_string()
    } else {
        format!("{base} ({}: {})", if r.activated { "no" } else { "yes" }, other.join(", "))
    }
}

/// What an operator should know about bins just allow-listed: one not on PATH (a typo, or not installed yet),
/// and an interpreter or shell, which runs whatever code a pack hands it.
fn allow_warnings(bins: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for b in bins {
        if hcpx_runtime::adapter::wrap::find_on_path(b).is_none() {
            out.push(format!("`{b}` is not on PATH: nothing runs as `{b}` until it is installed; if the name is mistyped, `hcpx disallow {b}` takes it back"));
        }
        if hcpx_author::scaffold::help::is_interpreter(b) {
            out.push(format!("`{b}` is an interpreter or shell: allow-listed, it runs any code a pack ships or an argument passes, whatever policy.json says; allow the program such a pack runs instead, or `hcpx disallow {b}`"));
        }
    }
    out
}

/// `hcpx allow-read PACK PATH…` / `hcpx disallow-read PACK [PATH…]`.
pub fn read_paths(p: &Printer, a: &super::ReadArgs, on: bool) -> anyhow::Result<u8> {
    if on && a.paths.is_empty() {
        return Ok(fail(p, "name the absolute paths to allow, e.g. hcpx allow-read PACK /sys"));
    }
    match open_store()?.edit_read(&a.pack, &a.paths, on) {
        Ok(list) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "pack_id": a.pack, "read": list }));
            } else {
                let shown: Vec<String> = list.iter().map(|x| x.display().to_string()).collect();
                p.message(&format!(
                    "{} may read, beyond the default view: {}",
                    a.pack,
                    if shown.is_empty() { "nothing".to_string() } else { shown.join(", ") }
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx allow-network PACK KIND…` / `hcpx disallow-network PACK [KIND…]`.
pub fn network(p: &Printer, a: &super::NetworkArgs, on: bool) -> anyhow::Result<u8> {
    let mut kinds = Vec::new();
    for k in &a.kinds {
        match k.parse::<hcpx_pack::pack::NetKind>() {
            Ok(n) => kinds.push(n),
            Err(_) => return Ok(fail(p, &format!("unknown network kind {k:?}; use inet (TCP and UDP) or netlink (interfaces, addresses, routes)"))),
        }
    }
    if on && kinds.is_empty() {
        return Ok(fail(p, "name the network kinds to allow: inet, netlink"));
    }
    match open_store()?.edit_network(&a.pack, &kinds, on) {
        Ok(list) => {
            let names: Vec<&str> = list.iter().map(|k| k.as_str()).collect();
            if p.json {
                p.json_doc(&json!({ "ok": true, "pack_id": a.pack, "network": names }));
            } else {
                p.message(&format!(
                    "network for {}: {}",
                    a.pack,
                    if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx allow BIN…` / `hcpx disallow BIN…`.
pub fn allow(p: &Printer, a: &BinsArgs, on: bool) -> anyhow::Result<u8> {
    match open_store()?.edit_allow(&a.bins, on) {
        Ok(list) => {
            let warnings = if on { allow_warnings(&a.bins) } else { Vec::new() };
            if p.json {
                p.json_doc(&json!({ "ok": true, "allow": list, "warnings": warnings }));
            } else {
                for w in &warnings {
                    p.message(&format!("warning: {w}"));
                }
                p.message(&format!(
                    "allow-list: {}",
                    if list.is_empty() { "(empty)".to_string() } else { list.join(", ") }
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}
