//! `sandbox.json` (the allow-list and per-call limits) and `grants.json` (the local Principal's grants).

use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::grants::Grant;

/// Default per-call deadline.
pub const DEFAULT_TIMEOUT_MS: u64 = 60_000;
/// Default cap on each output stream.
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1_048_576;
/// Default memory cap of a composite call.
pub const DEFAULT_MEMORY_MB: u64 = 64;

/// `$HCP_HOME/sandbox.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Bare bin names that may run from PATH.
    #[serde(default)]
    pub allow: Vec<String>,
    /// When present, the SHA-256 digests of the only components that may run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_components: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
}

/// The limits a call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout_ms: u64,
    pub max_output_bytes: u64,
    pub memory_mb: u64,
}

impl SandboxConfig {
    /// The effective limits.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout_ms: self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS),
            max_output_bytes: self.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT_BYTES),
            memory_mb: self.memory_mb.unwrap_or(DEFAULT_MEMORY_MB),
        }
    }

    /// True when the bare bin `name` is allow-listed.
    pub fn allows_bin(&self, name: &str) -> bool {
        self.allow.iter().any(|a| a == name)
    }
}

impl Store {
    /// Reads `sandbox.json` (defaults when absent).
    pub fn sandbox(&self) -> Result<std::sync::Arc<SandboxConfig>, StoreError> {
        Ok(self.read_json_cached("sandbox.json")?.unwrap_or_default())
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

    /// The local Principal's grants: `None` when `grants.json` does not exist (every grant).
    pub fn local_grants(&self) -> Result<Option<Vec<Grant>>, StoreError> {
        self.read_json("grants.json")
    }
}
