//! `binding.inject`: each Binding field bound to a host, parsed and checked (issue #36 point 5). The host is
//! written as in `hosts` and must be one the pack declares; exactly one of a header or a query parameter; the
//! field must be one a wrap's `agent_env` fills. Each refused entry is one lint issue.

use indexmap::IndexMap;

use super::SURFACE;
use crate::model::diagnostic::{Issues, LintKind};
use crate::model::naming::is_arg_name;
use crate::pack::hosts::HostRule;
use crate::pack::raw::{AdapterKind, RawManifest};
use crate::pack::{Command, Inject, InjectSlot, WrapTarget};

/// Headers hcpx (or hyper) frames itself, or the proxy's own: a placeholder there has nowhere to go.
const FRAMED: [&str; 11] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-authorization",
    "proxy-connection",
    "proxy-authenticate",
];

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The validated entries; the refused ones become issues.
pub(super) fn parse_inject(
    m: &RawManifest,
    hosts: &[HostRule],
    commands: &IndexMap<String, Command>,
    wrap: Option<&WrapTarget>,
    is: &mut Issues,
) -> Vec<Inject> {
    let Some(b) = &m.binding else { return Vec::new() };
    let mut declared: Vec<&HostRule> = hosts.iter().collect();
    declared.extend(commands.values().filter_map(|c| c.hosts.as_deref()).flatten());
    let filled: Vec<String> = wrap
        .map(|w| {
            w.agent_env
                .values()
                .flat_map(|t| {
                    t.vars().filter_map(|v| v.strip_prefix("binding.")).map(String::from).collect::<Vec<_>>()
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<Inject> = Vec::new();
    for (i, e) in b.inject.iter().enumerate() {
        let at = format!("/binding/inject/{i}");
        let invalid = |is: &mut Issues, ptr: &str, message: String, fix: &str| {
            is.push(LintKind::InjectInvalid, SURFACE, format!("{at}{ptr}"), message, fix.to_string());
        };
        if !is_arg_name(&e.field) {
            invalid(
                is,
                "/field",
                format!("binding.inject field {:?} is not a field name", e.field),
                "name the field as in {{binding.FIELD}}: letters, digits, `_` and `-`",
            );
            continue;
        }
        if m.kind == Some(AdapterKind::Wrap) && !filled.contains(&e.field) {
            invalid(
                is,
                "/field",
                format!("binding.inject binds field {} to a host, and no wrap.agent_env value uses {{{{binding.{}}}}}", e.field, e.field),
                "put {{binding.FIELD}} in the wrap.agent_env variable the CLI reads its credential from, or remove the entry",
            );
            continue;
        }
        let slot = match (&e.header, &e.query) {
            (Some(h), None) => {
                let h = h.to_ascii_lowercase();
                if !is_token(&h) {
                    invalid(
                        is,
                        "/header",
                        format!("binding.inject header {h:?} is not a header name"),
                        "name the header the api reads the credential from, such as authorization",
                    );
                    continue;
                }
                if FRAMED.contains(&h.as_str()) || h.starts_with("proxy-") {
                    invalid(is, "/header", format!("binding.inject header {h} is one hcpx frames itself; a credential cannot go there"), "name the header the api reads the credential from, such as authorization");
                    continue;
                }
                InjectSlot::Header(h)
            }
            (None, Some(q)) if !q.is_empty() => InjectSlot::Query(q.clone()),
            (None, Some(_)) => {
                invalid(
                    is,
                    "/query",
                    "binding.inject query is empty".into(),
                    "name the query parameter the api reads the credential from, such as api_key",
                );
                continue;
            }
            _ => {
                invalid(
                    is,
                    "",
                    format!(
                        "binding.inject entry for field {} must give exactly one of header and query",
                        e.field
                    ),
                    "keep one: \"header\": \"authorization\" or \"query\": \"api_key\"",
                );
                continue;
            }
        };
        // A host that is no host entry is the hosts lint's own issue (malformed, an IP address, not bare, a port
        // out of range), at `host/0`.
        let Some(host) =
            super::hosts::parse_hosts(std::slice::from_ref(&e.host), &format!("{at}/host"), is).pop()
        else {
            continue;
        };
        if !declared.contains(&&host) {
            let names: Vec<String> = declared.iter().map(|h| h.to_string()).collect();
            is.push(
                LintKind::InjectHostUndeclared,
                SURFACE,
                format!("{at}/host"),
                format!("binding.inject sends field {} to {host}, which is not one of the pack's hosts ({})", e.field, if names.is_empty() { "none".to_string() } else { names.join(", ") }),
                format!("declare {host} in hosts (and have the operator allow it), or bind the field to a declared host"),
            );
            continue;
        }
        if out.iter().any(|o| o.field == e.field && o.host == host) {
            invalid(
                is,
                "",
                format!("binding.inject binds field {} to {host} twice", e.field),
                "keep one entry per field and host",
            );
            continue;
        }
        out.push(Inject { field: e.field.clone(), host, slot });
    }
    out
}
