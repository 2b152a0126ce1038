"""The lab's Trino-protocol server.

    PYTHONPATH=tests python -m lab.trino.server --config FILE.json

One process serves several listeners (ports), each a personality of the same coordinator:
plain HTTP with Trino's default "insecure" authentication, HTTPS with PASSWORD and JWT
authentication, OAuth2 external authentication (`oauth2.py`), and other impersonated versions. The SQL runs in the engine
(`engine.load_engine`); this file owns HTTP, authentication, TLS, fault injection and the
lab's control endpoint (`/_lab/`, plain listener only). See tests/lab/README.md.

Config (JSON):
    {"environment": "lab", "time_zone": "Europe/Vienna", "page_size": 1000,
     "client_timeout_s": 300, "worker_threads": 4,
     "engine": {"kind": "real", "catalogs": {"iceberg": "/abs/warehouses/seed"}} | {"kind": "stub"},
     "tls": {"dir": "/abs/.lab/tls"},
     "auth": {"users": {"alice": "alice-secret"}, "jwt_secret": "<hex>", "oauth2_user": "carol"},
     "access": {"denied_users": ["mallory"]},
     "listeners": [{"name": "plain", "port": 0, "version": 480, "auth": ["insecure"], "control": true},
                   {"name": "https", "port": 0, "version": 480, "auth": ["password", "jwt"], "tls": true},
                   {"name": "v451", "port": 0, "version": 451, "auth": ["insecure"],
                    "legacy_type_signatures": true},
                   {"name": "oauth2", "port": 0, "version": 480, "auth": ["oauth2"]}],
     "state_file": "/abs/.lab/trino-state.json"}

Once every listener is bound the server writes `state_file` (actual ports and URLs);
`/v1/info` reports `"starting": true` until the engine has loaded.
"""

from __future__ import annotations

import argparse
import base64
import copy
import email.utils
import gzip
import json
import os
import re
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
import zoneinfo
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..common.errors import TrinoError
from ..common.http_body import read_body
from ..engine.api import Session
from . import faults as faults_mod
from . import jwt_hs256
from .oauth2 import OAuth2Provider
from .queries import (
    MAX_WAIT_S,
    HttpError,
    Listener,
    QueryManager,
    airlift_duration,
    new_node_id,
)

CAPABILITIES = {"PATH", "PARAMETRIC_DATETIME", "NUMBER", "VARIANT", "VARIANT_BINARY", "SESSION_AUTHORIZATION"}
GZIP_MIN_BYTES = 1024


def log(msg: str) -> None:
    sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {msg}\n")
    sys.stderr.flush()


class EngineHolder:
    def __init__(self) -> None:
        self.engine = None
        self.error: str | None = None
        self.loaded_at: float | None = None


def parse_duration(text: str | None) -> float | None:
    """airlift Duration text (e.g. "1s", "500ms", "1.5m") -> seconds."""
    if not text:
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*(ns|us|ms|s|m|h|d)\s*", text)
    if not m:
        return None
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    return float(m.group(1)) * scale


class AuthFailure(Exception):
    def __init__(self, status: int, message: str, challenges: list[str]):
        super().__init__(message)
        self.status = status
        self.message = message
        self.challenges = challenges


class LabServer:
    def __init__(self, config: dict) -> None:
        self.config = config
        self.started = time.time()
        self.started_mono = time.monotonic()
        self.node_id = config.get("node_id") or new_node_id()
        self.environment = config.get("environment", "lab")
        self.default_zone = config.get("time_zone", "Europe/Vienna")
        self.users: dict[str, str] = dict(config.get("auth", {}).get("users", {}))
        secret = config.get("auth", {}).get("jwt_secret")
        self.jwt_secret = bytes.fromhex(secret) if secret else None
        self.oauth2 = OAuth2Provider(self.jwt_secret, config.get("auth", {}).get("oauth2_user", "carol"))
        self.engine_holder = EngineHolder()
        self.queries = QueryManager(self.engine_holder, config, log)
        self.faults = faults_mod.FaultStore()
        self.queries.faults = self.faults
        self.servers: list[ThreadingHTTPServer] = []

    # ------------------------------------------------------------------ engine
    def load_engine(self) -> None:
        spec = self.config.get("engine", {"kind": "stub"})
        t0 = time.monotonic()
        try:
            if spec.get("kind") == "stub":
                from .stub_engine import StubEngine

                engine = StubEngine()
            else:
                from ..engine import load_engine

                engine = load_engine(spec.get("catalogs", {}))
        except Exception:  # noqa: BLE001
            self.engine_holder.error = traceback.format_exc()
            log(f"engine failed to load:\n{self.engine_holder.error}")
            os._exit(3)
        self.engine_holder.engine = engine
        self.engine_holder.loaded_at = time.time()
        log(f"engine ({spec.get('kind', 'real')}) loaded in {time.monotonic() - t0:.2f}s")

    # ------------------------------------------------------------------ auth
    def authenticate(self, handler: "Handler") -> str:
        """The authenticated identity's user, following Trino's AuthenticationFilter."""
        methods = handler.listener_cfg.get("auth", ["insecure"])
        messages: list[str] = []
        challenges: list[str] = []
        header = handler.headers.get("Authorization", "") or ""
        scheme, _, cred = header.partition(" ")
        for method in methods:
            if method == "insecure":
                if scheme.lower() == "basic":
                    user, password = self._basic(cred)
                    if password:
                        messages.append("Password not allowed for insecure authentication")
                        challenges.append('Basic realm="Trino"')
                        continue
                    return user
                user = handler.headers.get("X-Trino-User") or None
                if user:
                    return user
                messages.append("Basic authentication or X-Trino-User must be sent")
                challenges.append('Basic realm="Trino"')
            elif method == "password":
                challenges.append('Basic realm="Trino"')
                if scheme.lower() != "basic":
                    continue
                user, password = self._basic(cred)
                if not password:
                    messages.append("Malformed credentials: password is empty")
                    continue
                if self.users.get(user) == password:
                    return user
                messages.append("Access Denied: Invalid credentials")
            elif method == "jwt":
                challenges.append('Bearer realm="Trino", token_type="JWT"')
                if scheme.lower() != "bearer" or not cred.strip():
                    continue
                if self.jwt_secret is None:
                    messages.append("JWT authentication is not configured")
                    continue
                try:
                    claims = jwt_hs256.verify(self.jwt_secret, cred.strip())
                except jwt_hs256.JwtError as e:
                    messages.append(str(e))
                    continue
                return str(claims["sub"])
            elif method == "oauth2":
                if scheme.lower() == "bearer" and cred.strip():
                    try:
                        return self.oauth2.verify(cred.strip())
                    except jwt_hs256.JwtError as e:
                        messages.append(str(e))
                challenges.append(self.oauth2.challenge(handler.base_url()))
        if not messages:
            messages.append("Unauthorized")
        # de-duplicate, keeping order (Trino collects them in LinkedHashSets)
        raise AuthFailure(401, " | ".join(dict.fromkeys(messages)), list(dict.fromkeys(challenges)))

    @staticmethod
    def _basic(cred: str) -> tuple[str, str | None]:
        try:
            text = base64.b64decode(cred.strip(), validate=True).decode("latin-1")
        except Exception:  # noqa: BLE001
            raise AuthFailure(401, "Invalid base64 encoded credentials", []) from None
        user, sep, password = text.partition(":")
        if not user:
            raise AuthFailure(401, "Malformed credentials: user is empty", [])
        return user, (password if sep and password else None)

    # ------------------------------------------------------------------ serving
    def bind(self) -> dict:
        tls_files = None
        listeners = {}
        for lcfg in self.config["listeners"]:
            ctx = None
            if lcfg.get("tls"):
                if tls_files is None:
                    from .tls import ensure_certificates

                    tls_files = ensure_certificates(Path(self.config["tls"]["dir"]))
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.load_cert_chain(tls_files["cert_file"], tls_files["key_file"])
            httpd = LabHTTPServer(("127.0.0.1", int(lcfg.get("port", 0))), Handler, self, lcfg, ctx)
            self.servers.append(httpd)
            port = httpd.server_address[1]
            scheme = "https" if ctx else "http"
            listeners[lcfg["name"]] = {
                "url": f"{scheme}://127.0.0.1:{port}", "port": port,
                "version": str(lcfg.get("version", 480)), "auth": lcfg.get("auth", ["insecure"]),
            }
            # the same listener on a second loopback address: another host for nextUri
            # redirections that still reaches this server
            alias_host = self.config.get("alias_host")
            if alias_host:
                try:
                    alias = LabHTTPServer((alias_host, port), Handler, self, lcfg, ctx, listener=httpd.listener)
                except OSError as e:
                    log(f"cannot bind {alias_host}:{port} ({e}); no alias listener")
                else:
                    self.servers.append(alias)
                    listeners[lcfg["name"]]["alias_url"] = f"{scheme}://{alias_host}:{port}"
        state = {"pid": os.getpid(), "listeners": listeners}
        if tls_files:
            state["ca_file"] = tls_files["ca_file"]
            state["other_ca_file"] = tls_files["other_ca_file"]
        return state

    def listener_port(self, tls: bool) -> int | None:
        """The port of the main listener of one scheme (the control listener for plain HTTP)."""
        for httpd in self.servers:
            cfg = httpd.listener_cfg
            if httpd.alias or bool(cfg.get("tls")) != tls:
                continue
            if tls or cfg.get("control"):
                return httpd.server_address[1]
        return None

    def serve(self) -> None:
        for httpd in self.servers:
            threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.25},
                             name=f"listener-{httpd.listener_cfg['name']}{'-alias' if httpd.alias else ''}",
                             daemon=True).start()

    def shutdown(self) -> None:
        for httpd in self.servers:
            httpd.shutdown()


class LabHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, lab: LabServer, listener_cfg: dict, ssl_ctx, listener=None):
        self.lab = lab
        self.listener_cfg = listener_cfg
        self.ssl_ctx = ssl_ctx
        self.alias = listener is not None
        self.listener = listener or Listener(
            name=listener_cfg["name"],
            version=int(listener_cfg.get("version", 480)),
            legacy_type_signatures=bool(listener_cfg.get("legacy_type_signatures", False)),
        )
        super().__init__(addr, handler)

    def get_request(self):
        conn, addr = self.socket.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.ssl_ctx is not None:
            conn = self.ssl_ctx.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr


class DropConnection(Exception):
    pass


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "Jetty"
    sys_version = ""
    timeout = 120

    # ------------------------------------------------------------------ plumbing
    def setup(self) -> None:
        super().setup()
        if isinstance(self.connection, ssl.SSLSocket):
            self.connection.settimeout(10)
            try:
                self.connection.do_handshake()
            except (ssl.SSLError, OSError):
                self.close_connection = True
                raise
            self.connection.settimeout(self.timeout)

    def handle(self) -> None:
        try:
            super().handle()
        except (ssl.SSLError, ConnectionError, TimeoutError, OSError):
            pass

    @property
    def lab(self) -> LabServer:
        return self.server.lab

    @property
    def listener_cfg(self) -> dict:
        return self.server.listener_cfg

    @property
    def listener(self) -> Listener:
        return self.server.listener

    def send_response(self, code, message=None) -> None:
        # airlift's Jetty sends no Server header
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def log_message(self, fmt, *args) -> None:  # noqa: D401 - access log to stderr
        if self.lab.config.get("access_log", True):
            log(f"[{self.listener.name}] {self.address_string()} {fmt % args}")

    def base_url(self) -> str:
        scheme = "https" if self.server.ssl_ctx is not None else "http"
        host = self.headers.get("Host") or f"127.0.0.1:{self.server.server_address[1]}"
        return f"{scheme}://{host}"

    def read_body(self) -> bytes:
        body = getattr(self, "_body", None)
        if body is not None:
            self._body = None
            return body
        return read_body(self)

    def send(self, status: int, body: bytes = b"", content_type: str | None = None,
             headers: list | None = None, reason: str | None = None) -> None:
        action = getattr(self, "_fault_action", None)
        self._fault_action = None
        headers = list(headers or [])
        if action is not None and action.get("kind") == "malformed":
            status = 200
            body = body[: max(1, len(body) // 2)] if body else b'{"id":'
            content_type = "application/json"
        encoding = None
        accept = self.headers.get("Accept-Encoding", "")
        no_gzip = getattr(self, "_no_gzip", False)
        self._no_gzip = False
        if (body and len(body) >= GZIP_MIN_BYTES and "gzip" in accept and not no_gzip
                and (action is None or action.get("kind") != "drop")):
            body = gzip.compress(body, compresslevel=1)
            encoding = "gzip"
        self.send_response(status, reason)
        if content_type:
            self.send_header("Content-Type", content_type)
        if encoding:
            self.send_header("Content-Encoding", encoding)
            self.send_header("Vary", "Accept-Encoding")
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if action is not None and action.get("kind") == "drop":
            # the connection dies mid-response: headers and part of the body, then a reset
            if body:
                self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            try:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            except OSError:
                pass
            self.close_connection = True
            raise DropConnection()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, status: int, obj, headers: list | None = None) -> None:
        padding = None
        target = getattr(self, "_fault_target", None)
        if status == 200 and target in ("post", "next", "info", "other"):
            obj, padding = self.shape_answer(obj, target)
        body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if padding is not None:
            # `"labPadding":"<padding>"` spliced in as the first field, without another copy
            body = b'{"labPadding":"' + padding + b'",' + body[1:]
            self._no_gzip = not getattr(self, "_padding_gzip", False)
        self.send(status, body, "application/json", headers)

    def shape_answer(self, obj, target: str):
        """Apply big_page / extra_fields / redirect_host rules to a JSON answer (a copy: pages
        are cached for replays)."""
        if not isinstance(obj, dict):
            return obj, None
        rules = self.lab.faults.for_page(target, getattr(self, "_fault_user", None),
                                         has_data=bool(obj.get("data")), has_next=bool(obj.get("nextUri")))
        if not rules:
            return obj, None
        obj = copy.deepcopy(obj)
        padding = None
        for rule in rules:
            kind = rule["kind"]
            if kind == "extra_fields":
                add_unknown_fields(obj)
            elif kind == "big_page":
                size = int(float(rule["mb"]) * 1024 * 1024)
                # random base64 text: incompressible, so the wire carries the full size too
                if rule.get("gzip"):
                    # compressible, and compressed on the wire when the client accepts gzip
                    padding = b"x" * size
                else:
                    padding = base64.b64encode(os.urandom(size * 3 // 4 + 3))[:size]
                self._padding_gzip = bool(rule.get("gzip"))
            elif kind == "redirect_host":
                self.redirect_next_uri(obj, rule)
        return obj, padding

    def redirect_next_uri(self, page: dict, rule: dict) -> None:
        old = urllib.parse.urlsplit(page["nextUri"])
        scheme = rule.get("scheme") or old.scheme
        host = rule.get("host") or old.hostname
        port = rule.get("port")
        if port is None:
            port = old.port
            if scheme != old.scheme:
                # the listener of the other scheme serves the same queries
                port = self.lab.listener_port(tls=scheme == "https") or port
        base = f"{scheme}://{host}:{port}"
        page["nextUri"] = urllib.parse.urlunsplit((scheme, f"{host}:{port}", old.path, old.query, ""))
        q = self.lab.queries.get(page.get("id", ""))
        if q is not None:
            q.redirected_to = base

    def send_text(self, status: int, text: str, headers: list | None = None) -> None:
        # Trino answers protocol errors with a plain-text body and the message as reason
        reason = text.splitlines()[0] if text else None
        self.send(status, text.encode("utf-8"), "text/plain; charset=utf-8", headers, reason=reason)

    # ------------------------------------------------------------------ faults
    def apply_faults(self, target: str, user: str | None, sql: str | None = None) -> bool:
        """Apply injected faults; True when the request has been answered by one."""
        latency, action = self.lab.faults.for_request(target, user, sql)
        if latency:
            time.sleep(latency / 1000.0)
        if action is None:
            return False
        kind = action["kind"]
        if kind == "status":
            status = int(action["status"])
            headers = []
            if action.get("retry_after") is not None:
                headers.append(("Retry-After", str(action["retry_after"])))
            if status == 401 and not any(k.lower() == "www-authenticate" for k in action.get("headers", {})):
                headers.append(("WWW-Authenticate", 'Basic realm="Trino"'))
            for name, value in (action.get("headers") or {}).items():
                if isinstance(value, dict):
                    # an HTTP date computed when the rule fires, e.g. 2 s ahead
                    value = email.utils.formatdate(time.time() + float(value["http_date_in_s"]), usegmt=True)
                headers.append((name, str(value)))
            if self.command == "POST":
                self.read_body()
            body = action.get("body")
            if body is not None:
                ctype = action.get("content_type") or (
                    "text/html; charset=utf-8" if body.lstrip().startswith("<") else "text/plain; charset=utf-8")
                self.send(status, body.encode("utf-8"), ctype, headers)
                return True
            text = {
                401: "Unauthorized", 403: "Forbidden", 429: "Too Many Requests", 502: "Bad Gateway",
                503: "Service Unavailable", 504: "Gateway Timeout",
            }.get(status, "Injected fault")
            self.send_text(status, text, headers)
            return True
        # drop / malformed: the request is processed, its answer is spoiled in send()
        self._fault_action = action
        return False

    def query_sql_from_path(self) -> str | None:
        m = re.match(r"^/v1/statement/(?:queued|executing)/(?:partialCancel/)?([^/]+)/", self.path)
        if not m:
            return None
        q = self.lab.queries.get(m.group(1))
        return q.sql if q else None

    def query_user_from_path(self) -> str | None:
        m = re.match(r"^/v1/statement/(?:queued|executing)/(?:partialCancel/)?([^/]+)/", self.path)
        if not m:
            return None
        q = self.lab.queries.get(m.group(1))
        return q.user if q else None

    def target_of(self) -> str | None:
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/_lab/"):
            return None
        if path.rstrip("/") == "/v1/statement" and self.command == "POST":
            return "post"
        if path.startswith("/v1/statement/"):
            return "next"
        if path.startswith("/v1/info") or path.startswith("/v1/status"):
            return "info"
        return "any-other"

    def dispatch(self) -> None:
        self._body = None
        try:
            target = self.target_of()
            if target is not None:
                sql = None
                if target == "next":
                    user = self.query_user_from_path()
                    sql = self.query_sql_from_path()
                else:
                    user = self.headers.get("X-Trino-User")
                    if target == "any-other":
                        target = "other"
                    if target == "post":
                        # the statement, read once, so a rule can match its text
                        self._body = read_body(self)
                        sql = self._body.decode("utf-8", "replace")
                self._fault_target, self._fault_user = target, user
                if self.apply_faults(target, user, sql):
                    return
            else:
                self._fault_target = self._fault_user = None
            self.route()
        except DropConnection:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except AuthFailure as e:
            self.send_text(e.status, e.message, [("WWW-Authenticate", c) for c in e.challenges])
        except HttpError as e:
            self.send_text(e.status, e.message or {404: "Not Found", 410: "Gone"}.get(e.status, ""))
        except Exception:  # noqa: BLE001
            log(f"internal error serving {self.command} {self.path}:\n{traceback.format_exc()}")
            try:
                self.send_text(500, "Internal server error")
            except OSError:
                self.close_connection = True

    do_GET = do_POST = do_DELETE = do_HEAD = do_PUT = dispatch

    # ------------------------------------------------------------------ routing
    def route(self) -> None:
        split = urllib.parse.urlsplit(self.path)
        path = split.path
        params = urllib.parse.parse_qs(split.query)
        method = self.command

        if path.startswith("/_lab/") or path == "/_lab":
            if not self.listener_cfg.get("control"):
                raise HttpError(404, "Not Found")
            return self.control(method, path, params)

        m = re.fullmatch(r"/oauth2/(authorize|token)/([A-Za-z0-9_-]+)", path)
        if m and "oauth2" in self.listener_cfg.get("auth", []):
            return self.oauth2_endpoint(method, m.group(1), m.group(2), params)

        if path.rstrip("/") == "/v1/statement":
            if method == "POST":
                return self.post_statement()
            if method == "HEAD":
                self.lab.authenticate(self)
                return self.send(200)
            raise HttpError(405, "Method Not Allowed")

        m = re.fullmatch(r"/v1/statement/(queued|executing)/([^/]+)/([^/]+)/(\d+)", path)
        if m:
            return self.statement_uri(method, m.group(1), m.group(2), m.group(3), int(m.group(4)), params)
        m = re.fullmatch(r"/v1/statement/executing/partialCancel/([^/]+)/(\d+)/([^/]+)/(\d+)", path)
        if m:
            q = self.lab.queries.get(m.group(1))
            if q is None or not q.slug_valid("executing", m.group(3), int(m.group(4))):
                raise HttpError(404, "Query not found")
            if method != "DELETE":
                raise HttpError(405, "Method Not Allowed")
            return self.send(204)

        if path == "/v1/info" and method in ("GET", "HEAD"):
            return self.send_json(200, self.server_info())
        if path == "/v1/info/state" and method in ("GET", "HEAD"):
            return self.send_json(200, "ACTIVE")
        if path == "/v1/info/coordinator" and method in ("GET", "HEAD"):
            return self.send(200)
        if path == "/v1/status" and method in ("GET", "HEAD"):
            return self.send_json(200, self.node_status())

        if path.rstrip("/") == "/v1/query" and method == "GET":
            # The stand-in keeps no record of its queries for a client to read (no
            # system.runtime.queries either), as a gateway in front of a cluster: the list
            # is not served. A query's own info (below) is.
            self.lab.authenticate(self)
            raise HttpError(404, "Not Found")
        m = re.fullmatch(r"/v1/query/([^/]+)", path)
        if m:
            self.lab.authenticate(self)
            q = self.lab.queries.get(m.group(1))
            if method == "DELETE":
                if q is not None:
                    self.lab.queries.cancel(q)
                return self.send(204)
            if method == "GET":
                if q is None:
                    raise HttpError(410, "Gone")
                return self.send_json(200, self.lab.queries.basic_info(self.base_url(), q))
        m = re.fullmatch(r"/v1/query/([^/]+)/killed", path)
        if m and method == "PUT":
            self.lab.authenticate(self)
            q = self.lab.queries.get(m.group(1))
            message = self.read_body().decode("utf-8", "replace")
            if q is None:
                raise HttpError(410, "Gone")
            if q.final:
                raise HttpError(409, "Conflict")
            with q.cond:
                q.cancelled.set()
                q.error = TrinoError("ADMINISTRATIVELY_KILLED", f"Query killed. Message: {message}")
                self.lab.queries._finish_locked(q)
            return self.send(202)
        if path in ("/", "/ui", "/ui/") or path.startswith("/ui/"):
            return self.send(303, headers=[("Location", "/ui/")]) if path == "/" else self.send_text(
                200, "The lab serves no web UI.")
        raise HttpError(404, "Not Found")

    # ------------------------------------------------------------------ /v1/info
    def server_info(self) -> dict:
        version = self.listener.version
        info: dict = {"nodeId": self.lab.node_id}
        if version >= 477:
            info["state"] = "ACTIVE"
        info.update({
            "nodeVersion": {"version": str(version)},
            "environment": self.lab.environment,
            "coordinator": True,
            "starting": self.lab.engine_holder.engine is None,
            "uptime": airlift_duration(time.monotonic() - self.lab.started_mono),
        })
        return info

    def node_status(self) -> dict:
        try:
            rss = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except Exception:  # noqa: BLE001
            rss = 0
        load = os.getloadavg()[0] / max(os.cpu_count() or 1, 1)
        return {
            "nodeId": self.lab.node_id,
            "nodeVersion": {"version": str(self.listener.version)},
            "environment": self.lab.environment,
            "coordinator": True,
            "uptime": airlift_duration(time.monotonic() - self.lab.started_mono),
            "externalAddress": "127.0.0.1",
            "internalAddress": "127.0.0.1",
            "memoryInfo": {"availableProcessors": os.cpu_count() or 1, "pool": {}},
            "processors": os.cpu_count() or 1,
            "processCpuLoad": 0.0,
            "systemCpuLoad": min(load, 1.0),
            "heapUsed": rss,
            "heapAvailable": 4 * 1024 ** 3,
            "nonHeapUsed": 0,
        }

    # ------------------------------------------------------------------ statements
    def session_from_headers(self, user: str) -> Session:
        h = self.headers
        catalog = (h.get("X-Trino-Catalog") or "").strip().lower() or None
        schema = (h.get("X-Trino-Schema") or "").strip().lower() or None
        if schema and not catalog:
            raise HttpError(400, "Schema is set but catalog is not")
        properties: dict[str, str] = {}
        for header in h.get_all("X-Trino-Session") or []:
            for part in header.split(","):
                part = part.strip()
                if not part:
                    continue
                name, sep, value = part.partition("=")
                if not sep or not name.strip():
                    raise HttpError(400, f"Invalid X-Trino-Session header: {header}")
                properties[name.strip()] = urllib.parse.unquote_plus(value.strip())
        caps = frozenset(
            c.strip() for c in (h.get("X-Trino-Client-Capabilities") or "").split(",") if c.strip()
        )
        zone = (h.get("X-Trino-Time-Zone") or "").strip() or self.lab.default_zone
        return Session(
            user=user, catalog=catalog, schema=schema, time_zone=zone, properties=properties,
            client_capabilities=frozenset(c for c in caps if c in CAPABILITIES) | (caps - CAPABILITIES),
            source=h.get("X-Trino-Source"), server_version=self.listener.version,
        )

    def post_statement(self) -> None:
        # the body first: a 401 must not leave it on a kept-alive connection, where it would
        # be read as the start of the client's next request
        body = self.read_body()
        identity = self.lab.authenticate(self)
        sql = body.decode("utf-8", "replace")
        if not sql.strip():
            raise HttpError(400, "SQL statement is empty")
        user = self.headers.get("X-Trino-User") or identity
        session = self.session_from_headers(user)
        q = self.lab.queries.create(sql, session, self.listener, session.source)
        zone = session.time_zone
        if not _zone_supported(zone):
            with q.cond:
                q.dispatch_error = TrinoError("NOT_SUPPORTED", f"Time zone not supported: {zone}")
                q.submitted = True
                self.lab.queries._finish_locked(q, error=q.dispatch_error)
        self.send_json(200, self.lab.queries.post_page(self.base_url(), q))

    def statement_uri(self, method: str, kind: str, query_id: str, slug: str, token: int, params) -> None:
        queries = self.lab.queries
        q = queries.get(query_id)
        if q is None:
            raise HttpError(404, "Query not found")
        context = "queued" if kind == "queued" else "executing"
        if q.redirected_to is not None and self.base_url() == q.redirected_to:
            auth = (self.headers.get("Authorization") or "").partition(" ")[0]
            with q.cond:
                q.redirect_hits += 1
                if auth and auth not in q.redirect_auth:
                    q.redirect_auth.append(auth)
        if method == "DELETE":
            if not q.slug_valid(context, slug, token):
                raise HttpError(404, "Query not found")
            queries.cancel(q)
            return self.send(204)
        if method == "HEAD":
            if not q.slug_valid(context, slug, token):
                raise HttpError(404, "Query not found")
            queries.heartbeat(q)
            return self.send(200)
        if method != "GET":
            raise HttpError(405, "Method Not Allowed")
        wait = parse_duration((params.get("maxWait") or [None])[0])
        wait_s = MAX_WAIT_S if wait is None else min(wait, MAX_WAIT_S)
        base = self.base_url()
        if kind == "queued":
            page = queries.queued_get(base, q, slug, token, wait_s)
            return self.send_json(200, page)
        page = queries.executing_get(base, q, slug, token, wait_s)
        return self.send_json(200, page.body, page.headers)

    # ------------------------------------------------------------------ OAuth2
    def oauth2_endpoint(self, method: str, kind: str, flow: str, params) -> None:
        provider = self.lab.oauth2
        if kind == "authorize":
            if method not in ("GET", "POST"):
                raise HttpError(405, "Method Not Allowed")
            user = (params.get("user") or [None])[0]
            deny = (params.get("deny") or ["0"])[0] not in ("0", "", "false")
            status, text = provider.authorize(flow, user, deny)
            return self.send_text(status, text)
        if method == "DELETE":
            provider.delete(flow)
            return self.send(204)
        if method != "GET":
            raise HttpError(405, "Method Not Allowed")
        return self.send_json(200, provider.poll(flow, self.base_url() + self.path))

    # ------------------------------------------------------------------ /_lab
    def control(self, method: str, path: str, params) -> None:
        lab = self.lab
        body = self.read_body() if method in ("POST", "PUT", "DELETE") else b""
        try:
            payload = json.loads(body) if body.strip() else {}
        except ValueError as e:
            return self.send_json(400, {"error": f"invalid JSON: {e}"})
        if path == "/_lab/faults":
            if method == "POST":
                try:
                    total = lab.faults.add(payload.get("user"), payload.get("rules", []))
                except faults_mod.FaultError as e:
                    return self.send_json(400, {"error": str(e)})
                return self.send_json(200, {"ok": True, "rules": total})
            if method == "DELETE":
                user = (params.get("user") or [None])[0]
                removed = lab.faults.clear(user, everything=user is None)
                return self.send_json(200, {"ok": True, "removed": removed})
            if method == "GET":
                return self.send_json(200, lab.faults.describe())
        if path == "/_lab/oauth2":
            if method == "POST":
                return self.send_json(200, lab.oauth2.configure(payload))
            if method == "GET":
                return self.send_json(200, lab.oauth2.describe())
        if path == "/_lab/queries" and method == "GET":
            return self.send_json(200, lab.queries.describe())
        if path == "/_lab/config":
            if method == "POST":
                qm = lab.queries
                if "page_size" in payload:
                    size = payload["page_size"]
                    user = payload.get("user")
                    if user is None:
                        qm.page_size_default = int(size) if size else int(lab.config.get("page_size", 1000))
                    elif size is None:
                        qm.page_size_by_user.pop(user, None)
                    else:
                        qm.page_size_by_user[user] = int(size)
                if "client_timeout_s" in payload:
                    value = payload["client_timeout_s"]
                    user = payload.get("user")
                    if user is None:
                        qm.client_timeout_s = float(value if value is not None
                                                    else lab.config.get("client_timeout_s", 300))
                    elif value is None:
                        qm.client_timeout_by_user.pop(user, None)
                    else:
                        qm.client_timeout_by_user[user] = float(value)
            if method in ("GET", "POST"):
                qm = lab.queries
                return self.send_json(200, {"page_size": qm.page_size_default,
                                            "page_size_by_user": qm.page_size_by_user,
                                            "client_timeout_s": qm.client_timeout_s,
                                            "client_timeout_s_by_user": qm.client_timeout_by_user})
        m = re.fullmatch(r"/_lab/engine/([A-Za-z0-9_]+)", path)
        if m and method == "POST":
            engine = lab.engine_holder.engine
            if engine is None:
                return self.send_json(503, {"error": "engine is still loading"})
            try:
                out = engine.control(m.group(1), payload)
            except TrinoError as e:
                return self.send_json(400, {"error": e.wire_message, "trino_error": e.to_wire()})
            except Exception as e:  # noqa: BLE001
                log(f"engine control {m.group(1)} failed:\n{traceback.format_exc()}")
                return self.send_json(500, {"error": f"{type(e).__name__}: {e}"})
            return self.send_json(200, out if out is not None else {})
        if path == "/_lab/health" and method == "GET":
            return self.send_json(200, {"engine_loaded": lab.engine_holder.engine is not None})
        raise HttpError(404, "Not Found")


UNKNOWN_FIELD = "labUnknownField"


def add_unknown_fields(node) -> None:
    """Add a field no client knows to every JSON object of an answer, except inside row
    values (`data`, where an object is a MAP value)."""
    if isinstance(node, dict):
        for key, value in list(node.items()):
            if key != "data":
                add_unknown_fields(value)
        node[UNKNOWN_FIELD] = {"note": "unknown to clients", "n": [1, 2.5, None, True]}
    elif isinstance(node, list):
        for item in node:
            add_unknown_fields(item)


def _zone_supported(zone: str) -> bool:
    if zone.upper() in ("UTC", "Z", "GMT", "UT"):
        return True
    if re.fullmatch(r"[+-]\d{2}:\d{2}", zone):
        return True
    try:
        zoneinfo.ZoneInfo(zone)
        return True
    except Exception:  # noqa: BLE001
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    args = ap.parse_args()
    config = json.loads(Path(args.config).read_text())

    lab = LabServer(config)
    state = lab.bind()
    lab.serve()
    state_file = config.get("state_file")
    if state_file:
        tmp = Path(state_file + ".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(state_file)
    log("listening: " + ", ".join(f"{k}={v['url']} ({v['version']})" for k, v in state["listeners"].items()))

    stop = threading.Event()

    def on_signal(signum, frame):  # noqa: ARG001
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=lab.load_engine, name="engine-loader", daemon=True).start()
    stop.wait()
    log("shutting down")
    lab.shutdown()


if __name__ == "__main__":
    main()
