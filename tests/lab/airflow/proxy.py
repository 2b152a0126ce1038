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
import re
import socket
import sys
import time
import urllib.parse
import zlib
from pathlib import Path

if __package__ in (None, ""):  # run as a script: the lab package is under tests/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from lab.common import proxy as base  # noqa: E402

KINDS = {"status", "latency", "drop", "body", "big_body"}
HOP_BY_HOP = base.HOP_BY_HOP
MIB = 1024 * 1024
CHUNK = base.CHUNK
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


class Proxy(base.Upstream):
    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.rules: list[Rule] = []

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


class Handler(base.Handler):
    server_version = "lab-proxy"
    timeout = 300

    def log_message(self, fmt, *args) -> None:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {self.address_string()} {fmt % args}\n")

    def upstream(self, body: bytes, identity: bool = False) -> http.client.HTTPResponse:
        return super().upstream(body, "identity" if identity else None, timeout=300)

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
                try:
                    resp.read()
                finally:
                    self.close_upstream(resp)
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
        try:
            raw = resp.read()
        finally:
            self.close_upstream(resp)
        ctype = resp.getheader("Content-Type")
        headers = {k: v for k, v in resp.getheaders()
                   if k.lower() not in HOP_BY_HOP and k.lower() not in ("content-length", "content-type",
                                                                        "content-encoding")}
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
        if self.common_control(path, method):
            return None
        return self.answer_json(404, {"error": "not found"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--state-file", required=True)
    args = ap.parse_args()
    httpd = base.Server(("127.0.0.1", args.port), Handler)
    httpd.proxy = Proxy(args.upstream)
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    base.write_state(args.state_file, {"url": url, "control_url": url + "/_lab", "upstream": httpd.proxy.upstream})
    base.serve_until_signalled([httpd])


if __name__ == "__main__":
    main()
