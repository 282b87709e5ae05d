#!/usr/bin/env python3
"""The tickets example's HTTP API, for the tickets packs' proofs and tests only: HTTPS on 127.0.0.1, every
request must carry `Authorization: Bearer TOKEN`. GET /tickets lists the tickets, POST /tickets creates one from a
JSON body {"title": ..., "body": ...}. Each request is one line of the --seen file (method, path, the
authorization header as received), so a proof can check what reached the API. Stops after --lifetime seconds.

usage: server.py --cert C --key K --token-file F --port-file P --seen S [--port N] [--lifetime SECONDS]
"""
import argparse, json, ssl, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TICKETS = [
    {"id": "T-1", "title": "Login page times out", "status": "open"},
    {"id": "T-2", "title": "Export misses the header row", "status": "closed"},
]


def main():
    a = argparse.ArgumentParser()
    for flag in ("--cert", "--key", "--token-file", "--port-file", "--seen"):
        a.add_argument(flag, required=True)
    a.add_argument("--port", type=int, default=0)
    a.add_argument("--lifetime", type=float, default=300)
    args = a.parse_args()
    token = open(args.token_file).read().strip()
    lock = threading.Lock()
    tickets = list(TICKETS)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def answer(self, status, doc):
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def authorized(self):
            got = self.headers.get("Authorization", "")
            with lock, open(args.seen, "a") as f:
                f.write("%s %s auth=%s\n" % (self.command, self.path, got))
            if got != "Bearer " + token:
                self.answer(401, {"error": "unauthorized: send Authorization: Bearer <token>"})
                return False
            return True

        def do_GET(self):
            if not self.authorized():
                return
            if self.path.split("?")[0] != "/tickets":
                return self.answer(404, {"error": "no such path " + self.path})
            with lock:
                self.answer(200, {"tickets": tickets})

        def do_POST(self):
            if not self.authorized():
                return
            if self.path != "/tickets":
                return self.answer(404, {"error": "no such path " + self.path})
            n = int(self.headers.get("Content-Length", "0") or 0)
            try:
                doc = json.loads(self.rfile.read(min(n, 65536)) or b"{}")
                title = str(doc["title"]).strip()
            except (ValueError, KeyError, TypeError):
                return self.answer(400, {"error": "the body must be JSON with a title"})
            if not title:
                return self.answer(400, {"error": "the title is empty"})
            with lock:
                t = {"id": "T-%d" % (len(tickets) + 1), "title": title, "status": "open"}
                if doc.get("body"):
                    t["body"] = str(doc["body"])
                tickets.append(t)
            self.answer(201, t)

    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    threading.Timer(args.lifetime, httpd.shutdown).start()
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    import os
    os.replace(args.port_file + ".tmp", args.port_file)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
