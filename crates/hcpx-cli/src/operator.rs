//! The operator's commands: the store, Sense, Principals, grants, reach, credentials, audit and connections.

use clap::Subcommand;
use std::path::PathBuf;

use crate::examples;

// `hcpx store …` (docs/hosting.md).
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum StoreCmd {
    /// Apply the schema migrations this hcpx knows to the PostgreSQL store named by HCP_STORE, and print its version.
    #[command(after_help = examples::STORE_MIGRATE)]
    Migrate,
    /// Write the PostgreSQL store named by HCP_STORE as a file store in DIR (missing or empty), with each
    /// tenant's audit chain verbatim in DIR/audit/.
    #[command(after_help = examples::STORE_EXPORT)]
    Export {
        /// Where to write the file store.
        dir: PathBuf,
    },
    /// Load the file store at DIR (an HCP_HOME, or an export) into the empty PostgreSQL store named by HCP_STORE.
    #[command(after_help = examples::STORE_IMPORT)]
    Import {
        /// The file store to read.
        dir: PathBuf,
    },
}

// `hcpx sense …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SenseCmd {
    /// Record an upstream push of PACK's declared trigger REF; the payload is JSON on stdin (empty: `{}`).
    #[command(after_help = examples::SENSE_EMIT)]
    Emit {
        /// The pack id.
        pack: String,
        /// The trigger (a `stimulusTriggers` ref of the pack).
        #[arg(value_name = "REF")]
        reference: String,
    },
    /// Print the events of the packs you hold sense.announce for, oldest first; with --follow, keep printing
    /// new ones until interrupted.
    #[command(after_help = examples::SENSE_WATCH)]
    Watch {
        /// Only this pack's events (denied without sense.announce for it).
        #[arg(long)]
        pack: Option<String>,
        /// Only events after this id (the last one you saw), to resume.
        #[arg(long, value_name = "ID", default_value_t = 0)]
        after: u64,
        /// Keep watching for new events (polls the store) until interrupted; with --json, one JSON line per event.
        #[arg(long)]
        follow: bool,
    },
}

// `hcpx principal …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PrincipalCmd {
    /// Add a Principal and print its bearer token (shown once; only its SHA-256 is kept).
    #[command(after_help = examples::PRINCIPAL_ADD)]
    Add {
        /// The Principal's id.
        id: String,
        /// Its tenant: its workspaces, credentials and audit rows are apart from every other tenant's.
        #[arg(long)]
        tenant: String,
        /// A grant, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB` (e.g. `verb.exec.read:*`). Repeat for several.
        #[arg(long = "grant")]
        grants: Vec<String>,
        /// May read the runtime's health (`GET /v1/doctor`).
        #[arg(long)]
        operator: bool,
        /// May approve or refuse its tenant's pending approvals over HTTP (never its own calls').
        #[arg(long)]
        approver: bool,
        /// Its MCP client is a person's own: with `--approver`, the person's answer to the approval card that
        /// client shows counts as an approval of its own call (`sandbox.json` `human_approval`). Vouch for it
        /// only where a person, never a model, answers the client's questions.
        #[arg(long, requires = "approver")]
        person: bool,
    },
    /// Remove a Principal; its token stops working at once.
    #[command(after_help = examples::PRINCIPAL_RM)]
    Rm {
        /// The Principal's id.
        id: String,
    },
    /// The Principals, their tenants and grants (never tokens).
    #[command(after_help = examples::PRINCIPAL_LIST)]
    List,
    /// Give a Principal more grants; its token is unchanged.
    #[command(after_help = examples::PRINCIPAL_GRANT)]
    Grant {
        /// The Principal's id.
        id: String,
        /// Grants, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
        #[arg(required = true)]
        grants: Vec<String>,
    },
    /// Take grants from a Principal; every face refuses what they covered at once.
    #[command(after_help = examples::PRINCIPAL_REVOKE)]
    Revoke {
        /// The Principal's id.
        id: String,
        /// Grants, `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
        #[arg(required = true)]
        grants: Vec<String>,
    },
}

// `hcpx auth issuer …`: the OAuth issuers a served runtime takes JWT access tokens from (issuers.json).
#[derive(Debug, Subcommand)]
pub enum AuthCmd {
    /// Manage the OAuth 2.1 authorization servers whose JWT access tokens `hcpx serve` accepts (issuers.json).
    #[command(subcommand, after_help = examples::AUTH_ISSUER)]
    Issuer(IssuerCmd),
}

// `hcpx auth issuer add|list|remove`.
#[derive(Debug, Subcommand)]
pub enum IssuerCmd {
    /// Accept the JWT access tokens of ISSUER made for this server (`aud` = --audience), mapping their claims to a
    /// Principal: its id, its tenant, its grants by scope, and its roles.
    #[command(after_help = examples::AUTH_ISSUER_ADD)]
    Add(Box<IssuerAdd>),
    /// The issuers and how each maps its tokens' claims.
    #[command(after_help = examples::AUTH_ISSUER_LIST)]
    List,
    /// Stop accepting an issuer's tokens; they stop working at once.
    #[command(after_help = examples::AUTH_ISSUER_REMOVE)]
    Remove {
        /// The issuer identifier, as `hcpx auth issuer list` shows it.
        #[arg(value_name = "URL")]
        issuer: String,
    },
}

// `hcpx auth issuer add`.
#[derive(Debug, clap::Args)]
pub struct IssuerAdd {
    /// The issuer identifier (an https URL); a token's `iss` must be exactly this.
    #[arg(value_name = "URL")]
    pub issuer: String,
    /// This server's resource identifier at the issuer (RFC 8707), e.g. https://hcp.example.com/mcp; a
    /// token's `aud` must hold it.
    #[arg(long, value_name = "RESOURCE")]
    pub audience: String,
    /// The claim naming the Principal (default `sub`).
    #[arg(long, value_name = "CLAIM")]
    pub principal_claim: Option<String>,
    /// The one tenant of every Principal of this issuer.
    #[arg(long, conflicts_with = "tenant_claim", required_unless_present = "tenant_claim")]
    pub tenant: Option<String>,
    /// The claim naming each Principal's tenant; it must be one of --tenants.
    #[arg(long, value_name = "CLAIM", requires = "tenants")]
    pub tenant_claim: Option<String>,
    /// The tenants this issuer may speak for (with --tenant-claim), comma-separated.
    #[arg(long, value_delimiter = ',', requires = "tenant_claim")]
    pub tenants: Vec<String>,
    /// What a scope gives, `SCOPE=GRANT` with a grant as `hcpx principal add --grant` takes it
    /// (e.g. `hcp.read=verb.exec.read:*`). Repeat for several grants and scopes.
    #[arg(long = "scope", value_name = "SCOPE=GRANT")]
    pub scopes: Vec<String>,
    /// The scope that makes a Principal an operator (`GET /metrics`, `/v1/doctor`).
    #[arg(long, value_name = "SCOPE")]
    pub operator_scope: Option<String>,
    /// The scope that makes a Principal an approver of its tenant's pending approvals.
    #[arg(long, value_name = "SCOPE")]
    pub approver_scope: Option<String>,
    /// The scope that marks a Principal's MCP client as a person's own (with --approver-scope; vouch for it
    /// only where a person, never a model, answers that client's questions).
    #[arg(long, value_name = "SCOPE", requires = "approver_scope")]
    pub person_scope: Option<String>,
    /// Replace the row of the same issuer.
    #[arg(long)]
    pub replace: bool,
}

// `hcpx audit [--pack ID] [--since WHEN] [--limit N]`, or `hcpx audit verify [--head HASH]`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub action: Option<AuditCmd>,
    /// Only calls of this pack.
    #[arg(long)]
    pub pack: Option<String>,
    /// Only outgoing requests of wrap calls (their egress rows).
    #[arg(long)]
    pub egress: bool,
    /// Only calls at or after WHEN: a time (`2026-01-31`, `2026-01-31T09:00:00Z`) or an age (`90m`, `2h`, `7d`).
    #[arg(long)]
    pub since: Option<String>,
    /// Only the last N calls (after the other filters).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only this tenant's calls (a PostgreSQL store reads that tenant's chain alone).
    #[arg(long)]
    pub tenant: Option<String>,
}

// `hcpx connect PACK [--revoke] [-- words…]`.
#[derive(Debug, clap::Args)]
pub struct ConnectArgs {
    /// The pack whose Binding to link.
    pub id: String,
    /// Arguments of the connect command, as for exec (`provider=github`).
    pub words: Vec<String>,
    /// Take the link back: calls of every pack of the family are refused until a connect succeeds again (the
    /// stored credential is kept; `hcpx credential rm` removes it).
    #[arg(long, conflicts_with = "words")]
    pub revoke: bool,
}

// `hcpx audit …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum AuditCmd {
    /// Check the audit chain: exit 0 when every line follows the one before, from the genesis to the recorded
    /// head; 1 naming the first broken link (an edited, deleted, inserted or moved line, a cut tail, an
    /// emptied log).
    #[command(after_help = examples::AUDIT_VERIFY)]
    Verify(AuditVerifyArgs),
}

// `hcpx audit verify [--head HASH]`.
#[derive(Debug, clap::Args)]
pub struct AuditVerifyArgs {
    /// A head recorded earlier, elsewhere (the `head` a past verify printed): it must still be a line of the
    /// chain, so a log rewritten together with audit.head is caught too.
    #[arg(long, value_name = "HASH")]
    pub head: Option<String>,
    /// Only this tenant's chain (a PostgreSQL store keeps one chain per tenant).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Verify an exported chain (`hcpx store export` writes DIR/audit/TENANT.log with its .head beside it)
    /// instead of the store's.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
}

// `hcpx grant [GRANT…]`.
#[derive(Debug, clap::Args)]
pub struct GrantArgs {
    /// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB` (as `hcpx principal add --grant` takes it), e.g.
    /// `verb.exec.read:*` or `verb.exec.write:ledger:transfer`.
    pub grants: Vec<String>,
    /// Hold only the grants named: every other grant is taken away (and a grants.json that does not parse is
    /// replaced). Without it a grant only ever adds.
    #[arg(long, requires = "grants")]
    pub only: bool,
}

// `hcpx revoke GRANT…`.
#[derive(Debug, clap::Args)]
pub struct RevokeArgs {
    /// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`: a grant held, or some commands of one.
    #[arg(required = true)]
    pub grants: Vec<String>,
}

// `hcpx allow-read PACK PATH…` / `hcpx disallow-read PACK [PATH…]`.
#[derive(Debug, clap::Args)]
pub struct ReadArgs {
    /// The pack id.
    pub pack: String,
    /// Absolute paths (a directory covers what is beneath it), e.g. /sys.
    pub paths: Vec<PathBuf>,
}

// `hcpx tasks [--after-ms MS] [--keep-ms MS]`.
#[derive(Debug, clap::Args)]
pub struct TasksArgs {
    /// Milliseconds a served call runs before it becomes a task (MCP clients that take tasks, `Prefer:
    /// respond-async` over HTTP); default 10000.
    #[arg(long, value_name = "MS")]
    pub after_ms: Option<u64>,
    /// Milliseconds a task and its result are kept once it ended (at least 1000); default 3600000.
    #[arg(long, value_name = "MS")]
    pub keep_ms: Option<u64>,
}

// `hcpx allow-network PACK KIND…` / `hcpx disallow-network PACK [KIND…]`.
#[derive(Debug, clap::Args)]
pub struct NetworkArgs {
    /// The pack id.
    pub pack: String,
    /// `inet` (TCP and UDP over IPv4 and IPv6) or `netlink` (interfaces, addresses, routes).
    pub kinds: Vec<String>,
}

// `hcpx allow-host PACK HOST… [--tenant T]` / `hcpx disallow-host PACK [HOST…] [--tenant T]`.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// The pack id.
    pub pack: String,
    /// Hosts as the pack declares them in `hosts`: `api.example.com`, `api.example.com:8443`,
    /// `http://api.example.com`, `'*.example.com'`.
    pub hosts: Vec<String>,
    /// Only this tenant's calls (a tenant of a Principal, or `local`); without it, every tenant's.
    #[arg(long)]
    pub tenant: Option<String>,
}

// `hcpx credential …`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum CredentialCmd {
    /// Store FIELD of FAMILY, reading the value from stdin.
    #[command(after_help = examples::CREDENTIAL_SET)]
    Set {
        /// The credential family (`binding.family`).
        family: String,
        /// The field (`{{binding.FIELD}}` in a pack's agent_env).
        field: String,
        /// Store it for one Principal (`user` Binding) instead of the whole family (`local`).
        #[arg(long)]
        principal: Option<String>,
        /// The tenant whose hub holds it (a served runtime's; `local` is the local user's).
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Remove a field, or the whole family.
    #[command(after_help = examples::CREDENTIAL_RM)]
    Rm {
        /// The credential family.
        family: String,
        /// One field; without it, the whole family.
        field: Option<String>,
        /// The Principal whose credential to remove (`user` Binding).
        #[arg(long)]
        principal: Option<String>,
        /// The tenant whose hub holds it.
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Families and field names (never values).
    #[command(after_help = examples::CREDENTIAL_LIST)]
    List {
        /// The tenant whose hub to list.
        #[arg(long, default_value = "local")]
        tenant: String,
    },
    /// Let packs use FAMILY's credentials (the pack named like the family owns it already).
    #[command(after_help = examples::CREDENTIAL_ALLOW)]
    Allow {
        /// The credential family.
        family: String,
        /// Pack ids.
        #[arg(required = true)]
        packs: Vec<String>,
    },
    /// Stop packs from using FAMILY's credentials.
    #[command(after_help = examples::CREDENTIAL_DISALLOW)]
    Disallow {
        /// The credential family.
        family: String,
        /// Pack ids.
        #[arg(required = true)]
        packs: Vec<String>,
    },
    /// Re-seal every credential of the PostgreSQL store under the key in FILE (then point HCP_SEAL_KEY_FILE at it).
    #[command(after_help = examples::CREDENTIAL_ROTATE_KEY)]
    RotateKey {
        /// The new key file: 32 random bytes, readable by its owner only.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
}

// `hcpx config show|set|unset`.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum ConfigCmd {
    /// The operator settings in force (sandbox.json), each marked when it is a default; or those under KEY.
    #[command(after_help = examples::CONFIG_SHOW)]
    Show {
        /// A dotted key (`timeout_ms`, `human_approval`, `tasks.after_ms`, `packs.<id>.write`).
        key: Option<String>,
    },
    /// Set a setting: checked by the runtime's own loader before anything is written, shown old → new, audited.
    #[command(after_help = examples::CONFIG_SET)]
    Set {
        /// A dotted key (`timeout_ms`, `human_approval.commands`, `tasks.keep_ms`, `egress.hosts.<name>`).
        key: String,
        /// The value: read as JSON when it is JSON (`30000`, `false`, `["/srv/data"]`), else as a string (`full`).
        #[arg(allow_hyphen_values = true)]
        value: String,
    },
    /// Take a setting back to its default (a key written by hand with a typo is taken out too).
    #[command(after_help = examples::CONFIG_UNSET)]
    Unset {
        /// A dotted key.
        key: String,
    },
}
