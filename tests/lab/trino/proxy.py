"""A fault-injecting reverse proxy in front of a real Trino coordinator (standard library only).

    PYTHONPATH=tests python -m lab.trino.proxy --upstream http://127.0.0.1:PORT --port P \
        [--alias-host 127.0.0.2] [--log FILE] [--state-file FILE]

Binds 127.0.0.1:P only, and the same port on `--alias-host` (another loopback address) when
it can be bound, so a nextUri pointed at `localhost`, `127.0.0.1` or the alias host at the
proxy's port reaches the same proxy. Every request (any method, path, query, headers
including Authorization and X-Trino-*, body) is forwarded to the upstream and its answer
streamed back. JSON answers of `/v1/statement*` have their `nextUri`, `infoUri` and
`partialCancelUri` moved from the upstream's origin to the origin the client used (scheme
and Host header), so a client keeps going through the proxy.

Fault rules are the stand-in server's (`faults.py`: same JSON, same `user` scoping, same
`on` = post | next | info | queries | any and `count`), posted to the control endpoint on the same
listener (`/_lab/`, never forwarded):

    POST   /_lab/faults   {"user": u | null, "rules": [...]}   add rules (400 on a bad one)
    DELETE /_lab/faults?user=u                                 clear u's rules (no user: all)
    GET    /_lab/faults                                        the rules, `remaining`, `fired`
    GET    /_lab/requests                                      the last 1000 requests
    DELETE /_lab/requests                                      forget them
    GET    /_lab/health                                        {"ok": true, "upstream": url}

A rule with a `user` applies to the requests of queries submitted by that user: on
POST /v1/statement the X-Trino-User header (or the Basic user name); on a query's nextUri
(`/v1/statement/queued|executing/<queryId>/...`) the user learnt from the upstream's answer
to its POST (or the request's own header when the query is unknown). Kinds:

    status        answer `status` (`headers`, a value {"http_date_in_s": N} being an HTTP date
                  N s ahead; `retry_after`; `body`, `content_type`) without forwarding; with
                  "forward": true the request goes upstream first and its answer is discarded
    latency       wait `ms` before forwarding (latencies add up)
    drop          close the connection without an answer ("forward": true: after the
                  upstream processed it; "mid_body": true: after the status line, the
                  headers and half of the upstream's body)
    malformed     forward, then answer 200 with the first half of the upstream's body
    big_page      pad the next page carrying `data` with an unknown top-level field
                  `labPadding` of `mb` MB (random base64 sent unencoded; "gzip": true: one
                  repeated character, gzipped when the client accepts it)
    extra_fields  add an unknown field `labUnknownField` to every JSON object of the answer
                  (never inside `data`)
    redirect_host point the answer's nextUri at `host` / `scheme` / `port`

`fail_query`, `hold`, `slow` and `server_time` shape a query's execution inside the server:
the proxy refuses them (use the stand-in server for those).
"""

from __future__ import annotations

import argparse
import base64
import collections
import email.utils
import gzip
import http.client
import json
import os
import re
import sys
import threading
import time
import urllib.parse

from ..common import proxy as base
from . import faults as faults_mod

SERVER_ONLY_KINDS = {"fail_query", "hold", "slow", "server_time"}
HOP_BY_HOP = base.HOP_BY_HOP | {"expect"}
URI_FIELDS = (b"nextUri", b"infoUri", b"partialCancelUri")
QUERY_PATH = re.compile(r"^/v1/statement/(?:queued|executing)/(?:partialCancel/)?([^/]+)/")
UNKNOWN_FIELD = "labUnknownField"  # the stand-in's name for it (server.UNKNOWN_FIELD)
STATUS_TEXT = {401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests", 502: "Bad Gateway",
               503: "Service Unavailable", 504: "Gateway Timeout"}
KEEP_QUERIES = 20000


def add_unknown_fields(node) -> None:
    """Add a field no client knows to every JSON object of an answer, except inside row
    values (`data`, where an object is a MAP value) — as the stand-in does."""
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key != "data":
                add_unknown_fields(value)
        node[UNKNOWN_FIELD] = {"note": "unknown to clients", "n": [1, 2.5, None, True]}
    elif isinstance(node, list):
        for item in node:
            add_unknown_fields(item)


def validate_rules(specs) -> None:
    """What the proxy adds to `faults.validate`: refusing the server-only kinds and checking
    its own keys (`forward`, `mid_body`)."""
    if not isinstance(specs, list):
        raise faults_mod.FaultError("'rules' must be a list")
    for spec in specs:
        if not isinstance(spec, dict):
            raise faults_mod.FaultError("a rule must be an object")
        kind = spec.get("kind")
        if kind in SERVER_ONLY_KINDS:
            raise faults_mod.FaultError(
                f"kind {kind!r} shapes a query inside the server; the proxy in front of the real "
                "Trino cannot do it: use the stand-in server's control endpoint (stand_in.control_url)")
        for key in ("forward", "mid_body", "gzip"):
            if spec.get(key) is not None and not isinstance(spec[key], bool):
                raise faults_mod.FaultError(f"'{key}' must be true or false")
        if spec.get("forward") and kind not in ("status", "drop"):
            raise faults_mod.FaultError("'forward' applies to status and drop rules only")
        if spec.get("mid_body") and kind != "drop":
            raise faults_mod.FaultError("'mid_body' applies to drop rules only")
        faults_mod.validate(spec)


def basic_user(header: str | None) -> str | None:
    scheme, _, cred = (header or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        text = base64.b64decode(cred.strip(), validate=True).decode("latin-1")
    except Exception:  # noqa: BLE001 - a broken header is the upstream's to refuse
        return None
    return text.partition(":")[0] or None


class Proxy(base.Upstream):
    def __init__(self, upstream: str, log_file: str | None) -> None:
        super().__init__(upstream)
        self.faults = faults_mod.FaultStore()
        self.query_users: collections.OrderedDict = collections.OrderedDict()
        self.log_lock = threading.Lock()
        self.log_fh = open(log_file, "a", buffering=1, encoding="utf-8") if log_file else None

    def log(self, line: str) -> None:
        text = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n"
        with self.log_lock:
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
            if self.log_fh is not None:
                self.log_fh.write(text)

    def learn(self, query_id: str, user: str | None) -> None:
        if not query_id or user is None:
            return
        with self.lock:
            self.query_users[query_id] = user
            self.query_users.move_to_end(query_id)
            while len(self.query_users) > KEEP_QUERIES:
                self.query_users.popitem(last=False)

    def user_of(self, query_id: str | None) -> str | None:
        if not query_id:
            return None
        with self.lock:
            return self.query_users.get(query_id)

    def may_shape(self, target: str, user: str | None) -> bool:
        """Whether a page-shaping rule could fire for this request (so its answer is parsed)."""
        for r in self.faults.describe():
            if r["kind"] not in faults_mod.PAGE_KINDS:
                continue
            if r["remaining"] is not None and r["remaining"] <= 0:
                continue
            if r["user"] is not None and r["user"] != user:
                continue
            if r.get("on", "any") in ("any", target):
                return True
        return False


class Answer:
    """An upstream answer read whole (and decoded), to be reshaped before it is sent."""

    def __init__(self, status: int, reason: str, headers: list, body: bytes, gzipped: bool):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.gzipped = gzipped

    def header(self, name: str) -> str | None:
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None


class Handler(base.Handler):
    server_version = "lab-trino-proxy"
    timeout = 600
    hop_by_hop = HOP_BY_HOP
    names_itself = False

    def log_message(self, fmt, *args) -> None:  # the proxy logs its own line per request
        pass

    def client_origin(self) -> str:
        host = self.headers.get("Host") or "%s:%d" % self.server.server_address[:2]
        return f"http://{host}"

    def upstream(self, body: bytes, buffered: bool) -> http.client.HTTPResponse:
        # an answer the proxy rewrites: gzip (decoded here, encoded again) or nothing
        accept = None
        if buffered:
            accept = "gzip" if "gzip" in self.headers.get("Accept-Encoding", "").lower() else "identity"
        return super().upstream(body, accept, timeout=600)

    def read_answer(self, resp: http.client.HTTPResponse) -> Answer:
        try:
            body = resp.read()
        finally:
            self.close_upstream(resp)
        headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP
                   and k.lower() not in ("content-length", "content-encoding")]
        gzipped = (resp.getheader("Content-Encoding") or "").lower() == "gzip"
        if gzipped:
            body = gzip.decompress(body)
        if self.command == "HEAD" and resp.getheader("Content-Length") is not None:
            headers.append(("Content-Length", resp.getheader("Content-Length")))
        return Answer(resp.status, resp.reason, headers, body, gzipped)

    def send_answer(self, a: Answer, mid_body: bool = False, gzip_ok: bool | None = None) -> None:
        body = a.body
        encode = a.gzipped if gzip_ok is None else gzip_ok
        if encode and body:
            body = gzip.compress(body, compresslevel=1)
        self.send_response_only(a.status, a.reason)
        for k, v in a.headers:
            self.send_header(k, self.client_location(k, v))
        if encode and body:
            self.send_header("Content-Encoding", "gzip")
        bodiless = a.status < 200 or a.status in (204, 304)
        if not bodiless and self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or bodiless:
            return
        if mid_body:
            self.wfile.write(body[: len(body) // 2])
            self.drop()
        self.wfile.write(body)

    def relayed_header(self, name: str, value: str) -> str:
        return self.client_location(name, value)

    def client_location(self, name: str, value: str) -> str:
        """A redirection's Location on the upstream's origin (Trino's `/` -> `/ui/`) moved to
        the client's, like the statement URIs."""
        old = "http://" + self.proxy.up_netloc + "/"
        if name.lower() == "location" and value.startswith(old):
            return self.client_origin() + "/" + value[len(old):]
        return value

    # ------------------------------------------------------------------ shaping
    def rewrite_uris(self, body: bytes) -> bytes:
        """Move the statement URIs from the upstream's origin to the client's, in the JSON
        text itself (the rest of the answer stays byte for byte the upstream's)."""
        old = ("http://" + self.proxy.up_netloc + "/").encode()
        new = (self.client_origin() + "/").encode()
        if old == new:
            return body
        for field in URI_FIELDS:
            body = body.replace(b'"' + field + b'":"' + old, b'"' + field + b'":"' + new)
        return body

    def redirect_next_uri(self, page: dict, rule: dict) -> None:
        old = urllib.parse.urlsplit(page["nextUri"])
        scheme = rule.get("scheme") or old.scheme
        host = rule.get("host") or old.hostname
        port = rule.get("port") if rule.get("port") is not None else old.port
        netloc = f"{host}:{port}" if port is not None else host
        page["nextUri"] = urllib.parse.urlunsplit((scheme, netloc, old.path, old.query, ""))

    def shape(self, a: Answer, target: str, user: str | None, entry: dict) -> bool | None:
        """Apply big_page / extra_fields / redirect_host to a JSON answer; returns whether
        the answer may be gzipped (None: as the upstream did)."""
        if a.status != 200 or "json" not in (a.header("Content-Type") or "").lower():
            return None
        if not self.proxy.may_shape(target, user):
            return None
        try:
            obj = json.loads(a.body)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        rules = self.proxy.faults.for_page(target, user, has_data=bool(obj.get("data")),
                                           has_next=bool(obj.get("nextUri")))
        if not rules:
            return None
        entry["page_rules"] = [r["kind"] for r in rules]
        padding = None
        gzip_ok = None
        reserialize = False
        for rule in rules:
            if rule["kind"] == "extra_fields":
                add_unknown_fields(obj)
                reserialize = True
            elif rule["kind"] == "redirect_host":
                self.redirect_next_uri(obj, rule)
                reserialize = True
            elif rule["kind"] == "big_page":
                size = int(float(rule["mb"]) * 1024 * 1024)
                if rule.get("gzip"):
                    padding = b"x" * size
                    gzip_ok = "gzip" in self.headers.get("Accept-Encoding", "").lower()
                else:
                    # random base64 text: incompressible, sent unencoded
                    padding = base64.b64encode(os.urandom(size * 3 // 4 + 3))[:size]
                    gzip_ok = False
        body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() if reserialize else a.body
        if padding is not None:
            body = b'{"labPadding":"' + padding + b'",' + body.lstrip()[1:]
        a.body = body
        return gzip_ok

    # ------------------------------------------------------------------ dispatch
    def dispatch(self) -> None:
        started = time.monotonic()
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        if path == "/_lab" or path.startswith("/_lab/"):
            return self.control(path, split.query)
        p = self.proxy
        if path.rstrip("/") == "/v1/statement" and self.command == "POST":
            target = "post"
        elif path.startswith("/v1/statement/"):
            target = "next"
        elif path.startswith("/v1/info") or path.startswith("/v1/status"):
            target = "info"
        elif path.rstrip("/") == "/v1/query" and self.command == "GET":
            target = "queries"
        else:
            target = "other"
        header_user = self.headers.get("X-Trino-User") or basic_user(self.headers.get("Authorization"))
        m = QUERY_PATH.match(path)
        query_id = m.group(1) if m else None
        user = header_user
        if target == "next":
            user = p.user_of(query_id) or header_user
            if user is not None and p.user_of(query_id) is None:
                p.learn(query_id, user)
        body = self.read_body()
        sql = body.decode("utf-8", "replace") if target == "post" else None
        latency, action = p.faults.for_request(target, user, sql)
        kind = action["kind"] if action else None
        auth = (self.headers.get("Authorization") or "").partition(" ")[0] or None
        entry = {"time": time.time(), "method": self.command, "path": self.path, "host": self.headers.get("Host"),
                 "listener": "%s:%d" % self.connection.getsockname()[:2], "auth": auth, "user": user,
                 "query_id": query_id, "rule": kind, "page_rules": [], "latency_ms": latency or 0,
                 "forwarded": False, "status": None, "dropped": False, "next_uri": None}
        p.record(entry)
        try:
            self.serve_one(target, user, latency, action, entry, body)
        finally:
            rules = ",".join(([kind] if kind else []) + entry["page_rules"]) or "-"
            p.log(f"{self.client_address[0]} {self.command} {self.path} host={entry['host']} user={user} "
                  f"query={entry['query_id']} rule={rules} forwarded={entry['forwarded']} "
                  f"status={entry['status']}{' dropped' if entry['dropped'] else ''} "
                  f"{(time.monotonic() - started) * 1000:.0f}ms")

    def serve_one(self, target: str, user: str | None, latency: float, action: dict | None, entry: dict,
                  body: bytes) -> None:
        p = self.proxy
        kind = action["kind"] if action else None
        if latency:
            time.sleep(latency / 1000.0)
        if kind == "drop" and not action.get("forward") and not action.get("mid_body"):
            entry["dropped"] = True
            return self.drop()
        if kind == "status" and not action.get("forward"):
            return self.injected_status(action, entry)
        statement = urllib.parse.urlsplit(self.path).path.startswith("/v1/statement")
        buffered = (statement or target in ("post", "next", "info") or kind in ("status", "drop", "malformed"))
        try:
            resp = self.upstream(body, buffered)
        except (OSError, http.client.HTTPException) as e:
            entry["status"] = 502
            p.log(f"upstream {p.upstream} failed for {self.command} {self.path}: {e}")
            text = f"lab proxy: upstream {p.upstream} failed: {e}".encode()
            return self.answer(502, text, "text/plain; charset=utf-8")
        entry["forwarded"] = True
        entry["status"] = resp.status
        if not buffered:
            return self.relay(resp)
        try:
            a = self.read_answer(resp)
        except (OSError, http.client.HTTPException, EOFError, gzip.BadGzipFile) as e:
            entry["status"] = 502
            text = f"lab proxy: reading the answer of {p.upstream} failed: {e}".encode()
            return self.answer(502, text, "text/plain; charset=utf-8")
        if statement and "json" in (a.header("Content-Type") or "").lower():
            a.body = self.rewrite_uris(a.body)
            if target == "post" and a.status == 200:
                try:
                    first = json.loads(a.body)
                except ValueError:
                    first = None
                qid = first.get("id") if isinstance(first, dict) else None
                if isinstance(qid, str):
                    entry["query_id"] = qid
                    # kept even when a rule discards the answer: the statement can be resumed
                    entry["next_uri"] = first.get("nextUri")
                    p.learn(qid, user)
        if kind == "status":
            return self.injected_status(action, entry)
        if kind == "drop" and not action.get("mid_body"):
            entry["status"], entry["dropped"] = None, True
            return self.drop()
        if kind == "malformed":
            a.status, a.reason = 200, "OK"
            a.body = a.body[: max(1, len(a.body) // 2)] if a.body else b'{"id":'
            a.headers = [(k, v) for k, v in a.headers if k.lower() != "content-type"]
            a.headers.append(("Content-Type", "application/json"))
            entry["status"] = 200
            return self.send_answer(a, gzip_ok=False)
        gzip_ok = self.shape(a, target, user, entry) if target in ("post", "next", "info") else None
        if kind == "drop":
            entry["dropped"] = True
        return self.send_answer(a, mid_body=kind == "drop", gzip_ok=gzip_ok)

    def injected_status(self, action: dict, entry: dict) -> None:
        status = int(action["status"])
        headers = []
        if action.get("retry_after") is not None:
            headers.append(("Retry-After", str(action["retry_after"])))
        rule_headers = action.get("headers") or {}
        if status == 401 and not any(k.lower() == "www-authenticate" for k in rule_headers):
            headers.append(("WWW-Authenticate", 'Basic realm="Trino"'))
        for name, value in rule_headers.items():
            if isinstance(value, dict):
                value = email.utils.formatdate(time.time() + float(value["http_date_in_s"]), usegmt=True)
            headers.append((name, str(value)))
        entry["status"] = status
        text = action.get("body")
        if text is not None:
            ctype = action.get("content_type") or (
                "text/html; charset=utf-8" if text.lstrip().startswith("<") else "text/plain; charset=utf-8")
            return self.answer(status, text.encode("utf-8"), ctype, headers)
        text = STATUS_TEXT.get(status, "Injected fault")
        return self.answer(status, text.encode("utf-8"), "text/plain; charset=utf-8", headers)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = dispatch

    # ------------------------------------------------------------------ control
    def control(self, path: str, query: str) -> None:
        p = self.proxy
        method = self.command
        body = self.read_body()
        params = urllib.parse.parse_qs(query)
        if path == "/_lab/faults":
            if method == "POST":
                try:
                    payload = json.loads(body or b"{}")
                    if not isinstance(payload, dict):
                        raise faults_mod.FaultError("the body must be {\"user\": ..., \"rules\": [...]}")
                    user = payload.get("user")
                    if user is not None and not isinstance(user, str):
                        raise faults_mod.FaultError("'user' must be a string or null")
                    specs = payload.get("rules", [])
                    validate_rules(specs)
                    total = p.faults.add(user, specs)
                except (ValueError, faults_mod.FaultError) as e:
                    return self.answer_json(400, {"error": str(e)})
                return self.answer_json(200, {"ok": True, "rules": total})
            if method == "DELETE":
                user = (params.get("user") or [None])[0]
                removed = p.faults.clear(user, everything=user is None)
                return self.answer_json(200, {"ok": True, "removed": removed})
            if method == "GET":
                return self.answer_json(200, p.faults.describe())
        if self.common_control(path, method):
            return None
        return self.answer_json(404, {"error": f"no control endpoint {method} {path}"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True, help="the Trino coordinator, http://host:port")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--alias-host", default=None, help="a second loopback address to listen on (same port)")
    ap.add_argument("--log", default=None, help="append one line per request to this file too")
    ap.add_argument("--state-file", default=None, help="write pid and URLs here once listening")
    args = ap.parse_args()
    proxy = Proxy(args.upstream, args.log)
    servers = [base.Server(("127.0.0.1", args.port), Handler)]
    port = servers[0].server_address[1]
    url = f"http://127.0.0.1:{port}"
    alias_url = None
    if args.alias_host:
        try:
            servers.append(base.Server((args.alias_host, port), Handler))
            alias_url = f"http://{args.alias_host}:{port}"
        except OSError as e:
            proxy.log(f"cannot bind {args.alias_host}:{port} ({e}); no alias listener")
    for s in servers:
        s.proxy = proxy
    proxy.log(f"listening on {url}{' and ' + alias_url if alias_url else ''}, upstream {proxy.upstream}")
    if args.state_file:
        base.write_state(args.state_file, {"url": url, "control_url": url + "/_lab", "alias_url": alias_url,
                                           "upstream": proxy.upstream})
    base.serve_until_signalled(servers)


if __name__ == "__main__":
    main()
