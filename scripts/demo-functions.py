#!/usr/bin/env python3
"""Demo function service for the sample workflows in workflows/ (standard library only).

    python3 scripts/demo-functions.py            # listens on 127.0.0.1:9000
    FLOWBROKER_FUNCTIONS=reserveStock=http://127.0.0.1:9000/reserveStock,requestCreditCheck=http://127.0.0.1:9000/requestCreditCheck,buildReport=http://127.0.0.1:9000/buildReport scripts/run.sh

Each path answers the POSTed JSON parameters with a small JSON result and logs the call with
its Idempotency-Key, so you can watch the broker call it (and re-call it after a crash with the
same key).
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RESULTS = {
    "/reserveStock": lambda p: {"reserved": p.get("sku"), "quantity": p.get("quantity")},
    "/requestCreditCheck": lambda p: {"requested": True},
    "/buildReport": lambda p: {"report": "ok", "for": p.get("for")},
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        params = json.loads(body or b"{}")
        fn = RESULTS.get(self.path)
        status, out = (200, fn(params)) if fn else (404, {"name": "NotFound", "message": self.path})
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        key = self.headers.get("Idempotency-Key")
        print(f"{self.path} key={key} params={params} -> {status} {out}", file=sys.stderr)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 9000
    print(f"demo functions on 127.0.0.1:{port}", file=sys.stderr)
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
