//! The pack files exactly as written: serde types that refuse unknown fields, before any cross-file check.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::unique::unique_map;
use crate::model::wire::wire_enum;
use crate::model::{BindingMode, PreviewKind};

wire_enum! {
    /// `kind` (alias `adapter_kind`): how commands run.
    pub enum AdapterKind ("adapter kind") {
        Wrap = "wrap",
        Composite = "composite",
        Openapi = "openapi",
        SenseOnly = "sense_only",
    }
}

wire_enum! {
    /// `plane`.
    pub enum Plane ("plane") {
        Runtime = "runtime",
        Control = "control",
    }
}

wire_enum! {
    /// One entry of `transports`.
    pub enum Transport ("transport") {
        Cli = "cli",
        JsonExec = "json_exec",
        Mcp = "mcp",
    }
}

wire_enum! {
    /// `binding.hub`.
    pub enum Hub ("hub") {
        Keyring = "keyring",
        LocalCredential = "local-credential",
        Public = "public",
        None = "none",
    }
}

wire_enum! {
    /// `wrap.workspace.mode`.
    #[derive(Default)]
    pub enum WorkspaceMode ("workspace mode") {
        #[default]
        None = "none",
        Project = "project",
        Workspace = "workspace",
        Ephemeral = "ephemeral",
    }
}

wire_enum! {
    /// A Policy row's `operation`, also the manifest's legacy `policy` hint.
    pub enum Operation ("operation") {
        Read = "read",
        Write = "write",
    }
}

wire_enum! {
    /// `privacy.land`.
    #[derive(Default)]
    pub enum Land ("land") {
        #[default]
        Local = "local",
        Brain = "brain",
        Public = "public",
    }
}

/// `surface.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawManifest {
    pub id: String,
    pub name: Option<String>,
    #[serde(alias = "adapter_kind")]
    pub kind: Option<AdapterKind>,
    #[serde(rename = "cliBin")]
    pub cli_bin: Option<String>,
    pub plane: Option<Plane>,
    pub transports: Option<Vec<Transport>>,
    pub skill_url: Option<String>,
    pub binding: Option<RawBinding>,
    pub wrap: Option<RawWrap>,
    pub openapi: Option<RawOpenapi>,
    pub pass_through: Option<RawPassThrough>,
    pub component: Option<RawComponent>,
    #[serde(default, deserialize_with = "unique_map")]
    pub verbs: IndexMap<String, RawCommand>,
    #[serde(rename = "stimulusTriggers", default)]
    pub stimulus_triggers: Vec<RawTrigger>,
    pub hcp: Option<RawMeta>,
}

/// `binding`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawBinding {
    pub mode: BindingMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<Hub>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_provider_id: Option<String>,
}

/// `wrap`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWrap {
    pub bin: Option<String>,
    pub json_flag: Option<Vec<String>>,
    pub argv_template: Option<Vec<String>>,
    #[serde(default, deserialize_with = "unique_map")]
    pub agent_env: IndexMap<String, String>,
    pub workspace: Option<RawWorkspace>,
    /// The network kinds the CLI needs; granted only where `sandbox.json` allows the pack.
    #[serde(default)]
    pub network: Vec<NetKind>,
}

wire_enum! {
    /// A kind of network access a wrap may ask for (`wrap.network`).
    #[derive(PartialOrd, Ord)]
    pub enum NetKind ("net kind") {
        /// TCP and UDP over IPv4 and IPv6: connect, bind and listen.
        Inet = "inet",
        /// Kernel netlink sockets (reading interfaces, addresses and routes, as `ip` does).
        Netlink = "netlink",
    }
}

/// `wrap.workspace`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkspace {
    #[serde(default)]
    pub mode: WorkspaceMode,
}

/// `openapi`: one of `url` or `path`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOpenapi {
    pub url: Option<String>,
    pub path: Option<String>,
}

/// `pass_through`: the HCP/1.1 bootstrap.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPassThrough {
    #[serde(rename = "allowedSubcommands")]
    pub allowed_subcommands: Vec<String>,
    #[serde(rename = "maxArgv")]
    pub max_argv: u32,
    /// The option words a caller may pass (`--oneline`; `--format=` allows every `--format=…`); any other
    /// word starting with `-` is refused.
    #[serde(rename = "allowedOptions", default)]
    pub allowed_options: Vec<String>,
}

/// `component`: the WASI component of a composite pack.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawComponent {
    pub path: String,
}

/// One `verbs` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    pub description: Option<String>,
    pub cli: Option<Vec<String>>,
    pub args: Option<Value>,
    pub json_flag: Option<Vec<String>>,
    pub title: Option<RawTitle>,
    pub policy: Option<Operation>,
    pub preview: Option<RawPreview>,
}

/// A title form: one template or a list tried in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    /// The templates in order.
    pub fn as_slice(&self) -> &[String] {
        match self {
            OneOrMany::One(s) => std::slice::from_ref(s),
            OneOrMany::Many(v) => v,
        }
    }
}

/// `title`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTitle {
    pub live: Option<OneOrMany>,
    pub done: Option<OneOrMany>,
}

/// `preview`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPreview {
    pub kind: PreviewKind,
    pub title: Option<String>,
    #[serde(default, deserialize_with = "unique_map")]
    pub fields: IndexMap<String, String>,
}

/// One `stimulusTriggers` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTrigger {
    #[serde(rename = "ref")]
    pub reference: String,
}

/// The `hcp` protocol metadata object, strictly validated.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeta {
    pub hcp: u64,
    pub pack_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter_kind: Option<AdapterKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding: Option<RawBinding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrap: Option<RawMetaWrap>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<RawComponent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plane: Option<Plane>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transports: Option<Vec<Transport>>,
}

/// `hcp.wrap`: the bin only.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetaWrap {
    pub bin: String,
}

/// `policy.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub surface_id: String,
    #[serde(default, deserialize_with = "unique_map")]
    pub verbs: IndexMap<String, RawPolicyRow>,
    #[serde(default, deserialize_with = "unique_map")]
    pub stimuli: IndexMap<String, RawStimulus>,
}

/// One Policy row.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicyRow {
    pub operation: Operation,
    #[serde(default)]
    pub confirm: bool,
    pub privacy: Option<RawPrivacy>,
}

/// `privacy`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPrivacy {
    #[serde(default)]
    pub land: Land,
}

wire_enum! {
    /// `stimuli` delivery.
    pub enum Delivery ("delivery") {
        Announce = "announce",
    }
}

/// One `stimuli` row.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStimulus {
    pub delivery: Delivery,
}

/// `hcp.eval.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvalFile {
    /// A directory of the pack copied into a fresh project for each `hcpx eval` / `hcpx check` run, or an
    /// executable setup script of the pack run (confined) with that fresh directory as its argument.
    #[serde(default)]
    pub fixture: Option<String>,
    pub cases: Vec<RawEvalCase>,
}

/// One eval case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvalCase {
    pub name: String,
    pub verb: String,
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
    pub expect: RawExpect,
}

/// What an eval case expects.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    pub ok: Option<bool>,
    pub json: Option<bool>,
    pub contains: Option<Vec<String>>,
    pub error: Option<String>,
    pub max_ms: Option<u64>,
    pub max_tokens: Option<u64>,
}
