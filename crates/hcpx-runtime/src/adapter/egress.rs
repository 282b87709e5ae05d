//! The egress proxy of one wrap call (issue #36, docs/egress.md): the hosts its command declares that the
//! operator allowed for the call's tenant (pack-wide and the tenant's own), served by an `hcpx_egress::Proxy` on
//! 127.0.0.1 in this process for as long as the call runs. The sandbox then lets the child's TCP reach that
//! address only (hcpx-sandbox's connect supervisor, seccomp and Landlock); this module starts and stops it.
//!
//! The proxy runs on the caller's tokio runtime when there is a multi-threaded one (`hcpx serve`, whose wrap
//! calls block a thread of its blocking pool), else on a runtime of one worker thread owned by the call (the
//! CLI's one-shot call), so the call's thread may block on the child while the proxy serves it. Egress events
//! are counted only; the audit log does not record them yet (#36 point 6).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hcpx_egress::{Limits, Policy, Proxy, ProxyHandle, Rule, Scheme};

use crate::model::{Code, Denial};
use crate::pack::hosts::{HostRule, Scheme as PackScheme};
use crate::pack::{NetKind, Pack};
use crate::store::config::SandboxConfig;

/// How long starting the proxy may take (binding a loopback port) before the call is refused.
const START_WITHIN: Duration = Duration::from_secs(5);

/// A running egress proxy; it stops, with every connection it holds, when dropped.
pub struct CallProxy {
    handle: Option<ProxyHandle>,
    runtime: Option<tokio::runtime::Runtime>,
    port: u16,
    events: Arc<AtomicU64>,
}

impl CallProxy {
    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Requests it has seen end, allowed or refused.
    pub fn events(&self) -> u64 {
        self.events.load(Ordering::Relaxed)
    }
}

impl Drop for CallProxy {
    fn drop(&mut self) {
        drop(self.handle.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// The hosts a call of `verb_key` for `tenant` may reach: the command's declared hosts that the operator
/// allowed the pack for every tenant or for this one.
pub fn allowed_hosts(pack: &Pack, verb_key: &str, cfg: &SandboxConfig, tenant: &str) -> Vec<HostRule> {
    let Some(entry) = cfg.for_pack(&pack.id) else { return Vec::new() };
    let tenant_own = entry.tenant_hosts.get(tenant).map(Vec::as_slice).unwrap_or_default();
    let mut out: Vec<HostRule> = pack
        .hosts_of(verb_key)
        .iter()
        .filter(|h| entry.hosts.contains(h) || tenant_own.contains(h))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The proxy's policy: exactly `hosts`, with the operator's fixed answers and internal names.
pub fn policy(hosts: &[HostRule], cfg: &SandboxConfig) -> Result<Policy, Denial> {
    let rules = hosts
        .iter()
        .map(|h| {
            let scheme = match h.scheme {
                PackScheme::Https => Scheme::Https,
                PackScheme::Http => Scheme::Http,
            };
            let name = if h.wildcard { format!("*.{}", h.host) } else { h.host.clone() };
            Rule::new(scheme, &name, h.port).map_err(|e| {
                Denial::new(
                    Code::SandboxDenied,
                    format!(
                        "sandbox: host {h} cannot be an egress rule: {e}; fix the pack's hosts and reinstall"
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut p = Policy::new(rules);
    for (name, addrs) in &cfg.egress.hosts {
        p = p.with_host(name.as_str(), addrs.clone());
    }
    for name in &cfg.egress.internal {
        p = p.allow_internal(name.as_str());
    }
    Ok(p)
}

/// Starts the egress proxy of a wrap call of `pack`'s `verb_key` for `tenant`, when the command reaches hosts
/// the operator allowed and the pack has no `inet` (which reaches anywhere, the operator's explicit choice).
/// `None`: the call gets no network from hosts.
pub fn start_for(
    pack: &Pack,
    network: &[NetKind],
    verb_key: &str,
    cfg: &SandboxConfig,
    tenant: &str,
) -> Result<Option<CallProxy>, Denial> {
    if network.contains(&NetKind::Inet) {
        return Ok(None);
    }
    let hosts = allowed_hosts(pack, verb_key, cfg, tenant);
    if hosts.is_empty() {
        return Ok(None);
    }
    start(policy(&hosts, cfg)?).map(Some)
}

fn start(policy: Policy) -> Result<CallProxy, Denial> {
    let refuse = |why: String| {
        Denial::new(
            Code::SandboxDenied,
            format!(
                "sandbox: cannot start the call's egress proxy: {why}; check that loopback (127.0.0.1) is up"
            ),
        )
    };
    let caller = tokio::runtime::Handle::try_current()
        .ok()
        .filter(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    let (handle, runtime) = match caller {
        Some(h) => (h, None),
        None => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("hcpx-egress")
                .enable_io()
                .enable_time()
                .build()
                .map_err(|e| refuse(format!("no runtime for it ({e})")))?;
            (rt.handle().clone(), Some(rt))
        }
    };
    let events = Arc::new(AtomicU64::new(0));
    let counted = events.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    handle.spawn(async move {
        let started = Proxy::start(policy, Limits::default(), move |_event| {
            counted.fetch_add(1, Ordering::Relaxed);
        })
        .await;
        let _ = tx.send(started);
    });
    let mut call = CallProxy { handle: None, runtime, port: 0, events };
    let started = rx.recv_timeout(START_WITHIN).map_err(|_| refuse("it did not start in time".into()))?;
    let proxy = started.map_err(|e| refuse(e.to_string()))?;
    call.port = proxy.addr().port();
    call.handle = Some(proxy);
    Ok(call)
}
