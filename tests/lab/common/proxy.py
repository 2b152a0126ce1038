"""What the lab's two fault proxies share (standard library only): the reverse-proxy plumbing
under their rules. `airflow/proxy.py` (in front of each Airflow) and `trino/proxy.py` (in
front of the real Trino) add their rule languages and what they reshape.

A proxy forwards a request (any method, path, query, headers but the hop-by-hop ones, body)
to its upstream with the upstream's own `Host`, streams the answer back (chunked when it
has no length), and keeps the last requests it saw for its control endpoint `/_lab/`
(`requests`, `health`), which is never forwarded.
"""

from __future__ import annotations

import collections
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .http_body import read_body

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
              "trailers", "transfer-encoding", "upgrade", "host"}
CHUNK = 64 * 1024
KEEP_REQUESTS = 1000
# SO_LINGER on, 0 s: close() resets the connection.
RESET = b"\x01\x00\x00\x00\x00\x00\x00\x00"


class DropConnection(Exception):
    """Raised by `Handler.drop` to leave the request with no (further) answer."""


class Upstream:
    """The server behind a proxy, and the requests the proxy saw."""

    def __init__(self, upstream: str) -> None:
        u = urllib.parse.urlsplit(upstream)
        if u.scheme != "http" or not u.hostname:
            raise SystemExit("the upstream must be http://host:port")
        self.upstream = f"http://{u.netloc}"
        self.up_netloc = u.netloc
        self.up_host = u.hostname
        self.up_port = u.port or 80
        self.lock = threading.Lock()
        self.requests: collections.deque = collections.deque(maxlen=KEEP_REQUESTS)

    def record(self, entry: dict) -> None:
        with self.lock:
            self.requests.append(entry)


class Handler(BaseHTTPRequestHandler):
    """The plumbing of a proxy's request handler; `self.server.proxy` is its `Upstream`."""

    protocol_version = "HTTP/1.1"
    sys_version = ""
    hop_by_hop = HOP_BY_HOP
    # Whether an answer made by the proxy itself names the proxy in a Server header.
    names_itself = True

    def version_string(self) -> str:
        return self.server_version

    @property
    def proxy(self):
        return self.server.proxy

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionError, TimeoutError, OSError, DropConnection):
            pass

    def read_body(self) -> bytes:
        return read_body(self)

    def answer(self, status: int, body: bytes, content_type: str | None, headers=None,
               reason: str | None = None) -> None:
        """An answer of the proxy's own; `headers` a dict or a list of pairs."""
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
        self.log_request(status)
        self.send_response_only(status, reason)
        self.send_header("Date", self.date_time_string())
        if self.names_itself and not any(k.lower() == "server" for k, _ in pairs):
            self.send_header("Server", self.server_version)
        if content_type:
            self.send_header("Content-Type", content_type)
        for k, v in pairs:
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer_json(self, status: int, obj) -> None:
        self.answer(status, json.dumps(obj).encode(), "application/json")

    def drop(self) -> None:
        """Reset the connection: no (further) answer."""
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET)
        except OSError:
            pass
        self.close_connection = True
        raise DropConnection()

    def upstream(self, body: bytes, accept_encoding: str | None = None,
                 timeout: float = 600) -> http.client.HTTPResponse:
        """Send this request upstream; `accept_encoding` replaces the client's (an answer the
        proxy reads whole to reshape)."""
        p = self.proxy
        conn = http.client.HTTPConnection(p.up_host, p.up_port, timeout=timeout)
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # Header names are case-insensitive: the ones set below replace the client's
        # whatever their spelling (a lowercase content-length sent twice is a 400).
        headers = [(k, v) for k, v in self.headers.items()
                   if k.lower() not in self.hop_by_hop and k.lower() != "content-length"
                   and not (accept_encoding and k.lower() == "accept-encoding")]
        if accept_encoding:
            headers.append(("Accept-Encoding", accept_encoding))
        headers.append(("Host", p.up_netloc))
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers.append(("Content-Length", str(len(body))))
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        conn.endheaders(body or None)
        resp = conn.getresponse()
        resp._lab_conn = conn  # closed with the response
        return resp

    @staticmethod
    def close_upstream(resp: http.client.HTTPResponse) -> None:
        try:
            resp.close()
        finally:
            resp._lab_conn.close()

    def relayed_header(self, name: str, value: str) -> str:
        """An upstream header's value as the client gets it (unchanged here)."""
        return value

    def relay(self, resp: http.client.HTTPResponse) -> None:
        """Stream an upstream answer back unchanged (chunked when it has no length)."""
        try:
            self.send_response_only(resp.status, resp.reason)
            length = resp.getheader("Content-Length")
            for k, v in resp.getheaders():
                if k.lower() in self.hop_by_hop or k.lower() == "content-length":
                    continue
                self.send_header(k, self.relayed_header(k, v))
            chunked = length is None and self.command != "HEAD" and resp.status not in (204, 304)
            if length is not None:
                self.send_header("Content-Length", length)
            elif chunked:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                data = resp.read1(CHUNK)
                if not data:
                    break
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        finally:
            self.close_upstream(resp)

    def common_control(self, path: str, method: str) -> bool:
        """`/_lab/requests` and `/_lab/health`; False for any other control request."""
        p = self.proxy
        if path == "/_lab/requests":
            if method == "GET":
                with p.lock:
                    self.answer_json(200, list(p.requests))
                return True
            if method == "DELETE":
                with p.lock:
                    p.requests.clear()
                self.answer_json(200, {"ok": True})
                return True
        if path == "/_lab/health" and method == "GET":
            self.answer_json(200, {"ok": True, "upstream": p.upstream})
            return True
        return False


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def get_request(self):
        conn, addr = self.socket.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, addr


def stderr_line(line: str) -> None:
    """One timestamped line on stderr (the proxy's log)."""
    try:
        sys.stderr.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def write_state(path: str, state: dict) -> None:
    """`state` (with this process's pid) to `path`, atomically: whoever waits for the file
    reads it whole."""
    tmp = Path(path + ".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), **state}))
    tmp.replace(path)


def serve_until_signalled(servers: list) -> None:
    """Serve on every server until SIGTERM or SIGINT, then stop."""
    for s in servers:
        threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.25}, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    for s in servers:
        s.shutdown()
