"""An OTLP/HTTP trace receiver for the trace tests (tests/integration/traces.rs): listens on 127.0.0.1 (its port
printed as the first line of stdout), decodes each `POST /v1/traces` body with the official OpenTelemetry
protobuf definitions (PyPI `opentelemetry-proto`), and appends one JSON line per span to OUT, and every body as
received to OUT.raw (what the tests search for values that must never be exported). With CERT and KEY (PEM files)
it serves HTTPS.

Usage: receiver.py OUT [CERT KEY]"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

OUT = sys.argv[1]


def value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


def attrs(kvs):
    return {kv.key: value(kv.value) for kv in kvs}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        with open(OUT + ".raw", "ab") as raw:
            raw.write(body)
        with open(OUT + ".headers", "a") as h:
            h.write(json.dumps({"path": self.path, "headers": dict(self.headers.items())}) + "\n")
        if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        req = trace_service_pb2.ExportTraceServiceRequest()
        req.ParseFromString(body)
        lines = []
        for rs in req.resource_spans:
            resource = attrs(rs.resource.attributes)
            for ss in rs.scope_spans:
                for s in ss.spans:
                    lines.append(json.dumps({
                        "resource": resource,
                        "scope": ss.scope.name,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "trace_state": s.trace_state,
                        "name": s.name,
                        "kind": s.kind,
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attributes": attrs(s.attributes),
                        "status": {"code": s.status.code, "message": s.status.message},
                        "flags": s.flags,
                    }))
        with open(OUT, "a") as out:
            for line in lines:
                out.write(line + "\n")
        resp = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(resp)))
        self.end_headers()
        self.wfile.write(resp)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
if len(sys.argv) > 3:
    import ssl

    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[2], sys.argv[3])
    server.socket = tls.wrap_socket(server.socket, server_side=True)
print(server.server_address[1], flush=True)
server.serve_forever()
