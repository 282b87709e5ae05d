//! `install`, `uninstall`, `activate`, `deactivate`, `list`, `allow`, `disallow` and the per-pack loosening
//! (`allow-read`, `allow-network`, `allow-host` and their `disallow-`): the store's write commands.

use serde::ser::SerializeMap;
use serde::Serialize;
use std::path::PathBuf;

use super::{open_store, ActivateArgs, BinsArgs, IdArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_runtime::report::ListReport;
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
        return Err(CliError::new("--locked and --allow-unsigned are for registry installs (oci://host/repo:tag); a directory install needs neither").into());
    }
    let store = super::compile::open_store_compiling(p)?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    let o = match store.install_with(dir, replace) {
        Ok(o) => o,
        Err(InstallError::Lint { dir, issues }) => {
            let msg =
                format!("pack {dir} fails lint with {} issue(s); fix them and install again", issues.len());
            let mut err = CliError::new(msg).with_field("issues", &issues);
            for i in &issues {
                err = err.with_note(format!(
                    "  [{}] {} {}: {}\n    fix: {}",
                    i.kind.as_str(),
                    i.file,
                    i.pointer,
                    i.message,
                    i.fix
                ));
            }
            return Err(err.into());
        }
        Err(InstallError::Store(e)) => return Err(CliError::new(e.to_string()).into()),
        Err(InstallError::Check { message, .. }) => return Err(super::compile::refused(message).into()),
    };
    let id = &o.id;
    let pack = super::compile::remember_installed(p, &store, std::slice::from_ref(id)).pop();
    // Which credential family the pack asks for, and who else may use it.
    let family = pack
        .as_ref()
        .filter(|pk| {
            matches!(
                pk.binding.mode,
                hcpx_pack::pack::BindingMode::Local | hcpx_pack::pack::BindingMode::User
            )
        })
        .map(|pk| {
            let packs = store.family_allowed(&pk.binding.family).unwrap_or_default();
            FamilyUse { family: pk.binding.family.clone(), allowed: packs.contains(id), packs }
        });
    // A bare bin the allow-list does not name: the pack cannot run until the operator allows it.
    let unlisted = pack.as_ref().and_then(|pk| match pk.wrap.as_ref().map(|w| &w.bin) {
        Some(hcpx_pack::pack::Bin::Name(b)) if !store.sandbox().is_ok_and(|s| s.allows_bin(b)) => {
            Some(b.clone())
        }
        _ => None,
    });
    // What the pack asks to read beyond the default view (wrap.read) and the operator has not lent.
    let asked = pack
        .as_ref()
        .and_then(|pk| pk.wrap.as_ref())
        .map(|w| {
            let lent =
                store.sandbox().ok().and_then(|s| s.for_pack(id).map(|e| e.read.clone())).unwrap_or_default();
            w.read_not_lent(&lent)
        })
        .unwrap_or_default();
    // The hosts it declares and who allowed each (none allowed yet for a new pack), or `inet`'s anywhere.
    let sandbox = store.sandbox().ok();
    let reach = pack.as_ref().zip(sandbox.as_deref()).and_then(|(pk, s)| hcpx_store::hosts::Reach::of(pk, s));
    Ok(p.report(&DirInstalled {
        ok: true,
        store: super::store_named(&store),
        pack_id: id,
        replaced: o.replaced,
        path: store.pack_dir(id),
        replaced_source: o.replaced_other.as_deref(),
        deactivated: o.deactivated,
        workspace_removed: o.workspace_removed,
        credential_family: family,
        unlisted,
        asked,
        reach,
    }))
}

/// `hcpx install DIR`: the pack installed, the credential family it asks for, and what it needs before it runs.
#[derive(Serialize)]
struct DirInstalled<'a> {
    ok: bool,
    /// The store written: the database (password masked) or `HCP_HOME PATH`.
    store: String,
    pack_id: &'a str,
    replaced: bool,
    path: PathBuf,
    replaced_source: Option<&'a str>,
    deactivated: bool,
    workspace_removed: bool,
    credential_family: Option<FamilyUse>,
    /// The bin from PATH the allow-list does not name.
    #[serde(skip)]
    unlisted: Option<String>,
    /// The paths the pack asks to read that the operator has not lent.
    #[serde(skip)]
    asked: Vec<PathBuf>,
    /// What it reaches over the network: its declared hosts and who allowed each, or `inet`'s anywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    reach: Option<hcpx_store::hosts::Reach>,
}

/// The credential family a pack asks for: whether it may use it, and which packs may.
#[derive(Serialize)]
struct FamilyUse {
    family: String,
    allowed: bool,
    packs: Vec<String>,
}

impl Report for DirInstalled<'_> {
    fn text(&self, out: &Text<'_>) {
        let id = self.pack_id;
        match &self.credential_family {
            Some(FamilyUse { family: f, allowed: true, packs }) => out.message(&format!(
                "{id} uses credential family {f} (packs that may use it: {})",
                packs.join(", ")
            )),
            Some(FamilyUse { family: f, allowed: false, packs }) => out.message(&format!(
                "{id} asks for credential family {f}, which belongs to {}; it gets none of them unless you run hcpx credential allow {f} {id}",
                packs.join(", ")
            )),
            None => {}
        }
        out.message(&format!(
            "{} {id} in {} (its files here: {})",
            if self.replaced { "reinstalled" } else { "installed" },
            self.store,
            self.path.display()
        ));
        if let Some(old) = self.replaced_source {
            out.message(&format!("replaced the pack {id} installed from {old}"));
        }
        if self.workspace_removed {
            out.message("removed its workspace; the new pack starts with an empty one");
        }
        if let Some(b) = &self.unlisted {
            out.message(&format!(
                "{id} runs `{b}` from PATH, which sandbox.json does not allow-list: its calls are refused until you run hcpx allow {b}"
            ));
        }
        if !self.asked.is_empty() {
            let shown: Vec<String> = self.asked.iter().map(|x| x.display().to_string()).collect();
            out.message(&format!(
                "{id} asks to read {} (wrap.read), outside the default view; if you trust it, lend it with hcpx allow-read {id} {}",
                shown.join(" and "),
                shown.join(" ")
            ));
        }
        for line in self.reach.iter().flat_map(|r| r.lines(id)) {
            out.message(&format!("{id} {line}"));
        }
        let allow = self.unlisted.as_ref().map(|b| format!("hcpx allow {b}, then ")).unwrap_or_default();
        if self.deactivated {
            out.message(&format!("it is not active: review it, then run {allow}hcpx activate {id}"));
        } else {
            out.message(&format!("next: {allow}hcpx activate {id}"));
        }
    }
}

/// `hcpx uninstall ID`.
pub fn uninstall(p: &Printer, a: &IdArgs) -> anyhow::Result<u8> {
    open_store()?.uninstall(&a.id).or_fail()?;
    Ok(p.report(&Uninstalled { ok: true, pack_id: &a.id }))
}

/// `hcpx uninstall`: the pack removed.
#[derive(Serialize)]
struct Uninstalled<'a> {
    ok: bool,
    pack_id: &'a str,
}

impl Report for Uninstalled<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("uninstalled {} (its workspace, if any, is kept)", self.pack_id));
    }
}

/// `hcpx activate ID… [--tenant T]` / `hcpx deactivate ID… [--tenant T]`.
pub fn set_activated(p: &Printer, a: &ActivateArgs, on: bool) -> anyhow::Result<u8> {
    let store = open_store()?;
    if on {
        // Compiled before it is activated: its first call does not compile, and one that cannot compile is not
        // activated.
        super::compile::compile_installed(p, &store, &a.ids)?;
    }
    store.set_activated(&a.ids, on, a.tenant.as_deref()).or_fail()?;
    // A store-wide change leaves the tenants that chose otherwise as they are: say which.
    let mut kept = Vec::new();
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
                    kept.push(format!("{who} for {id}; change it with `hcpx {flip} {id} --tenant TENANT`"));
                }
            }
        }
    }
    Ok(p.report(&Activated {
        on,
        ids: &a.ids,
        tenant: a.tenant.as_deref(),
        kept,
        store: super::store_named(&store),
    }))
}

/// `hcpx activate|deactivate`: `{ok, activated|deactivated: ids, tenant}`, and the tenants that keep their own
/// choice.
struct Activated<'a> {
    on: bool,
    ids: &'a [String],
    tenant: Option<&'a str>,
    kept: Vec<String>,
    /// The store written: the database (password masked) or `HCP_HOME PATH`.
    store: String,
}

impl Activated<'_> {
    fn key(&self) -> &'static str {
        if self.on {
            "activated"
        } else {
            "deactivated"
        }
    }
}

impl Serialize for Activated<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("ok", &true)?;
        map.serialize_entry(self.key(), self.ids)?;
        map.serialize_entry("tenant", &self.tenant)?;
        map.serialize_entry("store", &self.store)?;
        map.end()
    }
}

impl Report for Activated<'_> {
    fn text(&self, out: &Text<'_>) {
        let key = self.key();
        match self.tenant {
            Some(t) => {
                out.message(&format!("{key} {} for tenant {t} in {}", self.ids.join(", "), self.store))
            }
            None => out.message(&format!("{key} {} in {}", self.ids.join(", "), self.store)),
        }
        for line in &self.kept {
            out.message(line);
        }
    }
}

/// `hcpx list`: renders the runtime's list report (the same one `hcp.list` returns).
pub fn list(p: &Printer) -> anyhow::Result<u8> {
    let report = Runtime::new(open_store()?).list(None).map_err(|d| CliError::new(d.message))?;
    Ok(p.report(&report))
}

impl Report for ListReport {
    fn text(&self, out: &Text<'_>) {
        if self.packs.is_empty() {
            out.message("no packs installed; install one with `hcpx install DIR`");
            return;
        }
        // The columns of docs/cli.md; the source last, as the one of unbounded width.
        let rows: Vec<Vec<String>> = self
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
        if self.packs.iter().any(|r| r.digest.is_some()) {
            let rows: Vec<Vec<String>> = rows
                .into_iter()
                .zip(&self.packs)
                .map(|(mut row, r)| {
                    let short = r.digest.as_deref().map_or("-".to_string(), |d| d.chars().take(19).collect());
                    row.insert(6, short);
                    row
                })
                .collect();
            out.table(
                &["ID", "NAME", "KIND", "ACTIVATED", "COMMANDS", "INSTALLED", "DIGEST", "SOURCE"],
                &rows,
            );
        } else {
            out.table(&["ID", "NAME", "KIND", "ACTIVATED", "COMMANDS", "INSTALLED", "SOURCE"], &rows);
        }
        for r in &self.packs {
            if let Some(e) = &r.error {
                out.message(&format!("pack {} does not load: {e}", r.id));
            }
        }
    }
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
        return Err(CliError::new("name the absolute paths to allow, e.g. hcpx allow-read PACK /sys").into());
    }
    let read = open_store()?.edit_read(&a.pack, &a.paths, on).or_fail()?;
    Ok(p.report(&Reads { ok: true, pack_id: &a.pack, read }))
}

/// `hcpx allow-read|disallow-read`: what the pack may now read beyond the default view.
#[derive(Serialize)]
struct Reads<'a> {
    ok: bool,
    pack_id: &'a str,
    read: Vec<PathBuf>,
}

impl Report for Reads<'_> {
    fn text(&self, out: &Text<'_>) {
        let shown: Vec<String> = self.read.iter().map(|x| x.display().to_string()).collect();
        out.message(&format!(
            "{} may read, beyond the default view: {}",
            self.pack_id,
            if shown.is_empty() { "nothing".to_string() } else { shown.join(", ") }
        ));
    }
}

/// `hcpx allow-network PACK KIND…` / `hcpx disallow-network PACK [KIND…]`.
pub fn network(p: &Printer, a: &super::NetworkArgs, on: bool) -> anyhow::Result<u8> {
    let mut kinds = Vec::new();
    for k in &a.kinds {
        match k.parse::<hcpx_pack::pack::NetKind>() {
            Ok(n) => kinds.push(n),
            Err(_) => return Err(CliError::new(format!("unknown network kind {k:?}; use inet (TCP and UDP) or netlink (interfaces, addresses, routes)")).into()),
        }
    }
    if on && kinds.is_empty() {
        return Err(CliError::new("name the network kinds to allow: inet, netlink").into());
    }
    let list = open_store()?.edit_network(&a.pack, &kinds, on).or_fail()?;
    let network = list.iter().map(|k| k.as_str()).collect();
    Ok(p.report(&Network { ok: true, pack_id: &a.pack, network }))
}

/// `hcpx allow-network|disallow-network`: the network kinds the pack now has.
#[derive(Serialize)]
struct Network<'a> {
    ok: bool,
    pack_id: &'a str,
    network: Vec<&'static str>,
}

impl Report for Network<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "network for {}: {}",
            self.pack_id,
            if self.network.is_empty() { "(none)".to_string() } else { self.network.join(", ") }
        ));
    }
}

/// `hcpx allow-host PACK HOST… [--tenant T]` / `hcpx disallow-host PACK [HOST…] [--tenant T]`.
pub fn hosts(p: &Printer, a: &super::HostArgs, on: bool) -> anyhow::Result<u8> {
    if on && a.hosts.is_empty() {
        return Err(CliError::new(format!(
            "name the hosts to allow as pack {0} declares them, e.g. hcpx allow-host {0} api.example.com",
            a.pack
        ))
        .into());
    }
    let mut rules = Vec::new();
    for h in &a.hosts {
        rules.push(h.parse::<hcpx_pack::pack::HostRule>().map_err(|e| CliError::new(e.to_string()))?);
    }
    let allowed = open_store()?.edit_hosts(&a.pack, &rules, on, a.tenant.as_deref()).or_fail()?;
    Ok(p.report(&Hosts { ok: true, pack_id: &a.pack, allowed }))
}

/// `hcpx allow-host|disallow-host`: the hosts the pack is allowed now, in the scope edited, and those it declares.
#[derive(Serialize)]
struct Hosts<'a> {
    ok: bool,
    pack_id: &'a str,
    #[serde(flatten)]
    allowed: hcpx_store::hosts::AllowedHosts,
}

impl Report for Hosts<'_> {
    fn text(&self, out: &Text<'_>) {
        let scope = match &self.allowed.tenant {
            Some(t) => format!("tenant {t}"),
            None => "every tenant".to_string(),
        };
        out.message(&format!(
            "hosts allowed to {} for {scope}: {}",
            self.pack_id,
            hcpx_pack::pack::hosts::shown(&self.allowed.hosts)
        ));
        out.message("a command reaches the allowed hosts it declares (https and http only): a wrap's through its call's egress proxy, a composite's through wasi:http, sent by hcpx");
    }
}

/// `hcpx allow BIN…` / `hcpx disallow BIN…`.
pub fn allow(p: &Printer, a: &BinsArgs, on: bool) -> anyhow::Result<u8> {
    let allow = open_store()?.edit_allow(&a.bins, on).or_fail()?;
    let warnings = if on { allow_warnings(&a.bins) } else { Vec::new() };
    Ok(p.report(&AllowList { ok: true, allow, warnings }))
}

/// `hcpx allow|disallow`: the allow-list now, and what the operator should know about the bins just allowed.
#[derive(Serialize)]
struct AllowList {
    ok: bool,
    allow: Vec<String>,
    warnings: Vec<String>,
}

impl Report for AllowList {
    fn text(&self, out: &Text<'_>) {
        for w in &self.warnings {
            out.message(&format!("warning: {w}"));
        }
        out.message(&format!(
            "allow-list: {}",
            if self.allow.is_empty() { "(empty)".to_string() } else { self.allow.join(", ") }
        ));
    }
}
