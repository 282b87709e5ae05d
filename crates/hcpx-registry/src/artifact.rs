//! The OCI artifact of a pack (docs/distribution.md): one image manifest whose layers are the pack's files,
//! each named by its `org.opencontainers.image.title`, the component an `application/wasm` layer. Built
//! byte-for-byte reproducibly (no timestamps, files in path order), and read back strictly: a manifest of
//! another type, a layer name that could leave the pack, or sizes past a pack's bounds are refused before
//! one byte of a layer is fetched.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::reference::is_sha256_digest;
use super::DistError;
use crate::model::digest::sha256_hex;
use crate::store::packs::{MAX_PACK_BYTES, MAX_PACK_ENTRIES};

/// The OCI image manifest media type.
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// The `artifactType` of a pack.
pub const ARTIFACT_TYPE: &str = "application/vnd.hcp.pack.v1";
/// The config blob's media type: the pack's id, kind and the bins it needs.
pub const CONFIG: &str = "application/vnd.hcp.pack.config.v1+json";
pub const SURFACE: &str = "application/vnd.hcp.pack.surface.v1+json";
pub const POLICY: &str = "application/vnd.hcp.pack.policy.v1+json";
pub const SKILL: &str = "application/vnd.hcp.pack.skill.v1+markdown";
pub const EVALS: &str = "application/vnd.hcp.pack.eval.v1+json";
/// A composite's component: the standard Wasm layer type, so other Wasm tools can pull it.
pub const WASM: &str = "application/wasm";
/// Any other file of the pack (fixtures, a wrap's scripts).
pub const FILE: &str = "application/vnd.hcp.pack.file.v1";
/// The layer annotation naming the file's path in the pack (the ORAS convention).
pub const TITLE: &str = "org.opencontainers.image.title";
/// The layer annotation marking an executable file (`"true"`).
pub const EXECUTABLE: &str = "dev.hcp.pack.executable";
/// Manifest annotations.
pub const PACK_ID: &str = "dev.hcp.pack.id";
pub const PACK_KIND: &str = "dev.hcp.pack.kind";
/// The longest manifest read, in bytes.
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

/// An OCI descriptor as the manifest carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: i64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest, the fields hcpx writes and reads (others a registry adds are ignored).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    pub layers: Vec<Descriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The config blob of a pack artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackConfig {
    pub id: String,
    pub kind: String,
    /// Bare bins a wrap pack runs from the host's PATH; the artifact never carries them.
    #[serde(default)]
    pub bins: Vec<String>,
}

/// One blob to push: its descriptor and bytes.
#[derive(Debug, Clone)]
pub struct Blob {
    pub descriptor: Descriptor,
    pub bytes: Vec<u8>,
}

/// A built artifact: config, layers and the manifest bytes whose SHA-256 is the pack's digest.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub config: Blob,
    pub layers: Vec<Blob>,
    pub manifest: Vec<u8>,
    pub digest: String,
}

fn descriptor(media_type: &str, bytes: &[u8], annotations: BTreeMap<String, String>) -> Descriptor {
    Descriptor {
        media_type: media_type.to_string(),
        digest: format!("sha256:{}", sha256_hex(bytes)),
        size: bytes.len() as i64,
        annotations,
    }
}

/// The layer media type of the file at `rel` in a pack whose component is `component`.
fn media_type(rel: &str, component: Option<&str>) -> &'static str {
    match rel {
        "surface.json" => SURFACE,
        "policy.json" => POLICY,
        "HARNESS.md" => SKILL,
        "hcp.eval.json" => EVALS,
        _ if Some(rel) == component => WASM,
        _ => FILE,
    }
}

/// Builds the artifact of the pack staged at `dir` (a copy made by the store's own copy, so links and bounds
/// were already applied). `id`, `kind`, `bins` and `component` come from the loaded pack.
pub fn build(dir: &Path, config: &PackConfig, component: Option<&str>) -> Result<Artifact, DistError> {
    use std::os::unix::fs::PermissionsExt;
    let mut files = Vec::new();
    collect(dir, "", &mut files)?;
    files.sort();
    let mut layers = Vec::new();
    for rel in files {
        let path = dir.join(&rel);
        let bytes = std::fs::read(&path)
            .map_err(|e| DistError::Io { path: path.display().to_string(), source: e })?;
        let exec = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o111 != 0).unwrap_or(false);
        let mut ann = BTreeMap::from([(TITLE.to_string(), rel.clone())]);
        if exec {
            ann.insert(EXECUTABLE.to_string(), "true".to_string());
        }
        layers.push(Blob { descriptor: descriptor(media_type(&rel, component), &bytes, ann), bytes });
    }
    let config_bytes = serde_json::to_vec(config).map_err(|e| DistError::Artifact(e.to_string()))?;
    let config = Blob { descriptor: descriptor(CONFIG, &config_bytes, BTreeMap::new()), bytes: config_bytes };
    let manifest = Manifest {
        schema_version: 2,
        media_type: MANIFEST.to_string(),
        artifact_type: Some(ARTIFACT_TYPE.to_string()),
        config: config.descriptor.clone(),
        layers: layers.iter().map(|l| l.descriptor.clone()).collect(),
        annotations: BTreeMap::from([
            (PACK_ID.to_string(), config_id(&config)),
            (PACK_KIND.to_string(), kind_of(&config)),
        ]),
    };
    let manifest = serde_json::to_vec(&manifest).map_err(|e| DistError::Artifact(e.to_string()))?;
    let digest = format!("sha256:{}", sha256_hex(&manifest));
    Ok(Artifact { config, layers, manifest, digest })
}

fn config_id(b: &Blob) -> String {
    serde_json::from_slice::<PackConfig>(&b.bytes).map(|c| c.id).unwrap_or_default()
}

fn kind_of(b: &Blob) -> String {
    serde_json::from_slice::<PackConfig>(&b.bytes).map(|c| c.kind).unwrap_or_default()
}

fn collect(root: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), DistError> {
    let dir = if rel.is_empty() { root.to_path_buf() } else { root.join(rel) };
    let entries =
        std::fs::read_dir(&dir).map_err(|e| DistError::Io { path: dir.display().to_string(), source: e })?;
    for e in entries {
        let e = e.map_err(|x| DistError::Io { path: dir.display().to_string(), source: x })?;
        let name = e.file_name().to_string_lossy().to_string();
        let child = if rel.is_empty() { name } else { format!("{rel}/{name}") };
        let t = e.file_type().map_err(|x| DistError::Io { path: child.clone(), source: x })?;
        if t.is_dir() {
            collect(root, &child, out)?;
        } else if t.is_file() {
            check_title(&child)?;
            out.push(child);
        }
    }
    Ok(())
}

/// A layer title is a relative path of plain components: no `..`, no `.`, no leading `/`, no empty component,
/// no control or backslash characters. Anything else could write outside the pack, so it is refused.
pub fn check_title(title: &str) -> Result<(), DistError> {
    let ok = !title.is_empty()
        && title.len() <= 1024
        && !title.starts_with('/')
        && title.split('/').all(|c| {
            !c.is_empty()
                && c != "."
                && c != ".."
                && c.len() <= 255
                && c.chars().all(|ch| !ch.is_control() && ch != '\\')
        });
    if ok {
        Ok(())
    } else {
        Err(DistError::Artifact(format!(
            "layer name {title:?} is not a plain relative path inside the pack (no '..', '.', leading '/' or empty parts); the artifact is refused"
        )))
    }
}

/// Parses and checks manifest bytes: an OCI image manifest of a pack, every layer a sha256 blob named by a
/// plain relative path, no name twice (nor a file where another needs a directory), and the declared sizes
/// within a pack's bounds.
pub fn parse_manifest(bytes: &[u8]) -> Result<Manifest, DistError> {
    let m: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| DistError::Artifact(format!("the manifest is not an OCI image manifest: {e}")))?;
    if m.schema_version != 2 || m.media_type != MANIFEST {
        return Err(DistError::Artifact(format!(
            "the manifest's media type is {:?}, not {MANIFEST}; this reference is not an hcpx pack",
            m.media_type
        )));
    }
    if m.artifact_type.as_deref() != Some(ARTIFACT_TYPE) || m.config.media_type != CONFIG {
        return Err(DistError::Artifact(format!(
            "the artifact type is {:?}, not {ARTIFACT_TYPE}; this reference is not an hcpx pack (publish one with hcpx publish DIR REF)",
            m.artifact_type.as_deref().unwrap_or("none")
        )));
    }
    if m.layers.len() > MAX_PACK_ENTRIES {
        return Err(DistError::Artifact(format!(
            "the manifest lists {} layers; a pack holds at most {MAX_PACK_ENTRIES} files",
            m.layers.len()
        )));
    }
    let mut total: u64 = 0;
    let mut names = BTreeSet::new();
    for d in std::iter::once(&m.config).chain(&m.layers) {
        if !is_sha256_digest(&d.digest) {
            return Err(DistError::Artifact(format!("layer digest {:?} is not sha256:<64 hex>", d.digest)));
        }
        let size = u64::try_from(d.size)
            .map_err(|_| DistError::Artifact(format!("layer {} declares a negative size", d.digest)))?;
        total = total.saturating_add(size);
    }
    if total > MAX_PACK_BYTES || u64::try_from(m.config.size).unwrap_or(u64::MAX) > 64 * 1024 {
        return Err(DistError::Artifact(format!(
            "the artifact declares {total} bytes; a pack holds at most {MAX_PACK_BYTES}"
        )));
    }
    for d in &m.layers {
        let title = d.annotations.get(TITLE).ok_or_else(|| {
            DistError::Artifact(format!("layer {} has no {TITLE} annotation naming its file", d.digest))
        })?;
        check_title(title)?;
        if !names.insert(title.clone()) {
            return Err(DistError::Artifact(format!("layer name {title:?} appears twice")));
        }
    }
    for n in &names {
        let mut prefix = String::new();
        for part in n.split('/') {
            if !prefix.is_empty() && names.contains(&prefix) {
                return Err(DistError::Artifact(format!(
                    "{prefix:?} is a file and a directory in the artifact"
                )));
            }
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn titles_that_could_leave_the_pack_are_refused() {
        for bad in ["../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a\\..\\b", "", "a/\u{0}"] {
            assert!(check_title(bad).is_err(), "{bad:?} passed");
        }
        for ok in ["surface.json", "bin/ledger.mjs", "fixtures/a.b/c..d"] {
            check_title(ok).unwrap();
        }
    }

    #[test]
    fn a_manifest_of_another_type_or_with_a_file_as_a_directory_is_refused() {
        let d = |t: &str| Descriptor {
            media_type: FILE.into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 1,
            annotations: BTreeMap::from([(TITLE.to_string(), t.to_string())]),
        };
        let mut m = Manifest {
            schema_version: 2,
            media_type: MANIFEST.into(),
            artifact_type: Some(ARTIFACT_TYPE.into()),
            config: Descriptor { media_type: CONFIG.into(), ..d("c") },
            layers: vec![d("a"), d("b/c")],
            annotations: BTreeMap::new(),
        };
        parse_manifest(&serde_json::to_vec(&m).unwrap()).unwrap();
        m.layers.push(d("a/x"));
        assert!(parse_manifest(&serde_json::to_vec(&m).unwrap()).is_err());
        m.layers.pop();
        m.layers[0].size = -1;
        assert!(parse_manifest(&serde_json::to_vec(&m).unwrap()).is_err());
        m.layers[0].size = 1;
        m.artifact_type = Some("application/vnd.other".into());
        assert!(parse_manifest(&serde_json::to_vec(&m).unwrap()).is_err());
    }
}
