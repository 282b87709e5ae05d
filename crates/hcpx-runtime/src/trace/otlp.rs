//! The OTLP/HTTP protobuf body of a batch of spans (`ExportTraceServiceRequest`, opentelemetry-proto v1), encoded
//! by hand: the handful of messages a span needs, with their stable field numbers, instead of a protobuf code
//! generator and its runtime. The tests decode it with the official definitions (tests/otlp/receiver.py).

use super::{Attr, SpanData};

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// A protobuf message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

impl Msg {
    fn key(&mut self, field: u32, wire: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire));
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn msg(&mut self, field: u32, m: &Msg) {
        self.bytes(field, &m.0);
    }

    fn uint(&mut self, field: u32, v: u64) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(v);
        }
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
}

/// `KeyValue { string key = 1; AnyValue value = 2; }`, `AnyValue { string_value = 1; bool_value = 2;
/// int_value = 3; }`.
fn key_value(key: &str, value: &Attr) -> Msg {
    let mut v = Msg::default();
    match value {
        Attr::Str(s) => v.bytes(1, s.as_bytes()),
        Attr::Bool(b) => {
            v.key(2, VARINT);
            v.varint(u64::from(*b));
        }
        Attr::Int(i) => {
            v.key(3, VARINT);
            v.varint(*i as u64);
        }
    }
    let mut kv = Msg::default();
    kv.string(1, key);
    kv.msg(2, &v);
    kv
}

/// One `Span` (opentelemetry/proto/trace/v1/trace.proto).
fn span(s: &SpanData) -> Msg {
    let mut m = Msg::default();
    m.bytes(1, &s.trace_id);
    m.bytes(2, &s.span_id);
    if let Some(state) = s.trace_state.as_deref() {
        m.string(3, state);
    }
    if let Some(p) = s.parent {
        m.bytes(4, &p);
    }
    m.string(5, s.name);
    m.uint(6, u64::from(s.kind as u8));
    m.fixed64(7, s.start_ns);
    m.fixed64(8, s.end_ns);
    for (k, v) in &s.attrs {
        m.msg(9, &key_value(k, v));
    }
    // `Status { string message = 2; StatusCode code = 3; }`: error (2) on a non-ok code, with the code alone.
    if let Some(code) = s.error {
        let mut st = Msg::default();
        st.string(2, code);
        st.uint(3, 2);
        m.msg(15, &st);
    }
    // flags: the W3C trace flags (sampled) and that the parent's remoteness is known (bit 8), remote (bit 9).
    let remote = if s.remote_parent { 0x300 } else { 0x100 };
    m.fixed32(16, 0x01 | remote);
    m
}

/// `ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }` with one resource (the process:
/// `resource` attributes) and one scope (`hcpx`).
pub fn export_request(resource: &[(String, String)], spans: &[SpanData]) -> Vec<u8> {
    let mut res = Msg::default();
    for (k, v) in resource {
        res.msg(1, &key_value(k, &Attr::Str(v.clone())));
    }
    let mut scope = Msg::default();
    scope.string(1, "hcpx");
    scope.string(2, env!("CARGO_PKG_VERSION"));
    let mut scope_spans = Msg::default();
    scope_spans.msg(1, &scope);
    for s in spans {
        scope_spans.msg(2, &span(s));
    }
    let mut rs = Msg::default();
    rs.msg(1, &res);
    rs.msg(2, &scope_spans);
    let mut req = Msg::default();
    req.msg(1, &rs);
    req.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut m = Msg::default();
        m.varint(1);
        m.varint(300);
        m.varint(u64::MAX);
        assert_eq!(&m.0[..3], &[0x01, 0xac, 0x02]);
        assert_eq!(m.0.len(), 3 + 10);
    }

    #[test]
    fn a_negative_int_is_ten_bytes_twos_complement() {
        let kv = key_value("k", &Attr::Int(-1));
        // key(1) "k", value(2) { int_value(3) varint of u64::MAX }
        assert_eq!(kv.0[..3], [0x0a, 0x01, b'k']);
        assert_eq!(kv.0[3], 0x12);
        assert_eq!(kv.0[4], 11);
    }
}
