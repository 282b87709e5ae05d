//! The packs built into the runtime, which the store returns beside the installed ones: today the bootstrap pack
//! `hcp-cli` (docs/spec.md §17). Nothing is installed for it and every tenant has it activated; the runtime
//! answers its commands itself (its reads from the store, its writes deferred to the `hcpx` line each names).
//! One table gives each command's operation, description, arguments and `hcpx` line, so `exec` accepts exactly
//! what `commands`, `skill` and `availability` say.

use indexmap::IndexMap;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::pack::{
    AdapterKind, Binding, BindingMode, Command, Land, Operation, Pack, Plane, PolicyRow, RawMeta, Skill,
    Transport, WorkspaceMode,
};
use hcpx_pack::args::ArgSpec;
use hcpx_pack::template::Template;
use hcpx_pack::title::TitleSpec;

/// The bootstrap pack's id.
pub const HCP_CLI: &str = "hcp-cli";

/// The ids of the built-in packs: no installed pack may take one.
pub const IDS: &[&str] = &[HCP_CLI];

/// One command of `hcp-cli`: name, operation, description, the `hcpx` words a write stands for (`{{arg}}`
/// filled from the call), and its arguments (name, JSON type, required, description, example).
struct Row {
    name: &'static str,
    operation: Operation,
    description: &'static str,
    cli: &'static [&'static str],
    args: &'static [Arg],
}

type Arg = (&'static str, &'static str, bool, &'static str, &'static str);

const PACK_ID: Arg = ("pack_id", "string", true, "An installed pack id.", "ledger");

const fn read(name: &'static str, description: &'static str, args: &'static [Arg]) -> Row {
    Row { name, operation: Operation::Read, description, cli: &[], args }
}

const fn write(
    name: &'static str,
    description: &'static str,
    cli: &'static [&'static str],
    args: &'static [Arg],
) -> Row {
    Row { name, operation: Operation::Write, description, cli, args }
}

const ROWS: &[Row] = &[
    read("hcp.doctor", "Health of the runtime and its store.", &[]),
    read("hcp.list", "Installed packs and their state.", &[]),
    read("hcp.availability", "The four flags of a pack: installed, activated, bound, runnable.", &[PACK_ID]),
    read(
        "hcp.skill",
        "A pack's Skill: its lead, or the whole text with full.",
        &[PACK_ID, ("full", "boolean", false, "The whole Skill, not only its lead.", "")],
    ),
    read(
        "hcp.commands",
        "A pack's commands with their arguments and a ready-to-run exec line.",
        &[PACK_ID, ("verb_key", "string", false, "Only this command.", "")],
    ),
    write(
        "hcp.install",
        "Install a pack from a directory (deferred: the CLI owns the store).",
        &["install", "{{dir}}"],
        &[("dir", "string", true, "The pack directory.", "./mypack")],
    ),
    write("hcp.uninstall", "Remove an installed pack (deferred).", &["uninstall", "{{pack_id}}"], &[PACK_ID]),
    write("hcp.activate", "Activate an installed pack (deferred).", &["activate", "{{pack_id}}"], &[PACK_ID]),
    write("hcp.deactivate", "Deactivate a pack (deferred).", &["deactivate", "{{pack_id}}"], &[PACK_ID]),
    write(
        "hcp.allow",
        "Allow a bare bin on PATH to run (deferred).",
        &["allow", "{{bin}}"],
        &[("bin", "string", true, "A bare bin name, as a pack's wrap.bin gives it.", "sqlite3")],
    ),
    write(
        "hcp.disallow",
        "Remove a bin from the allow-list (deferred).",
        &["disallow", "{{bin}}"],
        &[("bin", "string", true, "A bare bin name.", "sqlite3")],
    ),
];

/// The Skill of `hcp-cli`.
const SKILL: &str = "# hcp-cli\n\nThe runtime's own pack, built in (nothing to install or activate): see which packs are installed, whether one can run, its Skill and its commands. Commands that would change the store answer `deferred_to_cli: true` with a `hint` naming the `hcpx` line a person runs in a terminal.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `hcp.list` | which packs are installed and active |\n| `hcp.availability` | why a pack cannot run (`pack_id`) |\n| `hcp.commands` | a pack's commands and arguments (`pack_id`, `verb_key`) |\n| `hcp.skill` | how to use a pack (`pack_id`, `full`) |\n| `hcp.doctor` | the runtime's health |\n\n## Store changes\n\n`hcp.install` (`dir`), `hcp.uninstall`, `hcp.activate`, `hcp.deactivate` (`pack_id`), `hcp.allow` and `hcp.disallow` (`bin`) change nothing: they are audited and answer the `hcpx` line to run.\n";

/// The built-in pack `id`, when there is one (made once per process).
pub fn pack(id: &str) -> Option<Arc<Pack>> {
    static HCP_CLI_PACK: OnceLock<Arc<Pack>> = OnceLock::new();
    (id == HCP_CLI).then(|| HCP_CLI_PACK.get_or_init(|| Arc::new(hcp_cli())).clone())
}

/// Whether `id` names a built-in pack.
pub fn is_built_in(id: &str) -> bool {
    IDS.contains(&id)
}

impl Row {
    /// Its argument schema, as a pack would declare it.
    fn schema(&self) -> Value {
        let mut props = Map::new();
        for (name, ty, _, description, example) in self.args {
            let mut p = json!({ "type": ty, "description": description });
            if !example.is_empty() {
                p["examples"] = json!([example]);
            }
            props.insert(name.to_string(), p);
        }
        let required: Vec<&str> = self.args.iter().filter(|a| a.2).map(|a| a.0).collect();
        json!({ "type": "object", "properties": props, "required": required })
    }

    fn command(&self) -> Command {
        let cli: Option<Vec<Template>> =
            (!self.cli.is_empty()).then(|| self.cli.iter().filter_map(|w| Template::parse(w).ok()).collect());
        Command {
            key: self.name.to_string(),
            description: Some(self.description.to_string()),
            cli_bin: cli.as_ref().map(|_| "hcpx".to_string()),
            cli,
            // The table is the runtime's own: a test compiles every schema (`every_row_compiles`).
            args: ArgSpec::compile(Some(&self.schema())).unwrap_or_else(|_| ArgSpec::none()),
            json_flag: None,
            cli_selects_json: false,
            title: TitleSpec::default(),
            preview: None,
            policy_hint: None,
            policy: PolicyRow { operation: self.operation, confirm: false, land: Land::default() },
            hosts: None,
            long: false,
        }
    }
}

fn hcp_cli() -> Pack {
    let commands: IndexMap<String, Command> =
        ROWS.iter().map(|r| (r.name.to_string(), r.command())).collect();
    Pack {
        dir: PathBuf::new(),
        id: HCP_CLI.to_string(),
        name: Some(HCP_CLI.to_string()),
        kind: AdapterKind::Composite,
        plane: Plane::Runtime,
        transports: vec![Transport::Cli, Transport::JsonExec],
        cli_bin: None,
        binding: Binding {
            mode: BindingMode::Public,
            hub: None,
            family: HCP_CLI.to_string(),
            connect_provider_id: None,
            inject: Vec::new(),
        },
        wrap: None,
        pass_through: None,
        component: None,
        workspace: WorkspaceMode::None,
        // It reaches no network: its answers come from the store.
        hosts: Vec::new(),
        commands,
        triggers: Vec::new(),
        skill: Skill::parse(SKILL),
        meta: RawMeta {
            hcp: 1,
            pack_id: HCP_CLI.to_string(),
            adapter_kind: Some(AdapterKind::Composite),
            binding: None,
            wrap: None,
            component: None,
            plane: None,
            transports: None,
        },
        evals: None,
        built_in: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_compiles() {
        for row in ROWS {
            assert!(ArgSpec::compile(Some(&row.schema())).is_ok(), "{}", row.name);
            let cmd = row.command();
            assert_eq!(cmd.cli.as_ref().map_or(0, Vec::len), row.cli.len(), "{}", row.name);
            assert_eq!(row.cli.is_empty(), row.operation == Operation::Read, "{}", row.name);
        }
        let hcp_cli = pack(HCP_CLI).unwrap();
        assert!(hcp_cli.built_in && hcp_cli.skill.lead_has_text() && hcp_cli.commands.len() == ROWS.len());
        assert!(pack("ledger").is_none());
    }
}
