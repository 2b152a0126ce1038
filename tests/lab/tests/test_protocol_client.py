"""The official `trino` Python client against the lab's Trino-protocol server.

If the reference client accepts every answer (results, types, paging, errors, retries,
cancel, authentication), a Trino client written against the lab would also work against
a real coordinator.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import threading
import time
from decimal import Decimal
from urllib.parse import urlsplit

import pytest
import requests
import trino
from trino.auth import BasicAuthentication, JWTAuthentication
from trino.exceptions import HttpError, TrinoQueryError, TrinoUserError

from ..common.errors import STANDARD_ERRORS, position_of


def facts(expected: dict, name: str) -> dict:
    schema, table = name.split(".", 1)
    for key, t in expected["tables"].items():
        if (t.get("schema"), t.get("table")) == (schema, table) or key == name:
            return t
    raise AssertionError(f"{name} not in expected.json ({sorted(expected['tables'])})")


def fetch(conn, sql: str):
    cur = conn.cursor()
    cur.execute(sql)
    rows = cur.fetchall()
    return cur, rows


# --------------------------------------------------------------------------- results and types
def test_scalar_results_and_types(connect):
    cur, rows = fetch(connect(), "SELECT 1 AS a, 'x' AS b, CAST(2.5 AS double) AS c, true AS d, "
                                 "CAST(NULL AS bigint) AS e, CAST('12.30' AS decimal(10,2)) AS f, "
                                 "DATE '2026-01-02' AS g")
    assert rows == [[1, "x", 2.5, True, None, Decimal("12.30"), dt.date(2026, 1, 2)]]
    assert [d.name for d in cur.description] == ["a", "b", "c", "d", "e", "f", "g"]
    assert [d.type_code for d in cur.description] == [
        "integer", "varchar(1)", "double", "boolean", "bigint", "decimal(10, 2)", "date"]  # as Trino 476 prints it


def test_unaliased_columns_are_named_like_trino(connect):
    cur, rows = fetch(connect(), "SELECT 1 + 1, 'a'")
    assert rows == [[2, "a"]]
    assert [d.name for d in cur.description] == ["_col0", "_col1"]


def test_metadata_table_values_and_types(connect, expected):
    docs = facts(expected, "zoning.documents")
    newest = docs["newest_snapshot"]
    cur, rows = fetch(
        connect(timezone="UTC"),
        'SELECT snapshot_id, committed_at, operation, summary '
        'FROM iceberg.zoning."documents$snapshots" ORDER BY committed_at DESC LIMIT 1')
    assert [d.type_code for d in cur.description] == [
        "bigint", "timestamp(3) with time zone", "varchar", "map(varchar, varchar)"]
    snapshot_id, committed_at, operation, summary = rows[0]
    assert snapshot_id == newest["snapshot_id"]          # bigint beyond 2^53 survives
    assert operation == newest["operation"]
    assert committed_at == dt.datetime.fromtimestamp(newest["committed_at_ms"] / 1000, dt.timezone.utc)
    assert isinstance(summary, dict) and int(summary["total-data-files"]) == docs["data_files"]


def test_row_columns_map_to_named_tuples(connect, expected):
    docs = facts(expected, "zoning.documents")
    cur, rows = fetch(connect(), 'SELECT partition, file_count FROM iceberg.zoning."documents$partitions"')
    assert len(rows) == docs["partitions"]
    assert cur.description[0].type_code.startswith("row(")
    part, count = rows[0]
    assert hasattr(part, "district")        # field names come from typeSignature
    assert isinstance(count, int)


# --------------------------------------------------------------------------- paging
def test_many_pages(connect, control, user, expected):
    docs = facts(expected, "zoning.documents")
    control.config(user, page_size=37)
    conn = connect(user)
    cur = conn.cursor()
    cur.execute('SELECT file_path, file_size_in_bytes FROM iceberg.zoning."documents$files"')
    rows = cur.fetchall()
    assert len(rows) == docs["data_files"]
    assert len({r[0] for r in rows}) == len(rows)
    assert sum(r[1] for r in rows) == docs["total_bytes"]
    (q,) = control.queries(user)
    assert q["state"] == "FINISHED"
    assert q["pages"] >= math.ceil(len(rows) / 37) + 1   # data pages plus the final one


@pytest.mark.beside_suite
def test_queued_polling(connect, control, user):
    control.faults(user, {"kind": "hold", "ms": 2500, "count": 1})
    conn = connect(user)
    cur = conn.cursor()
    t0 = time.monotonic()
    cur.execute("SELECT 42")
    assert cur.fetchall() == [[42]]
    assert time.monotonic() - t0 >= 2.4      # the client kept polling the queued URIs
    assert cur.stats["state"] == "FINISHED"
    (q,) = control.queries(user)
    assert q["state"] == "FINISHED"


# --------------------------------------------------------------------------- errors
ERROR_CASES = [
    ("TABLE_NOT_FOUND", "SELECT * FROM iceberg.zoning.no_such_table", "iceberg.zoning.no_such_table"),
    ("SCHEMA_NOT_FOUND", "SELECT * FROM iceberg.no_such_schema.t", "iceberg.no_such_schema.t"),
    ("CATALOG_NOT_FOUND", "SELECT * FROM no_such_catalog.zoning.t", "no_such_catalog.zoning.t"),
    ("COLUMN_NOT_FOUND", "SELECT no_such_column FROM iceberg.zoning.documents", "no_such_column"),
    ("SYNTAX_ERROR", "SELECT * FROM WHERE", "WHERE"),
]


@pytest.mark.parametrize("name,sql,needle", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors(connect, name, sql, needle):
    with pytest.raises(TrinoUserError) as info:
        fetch(connect(), sql)
    e = info.value
    code, kind = STANDARD_ERRORS[name]
    assert e.error_name == name
    assert e.error_code == code
    assert e.error_type == kind == "USER_ERROR"
    line, column = position_of(sql, needle)
    assert e.error_location == (line, column)
    assert e.message.startswith(f"line {line}:{column}: ")
    assert e.query_id


def test_permission_denied_for_a_user_without_rights(connect, lab):
    with pytest.raises(TrinoUserError) as info:
        fetch(connect(lab["stand_in"]["denied_user"]), "SELECT 1")
    assert info.value.error_name == "PERMISSION_DENIED"
    assert info.value.error_code == 4
    assert info.value.message == "Access Denied: Cannot execute query"


@pytest.mark.beside_suite
def test_injected_query_failure_is_a_query_error(connect, control, user):
    control.faults(user, {"kind": "fail_query", "error_name": "GENERIC_INTERNAL_ERROR",
                          "message": "worker lost", "after_pages": 0, "count": 1})
    with pytest.raises(TrinoQueryError) as info:
        fetch(connect(user), "SELECT 1")
    assert info.value.error_name == "GENERIC_INTERNAL_ERROR"
    assert info.value.error_type == "INTERNAL_ERROR"
    assert info.value.message == "worker lost"


# --------------------------------------------------------------------------- retries
@pytest.mark.beside_suite
@pytest.mark.parametrize("status", [502, 503, 504])
def test_client_retries_gateway_errors(connect, control, user, status):
    control.faults(user, {"kind": "status", "status": status, "count": 2, "on": "next"})
    assert fetch(connect(user), "SELECT 7")[1] == [[7]]
    (rule,) = [r for r in control.fault_state() if r["user"] == user]
    assert rule["fired"] == 2


@pytest.mark.beside_suite
def test_client_honours_retry_after(connect, control, user):
    control.faults(user, {"kind": "status", "status": 429, "retry_after": "1", "count": 2, "on": "post"})
    t0 = time.monotonic()
    assert fetch(connect(user), "SELECT 8")[1] == [[8]]
    assert time.monotonic() - t0 >= 1.9
    (rule,) = [r for r in control.fault_state() if r["user"] == user]
    assert rule["fired"] == 2


@pytest.mark.beside_suite
def test_client_gives_up_after_a_storm(connect, control, user):
    control.faults(user, {"kind": "status", "status": 503, "count": None, "on": "post"})
    with pytest.raises(trino.exceptions.Http503Error):
        fetch(connect(user), "SELECT 9")


# --------------------------------------------------------------------------- cancel
@pytest.mark.beside_suite
def test_cancel_ends_query_user_canceled(connect, control, user):
    control.faults(user, {"kind": "slow", "ms": 20000, "count": 1})
    conn = connect(user)
    cur = conn.cursor()
    errors = []

    def run():
        try:
            cur.execute("SELECT 1")
            cur.fetchall()
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not cur.query_id:
        time.sleep(0.05)
    time.sleep(0.5)
    cur.cancel()
    t.join(15)
    assert not t.is_alive()
    q = control.query(cur.query_id)
    assert q["delete_received"] is True
    assert q["state"] == "FAILED" and q["error_name"] == "USER_CANCELED"
    assert errors and getattr(errors[0], "error_name", None) == "USER_CANCELED"


# --------------------------------------------------------------------------- authentication
def https_parts(lab):
    parts = urlsplit(lab["stand_in"]["https_url"])
    return parts.hostname, parts.port


def test_basic_auth_over_https(lab):
    host, port = https_parts(lab)
    (user, password), = lab["stand_in"]["users"].items()
    conn = trino.dbapi.connect(host=host, port=port, user=user, http_scheme="https",
                               auth=BasicAuthentication(user, password), verify=lab["stand_in"]["ca_file"])
    cur, rows = fetch(conn, "SELECT 1")
    assert rows == [[1]]


def test_jwt_over_https(lab, control):
    host, port = https_parts(lab)
    conn = trino.dbapi.connect(host=host, port=port, http_scheme="https",
                               auth=JWTAuthentication(lab["stand_in"]["bearer_token"]),
                               verify=lab["stand_in"]["ca_file"])
    cur, rows = fetch(conn, "SELECT 2")
    assert rows == [[2]]
    assert control.query(cur.query_id)["user"] == lab["stand_in"]["bearer_user"]


def test_wrong_password_is_401(lab):
    host, port = https_parts(lab)
    user = next(iter(lab["stand_in"]["users"]))
    conn = trino.dbapi.connect(host=host, port=port, user=user, http_scheme="https",
                               auth=BasicAuthentication(user, "wrong"), verify=lab["stand_in"]["ca_file"])
    with pytest.raises(HttpError, match="401"):
        fetch(conn, "SELECT 1")


def test_untrusted_certificate_is_refused(lab):
    host, port = https_parts(lab)
    user, password = next(iter(lab["stand_in"]["users"].items()))
    conn = trino.dbapi.connect(host=host, port=port, user=user, http_scheme="https",
                               auth=BasicAuthentication(user, password), verify=True, max_attempts=1)
    with pytest.raises(trino.exceptions.TrinoConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        fetch(conn, "SELECT 1")


def test_forged_jwt_is_401(lab):
    host, port = https_parts(lab)
    header, payload, sig = lab["stand_in"]["bearer_token"].split(".")
    forged = base64.urlsafe_b64encode(b'{"sub":"root","exp":9999999999}').rstrip(b"=").decode()
    conn = trino.dbapi.connect(host=host, port=port, http_scheme="https",
                               auth=JWTAuthentication(f"{header}.{forged}.{sig}"), verify=lab["stand_in"]["ca_file"])
    with pytest.raises(HttpError, match="401"):
        fetch(conn, "SELECT 1")


def test_versions_of_the_listeners(connect):
    for listener in (None, "v481", "v451"):
        assert fetch(connect(listener=listener), "SELECT 3")[1] == [[3]]


def test_server_info(lab):
    info = requests.get(lab["stand_in"]["url"] + "/v1/info", timeout=10).json()
    assert info["nodeVersion"] == {"version": "480"} == {"version": lab["stand_in"]["version"]}
    assert info["coordinator"] is True and info["starting"] is False
    assert info["state"] == "ACTIVE"
    assert isinstance(info["environment"], str) and isinstance(info["nodeId"], str)
    assert info["uptime"][-1] in "smhd" and float(info["uptime"].rstrip("smhdnu")) >= 0
