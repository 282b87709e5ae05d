//! The reports every face renders the same way: `doctor`, `list` and `skill`. The CLI prints them as text or
//! `--json`; the bootstrap pack `hcp-cli` returns them as its result. One typed value, one source.

use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;

use super::Runtime;
use crate::adapter::wrap::shell_quote;
use crate::model::wire::wire_enum;
use crate::model::{Code, Denial, LayerStatus, Principal};
use crate::pack::{AdapterKind, Operation};
use crate::sandbox::{KernelProbe, Layer};

wire_enum! {
    /// How one doctor check came out; the report's status is the worst of them.
    #[derive(PartialOrd, Ord)]
    pub enum Health ("health") {
        Ok = "ok",
        Warning = "warning",
        Error = "error",
    }
}

/// One line of `doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorCheck {
    pub check: String,
    pub status: Health,
    pub detail: String,
}

/// `hcpx doctor` / `hcp.doctor`: the store, its files, every confinement layer and every installed pack.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// False only when some check is an error.
    pub ok: bool,
    pub status: Health,
    pub home: PathBuf,
    /// Where the store is and how it fares (the operator's view only: `report_store`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::report_store::StoreFacts>,
    pub checks: Vec<DoctorCheck>,
    pub sandbox_layers: Vec<Layer>,
}

/// One installed pack in `list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackRow {
    pub id: String,
    pub name: Option<String>,
    pub kind: Option<AdapterKind>,
    pub activated: bool,
    /// The tenants that chose otherwise than the store (`hcpx activate ID --tenant T`); in the operator's view
    /// only.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tenants: std::collections::BTreeMap<String, bool>,
    pub commands: usize,
    pub source: String,
    /// The manifest digest of a pack installed from an OCI registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The trusted key (name and fingerprint) that signed a registry pack.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    pub installed_at: String,
    /// Why the pack does not load, when it does not.
    pub error: Option<String>,
}

/// `hcpx list` / `hcp.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListReport {
    pub ok: bool,
    pub packs: Vec<PackRow>,
}

/// One command in `commands`: what a host needs to offer it as a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRow {
    pub verb_key: String,
    pub description: Option<String>,
    pub operation: Operation,
    pub confirm: bool,
    /// The argument schema as declared.
    pub args: serde_json::Value,
    /// Each argument's name, type, whether it is required, description, allowed values and first example.
    pub arguments: Vec<ArgumentRow>,
    /// A ready-to-run `hcpx exec` line from each argument's first example.
    pub exec: String,
}

/// One argument of a command, as `hcpx commands` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArgumentRow {
    pub name: String,
    /// The JSON Schema type(s), `|`-joined (`any` when none is declared).
    #[serde(rename = "type")]
    pub ty: String,
    pub required: bool,
    pub description: Option<String>,
    /// The `enum` values, when the schema closes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<serde_json::Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example: Option<serde_json::Value>,
}

/// `hcpx commands ID`: every named command of an installed pack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandsReport {
    pub ok: bool,
    pub pack_id: String,
    pub commands: Vec<CommandRow>,
}

/// `hcpx skill` / `hcp.skill`: the Skill's lead, or its whole text with `full`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillReport {
    pub ok: bool,
    pub pack_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl SkillReport {
    /// The text shown: the lead or the whole Skill.
    pub fn body(&self) -> &str {
        self.text.as_deref().or(self.lead.as_deref()).unwrap_or("")
    }
}

impl Runtime {
    /// The health of this runtime and its store, with availability of every pack for `principal`; where the
    /// store is and how it fares only for the operator's own CLI (the local tenant, invoked from a terminal):
    /// never over MCP or HTTP, where a served Principal may be in the local tenant too.
    pub fn doctor(&self, principal: &Principal) -> DoctorReport {
        let cli = matches!(principal.invoker, crate::model::Invoker::Cli | crate::model::Invoker::Json);
        self.doctor_as(principal, cli && principal.tenant == crate::store::principals::LOCAL_TENANT)
    }

    /// [`Runtime::doctor`] for an operator (`GET /v1/doctor`): always with where the store is and how it fares.
    pub fn operator_doctor(&self, principal: &Principal) -> DoctorReport {
        self.doctor_as(principal, true)
    }

    fn doctor_as(&self, principal: &Principal, operator: bool) -> DoctorReport {
        let store = self.store();
        let mut checks = Vec::new();
        let mut add = |check: &str, status: Health, detail: String| {
            checks.push(DoctorCheck { check: check.to_string(), status, detail })
        };
        let facts = if operator {
            Some(crate::report_store::store_facts(store, &mut add))
        } else {
            add("store", Health::Ok, format!("HCP_HOME is {}", store.home().display()));
            None
        };
        match store.write_atomic("tmp/doctor-probe", b"ok") {
            Ok(()) => add("writable", Health::Ok, "the store accepts atomic writes".into()),
            Err(e) => add("writable", Health::Error, e.to_string()),
        }
        let _ = std::fs::remove_file(store.path("tmp/doctor-probe"));
        // Compiled components are native code: a cache directory others could write is never used (cache.rs).
        let cache = store.layout().cache;
        if crate::adapter::composite::cache::trusted(&cache) {
            add("compile cache", Health::Ok, format!("compiled components are kept in {}", cache.display()));
        } else {
            add("compile cache", Health::Warning, format!("{} is not a directory of this user's that group and others cannot write, so no compiled component is kept or read there and every process compiles its components again; run chmod go-w on it, or set HCP_CACHE_DIR to a directory of your own", cache.display()));
        }
        let state = store.state();
        match &state {
            Ok(s) => add("state", Health::Ok, format!("{} pack(s) installed", s.packs.len())),
            Err(e) => add("state", Health::Error, e.to_string()),
        }
        let sandbox = store.sandbox();
        match &sandbox {
            Ok(s) => {
                let l = s.limits();
                add("sandbox", Health::Ok, format!("{} bin(s) allow-listed; per call: timeout {} ms, output {} bytes per stream, composite memory {} MiB", s.allow.len(), l.timeout_ms, l.max_output_bytes, l.memory_mb))
            }
            Err(e) => add("sandbox", Health::Error, e.to_string()),
        }
        match store.local_grants() {
            Ok(None) => {
                add("grants", Health::Ok, "no grants.json: the local Principal holds every grant".into())
            }
            Ok(Some(g)) => add("grants", Health::Ok, format!("{} grant(s) in grants.json", g.len())),
            Err(e) => add("grants", Health::Error, e.to_string()),
        }
        // The audit log's hash chain (docs/security.md, The audit chain): a break is an error to look into. The
        // operator's view has walked each chain already.
        if !operator {
            match store.verify_audit(None) {
                Ok(v) => match &v.broken {
                    None => add(
                        "audit",
                        Health::Ok,
                        format!("hash chain intact: {} line(s) in {} file(s)", v.lines, v.files.len()),
                    ),
                    Some(b) => add(
                        "audit",
                        Health::Error,
                        format!(
                            "hash chain broken ({}): {}; see hcpx audit verify",
                            b.kind.as_str(),
                            b.message
                        ),
                    ),
                },
                Err(e) => add("audit", Health::Error, e.to_string()),
            }
        }
        // Each confinement layer a wrap call gets on this kernel under this sandbox.json.
        let cfg = sandbox.as_ref().map(|s| (**s).clone()).unwrap_or_default();
        crate::sandbox::confirm_user_namespaces();
        let layers = KernelProbe::get().doctor_layers(&cfg);
        for l in &layers {
            let status = match l.status {
                LayerStatus::Enforced => Health::Ok,
                _ if cfg.requires_full() => Health::Error,
                _ => Health::Warning,
            };
            add(&format!("sandbox {}", l.name), status, format!("{}: {}", l.status, l.detail));
        }
        if let (Ok(state), Ok(_)) = (&state, &sandbox) {
            // The same four flags every face reports.
            for id in state.packs.keys() {
                let av = self.availability(principal, id);
                let name = format!("pack {id}");
                let why =
                    |note: &Option<String>, default: &str| note.as_deref().unwrap_or(default).to_string();
                if !av.installed {
                    add(&name, Health::Error, why(&av.notes.installed, "it does not load"));
                } else if !av.runnable {
                    add(&name, Health::Warning, why(&av.notes.runnable, "it cannot run"));
                } else {
                    add(&name, Health::Ok, "loads and can run".into());
                }
                // What it reaches over the network: its hosts and who allowed them, or anywhere (inet).
                let reach = sandbox.as_ref().ok().and_then(|cfg| {
                    let pack = self.installed_pack(id).ok()?;
                    crate::store::hosts::Reach::of(&pack, cfg)
                });
                for line in reach.map(|r| r.lines(id)).unwrap_or_default() {
                    add(&format!("{name} network"), Health::Ok, line);
                }
            }
        }
        let status = checks.iter().map(|c| c.status).max().unwrap_or(Health::Ok);
        DoctorReport {
            ok: status != Health::Error,
            status,
            home: store.home().to_path_buf(),
            store: facts,
            checks,
            sandbox_layers: layers,
        }
    }

    /// Every installed pack, loaded (through the runtime's per-install cache, as a call loads it) to report its
    /// name, kind and commands, or why it does not load. With a tenant, `activated` is that tenant's; without
    /// one (the operator's view) it is the store's, and each tenant's own choices are listed.
    pub fn list(&self, tenant: Option<&str>) -> Result<ListReport, Denial> {
        let state = self.store().state().map_err(|e| Denial::new(Code::AdapterFailed, e.to_string()))?;
        let packs = state
            .packs
            .iter()
            .map(|(id, st)| {
                let (name, kind, commands, error) = match self.pack(id, st) {
                    Ok(Some(pack)) => (pack.name.clone(), Some(pack.kind), pack.commands.len(), None),
                    Ok(None) => (None, None, 0, Some("missing from the store".to_string())),
                    Err(e) => (None, None, 0, Some(e.to_string())),
                };
                PackRow {
                    id: id.clone(),
                    name,
                    kind,
                    activated: tenant.map_or(st.activated, |t| st.activated_for(t)),
                    tenants: if tenant.is_none() { st.tenants.clone() } else { Default::default() },
                    commands,
                    source: st.source.clone(),
                    digest: st.digest.clone(),
                    signer: st.signer.clone(),
                    installed_at: st.installed_at.clone(),
                    error,
                }
            })
            .collect();
        Ok(ListReport { ok: true, packs })
    }

    /// Every pack activated for `tenant` (`None`: for any tenant) that loads, through the per-install cache:
    /// what the MCP tools and the OpenAPI document list.
    pub fn activated_packs(&self, tenant: Option<&str>) -> Vec<Arc<crate::pack::Pack>> {
        let Ok(state) = self.store().state() else { return Vec::new() };
        state
            .packs
            .iter()
            .filter(|(_, st)| match tenant {
                Some(t) => st.activated_for(t),
                None => st.activated_for_any(),
            })
            .filter_map(|(id, st)| self.pack(id, st).ok().flatten())
            .collect()
    }

    /// The named commands of pack `id` (installed or built in), with their argument schemas.
    pub fn commands(&self, id: &str) -> Result<CommandsReport, Denial> {
        self.commands_of(id, None)
    }

    /// The named commands of pack `id`, or only `verb` (`no_policy`, naming the closest, when it has none).
    pub fn commands_of(&self, id: &str, verb: Option<&str>) -> Result<CommandsReport, Denial> {
        let pack = self.installed_pack(id)?;
        if let Some(v) = verb.filter(|v| pack.command(v).is_none()) {
            return Err(super::fix::no_command(&pack.id, v, pack.commands.keys().map(String::as_str)));
        }
        let commands = pack
            .commands
            .values()
            .filter(|c| verb.is_none_or(|v| v == c.key))
            .map(|c| CommandRow {
                verb_key: c.key.clone(),
                description: c.description.clone(),
                operation: c.policy.operation,
                confirm: c.policy.confirm,
                args: c.args.schema().clone(),
                arguments: argument_rows(&c.args),
                exec: exec_line(&pack, &c.key),
            })
            .collect();
        Ok(CommandsReport { ok: true, pack_id: pack.id.clone(), commands })
    }

    /// The Skill of installed pack `id`: its lead, or the whole text when `full`.
    pub fn skill(&self, id: &str, full: bool) -> Result<SkillReport, Denial> {
        let pack = self.installed_pack(id)?;
        let (lead, text) =
            if full { (None, Some(pack.skill.text.clone())) } else { (Some(pack.skill.lead.clone()), None) };
        Ok(SkillReport { ok: true, pack_id: id.to_string(), lead, text })
    }
}

/// Each argument of `spec`, in declaration order.
pub fn argument_rows(spec: &crate::args::ArgSpec) -> Vec<ArgumentRow> {
    let schema = spec.schema();
    spec.props()
        .iter()
        .map(|(name, prop)| ArgumentRow {
            name: name.clone(),
            ty: if prop.types.is_empty() { "any".to_string() } else { prop.types.join("|") },
            required: spec.required().contains(name),
            description: prop.description.clone(),
            values: schema["properties"][name]["enum"].as_array().cloned(),
            example: prop.example.clone(),
        })
        .collect()
}

/// The ready-to-run `hcpx exec` line of a command, from each argument's first example.
pub fn exec_line(pack: &crate::pack::Pack, verb: &str) -> String {
    match pack.command(verb) {
        Some(cmd) => exec_line_for(&pack.id, verb, &cmd.args, cmd.policy.confirm),
        None => format!("hcpx exec {} {verb}", pack.id),
    }
}

/// The `hcpx exec` line of `pack_id`'s `verb` taking `spec`, from each argument's first example (a required
/// one without an example as `<name>`), with `confirm=true` when the command is gated.
pub fn exec_line_for(pack_id: &str, verb: &str, spec: &crate::args::ArgSpec, confirm: bool) -> String {
    use serde_json::Value;
    let mut line = format!("hcpx exec {pack_id} {verb}");
    let mut words = Vec::new();
    for (name, prop) in spec.props() {
        let required = spec.required().contains(name);
        // The name is a plain word (naming rules); only the value may need quoting.
        let word = match &prop.example {
            Some(Value::String(s)) => format!("{name}={}", shell_quote(s)),
            Some(v) => format!("{name}:={}", shell_quote(&v.to_string())),
            None if required => format!("{name}={}", shell_quote(&format!("<{name}>"))),
            None => continue,
        };
        words.push(word);
    }
    if confirm {
        words.push("confirm=true".into());
    }
    if !words.is_empty() {
        line.push_str(" -- ");
        line.push_str(&words.join(" "));
    }
    line
}
