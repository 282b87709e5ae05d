//! The trace exporter's settings from the OpenTelemetry SDK's standard environment variables
//! (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER[_ARG]`,
//! `OTEL_BSP_*`, `OTEL_SDK_DISABLED`). Unlike the SDK's defaults, nothing is exported unless an endpoint is
//! named: a runtime that was not told where its collector is sends nothing anywhere.

use std::time::Duration;

use super::Parent;

/// Why the settings cannot be used; `hcpx serve` refuses to start with it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error(
        "{var}={value:?} is not a collector URL; write it as http://HOST:PORT (e.g. http://127.0.0.1:4318)"
    )]
    Endpoint { var: &'static str, value: String },
    #[error("OTEL_EXPORTER_OTLP_PROTOCOL={0:?} is not supported; use http/protobuf")]
    Protocol(String),
    #[error("OTEL_TRACES_SAMPLER={0:?} is not a sampler; use always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")]
    Sampler(String),
    #[error("{var}={value:?} is not {what}")]
    Number { var: &'static str, value: String, what: &'static str },
    #[error("{var}: {entry:?} is not key=value; write it as key1=value1,key2=value2")]
    Pair { var: &'static str, entry: String },
}

/// Which calls are traced.
#[derive(Debug, Clone, PartialEq)]
pub enum Sampler {
    AlwaysOn,
    AlwaysOff,
    /// This fraction of traces, decided from the trace id (so every replica decides alike).
    Ratio(f64),
    /// The caller's decision when it sent a `traceparent`, else the inner sampler's.
    ParentBased(Box<Sampler>),
}

impl Sampler {
    /// Whether a call of trace `trace_id` (child of `parent`, if any) is traced.
    pub(crate) fn sampled(&self, parent: Option<&Parent>, trace_id: &[u8; 16]) -> bool {
        match self {
            Sampler::AlwaysOn => true,
            Sampler::AlwaysOff => false,
            Sampler::Ratio(r) => {
                let mut low = [0u8; 8];
                low.copy_from_slice(&trace_id[8..]);
                // The low 63 bits against the ratio of 2^63.
                let v = u64::from_be_bytes(low) >> 1;
                (v as f64) < r * (1u64 << 63) as f64
            }
            Sampler::ParentBased(root) => match parent {
                Some(p) => p.sampled,
                None => root.sampled(None, trace_id),
            },
        }
    }
}

/// Where spans go: an OTLP/HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub path: String,
    /// `https`: TLS, the collector's certificate verified against the system's roots (`SSL_CERT_FILE` honoured).
    pub tls: bool,
}

/// The exporter's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceConfig {
    pub endpoint: Endpoint,
    /// Sent with every export (an API key of the operator's collector); never logged.
    pub headers: Vec<(String, String)>,
    /// The resource's attributes: `service.name`, `service.instance.id` and the operator's own.
    pub resource: Vec<(String, String)>,
    pub sampler: Sampler,
    pub timeout: Duration,
    pub schedule_delay: Duration,
    pub max_queue: usize,
    pub max_batch: usize,
}

impl TraceConfig {
    /// The settings from this process's environment, or `None` when tracing is off.
    pub fn from_env() -> Result<Option<TraceConfig>, ConfigError> {
        TraceConfig::from_vars(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
    }

    /// The settings from `var` (a variable's value, `None` when unset or empty).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<TraceConfig>, ConfigError> {
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none")) {
            return Ok(None);
        }
        let endpoint = match (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), var("OTEL_EXPORTER_OTLP_ENDPOINT")) {
            (Some(e), _) => endpoint("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &e, false)?,
            (None, Some(e)) => endpoint("OTEL_EXPORTER_OTLP_ENDPOINT", &e, true)?,
            (None, None) => return Ok(None),
        };
        let protocol =
            var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
        if let Some(p) = protocol.filter(|p| p.trim() != "http/protobuf") {
            return Err(ConfigError::Protocol(p));
        }
        let mut headers = pairs("OTEL_EXPORTER_OTLP_HEADERS", var("OTEL_EXPORTER_OTLP_HEADERS"))?;
        headers.extend(pairs("OTEL_EXPORTER_OTLP_TRACES_HEADERS", var("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))?);
        let mut resource = pairs("OTEL_RESOURCE_ATTRIBUTES", var("OTEL_RESOURCE_ATTRIBUTES"))?;
        let service = var("OTEL_SERVICE_NAME")
            .or_else(|| resource.iter().find(|(k, _)| k == "service.name").map(|(_, v)| v.clone()))
            .unwrap_or_else(|| "hcpx".into());
        resource.retain(|(k, _)| k != "service.name");
        resource.insert(0, ("service.name".into(), service));
        if !resource.iter().any(|(k, _)| k == "service.instance.id") {
            // One per process: each replica of a fleet is told apart.
            let id = format!("{:016x}", super::next_id());
            resource.push(("service.instance.id".into(), id));
        }
        resource.push(("service.version".into(), env!("CARGO_PKG_VERSION").into()));
        let ms = |name: &'static str, default: u64| -> Result<Duration, ConfigError> {
            number(name, var(name), default).map(Duration::from_millis)
        };
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") {
            Some(_) => ms("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 10_000)?,
            None => ms("OTEL_EXPORTER_OTLP_TIMEOUT", 10_000)?,
        };
        let max_queue = number("OTEL_BSP_MAX_QUEUE_SIZE", var("OTEL_BSP_MAX_QUEUE_SIZE"), 2048)?.max(1);
        let max_batch =
            number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), 512)?.max(1);
        Ok(Some(TraceConfig {
            endpoint,
            headers,
            resource,
            sampler: sampler(var("OTEL_TRACES_SAMPLER"), var("OTEL_TRACES_SAMPLER_ARG"))?,
            timeout: timeout.max(Duration::from_millis(1)),
            schedule_delay: ms("OTEL_BSP_SCHEDULE_DELAY", 5000)?.max(Duration::from_millis(1)),
            max_queue: usize::try_from(max_queue).unwrap_or(usize::MAX),
            max_batch: usize::try_from(max_batch.min(max_queue)).unwrap_or(usize::MAX),
        }))
    }
}

fn number(var: &'static str, value: Option<String>, default: u64) -> Result<u64, ConfigError> {
    match value {
        None => Ok(default),
        Some(v) => {
            v.trim().parse().map_err(|_| ConfigError::Number { var, value: v, what: "a whole number" })
        }
    }
}

/// `OTEL_TRACES_SAMPLER` and its argument; the SDK's default is `parentbased_always_on`.
fn sampler(name: Option<String>, arg: Option<String>) -> Result<Sampler, ConfigError> {
    let ratio = || -> Result<f64, ConfigError> {
        match &arg {
            None => Ok(1.0),
            Some(a) => a.trim().parse::<f64>().ok().filter(|r| (0.0..=1.0).contains(r)).ok_or_else(|| {
                ConfigError::Number {
                    var: "OTEL_TRACES_SAMPLER_ARG",
                    value: a.clone(),
                    what: "a ratio from 0 to 1",
                }
            }),
        }
    };
    let name = name.unwrap_or_else(|| "parentbased_always_on".into());
    Ok(match name.trim() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::Ratio(ratio()?),
        "parentbased_always_on" => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => Sampler::ParentBased(Box::new(Sampler::Ratio(ratio()?))),
        _ => return Err(ConfigError::Sampler(name)),
    })
}

/// `key=value` pairs separated by commas, values percent-decoded (W3C Baggage octets, as the SDK reads them).
fn pairs(var: &'static str, value: Option<String>) -> Result<Vec<(String, String)>, ConfigError> {
    let Some(value) = value else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let pair = || ConfigError::Pair { var, entry: entry.to_string() };
        let (k, v) = entry.split_once('=').ok_or_else(pair)?;
        let (k, v) = (k.trim(), percent_decode(v.trim()).ok_or_else(pair)?);
        // A header's name and value go on the wire as they are: no line breaks, no controls.
        let clean = |s: &str| !s.is_empty() && s.bytes().all(|c| (0x20..0x7f).contains(&c));
        if !clean(k) || !(v.is_empty() || clean(&v)) || k.contains(':') && var.contains("HEADERS") {
            return Err(pair());
        }
        out.push((k.to_string(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// An OTLP/HTTP endpoint: `http://HOST[:PORT][/PATH]`; a base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`) gets
/// `/v1/traces` after its path.
fn endpoint(var: &'static str, value: &str, base: bool) -> Result<Endpoint, ConfigError> {
    let bad = || ConfigError::Endpoint { var, value: value.to_string() };
    let v = value.trim();
    let tls = v.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"));
    let rest = if tls {
        &v[8..]
    } else {
        v.get(..7).filter(|s| s.eq_ignore_ascii_case("http://")).map(|_| &v[7..]).ok_or_else(bad)?
    };
    let default_port = if tls { 443 } else { 80 };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (host, port) = if let Some(h) = authority.strip_prefix('[') {
        let (h, after) = h.split_once(']').ok_or_else(bad)?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if after.is_empty() => default_port,
            None => return Err(bad()),
        };
        (h.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().map_err(|_| bad())?),
            None => (authority.to_string(), default_port),
        }
    };
    let host_ok = !host.is_empty()
        && host.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b':' | b'_'));
    if !host_ok
        || path.bytes().any(|c| !(0x21..0x7f).contains(&c))
        || path.contains('?')
        || path.contains('#')
    {
        return Err(bad());
    }
    let path = if base {
        format!("{}/v1/traces", path.trim_end_matches('/'))
    } else if path.is_empty() {
        "/".to_string()
    } else {
        path.to_string()
    };
    Ok(Endpoint { host, port, path, tls })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(vars: &[(&str, &str)]) -> Result<Option<TraceConfig>, ConfigError> {
        let m: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TraceConfig::from_vars(|k| m.get(k).cloned())
    }

    #[test]
    fn off_unless_an_endpoint_is_named() {
        assert_eq!(cfg(&[]), Ok(None));
        assert_eq!(cfg(&[("OTEL_SERVICE_NAME", "x")]), Ok(None));
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")];
        assert!(cfg(&on).unwrap().is_some());
        assert_eq!(cfg(&[on[0], ("OTEL_SDK_DISABLED", "true")]), Ok(None));
        assert_eq!(cfg(&[on[0], ("OTEL_TRACES_EXPORTER", "none")]), Ok(None));
    }

    #[test]
    fn the_standard_variables_are_read() {
        let c = cfg(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.internal:4318/otel/"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%20x,team=ops"),
            ("OTEL_SERVICE_NAME", "edge"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.instance.id=r1"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            c.endpoint,
            Endpoint {
                host: "collector.internal".into(),
                port: 4318,
                path: "/otel/v1/traces".into(),
                tls: false
            }
        );
        assert_eq!(c.headers, vec![("api-key".into(), "s x".into()), ("team".into(), "ops".into())]);
        assert_eq!(c.resource[0], ("service.name".into(), "edge".into()));
        assert!(c.resource.contains(&("service.instance.id".into(), "r1".into())));
        assert_eq!(c.sampler, Sampler::ParentBased(Box::new(Sampler::Ratio(0.25))));
        let t = cfg(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://[::1]:9/x")]).unwrap().unwrap();
        assert_eq!(t.endpoint, Endpoint { host: "::1".into(), port: 9, path: "/x".into(), tls: false });
        let t = cfg(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example")]).unwrap().unwrap();
        assert_eq!(
            t.endpoint,
            Endpoint { host: "otel.example".into(), port: 443, path: "/v1/traces".into(), tls: true }
        );
    }

    #[test]
    fn a_bad_setting_is_named() {
        let e = |vars: &[(&str, &str)]| cfg(vars).unwrap_err().to_string();
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(e(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]).contains("not a collector URL"));
        assert!(e(&[on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).contains("use http/protobuf"));
        assert!(e(&[on, ("OTEL_TRACES_SAMPLER", "sometimes")]).contains("not a sampler"));
        assert!(e(&[on, ("OTEL_EXPORTER_OTLP_HEADERS", "a=b\r\nx")]).contains("not key=value"));
        assert!(e(&[on, ("OTEL_EXPORTER_OTLP_HEADERS", "a=%0d%0ax")]).contains("not key=value"));
        assert!(e(&[on, ("OTEL_BSP_SCHEDULE_DELAY", "soon")]).contains("a whole number"));
    }

    #[test]
    fn the_ratio_sampler_keeps_about_its_share() {
        let s = Sampler::Ratio(0.5);
        let kept = (0..2000).filter(|_| s.sampled(None, &super::super::trace_id())).count();
        assert!((800..1200).contains(&kept), "{kept}");
        assert!(!Sampler::Ratio(0.0).sampled(None, &[0xff; 16]));
    }
}
