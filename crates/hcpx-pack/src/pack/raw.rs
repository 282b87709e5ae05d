//! The pack files exactly as written: serde types that refuse unknown fields, before any cross-file check.

use indexmap::IndexMap;
use schemars::JsonSchema;
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

/// `surface.json`: the pack's identity, how its commands run, and the commands themselves.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawManifest {
    /// A JSON Schema for editors (`schemas/surface.schema.json`); the runtime ignores it.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// The pack id: lower-case letters, digits, `-` and `_`, starting with a letter, at most 64 characters.
    pub id: String,
    /// A display name for hosts.
    pub name: Option<String>,
    /// How commands run (alias `adapter_kind`; giving both is an error). Default `composite`.
    #[serde(alias = "adapter_kind")]
    pub kind: Option<AdapterKind>,
    /// The bare name of the CLI the Skill teaches; every `cli[]` must start with it.
    #[serde(rename = "cliBin")]
    pub cli_bin: Option<String>,
    /// `runtime` (default) or `control` (which needs Binding mode `mothership`).
    pub plane: Option<Plane>,
    /// The faces the pack is offered on. Default `["cli", "json_exec"]`.
    pub transports: Option<Vec<Transport>>,
    /// Where the Skill is published, for hosts; the runtime reads `HARNESS.md`.
    pub skill_url: Option<String>,
    /// Where the pack's credential comes from. Absent: mode `public` on the runtime plane, `mothership` on
    /// the control plane.
    pub binding: Option<RawBinding>,
    /// How a `kind: wrap` pack runs its CLI.
    pub wrap: Option<RawWrap>,
    /// The API of a `kind: openapi` pack.
    pub openapi: Option<RawOpenapi>,
    /// The HCP/1.1 bootstrap: a pack that forwards a bounded set of subcommands.
    pub pass_through: Option<RawPassThrough>,
    /// The WASI component of a `kind: composite` pack.
    pub component: Option<RawComponent>,
    /// The hosts the commands reach (each command without its own `hosts`): `api.example.com`,
    /// `api.example.com:8443`, `http://api.example.com`, `*.example.com` (any one name directly below it, as a TLS certificate's wildcard); https and the
    /// scheme's port unless written; DNS names only. The operator allows them per pack (`hcpx allow-host`);
    /// a wrap's command reaches the allowed ones through its call's egress proxy (docs/security.md, Hosts).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// The commands, by name (`mail.list`: lower-case segments joined by dots).
    #[serde(default, deserialize_with = "unique_map")]
    #[schemars(with = "std::collections::BTreeMap<String, RawCommand>")]
    pub verbs: IndexMap<String, RawCommand>,
    /// The stimuli a `sense_only` pack announces; each needs a `policy.json` `stimuli` row.
    #[serde(rename = "stimulusTriggers", default)]
    pub stimulus_triggers: Vec<RawTrigger>,
    /// The protocol metadata; derived when absent, and must agree with the manifest when present.
    pub hcp: Option<RawMeta>,
}

/// `binding`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBinding {
    /// Where the credential comes from.
    pub mode: BindingMode,
    /// The hub that holds the credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<Hub>,
    /// The credential family, named like a pack id; it names the credential file. Default: the pack id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The provider a `connect` links, for hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_provider_id: Option<String>,
    /// Binding fields bound to a host (issue #36 point 5): a wrap's CLI sees a random placeholder where
    /// `{{binding.FIELD}}` is filled, a composite where `credential` gives the field, and hcpx puts the real value
    /// into requests to that host only, in the one header or query parameter named here; a placeholder anywhere
    /// else is refused (docs/egress.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inject: Vec<RawInject>,
}

/// `binding.inject[]`: one Binding field, the host it goes to, and where in the request.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawInject {
    /// The Binding field (as in `{{binding.FIELD}}` in `wrap.agent_env`).
    pub field: String,
    /// The host the value goes to, written as in `hosts` and one of the pack's declared hosts.
    pub host: String,
    /// The request header whose value may hold the placeholder, anywhere in it (`authorization` for
    /// `Bearer {{binding.token}}`). Give `header` or `query`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The query parameter whose value may be the placeholder (`api_key`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// `wrap`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWrap {
    /// The CLI: a bare name looked up on PATH (allow-listed in `sandbox.json`), or `./path` inside the pack.
    pub bin: Option<String>,
    /// The tokens that select JSON output, for commands without their own. Default `["--json"]`.
    pub json_flag: Option<Vec<String>>,
    /// The argv of a command without `cli[]`; `{{verb}}` is the command name after its last dot. Default
    /// `["{{verb}}"]`.
    pub argv_template: Option<Vec<String>>,
    /// Environment for the CLI, by name; values may use `{{binding.FIELD}}`. Names that change what code the
    /// CLI loads are refused (docs/security.md).
    #[serde(default, deserialize_with = "unique_map")]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub agent_env: IndexMap<String, String>,
    /// Where the CLI runs.
    pub workspace: Option<RawWorkspace>,
    /// The network kinds the CLI needs; granted only where `sandbox.json` allows the pack.
    #[serde(default)]
    pub network: Vec<NetKind>,
    /// The pathname UNIX sockets the CLI connects to (absolute paths, such as
    /// `/run/postgresql/.s.PGSQL.5432`); granted only where `sandbox.json` allows the pack the same paths.
    /// Without one, the CLI can make no UNIX socket but a stream socketpair; with some, it connects to those paths
    /// only (no other path, no abstract name, no datagram UNIX socket).
    #[serde(default)]
    pub unix_sockets: Vec<std::path::PathBuf>,
    /// Absolute paths outside the default view the CLI must read (`/sys`, `/run/udev`): asked for, never
    /// granted by the pack; the operator lends them with `hcpx allow-read`.
    #[serde(default)]
    pub read: Vec<String>,
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWorkspace {
    /// `none`: the pack's directory; `project`: the caller's project (`HCP_PROJECT_DIR`, else the current
    /// directory); `workspace`: the pack's private directory in the store; `ephemeral`: a new one per call.
    #[serde(default)]
    pub mode: WorkspaceMode,
}

/// `openapi`: one of `url` or `path`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOpenapi {
    /// The OpenAPI document's URL.
    pub url: Option<String>,
    /// The OpenAPI document inside the pack (`./openapi.json`).
    pub path: Option<String>,
}

/// `pass_through`: the HCP/1.1 bootstrap.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPassThrough {
    /// The subcommands a caller may run.
    #[serde(rename = "allowedSubcommands")]
    pub allowed_subcommands: Vec<String>,
    /// The most argv words a call may pass.
    #[serde(rename = "maxArgv")]
    pub max_argv: u32,
    /// The option words a caller may pass (`--oneline`; `--format=` allows every `--format=…`); any other
    /// word starting with `-` is refused.
    #[serde(rename = "allowedOptions", default)]
    pub allowed_options: Vec<String>,
}

/// `component`: the WASI component of a composite pack.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawComponent {
    /// The component inside the pack (`./adapter.wasm`).
    pub path: String,
}

/// One `verbs` entry.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    /// One sentence: what the command returns or changes, and when to use it.
    pub description: Option<String>,
    /// The argv: the bin, then literal tokens and `{{arg}}` placeholders.
    pub cli: Option<Vec<String>>,
    /// A JSON Schema object for the arguments (draft 7 unless it names its own `$schema`; docs/packs.md).
    pub args: Option<Value>,
    /// The tokens that select JSON output for this command, in place of `wrap.json_flag`.
    pub json_flag: Option<Vec<String>>,
    /// What hosts show while the command runs and when it is done.
    pub title: Option<RawTitle>,
    /// A legacy hint of the Policy row's operation; `policy.json` decides.
    pub policy: Option<Operation>,
    /// The approval card a person sees before a confirm-gated write runs.
    pub preview: Option<RawPreview>,
    /// The hosts this command reaches, in place of the pack's `hosts` (`[]`: none).
    pub hosts: Option<Vec<String>>,
    /// `true`: the command runs long, so a served call of it becomes a task at once where the client takes tasks
    /// (MCP's tasks extension, `Prefer: respond-async` over HTTP) instead of after the operator's
    /// `sandbox.json` `tasks.after_ms`.
    pub long: Option<bool>,
}

/// A title form: one template or a list tried in order.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTitle {
    /// Shown while the command runs (`Paying {{amount}}`); the first template whose placeholders all have a
    /// value wins.
    pub live: Option<OneOrMany>,
    /// Shown when it is done; may use `{{result.…}}`.
    pub done: Option<OneOrMany>,
}

/// `preview`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPreview {
    /// How a host lays the card out.
    pub kind: PreviewKind,
    /// The card's title template.
    pub title: Option<String>,
    /// The card's rows: label to template; a row whose placeholders have no value is left out.
    #[serde(default, deserialize_with = "unique_map")]
    #[schemars(with = "std::collections::BTreeMap<String, String>")]
    pub fields: IndexMap<String, String>,
}

/// One `stimulusTriggers` entry.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTrigger {
    /// The stimulus name, like a command name; its `policy.json` `stimuli` row must exist.
    #[serde(rename = "ref")]
    pub reference: String,
}

/// The `hcp` protocol metadata object, strictly validated.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMeta {
    /// The protocol version: `1`.
    pub hcp: u64,
    /// Equal to `id`.
    pub pack_id: String,
    /// Equal to `kind`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter_kind: Option<AdapterKind>,
    /// Agrees with `binding`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binding: Option<RawMetaBinding>,
    /// Agrees with `wrap.bin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrap: Option<RawMetaWrap>,
    /// Agrees with `component`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<RawComponent>,
    /// Equal to `plane`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plane: Option<Plane>,
    /// Equal to `transports`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transports: Option<Vec<Transport>>,
}

/// `hcp.binding`: `binding` without `inject`, which is the runtime's, not the protocol metadata's.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMetaBinding {
    /// Where the credential comes from.
    pub mode: BindingMode,
    /// The hub that holds the credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hub: Option<Hub>,
    /// The credential family, named like a pack id; it names the credential file. Default: the pack id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The provider a `connect` links, for hosts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_provider_id: Option<String>,
}

/// `hcp.wrap`: the bin only.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMetaWrap {
    /// Equal to `wrap.bin`.
    pub bin: String,
}

/// `policy.json`: what each command may do, and whether a person confirms it first.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    /// A JSON Schema for editors (`schemas/policy.schema.json`); the runtime ignores it.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// The pack id of the `surface.json` this Policy belongs to.
    pub surface_id: String,
    /// One row per command of `surface.json`, by command name.
    #[serde(default, deserialize_with = "unique_map")]
    #[schemars(with = "std::collections::BTreeMap<String, RawPolicyRow>")]
    pub verbs: IndexMap<String, RawPolicyRow>,
    /// One row per `stimulusTriggers` ref.
    #[serde(default, deserialize_with = "unique_map")]
    #[schemars(with = "std::collections::BTreeMap<String, RawStimulus>")]
    pub stimuli: IndexMap<String, RawStimulus>,
}

/// One Policy row.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicyRow {
    /// `read` or `write`; a write needs the `verb.exec.write` capability.
    pub operation: Operation,
    /// When true, the command is refused until a person confirms it (`confirm=true`).
    #[serde(default)]
    pub confirm: bool,
    /// Where the command's data may land.
    pub privacy: Option<RawPrivacy>,
}

/// `privacy`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPrivacy {
    /// Where the command's data may go: `local`, `brain` (needs a project) or `public`.
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
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStimulus {
    /// How the stimulus reaches an agent.
    pub delivery: Delivery,
}

/// `hcp.eval.json`: realistic tasks `hcpx eval` and `hcpx check` replay against the pack.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEvalFile {
    /// A JSON Schema for editors (`schemas/hcp.eval.schema.json`); the runtime ignores it.
    #[serde(rename = "$schema")]
    pub schema: Option<String>,
    /// A directory of the pack copied into a fresh project for each `hcpx eval` / `hcpx check` run, or an
    /// executable setup script of the pack run (confined) with that fresh directory as its argument.
    #[serde(default)]
    pub fixture: Option<String>,
    /// The cases, run in order.
    pub cases: Vec<RawEvalCase>,
}

/// One eval case.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawEvalCase {
    /// What the case shows; results are reported by it, so names should be unique.
    pub name: String,
    /// The command to run.
    pub verb: String,
    /// The arguments, as a caller passes them (`confirm: true` included).
    #[serde(default)]
    pub args: serde_json::Map<String, Value>,
    /// What must hold for the case to pass.
    pub expect: RawExpect,
}

/// What an eval case expects.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawExpect {
    /// The call succeeds (`true`) or is refused or fails (`false`).
    pub ok: Option<bool>,
    /// The output is JSON (`true`) or not (`false`).
    pub json: Option<bool>,
    /// Texts the output must contain.
    pub contains: Option<Vec<String>>,
    /// A text the error message must contain.
    pub error: Option<String>,
    /// The most milliseconds the call may take.
    pub max_ms: Option<u64>,
    /// The most tokens (characters / 4) the output may have.
    pub max_tokens: Option<u64>,
}
