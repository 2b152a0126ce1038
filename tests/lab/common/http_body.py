"""HTTP plumbing the lab's servers and proxies share (standard library only)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def read_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The body of the request `handler` is serving: its Content-Length, or its chunks."""
    if handler.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = bytearray()
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += handler.rfile.read(size)
            handler.rfile.readline()
    n = int(handler.headers.get("Content-Length") or 0)
    return handler.rfile.read(n) if n else b""
