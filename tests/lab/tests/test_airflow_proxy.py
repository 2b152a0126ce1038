"""The fault-injecting proxy in front of each Airflow (`proxy_url`, rules on `proxy_control_url`):
unchanged by default, then every rule kind against the real Airflow behind it. Only reads:
nothing is triggered (a rule answers a trigger before it reaches Airflow)."""

from __future__ import annotations

import json
import time
import zlib

import pytest
import requests

from .test_airflow import APIS, V1, V2, af, flavour, q  # noqa: F401

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

HOSTILE = "\x1b]52;c;ZXZpbA==\x07 \x1b[2J\r\u202eevil\u202c tail"


class ProxyControl:
    def __init__(self, base: str):
        self.base = base
        self.http = requests.Session()
        self.http.trust_env = False

    def faults(self, *rules):
        r = self.http.post(f"{self.base}/faults", json={"rules": list(rules)}, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def state(self):
        return self.http.get(f"{self.base}/faults", timeout=10).json()

    def requests(self):
        return self.http.get(f"{self.base}/requests", timeout=10).json()

    def clear(self):
        self.http.delete(f"{self.base}/faults", timeout=10)
        self.http.delete(f"{self.base}/requests", timeout=10)


@pytest.fixture
def pc(af):
    c = ProxyControl(af["proxy_control_url"])
    c.clear()
    yield c
    c.clear()


@pytest.fixture(scope="module")
def direct(af, flavour):
    return flavour(af["url"], af["user"], af["password"])


@pytest.fixture
def via(af, flavour, pc):  # noqa: ARG001 - rules cleared before the client logs in
    """A client of the same API through the proxy (API v2 logs in through it: a POST body)."""
    return flavour(af["proxy_url"], af["user"], af["password"])


def latest_log_url(api) -> str:
    run = api.runs("compact_documents")[0]
    tis = api.tis("compact_documents", run["dag_run_id"])
    task_id, ti = next(iter(tis.items()))
    return api.log_url("compact_documents", run["dag_run_id"], task_id, max(int(ti.get("try_number") or 1), 1))


def test_proxy_is_in_lab_json(af):
    assert af["proxy_url"].startswith("http://127.0.0.1:")
    assert af["proxy_control_url"] == af["proxy_url"] + "/_lab"
    assert requests.get(af["proxy_control_url"] + "/health", timeout=10).json()["upstream"] == af["url"]


def test_forwards_unchanged(direct, via, pc):
    def stable(body):  # the scheduler's parse times move between two calls
        return {d["dag_id"]: (d["description"], d["owners"], d["tags"], d["is_paused"]) for d in body["dags"]}

    assert stable(via.get("/dags", limit=100)) == stable(direct.get("/dags", limit=100))
    a = direct.s.get(latest_log_url(direct), params={"full_content": "true"}, timeout=60)
    b = via.s.get(latest_log_url(via).replace(direct.base, via.base), params={"full_content": "true"}, timeout=60)
    assert a.status_code == b.status_code == 200
    assert a.content == b.content and a.headers["Content-Type"] == b.headers["Content-Type"]
    # an unknown DAG: Airflow's own 404 passes through
    r = via.s.get(via.url("/dags/no_such_dag"), timeout=30)
    assert r.status_code == 404
    seen = pc.requests()
    assert seen and all(e["forwarded"] and e["rule"] is None for e in seen)


def test_lowercase_request_headers_are_not_sent_twice(af, pc):
    """A client that spells its headers in lowercase (HTTP/2-style, as reqwest does) gets
    the same answer through the proxy as directly: the proxy's own Host and
    Content-Length replace the client's whatever their case."""
    import http.client
    import urllib.parse

    body = json.dumps({"dag_ids": ["no_such_dag"]}).encode()

    def post(base: str) -> int:
        u = urllib.parse.urlsplit(base)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        conn.putrequest("POST", "/auth/token" if af["api"] == "v2" else "/api/v1/dags/~/dagRuns/list",
                        skip_host=True, skip_accept_encoding=True)
        conn.putheader("host", f"{u.hostname}:{u.port}")
        conn.putheader("content-type", "application/json")
        conn.putheader("content-length", str(len(body)))
        conn.endheaders(body)
        status = conn.getresponse().status
        conn.close()
        return status

    assert post(af["proxy_url"]) == post(af["url"]) != 400


def test_status_with_headers_and_body(via, pc):
    pc.faults({"kind": "status", "status": 403, "method": "POST", "path": r"/dagRuns$", "count": 1,
               "body": "<html><body><h1>403 Forbidden</h1></body></html>", "headers": {"Server": "nginx"}})
    r = via.s.post(via.url("/dags/compact_parcels/dagRuns"), json={}, timeout=30)
    assert r.status_code == 403 and r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Server"] == "nginx" and "403 Forbidden" in r.text
    entry = pc.requests()[-1]
    assert entry["rule"] == "status" and entry["forwarded"] is False   # the trigger never reached Airflow
    pc.faults({"kind": "status", "status": 401, "path": r"/dags$", "count": 1})
    r = via.s.get(via.url("/dags"), timeout=30)
    assert r.status_code == 401 and r.json()["status"] == 401
    assert via.s.get(via.url("/dags"), timeout=30).status_code == 200   # count 1: spent


def test_status_after_forwarding(via, pc):
    pc.faults({"kind": "status", "status": 504, "path": r"/dags$", "forward": True, "count": 1,
               "headers": {"Retry-After": "NaN"}})
    r = via.s.get(via.url("/dags"), timeout=30)
    assert r.status_code == 504 and r.headers["Retry-After"] == "NaN"
    assert pc.requests()[-1]["forwarded"] is True


def test_latency(via, pc):
    pc.faults({"kind": "latency", "ms": 1200, "path": r"/dags$", "count": 1})
    t0 = time.monotonic()
    assert via.s.get(via.url("/dags"), timeout=30).status_code == 200
    assert time.monotonic() - t0 >= 1.2


def test_drop(via, pc):
    pc.faults({"kind": "drop", "path": r"/dags$", "count": 1})
    with pytest.raises(requests.exceptions.ConnectionError):
        via.s.get(via.url("/dags"), timeout=30)
    assert pc.state()[0]["fired"] == 1


def test_body_replaces_a_log(via, pc):
    lines = f"line one {HOSTILE}\nline two\r\n"
    pc.faults({"kind": "body", "path": r"/logs/\d+$", "body": lines, "content_type": "text/plain; charset=utf-8"})
    r = via.s.get(latest_log_url(via), timeout=60)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    assert r.content.decode("utf-8") == lines
    doc = {"content": [{"event": f"boom {HOSTILE}", "level": "error"}], "continuation_token": None}
    pc.clear()
    pc.faults({"kind": "body", "path": r"/logs/\d+$", "json": doc})
    r = via.s.get(latest_log_url(via), timeout=60)
    assert r.json() == doc


def test_body_replace_puts_hostile_text_in_the_dag_list(via, direct, pc):
    hostile = json.dumps(HOSTILE)[1:-1]  # JSON-escaped, spliced into the JSON text
    pc.faults({"kind": "body", "path": r"/dags$", "method": "GET",
               "replace": [['"compact_documents"', f'"compact_documents{hostile}"'],
                           ['"airflow"', f'"{hostile}"']]})
    dags = {d["dag_id"]: d for d in via.get("/dags", limit=100)["dags"]}
    assert f"compact_documents{HOSTILE}" in dags
    real = {d["dag_id"]: d for d in direct.get("/dags", limit=100)["dags"]}
    assert set(dags) - {f"compact_documents{HOSTILE}"} == set(real) - {"compact_documents"}


def test_body_leaves_errors_alone(via, pc):
    pc.faults({"kind": "body", "path": r"/dags/no_such_dag$", "body": "replaced"})
    r = via.s.get(via.url("/dags/no_such_dag"), timeout=30)
    assert r.status_code == 404 and r.text != "replaced"


def test_big_body_streams(via, pc):
    pc.faults({"kind": "big_body", "mb": 64, "path": r"/logs/\d+$", "count": 1})
    r = via.s.get(latest_log_url(via), stream=True, timeout=60)
    assert r.status_code == 200 and int(r.headers["Content-Length"]) == 64 * 1024 * 1024
    n = 0
    tail = b""
    for chunk in r.iter_content(1024 * 1024):
        n += len(chunk)
        tail = (tail + chunk)[-200:]
    assert n == 64 * 1024 * 1024 and tail.endswith(b"END OF BIG LOG\n")


def test_big_body_json_document(via, pc):
    pc.faults({"kind": "big_body", "mb": 8, "format": "json", "path": r"/logs/\d+$", "count": 1})
    r = via.s.get(latest_log_url(via), timeout=60)
    body = r.json()
    assert len(r.content) == 8 * 1024 * 1024
    assert body["content"][-1]["event"] == "END OF BIG LOG" and body["continuation_token"] is None


def test_big_body_gzip_bomb(via, pc):
    pc.faults({"kind": "big_body", "mb": 100, "gzip": True, "path": r"/logs/\d+$", "count": 1})
    r = via.s.get(latest_log_url(via), stream=True, timeout=120, headers={"Accept-Encoding": "gzip"})
    assert r.headers["Content-Encoding"] == "gzip"
    wire = r.raw.read(decode_content=False)
    assert len(wire) < 2 * 1024 * 1024
    d = zlib.decompressobj(31)
    inflated = 0
    tail = b""
    for i in range(0, len(wire), 65536):
        out = d.decompress(wire[i:i + 65536])
        inflated += len(out)
        tail = (tail + out)[-100:]
    inflated += len(d.flush())
    assert inflated == 100 * 1024 * 1024 and d.eof
    assert tail.endswith(b"END OF BIG LOG\n")


def test_bad_rules_are_refused(pc):
    for bad in ({"kind": "nope"}, {"kind": "status"}, {"kind": "big_body", "mb": -1},
                {"kind": "body"}, {"kind": "latency"}, {"kind": "drop", "path": "("}):
        r = pc.http.post(f"{pc.base}/faults", json={"rules": [bad]}, timeout=10)
        assert r.status_code == 400, bad
