//! Registry credentials from the docker config file, as docker, oras and cosign read them: `$DOCKER_CONFIG/
//! config.json` (else `~/.docker/config.json`), its `auths` entries, then `credHelpers` per registry and the
//! `credsStore` helper (`docker-credential-<name> get`, the server on stdin). No entry means anonymous.

use base64::Engine as _;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::DistError;

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    Anonymous,
    Basic { username: String, password: String },
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Auth::Anonymous => f.write_str("Anonymous"),
            Auth::Basic { username, .. } => write!(f, "Basic({username}, <secret>)"),
        }
    }
}

impl Auth {
    pub(crate) fn client(&self) -> oci_client::secrets::RegistryAuth {
        match self {
            Auth::Anonymous => oci_client::secrets::RegistryAuth::Anonymous,
            Auth::Basic { username, password } => {
                oci_client::secrets::RegistryAuth::Basic(username.clone(), password.clone())
            }
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

#[derive(Debug, Deserialize)]
struct HelperAnswer {
    #[serde(rename = "Username")]
    username: String,
    #[serde(rename = "Secret")]
    secret: String,
}

/// The docker config file: `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`.
pub fn config_path() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(d).join("config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker").join("config.json"))
}

/// `https://host/v1/` and `host` name the same registry.
fn normalize(key: &str) -> &str {
    let k = key.strip_prefix("https://").or_else(|| key.strip_prefix("http://")).unwrap_or(key);
    k.split('/').next().unwrap_or(k)
}

/// The credentials for `registry` (`host[:port]`).
pub fn for_registry(registry: &str) -> Result<Auth, DistError> {
    let Some(path) = config_path() else { return Ok(Auth::Anonymous) };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Auth::Anonymous),
        Err(e) => return Err(DistError::Io { path: path.display().to_string(), source: e }),
    };
    let config: DockerConfig = serde_json::from_str(&text).map_err(|e| DistError::Auth {
        registry: registry.to_string(),
        reason: format!("{} is not valid JSON ({e}); fix or remove it", path.display()),
    })?;
    if let Some(entry) = config.auths.iter().find(|(k, _)| normalize(k) == registry).map(|(_, v)| v) {
        if let Some(a) = entry_auth(registry, entry)? {
            return Ok(a);
        }
    }
    let helper = config.cred_helpers.iter().find(|(k, _)| normalize(k) == registry).map(|(_, v)| v.clone());
    match helper.or(config.creds_store) {
        Some(h) => run_helper(&h, registry),
        None => Ok(Auth::Anonymous),
    }
}

fn entry_auth(registry: &str, e: &AuthEntry) -> Result<Option<Auth>, DistError> {
    if let Some(b64) = e.auth.as_deref().filter(|s| !s.is_empty()) {
        let bad = || DistError::Auth {
            registry: registry.to_string(),
            reason: "its `auth` entry in the docker config is not base64 of user:password; log in again"
                .into(),
        };
        let raw = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|_| bad())?;
        let text = String::from_utf8(raw).map_err(|_| bad())?;
        let (u, p) = text.split_once(':').ok_or_else(bad)?;
        return Ok(Some(Auth::Basic { username: u.to_string(), password: p.to_string() }));
    }
    if let (Some(u), Some(p)) = (&e.username, &e.password) {
        return Ok(Some(Auth::Basic { username: u.clone(), password: p.clone() }));
    }
    if let Some(t) = &e.identitytoken {
        return Ok(Some(Auth::Basic { username: "<token>".into(), password: t.clone() }));
    }
    Ok(None)
}

/// Runs `docker-credential-<helper> get` with the registry on stdin; "credentials not found" is anonymous.
fn run_helper(helper: &str, registry: &str) -> Result<Auth, DistError> {
    if helper.is_empty() || !helper.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(DistError::Auth {
            registry: registry.to_string(),
            reason: format!("credential helper name {helper:?} in the docker config is not a plain name"),
        });
    }
    let bin = format!("docker-credential-{helper}");
    let fail = |reason: String| DistError::Auth { registry: registry.to_string(), reason };
    // The helper needs none of the store's secrets: the database's connection string and password stay here.
    let mut child = Command::new(&bin)
        .arg("get")
        .env_remove("HCP_STORE")
        .env_remove("PGPASSWORD")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            fail(format!("cannot run the credential helper {bin} ({e}); install it or fix the docker config"))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(registry.as_bytes());
    }
    let out = child.wait_with_output().map_err(|e| fail(format!("{bin} failed: {e}")))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        if msg.to_lowercase().contains("credentials not found") {
            return Ok(Auth::Anonymous);
        }
        return Err(fail(format!("{bin} get failed: {}", msg.trim())));
    }
    let a: HelperAnswer = serde_json::from_slice(&out.stdout)
        .map_err(|e| fail(format!("{bin} answered something other than its JSON ({e})")))?;
    Ok(Auth::Basic { username: a.username, password: a.secret })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn entries_decode_and_keys_normalize() {
        assert_eq!(normalize("https://index.docker.io/v1/"), "index.docker.io");
        assert_eq!(normalize("127.0.0.1:5000"), "127.0.0.1:5000");
        let e = AuthEntry { auth: Some("dXNlcjpwYTpzcw==".into()), ..Default::default() };
        assert_eq!(
            entry_auth("r", &e).unwrap(),
            Some(Auth::Basic { username: "user".into(), password: "pa:ss".into() })
        );
        assert!(entry_auth("r", &AuthEntry { auth: Some("!!".into()), ..Default::default() }).is_err());
        assert_eq!(entry_auth("r", &AuthEntry::default()).unwrap(), None);
        assert!(run_helper("../evil", "r").is_err());
        assert!(format!("{:?}", Auth::Basic { username: "u".into(), password: "secret".into() })
            .contains("<secret>"));
    }
}
