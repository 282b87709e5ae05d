//! The hosts an operator allows a pack (`sandbox.json` `packs.<id>.hosts` for every tenant,
//! `packs.<id>.tenant_hosts.<tenant>` for one), edited only to hosts the installed pack declares; and what a
//! pack reaches over the network (`Reach`), as `hcpx check` and `hcpx doctor` show it. A wrap's command reaches
//! the allowed hosts it declares through its call's egress proxy (hcpx-runtime's adapter/egress.rs).

use serde::Serialize;

use super::config::{PackSandbox, SandboxConfig};
use super::{Store, StoreError};
use crate::pack::hosts::{normalized, shown};
use crate::pack::{HostRule, NetKind, Pack};

/// The hosts a pack is allowed after an edit, in the scope edited, with the ones it declares.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllowedHosts {
    /// The tenant whose own list was edited; `None`: the list of every tenant.
    pub tenant: Option<String>,
    /// The hosts allowed in that scope now.
    pub hosts: Vec<HostRule>,
    /// The hosts the installed pack declares (empty when it is not installed).
    pub declared: Vec<HostRule>,
}

impl PackSandbox {
    /// The hosts allowed to a call of `tenant`: those of every tenant and the tenant's own.
    pub fn hosts_for(&self, tenant: &str) -> Vec<HostRule> {
        let own = self.tenant_hosts.get(tenant).into_iter().flatten();
        normalized(self.hosts.iter().chain(own).cloned().collect())
    }
}

impl Store {
    /// Allows (`allow = true`) or takes back hosts for pack `id`, for every tenant or for `tenant` only (every
    /// host of that scope when `hosts` is empty and `allow` is false). A host to allow must be one the installed
    /// pack declares, as written there; the refusal names the declared ones.
    pub fn edit_hosts(
        &self,
        id: &str,
        hosts: &[HostRule],
        allow: bool,
        tenant: Option<&str>,
    ) -> Result<AllowedHosts, StoreError> {
        if !crate::model::naming::is_pack_id(id) {
            return Err(StoreError::Refused(format!("{id:?} is not a pack id")));
        }
        // Taking hosts back needs no pack: it works for one uninstalled, or one that no longer loads.
        let declared = match self.load_pack(id) {
            Ok(Some(p)) => p.declared_hosts(),
            Err(e) if allow => return Err(e),
            Ok(None) if allow => {
                let state = self.state()?;
                return Err(crate::packs::not_installed(id, &state));
            }
            _ => Vec::new(),
        };
        if allow {
            if let Some(t) = tenant {
                self.check_tenant(t)?;
            }
            if let Some(h) = hosts.iter().find(|h| !declared.contains(h)) {
                return Err(StoreError::Refused(if declared.is_empty() {
                    format!("pack {id} declares no hosts, so {h} cannot be allowed; a pack names the hosts it reaches in its manifest (`hosts`)")
                } else {
                    format!(
                        "pack {id} does not declare host {h}; it declares {}: allow one of those, as written",
                        shown(&declared)
                    )
                }));
            }
        }
        let _lock = self.lock()?;
        let mut cfg: SandboxConfig = self.read_json("sandbox.json")?.unwrap_or_default(); // uncached: under the lock
        let entry = cfg.packs.entry(id.to_string()).or_default();
        let list = match tenant {
            Some(t) => entry.tenant_hosts.entry(t.to_string()).or_default(),
            None => &mut entry.hosts,
        };
        if allow {
            list.extend(hosts.iter().cloned());
            *list = normalized(std::mem::take(list));
        } else if hosts.is_empty() {
            list.clear();
        } else {
            list.retain(|h| !hosts.contains(h));
        }
        let now = list.clone();
        entry.tenant_hosts.retain(|_, v| !v.is_empty());
        if *entry == PackSandbox::default() {
            cfg.packs.remove(id);
        }
        self.write_json("sandbox.json", &cfg)?;
        Ok(AllowedHosts { tenant: tenant.map(str::to_string), hosts: now, declared })
    }
}

/// One declared host: which commands reach it and who allowed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostReach {
    pub host: HostRule,
    /// The commands that name it (their own `hosts`, or the pack's); empty: every command.
    pub commands: Vec<String>,
    /// Allowed for every tenant (`packs.<id>.hosts`).
    pub allowed: bool,
    /// The tenants allowed it on their own (`packs.<id>.tenant_hosts`).
    pub tenants: Vec<String>,
    /// The Binding fields bound to it (`binding.inject`) and where each goes: `token in header authorization`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<String>,
}

/// What a pack's commands reach over the network: the hosts it declares, and whether its wrap asks for `inet`,
/// which reaches any address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reach {
    pub hosts: Vec<HostReach>,
    /// `wrap.network` holds `inet`: TCP and UDP to anywhere, hosts or not.
    pub anywhere: bool,
    /// The operator allowed `inet` (`packs.<id>.network`).
    pub anywhere_allowed: bool,
}

impl Reach {
    /// The reach of `pack` under `cfg`; `None` when it declares no host and no `inet`.
    pub fn of(pack: &Pack, cfg: &SandboxConfig) -> Option<Reach> {
        let anywhere = pack.wrap.as_ref().is_some_and(|w| w.network.contains(&NetKind::Inet));
        let declared = pack.declared_hosts();
        if declared.is_empty() && !anywhere {
            return None;
        }
        let granted = cfg.for_pack(&pack.id);
        let hosts = declared
            .into_iter()
            .map(|host| {
                let users: Vec<String> =
                    pack.commands.keys().filter(|k| pack.hosts_of(k).contains(&host)).cloned().collect();
                let commands = if users.len() == pack.commands.len() { Vec::new() } else { users };
                let allowed = granted.is_some_and(|g| g.hosts.contains(&host));
                let tenants = granted
                    .map(|g| {
                        g.tenant_hosts
                            .iter()
                            .filter(|(_, l)| l.contains(&host))
                            .map(|(t, _)| t.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                let credentials = pack
                    .binding
                    .inject
                    .iter()
                    .filter(|i| i.host == host)
                    .map(|i| format!("{} in {}", i.field, i.slot))
                    .collect();
                HostReach { host, commands, allowed, tenants, credentials }
            })
            .collect();
        let anywhere_allowed = anywhere && granted.is_some_and(|g| g.network.contains(&NetKind::Inet));
        Some(Reach { hosts, anywhere, anywhere_allowed })
    }

    /// The reach in lines, for a person: the hosts and who allowed each, then `anywhere` when the wrap asks for
    /// `inet`.
    pub fn lines(&self, id: &str) -> Vec<String> {
        let mut out = Vec::new();
        if !self.hosts.is_empty() {
            let each: Vec<String> = self
                .hosts
                .iter()
                .map(|h| {
                    let by = if !h.commands.is_empty() {
                        format!(" ({})", h.commands.join(", "))
                    } else {
                        String::new()
                    };
                    let who = match (h.allowed, h.tenants.as_slice()) {
                        (true, _) => "allowed".to_string(),
                        (false, []) => format!("not allowed: hcpx allow-host {id} {}", quoted(&h.host)),
                        (false, t) => format!("allowed for tenant {}", t.join(", ")),
                    };
                    let creds = if h.credentials.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", credential {} (the pack's code sees a placeholder)",
                            h.credentials.join(", ")
                        )
                    };
                    format!("{}{by} {who}{creds}", h.host)
                })
                .collect();
            out.push(format!(
                "hosts {}; a wrap reaches an allowed host through its call's egress proxy, a composite through wasi:http sent by hcpx (https and http)",
                each.join("; ")
            ));
        }
        if self.anywhere {
            let state = if self.anywhere_allowed {
                "allowed".to_string()
            } else {
                format!("not allowed: hcpx allow-network {id} inet")
            };
            out.push(format!("reaches anywhere: wrap.network inet is TCP and UDP to any address, whatever hosts it declares ({state})"));
        }
        out
    }
}

/// A host as an operator types it: a wildcard in single quotes, so the shell leaves the `*` alone.
fn quoted(h: &HostRule) -> String {
    if h.wildcard {
        format!("'{h}'")
    } else {
        h.to_string()
    }
}
