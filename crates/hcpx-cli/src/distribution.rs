//! Packs from and to OCI registries: install, publish, update, lock, trust and keys.

use clap::Subcommand;
use std::path::PathBuf;

use crate::examples;

// `hcpx install DIR|REF [--replace [--keep-workspace]]`, or `hcpx install --locked` (every pack hcp.lock pins).
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The pack directory, or a registry reference: oci://host/repo:tag or oci://host/repo@sha256:…. Without it,
    /// --locked installs every pack the lock file pins.
    #[arg(required_unless_present = "locked", value_name = "DIR|REF")]
    pub dir: Option<PathBuf>,
    /// Replace a pack of the same id installed from another directory (it is deactivated).
    #[arg(long)]
    pub replace: bool,
    /// With --replace: keep the replaced pack's workspace for the new one.
    #[arg(long, requires = "replace")]
    pub keep_workspace: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
    /// A registry pack no trusted key signed may be installed (written to the audit log).
    #[arg(long)]
    pub allow_unsigned: bool,
    /// Install only the digest and signer hcp.lock pins for this reference; with no reference, every pack it
    /// pins, all or nothing.
    #[arg(long)]
    pub locked: bool,
    /// The lock file read by --locked.
    #[arg(long, default_value = "hcp.lock", requires = "locked")]
    pub lock_file: PathBuf,
    /// For a pack already installed from the same repository with other content: apply it after reviewing the
    /// changes the install shows (as `hcpx update` does).
    #[arg(long)]
    pub yes: bool,
    /// For a pack already installed from the same repository: install a build signed before the installed one
    /// (a rollback); refused without it.
    #[arg(long)]
    pub allow_downgrade: bool,
}

// How a registry is reached.
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Allow plain HTTP to a registry that is not on loopback (loopback registries always may).
    #[arg(long)]
    pub insecure: bool,
    /// Limit for each registry request, in milliseconds.
    #[arg(long = "registry-timeout", value_name = "MS", default_value_t = 30_000)]
    pub timeout_ms: u64,
}

impl RegistryArgs {
    pub fn options(&self) -> hcpx_registry::Options {
        hcpx_registry::Options {
            insecure: self.insecure,
            timeout: std::time::Duration::from_millis(self.timeout_ms.max(1)),
        }
    }
}

// `hcpx publish DIR REF`.
#[derive(Debug, clap::Args)]
pub struct PublishArgs {
    /// The pack directory.
    pub dir: PathBuf,
    /// Where to push it: oci://host/repo:tag.
    pub reference: String,
    /// Sign the manifest digest with this P-256 private key (PEM), as cosign does.
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
    /// Refuse to publish when hcpx check scores the pack below this.
    #[arg(long, default_value_t = 90)]
    pub min_score: u32,
    /// Limit for each eval case of the check, in milliseconds.
    #[arg(long, default_value_t = hcpx_author::eval::DEFAULT_TIMEOUT_MS)]
    pub timeout: u64,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

// `hcpx update ID`.
#[derive(Debug, clap::Args)]
pub struct UpdateArgs {
    /// The installed pack.
    pub id: String,
    /// The tag to move to (default: the tag it was installed from, as it is now).
    #[arg(long)]
    pub tag: Option<String>,
    /// Apply the update after reviewing the changes it shows.
    #[arg(long)]
    pub yes: bool,
    /// Move to a build signed before the installed one (a rollback); refused without it.
    #[arg(long)]
    pub allow_downgrade: bool,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

// `hcpx lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Where to write the lock file.
    #[arg(long, default_value = "hcp.lock")]
    pub file: PathBuf,
}

// `hcpx trust …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum TrustCmd {
    /// Trust a public key (PEM) to sign the packs under a registry prefix.
    #[command(after_help = examples::TRUST_ADD)]
    Add {
        /// A name for the key (replaces a key of that name).
        name: String,
        /// The public key, PEM (a private key's public half is taken).
        key: PathBuf,
        /// The references it may sign: host[:port] or host[:port]/path.
        #[arg(long)]
        prefix: String,
    },
    /// Stop trusting a key.
    #[command(after_help = examples::TRUST_REMOVE)]
    Remove {
        /// The key's name.
        name: String,
    },
    /// The trusted keys.
    #[command(after_help = examples::TRUST_LIST)]
    List,
}

// `hcpx key …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum KeyCmd {
    /// Write a new P-256 private key (PKCS#8 PEM, owner-only) and its public key beside it (.pub).
    #[command(after_help = examples::KEY_GENERATE)]
    Generate {
        /// Where to write the private key; the public key goes to the same path with .pub added.
        path: PathBuf,
    },
}
