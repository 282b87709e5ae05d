//! The operator's half of `doctor`: where the store is and how it fares — the back end, the database (never its
//! password), the schema version, whether this process's seal key opens every sealed row, the replicas of
//! `hcpx serve` seen lately and the seal key each holds, each tenant's audit chain, and `human_approval`. Only
//! the operator sees it (the CLI, `hcp.doctor` run from it, `GET /v1/doctor`): it names tenants, hosts
//! and addresses a served tenant has no business with.

use serde::Serialize;
use std::path::PathBuf;

use super::report::Health;
use crate::store::chain::ChainVerdict;
use crate::store::config::HumanApproval;
use crate::store::pg::fleet::{DbPlace, ReplicaRow, SealCheck, QUIET_AFTER};
use crate::store::Store;

/// Where the store is and how it fares.
#[derive(Debug, Clone, Serialize)]
pub struct StoreFacts {
    /// `files` or `postgres`.
    pub backend: &'static str,
    /// `HCP_HOME`: the store (files), or this process's local cache (postgres).
    pub home: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DbPlace>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaFacts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seal: Option<SealCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Replicas>,
    /// Each chain: each tenant's in the database, the one chain of the files.
    pub audit_chains: Vec<ChainVerdict>,
    /// `sandbox.json` `human_approval`, as the runtime reads it (`null`: not set).
    pub human_approval: Option<HumanApproval>,
}

/// The database's schema version against this release's.
#[derive(Debug, Clone, Serialize)]
pub struct SchemaFacts {
    pub version: i32,
    /// The version this hcpx writes.
    pub latest: i32,
}

/// The replicas seen in the last minute, and how many went quiet.
#[derive(Debug, Clone, Serialize)]
pub struct Replicas {
    pub recent: Vec<ReplicaRow>,
    pub quiet: usize,
}

/// Adds checks to `add` as the doctor's lines.
type Add<'a> = &'a mut dyn FnMut(&str, Health, String);

/// The facts of `store`, each also added as a check line.
pub(crate) fn store_facts(store: &Store, add: Add<'_>) -> StoreFacts {
    let mut facts = StoreFacts {
        backend: store.kind(),
        home: store.home().to_path_buf(),
        database: None,
        schema: None,
        seal: None,
        replicas: None,
        audit_chains: Vec::new(),
        human_approval: store.sandbox().ok().and_then(|s| s.human_approval.clone()),
    };
    match store.db() {
        None => add("store", Health::Ok, format!("files under HCP_HOME {}", store.home().display())),
        Some(db) => {
            let p = db.place();
            add(
                "store",
                Health::Ok,
                format!(
                    "postgres database {} (host {}, port {}, database {}, user {}); this process's local cache is HCP_HOME {}",
                    p.url,
                    p.host,
                    p.port,
                    p.dbname,
                    p.user,
                    store.home().display()
                ),
            );
            facts.database = Some(p.clone());
            facts.schema = schema(db, add);
            // What each table needs: documents and chains came with schema 1, the replicas' notes with 4.
            let at = facts.schema.as_ref().map_or(0, |s| s.version);
            if at >= 1 {
                facts.seal = seal(db, add);
            }
            if at >= 4 {
                facts.replicas = replicas(db, facts.seal.as_ref(), add);
            } else {
                add("replicas", Health::Ok, "replicas note themselves from schema version 4 on; none can be listed before `hcpx store migrate`".into());
            }
            if at == 0 {
                add("audit", Health::Ok, "no audit chain: the database has no hcpx schema yet".into());
                add("human_approval", Health::Ok, approval_line(None));
                return facts;
            }
        }
    }
    match store.verify_each_chain() {
        Ok(chains) => {
            for c in &chains {
                let name = c.tenant.as_ref().map_or("audit".to_string(), |t| format!("audit {t}"));
                match &c.broken {
                    None => add(&name, Health::Ok, format!("hash chain intact: {} line(s)", c.lines)),
                    Some(b) => add(
                        &name,
                        Health::Error,
                        format!(
                            "hash chain broken at {} line {} ({}): {}; see hcpx audit verify{}",
                            b.file,
                            b.line,
                            b.kind.as_str(),
                            b.message,
                            c.tenant.as_ref().map_or(String::new(), |t| format!(" --tenant {t}"))
                        ),
                    ),
                }
            }
            if chains.is_empty() {
                add("audit", Health::Ok, "no audit chain yet: no call was audited".into());
            }
            facts.audit_chains = chains;
        }
        Err(e) => add("audit", Health::Error, e.to_string()),
    }
    add("human_approval", Health::Ok, approval_line(facts.human_approval.as_ref()));
    facts
}

fn schema(db: &crate::store::pg::Db, add: Add<'_>) -> Option<SchemaFacts> {
    let latest = crate::store::pg::SCHEMA_VERSION;
    // Read as it is: doctor never migrates (`hcpx store migrate` does, and every replica at start).
    match db.schema_found() {
        Ok(version) => {
            let (status, said) = match version.cmp(&latest) {
                _ if version == 0 => (Health::Warning, format!("the database has no hcpx schema yet; run hcpx store migrate to bring it to {latest}")),
                std::cmp::Ordering::Equal => (Health::Ok, format!("store schema version {version}, this hcpx's")),
                std::cmp::Ordering::Less => (Health::Warning, format!("store schema version {version}, older than this hcpx's {latest}; run hcpx store migrate (a replica of this release also does at start)")),
                std::cmp::Ordering::Greater => (Health::Error, format!("store schema version {version}, newer than this hcpx's {latest}, which refuses to write it; run the newer hcpx that migrated it")),
            };
            add("schema", status, said);
            Some(SchemaFacts { version, latest })
        }
        Err(e) => {
            add("schema", Health::Error, e.to_string());
            None
        }
    }
}

fn seal(db: &crate::store::pg::Db, add: Add<'_>) -> Option<SealCheck> {
    let check = match db.seal_check() {
        Ok(c) => c,
        Err(e) => {
            add("seal key", Health::Error, e.to_string());
            return None;
        }
    };
    let (sealed, opened) = (check.sealed, check.opened);
    match (&check.key_id, check.failed) {
        (Some(id), 0) => add(
            "seal key",
            Health::Ok,
            format!("HCP_SEAL_KEY_FILE holds key {id}; it opens every sealed row ({opened} of {sealed})"),
        ),
        (None, 0) => add(
            "seal key",
            Health::Ok,
            "HCP_SEAL_KEY_FILE is not set and no row is sealed; credentials need it (docs/hosting.md, Credentials at rest)".into(),
        ),
        (Some(id), failed) => {
            let keys: Vec<String> = check.failures.iter().map(|f| f.key_id.clone()).collect();
            let first = check.failures.first().map(|f| f.path.as_str()).unwrap_or_default();
            add(
                "seal key",
                Health::Error,
                format!(
                    "HCP_SEAL_KEY_FILE holds key {id}; it opens {opened} of {sealed} sealed row(s), {failed} failed (first: {first}, sealed with key {}); point HCP_SEAL_KEY_FILE at the key file they were sealed with (or finish hcpx credential rotate-key)",
                    keys.first().map(String::as_str).unwrap_or("?")
                ),
            )
        }
        (None, failed) => add(
            "seal key",
            Health::Error,
            format!(
                "{failed} sealed row(s) and HCP_SEAL_KEY_FILE is not set, so none opens here (rows sealed with key {}); point HCP_SEAL_KEY_FILE at the operator's key file",
                check.row_keys.join(", ")
            ),
        ),
    }
    Some(check)
}

fn replicas(db: &crate::store::pg::Db, seal: Option<&SealCheck>, add: Add<'_>) -> Option<Replicas> {
    let rows = match db.replicas() {
        Ok(r) => r,
        Err(e) => {
            add("replicas", Health::Error, e.to_string());
            return None;
        }
    };
    let quiet_s = QUIET_AFTER.as_secs() as i64;
    let (recent, quiet): (Vec<ReplicaRow>, Vec<ReplicaRow>) =
        rows.into_iter().partition(|r| r.seen_s_ago < quiet_s);
    add(
        "replicas",
        Health::Ok,
        format!(
            "{} replica(s) of hcpx serve seen in the last minute; {} went quiet (not seen for a minute or more)",
            recent.len(),
            quiet.len()
        ),
    );
    // The key a replica must hold: this process's, else the one the rows are sealed with.
    let want: Vec<String> = match seal {
        Some(SealCheck { key_id: Some(k), .. }) => vec![k.clone()],
        Some(s) => s.row_keys.clone(),
        None => Vec::new(),
    };
    for r in &recent {
        let key = r.seal_key_id.as_deref().unwrap_or("none");
        let line = format!(
            "host {}, pid {}, listening on {}, hcpx {}, started {}, last seen {} s ago, seal key {key}",
            r.host, r.pid, r.listen, r.version, r.started, r.seen_s_ago
        );
        let wrong = !want.is_empty() && !r.seal_key_id.as_ref().is_some_and(|k| want.contains(k));
        if wrong {
            add(
                &format!("replica {}", r.id),
                Health::Error,
                format!(
                    "{line}: it holds another seal key than the store's ({}), so it cannot open a credential; restart it with HCP_SEAL_KEY_FILE pointing at the key file the other replicas use",
                    want.join(", ")
                ),
            );
        } else {
            add(&format!("replica {}", r.id), Health::Ok, line);
        }
    }
    Some(Replicas { recent, quiet: quiet.len() })
}

/// `human_approval` in one line.
fn approval_line(h: Option<&HumanApproval>) -> String {
    let Some(h) = h else {
        return "not set in sandbox.json: a confirm-gated write needs only its caller's confirm".into();
    };
    let scopes: Vec<String> = h
        .commands
        .iter()
        .map(|c| match &c.verb_keys {
            Some(v) => format!("{} ({})", c.pack_id, v.join(", ")),
            None => c.pack_id.clone(),
        })
        .collect();
    format!(
        "a person approves the confirm-gated writes of {}; an approval lives {} s; {}",
        scopes.join(", "),
        h.ttl_s(),
        if h.elicitation() {
            "an MCP client's answer counts where its Principal is a person's"
        } else {
            "elicitation is off: every approval comes from an approver"
        }
    )
}
