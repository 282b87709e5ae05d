//! `sandbox.json` (the allow-list and per-call limits) and `grants.json` (the local Principal's grants).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::model::grants::Grant;

/// Default per-call deadline.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Default cap on each output stream.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1_048_576;
/// Default memory cap of a composite call.
pub const DEFAULT_MEMORY_MB: u64 = 64;

/// `$HCP_HOME/sandbox.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Bare bin names that may run from PATH.
    #[serde(default)]
    pub allow: Vec<String>,
    /// When present, the SHA-256 digests of the only components that may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_components: Option<Vec<String>>,
    /// The per-call deadline, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_TIMEOUT_MS))]
    pub timeout_ms: Option<u64>,
    /// The cap on each output stream of a call, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_OUTPUT_BYTES))]
    pub max_output_bytes: Option<u64>,
    /// The memory cap of a composite call, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MEMORY_MB))]
    pub memory_mb: Option<u64>,
    /// `"full"`: a wrap call that cannot get every confinement layer is refused (`sandbox_denied`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<Require>,
    /// Processes (and threads) a wrap call may have at once (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_PROCESSES))]
    pub max_processes: Option<u64>,
    /// Open files per process of a wrap call (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_OPEN_FILES))]
    pub max_open_files: Option<u64>,
    /// The largest file a wrap call may write, in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_FILE_MB))]
    pub max_file_mb: Option<u64>,
    /// The most a wrap call may add in total to its TMPDIR and its private working directory (`workspace`
    /// and `ephemeral` modes), in MiB: measured while it runs, and a call past it is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_DISK_MB))]
    pub max_disk_mb: Option<u64>,
    /// The most a `workspace`-mode pack's directory may hold when the store keeps it in PostgreSQL (one copy
    /// for every replica), in MiB: a call that would leave more is refused (`sandbox_denied`) and its changes
    /// are not kept, and a pack whose stored workspace is past it is not activated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_MAX_WORKSPACE_MB))]
    pub max_workspace_mb: Option<u64>,
    /// Data memory (heap and private writable mappings) per process of a wrap call, in MiB (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_WRAP_MEMORY_MB))]
    pub wrap_memory_mb: Option<u64>,
    /// Confinement layers the operator turns off (for a kernel where one misbehaves); calls then report them
    /// as unavailable and run as `native-local`, or are refused under `"require": "full"`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disable: Vec<crate::model::LayerName>,
    /// The highest Landlock ABI to use (default: the kernel's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_abi: Option<u8>,
    /// Per-pack loosening, by pack id: extra readable or writable paths, the network kinds and the hosts it may use.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub packs: std::collections::BTreeMap<String, PackSandbox>,
    /// Confirm-gated writes that need a person's approval when they come from MCP or HTTP: `confirm: true` from
    /// the caller is not enough (docs/security.md, Approvals a model cannot forge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_approval: Option<HumanApproval>,
    /// How a wrap's egress proxy resolves names (docs/egress.md): fixed answers, and names that may resolve to
    /// private addresses.
    #[serde(default, skip_serializing_if = "Egress::is_empty")]
    pub egress: Egress,
    /// When a served call becomes a task, and how long a task is kept once it ended (docs/mcp.md, Tasks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<crate::tasks::TaskSettings>,
}

/// `sandbox.json` `egress`: the operator's answers for names a wrap's hosts reach, for every pack.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Egress {
    /// Fixed answers used instead of DNS, like curl's `--resolve`: a DNS name and the IP addresses it
    /// resolves to (split-horizon names, tests). An answer that is not public is still refused unless the name
    /// is in `internal`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub hosts: std::collections::BTreeMap<HostName, Vec<std::net::IpAddr>>,
    /// DNS names that may resolve to loopback, private, link-local and shared (CGNAT) addresses; never to
    /// cloud metadata or reserved ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub internal: Vec<HostName>,
}

impl Egress {
    /// Nothing set.
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty() && self.internal.is_empty()
    }
}

/// A DNS name as `sandbox.json` `egress` names it: lower case, no scheme, port or wildcard, never an IP
/// address.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostName(String);

impl HostName {
    /// Checks `name` (a bare DNS name) and lower-cases it.
    pub fn parse(name: &str) -> Result<HostName, String> {
        let rule = crate::pack::HostRule::parse(name).map_err(|e| e.to_string())?;
        if rule.wildcard || name.contains(':') {
            return Err(format!(
                "egress name {name:?} is not a bare DNS name; write the name alone, without scheme, port or `*.` (e.g. \"api.internal.example\")"
            ));
        }
        Ok(HostName(rule.host))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for HostName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for HostName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HostName, D::Error> {
        let s = String::deserialize(d)?;
        HostName::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for HostName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HostName".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }

    fn inline_schema() -> bool {
        true
    }
}

/// Default for `human_approval.ttl_s`: how long an approval may wait and then be used.
pub const DEFAULT_APPROVAL_TTL_S: u64 = 900;

/// `sandbox.json` `human_approval`: which confirm-gated writes need a person's approval, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanApproval {
    /// The commands it applies to (only their confirm-gated writes): a pack id or `*`, and optionally some of
    /// its commands.
    pub commands: Vec<ApprovalScope>,
    /// Seconds an approval may wait for a person and then for its call (at least 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = DEFAULT_APPROVAL_TTL_S))]
    pub ttl_s: Option<u64>,
    /// `false`: never take an MCP client's elicitation answer as the person's approval; every approval comes
    /// from an approver (`hcpx approve`, `POST /v1/approvals/ID/approve`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub elicitation: Option<bool>,
}

/// A pack (or `*`) and optionally some of its commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalScope {
    /// The pack, or `*` for every pack.
    pub pack_id: String,
    /// When present, only these commands of the pack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb_keys: Option<Vec<String>>,
}

impl HumanApproval {
    /// Whether a confirm-gated write of `pack_id.verb_key` needs a person's approval.
    pub fn covers(&self, pack_id: &str, verb_key: &str) -> bool {
        self.commands.iter().any(|s| {
            (s.pack_id == "*" || s.pack_id == pack_id)
                && s.verb_keys.as_ref().is_none_or(|v| v.iter().any(|k| k == verb_key))
        })
    }

    /// How long an approval lasts, in seconds.
    pub fn ttl_s(&self) -> u64 {
        self.ttl_s.unwrap_or(DEFAULT_APPROVAL_TTL_S).max(1)
    }

    /// Whether an MCP client's elicitation answer counts as the person's approval.
    pub fn elicitation(&self) -> bool {
        self.elicitation.unwrap_or(true)
    }
}

/// How strict a call's confinement must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Require {
    /// Apply every layer the kernel offers; run without the ones it lacks (`HCP_SANDBOX=native-local`).
    BestEffort,
    /// Refuse a call that cannot get every layer.
    Full,
}

/// What the operator grants one pack beyond the default view (`sandbox.json` `packs.<id>`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PackSandbox {
    /// Network kinds the pack may use; it must also declare them in `wrap.network`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<crate::pack::NetKind>,
    /// Extra absolute paths the pack's commands may read (and execute).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<std::path::PathBuf>,
    /// Extra absolute paths the pack's commands may read and write.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<std::path::PathBuf>,
    /// Pathname UNIX sockets the pack's commands may connect to; it must also declare them in
    /// `wrap.unix_sockets`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unix_sockets: Vec<std::path::PathBuf>,
    /// Hosts the pack's commands may reach, for every tenant; each one the pack declares in `hosts`, as written
    /// there. A wrap's command reaches the ones it declares through the call's egress proxy (docs/security.md,
    /// Hosts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<crate::pack::HostRule>,
    /// More hosts for one tenant's calls, by tenant (`hcpx allow-host --tenant`); each one the pack declares.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tenant_hosts: std::collections::BTreeMap<String, Vec<crate::pack::HostRule>>,
}

/// Default for `max_processes`.
pub const DEFAULT_MAX_PROCESSES: u64 = 256;
/// Default for `max_open_files`.
pub const DEFAULT_MAX_OPEN_FILES: u64 = 1024;
/// Default for `max_file_mb`.
pub const DEFAULT_MAX_FILE_MB: u64 = 128;
/// Default for `wrap_memory_mb`.
pub const DEFAULT_WRAP_MEMORY_MB: u64 = 2048;
/// Default for `max_disk_mb`.
pub const DEFAULT_MAX_DISK_MB: u64 = 1024;
/// Default for `max_workspace_mb`.
pub const DEFAULT_MAX_WORKSPACE_MB: u64 = 64;

/// The limits a call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout_ms: u64,
    pub max_output_bytes: u64,
    pub memory_mb: u64,
    pub max_processes: u64,
    pub max_open_files: u64,
    pub max_file_mb: u64,
    pub max_disk_mb: u64,
    pub max_workspace_mb: u64,
    pub wrap_memory_mb: u64,
}

impl SandboxConfig {
    /// The effective limits.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout_ms: self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
            max_output_bytes: self.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            memory_mb: self.memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
            max_processes: self.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES).max(1),
            max_open_files: self.max_open_files.unwrap_or(DEFAULT_MAX_OPEN_FILES).max(16),
            max_file_mb: self.max_file_mb.unwrap_or(DEFAULT_MAX_FILE_MB),
            max_disk_mb: self.max_disk_mb.unwrap_or(DEFAULT_MAX_DISK_MB),
            max_workspace_mb: self.max_workspace_mb.unwrap_or(DEFAULT_MAX_WORKSPACE_MB),
            wrap_memory_mb: self.wrap_memory_mb.unwrap_or(DEFAULT_WRAP_MEMORY_MB).max(16),
        }
    }

    /// True when every layer is required.
    pub fn requires_full(&self) -> bool {
        self.require == Some(Require::Full)
    }

    /// What the operator grants pack `id` beyond the default view.
    pub fn for_pack(&self, id: &str) -> Option<&PackSandbox> {
        self.packs.get(id)
    }

    /// True when the bare bin `name` is allow-listed.
    pub fn allows_bin(&self, name: &str) -> bool {
        self.allow.iter().any(|a| a == name)
    }
}

/// Refuses an extra read path that is relative, `/`, or holds or lies in the store at `home`.
pub(crate) fn refuse_read_path(p: &std::path::Path, home: &std::path::Path) -> Result<(), StoreError> {
    let shown = p.display();
    if !p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(StoreError::Refused(format!(
            "{shown:?} is not an absolute path without `..`; give the full path, e.g. /sys"
        )));
    }
    let home = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if real == std::path::Path::new("/") || home.starts_with(&real) || real.starts_with(&home) {
        return Err(StoreError::Refused(format!(
            "{shown:?} is or holds the store ({}), whose grants and credentials no pack may read; name the directory the command needs, e.g. /sys",
            home.display()
        )));
    }
    Ok(())
}

impl Store {
    /// Reads `sandbox.json` (defaults when absent).
    pub fn sandbox(&self) -> Result<std::sync::Arc<SandboxConfig>, StoreError> {
        // No file is the defaults, shared rather than made again on every call.
        static DEFAULTS: std::sync::LazyLock<std::sync::Arc<SandboxConfig>> =
            std::sync::LazyLock::new(Default::default);
        Ok(self
            .read_json_cached_with("sandbox.json", SandboxConfig::checked)?
            .unwrap_or_else(|| DEFAULTS.clone()))
    }

    /// Adds (`allow = true`) or removes bins from the allow-list; returns the new list.
    pub fn edit_allow(&self, bins: &[String], allow: bool) -> Result<Vec<String>, StoreError> {
        for b in bins {
            if b.is_empty() || b.contains('/') || b.contains(char::is_whitespace) || b.starts_with('-') {
                return Err(StoreError::Refused(format!(
                    "{b:?} is not a bare bin name; the allow-list holds names looked up on PATH (a pack's own bin is allowed by installing the pack)"
                )));
            }
        }
        let _lock = self.lock()?;
        let mut cfg: SandboxConfig = self.read_json("sandbox.json")?.unwrap_or_default(); // uncached: under the lock
        for b in bins {
            if allow && !cfg.allows_bin(b) {
                cfg.allow.push(b.clone());
            } else if !allow {
                cfg.allow.retain(|a| a != b);
            }
        }
        self.write_json("sandbox.json", &cfg)?;
        Ok(cfg.allow)
    }

    /// Grants (`allow = true`) or takes back network kinds for pack `id` (every kind when `kinds` is empty and
    /// `allow` is false); returns the pack's kinds after the change.
    pub fn edit_network(
        &self,
        id: &str,
        kinds: &[crate::pack::NetKind],
        allow: bool,
    ) -> Result<Vec<crate::pack::NetKind>, StoreError> {
        if !crate::model::naming::is_pack_id(id) {
            return Err(StoreError::Refused(format!("{id:?} is not a pack id")));
        }
        // A kind is granted only as the installed pack declares it (`wrap.network`), as a host is; taking kinds
        // back needs no pack.
        if allow {
            let declared = match self.load_pack(id)? {
                Some(p) => p.wrap.map(|w| w.network).unwrap_or_default(),
                None => return Err(crate::packs::not_installed(id, &*self.state()?)),
            };
            if let Some(k) = kinds.iter().find(|k| !declared.contains(k)) {
                let names: Vec<&str> = declared.iter().map(|k| k.as_str()).collect();
                return Err(StoreError::Refused(if names.is_empty() {
                    format!("pack {id} declares no network kinds (`wrap.network`), so {} cannot be allowed; a pack that needs one declares it in its manifest", k.as_str())
                } else {
                    format!(
                        "pack {id} does not declare network kind {}; it declares {}: allow one of those",
                        k.as_str(),
                        names.join(", ")
                    )
                }));
            }
        }
        let _lock = self.lock()?;
        let mut cfg: SandboxConfig = self.read_json("sandbox.json")?.unwrap_or_default(); // uncached: under the lock
        let entry = cfg.packs.entry(id.to_string()).or_default();
        if allow {
            for k in kinds {
                if !entry.network.contains(k) {
                    entry.network.push(*k);
                }
            }
            entry.network.sort();
        } else if kinds.is_empty() {
            entry.network.clear();
        } else {
            entry.network.retain(|k| !kinds.contains(k));
        }
        let now = entry.network.clone();
        if *entry == PackSandbox::default() {
            cfg.packs.remove(id);
        }
        self.write_json("sandbox.json", &cfg)?;
        Ok(now)
    }

    /// Grants (`allow = true`) or takes back extra read paths for pack `id` (every one when `paths` is empty and
    /// `allow` is false); returns the pack's read paths after the change. A path must be absolute, and never
    /// the root, the store itself or a directory that holds it (the pack would read every credential).
    pub fn edit_read(
        &self,
        id: &str,
        paths: &[std::path::PathBuf],
        allow: bool,
    ) -> Result<Vec<std::path::PathBuf>, StoreError> {
        if !crate::model::naming::is_pack_id(id) {
            return Err(StoreError::Refused(format!("{id:?} is not a pack id")));
        }
        if allow {
            for p in paths {
                refuse_read_path(p, self.home())?;
            }
        }
        let _lock = self.lock()?;
        let mut cfg: SandboxConfig = self.read_json("sandbox.json")?.unwrap_or_default(); // uncached: under the lock
        let entry = cfg.packs.entry(id.to_string()).or_default();
        if allow {
            for p in paths {
                if !entry.read.contains(p) {
                    entry.read.push(p.clone());
                }
            }
        } else if paths.is_empty() {
            entry.read.clear();
        } else {
            entry.read.retain(|p| !paths.contains(p));
        }
        let now = entry.read.clone();
        if *entry == PackSandbox::default() {
            cfg.packs.remove(id);
        }
        self.write_json("sandbox.json", &cfg)?;
        Ok(now)
    }

    /// The local Principal's grants: `None` when `grants.json` does not exist (every grant).
    pub fn local_grants(&self) -> Result<Option<Vec<Grant>>, StoreError> {
        self.read_json("grants.json")
    }

    /// The local user as a Principal reaching the runtime through `invoker`: tenant `local`, the grants of
    /// `grants.json` as it is now (every grant when there is none).
    pub fn local_principal(
        &self,
        invoker: crate::model::Invoker,
    ) -> Result<crate::model::Principal, StoreError> {
        let grants = match self.local_grants()? {
            Some(g) => crate::model::Grants::Only(g),
            None => crate::model::Grants::All,
        };
        Ok(crate::model::Principal::local(grants, invoker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn egress_names_are_bare_dns_names_and_addresses_are_addresses() {
        let cfg: SandboxConfig = serde_json::from_str(
            r#"{"egress": {"hosts": {"API.test": ["127.0.0.1", "::1"]}, "internal": ["api.test"]}}"#,
        )
        .unwrap();
        let name = HostName::parse("api.test").unwrap();
        assert_eq!(cfg.egress.hosts[&name].len(), 2);
        assert_eq!(cfg.egress.internal, vec![name]);
        for bad in [
            r#"{"egress": {"internal": ["10.0.0.1"]}}"#,
            r#"{"egress": {"internal": ["*.api.test"]}}"#,
            r#"{"egress": {"internal": ["api.test:8443"]}}"#,
            r#"{"egress": {"hosts": {"api.test": ["localhost"]}}}"#,
            r#"{"egress": {"other": []}}"#,
        ] {
            assert!(serde_json::from_str::<SandboxConfig>(bad).is_err(), "{bad}");
        }
        let back = serde_json::to_value(&cfg).unwrap();
        assert_eq!(back["egress"]["hosts"]["api.test"][1], "::1");
        assert!(serde_json::to_value(SandboxConfig::default()).unwrap().get("egress").is_none());
    }

    #[test]
    fn human_approval_covers_a_pack_or_some_of_its_commands() {
        let h: HumanApproval = serde_json::from_str(
            r#"{"commands": [{"pack_id": "ledger", "verb_keys": ["transfer"]}, {"pack_id": "mail"}]}"#,
        )
        .unwrap();
        assert!(h.covers("ledger", "transfer") && !h.covers("ledger", "refund"));
        assert!(h.covers("mail", "send") && !h.covers("gh", "issue.create"));
        assert_eq!((h.ttl_s(), h.elicitation()), (DEFAULT_APPROVAL_TTL_S, true));
        let every: HumanApproval =
            serde_json::from_str(r#"{"commands": [{"pack_id": "*"}], "ttl_s": 0, "elicitation": false}"#)
                .unwrap();
        assert!(every.covers("anything", "at.all"));
        assert_eq!((every.ttl_s(), every.elicitation()), (1, false));
        let typo = serde_json::from_str::<HumanApproval>(r#"{"commands": [], "ttl": 5}"#);
        assert!(typo.is_err(), "an unknown field is refused, not ignored");
    }
}
