//! The egress proxy of one wrap call (issue #36, docs/egress.md): the hosts its command declares that the
//! operator allowed for the call's tenant (pack-wide and the tenant's own), served by an `hcpx_egress::Proxy` on
//! 127.0.0.1 in this process for as long as the call runs. The sandbox then lets the child's TCP reach that
//! address only (hcpx-sandbox's connect supervisor, seccomp and Landlock); this module starts and stops it.
//!
//! The proxy runs on the caller's tokio runtime when there is a multi-threaded one (`hcpx serve`, whose wrap
//! calls block a thread of its blocking pool), else on a runtime of one worker thread owned by the call (the
//! CLI's one-shot call), so the call's thread may block on the child while the proxy serves it. Each request
//! it sees end comes back as an `EgressRow`, which step 7 appends to the audit log (#36 point 6).
//!
//! A composite's outgoing HTTP (composite/http.rs) is decided by the same `call_policy` and reported by the same
//! `row`, so a request is allowed, refused, audited and counted alike whichever adapter made it.

use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use hcpx_egress::{
    CallCa, EgressEvent, Limits, Policy, Proxy, ProxyHandle, Rule, Scheme, Secret, Secrets, Slot,
};

use crate::model::MintedBinding;
use crate::model::{Code, Denial};
use crate::pack::hosts::{HostRule, Scheme as PackScheme};
use crate::pack::{InjectSlot, NetKind, Pack};
use crate::store::audit::AuditEgress;
use crate::store::config::SandboxConfig;

/// How long starting the proxy may take (binding a loopback port) before the call is refused.
const START_WITHIN: Duration = Duration::from_secs(5);
/// How long a stopped proxy's last requests may take to report (each connection's guard, as it is dropped).
const STOP_WITHIN: Duration = Duration::from_secs(2);

/// The classes of an outgoing request: `allowed`, then every refusal's kind (`/metrics` counts by them).
pub const CLASSES: [&str; 12] = [
    "allowed",
    "not_allowed",
    "ip_literal",
    "private_address",
    "sni_mismatch",
    "bad_request",
    "limit",
    "resolve_failed",
    "connect_failed",
    "placeholder",
    "upstream_tls",
    "credential_echo",
];

/// One outgoing request of a call, as its audit row records it: when it ended, and what it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRow {
    pub at: String,
    pub egress: AuditEgress,
    /// When it ended and how long it took, to the nanosecond (its trace span).
    pub ended: std::time::SystemTime,
    pub took: Duration,
}

/// The audit row of a request that ended.
pub(crate) fn row(e: EgressEvent) -> EgressRow {
    let (refused, reason) = match e.refused {
        Some(r) => (Some(r.kind.as_str().to_string()), Some(r.reason)),
        None => (None, None),
    };
    EgressRow {
        at: crate::model::clock::now_rfc3339(),
        ended: std::time::SystemTime::now(),
        took: e.elapsed,
        egress: AuditEgress {
            host: e.host,
            port: e.port,
            method: e.method,
            bytes_up: e.bytes_up,
            bytes_down: e.bytes_down,
            elapsed_ms: u64::try_from(e.elapsed.as_millis()).unwrap_or(u64::MAX),
            scheme: e.scheme.map(|s| s.as_str().to_string()),
            status: e.status,
            rule: e.rule,
            refused,
            reason,
        },
    }
}

/// A running egress proxy; it stops, with every connection it holds, when dropped or finished.
pub struct CallProxy {
    /// The call's CA when its HTTPS is terminated (it has host-bound fields): its certificate goes to the child.
    ca: Option<Arc<CallCa>>,
    handle: Option<ProxyHandle>,
    runtime: Option<tokio::runtime::Runtime>,
    port: u16,
    rows: Option<mpsc::Receiver<EgressRow>>,
}

impl CallProxy {
    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The PEM of the call's CA certificate (never its key), when the proxy terminates the call's HTTPS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca.as_deref().map(CallCa::cert_pem)
    }

    /// Stops the proxy, every connection it still holds with it, and hands back every request it saw end, in
    /// the order they ended. Each connection's guard reports as it is dropped; the sender lives in the sink every
    /// guard and the proxy hold, so a closed channel means every report arrived. Waits at most `STOP_WITHIN`.
    pub fn finish(mut self) -> Vec<EgressRow> {
        self.stop();
        let Some(rx) = self.rows.take() else { return Vec::new() };
        let until = Instant::now() + STOP_WITHIN;
        let mut out = Vec::new();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(r) => out.push(r),
                Err(mpsc::RecvTimeoutError::Disconnected | mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        out
    }
}

impl CallProxy {
    /// Stops the proxy and every connection it holds; its runtime, when it owns one, is shut down without
    /// waiting (not `shutdown_timeout`: this may run on a blocking thread of the caller's runtime).
    fn stop(&mut self) {
        drop(self.handle.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for CallProxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The hosts a call of `verb_key` for `tenant` may reach: the command's declared hosts that the operator
/// allowed the pack for every tenant or for this one.
pub fn allowed_hosts(pack: &Pack, verb_key: &str, cfg: &SandboxConfig, tenant: &str) -> Vec<HostRule> {
    let Some(entry) = cfg.for_pack(&pack.id) else { return Vec::new() };
    let allowed = entry.hosts_for(tenant);
    let mut out: Vec<HostRule> =
        pack.hosts_of(verb_key).iter().filter(|h| allowed.contains(h)).cloned().collect();
    out.sort();
    out.dedup();
    out
}

/// A pack's host as an egress rule.
fn rule_of(h: &HostRule) -> Result<Rule, Denial> {
    let scheme = match h.scheme {
        PackScheme::Https => Scheme::Https,
        PackScheme::Http => Scheme::Http,
    };
    let name = if h.wildcard { format!("*.{}", h.host) } else { h.host.clone() };
    Rule::new(scheme, &name, h.port).map_err(|e| {
        Denial::new(
            Code::SandboxDenied,
            format!("sandbox: host {h} cannot be an egress rule: {e}; fix the pack's hosts and reinstall"),
        )
    })
}

/// The proxy's policy: exactly `hosts`, with the operator's fixed answers and internal names.
pub fn policy(hosts: &[HostRule], cfg: &SandboxConfig) -> Result<Policy, Denial> {
    let rules = hosts.iter().map(rule_of).collect::<Result<Vec<_>, _>>()?;
    let mut p = Policy::new(rules);
    for (name, addrs) in &cfg.egress.hosts {
        p = p.with_host(name.as_str(), addrs.clone());
    }
    for name in &cfg.egress.internal {
        p = p.allow_internal(name.as_str());
    }
    Ok(p)
}

/// The placeholder of each host-bound field of the call's Binding (`binding.inject`), random per call: what the
/// child sees where `{{binding.FIELD}}` is filled. Every host-bound field gets one, whether or not the call has a
/// proxy, so the child never holds the real value.
pub fn placeholders(pack: &Pack, binding: &MintedBinding) -> Result<BTreeMap<String, String>, Denial> {
    let mut out = BTreeMap::new();
    for field in pack.binding.host_bound() {
        if binding.fields.contains_key(field) {
            let p = hcpx_egress::placeholder()
                .map_err(|r| Denial::new(Code::SandboxDenied, format!("sandbox: {}", r.reason)))?;
            out.insert(field.to_string(), p);
        }
    }
    Ok(out)
}

/// The call's secrets: each `binding.inject` entry whose field has a placeholder, with its real value. A wrap's
/// proxy applies them; a composite's outgoing-HTTP hook (composite/http.rs) applies the same list.
pub fn secrets(
    pack: &Pack,
    binding: &MintedBinding,
    placeholders: &BTreeMap<String, String>,
) -> Result<Secrets, Denial> {
    let mut items = Vec::new();
    for i in &pack.binding.inject {
        let (Some(placeholder), Some(value)) = (placeholders.get(&i.field), binding.fields.get(&i.field))
        else {
            continue;
        };
        let rule = rule_of(&i.host)?;
        let slot = match &i.slot {
            InjectSlot::Header(h) => Slot::Header(h.clone()),
            InjectSlot::Query(q) => Slot::Query(q.clone()),
        };
        items.push(Secret {
            field: i.field.clone(),
            placeholder: placeholder.clone(),
            value: value.clone(),
            rule,
            slot,
        });
    }
    Ok(Secrets::new(items))
}

/// The policy of a call of `pack`'s `verb_key` for `tenant`: the hosts it may reach (`allowed_hosts`), with the
/// operator's fixed answers and internal names. No host: a policy that refuses every request.
pub fn call_policy(pack: &Pack, verb_key: &str, cfg: &SandboxConfig, tenant: &str) -> Result<Policy, Denial> {
    policy(&allowed_hosts(pack, verb_key, cfg, tenant), cfg)
}

/// A wrap call's egress: what decides whether it gets a proxy and what the proxy does.
pub struct CallEgress<'a> {
    pub pack: &'a Pack,
    pub network: &'a [NetKind],
    pub verb_key: &'a str,
    pub cfg: &'a SandboxConfig,
    pub tenant: &'a str,
    pub binding: &'a MintedBinding,
    pub placeholders: &'a BTreeMap<String, String>,
}

impl CallEgress<'_> {
    /// The hosts the call's proxy allows and the values it puts in, when the command reaches hosts the operator
    /// allowed and the pack has no `inet` (which reaches anywhere, the operator's explicit choice); `None`: the
    /// call gets no network from hosts.
    fn wanted(&self) -> Result<Option<(Vec<HostRule>, Secrets)>, Denial> {
        if self.network.contains(&NetKind::Inet) {
            return Ok(None);
        }
        let hosts = allowed_hosts(self.pack, self.verb_key, self.cfg, self.tenant);
        if hosts.is_empty() {
            return Ok(None);
        }
        Ok(Some((hosts, secrets(self.pack, self.binding, self.placeholders)?)))
    }

    /// Starts the call's egress proxy. With host-bound fields (`placeholders`), it terminates the call's HTTPS
    /// with a CA of the call's own and puts each real value where its rule says.
    pub fn start(&self) -> Result<Option<CallProxy>, Denial> {
        let Some((hosts, secrets)) = self.wanted()? else { return Ok(None) };
        start(policy(&hosts, self.cfg)?, secrets).map(Some)
    }

    /// What [`Self::start`] would give the call, starting nothing (`hcpx exec --dry-run`): `None` when no proxy,
    /// else whether it would terminate the call's HTTPS (the child then trusts the call's CA).
    pub fn planned(&self) -> Result<Option<bool>, Denial> {
        Ok(self.wanted()?.map(|(_, secrets)| !secrets.is_empty()))
    }
}

fn start(policy: Policy, secrets: Secrets) -> Result<CallProxy, Denial> {
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
    let ca =
        if secrets.is_empty() { None } else { Some(Arc::new(CallCa::new().map_err(|r| refuse(r.reason))?)) };
    let (etx, erx) = mpsc::channel();
    let (tx, rx) = mpsc::channel();
    let call_ca = ca.clone();
    handle.spawn(async move {
        let started = Proxy::start_terminating(policy, Limits::default(), secrets, call_ca, move |e| {
            let _ = etx.send(row(e));
        })
        .await;
        let _ = tx.send(started);
    });
    let mut call = CallProxy { ca, handle: None, runtime, port: 0, rows: Some(erx) };
    let started = rx.recv_timeout(START_WITHIN).map_err(|_| refuse("it did not start in time".into()))?;
    let proxy = started.map_err(|e| refuse(e.to_string()))?;
    call.port = proxy.addr().port();
    call.handle = Some(proxy);
    Ok(call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hcpx_egress::RefusalKind;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    #[test]
    fn a_finished_proxy_hands_back_every_request() {
        let rule = Rule::new(Scheme::Https, "api.test", 443).unwrap();
        let proxy = start(Policy::new(vec![rule]), Secrets::default()).unwrap();
        let mut refused = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        refused.write_all(b"CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n").unwrap();
        let mut answer = String::new();
        refused.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 403 "), "{answer}");
        let silent = TcpStream::connect(("127.0.0.1", proxy.port())).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let rows = proxy.finish();
        drop(silent);
        assert_eq!(rows.len(), 2, "{rows:?}");
        let mut classes: Vec<&str> = rows.iter().map(|r| r.egress.class()).collect();
        classes.sort_unstable();
        assert_eq!(classes, ["limit", "not_allowed"]);
        let e = &rows[0].egress;
        assert_eq!((e.method.as_str(), e.status, e.rule.as_deref()), ("CONNECT", Some(403), None));
        assert_eq!((e.host.as_str(), e.port, e.scheme.as_deref()), ("evil.test", 443, Some("https")));
        assert!(e.reason.as_deref().is_some_and(|r| r.contains("no rule names host evil.test")), "{e:?}");
    }

    #[test]
    fn classes_are_allowed_then_every_refusal_kind() {
        let kinds: Vec<&str> = RefusalKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(CLASSES[0], "allowed");
        assert_eq!(CLASSES[1..], kinds[..]);
    }
}
