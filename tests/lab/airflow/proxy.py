"""A fault-injecting reverse proxy in front of one of the lab's Airflows (standard library only).

    python3 tests/lab/airflow/proxy.py --upstream http://127.0.0.1:PORT --state-file FILE [--port 0]

Binds 127.0.0.1 only. By default every request (any method, headers, body) is forwarded to
the upstream unchanged and the answer streamed back unchanged. Rules posted to the control
endpoint on the same listener (`/_lab/`, a path Airflow does not use) change that:

    POST   /_lab/faults   {"rules": [rule, ...]}   add rules (400 on a bad one)
    GET    /_lab/faults                            the rules with `remaining` and `fired`
    DELETE /_lab/faults                            clear every rule
    GET    /_lab/requests                          the last 1000 requests seen (method, path,
                                                   status, rule kind that fired, forwarded)
    DELETE /_lab/requests                          forget them
    GET    /_lab/health                            {"ok": true, "upstream": ...}

A rule matches a request by `method` (absent/null: any) and `path`, a regular expression
searched in the request path without its query string (absent/null: any), and fires
`count` times (absent/null: until cleared). Kinds:

    {"kind": "status", "status": 403, "headers": {...}, "body": "...", "content_type": "...",
     "forward": false}     answer this status; with "forward": true the request is sent
                           upstream first and its answer discarded (a gateway timing out
                           after the write happened)
    {"kind": "latency", "ms": 10000}          wait, then go on (latencies add up)
    {"kind": "drop", "forward": false}         close the connection without an answer
    {"kind": "body", "body": "..." | "json": <value>, "content_type": "...",
     "replace": [["old", "new"], ...]}         forward, then replace a 2xx answer's body:
                           with `body`/`json`, or by substring replacements in the upstream
                           body (the upstream is asked for an unencoded body)
    {"kind": "big_body", "mb": 200, "format": "text" | "json", "gzip": false,
     "content_type": "..."}  answer 200 with `mb` MiB of log text generated while it is sent
                           (never held in memory), last line "END OF BIG LOG"; "format":
                           "json" wraps the lines as Airflow 3's structured log document
                           ({"content": [{"event": ...}, ...], "continuation_token": null});
                           "gzip": true sends it gzip-compressed (Content-Encoding: gzip): a
                           small body that inflates to `mb` MiB
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import urllib.parse
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

KINDS = {"status", "latency", "drop", "body", "big_body"}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "trailers", "transfer-encoding", "upgrade", "host"}
MIB = 1024 * 1024
CHUNK = 64 * 1024
END_LINE = "END OF BIG LOG"


class RuleError(ValueError):
    pass


def validate(spec) -> dict:
    if not isinstance(spec, dict):
        raise RuleError("a rule must be an object")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise RuleError(f"unknown kind {kind!r} (one of {sorted(KINDS)})")
    count = spec.get("count")
    if count is not None and (not isinstance(count, int) or count < 0):
        raise RuleError("'count' must be a non-negative integer or null")
    if spec.get("method") is not None and not isinstance(spec["method"], str):
        raise RuleError("'method' must be a string")
    if spec.get("path") is not None:
        try:
            re.compile(spec["path"])
        except (re.error, TypeError) as e:
            raise RuleError(f"'path' is not a regular expression: {e}") from None
    if kind == "status":
        if not isinstance(spec.get("status"), int) or not 100 <= spec["status"] <= 599:
            raise RuleError("'status' must be an HTTP status code")
    if kind in ("status", "body") and not isinstance(spec.get("headers", {}), dict):
        raise RuleError("'headers' must be an object")
    if kind == "latency" and not isinstance(spec.get("ms"), (int, float)):
        raise RuleError("'ms' must be a number")
    if kind == "body":
        if "body" not in spec and "json" not in spec and "replace" not in spec:
            raise RuleError("a body rule needs 'body', 'json' or 'replace'")
        if "body" in spec and not isinstance(spec["body"], str):
            raise RuleError("'body' must be a string")
        replace = spec.get("replace", [])
        if not isinstance(replace, list) or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in replace):
            raise RuleError("'replace' must be a list of [old, new] strings")
    if kind == "big_body":
        mb = spec.get("mb")
        if not isinstance(mb, (int, float)) or not 0 < mb <= 16384:
            raise RuleError("'mb' must be a number of MiB in (0, 16384]")
        if spec.get("format", "text") not in ("text", "json"):
            raise RuleError("'format' must be text or json")
    return dict(spec)


class Rule:
    def __init__(self, spec: dict) -> None:
        self.spec = spec
        self.remaining = spec.get("count")
        self.fired = 0
        self.path = re.compile(spec["path"]) if spec.get("path") else None

    def matches(self, method: str, path: str) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        m = self.spec.get("method")
        if m is not None and m.upper() != method.upper():
            return False
        return self.path is None or self.path.search(path) is not None

    def consume(self) -> None:
        self.fired += 1
        if self.remaining is not None:
            self.remaining -= 1

    def describe(self) -> dict:
        return {**self.spec, "remaining": self.remaining, "fired": self.fired}


class Proxy:
    def __init__(self, upstream: str) -> None:
        u = urllib.parse.urlsplit(upstream)
        if u.scheme != "http":
            raise SystemExit("the upstream must be http://host:port")
        self.upstream = upstream.rstrip("/")
        self.up_host = u.hostname
        self.up_port = u.port or 80
        self.lock = threading.Lock()
        self.rules: list[Rule] = []
        self.requests: list[dict] = []

    def take(self, method: str, path: str) -> tuple[float, dict | None]:
        latency = 0.0
        action = None
        with self.lock:
            for r in self.rules:
                if not r.matches(method, path):
                    continue
                if r.spec["kind"] == "latency":
                    latency += float(r.spec["ms"])
                    r.consume()
                elif action is None:
                    action = dict(r.spec)
                    r.consume()
        return latency, action

    def record(self, entry: dict) -> None:
        with self.lock:
            self.requests.append(entry)
            del self.requests[:-1000]


def big_body_chunks(mb: float, fmt: str):
    """`mb` MiB of log text in chunks, generated on the fly; the last line is END_LINE."""
    total = int(mb * MIB)
    if fmt == "json":
        head, tail = b'{"content":[', ('{"event":"%s","level":"info"}],"continuation_token":null}' % END_LINE).encode()
        line = b'{"timestamp":"2026-11-30T10:00:00.000000Z","event":"big log line, lorem ipsum dolor","level":"info"},'
    else:
        head, tail = b"", f"{END_LINE}\n".encode()
        line = b"[2026-11-30T10:00:00.000+0000] {big.py:1} INFO - big log line, lorem ipsum dolor\n"
    block = line * (CHUNK // len(line))
    body = max(total - len(head) - len(tail), 0)
    yield head
    while body > 0:
        n = min(body, len(block))
        if n == len(block):
            yield block
        else:
            # a partial line at the end would be unparsable JSON; pad with whole lines or spaces
            whole = (n // len(line)) * len(line)
            rest = n - whole
            yield block[:whole] + (b" " * rest if fmt == "json" else b"." * (rest - 1) + b"\n" if rest else b"")
        body -= n
    yield tail


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "lab-proxy"
    sys_version = ""
    timeout = 300

    def version_string(self) -> str:
        return self.server_version

    @property
    def proxy(self) -> Proxy:
        return self.server.proxy

    def log_message(self, fmt, *args) -> None:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {self.address_string()} {fmt % args}\n")

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionError, TimeoutError, OSError):
            pass

    # ------------------------------------------------------------------ plumbing
    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def answer(self, status: int, body: bytes, content_type: str | None, headers: dict | None = None) -> None:
        self.log_request(status)
        self.send_response_only(status)
        self.send_header("Date", self.date_time_string())
        if not any(k.lower() == "server" for k in (headers or {})):
            self.send_header("Server", self.server_version)
        if content_type:
            self.send_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer_json(self, status: int, obj) -> None:
        self.answer(status, json.dumps(obj).encode(), "application/json")

    def drop(self) -> None:
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        except OSError:
            pass
        self.close_connection = True

    def upstream(self, body: bytes, identity: bool = False) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(self.proxy.up_host, self.proxy.up_port, timeout=300)
        # Header names are case-insensitive: the ones set below replace the client's
        # whatever their spelling (a lowercase content-length sent twice is a 400).
        replaced = {"host", "content-length"} | ({"accept-encoding"} if identity else set())
        headers = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in HOP_BY_HOP and k.lower() not in replaced
        }
        if identity:
            headers["Accept-Encoding"] = "identity"
        headers["Host"] = f"{self.proxy.up_host}:{self.proxy.up_port}"
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        conn.request(self.command, self.path, body=body or None, headers=headers)
        resp = conn.getresponse()
        resp._lab_conn = conn  # closed with the response
        return resp

    def relay(self, resp: http.client.HTTPResponse) -> None:
        """Stream an upstream answer back unchanged (chunked when it has no length)."""
        self.send_response_only(resp.status, resp.reason)
        length = resp.getheader("Content-Length")
        for k, v in resp.getheaders():
            if k.lower() in HOP_BY_HOP or k.lower() == "content-length":
                continue
            self.send_header(k, v)
        chunked = length is None and self.command != "HEAD" and resp.status not in (204, 304)
        if length is not None:
            self.send_header("Content-Length", length)
        elif chunked:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            while True:
                data = resp.read1(CHUNK) if hasattr(resp, "read1") else resp.read(CHUNK)
                if not data:
                    break
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                else:
                    self.wfile.write(data)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        finally:
            resp.close()
            resp._lab_conn.close()

    # ------------------------------------------------------------------ dispatch
    def dispatch(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        if path == "/_lab" or path.startswith("/_lab/"):
            return self.control(path)
        latency, action = self.proxy.take(self.command, path)
        entry = {"time": time.time(), "method": self.command, "path": self.path,
                 "rule": action["kind"] if action else None, "forwarded": False, "status": None}
        self.proxy.record(entry)
        if latency:
            time.sleep(latency / 1000.0)
        body = self.read_body()
        kind = action["kind"] if action else None
        try:
            if kind in ("status", "drop") and action.get("forward"):
                resp = self.upstream(body)
                entry["forwarded"] = True
                resp.read()
                resp.close()
                resp._lab_conn.close()
            if kind == "status":
                text = action.get("body")
                ctype = action.get("content_type")
                if text is None:
                    text = json.dumps({"detail": f"injected {action['status']}", "status": action["status"],
                                       "title": "lab proxy fault"})
                    ctype = ctype or "application/json"
                elif ctype is None:
                    ctype = "text/html; charset=utf-8" if text.lstrip().startswith("<") else "text/plain; charset=utf-8"
                entry["status"] = action["status"]
                return self.answer(action["status"], text.encode("utf-8"), ctype, action.get("headers"))
            if kind == "drop":
                return self.drop()
            if kind == "big_body":
                entry["status"] = 200
                return self.big_body(action)
            if kind == "body":
                resp = self.upstream(body, identity=True)
                entry["forwarded"] = True
                entry["status"] = resp.status
                if not 200 <= resp.status < 300:
                    return self.relay(resp)
                return self.replace_body(resp, action)
            resp = self.upstream(body)
            entry["forwarded"] = True
            entry["status"] = resp.status
            return self.relay(resp)
        except (ConnectionRefusedError, http.client.HTTPException, socket.timeout, OSError) as e:
            if isinstance(e, (BrokenPipeError, ConnectionResetError)):
                self.close_connection = True
                return
            entry["status"] = 502
            return self.answer(502, f"lab proxy: upstream {self.proxy.upstream} failed: {e}".encode(),
                               "text/plain; charset=utf-8")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = dispatch

    def replace_body(self, resp: http.client.HTTPResponse, action: dict) -> None:
        raw = resp.read()
        ctype = resp.getheader("Content-Type")
        headers = {k: v for k, v in resp.getheaders()
                   if k.lower() not in HOP_BY_HOP and k.lower() not in ("content-length", "content-type",
                                                                        "content-encoding")}
        resp.close()
        resp._lab_conn.close()
        if "json" in action:
            out = json.dumps(action["json"], ensure_ascii=False).encode("utf-8")
            ctype = "application/json"
        elif "body" in action:
            out = action["body"].encode("utf-8")
        else:
            text = raw.decode("utf-8", "replace")
            for old, new in action.get("replace", []):
                text = text.replace(old, new)
            out = text.encode("utf-8")
        ctype = action.get("content_type") or ctype
        headers.update(action.get("headers") or {})
        self.send_response_only(resp.status, resp.reason)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    def big_body(self, action: dict) -> None:
        fmt = action.get("format", "text")
        ctype = action.get("content_type") or ("application/json" if fmt == "json" else "text/plain; charset=utf-8")
        chunks = big_body_chunks(float(action["mb"]), fmt)
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        if action.get("gzip"):
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            comp = zlib.compressobj(9, zlib.DEFLATED, 31)
            for chunk in chunks:
                data = comp.compress(chunk)
                if data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            data = comp.flush()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data))
            return
        self.send_header("Content-Length", str(int(float(action["mb"]) * MIB)))
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(chunk)

    # ------------------------------------------------------------------ control
    def control(self, path: str) -> None:
        p = self.proxy
        method = self.command
        body = self.read_body()
        if path == "/_lab/faults":
            if method == "POST":
                try:
                    payload = json.loads(body or b"{}")
                    specs = payload.get("rules", []) if isinstance(payload, dict) else None
                    if not isinstance(specs, list):
                        raise RuleError("'rules' must be a list")
                    rules = [Rule(validate(s)) for s in specs]
                except (ValueError, RuleError) as e:
                    return self.answer_json(400, {"error": str(e)})
                with p.lock:
                    p.rules.extend(rules)
                    n = len(p.rules)
                return self.answer_json(200, {"ok": True, "rules": n})
            if method == "DELETE":
                with p.lock:
                    n = len(p.rules)
                    p.rules.clear()
                return self.answer_json(200, {"ok": True, "removed": n})
            if method == "GET":
                with p.lock:
                    return self.answer_json(200, [r.describe() for r in p.rules])
        if path == "/_lab/requests":
            if method == "GET":
                with p.lock:
                    return self.answer_json(200, list(p.requests))
            if method == "DELETE":
                with p.lock:
                    p.requests.clear()
                return self.answer_json(200, {"ok": True})
        if path == "/_lab/health" and method == "GET":
            return self.answer_json(200, {"ok": True, "upstream": p.upstream})
        return self.answer_json(404, {"error": "not found"})


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--state-file", required=True)
    args = ap.parse_args()
    httpd = ProxyServer(("127.0.0.1", args.port), Handler)
    httpd.proxy = Proxy(args.upstream)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    state = {"pid": os.getpid(), "url": url, "control_url": url + "/_lab", "upstream": httpd.proxy.upstream}
    tmp = Path(args.state_file + ".tmp")
    tmp.write_text(json.dumps(state))
    tmp.replace(args.state_file)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.25}, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    httpd.shutdown()


if __name__ == "__main__":
    main()
