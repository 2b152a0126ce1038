"""The scan counter: references after Trino inlines WITH queries (the last test asks the running lab)."""

from __future__ import annotations

import pytest

from ..engine.scans import scans_of_sql

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

F = 'iceberg.zoning.documents$files'
S = 'iceberg.zoning.documents$snapshots'


def scans(sql: str) -> dict:
    return scans_of_sql(sql, "iceberg", "zoning")


def test_one_reference_is_one_scan():
    assert scans('SELECT count(*) FROM "documents$files"') == {F: 1}
    assert scans('SELECT count(*) FROM iceberg.zoning."documents$files" f') == {F: 1}
    assert scans('SELECT 1 FROM other.s."t$files"') == {"other.s.t$files": 1}


def test_a_cte_referenced_twice_is_scanned_twice():
    sql = 'WITH f AS (SELECT * FROM "documents$files") SELECT * FROM f a CROSS JOIN f b'
    assert scans(sql) == {F: 2}


def test_unreferenced_ctes_are_not_planned():
    sql = 'WITH f AS (SELECT * FROM "documents$files"), s AS (SELECT * FROM "documents$snapshots") SELECT * FROM s'
    assert scans(sql) == {S: 1}


def test_nested_ctes_multiply():
    sql = ('WITH f AS (SELECT * FROM "documents$files"), '
           'g AS (SELECT * FROM f a JOIN f b ON true), '
           'h AS (SELECT * FROM g UNION ALL SELECT * FROM g) '
           'SELECT * FROM h CROSS JOIN f')
    # h = 2 g = 4 f; plus one f
    assert scans(sql) == {F: 5}


def test_subqueries_and_union_all_count_every_reference():
    sql = ('SELECT * FROM "documents$files" WHERE file_path IN (SELECT file_path FROM "documents$files") '
           'UNION ALL SELECT * FROM (SELECT * FROM "documents$snapshots") x '
           'UNION ALL SELECT * FROM "documents$snapshots"')
    assert scans(sql) == {F: 2, S: 2}


def test_a_subquery_with_its_own_with_shadows_the_outer_name():
    sql = ('WITH f AS (SELECT * FROM "documents$files") '
           'SELECT (WITH f AS (SELECT * FROM "documents$snapshots") SELECT count(*) FROM f), * FROM f')
    assert scans(sql) == {F: 1, S: 1}


def test_unparsable_text_counts_nothing():
    assert scans("SELEC nope") == {}


def test_the_server_reports_scans_in_queries_and_final_stats(lab):
    """Against the running lab: `scans` in GET /_lab/queries, `labScans` in the final stats."""
    import json
    import urllib.request
    import uuid

    user = f"scans_{uuid.uuid4().hex[:8]}"
    url = lab["stand_in"]["url"]
    sql = ('WITH f AS (SELECT file_size_in_bytes FROM iceberg.zoning."documents$files") '
           'SELECT count(*) FROM f a CROSS JOIN f b WHERE a.file_size_in_bytes < 0')
    req = urllib.request.Request(f"{url}/v1/statement", data=sql.encode(), headers={"X-Trino-User": user})
    page = json.load(urllib.request.urlopen(req, timeout=60))
    while "nextUri" in page:
        nxt = urllib.request.Request(page["nextUri"], headers={"X-Trino-User": user})
        page = json.load(urllib.request.urlopen(nxt, timeout=60))
    assert page["stats"]["state"] == "FINISHED", page
    assert page["stats"]["labScans"] == {F: 2}
    rows = json.load(urllib.request.urlopen(f"{lab['stand_in']['control_url']}/queries", timeout=60))
    rows = rows.get("queries", rows) if isinstance(rows, dict) else rows
    mine = [r for r in rows if r["user"] == user]
    assert [r["scans"] for r in mine] == [{F: 2}]
