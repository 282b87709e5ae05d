//! `hcpx install oci://…`: pull, verify (signature, digests, sizes) and install a pack from a registry, pinned
//! by hcp.lock with `--locked` (with no reference: every pack it pins, all or nothing); an unsigned pack only
//! with `--allow-unsigned`.

use serde::Serialize;
use std::path::PathBuf;

use super::InstallArgs;
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_registry::{self as distribution, lock, PackRef, PullOptions, RegistryInstall};
use hcpx_store::packs::Replace;

/// `hcpx install oci://host/repo:tag|@sha256:…`.
pub fn install(p: &Printer, a: &InstallArgs, reference: &str) -> anyhow::Result<u8> {
    let r = PackRef::parse(reference).or_fail()?;
    let mut opts = PullOptions {
        registry: a.registry.options(),
        allow_unsigned: a.allow_unsigned,
        allow_downgrade: a.allow_downgrade,
        reviewed: a.yes,
        ..Default::default()
    };
    if a.locked {
        let lockfile = lock::read(&a.lock_file).or_fail()?;
        let plain = PackRef { digest: None, ..r.clone() }.to_string();
        let entry = lockfile.packs.iter().find(|e| e.reference == plain || e.reference == r.to_string());
        let Some(entry) = entry else {
            return Err(CliError::new(format!(
                "{} pins no pack installed from {reference}; install only what it lists, or run hcpx lock again after reviewing this one",
                a.lock_file.display()
            ))
            .into());
        };
        if let Some(d) = &r.digest {
            if *d != entry.digest {
                return Err(CliError::new(format!(
                    "{reference} names digest {d}, but {} pins {}; nothing was installed",
                    a.lock_file.display(),
                    entry.digest
                ))
                .into());
            }
        }
        // The tag is resolved and must still name the pinned digest (a moved tag is refused); with the registry
        // unreachable, the pinned digest installs from the cache.
        opts.expect_digest = Some(entry.digest.clone());
        opts.expect_signer = entry.signer.clone();
        if entry.signer.is_none() && !a.allow_unsigned {
            return Err(CliError::new(format!(
                "{} pins {reference} unsigned; installing it again takes --allow-unsigned",
                a.lock_file.display()
            ))
            .into());
        }
    }
    let store = super::compile::open_store_compiling(p)?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    let done = match distribution::install(&store, &r, &opts, replace) {
        Ok(done) => done,
        Err(distribution::DistError::Install(hcpx_store::packs::InstallError::Lint { issues, .. })) => {
            return Err(CliError::new(format!(
                "the pack at {reference} fails lint with {} issue(s) ({}); nothing was installed",
                issues.len(),
                issues.iter().map(|i| i.message.clone()).collect::<Vec<_>>().join("; ")
            ))
            .into())
        }
        Err(distribution::DistError::Install(hcpx_store::packs::InstallError::Check { message, .. })) => {
            return Err(super::compile::refused(message).into())
        }
        Err(e) => return Err(CliError::new(e.to_string()).into()),
    };
    super::compile::remember_installed(p, &store, std::slice::from_ref(&done.installed.id));
    let path = store.pack_dir(&done.installed.id);
    Ok(p.report(&Pulled { ok: true, pack: PackPulled::of(&done), path, store: super::store_named(&store) }))
}

/// What `--json` says of one pack a registry install put in the store (both install forms).
#[derive(Serialize)]
struct PackPulled {
    pack_id: String,
    reference: String,
    digest: String,
    signer: Option<SignerKey>,
    replaced: bool,
    from_cache: bool,
    #[serde(skip)]
    deactivated: bool,
}

/// The trusted key a pack was signed with.
#[derive(Serialize)]
struct SignerKey {
    name: String,
    fingerprint: String,
}

impl PackPulled {
    fn of(d: &RegistryInstall) -> PackPulled {
        PackPulled {
            pack_id: d.installed.id.clone(),
            reference: d.reference.to_string(),
            digest: d.digest.clone(),
            signer: d
                .signer
                .as_ref()
                .map(|s| SignerKey { name: s.name.clone(), fingerprint: s.fingerprint.clone() }),
            replaced: d.installed.replaced,
            from_cache: d.from_cache,
            deactivated: d.installed.deactivated,
        }
    }
}

/// `hcpx install oci://…`: the pack, and where it is installed.
#[derive(Serialize)]
struct Pulled {
    ok: bool,
    #[serde(flatten)]
    pack: PackPulled,
    path: PathBuf,
    /// The store written: the database (password masked) or `HCP_HOME PATH`.
    store: String,
}

impl Report for Pulled {
    fn text(&self, out: &Text<'_>) {
        let d = &self.pack;
        let id = &d.pack_id;
        match &d.signer {
            Some(s) => {
                out.message(&format!("verified {} signed by {} ({})", d.digest, s.name, s.fingerprint))
            }
            None => out.message(&format!(
                "installed {} WITHOUT a trusted signature (--allow-unsigned, written to the audit log)",
                d.digest
            )),
        }
        out.message(&format!(
            "{} {id} from {}{} in {} (its files here: {})",
            if d.replaced { "reinstalled" } else { "installed" },
            d.reference,
            if d.from_cache { " (cached)" } else { "" },
            self.store,
            self.path.display()
        ));
        if d.deactivated {
            out.message(&format!("it is not active: review it, then run hcpx activate {id}"));
        } else {
            out.message(&format!("next: hcpx activate {id}"));
        }
    }
}

/// `hcpx install --locked` with no reference: every pack hcp.lock pins, at its digest and signer, all or nothing.
pub fn install_locked(p: &Printer, a: &InstallArgs) -> anyhow::Result<u8> {
    let file = a.lock_file.display().to_string();
    let lockfile = lock::read(&a.lock_file).or_fail()?;
    let base = PullOptions {
        registry: a.registry.options(),
        allow_unsigned: a.allow_unsigned,
        ..Default::default()
    };
    let store = super::compile::open_store_compiling(p)?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    let done = distribution::locked::install_all(&store, &lockfile, &file, &base, replace).or_fail()?;
    let ids: Vec<String> = done.iter().map(|d| d.installed.id.clone()).collect();
    super::compile::remember_installed(p, &store, &ids);
    Ok(p.report(&AllPulled {
        ok: true,
        lock_file: file,
        packs: done.iter().map(PackPulled::of).collect(),
        store: super::store_named(&store),
    }))
}

/// `hcpx install --locked`: every pack the lock file pins, as installed.
#[derive(Serialize)]
struct AllPulled {
    ok: bool,
    lock_file: String,
    packs: Vec<PackPulled>,
    /// The store written: the database (password masked) or `HCP_HOME PATH`.
    store: String,
}

impl Report for AllPulled {
    fn text(&self, out: &Text<'_>) {
        for d in &self.packs {
            let signer = match &d.signer {
                Some(s) => format!("signed by {} ({})", s.name, s.fingerprint),
                None => "WITHOUT a trusted signature (--allow-unsigned, written to the audit log)".into(),
            };
            out.message(&format!(
                "{} {} {} from {}{}, {signer}",
                if d.replaced { "reinstalled" } else { "installed" },
                d.pack_id,
                d.digest,
                d.reference,
                if d.from_cache { " (cached)" } else { "" },
            ));
        }
        out.message(&format!(
            "{} pack(s) installed in {} exactly as {} pins them",
            self.packs.len(),
            self.store,
            self.lock_file
        ));
        let off: Vec<&str> =
            self.packs.iter().filter(|d| d.deactivated).map(|d| d.pack_id.as_str()).collect();
        if !off.is_empty() {
            out.message(&format!("not active: {}; review, then hcpx activate ID", off.join(", ")));
        }
    }
}
