"""The client protocol by hand: what the official client hides (tokens, heartbeats, cancel,
stats, typeSignature spellings, headers) and the lab's injected faults."""

from __future__ import annotations

import json
import re
import time

import pytest
import requests

from .conftest import RawClient

QUERY_ID = re.compile(r"^\d{8}_\d{6}_\d{5}_[a-z0-9]{5}$")
STATS_KEYS = {
    "state", "queued", "scheduled", "nodes", "totalSplits", "queuedSplits", "runningSplits",
    "completedSplits", "cpuTimeMillis", "wallTimeMillis", "queuedTimeMillis", "elapsedTimeMillis",
    "processedRows", "processedBytes", "physicalInputBytes", "physicalWrittenBytes",
    "peakMemoryBytes", "spilledBytes",
}
SNAPSHOTS = 'SELECT snapshot_id, committed_at FROM iceberg.zoning."documents$snapshots"'


def drive_to_executing(raw: RawClient, sql: str, headers: dict | None = None):
    """POST and poll the queued URIs until the first executing URI; returns (post, pages)."""
    post = raw.post(sql, headers)
    assert post.status_code == 200, post.text
    pages = [post.json()]
    while "/v1/statement/queued/" in pages[-1].get("nextUri", ""):
        r = raw.get(pages[-1]["nextUri"])
        assert r.status_code == 200, r.text
        pages.append(r.json())
    return pages


# --------------------------------------------------------------------------- page shapes
def test_post_answers_a_queued_page(raw, lab):
    r = raw.post("SELECT 1")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("application/json")
    page = r.json()
    assert QUERY_ID.match(page["id"])
    assert page["infoUri"] == f"{lab['stand_in']['url']}/ui/query.html?{page['id']}"
    assert re.fullmatch(lab["stand_in"]["url"] + r"/v1/statement/queued/" + page["id"] + r"/[^/]+/1",
                        page["nextUri"])
    assert "columns" not in page and "data" not in page and "error" not in page
    assert page["warnings"] == []
    stats = page["stats"]
    assert STATS_KEYS <= stats.keys()
    assert stats["state"] == "QUEUED" and stats["queued"] is True and stats["scheduled"] is False
    assert "progressPercentage" not in stats and "rootStage" not in stats


def test_full_flow(raw):
    pages = raw.run("SELECT 1 AS one")
    states = [p["stats"]["state"] for p in pages]
    assert states[0] == "QUEUED" and states[-1] == "FINISHED"
    assert "/executing/" in pages[-2].get("nextUri", "") or len(pages) >= 3
    last = pages[-1]
    assert "nextUri" not in last and "data" not in last and "partialCancelUri" not in last
    assert RawClient.rows(pages) == [[1]]
    with_columns = [p for p in pages if "columns" in p]
    assert with_columns and all(p["columns"] == with_columns[0]["columns"] for p in with_columns)
    assert with_columns[0]["columns"] == [
        {"name": "one", "type": "integer", "typeSignature": {"rawType": "integer", "arguments": []}}]
    assert all("data" not in p or "columns" in p for p in pages)
    assert last["stats"]["progressPercentage"] == 100.0
    assert last["stats"]["rootStage"]["done"] is True
    assert all(p["id"] == pages[0]["id"] for p in pages)


def test_data_is_paged(raw, control, user, expected):
    control.config(user, page_size=10)
    pages = raw.run('SELECT file_path FROM iceberg.zoning."documents$files"')
    data_pages = [p for p in pages if "data" in p]
    assert all(len(p["data"]) <= 10 for p in data_pages)
    n = sum(len(p["data"]) for p in data_pages)
    assert len(data_pages) == -(-n // 10) and n > 30


@pytest.mark.beside_suite
def test_running_pages_report_progress(raw, control, user):
    control.faults(user, {"kind": "slow", "ms": 2500, "count": 1})
    pages = raw.run("SELECT 1")
    running = [p for p in pages if p["stats"]["state"] == "RUNNING" and "data" not in p]
    assert running, [p["stats"]["state"] for p in pages]
    for p in running:
        s = p["stats"]
        assert s["scheduled"] is True and s["nodes"] == 1
        assert 0 <= s["progressPercentage"] < 100 and "runningPercentage" in s
        assert s["totalSplits"] >= s["completedSplits"]
        assert "partialCancelUri" in p and "columns" not in p
        assert s["rootStage"]["subStages"]
    progress = [p["stats"]["progressPercentage"] for p in running]
    assert progress == sorted(progress)
    for p in pages[1:]:
        assert "planningTimeMillis" in p["stats"]          # 469+ fields on a 480 listener


@pytest.mark.beside_suite
def test_long_poll_answers_within_a_second(raw, control, user):
    control.faults(user, {"kind": "slow", "ms": 3000, "count": 1})
    pages = drive_to_executing(raw, "SELECT 1")
    t0 = time.monotonic()
    r = raw.get(pages[-1]["nextUri"])
    took = time.monotonic() - t0
    assert r.json()["stats"]["state"] == "RUNNING"
    assert 0.8 <= took <= 1.6


# --------------------------------------------------------------------------- tokens
@pytest.mark.beside_suite
def test_same_token_returns_the_same_page_and_old_tokens_are_gone(raw, control, user):
    control.config(user, page_size=1)
    pages = drive_to_executing(raw, 'SELECT snapshot_id FROM iceberg.audit."events$snapshots"')
    first_uri = pages[-1]["nextUri"]
    p0 = raw.get(first_uri)
    p0_again = raw.get(first_uri)
    assert p0.status_code == p0_again.status_code == 200
    assert p0.json() == p0_again.json()
    while "data" not in p0.json() and "nextUri" in p0.json():
        first_uri = p0.json()["nextUri"]
        p0 = raw.get(first_uri)
    p1 = raw.get(p0.json()["nextUri"])
    assert p1.status_code == 200 and p1.json()["data"] != p0.json()["data"]
    assert raw.get(first_uri).status_code == 410                 # older than the last one
    next_uri = p1.json()["nextUri"]
    token = int(next_uri.rsplit("/", 1)[1])
    beyond = next_uri.rsplit("/", 1)[0] + f"/{token + 5}"
    assert raw.get(beyond).status_code == 404                    # not the next token


def test_unknown_query_and_bad_slug_are_404(raw):
    pages = drive_to_executing(raw, "SELECT 1")
    uri = pages[-1]["nextUri"]
    head, qid, slug, token = uri.rsplit("/", 3)
    assert raw.get(f"{head}/20200101_000000_00001_abcde/{slug}/{token}").status_code == 404
    assert raw.get(f"{head}/{qid}/y{'0' * 40}/{token}").status_code == 404
    assert raw.get(uri).status_code == 200


def test_queued_token_rules(raw):
    post = raw.post("SELECT 1").json()
    uri1 = post["nextUri"]
    skipped = uri1.rsplit("/", 1)[0] + "/5"
    # a token two past the last one is gone (Trino: "Invalid token"); a bad slug is unknown
    assert raw.get(skipped).status_code in (404, 410)
    assert raw.get(uri1).status_code == 200
    assert raw.get(uri1).status_code == 200                      # the last token again


@pytest.mark.beside_suite
def test_head_is_a_heartbeat(raw, control, user):
    control.faults(user, {"kind": "slow", "ms": 1500, "count": 1})
    pages = drive_to_executing(raw, "SELECT 1")
    uri = pages[-1]["nextUri"]
    r = raw.http.head(uri, timeout=10)
    assert r.status_code == 200 and not r.content
    head, qid, slug, token = uri.rsplit("/", 3)
    assert raw.http.head(f"{head}/20200101_000000_00001_abcde/{slug}/{token}", timeout=10).status_code == 404
    assert RawClient.rows(raw_follow(raw, uri)) == [[1]]


def raw_follow(raw: RawClient, uri: str) -> list[dict]:
    pages = []
    while uri:
        r = raw.get(uri)
        assert r.status_code == 200, r.text
        pages.append(r.json())
        uri = pages[-1].get("nextUri")
    return pages


def test_head_statement_checks_credentials(raw, raw_factory):
    assert raw.http.head(raw.base + "/v1/statement", headers={"X-Trino-User": "floe"}, timeout=10).status_code == 200
    r = raw.http.head(raw.base + "/v1/statement", timeout=10)
    assert r.status_code == 401


# --------------------------------------------------------------------------- cancel
@pytest.mark.beside_suite
def test_delete_cancels(raw, control, user):
    control.faults(user, {"kind": "slow", "ms": 20000, "count": 1})
    pages = drive_to_executing(raw, "SELECT 1")
    running = raw.get(pages[-1]["nextUri"]).json()
    assert running["stats"]["state"] == "RUNNING"
    r = raw.http.delete(running["nextUri"], timeout=10)
    assert r.status_code == 204 and not r.content
    after = raw.get(running["nextUri"]).json()
    assert after["stats"]["state"] == "FAILED"
    assert after["error"]["errorName"] == "USER_CANCELED" and after["error"]["errorCode"] == 3
    assert "nextUri" not in after
    q = control.query(running["id"])
    assert q["delete_received"] is True and q["error_name"] == "USER_CANCELED"


@pytest.mark.beside_suite
def test_a_rule_with_sql_touches_only_the_statements_that_contain_it(raw, control, user):
    # A client's own reads around a statement (`SELECT 2`) are not what the rule is for.
    control.faults(user, {"kind": "slow", "ms": 20000, "count": 1, "sql": "SELECT 1"},
                   {"kind": "drop", "on": "post", "count": 1, "sql": "SELECT 3"})
    other = drive_to_executing(raw, "SELECT 2")
    page = raw.get(other[-1]["nextUri"]).json()
    while "nextUri" in page:
        page = raw.get(page["nextUri"]).json()
    assert page["stats"]["state"] == "FINISHED", page
    pages = drive_to_executing(raw, "SELECT 1")
    running = raw.get(pages[-1]["nextUri"]).json()
    assert running["stats"]["state"] == "RUNNING"
    assert raw.http.delete(running["nextUri"], timeout=10).status_code == 204
    with pytest.raises(requests.RequestException):  # dropped: the answer is cut short
        raw.post("SELECT 3")
    assert raw.post("SELECT 3").status_code == 200
    fired = {r["kind"]: r["fired"] for r in control.fault_state() if r["user"] == user}
    assert fired == {"slow": 1, "drop": 1}, fired
    bad = control.http.post(f"{control.base}/faults", timeout=10,
                            json={"user": user, "rules": [{"kind": "slow", "ms": 1, "sql": ""}]})
    assert bad.status_code == 400 and "'sql'" in bad.text, bad.text


@pytest.mark.beside_suite
def test_delete_while_queued(raw, control, user):
    control.faults(user, {"kind": "hold", "ms": 5000, "count": 1})
    post = raw.post("SELECT 1").json()
    queued = raw.get(post["nextUri"]).json()
    assert queued["stats"]["state"] == "QUEUED" and "/queued/" in queued["nextUri"]
    assert raw.http.delete(queued["nextUri"], timeout=10).status_code == 204
    final = raw.get(queued["nextUri"]).json()
    assert final["error"]["errorName"] == "USER_CANCELED" and "nextUri" not in final


@pytest.mark.beside_suite
def test_abandoned_query(raw, control, user):
    control.config(user, client_timeout_s=0.5)
    pages = drive_to_executing(raw, "SELECT 1")
    time.sleep(1.8)
    page = raw.get(pages[-1]["nextUri"]).json()
    assert page["stats"]["state"] == "FAILED"
    assert page["error"]["errorName"] == "ABANDONED_QUERY" and page["error"]["errorCode"] == 2
    assert "was abandoned by the client" in page["error"]["message"]


# --------------------------------------------------------------------------- queued phase
@pytest.mark.beside_suite
def test_queued_pages_while_held(raw, control, user):
    control.faults(user, {"kind": "hold", "ms": 2200, "count": 1})
    pages = drive_to_executing(raw, "SELECT 1")
    queued = [p for p in pages if p["stats"]["state"] == "QUEUED"]
    assert len(queued) >= 3                                         # POST + ≥2 long polls
    tokens = [int(p["nextUri"].rsplit("/", 1)[1]) for p in pages[:-1]]
    assert tokens == list(range(1, len(tokens) + 1))
    assert pages[-1]["nextUri"].endswith("/0") and "/executing/" in pages[-1]["nextUri"]
    assert RawClient.rows(raw_follow(raw, pages[-1]["nextUri"])) == [[1]]


def test_syntax_error_fails_on_a_queued_page(raw):
    pages = raw.run("SELECT * FROM WHERE")
    last = pages[-1]
    assert "/queued/" in pages[-2]["nextUri"]
    assert last["stats"]["state"] == "FAILED" and last["error"]["errorName"] == "SYNTAX_ERROR"
    assert last["error"]["errorLocation"] == {"lineNumber": 1, "columnNumber": 15}
    assert last["error"]["message"].startswith("line 1:15: mismatched input 'WHERE'")
    assert last["error"]["failureInfo"]["type"] == "io.trino.sql.parser.ParsingException"


def test_semantic_error_fails_on_an_executing_page(raw):
    pages = raw.run("SELECT * FROM iceberg.zoning.no_such_table")
    assert "/executing/" in pages[-2]["nextUri"]
    err = pages[-1]["error"]
    assert err["errorName"] == "TABLE_NOT_FOUND" and err["errorCode"] == 46 and err["errorType"] == "USER_ERROR"
    assert err["errorLocation"] == {"lineNumber": 1, "columnNumber": 15}
    assert err["message"] == "line 1:15: Table 'iceberg.zoning.no_such_table' does not exist"
    assert err["failureInfo"]["errorInfo"] == {"code": 46, "name": "TABLE_NOT_FOUND", "type": "USER_ERROR"}
    assert "columns" not in pages[-1] and "nextUri" not in pages[-1]


# --------------------------------------------------------------------------- HTTP errors
def test_missing_user_is_401(raw_factory):
    raw = raw_factory(user=None)
    r = raw.post("SELECT 1")
    # InsecureAuthenticator: "Basic authentication or X-Trino-User must be sent"
    assert r.status_code == 401
    assert r.text == "Basic authentication or X-Trino-User must be sent"
    assert r.headers["WWW-Authenticate"] == 'Basic realm="Trino"'


def test_password_on_the_insecure_listener_is_401(raw_factory):
    raw = raw_factory(user=None, auth=("floe", "secret"))
    r = raw.post("SELECT 1")
    assert r.status_code == 401 and r.text == "Password not allowed for insecure authentication"


def test_empty_statement_and_bad_headers_are_400(raw):
    assert raw.post("").status_code == 400
    assert raw.post("").text == "SQL statement is empty"
    r = raw.post("SELECT 1", headers={"X-Trino-Schema": "zoning", "X-Trino-Catalog": None})
    assert r.status_code == 400 and r.text == "Schema is set but catalog is not"


# --------------------------------------------------------------------------- values and types
def test_default_time_zone_is_the_coordinators(raw, lab):
    pages = raw.run(SNAPSHOTS + " LIMIT 1", headers={"X-Trino-Time-Zone": None})
    (_, committed_at), = RawClient.rows(pages)
    assert committed_at.endswith(" " + lab["stand_in"]["time_zone"]) and lab["stand_in"]["time_zone"] != "UTC"
    pages = raw.run(SNAPSHOTS + " LIMIT 1")
    (_, committed_at), = RawClient.rows(pages)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC", committed_at)


def test_parametric_datetime_capability(raw):
    with_cap = [p for p in raw.run(SNAPSHOTS + " LIMIT 1") if "columns" in p][0]["columns"][1]
    assert with_cap["type"] == "timestamp(3) with time zone"
    assert with_cap["typeSignature"] == {"rawType": "timestamp with time zone",
                                         "arguments": [{"kind": "LONG", "value": 3}]}
    without = [p for p in raw.run(SNAPSHOTS + " LIMIT 1", headers={"X-Trino-Client-Capabilities": None})
               if "columns" in p][0]["columns"][1]
    assert without["type"] == "timestamp with time zone"
    assert without["typeSignature"] == {"rawType": "timestamp with time zone", "arguments": []}


def test_snapshot_ids_are_exact(raw, expected):
    docs = [t for t in expected["tables"].values() if (t["schema"], t["table"]) == ("zoning", "documents")][0]
    pages = raw.run('SELECT snapshot_id FROM iceberg.zoning."documents$snapshots" ORDER BY committed_at DESC LIMIT 1')
    r = [p for p in pages if "data" in p][0]
    assert r["data"] == [[docs["newest_snapshot"]["snapshot_id"]]]
    # the JSON text carries the id digit for digit (no float rounding)
    assert str(docs["newest_snapshot"]["snapshot_id"]) in json.dumps(r["data"])


def test_type_signatures(raw):
    pages = raw.run('SELECT partition, file_count FROM iceberg.zoning."documents$partitions" LIMIT 1')
    cols = [p for p in pages if "columns" in p][0]["columns"]
    sig = cols[0]["typeSignature"]
    assert sig["rawType"] == "row"
    assert {a["kind"] for a in sig["arguments"]} == {"NAMED_TYPE"}
    names = [a["value"]["fieldName"]["name"] for a in sig["arguments"]]
    assert "district" in names
    assert cols[1]["typeSignature"] == {"rawType": "bigint", "arguments": []}
    pages = raw.run('SELECT summary, operation FROM iceberg.zoning."documents$snapshots" LIMIT 1')
    cols = [p for p in pages if "columns" in p][0]["columns"]
    assert cols[0]["typeSignature"]["arguments"][0]["kind"] == "TYPE"
    assert cols[1]["typeSignature"] == {"rawType": "varchar", "arguments": [{"kind": "LONG", "value": 2147483647}]}


def test_legacy_type_signatures_on_the_old_listener(lab, raw_factory):
    raw = raw_factory(lab["stand_in"]["listeners"]["v451"])
    pages = raw.run('SELECT partition FROM iceberg.zoning."documents$partitions" LIMIT 1')
    row_sig = [p for p in pages if "columns" in p][0]["columns"][0]["typeSignature"]
    pages += raw.run('SELECT summary FROM iceberg.zoning."documents$snapshots" LIMIT 1')
    map_sig = [p for p in pages if "columns" in p][-1]["columns"][0]["typeSignature"]
    assert {a["kind"] for a in row_sig["arguments"]} == {"NAMED_TYPE_SIGNATURE"}
    assert {a["kind"] for a in map_sig["arguments"]} == {"TYPE_SIGNATURE"}
    varchar = map_sig["arguments"][0]["value"]
    assert varchar["arguments"] == [{"kind": "LONG_LITERAL", "value": 2147483647}]
    assert "typeArguments" in map_sig and "literalArguments" in map_sig
    for p in pages[1:]:
        assert "planningTimeMillis" not in p["stats"]       # 469+ fields absent on 451


def test_info_per_listener(lab):
    for name, version in (("v481", "481"), ("v451", "451")):
        info = requests.get(lab["stand_in"]["listeners"][name] + "/v1/info", timeout=10).json()
        assert info["nodeVersion"] == {"version": version}
        assert ("state" in info) == (int(version) >= 477)
    assert requests.get(lab["stand_in"]["url"] + "/v1/info/state", timeout=10).json() == "ACTIVE"
    assert requests.get(lab["stand_in"]["url"] + "/v1/status", timeout=10).json()["coordinator"] is True


# --------------------------------------------------------------------------- update count
def test_select_has_no_update_type_or_count(raw):
    pages = raw.run('SELECT count(*) FROM iceberg.zoning."documents$files"')
    assert all("updateType" not in p and "updateCount" not in p for p in pages)
    cols = [p for p in pages if "columns" in p][0]["columns"]
    assert cols[0]["type"] == "bigint"


def clone(control, source: str, user: str) -> str:
    target = f"scratch.{user}"
    r = control.engine("clone_table", {"source": source, "target": target})
    assert r.status_code == 200, r.text
    return target


def test_optimize_update_count_by_version(lab, raw_factory, control, user):
    t480 = clone(control, "zoning.inspections", user + "_a")
    pages = raw_factory(user=user).run(f"ALTER TABLE iceberg.{t480} EXECUTE optimize")
    last = pages[-1]
    assert last["stats"]["state"] == "FINISHED"
    assert last["updateType"] == "ALTER TABLE EXECUTE"
    cols = [p for p in pages if "columns" in p][0]["columns"]
    assert [c["name"] for c in cols] == ["rows"] and cols[0]["type"] == "bigint"
    # as Trino 476 answers: the column, no row, no updateCount
    assert all("updateCount" not in p for p in pages)
    assert RawClient.rows(pages) == []

    t481 = clone(control, "zoning.inspections", user + "_b")
    pages = raw_factory(lab["stand_in"]["listeners"]["v481"], user=user).run(
        f"ALTER TABLE iceberg.{t481} EXECUTE optimize")
    last = pages[-1]
    assert last["updateType"] == "ALTER TABLE EXECUTE"
    assert "updateCount" not in last and all("updateCount" not in p for p in pages)
    cols = [p for p in pages if "columns" in p][0]["columns"]
    assert [c["name"] for c in cols] == ["metric_name", "metric_value"]


# --------------------------------------------------------------------------- faults
@pytest.mark.beside_suite
def test_drop_closes_the_connection_and_the_page_can_be_fetched_again(raw, control, user):
    control.faults(user, {"kind": "drop", "on": "next", "count": 1})
    post = raw.post("SELECT 1").json()
    with pytest.raises((requests.exceptions.ConnectionError, requests.exceptions.ChunkedEncodingError)):
        raw.get(post["nextUri"])
    again = raw.get(post["nextUri"])                          # replaying the same token works
    assert again.status_code == 200 and again.json()["id"] == post["id"]
    assert RawClient.rows(raw_follow(raw, again.json()["nextUri"])) == [[1]]


@pytest.mark.beside_suite
def test_malformed_is_truncated_json(raw, control, user):
    control.faults(user, {"kind": "malformed", "on": "next", "count": 1})
    post = raw.post("SELECT 1").json()
    r = raw.get(post["nextUri"])
    assert r.status_code == 200
    with pytest.raises(ValueError):
        json.loads(r.text)
    assert raw.get(post["nextUri"]).json()["id"] == post["id"]


@pytest.mark.beside_suite
def test_status_storm_until_cleared(raw, control, user):
    control.faults(user, {"kind": "status", "status": 502, "count": None, "on": "post"})
    for _ in range(3):
        assert raw.post("SELECT 1").status_code == 502
    control.http.delete(control.base + "/faults", params={"user": user}, timeout=10)
    assert raw.post("SELECT 1").status_code == 200


@pytest.mark.beside_suite
def test_status_429_carries_retry_after(raw, control, user):
    control.faults(user, {"kind": "status", "status": 429, "retry_after": "2", "count": 1})
    r = raw.post("SELECT 1")
    assert r.status_code == 429 and r.headers["Retry-After"] == "2"
    assert raw.post("SELECT 1").status_code == 200


@pytest.mark.beside_suite
def test_status_401(raw, control, user):
    control.faults(user, {"kind": "status", "status": 401, "count": 1, "on": "post"})
    r = raw.post("SELECT 1")
    assert r.status_code == 401 and "WWW-Authenticate" in r.headers


@pytest.mark.beside_suite
def test_faults_are_scoped_to_their_user(raw, raw_factory, control, user):
    control.faults(user, {"kind": "status", "status": 503, "count": None})
    assert raw.post("SELECT 1").status_code == 503
    other = raw_factory(user=user + "_other")
    assert RawClient.rows(other.run("SELECT 1")) == [[1]]


@pytest.mark.beside_suite
def test_next_faults_find_the_user_of_the_query(raw, control, user):
    control.faults(user, {"kind": "status", "status": 504, "count": 1, "on": "next"})
    post = raw.post("SELECT 1")
    assert post.status_code == 200
    # nextUri requests carry no user header here: the server knows whose query it is
    r = requests.get(post.json()["nextUri"], timeout=10)
    assert r.status_code == 504
    assert requests.get(post.json()["nextUri"], timeout=10).status_code == 200


@pytest.mark.beside_suite
def test_latency(raw, control, user):
    control.faults(user, {"kind": "latency", "ms": 400, "count": 2, "on": "post"})
    t0 = time.monotonic()
    assert raw.post("SELECT 1").status_code == 200
    assert time.monotonic() - t0 >= 0.4


@pytest.mark.beside_suite
def test_fail_query_after_pages(raw, control, user):
    control.config(user, page_size=5)
    control.faults(user, {"kind": "fail_query", "error_name": "REMOTE_TASK_ERROR",
                          "message": "Remote task failed", "after_pages": 2, "count": 1})
    pages = raw.run('SELECT file_path FROM iceberg.zoning."documents$files"')
    data_pages = [p for p in pages if "data" in p]
    assert len(data_pages) == 2
    last = pages[-1]
    assert last["stats"]["state"] == "FAILED"
    assert last["error"]["errorName"] == "REMOTE_TASK_ERROR" and last["error"]["errorType"] == "INTERNAL_ERROR"
    assert last["error"]["message"] == "Remote task failed"


def test_bad_fault_rules_are_rejected(control):
    r = control.http.post(control.base + "/faults", json={"user": None, "rules": [{"kind": "nope"}]}, timeout=10)
    assert r.status_code == 400


def test_lab_queries_lists_what_ran(raw, control, user):
    pages = raw.run("SELECT 5")
    (q,) = control.queries(user)
    assert q["id"] == pages[0]["id"] and q["sql"] == "SELECT 5"
    assert q["state"] == "FINISHED" and q["error_name"] is None and q["delete_received"] is False
