"""The fault proxy in front of the real Trino (`trino.proxy_url`, rules on
`trino.proxy_control_url`): unchanged by default, then every rule kind it offers, with the
official `trino` client (what a well-behaved client does with the fault) and by hand with
http.client (what is on the wire). The real Trino decides every answer the proxy relays."""

from __future__ import annotations

import base64
import email.utils
import gzip
import http.client
import json
import socket
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
import trino

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

UNKNOWN = "labUnknownField"


# --------------------------------------------------------------------------- plumbing
def call(method: str, url: str, body: bytes | None = None, headers: dict | None = None, timeout: float = 60):
    """One HTTP exchange on a fresh connection: (status, lower-cased headers, raw body)."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request(method, u.path + (f"?{u.query}" if u.query else ""), body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        conn.close()


def decoded(headers: dict, data: bytes) -> bytes:
    return gzip.decompress(data) if headers.get("content-encoding") == "gzip" else data


class ProxyControl:
    def __init__(self, base: str):
        self.base = base
        self.users: set = set()

    def request(self, method: str, path: str, payload=None):
        body = json.dumps(payload).encode() if payload is not None else None
        status, _, data = call(method, self.base + path, body, {"Content-Type": "application/json"}, timeout=10)
        return status, json.loads(data)

    def faults(self, user, *rules):
        self.users.add(user)
        status, out = self.request("POST", "/faults", {"user": user, "rules": list(rules)})
        assert status == 200, out
        return out

    def rules_of(self, user):
        return [r for r in self.request("GET", "/faults")[1] if r["user"] == user]

    def requests(self, user=None, query_id=None):
        rows = self.request("GET", "/requests")[1]
        return [r for r in rows if (user is None or r["user"] == user)
                and (query_id is None or r["query_id"] == query_id)]

    def cleanup(self):
        for u in self.users:
            self.request("DELETE", f"/faults?user={u}")


class Raw:
    """The client protocol by hand, through the proxy, as one user."""

    def __init__(self, base: str, user: str | None):
        self.base = base
        self.user = user

    def headers(self, **extra) -> dict:
        h = {"X-Trino-Catalog": "iceberg", "X-Trino-Source": "floe-lab-tests"}
        if self.user is not None:
            h["X-Trino-User"] = self.user
        h.update(extra)
        return h

    def post(self, sql: str, **headers):
        return call("POST", self.base + "/v1/statement", sql.encode(), self.headers(**headers))

    def get(self, uri: str, **headers):
        return call("GET", uri, None, self.headers(**headers))

    def page(self, uri: str) -> dict:
        status, h, data = self.get(uri)
        assert status == 200, (status, data[:300])
        return json.loads(decoded(h, data))

    def run(self, sql: str) -> list[dict]:
        status, h, data = self.post(sql)
        assert status == 200, (status, data[:300])
        pages = [json.loads(data)]
        while "nextUri" in pages[-1]:
            pages.append(self.page(pages[-1]["nextUri"]))
        return pages

    @staticmethod
    def rows(pages: list[dict]) -> list:
        return [row for p in pages for row in p.get("data", [])]


@pytest.fixture(scope="session")
def tp(lab) -> dict:
    t = lab["trino"]
    for key in ("proxy_url", "proxy_control_url"):
        if not t.get(key):
            pytest.fail(f"lab.json has no trino.{key}: the lab runs no fault proxy in front of Trino")
    return t


@pytest.fixture
def pc(tp):
    c = ProxyControl(tp["proxy_control_url"])
    yield c
    c.cleanup()


@pytest.fixture
def raw(tp, user):
    return Raw(tp["proxy_url"], user)


def connect(url: str, user: str, **kw):
    parts = urlsplit(url)
    kw.setdefault("catalog", "iceberg")
    return trino.dbapi.connect(host=parts.hostname, port=parts.port, user=user, http_scheme=parts.scheme, **kw)


def fetch(url: str, user: str, sql: str, **kw):
    cur = connect(url, user, **kw).cursor()
    cur.execute(sql)
    return cur.fetchall(), cur


def runtime_queries(tp, where: str) -> list:
    """Rows of the real Trino's system.runtime.queries, asked directly (not through the proxy)."""
    rows, _ = fetch(tp["url"], "floe-lab-observer",
                    f'SELECT query_id, state, "user", query FROM system.runtime.queries WHERE {where}')
    return rows


FILES_SQL = ('SELECT file_path, record_count, file_size_in_bytes, partition.district '
             'FROM iceberg.zoning."documents$files" ORDER BY file_path')
SMALL_SQL = "SELECT x, CAST(x AS varchar) AS s FROM UNNEST(sequence(1, 5)) AS t(x)"
SMALL_ROWS = [[i, str(i)] for i in range(1, 6)]


# --------------------------------------------------------------------------- no rule
def test_without_rules_the_answer_is_the_real_trinos(tp, pc, user):
    direct, _ = fetch(tp["url"], user, FILES_SQL)
    proxied, cur = fetch(tp["proxy_url"], user, FILES_SQL)
    assert len(direct) > 1000
    assert proxied == direct
    count, _ = fetch(tp["proxy_url"], user, 'SELECT count(*) FROM iceberg.zoning."documents$files"')
    assert count == [[len(direct)]]
    seen = pc.requests(user=user, query_id=cur.query_id)
    assert seen[0]["method"] == "POST" and len(seen) >= 3
    assert all(r["forwarded"] and r["status"] == 200 and r["rule"] is None for r in seen)
    # every nextUri came back pointing at the proxy: the client never left it
    assert all(r["host"] == urlsplit(tp["proxy_url"]).netloc for r in seen)


def test_statement_uris_point_at_the_proxy_and_gzip_is_kept(tp, raw):
    pages = raw.run(SMALL_SQL)
    assert Raw.rows(pages) == SMALL_ROWS
    for page in pages:
        for field in ("nextUri", "infoUri", "partialCancelUri"):
            if field in page:
                assert page[field].startswith(tp["proxy_url"] + "/"), page[field]
    executing = [p["nextUri"] for p in pages if "/executing/" in p.get("nextUri", "")]
    assert executing
    # the infoUri reaches Trino's web UI through the proxy, and its redirections stay there
    status, h, _ = call("GET", pages[0]["infoUri"])
    assert status in (200, 303), status
    status, h, _ = call("GET", tp["proxy_url"] + "/")
    assert status == 303 and h["location"] == tp["proxy_url"] + "/ui/"
    # Trino compresses a big enough answer when asked to; the proxy keeps that encoding
    status, h, data = raw.post(FILES_SQL, **{"Accept-Encoding": "gzip"})
    first = json.loads(data if h.get("content-encoding") != "gzip" else gzip.decompress(data))
    uri, encodings = first["nextUri"], set()
    while uri:
        status, h, data = raw.get(uri, **{"Accept-Encoding": "gzip"})
        assert status == 200
        encodings.add(h.get("content-encoding"))
        uri = json.loads(decoded(h, data)).get("nextUri")
    assert "gzip" in encodings


def test_headers_reach_trino_and_its_answers_come_back(tp, user):
    rows, _ = fetch(tp["proxy_url"], user, "SELECT current_timezone(), current_user",
                    timezone="Asia/Tokyo", session_properties={"query_max_run_time": "17m"})
    assert rows == [["Asia/Tokyo", user]]
    rows, _ = fetch(tp["proxy_url"], user, "SHOW SESSION LIKE 'query_max_run_time'",
                    session_properties={"query_max_run_time": "17m"})
    assert rows[0][0] == "query_max_run_time" and rows[0][1] == "17m"
    # Trino's own refusal passes through: a password on its insecure authentication
    status, h, data = call("POST", tp["proxy_url"] + "/v1/statement", b"SELECT 1",
                           {"Authorization": "Basic dTpzZWNyZXQ="})  # u:secret
    assert status == 401 and data == b"Password not allowed for insecure authentication"
    assert h["www-authenticate"] == 'Basic realm="Trino"'


def test_queries_in_parallel_each_get_their_own_answer(tp, user):
    def one(i):
        return fetch(tp["proxy_url"], f"{user}_{i}", f"SELECT x + {i} FROM UNNEST(sequence(1, 50)) AS t(x)")[0]

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(16)))
    assert answers == [[[x + i] for x in range(1, 51)] for i in range(16)]


def test_a_delete_through_the_proxy_cancels_the_query_in_trino(tp, user, raw):
    huge = ("SELECT count(*) FROM UNNEST(sequence(1, 10000)) a(x) CROSS JOIN UNNEST(sequence(1, 10000)) b(y) "
            "CROSS JOIN UNNEST(sequence(1, 100)) c(z)")
    status, _, data = raw.post(huge)
    first = json.loads(data)
    second = raw.page(first["nextUri"])  # the first poll dispatches it
    status, h, body = call("DELETE", second["nextUri"], headers=raw.headers())
    assert status == 204 and body == b"" and "content-length" not in h
    for _ in range(50):
        rows, _ = fetch(tp["url"], "floe-lab-observer",
                        f"SELECT state, error_code FROM system.runtime.queries WHERE query_id = '{first['id']}'")
        if rows and rows[0][0] == "FAILED":
            break
        time.sleep(0.2)
    assert rows == [["FAILED", "USER_CANCELED"]]


# --------------------------------------------------------------------------- status
def test_a_503_storm_then_success(tp, pc, user):
    pc.faults(user, {"kind": "status", "status": 503, "count": 2, "on": "post"})
    rows, cur = fetch(tp["proxy_url"], user, SMALL_SQL)
    assert rows == SMALL_ROWS
    posts = [r for r in pc.requests(user=user) if r["method"] == "POST"]
    assert [(r["status"], r["forwarded"]) for r in posts] == [(503, False), (503, False), (200, True)]
    assert posts[-1]["query_id"] == cur.query_id
    assert pc.rules_of(user)[0]["fired"] == 2


def test_an_endless_503_storm_fails_the_official_client(tp, pc, user):
    pc.faults(user, {"kind": "status", "status": 503, "count": None, "on": "post"})
    with pytest.raises(trino.exceptions.Http503Error):
        fetch(tp["proxy_url"], user, "SELECT 1")
    assert all(not r["forwarded"] for r in pc.requests(user=user))


def test_429_with_retry_after_is_waited_for(tp, pc, user, raw):
    pc.faults(user, {"kind": "status", "status": 429, "count": 1, "on": "post", "headers": {"Retry-After": "1"}})
    rows, _ = fetch(tp["proxy_url"], user, SMALL_SQL)
    assert rows == SMALL_ROWS
    posts = [r for r in pc.requests(user=user) if r["method"] == "POST"]
    assert [r["status"] for r in posts] == [429, 200]
    assert posts[1]["time"] - posts[0]["time"] >= 0.95  # the client honoured Retry-After
    # the header as written, and an HTTP date computed when the rule fires
    pc.faults(user, {"kind": "status", "status": 429, "count": 1, "on": "post",
                     "headers": {"Retry-After": {"http_date_in_s": 30}}, "body": "slow down"})
    before = time.time()
    status, h, data = raw.post("SELECT 1")
    assert status == 429 and data == b"slow down"
    when = email.utils.parsedate_to_datetime(h["retry-after"]).timestamp()
    assert before + 28 <= when <= before + 32


def test_status_on_next_then_the_same_uri_goes_on(tp, pc, user, raw):
    status, _, data = raw.post(SMALL_SQL)
    first = json.loads(data)
    pc.faults(user, {"kind": "status", "status": 502, "count": 1, "on": "next",
                     "body": "<html><body>bad gateway</body></html>"})
    status, h, body = raw.get(first["nextUri"])
    assert status == 502 and h["content-type"].startswith("text/html") and b"bad gateway" in body
    pages = [first, raw.page(first["nextUri"])]
    while "nextUri" in pages[-1]:
        pages.append(raw.page(pages[-1]["nextUri"]))
    assert Raw.rows(pages) == SMALL_ROWS


def test_a_504_after_forwarding_the_first_poll_ran_the_statement_once(tp, pc, user):
    """A gateway that timed out after Trino got the request: the statement runs, and the
    client's retry of the same nextUri goes on with it."""
    pc.faults(user, {"kind": "status", "status": 504, "count": 1, "on": "next", "forward": True})
    marker = f"m_{uuid.uuid4().hex[:8]}"
    rows, cur = fetch(tp["proxy_url"], user, f"SELECT '{marker}'")
    assert rows == [[marker]]
    hit = [r for r in pc.requests(user=user) if r["rule"] == "status"]
    assert len(hit) == 1 and hit[0]["status"] == 504 and hit[0]["forwarded"] is True
    assert hit[0]["query_id"] == cur.query_id
    ran = runtime_queries(tp, f"\"user\" = '{user}'")
    assert [(q[0], q[1]) for q in ran] == [(cur.query_id, "FINISHED")]


def test_a_504_after_forwarding_a_post_registered_the_statement(tp, pc, user):
    """The statement reached Trino, whose answer the client never saw; Trino runs a
    statement only once its first nextUri is fetched, so the retried POST is the one that
    runs, and the lost one still runs when someone fetches its nextUri."""
    pc.faults(user, {"kind": "status", "status": 504, "count": 1, "on": "post", "forward": True})
    marker = f"m_{uuid.uuid4().hex[:8]}"
    rows, cur = fetch(tp["proxy_url"], user, f"SELECT '{marker}'")
    assert rows == [[marker]]
    posts = [r for r in pc.requests(user=user) if r["method"] == "POST"]
    assert [(r["status"], r["forwarded"]) for r in posts] == [(504, True), (200, True)]
    lost = posts[0]
    assert lost["query_id"] and lost["query_id"] != cur.query_id
    ran = {q[0]: q[1] for q in runtime_queries(tp, f"\"user\" = '{user}'")}
    assert ran == {cur.query_id: "FINISHED"}
    # the discarded answer's nextUri resumes the lost statement: it was real
    pages = [Raw(tp["proxy_url"], user).page(lost["next_uri"])]
    while "nextUri" in pages[-1]:
        pages.append(Raw(tp["proxy_url"], user).page(pages[-1]["nextUri"]))
    assert Raw.rows(pages) == [[marker]]
    ran = {q[0]: q[1] for q in runtime_queries(tp, f"\"user\" = '{user}'")}
    assert ran == {cur.query_id: "FINISHED", lost["query_id"]: "FINISHED"}


def test_latency_is_added_before_forwarding(pc, user, raw):
    pc.faults(user, {"kind": "latency", "ms": 1200, "count": 1, "on": "post"})
    t0 = time.monotonic()
    status, _, _ = raw.post("SELECT 1")
    assert status == 200 and time.monotonic() - t0 >= 1.2
    post = [r for r in pc.requests(user=user) if r["method"] == "POST"][0]
    assert post["latency_ms"] == 1200 and post["forwarded"] is True


# --------------------------------------------------------------------------- drop / malformed
def test_drop_mid_page_then_the_replayed_next_uri_returns_the_page(tp, pc, user, raw):
    direct, _ = fetch(tp["url"], user, SMALL_SQL)
    status, _, data = raw.post(SMALL_SQL)
    pages = [json.loads(data)]
    drops = 0
    while "nextUri" in pages[-1]:
        uri = pages[-1]["nextUri"]
        # every page is cut in the middle once, then fetched again
        pc.faults(user, {"kind": "drop", "mid_body": True, "on": "next", "count": 1})
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            raw.get(uri)
        drops += 1
        pages.append(raw.page(uri))
    assert Raw.rows(pages) == direct == SMALL_ROWS
    dropped = [r for r in pc.requests(user=user) if r["rule"] == "drop"]
    assert len(dropped) == drops >= 3
    # forwarded, answered 200 with half the page, then cut
    assert all(r["forwarded"] and r["status"] == 200 and r["dropped"] for r in dropped)


def test_the_official_client_retries_a_dropped_connection(tp, pc, user):
    pc.faults(user, {"kind": "drop", "on": "next", "count": 1},
              {"kind": "drop", "on": "next", "count": 1, "forward": True})
    rows, _ = fetch(tp["proxy_url"], user, SMALL_SQL)
    assert rows == SMALL_ROWS
    dropped = [r for r in pc.requests(user=user) if r["rule"] == "drop"]
    assert [(r["forwarded"], r["status"], r["dropped"]) for r in dropped] == [(False, None, True), (True, None, True)]
    # both hit the first poll: the third attempt of the same nextUri was answered
    assert dropped[0]["path"] == dropped[1]["path"]


def test_malformed_then_the_replay_is_whole(tp, pc, user, raw):
    status, _, data = raw.post(SMALL_SQL)
    pages = [json.loads(data)]
    spoiled = 0
    while "nextUri" in pages[-1]:
        uri = pages[-1]["nextUri"]
        pc.faults(user, {"kind": "malformed", "on": "next", "count": 1})
        status, h, body = raw.get(uri)
        assert status == 200 and h["content-type"] == "application/json"
        with pytest.raises(ValueError):
            json.loads(decoded(h, body))
        spoiled += 1
        pages.append(raw.page(uri))
    assert Raw.rows(pages) == SMALL_ROWS and spoiled >= 3
    # a malformed POST answer: the official client gives up with a decoding error
    pc.faults(user, {"kind": "malformed", "on": "post", "count": 1})
    with pytest.raises(ValueError):  # a JSONDecodeError, not retried
        fetch(tp["proxy_url"], user, "SELECT 1")
    assert [r["rule"] for r in pc.requests(user=user) if r["method"] == "POST"] == [None, "malformed"]


# --------------------------------------------------------------------------- big_page
def test_big_page_pads_the_next_data_page(pc, user, raw):
    pc.faults(user, {"kind": "big_page", "mb": 6, "count": 1})
    status, _, data = raw.post(SMALL_SQL)
    pages, wires = [json.loads(data)], []
    while "nextUri" in pages[-1]:
        status, h, body = raw.get(pages[-1]["nextUri"], **{"Accept-Encoding": "gzip"})
        assert status == 200
        wires.append(len(body))
        pages.append(json.loads(decoded(h, body)))
    big = [p for p in pages if "labPadding" in p]
    assert len(big) == 1 and "data" in big[0]
    assert len(big[0]["labPadding"]) == 6 * 1024 * 1024
    assert max(wires) >= 6 * 1024 * 1024  # random text, sent unencoded
    assert Raw.rows(pages) == SMALL_ROWS


def test_big_page_gzip_is_small_on_the_wire(pc, user, raw):
    pc.faults(user, {"kind": "big_page", "mb": 20, "gzip": True, "count": 1})
    status, _, data = raw.post(SMALL_SQL)
    pages, wires = [json.loads(data)], []
    while "nextUri" in pages[-1]:
        status, h, body = raw.get(pages[-1]["nextUri"], **{"Accept-Encoding": "gzip"})
        wires.append((h.get("content-encoding"), len(body)))
        pages.append(json.loads(decoded(h, body)))
    big = [p for p in pages if "labPadding" in p]
    assert len(big) == 1 and len(big[0]["labPadding"]) == 20 * 1024 * 1024
    assert any(enc == "gzip" and n < 1024 * 1024 for enc, n in wires)
    assert Raw.rows(pages) == SMALL_ROWS


def test_the_official_client_reads_a_big_page(tp, pc, user):
    pc.faults(user, {"kind": "big_page", "mb": 3, "count": 1})
    rows, _ = fetch(tp["proxy_url"], user, SMALL_SQL)
    assert rows == SMALL_ROWS
    assert pc.rules_of(user)[0]["fired"] == 1
    assert [r["page_rules"] for r in pc.requests(user=user) if r["page_rules"]] == [["big_page"]]


# --------------------------------------------------------------------------- extra_fields
def objects_outside_data(node, path="$"):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            if k != "data":
                yield from objects_outside_data(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from objects_outside_data(v, f"{path}[{i}]")


def test_extra_fields_everywhere_but_in_rows(pc, user, raw):
    from ..trino.server import UNKNOWN_FIELD

    assert UNKNOWN == UNKNOWN_FIELD  # the stand-in's spelling
    pc.faults(user, {"kind": "extra_fields", "count": None})
    pages = raw.run("SELECT CAST(ROW(1, 'a') AS ROW(x integer, y varchar)) AS r, MAP(ARRAY['k'], ARRAY[1]) AS m")
    for page in pages:
        for path, obj in objects_outside_data(page):
            assert UNKNOWN in obj or path.endswith(f".{UNKNOWN}"), path
    final = [p for p in pages if "columns" in p][-1]
    assert UNKNOWN in final["columns"][0]["typeSignature"] and UNKNOWN in final["stats"]
    assert Raw.rows(pages) == [[[1, "a"], {"k": 1}]]
    failed = raw.run("SELECT * FROM iceberg.zoning.no_such_table")
    assert UNKNOWN in failed[-1]["error"] and UNKNOWN in failed[-1]["error"]["failureInfo"]
    status, _, info = call("GET", raw.base + "/v1/info", headers={"X-Trino-User": user})
    assert status == 200 and UNKNOWN in json.loads(info)


def test_the_official_client_ignores_extra_fields(tp, pc, user):
    pc.faults(user, {"kind": "extra_fields", "count": None})
    rows, _ = fetch(tp["proxy_url"], user, "SELECT 1 AS one, 'x' AS two")
    assert rows == [[1, "x"]]
    assert pc.rules_of(user)[0]["fired"] >= 3


# --------------------------------------------------------------------------- redirect_host
def test_the_official_client_follows_a_redirect_to_the_alias_host(tp, pc, user):
    port = urlsplit(tp["proxy_url"]).port
    pc.faults(user, {"kind": "redirect_host", "host": "127.0.0.2", "count": 1, "on": "post"})
    rows, cur = fetch(tp["proxy_url"], user, SMALL_SQL)
    assert rows == SMALL_ROWS
    seen = pc.requests(user=user, query_id=cur.query_id)
    assert seen[0]["method"] == "POST" and seen[0]["page_rules"] == ["redirect_host"]
    assert seen[0]["listener"] == f"127.0.0.1:{port}"
    # every later request of the query arrived on the alias address, and reached Trino
    assert len(seen) >= 3
    assert all(r["listener"] == f"127.0.0.2:{port}" and r["host"] == f"127.0.0.2:{port}"
               and r["forwarded"] and r["status"] == 200 for r in seen[1:])


def test_a_redirect_to_localhost_on_next_serves_the_query(tp, pc, user, raw):
    port = urlsplit(tp["proxy_url"]).port
    status, _, data = raw.post(SMALL_SQL)
    pages = [json.loads(data)]
    pc.faults(user, {"kind": "redirect_host", "host": "localhost", "count": 1, "on": "next"})
    while "nextUri" in pages[-1]:
        pages.append(raw.page(pages[-1]["nextUri"]))
    assert Raw.rows(pages) == SMALL_ROWS
    hosts = [urlsplit(p["nextUri"]).netloc for p in pages if "nextUri" in p]
    assert hosts[0] == f"127.0.0.1:{port}" and hosts[-1] == f"localhost:{port}"
    assert any(r["host"] == f"localhost:{port}" for r in pc.requests(user=user))


# --------------------------------------------------------------------------- user scoping
def test_a_rule_for_one_user_leaves_another_alone(tp, pc, user):
    other = f"{user}_b"
    pc.faults(user, {"kind": "status", "status": 503, "count": None})
    rows, _ = fetch(tp["proxy_url"], other, SMALL_SQL)
    assert rows == SMALL_ROWS
    with pytest.raises(trino.exceptions.Http503Error):
        fetch(tp["proxy_url"], user, "SELECT 1")
    assert all(r["rule"] is None and r["forwarded"] for r in pc.requests(user=other))
    assert all(r["rule"] == "status" and not r["forwarded"] for r in pc.requests(user=user))


def test_a_rule_on_the_query_list_leaves_statements_alone(tp, pc, user, raw):
    pc.faults(user, {"kind": "status", "status": 404, "on": "queries", "count": None})
    status, _, _ = raw.get(tp["proxy_url"] + "/v1/query?state=FINISHED")
    assert status == 404
    assert Raw.rows(raw.run(SMALL_SQL)) == SMALL_ROWS
    status, _, _ = raw.get(tp["proxy_url"] + "/v1/info")
    assert status == 200
    pc.cleanup()
    status, _, data = raw.get(tp["proxy_url"] + "/v1/query?state=FINISHED")
    assert status == 200 and all(q["state"] == "FINISHED" for q in json.loads(data))
    assert any(SMALL_SQL in q["query"] for q in json.loads(data)), "the real coordinator's list"


def test_next_uris_are_scoped_by_the_user_who_posted(tp, pc, user):
    # the POST names the user; its nextUri requests carry no user header at all
    status, _, data = Raw(tp["proxy_url"], user).post(SMALL_SQL)
    first = json.loads(data)
    pc.faults(user, {"kind": "status", "status": 503, "count": 1, "on": "next"})
    anonymous = Raw(tp["proxy_url"], None)
    status, _, _ = anonymous.get(first["nextUri"])
    assert status == 503
    pages = [first, anonymous.page(first["nextUri"])]
    while "nextUri" in pages[-1]:
        pages.append(anonymous.page(pages[-1]["nextUri"]))
    assert Raw.rows(pages) == SMALL_ROWS
    assert {r["user"] for r in pc.requests(query_id=first["id"])} == {user}
    # a Basic user name scopes a POST too (Trino's insecure authentication takes it)
    pc.faults(user, {"kind": "status", "status": 418, "count": 1, "on": "post"})
    basic = base64.b64encode(f"{user}:".encode()).decode()
    status, _, _ = call("POST", tp["proxy_url"] + "/v1/statement", b"SELECT 1", {"Authorization": f"Basic {basic}"})
    assert status == 418


# --------------------------------------------------------------------------- control endpoint
@pytest.mark.parametrize("bad", [
    {"kind": "nope"},
    {"kind": "status", "status": 999},
    {"kind": "status", "status": 429, "headers": {"Retry-After": {"at": 1}}},
    {"kind": "status", "status": 504, "forward": "yes"},
    {"kind": "latency", "ms": 100, "forward": True},
    {"kind": "status", "status": 503, "mid_body": True},
    {"kind": "big_page", "mb": 0},
    {"kind": "redirect_host"},
    {"kind": "drop", "on": "somewhere"},
])
def test_a_bad_rule_is_refused(pc, user, bad):
    status, out = pc.request("POST", "/faults", {"user": user, "rules": [{"kind": "latency", "ms": 1}, bad]})
    assert status == 400 and out["error"]
    assert pc.rules_of(user) == []  # nothing of a refused batch is kept


@pytest.mark.parametrize("kind", ["fail_query", "hold", "slow", "server_time"])
def test_server_only_kinds_point_at_the_stand_in(pc, user, kind):
    status, out = pc.request("POST", "/faults", {"user": user, "rules": [{"kind": kind, "ms": 100}]})
    assert status == 400 and "stand-in" in out["error"]


def test_control_endpoint_is_the_proxys_own(tp, pc, user):
    status, out = pc.request("GET", "/health")
    assert status == 200 and out == {"ok": True, "upstream": tp["url"]}
    status, out = pc.request("GET", "/nothing-here")
    assert status == 404 and "error" in out
    assert not [r for r in pc.request("GET", "/requests")[1] if r["path"].startswith("/_lab")]
    status, out = pc.request("POST", "/faults", {"user": user, "rules": [{"kind": "latency", "ms": 1}]})
    assert status == 200 and pc.rules_of(user)[0]["remaining"] is None
    status, out = pc.request("DELETE", f"/faults?user={user}")
    assert status == 200 and out["removed"] == 1 and pc.rules_of(user) == []
    status, _ = pc.request("POST", "/faults", {"user": user, "rules": "latency"})
    assert status == 400


def test_a_client_that_disconnects_does_not_hurt_the_proxy(tp, pc, user):
    u = urlsplit(tp["proxy_url"])
    # half a request body, then gone
    with socket.create_connection((u.hostname, u.port), timeout=10) as s:
        s.sendall(b"POST /v1/statement HTTP/1.1\r\nHost: x\r\nX-Trino-User: " + user.encode()
                  + b"\r\nContent-Length: 100\r\n\r\nSELECT")
    # gone in the middle of a big answer
    pc.faults(user, {"kind": "big_page", "mb": 20, "count": None})
    status, _, data = Raw(tp["proxy_url"], user).post(SMALL_SQL)
    uri = json.loads(data)["nextUri"]
    for _ in range(5):
        with socket.create_connection((u.hostname, u.port), timeout=30) as s:
            s.sendall(f"GET {urlsplit(uri).path} HTTP/1.1\r\nHost: {u.netloc}\r\n\r\n".encode())
            head = s.recv(65536)
        assert head.startswith(b"HTTP/1.1 200")
        uri = json.loads(Raw(tp["proxy_url"], user).get(uri)[2]).get("nextUri") or uri
    status, out = pc.request("GET", "/health")
    assert status == 200 and out["ok"] is True
    rows, _ = fetch(tp["proxy_url"], f"{user}_after", SMALL_SQL)
    assert rows == SMALL_ROWS
