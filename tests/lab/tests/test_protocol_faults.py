"""The fault rules a client's trust is tested with: every Retry-After spelling, a gateway's
HTML error, a huge page, unknown fields everywhere, a nextUri to another host or scheme, and
a CA that signed nothing the lab serves."""

from __future__ import annotations

import email.utils
import gzip
import json
import time
from urllib.parse import urlsplit

import pytest
import requests

from .conftest import RawClient

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

UNKNOWN = "labUnknownField"


def objects_outside_data(node, path="$"):
    """Every JSON object of an answer with its path, not descending into row values."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k != "data":
                yield from objects_outside_data(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from objects_outside_data(v, f"{path}[{i}]")


# --------------------------------------------------------------------------- status + headers
@pytest.mark.parametrize("value", ["NaN", "inf", "-1", "Wed, 01 Jan 3000 00:00:00 GMT", "1"])
def test_status_rule_sends_any_retry_after(raw, control, user, value):
    control.faults(user, {"kind": "status", "status": 429, "count": 2, "on": "post",
                          "headers": {"Retry-After": value}})
    for _ in range(2):
        r = raw.post("SELECT 1")
        assert r.status_code == 429
        assert r.headers["Retry-After"] == value
    assert raw.post("SELECT 1").status_code == 200


def test_status_rule_computes_a_date_when_it_fires(raw, control, user):
    control.faults(user, {"kind": "status", "status": 429, "count": 1, "on": "post",
                          "headers": {"Retry-After": {"http_date_in_s": 2}}})
    time.sleep(1.2)  # the date is computed when the rule fires, not when it was posted
    before = time.time()
    r = raw.post("SELECT 1")
    assert r.status_code == 429
    when = email.utils.parsedate_to_datetime(r.headers["Retry-After"]).timestamp()
    assert before + 0.5 <= when <= before + 3.5


def test_status_rule_with_a_gateway_html_body(raw, control, user):
    html = "<html><head><title>403 Forbidden</title></head><body><h1>403 Forbidden</h1>nginx</body></html>"
    control.faults(user, {"kind": "status", "status": 403, "count": 1, "on": "post", "body": html,
                          "headers": {"Server": "nginx"}})
    r = raw.post("SELECT 1")
    assert r.status_code == 403
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Server"] == "nginx"
    assert r.text == html
    control.faults(user, {"kind": "status", "status": 503, "count": 1, "on": "next",
                          "body": '{"not": "trino"}', "content_type": "application/json"})
    pages = [raw.post("SELECT 1").json()]
    r = raw.get(pages[0]["nextUri"])
    assert r.status_code == 503 and r.json() == {"not": "trino"}


def test_status_rules_are_validated(control):
    for bad in ({"kind": "status", "status": 429, "headers": ["Retry-After"]},
                {"kind": "status", "status": 429, "headers": {"Retry-After": {"at": 1}}},
                {"kind": "big_page", "mb": 0}, {"kind": "redirect_host"},
                {"kind": "redirect_host", "scheme": "ftp"}):
        r = control.http.post(control.base + "/faults", json={"user": "nobody", "rules": [bad]}, timeout=10)
        assert r.status_code == 400, bad


# --------------------------------------------------------------------------- big_page
def test_big_page_pads_the_next_data_page(raw, control, user):
    control.faults(user, {"kind": "big_page", "mb": 6, "count": 1})
    r = raw.post("SELECT x FROM UNNEST(sequence(1, 5)) AS t(x)")
    pages = [r.json()]
    sizes = []
    while "nextUri" in pages[-1]:
        r = raw.get(pages[-1]["nextUri"], headers={"Accept-Encoding": "gzip"}, stream=True)
        wire = r.raw.read(decode_content=False)
        body = gzip.decompress(wire) if r.headers.get("Content-Encoding") == "gzip" else wire
        sizes.append((len(wire), len(body)))
        pages.append(json.loads(body))
    big = [p for p in pages if "labPadding" in p]
    assert len(big) == 1 and "data" in big[0]
    assert len(big[0]["labPadding"]) == 6 * 1024 * 1024
    # incompressible: the wire carries the whole size too
    assert max(w for w, _ in sizes) >= 6 * 1024 * 1024
    assert RawClient.rows(pages) == [[1], [2], [3], [4], [5]]


def test_big_page_gzip_is_small_on_the_wire(raw, control, user):
    control.faults(user, {"kind": "big_page", "mb": 20, "gzip": True, "count": 1})
    pages = [raw.post("SELECT 1").json()]
    wires = []
    while "nextUri" in pages[-1]:
        r = raw.get(pages[-1]["nextUri"], headers={"Accept-Encoding": "gzip"}, stream=True)
        wire = r.raw.read(decode_content=False)
        wires.append((r.headers.get("Content-Encoding"), len(wire)))
        body = gzip.decompress(wire) if r.headers.get("Content-Encoding") == "gzip" else wire
        pages.append(json.loads(body))
    big = [p for p in pages if "labPadding" in p]
    assert len(big) == 1 and len(big[0]["labPadding"]) == 20 * 1024 * 1024
    assert any(enc == "gzip" and n < 1024 * 1024 for enc, n in wires)


def test_the_official_client_reads_a_big_page(connect, control, user):
    control.faults(user, {"kind": "big_page", "mb": 3, "count": 1})
    cur = connect(user=user).cursor()
    cur.execute("SELECT 42")
    assert cur.fetchall() == [[42]]
    assert control.fault_state_for(user)[0]["fired"] == 1


# --------------------------------------------------------------------------- extra_fields
def test_extra_fields_at_every_level(raw, control, user):
    control.faults(user, {"kind": "extra_fields", "count": None})
    pages = raw.run("SELECT CAST(ROW(1, 'a') AS ROW(x integer, y varchar)) AS r, MAP(ARRAY['k'], ARRAY[1]) AS m")
    for page in pages:
        for path, obj in objects_outside_data(page):
            assert UNKNOWN in obj or path.endswith(f".{UNKNOWN}"), path
    final = [p for p in pages if "columns" in p][-1]
    assert UNKNOWN in final["columns"][0]["typeSignature"]
    assert UNKNOWN in final["stats"] and UNKNOWN in final["stats"]["rootStage"]
    # row values are untouched: a MAP value stays exactly the map
    assert RawClient.rows(pages) == [[[1, "a"], {"k": 1}]]
    failed = raw.run("SELECT * FROM iceberg.zoning.no_such_table")
    error = failed[-1]["error"]
    assert UNKNOWN in error and UNKNOWN in error["failureInfo"]
    assert UNKNOWN in raw.http.get(raw.base + "/v1/info", headers={"X-Trino-User": user}).json()


def test_the_official_client_ignores_extra_fields(connect, control, user):
    control.faults(user, {"kind": "extra_fields", "count": None})
    cur = connect(user=user).cursor()
    cur.execute("SELECT 1 AS one, 'x' AS two")
    assert cur.fetchall() == [[1, "x"]]


# --------------------------------------------------------------------------- redirect_host
def test_redirect_to_localhost_serves_the_query(raw, control, user, lab):
    control.faults(user, {"kind": "redirect_host", "host": "localhost", "count": 1, "on": "post"})
    port = urlsplit(lab["stand_in"]["url"]).port
    post = raw.post("SELECT 7")
    assert post.status_code == 200
    assert post.json()["nextUri"].startswith(f"http://localhost:{port}/v1/statement/queued/")
    pages = raw.run_from(post.json())
    assert RawClient.rows(pages) == [[7]]
    assert all(urlsplit(p["nextUri"]).hostname == "localhost" for p in pages if "nextUri" in p)
    q = control.query(post.json()["id"])
    assert q["redirected_to"] == f"http://localhost:{port}" and q["redirect_hits"] >= 1
    assert q["redirect_auth"] == []


def test_redirect_to_the_alias_host(raw, control, user, lab):
    assert lab["stand_in"]["alias_host"] == "127.0.0.2"
    control.faults(user, {"kind": "redirect_host", "host": lab["stand_in"]["alias_host"], "count": 1, "on": "next"})
    pages = raw.run("SELECT 8")
    assert RawClient.rows(pages) == [[8]]
    hosts = [urlsplit(p["nextUri"]).hostname for p in pages if "nextUri" in p]
    assert hosts[0] == "127.0.0.1" and hosts[-1] == "127.0.0.2"
    assert control.query(pages[0]["id"])["redirect_hits"] >= 1


def test_https_downgrade_is_served_on_plain_http(lab, control, raw_factory):
    t = lab["stand_in"]
    user, password = next(iter(t["users"].items()))
    client = raw_factory(t["https_url"], user=user, verify=t["ca_file"], auth=(user, password))
    control.faults(user, {"kind": "redirect_host", "scheme": "http", "count": 1, "on": "post"})
    post = client.post("SELECT 9")
    assert post.status_code == 200, post.text
    next_uri = post.json()["nextUri"]
    assert next_uri.startswith(t["url"] + "/v1/statement/queued/"), next_uri
    pages = client.run_from(post.json())  # a client that follows it sends the password over http
    assert RawClient.rows(pages) == [[9]]
    q = control.query(post.json()["id"])
    assert q["redirected_to"] == t["url"] and q["redirect_auth"] == ["Basic"]


def test_the_official_client_follows_a_downgrade(lab, control):
    import trino

    t = lab["stand_in"]
    user, password = next(iter(t["users"].items()))
    control.faults(user, {"kind": "redirect_host", "scheme": "http", "count": 1, "on": "post"})
    parts = urlsplit(t["https_url"])
    conn = trino.dbapi.connect(host=parts.hostname, port=parts.port, user=user, http_scheme="https",
                               auth=trino.auth.BasicAuthentication(user, password), verify=t["ca_file"])
    cur = conn.cursor()
    cur.execute("SELECT 10")
    assert cur.fetchall() == [[10]]
    assert control.query(cur.query_id)["redirect_auth"] == ["Basic"]


def test_https_alias_is_covered_by_the_certificate(lab):
    t = lab["stand_in"]
    r = requests.get(t["https_alias_url"] + "/v1/info", verify=t["ca_file"], timeout=10)
    assert r.status_code == 200 and r.json()["coordinator"] is True


# --------------------------------------------------------------------------- TLS: wrong CA
def test_other_ca_does_not_verify_the_lab(lab):
    t = lab["stand_in"]
    other = open(t["other_ca_file"]).read()
    assert "BEGIN CERTIFICATE" in other and other != open(t["ca_file"]).read()
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(t["https_url"] + "/v1/info", verify=t["other_ca_file"], timeout=10)
    assert requests.get(t["https_url"] + "/v1/info", verify=t["ca_file"], timeout=10).status_code == 200


# --------------------------------------------------------------------------- FAILED mid-optimize
def test_fail_query_mid_optimize_commits_nothing(raw, control, user):
    target = f"scratch.budget_{user}"
    r = control.engine("clone_table", {"source": "finance.budget", "target": target})
    assert r.status_code == 200, r.text
    snapshots = f'SELECT count(*) FROM iceberg.scratch."budget_{user}$snapshots"'
    before = RawClient.rows(raw.run(snapshots))[0][0]
    # running long enough to be failed on its second executing page, before it commits
    control.faults(user, {"kind": "slow", "ms": 4000, "count": 1},
                   {"kind": "fail_query", "error_name": "REMOTE_TASK_ERROR", "message": "worker lost",
                    "after_pages": 1, "count": 1})
    pages = raw.run(f"ALTER TABLE iceberg.{target} EXECUTE optimize")
    assert pages[-1]["stats"]["state"] == "FAILED"
    assert pages[-1]["error"]["errorName"] == "REMOTE_TASK_ERROR"
    assert RawClient.rows(raw.run(snapshots))[0][0] == before
    # the same optimize, unhindered, compacts the hostile partitions
    pages = raw.run(f"ALTER TABLE iceberg.{target} EXECUTE optimize")
    assert pages[-1]["stats"]["state"] == "FINISHED", pages[-1].get("error")
    files = RawClient.rows(raw.run(f'SELECT count(*) FROM iceberg.scratch."budget_{user}$files"'))[0][0]
    assert files == 12
