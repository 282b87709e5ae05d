//! The operator settings of `sandbox.json`, shown, set and unset by dotted key (`hcpx config`), the same on
//! the files and on PostgreSQL: a change is made under the store's lock (two operators never lose one), checked
//! by the loader the runtime reads the document with ([`SandboxConfig::load`]) before anything is written, and
//! written as every document is (on PostgreSQL, with the notification that makes every replica read it again).
//! The caller is told each key that changed, old and new, and the change is an audit line.
//!
//! `sandbox.json` is the store's, not a tenant's: one document for every tenant on either back end (what one
//! tenant is allowed beyond the others is inside it, `packs.<id>.tenant_hosts.<tenant>`).

mod keys;
mod load;

use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::LazyLock;

use crate::audit::{AuditAction, AuditRecord, AuditSetting};
use crate::config::SandboxConfig;
use crate::model::Principal;
use crate::{Store, StoreError};
use keys::Keys;

/// The document `hcpx config` edits.
pub const SANDBOX: &str = "sandbox.json";

/// The keys of `sandbox.json`, read once off its schema.
static SANDBOX_KEYS: LazyLock<Keys> = LazyLock::new(Keys::of::<SandboxConfig>);

/// Why a setting was not shown or changed; [`SettingError::code`] is stable.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// No such setting (the message names the closest one).
    #[error("{0}")]
    Unknown(String),
    /// The value is not one the loader accepts, or the document would not load with it.
    #[error("{0}")]
    Invalid(String),
    /// Another command sets this one, with checks of its own (a pack's declared hosts, network kinds).
    #[error("{0}")]
    Owned(String),
    /// The stored document does not load (shown to the operator with the key that fixes it).
    #[error("{0}")]
    Unloadable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl SettingError {
    /// The refusal's stable code.
    pub fn code(&self) -> &'static str {
        match self {
            SettingError::Unknown(_) => "unknown_setting",
            SettingError::Invalid(_) => "invalid_setting",
            SettingError::Owned(_) => "setting_has_command",
            SettingError::Unloadable(_) => "settings_do_not_load",
            SettingError::Store(_) => "store_failed",
        }
    }
}

/// One setting as `hcpx config show` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Setting {
    pub key: String,
    /// The value in the document, or the default when it sets none (`null`: no default, nothing applies).
    pub value: Value,
    /// True when the document does not set it.
    pub default: bool,
}

/// One key whose value a change moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub key: String,
    /// Before (`null`: not set).
    pub old: Value,
    /// After (`null`: not set, so its default).
    pub new: Value,
    /// The default a key that is not set falls back to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// What `hcpx config set|unset` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Changed {
    pub document: &'static str,
    pub key: String,
    /// Each key whose value moved (none: the document already said so, and nothing was written).
    pub changes: Vec<Change>,
    /// An unset that removed one fault of a document that still does not load: why it still does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_invalid: Option<String>,
}

/// Keys of a pack another command sets, with the checks it makes (`allow` too, `hcpx allow`): `hcpx config`
/// unsets them but does not set them.
const OWNED: &[(&str, &str)] = &[
    ("network", "hcpx allow-network ID KIND (it checks the pack declares the kind)"),
    ("hosts", "hcpx allow-host ID HOST (it checks the pack declares the host)"),
    ("tenant_hosts", "hcpx allow-host ID HOST --tenant T (it checks the pack declares the host)"),
];

impl Store {
    /// The settings of `sandbox.json` in force (all, or those under `key`), as the loader reads them (a name
    /// lower-cased, as it applies), defaults filled in and marked (a value equal to its default is marked too).
    /// A stored document that does not load is refused with the reason, as the runtime refuses every call then.
    pub fn settings(&self, key: Option<&str>) -> Result<Vec<Setting>, SettingError> {
        let keys = &*SANDBOX_KEYS;
        let located = match key {
            None => keys.whole(),
            Some(k) => keys.locate(k).map_err(SettingError::Unknown)?,
        };
        let text = self.read_text(SANDBOX)?;
        let place = self.backend.doc_place(SANDBOX);
        doc_value(text.as_deref()).map_err(|e| not_json(&place, &e))?;
        let cfg = match &text {
            Some(t) => SandboxConfig::load(t).map_err(|e| unloadable(&place, &e))?,
            None => SandboxConfig::default(),
        };
        Ok(keys
            .entries(&as_value(&cfg)?, &located)
            .into_iter()
            .map(|(key, set, default)| match set {
                Some(value) => Setting { default: Some(&value) == default.as_ref(), key, value },
                None => Setting { key, value: default.unwrap_or(Value::Null), default: true },
            })
            .collect())
    }

    /// Sets `key` to `value` in `sandbox.json`, as `by`; nothing is written unless the document then loads.
    pub fn setting_set(&self, key: &str, value: Value, by: &Principal) -> Result<Changed, SettingError> {
        let keys = &*SANDBOX_KEYS;
        let located = keys.locate(key).map_err(SettingError::Unknown)?;
        refuse_owned(key, &located.path)?;
        self.check_paths(&located.path, &value)?;
        self.change(key, AuditAction::ConfigSet, by, |doc| {
            put(doc, &located.path, value.clone()).map_err(SettingError::Invalid)?;
            Ok(())
        })
    }

    /// Takes `key` out of `sandbox.json` (back to its default), as `by`. A key the loader does not know is taken
    /// out too when the stored document has it: that is how a typo written by hand is removed.
    pub fn setting_unset(&self, key: &str, by: &Principal) -> Result<Changed, SettingError> {
        let keys = &*SANDBOX_KEYS;
        let path: Vec<String> = match keys.locate(key) {
            Ok(l) => l.path,
            Err(unknown) => {
                let raw: Vec<String> = key.split('.').map(str::to_string).collect();
                let doc = doc_value(self.read_text(SANDBOX)?.as_deref()).unwrap_or(Value::Null);
                if get(&doc, &raw).is_none() {
                    return Err(SettingError::Unknown(unknown));
                }
                raw
            }
        };
        self.change(key, AuditAction::ConfigUnset, by, |doc| {
            remove(doc, &path);
            Ok(())
        })
    }

    /// Reads `sandbox.json` under the lock, applies `edit`, checks the result with the runtime's loader,
    /// writes it when something changed, then records the audit line (after the lock: the file store's audit
    /// append takes it too).
    fn change(
        &self,
        key: &str,
        action: AuditAction,
        by: &Principal,
        edit: impl FnOnce(&mut Value) -> Result<(), SettingError>,
    ) -> Result<Changed, SettingError> {
        let place = self.backend.doc_place(SANDBOX);
        let lock = self.lock()?;
        let text = self.read_text(SANDBOX)?; // uncached: under the lock
        let loaded_before = text.as_deref().map(SandboxConfig::load).transpose();
        let raw_before = doc_value(text.as_deref()).map_err(|e| not_json(&place, &e))?;
        // Compared as the loader writes it back, so a change names only what it moved.
        let before = match &loaded_before {
            Ok(Some(cfg)) => as_value(cfg)?,
            Ok(None) => as_value(&SandboxConfig::default())?,
            Err(_) => raw_before.clone(),
        };
        let mut after = raw_before;
        edit(&mut after)?;
        prune(&mut after);
        let new_text = pretty(&after)?;
        let mut still_invalid = None;
        let after = match SandboxConfig::load(&new_text) {
            Ok(cfg) => {
                self.check_tasks(&cfg)?;
                let cap_before = match &loaded_before {
                    Ok(Some(c)) => c.limits().max_workspace_mb,
                    _ => crate::config::DEFAULT_MAX_WORKSPACE_MB,
                };
                self.check_workspace_cap(&cfg, cap_before)?;
                // The document as the loader reads it: what every other edit writes.
                as_value(&cfg)?
            }
            // Taking a fault out of a document that did not load is allowed even when another remains.
            Err(e) if action == AuditAction::ConfigUnset && loaded_before.is_err() => {
                still_invalid = Some(without_position(&e));
                after
            }
            Err(e) => return Err(self.refusal(key, &place, loaded_before.err(), &e)),
        };
        let changes = diff(&before, &after);
        if changes.is_empty() {
            return Ok(Changed { document: SANDBOX, key: key.to_string(), changes, still_invalid });
        }
        self.write_json(SANDBOX, &after)?;
        drop(lock);
        for c in &changes {
            let rec = AuditRecord {
                action: Some(action),
                args_sha256: crate::model::digest::sha256_hex(new_text.as_bytes()),
                setting: Some(AuditSetting {
                    document: SANDBOX.to_string(),
                    key: c.key.clone(),
                    old: Some(c.old.clone()).filter(|v| !v.is_null()),
                    new: Some(c.new.clone()).filter(|v| !v.is_null()),
                }),
                ..AuditRecord::attributed(by, "", &c.key, crate::pack::Operation::Write)
            };
            self.append_audit(&rec)?;
        }
        Ok(Changed { document: SANDBOX, key: key.to_string(), changes, still_invalid })
    }

    /// Why a change is refused: the value, or a document that did not load before it either.
    fn refusal(&self, key: &str, place: &str, before: Option<String>, reason: &str) -> SettingError {
        let reason = without_position(reason);
        if let Some(was) = before {
            return SettingError::Unloadable(format!(
                "{place} does not load ({}), and this change does not fix it: nothing was written; take the fault out first (`hcpx config unset KEY`, for the key it names)",
                without_position(&was)
            ));
        }
        let takes = SANDBOX_KEYS.locate(key).map(|l| SANDBOX_KEYS.describe(&l)).unwrap_or_default();
        SettingError::Invalid(format!(
            "{key}: the runtime would refuse it ({reason}); nothing was written. {key} takes {takes}"
        ))
    }

    /// A `keep_ms` under the least a client can rely on is refused, as `hcpx tasks --keep-ms` refuses it.
    fn check_tasks(&self, cfg: &SandboxConfig) -> Result<(), SettingError> {
        match cfg.tasks.as_ref().and_then(|t| t.keep_ms) {
            Some(k) if k < crate::tasks::MIN_KEEP_MS => Err(SettingError::Invalid(format!(
                "tasks.keep_ms: {k} is under {}: a result kept for less could be gone before the client asks for it; give at least {}",
                crate::tasks::MIN_KEEP_MS,
                crate::tasks::MIN_KEEP_MS
            ))),
            _ => Ok(()),
        }
    }

    /// A lower `max_workspace_mb` never leaves a stored workspace past it: every call of that pack would be
    /// refused, so it is said now, naming the workspace, as `hcpx activate` says it (a cap kept or raised is
    /// not checked: a change of another key is not held up by a workspace already past the cap).
    fn check_workspace_cap(&self, cfg: &SandboxConfig, cap_before: u64) -> Result<(), SettingError> {
        let cap_mb = cfg.limits().max_workspace_mb;
        if cap_mb >= cap_before || !self.keeps_workspaces() {
            return Ok(());
        }
        match self.workspace_past(None, None, cap_mb)? {
            Some(w) => Err(SettingError::Invalid(format!(
                "max_workspace_mb: {cap_mb} MiB is under what pack {}'s workspace of tenant {} holds already ({} KiB), so every call of it would be refused; give at least {} MiB, or let the pack remove what it no longer needs first",
                w.pack,
                w.tenant,
                w.size / 1024,
                w.mib_needed()
            ))),
            None => Ok(()),
        }
    }

    /// The paths a pack is given (`packs.<id>.read|write|unix_sockets`) are absolute, and never the store or
    /// a directory that holds it, as `hcpx allow-read` checks them.
    fn check_paths(&self, path: &[String], value: &Value) -> Result<(), SettingError> {
        let [packs, _, field] = path else { return Ok(()) };
        if packs != "packs" || !matches!(field.as_str(), "read" | "write" | "unix_sockets") {
            return Ok(());
        }
        for p in value.as_array().into_iter().flatten().filter_map(Value::as_str) {
            crate::config::refuse_read_path(std::path::Path::new(p), self.home())
                .map_err(|e| SettingError::Invalid(format!("{}: {e}", path.join("."))))?;
        }
        Ok(())
    }

    /// The document's text, uncached; `None` when there is none.
    fn read_text(&self, rel: &str) -> Result<Option<String>, StoreError> {
        self.backend.doc_text(rel)
    }
}

/// A key another command sets is refused with that command.
fn refuse_owned(key: &str, path: &[String]) -> Result<(), SettingError> {
    if path.first().is_some_and(|p| p == "packs") && path.len() < 3 {
        return Err(SettingError::Owned(format!(
            "{key}: set a pack's settings one by one (packs.<id>.write, packs.<id>.read, …), each checked as it is set"
        )));
    }
    if path.first().is_some_and(|p| p == "allow") {
        return Err(SettingError::Owned(format!(
            "{key} is set with `hcpx allow BIN…` (it checks each is a bare name, and warns of an interpreter, which runs any code a pack ships); `hcpx config unset {key}` empties it"
        )));
    }
    if let (Some(p), Some(field)) = (path.first(), path.get(2)) {
        if let Some((_, cmd)) = OWNED.iter().find(|(f, _)| p == "packs" && f == field) {
            return Err(SettingError::Owned(format!(
                "{key} is set with `{cmd}`; `hcpx config unset {key}` takes it back"
            )));
        }
    }
    Ok(())
}

/// A stored document that is not a JSON object: no key of it can be changed by command.
fn not_json(place: &str, e: &SettingError) -> SettingError {
    SettingError::Unloadable(format!(
        "{place} is not a JSON object ({e}), so `hcpx config` cannot change a key of it, and every call is refused until it is fixed: correct its text where it is stored (the file, or the `sandbox.json` row of the database's hcpx_documents), keeping a copy first; never remove it: that drops the operator's settings (the allow-list, `require`, `human_approval`, per-pack paths and limits) for the defaults"
    ))
}

fn unloadable(place: &str, reason: &str) -> SettingError {
    SettingError::Unloadable(format!(
        "{place} does not load: {reason}; every call is refused until it does: fix it with `hcpx config set KEY VALUE` or `hcpx config unset KEY` (for the key it names)"
    ))
}

/// A JSON parse error without its ` at line L column C`, for a document this module made (its lines are not the
/// stored ones).
fn without_position(reason: &str) -> String {
    match reason.rfind(" at line ") {
        Some(i) if reason[i..].contains(" column ") => reason[..i].to_string(),
        _ => reason.to_string(),
    }
}

/// The document as JSON (an empty object when there is none).
fn doc_value(text: Option<&str>) -> Result<Value, SettingError> {
    match text {
        None => Ok(Value::Object(Map::new())),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(SettingError::Unloadable("its text is JSON, but not an object".into())),
            Err(e) => Err(SettingError::Unloadable(e.to_string())),
        },
    }
}

fn as_value(cfg: &SandboxConfig) -> Result<Value, SettingError> {
    serde_json::to_value(cfg).map_err(|e| SettingError::Invalid(e.to_string()))
}

fn pretty(v: &Value) -> Result<String, SettingError> {
    serde_json::to_string_pretty(v).map_err(|e| SettingError::Invalid(e.to_string()))
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, p| v.get(p))
}

/// Puts `value` at `path`, making the objects on the way.
fn put(doc: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("a setting needs a key".into());
    };
    let mut at = doc;
    for (i, p) in parents.iter().enumerate() {
        let obj = at.as_object_mut().ok_or_else(|| format!("{} is not an object", path[..i].join(".")))?;
        at = obj.entry(p.clone()).or_insert_with(|| Value::Object(Map::new()));
    }
    let obj = at.as_object_mut().ok_or_else(|| format!("{} is not an object", parents.join(".")))?;
    obj.insert(last.clone(), value);
    Ok(())
}

/// Takes `path` out, and every object it leaves empty.
fn remove(doc: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else { return };
    let Some(obj) = doc.as_object_mut() else { return };
    if rest.is_empty() {
        obj.remove(first);
        return;
    }
    if let Some(child) = obj.get_mut(first) {
        remove(child, rest);
        if child.as_object().is_some_and(Map::is_empty) {
            obj.remove(first);
        }
    }
}

/// Drops the empty objects an edit left.
fn prune(doc: &mut Value) {
    if let Some(obj) = doc.as_object_mut() {
        for v in obj.values_mut() {
            prune(v);
        }
        obj.retain(|_, v| !v.as_object().is_some_and(Map::is_empty));
    }
}

/// Every key whose value differs between `before` and `after`, objects flattened to dotted keys.
fn diff(before: &Value, after: &Value) -> Vec<Change> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    flatten(before, "", &mut a);
    flatten(after, "", &mut b);
    let mut keys: Vec<&String> = a.iter().map(|(k, _)| k).collect();
    keys.extend(b.iter().map(|(k, _)| k).filter(|k| !a.iter().any(|(ka, _)| ka == *k)));
    let find = |l: &[(String, Value)], k: &str| l.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
    keys.into_iter()
        .filter_map(|k| {
            let (old, new) = (find(&a, k), find(&b, k));
            (old != new).then(|| Change {
                key: k.clone(),
                default: SANDBOX_KEYS.default_at(k),
                old: old.unwrap_or(Value::Null),
                new: new.unwrap_or(Value::Null),
            })
        })
        .collect()
}

fn flatten(v: &Value, prefix: &str, out: &mut Vec<(String, Value)>) {
    match v.as_object() {
        Some(obj) if !obj.is_empty() => {
            for (k, child) in obj {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(child, &key, out);
            }
        }
        _ if prefix.is_empty() => {}
        _ => out.push((prefix.to_string(), v.clone())),
    }
}

#[cfg(test)]
mod tests;
