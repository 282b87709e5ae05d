//! The registry of lint kinds: one row per kind, ids never change; docs and `--json` come from this table.

use serde::{Serialize, Serializer};

/// One kind of lint issue. The id (`as_str`) is stable and shows in `--json` and as `L-<kind>` in `hcpx check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LintKind {
    MissingFile,
    FileUnreadable,
    InvalidJson,
    InvalidField,
    UnknownField,
    BadName,
    SurfaceIdMismatch,
    HcpMismatch,
    WrapMissing,
    WrapNoCommands,
    ControlBinding,
    OpenapiMissing,
    SenseNoTrigger,
    ComponentMissing,
    PathEscapes,
    PathMissing,
    BinNotExecutable,
    PolicyMissing,
    PolicyExtra,
    StimulusMissing,
    StimulusExtra,
    ConfirmOnRead,
    SkillNoLead,
    SkillUnknownCommand,
    CliBinMismatch,
    BadPlaceholder,
    UnknownPlaceholder,
    InvalidSchema,
    SchemaRef,
    BadPassThrough,
    EvalUnknownCommand,
    AgentEnvDenied,
    HostMalformed,
    HostIpLiteral,
    HostNotBare,
    HostPortRange,
    InjectInvalid,
    InjectHostUndeclared,
}

/// A registry row: the kind, what it checks and why it matters.
pub struct KindInfo {
    pub kind: LintKind,
    pub id: &'static str,
    pub what: &'static str,
    pub why: &'static str,
}

macro_rules! registry {
    ($($kind:ident, $id:literal, $what:literal, $why:literal;)*) => {
        /// Every lint kind, in the order the docs list them.
        pub const KINDS: &[KindInfo] = &[
            $(KindInfo { kind: LintKind::$kind, id: $id, what: $what, why: $why },)*
        ];

        impl LintKind {
            /// The stable id.
            pub fn as_str(self) -> &'static str {
                match self { $(LintKind::$kind => $id,)* }
            }
        }
    };
}

registry! {
    MissingFile, "missing_file",
        "The pack directory, `surface.json`, `policy.json` or `HARNESS.md` is missing.",
        "A pack is exactly these three files (plus optional ones); the runtime cannot load a partial pack.";
    FileUnreadable, "file_unreadable",
        "A pack file is too large, not UTF-8, not a regular file, or reached through a link that leaves the pack.",
        "The runtime reads only bounded, plain files from inside the pack.";
    InvalidJson, "invalid_json",
        "A JSON file does not parse.",
        "Nothing of a file that does not parse can be trusted.";
    InvalidField, "invalid_field",
        "A field has the wrong type or value, a required field is missing, or a key is repeated.",
        "Every field has one meaning; a wrong type or a repeated key would be silently misread.";
    UnknownField, "unknown_field",
        "A field that the format does not define.",
        "A misspelt field (`confrim`) would otherwise be ignored and weaken the pack without a word.";
    BadName, "bad_name",
        "A pack id, command name, argument name or trigger ref breaks the naming rules.",
        "Names are identical on every face (CLI, JSON, Skill, host tool) and must stay lower-case and stable.";
    SurfaceIdMismatch, "surface_id_mismatch",
        "`policy.json` `surface_id` differs from the manifest `id`.",
        "The Policy file must govern this pack and no other.";
    HcpMismatch, "hcp_mismatch",
        "The `hcp` metadata object disagrees with the manifest (`pack_id`, `hcp`, adapter, Binding, plane, transports).",
        "Hosts read the metadata object; it must describe the same pack the runtime runs.";
    WrapMissing, "wrap_missing",
        "A `kind: wrap` pack without `wrap.bin`.",
        "A wrap runs a CLI; without a bin there is nothing to run.";
    WrapNoCommands, "wrap_no_commands",
        "A `kind: wrap` pack with neither named commands nor `pass_through`.",
        "The set of commands is closed; a wrap without any exposes nothing.";
    ControlBinding, "control_binding",
        "A `plane: control` pack whose Binding mode is not `mothership`.",
        "Control packs act for the fleet and must not borrow a user's or a local credential.";
    OpenapiMissing, "openapi_missing",
        "A `kind: openapi` pack without `openapi`, or with both or neither of `url` and `path`.",
        "The adapter needs exactly one source for its API description.";
    SenseNoTrigger, "sense_no_trigger",
        "A `kind: sense_only` pack without any `stimulusTriggers`.",
        "A Sense pack exists only to deliver triggers.";
    ComponentMissing, "component_missing",
        "A `kind: composite` pack without `component.path`.",
        "A composite runs a WASI component; without one there is nothing to run.";
    PathEscapes, "path_escapes",
        "A pack path (`wrap.bin`, `component.path`, `openapi.path`, the `fixture` of `hcp.eval.json`) is absolute, uses `..`, or resolves outside the pack through a link.",
        "Install copies only the pack; a path outside it would run whatever happens to be on the host.";
    PathMissing, "path_missing",
        "A pack path names a file that does not exist in the pack.",
        "The installed pack would fail at run time instead of at lint time.";
    BinNotExecutable, "bin_not_executable",
        "A `wrap.bin` inside the pack is not an executable file.",
        "The runtime spawns the bin directly, with no shell; it must carry an execute bit and a `#!` line or be a binary.";
    PolicyMissing, "policy_missing",
        "A command has no `policy.json` row.",
        "Every command runs under exactly one Policy row; without one it cannot be authorised.";
    PolicyExtra, "policy_extra",
        "A `policy.json` row names no command of the manifest.",
        "A stray row hints at a renamed command whose real row is missing or wrong.";
    StimulusMissing, "stimulus_missing",
        "A `stimulusTriggers` ref has no `policy.json` `stimuli` row.",
        "Sense delivery is governed by Policy like commands are.";
    StimulusExtra, "stimulus_extra",
        "A `policy.json` `stimuli` row names no declared trigger.",
        "Coverage holds both ways, so a renamed trigger cannot keep a stale row.";
    ConfirmOnRead, "confirm_on_read",
        "`confirm: true` on a Policy row whose `operation` is `read`.",
        "Reads are idempotent and never gated; a gate on a read means the operation is wrong.";
    SkillNoLead, "skill_no_lead",
        "`HARNESS.md` has no lead: no text before its first `##` heading.",
        "Hosts load the lead first and the full Skill on demand.";
    SkillUnknownCommand, "skill_unknown_command",
        "The Skill's hot-path table names a command the manifest does not declare.",
        "An agent would call a command that does not exist.";
    CliBinMismatch, "cli_bin_mismatch",
        "A command's `cli[]` is empty, or its first token is not the pack's `cliBin` (or differs between commands).",
        "The first token is the bin the Skill teaches; both faces must name the same CLI.";
    BadPlaceholder, "bad_placeholder",
        "A template has an unclosed `{{`, an empty or malformed name, or a placeholder where none is allowed.",
        "A malformed template would render a literal `{{` into argv or a title.";
    UnknownPlaceholder, "unknown_placeholder",
        "A `{{name}}` in `cli[]`, `wrap.argv_template` or `preview` names no declared argument.",
        "The slot could never be filled, so the token would always drop out.";
    InvalidSchema, "invalid_schema",
        "A command's `args` is not a valid JSON Schema object, or its `required`, `x-position` or `confirm`/`apply` declarations are inconsistent.",
        "Arguments are validated against this schema before anything runs.";
    SchemaRef, "schema_ref",
        "A `$ref` (or `$dynamicRef`) in `args` points outside the schema: a URL or a file.",
        "A pack's schema must never make the runtime fetch a URL or read a file outside the pack.";
    BadPassThrough, "bad_pass_through",
        "`pass_through` has no `allowedSubcommands`, or one that is not a single plain word.",
        "The bootstrap is only safe while the set of subcommands is small and literal.";
    EvalUnknownCommand, "eval_unknown_command",
        "An `hcp.eval.json` case names a command the manifest does not declare.",
        "The case could never pass, and it tests nothing.";
    AgentEnvDenied, "agent_env_denied",
        "A `wrap.agent_env` name that changes what code a CLI loads or runs: the loader (`LD_*`), `PATH`, shell startup (`BASH_ENV`), runtime options (`NODE_OPTIONS`, `PYTHON*`), git config (`GIT_CONFIG_*`), pagers and editors, trust stores and proxies (docs/security.md lists them).",
        "The pack would run its own code inside a trusted system CLI (a preloaded library, a `core.fsmonitor`), whatever the allow-list says.";
    HostMalformed, "host_malformed",
        "A `hosts` entry (the pack's or a command's) is no host: empty, a scheme other than `https` or `http`, a label that is not letters, digits and `-`, a single label, a `*` other than a whole first label, a port that is not a number.",
        "The operator allows exactly the hosts a pack declares; an entry that names no host could never be allowed, or would be read as another.";
    HostIpLiteral, "host_ip_literal",
        "A `hosts` entry is an IP address (`10.0.0.1`, `[::1]`) or ends in a numeric label.",
        "Hosts are named by DNS name, so an operator reviews a name, not an address that may belong to anyone (an internal service, the metadata endpoint).";
    HostNotBare, "host_not_bare",
        "A `hosts` entry holds a path, a query, a fragment or userinfo (`api.example.com/v1`, `user@api.example.com`).",
        "A host entry allows a host, never a part of one; a path would suggest a limit nothing enforces, and userinfo puts a credential in the manifest.";
    HostPortRange, "host_port_range",
        "A `hosts` entry's port is 0 or above 65535.",
        "No service listens there; the entry could never be reached.";
    InjectInvalid, "inject_invalid",
        "A `binding.inject` entry gives neither `header` nor `query` or both, a header name that is not a token or one hcpx frames itself (`host`, `content-length`, `connection`, `proxy-*`…), an empty query name, a field a wrap's `agent_env` never fills (`{{binding.FIELD}}`), or the same field and host twice.",
        "The placeholder is the only form of the credential the CLI ever sees; it must have exactly one place to go, and reach the CLI at all.";
    InjectHostUndeclared, "inject_host_undeclared",
        "A `binding.inject` entry's `host` is not one of the pack's declared hosts (`hosts`, or a command's own), written the same way.",
        "A credential goes only to a host the operator reviewed and allowed; binding it to another would send it where no rule lets the CLI reach.";
}

impl Serialize for LintKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `docs/lint.md`, generated from the registry.
pub fn docs_markdown() -> String {
    let mut out = String::from(
        "# Lint kinds\n\n<!-- generated from crates/hcpx-model/src/lint_kinds.rs; regenerate with `HCPX_BLESS=1 cargo test`; do not edit -->\n\n\
         `hcpx lint DIR` fails on any of these. Each issue in `--json` carries its `kind`, a `message`, \
         a `fix`, the `file` and a JSON `pointer` (or the Markdown heading for `HARNESS.md`). \
         In `hcpx check` they appear as `L-<kind>`.\n\n| kind | what | why |\n|------|------|-----|\n",
    );
    for k in KINDS {
        out.push_str(&format!("| `{}` | {} | {} |\n", k.id, k.what, k.why));
    }
    out
}
