#!/usr/bin/env python3
"""A Lambda-compatible Invoke endpoint for durable functions written with AWS's Python SDK
(aws-durable-execution-sdk-python), so they run on flowbroker with nothing from AWS.

    durable-host.py [--listen 127.0.0.1:9100] [--broker http://127.0.0.1:8080] FILE[:ATTR]...

Each FILE is a Python module; its handler (ATTR, default `handler`, decorated with
`@durable_execution`) is served as the function named after the file's stem (`orders.py`
-> `orders`; `name=FILE:ATTR` names it explicitly) at

    POST /2015-03-31/functions/{name}/invocations

the path the Lambda Runtime Interface Emulator and SAM local serve. The SDK inside the
handler reaches flowbroker's durable execution API through `AWS_ENDPOINT_URL_LAMBDA`
(set from --broker, default http://127.0.0.1:8080); a region and credentials are filled in
when unset (the SDK needs them; flowbroker ignores them unless http.auth_token is set).

A handler that raises is answered as Lambda answers it: 200 with `X-Amz-Function-Error:
Unhandled` and `{errorMessage, errorType, stackTrace}`; flowbroker invokes it again later.
"""

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
import types
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PREFIX = "/2015-03-31/functions/"
SUFFIX = "/invocations"


def load(spec):
    """`[name=]FILE[:ATTR]` -> (name, handler)."""
    name = None
    if "=" in spec.split(":")[0]:
        name, spec = spec.split("=", 1)
    path, _, attr = spec.partition(":")
    attr = attr or "handler"
    path = Path(path)
    module_name = path.stem
    loader = importlib.util.spec_from_file_location(module_name, path)
    if loader is None:
        sys.exit(f"error: {path}: not a Python file")
    module = importlib.util.module_from_spec(loader)
    sys.path.insert(0, str(path.parent.resolve()))
    loader.loader.exec_module(module)
    handler = getattr(module, attr, None)
    if not callable(handler):
        sys.exit(f"error: {path} has no callable {attr!r} (write `@durable_execution def {attr}(event, context)`)")
    return name or path.stem, handler


def context(name, timeout_ms):
    deadline = time.monotonic() + timeout_ms / 1000
    return types.SimpleNamespace(
        aws_request_id=str(uuid.uuid4()),
        function_name=name,
        function_version="$LATEST",
        invoked_function_arn=f"arn:aws:lambda:{os.environ['AWS_DEFAULT_REGION']}:000000000000:function:{name}",
        memory_limit_in_mb="1024",
        log_group_name=None,
        log_stream_name=None,
        tenant_id=None,
        client_context=None,
        identity=None,
        get_remaining_time_in_millis=lambda: max(0, int((deadline - time.monotonic()) * 1000)),
        log=lambda msg: print(msg, file=sys.stderr, flush=True),
    )


def serve(handlers, listen, timeout_ms):
    class Invoke(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # one line per invocation on stderr
            sys.stderr.write("durable-host: " + (fmt % args) + "\n")

        def answer(self, status, body, headers=()):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            path = self.path.split("?")[0]
            if not (path.startswith(PREFIX) and path.endswith(SUFFIX)):
                return self.answer(404, {"Type": "User", "message": f"no route {path}"},
                                   [("x-amzn-ErrorType", "ResourceNotFoundException")])
            name = path[len(PREFIX):-len(SUFFIX)]
            handler = handlers.get(name)
            if handler is None:
                return self.answer(404, {"Type": "User", "message": f"Function not found: {name}"},
                                   [("x-amzn-ErrorType", "ResourceNotFoundException")])
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                event = json.loads(raw or b"{}")
                result = handler(event, context(name, timeout_ms))
            except Exception as e:  # the function raised: Lambda's "Unhandled" answer
                return self.answer(200, {
                    "errorMessage": str(e),
                    "errorType": type(e).__name__,
                    "stackTrace": traceback.format_exception(e),
                }, [("X-Amz-Function-Error", "Unhandled")])
            self.answer(200, result)

    host, _, port = listen.rpartition(":")
    server = ThreadingHTTPServer((host or "127.0.0.1", int(port)), Invoke)
    server.daemon_threads = True
    print(f"durable-host: serving {', '.join(sorted(handlers))} on http://{listen}", file=sys.stderr, flush=True)
    server.serve_forever()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", default="127.0.0.1:9100")
    p.add_argument("--broker", default=os.environ.get("AWS_ENDPOINT_URL_LAMBDA", "http://127.0.0.1:8080"),
                   help="flowbroker's HTTP listener (AWS_ENDPOINT_URL_LAMBDA)")
    p.add_argument("--timeout-ms", type=int, default=900_000, help="what get_remaining_time_in_millis starts from")
    p.add_argument("handlers", nargs="+", metavar="[NAME=]FILE[:ATTR]")
    a = p.parse_args()
    os.environ["AWS_ENDPOINT_URL_LAMBDA"] = a.broker
    os.environ.setdefault("AWS_DEFAULT_REGION", os.environ.get("AWS_REGION", "us-east-1"))
    os.environ.setdefault("AWS_REGION", os.environ["AWS_DEFAULT_REGION"])
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "flowbroker")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "flowbroker")
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    handlers = dict(load(s) for s in a.handlers)
    threading.excepthook = lambda args: traceback.print_exception(args.exc_value)
    serve(handlers, a.listen, a.timeout_ms)


if __name__ == "__main__":
    main()
