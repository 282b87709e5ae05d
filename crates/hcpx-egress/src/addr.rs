//! What kind of address a name resolved to, and the one resolution a connection uses: every answer classified,
//! the name refused whole if any answer is not public (unless the operator allowed it), and the addresses
//! returned so the caller connects to exactly these (pinned: no second lookup a rebinding DNS server could
//! answer differently).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::refusal::{Refusal, RefusalKind};
use crate::rules::{normalize_host, Policy};

/// The class of an address. Only `Public` is reachable by default; `internal` names may also reach
/// `Loopback`, `Private`, `LinkLocal` and `Shared`; the others are never reachable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrClass {
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7 (unique local), 64:ff9b:1::/48 (local-use NAT64).
    Private,
    /// 169.254/16, fe80::/10 (but not the metadata addresses in them).
    LinkLocal,
    /// 100.64/10, carrier-grade NAT (RFC 6598).
    Shared,
    /// A cloud instance-metadata or host-agent service: never reachable, even for an internal name.
    Metadata,
    /// 0.0.0.0, ::.
    Unspecified,
    /// 224/4, ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 0/8 ("this network").
    ThisNetwork,
    /// Reserved or documentation ranges: 240/4, 192.0.0/24, 192.0.2/24, 198.18/15, 198.51.100/24,
    /// 203.0.113/24, 2001:db8::/32, fec0::/10 (site-local), 100::/64 (discard), 2001::/23 (IETF protocols,
    /// Teredo among them).
    Reserved,
}

/// The metadata addresses: 169.254.169.254 (AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle), 169.254.170.2
/// (AWS ECS task credentials), 100.100.100.200 (Alibaba Cloud), 192.0.0.192 (Oracle Cloud legacy),
/// 168.63.129.16 (Azure's WireServer, a public-looking address), fd00:ec2::254 (AWS over IPv6).
pub const METADATA_V4: [Ipv4Addr; 5] = [
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(192, 0, 0, 192),
    Ipv4Addr::new(168, 63, 129, 16),
];
pub const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254)];

impl AddrClass {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Shared => "shared (cgnat)",
            Self::Metadata => "cloud metadata",
            Self::Unspecified => "unspecified",
            Self::Multicast => "multicast",
            Self::Broadcast => "broadcast",
            Self::ThisNetwork => "this-network",
            Self::Reserved => "reserved",
        }
    }

    /// Whether an operator's `internal` name may resolve to this class.
    pub fn internal_may_use(self) -> bool {
        matches!(self, Self::Public | Self::Loopback | Self::Private | Self::LinkLocal | Self::Shared)
    }
}

/// The class of `ip`. IPv6 addresses that carry an IPv4 one (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`,
/// NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are classified by that IPv4 address.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> AddrClass {
    if METADATA_V4.contains(&ip) {
        return AddrClass::Metadata;
    }
    let [a, b, c, _] = ip.octets();
    match (a, b, c) {
        _ if ip.is_unspecified() => AddrClass::Unspecified,
        _ if ip.is_broadcast() => AddrClass::Broadcast,
        (0, _, _) => AddrClass::ThisNetwork,
        (127, _, _) => AddrClass::Loopback,
        (10, _, _) | (192, 168, _) => AddrClass::Private,
        (172, b, _) if (16..32).contains(&b) => AddrClass::Private,
        (169, 254, _) => AddrClass::LinkLocal,
        (100, b, _) if (64..128).contains(&b) => AddrClass::Shared,
        (224..=239, _, _) => AddrClass::Multicast,
        (240..=255, _, _) => AddrClass::Reserved,
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddrClass::Reserved,
        (198, 18 | 19, _) => AddrClass::Reserved,
        _ => AddrClass::Public,
    }
}

fn classify_v6(ip: Ipv6Addr) -> AddrClass {
    if METADATA_V6.contains(&ip) {
        return AddrClass::Metadata;
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| classify_v4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    if ip.is_unspecified() {
        return AddrClass::Unspecified;
    }
    if ip.is_loopback() {
        return AddrClass::Loopback;
    }
    match s {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated but still routed by some stacks).
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
        // NAT64's well-known prefix: the IPv4 address it translates to.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
        [0x64, 0xff9b, 1, ..] => AddrClass::Private,
        // 6to4: the IPv4 address of the relay it tunnels to.
        [0x2002, hi, lo, ..] => embedded(hi, lo),
        [0x100, 0, 0, 0, ..] => AddrClass::Reserved,
        [0x2001, 0xdb8, ..] => AddrClass::Reserved,
        [0x2001, b, ..] if b < 0x200 => AddrClass::Reserved,
        [a, ..] if a & 0xfe00 == 0xfc00 => AddrClass::Private,
        [a, ..] if a & 0xffc0 == 0xfe80 => AddrClass::LinkLocal,
        [a, ..] if a & 0xffc0 == 0xfec0 => AddrClass::Reserved,
        [a, ..] if a & 0xff00 == 0xff00 => AddrClass::Multicast,
        _ => AddrClass::Public,
    }
}

/// The addresses to connect to for `host:port`: the policy's fixed answer when it names the host, else the
/// system resolver's. If any address is not public and the host is not `internal` (or is, but the class is one
/// no name may reach: metadata, reserved, multicast…), the whole name is refused: a name whose answers mix
/// public and private addresses is refused rather than filtered, so a split or rebinding answer cannot pick
/// which one the caller gets.
pub async fn resolve(policy: &Policy, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let host = normalize_host(host)?;
    let addrs: Vec<SocketAddr> = match policy.fixed_answer(&host) {
        Some(ips) => ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect(),
        None => match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(found) => found.collect(),
            Err(e) => {
                let reason = format!("{host} did not resolve ({e}); check the name in the rule");
                return Err(Refusal::new(RefusalKind::ResolveFailed, reason));
            }
        },
    };
    if addrs.is_empty() {
        let reason = format!("{host} resolved to no address; check the name in the rule");
        return Err(Refusal::new(RefusalKind::ResolveFailed, reason));
    }
    check(policy, &host, &addrs)?;
    Ok(addrs)
}

/// Refuses `host` if any of its addresses is not one it may reach.
pub fn check(policy: &Policy, host: &str, addrs: &[SocketAddr]) -> Result<(), Refusal> {
    let internal = policy.is_internal(host);
    for addr in addrs {
        let class = classify(addr.ip());
        let allowed = class == AddrClass::Public || (internal && class.internal_may_use());
        if allowed {
            continue;
        }
        let fix = if class.internal_may_use() {
            "the operator may mark the name internal if it is meant to be"
        } else {
            "no name may reach this class of address"
        };
        let reason = format!("{host} resolves to {} ({}); {fix}", addr.ip(), class.as_str());
        return Err(Refusal::new(RefusalKind::PrivateAddress, reason));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use AddrClass::*;

    #[test]
    fn the_classifier_over_a_table_of_addresses() {
        let table: &[(&str, AddrClass)] = &[
            ("93.184.216.34", Public),
            ("8.8.8.8", Public),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.1.2.3", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("172.32.0.1", Public),
            ("172.15.255.255", Public),
            ("192.168.1.1", Private),
            ("169.254.1.1", LinkLocal),
            ("169.254.169.254", Metadata),
            ("169.254.170.2", Metadata),
            ("100.100.100.200", Metadata),
            ("168.63.129.16", Metadata),
            ("192.0.0.192", Metadata),
            ("100.64.0.1", Shared),
            ("100.127.255.255", Shared),
            ("100.128.0.1", Public),
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", ThisNetwork),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("255.255.255.255", Broadcast),
            ("240.0.0.1", Reserved),
            ("192.0.2.1", Reserved),
            ("198.18.0.1", Reserved),
            ("203.0.113.9", Reserved),
            ("2606:4700::1111", Public),
            ("::1", Loopback),
            ("::", Unspecified),
            ("fc00::1", Private),
            ("fd12:3456::1", Private),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Reserved),
            ("fd00:ec2::254", Metadata),
            ("ff02::1", Multicast),
            ("2001:db8::1", Reserved),
            ("2001::1", Reserved),
            ("100::1", Reserved),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", Metadata),
            ("::ffff:10.0.0.1", Private),
            ("::ffff:8.8.8.8", Public),
            ("::127.0.0.1", Loopback),
            ("::10.0.0.1", Private),
            ("64:ff9b::7f00:1", Loopback),
            ("64:ff9b::a9fe:a9fe", Metadata),
            ("64:ff9b::808:808", Public),
            ("64:ff9b:1::1", Private),
            ("2002:7f00:1::1", Loopback),
            ("2002:c0a8:101::1", Private),
        ];
        for (text, want) in table {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(classify(ip), *want, "{text}");
        }
    }

    fn policy() -> Policy {
        Policy::default()
            .with_host("db.test", vec!["10.0.0.5".parse().unwrap()])
            .with_host("mixed.test", vec!["8.8.8.8".parse().unwrap(), "127.0.0.1".parse().unwrap()])
            .with_host("meta.test", vec!["169.254.169.254".parse().unwrap()])
            .with_host("pub.test", vec!["8.8.4.4".parse().unwrap()])
            .with_host("none.test", vec![])
    }

    #[tokio::test]
    async fn fixed_answers_are_checked_and_pinned() {
        let p = policy();
        assert_eq!(resolve(&p, "PUB.test.", 443).await.unwrap(), vec!["8.8.4.4:443".parse().unwrap()]);
        let r = resolve(&p, "db.test", 5432).await.unwrap_err();
        assert_eq!(r.kind, RefusalKind::PrivateAddress);
        assert!(r.reason.contains("10.0.0.5 (private)"), "{r}");
        assert!(resolve(&p.clone().allow_internal("db.test"), "db.test", 5432).await.is_ok());
        assert_eq!(resolve(&p, "none.test", 443).await.unwrap_err().kind, RefusalKind::ResolveFailed);
    }

    #[tokio::test]
    async fn one_private_answer_refuses_the_whole_name() {
        let r = resolve(&policy(), "mixed.test", 443).await.unwrap_err();
        assert_eq!(r.kind, RefusalKind::PrivateAddress);
        assert!(r.reason.contains("127.0.0.1 (loopback)"), "{r}");
    }

    #[tokio::test]
    async fn metadata_is_never_reachable_even_for_an_internal_name() {
        let p = policy().allow_internal("meta.test");
        let r = resolve(&p, "meta.test", 80).await.unwrap_err();
        assert_eq!(r.kind, RefusalKind::PrivateAddress);
        assert!(r.reason.contains("no name may reach"), "{r}");
    }

    #[tokio::test]
    async fn the_system_resolver_answers_localhost_as_loopback() {
        let r = resolve(&Policy::default(), "localhost", 80).await.unwrap_err();
        assert_eq!(r.kind, RefusalKind::PrivateAddress, "{r}");
    }
}
