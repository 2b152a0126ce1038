"""The engine called directly: metadata tables (shapes, types, values against expected.json),
information_schema, SHOW/DESCRIBE, errors, functions, wire encoding, version differences."""

from __future__ import annotations

import json
import math
import threading

import pytest

from .test_engine_common import engine, expected, facts, fails, one, run, seed  # noqa: F401

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

DOCS = 'iceberg.zoning."documents$'
SMALL = 100663296  # 0.75 x 128 MB


def types(r) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in r.columns]


# -- $snapshots, $history, $refs, $metadata_log_entries ------------------------------------------------

def test_snapshots_shape_and_newest(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f'SELECT * FROM {DOCS}snapshots" ORDER BY committed_at DESC')
    assert types(r) == [
        ("committed_at", "timestamp(3) with time zone"), ("snapshot_id", "bigint"), ("parent_id", "bigint"),
        ("operation", "varchar"), ("manifest_list", "varchar"), ("summary", "map(varchar, varchar)"),
    ]
    assert len(r.rows) == docs["snapshots"] == 46
    committed_at, snapshot_id, parent_id, operation, manifest_list, summary = r.rows[0]
    newest = docs["newest_snapshot"]
    assert snapshot_id == newest["snapshot_id"] and isinstance(snapshot_id, int)
    assert committed_at == newest["committed_at_trino"]
    assert operation == "append"
    assert "operation" not in summary
    assert summary["total-data-files"] == str(docs["data_files"])
    assert summary["total-records"] == str(docs["records"])
    assert summary["total-files-size"] == str(docs["total_bytes"])
    assert summary["engine-name"] == "trino" and summary["trino_user"] == "ingest"
    assert manifest_list.startswith("file://") and manifest_list.endswith(".avro")
    ops = [row[3] for row in r.rows]
    assert ops.count("replace") == 1 and ops.count("append") == 45
    oldest = r.rows[-1]
    assert oldest[2] is None and oldest[0] == docs["oldest_snapshot"]["committed_at_trino"]


def test_snapshot_times_follow_the_scenario_clock(engine, expected):
    docs = facts(expected, "zoning.documents")
    now = expected["generated_at_ms"]
    rows = run(engine, f"SELECT to_unixtime(committed_at), operation FROM {DOCS}snapshots\" "
                       "ORDER BY committed_at").rows
    replace = [t for t, op in rows if op == "replace"]
    assert len(replace) == 1
    assert abs(replace[0] * 1000 - (now - 15 * 86_400_000)) < 1000
    after = [t for t, op in rows if t > replace[0]]
    assert len(after) == 15                      # an append every day since
    gaps = [b - a for a, b in zip(after, after[1:])]
    assert all(abs(g - 86400) < 1 for g in gaps)
    assert docs["last_write"]["committed_at_ms"] == int(round(after[-1] * 1000))


def test_history_refs_and_metadata_log(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f'SELECT * FROM {DOCS}history" ORDER BY made_current_at')
    assert types(r) == [("made_current_at", "timestamp(3) with time zone"), ("snapshot_id", "bigint"),
                        ("parent_id", "bigint"), ("is_current_ancestor", "boolean")]
    assert len(r.rows) == docs["snapshots"] and all(row[3] is True for row in r.rows)
    r = run(engine, f'SELECT * FROM {DOCS}refs"')
    assert types(r) == [("name", "varchar"), ("type", "varchar"), ("snapshot_id", "bigint"),
                        ("max_reference_age_in_ms", "bigint"), ("min_snapshots_to_keep", "integer"),
                        ("max_snapshot_age_in_ms", "bigint")]
    assert r.rows == [["main", "BRANCH", docs["current_snapshot_id"], None, None, None]]
    r = run(engine, f'SELECT * FROM {DOCS}metadata_log_entries" ORDER BY timestamp')
    assert types(r) == [("timestamp", "timestamp(3) with time zone"), ("file", "varchar"),
                        ("latest_snapshot_id", "bigint"), ("latest_schema_id", "integer"),
                        ("latest_sequence_number", "bigint")]
    assert len(r.rows) == 21                 # write.metadata.previous-versions-max = 20, plus the current
    assert r.rows[-1][1] == docs["metadata_location"]
    assert r.rows[-1][2] == docs["current_snapshot_id"] and r.rows[-1][4] == 46


# -- $partitions and $files --------------------------------------------------------------------------------

def test_partitions_values_and_types(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f'SELECT * FROM {DOCS}partitions"')
    t = dict(types(r))
    assert list(t) == ["partition", "record_count", "file_count", "total_size", "data"]
    assert t["partition"] == "row(district varchar, filed_at_day date)"
    assert t["record_count"] == t["file_count"] == t["total_size"] == "bigint"
    # identity partition sources are left out of `data`
    assert t["data"].startswith("row(doc_id row(min bigint, max bigint, null_count bigint, nan_count bigint), "
                                "filed_at row(min timestamp(6) with time zone, max timestamp(6) with time zone")
    assert "district row(" not in t["data"]
    assert len(r.rows) == docs["partitions"]
    assert sum(row[2] for row in r.rows) == docs["data_files"]
    assert sum(row[1] for row in r.rows) == docs["records"]
    assert sum(row[3] for row in r.rows) == docs["total_bytes"]
    district, day = r.rows[0][0]
    assert isinstance(district, str) and len(day) == 10 and day[4] == "-"
    n_small = one(engine, f'SELECT count_if(file_count >= 12) FROM {DOCS}partitions"')[0]
    assert n_small == docs["small_file_partitions"] > 0
    # field access on the row and a per-column metric
    row = one(engine, f"SELECT max(data.doc_id.max), min(data.pages.min) FROM {DOCS}partitions\"")
    assert row[0] == docs["records"] and 1 <= row[1] <= 120


def test_files_values_and_types(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f'SELECT * FROM {DOCS}files" LIMIT 1')
    assert types(r) == [
        ("content", "integer"), ("file_path", "varchar"), ("file_format", "varchar"), ("spec_id", "integer"),
        ("partition", "row(district varchar, filed_at_day date)"), ("record_count", "bigint"),
        ("file_size_in_bytes", "bigint"), ("column_sizes", "map(integer, bigint)"),
        ("value_counts", "map(integer, bigint)"), ("null_value_counts", "map(integer, bigint)"),
        ("nan_value_counts", "map(integer, bigint)"), ("lower_bounds", "map(integer, varchar)"),
        ("upper_bounds", "map(integer, varchar)"), ("key_metadata", "varbinary"), ("split_offsets", "array(bigint)"),
        ("equality_ids", "array(integer)"), ("sort_order_id", "integer"), ("readable_metrics", "json"),
    ]
    row = dict(zip([c.name for c in r.columns], r.rows[0]))
    assert row["content"] == 0 and row["file_format"] == "PARQUET"
    assert set(row["column_sizes"]) == {str(i) for i in range(1, 9)}      # map keys travel as strings
    lower, upper = row["lower_bounds"], row["upper_bounds"]
    assert lower["2"] == upper["2"] == row["partition"][0]                # district bounds = its partition
    assert lower["3"].startswith(row["partition"][1] + "T") and lower["3"].endswith("Z")
    metrics = json.loads(row["readable_metrics"])
    assert list(metrics) == sorted(metrics)
    assert metrics["doc_id"]["lower_bound"] == int(lower["1"])
    agg = one(engine, f"SELECT count(*), sum(file_size_in_bytes), count_if(file_size_in_bytes < {SMALL}), "
                      f"sum(record_count), approx_percentile(file_size_in_bytes, 0.5) FROM {DOCS}files\"")
    assert agg[:4] == [docs["data_files"], docs["total_bytes"], docs["small_files"], docs["records"]]
    assert all(isinstance(v, int) for v in agg)                          # HUGEINT sums come back as bigint
    by_part = one(engine, f"SELECT count(*) FROM (SELECT partition FROM {DOCS}files\" GROUP BY partition "
                          "HAVING count(*) >= 12)")
    assert by_part[0] == docs["small_file_partitions"]


def test_manifests_and_entries(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f'SELECT * FROM {DOCS}manifests"')
    assert [c.name for c in r.columns] == [
        "content", "path", "length", "partition_spec_id", "added_snapshot_id", "added_data_files_count",
        "added_rows_count", "existing_data_files_count", "existing_rows_count", "deleted_data_files_count",
        "deleted_rows_count", "partition_summaries"]
    assert r.columns[-1].type == ("array(row(contains_null boolean, contains_nan boolean, lower_bound varchar, "
                                  "upper_bound varchar))")
    assert len(r.rows) == docs["manifests"]
    live = one(engine, f"SELECT sum(added_data_files_count + existing_data_files_count), "
                       f"sum(added_rows_count + existing_rows_count) FROM {DOCS}manifests\"")
    assert live == [docs["data_files"], docs["records"]]
    e = run(engine, f'SELECT status, snapshot_id, sequence_number, file_sequence_number, data_file, '
                    f'readable_metrics FROM {DOCS}entries"')
    assert e.columns[4].type.startswith("row(content integer, file_path varchar, file_format varchar, "
                                        "spec_id integer, partition row(district varchar, filed_at_day date), ")
    assert sum(1 for row in e.rows if row[0] in (0, 1)) == docs["data_files"]


def test_properties(engine, expected):
    docs = facts(expected, "zoning.documents")
    rows = dict(run(engine, f'SELECT key, value FROM {DOCS}properties"').rows)
    assert list(rows)[:5] == ["format", "provider", "current-snapshot-id", "location", "format-version"]
    assert rows["format"] == "iceberg/PARQUET" and rows["provider"] == "iceberg"
    assert rows["current-snapshot-id"] == str(docs["current_snapshot_id"])
    assert rows["location"] == docs["location"] and rows["format-version"] == "2"
    for k, v in docs["properties"].items():
        assert rows[k] == v
    before = dict(run(engine, f'SELECT key, value FROM {DOCS}properties"', server_version=472).rows)
    assert "provider" not in before and before == docs["properties"]
    parcels = dict(run(engine, 'SELECT * FROM iceberg.zoning."parcels$properties"').rows)
    assert parcels["write.target-file-size-bytes"] == "65536"


def test_version_differences(engine):
    files = run(engine, f'SELECT * FROM {DOCS}files" LIMIT 0', server_version=464)
    assert [c.name for c in files.columns] == [
        "content", "file_path", "file_format", "record_count", "file_size_in_bytes", "column_sizes",
        "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds", "key_metadata",
        "split_offsets", "equality_ids"]
    m467 = [c.name for c in run(engine, f'SELECT * FROM {DOCS}manifests" LIMIT 0', server_version=467).columns]
    assert m467[0] == "path" and m467[-1] == "partitions"
    m479 = [c.name for c in run(engine, f'SELECT * FROM {DOCS}manifests" LIMIT 0', server_version=479).columns]
    assert m479[0] == "path" and m479[-1] == "partition_summaries"
    e = fails(engine, f'SELECT * FROM {DOCS}entries"', server_version=468)
    assert e.error_name == "TABLE_NOT_FOUND"
    assert e.message == "Table 'iceberg.zoning.documents$entries' does not exist"
    assert run(engine, f'SELECT count(*) FROM {DOCS}entries"', server_version=469).rows[0][0] > 0
    e = fails(engine, "SELECT * FROM iceberg.system.iceberg_tables", server_version=474)
    assert e.error_name == "TABLE_NOT_FOUND"
    assert e.wire_message == "line 1:15: Table 'iceberg.system.iceberg_tables' does not exist"


def test_empty_and_unpartitioned_tables(engine, expected):
    assert run(engine, 'SELECT * FROM iceberg.zoning."staging$snapshots"').rows == []
    assert run(engine, 'SELECT * FROM iceberg.zoning."staging$partitions"').rows == []
    assert run(engine, 'SELECT * FROM iceberg.zoning."staging$files"').rows == []
    assert one(engine, "SELECT count(*) FROM iceberg.zoning.staging") == [0]
    props = dict(run(engine, 'SELECT * FROM iceberg.zoning."staging$properties"').rows)
    assert props["current-snapshot-id"] == "none"
    insp = facts(expected, "zoning.inspections")
    r = run(engine, 'SELECT * FROM iceberg.zoning."inspections$partitions"')
    assert [c.name for c in r.columns] == ["record_count", "file_count", "total_size", "data"]
    assert r.rows[0][:3] == [insp["records"], insp["data_files"], insp["total_bytes"]]


# -- information_schema, system.iceberg_tables, SHOW, DESCRIBE ---------------------------------------------

def test_information_schema(engine, expected):
    tables = run(engine, "SELECT table_catalog, table_schema, table_name, table_type FROM "
                         "iceberg.information_schema.tables WHERE table_schema NOT IN ('information_schema', 'scratch') "
                         "ORDER BY 2, 3")
    want = sorted((t["schema"], t["table"]) for t in expected["tables"].values())
    assert [(r[1], r[2]) for r in tables.rows] == want
    assert {r[0] for r in tables.rows} == {"iceberg"} and {r[3] for r in tables.rows} == {"BASE TABLE"}
    assert not any("$" in r[2] for r in tables.rows)
    star = run(engine, "SELECT * FROM iceberg.information_schema.tables LIMIT 1")
    assert [c.name for c in star.columns] == ["table_catalog", "table_schema", "table_name", "table_type"]
    cols = run(engine, "SELECT column_name, ordinal_position, data_type, is_nullable FROM information_schema.columns "
                       "WHERE table_schema = 'zoning' AND table_name = 'documents' ORDER BY ordinal_position")
    docs = facts(expected, "zoning.documents")
    assert [(r[0], r[2]) for r in cols.rows] == [(c["name"], c["type"]) for c in docs["columns"]]
    assert [r[1] for r in cols.rows] == list(range(1, 9)) and {r[3] for r in cols.rows} == {"YES"}
    assert cols.columns[1].type == "bigint"
    schemata = run(engine, "SELECT schema_name FROM iceberg.information_schema.schemata "
                           "WHERE schema_name <> 'scratch' ORDER BY 1").rows
    assert [r[0] for r in schemata] == ["audit", "finance", "information_schema", "zoning"]
    it = run(engine, "SELECT table_schema, table_name FROM iceberg.system.iceberg_tables "
                     "WHERE table_schema <> 'scratch' ORDER BY 1, 2")
    assert [tuple(r) for r in it.rows] == want


def test_show_and_describe(engine, expected):
    assert run(engine, "SHOW CATALOGS").rows == [["iceberg"], ["system"]]
    schemas = [r for r in run(engine, "SHOW SCHEMAS FROM iceberg").rows if r != ["scratch"]]
    assert schemas == [["audit"], ["finance"], ["information_schema"], ["zoning"]]
    r = run(engine, "SHOW TABLES")
    assert [c.name for c in r.columns] == ["Table"]
    assert r.rows == [["documents"], ["inspections"], ["parcels"], ["permits"], ["staging"]]
    assert run(engine, "SHOW TABLES FROM iceberg.zoning LIKE 'p%'").rows == [["parcels"], ["permits"]]
    d = run(engine, "DESCRIBE documents")
    assert [c.name for c in d.columns] == ["Column", "Type", "Extra", "Comment"]
    assert d.rows[2] == ["filed_at", "timestamp(6) with time zone", "", ""]
    assert run(engine, "SHOW COLUMNS FROM iceberg.zoning.documents").rows == d.rows
    text = one(engine, "SHOW CREATE TABLE zoning.documents")[0]
    docs = facts(expected, "zoning.documents")
    assert text.startswith("CREATE TABLE iceberg.zoning.documents (\n   doc_id bigint,\n   district varchar,\n")
    assert "   partitioning = ARRAY['district','day(filed_at)']" in text
    assert f"   location = '{docs['location']}'" in text and "   format = 'PARQUET'" in text
    with_props = [line.split(" = ")[0].strip() for line in text.split("WITH (\n")[1].splitlines()[:-1]]
    assert with_props == sorted(with_props)
    odd = one(engine, 'SHOW CREATE TABLE finance."ledger ""q3"" it\'s-odd"')[0]
    assert odd.startswith('CREATE TABLE iceberg.finance."ledger ""q3"" it\'s-odd" (')
    assert "partitioning = ARRAY['month(posted_on)']" in odd


def test_set_reset_session_and_use(engine):
    r = run(engine, "SET SESSION iceberg.expire_snapshots_min_retention = '1d'")
    assert r.update_type == "SET SESSION" and r.rows == [[True]]
    assert r.headers == [("X-Trino-Set-Session", "iceberg.expire_snapshots_min_retention=1d")]
    r = run(engine, "RESET SESSION iceberg.expire_snapshots_min_retention")
    assert r.headers == [("X-Trino-Clear-Session", "iceberg.expire_snapshots_min_retention")]
    e = fails(engine, "SET SESSION iceberg.no_such_property = 'x'")
    assert e.error_name == "INVALID_SESSION_PROPERTY"
    assert e.message == "Session property 'iceberg.no_such_property' does not exist"
    e = fails(engine, "SET SESSION nocat.expire_snapshots_min_retention = '1d'")
    assert e.error_name == "CATALOG_NOT_FOUND" and e.message == "Catalog 'nocat' not found"
    r = run(engine, "USE iceberg.audit")
    assert ("X-Trino-Set-Schema", "audit") in r.headers


# -- errors --------------------------------------------------------------------------------------------------

ERRORS = [
    ("SELECT * FROM iceberg.zoning.nope", "TABLE_NOT_FOUND", "line 1:15: Table 'iceberg.zoning.nope' does not exist"),
    ("SELECT * FROM nope", "TABLE_NOT_FOUND", "line 1:15: Table 'iceberg.zoning.nope' does not exist"),
    ("SELECT *\n  FROM iceberg.x.t", "SCHEMA_NOT_FOUND", "line 2:8: Schema 'x' does not exist"),
    ("SELECT * FROM x.zoning.t", "CATALOG_NOT_FOUND", "line 1:15: Catalog 'x' not found"),
    ('SELECT * FROM "documents$nope"', "TABLE_NOT_FOUND",
     "line 1:15: Table 'iceberg.zoning.documents$nope' does not exist"),
    ("SELECT nope FROM documents", "COLUMN_NOT_FOUND", "line 1:8: Column 'nope' cannot be resolved"),
    ('SELECT snapshot_id, bogus FROM "documents$snapshots"', "COLUMN_NOT_FOUND",
     "line 1:21: Column 'bogus' cannot be resolved"),
    ("SELECT * FROM WHERE", "SYNTAX_ERROR", None),
    ("SELECT no_such_fn(1)", "FUNCTION_NOT_FOUND", "line 1:8: Function 'no_such_fn' not registered"),
    ("SELECT 1;", "SYNTAX_ERROR", None),
]


@pytest.mark.parametrize("sql,name,message", ERRORS)
def test_errors(engine, sql, name, message):
    e = fails(engine, sql)
    assert e.error_name == name
    if message is not None:
        assert e.wire_message == message
    assert e.line is not None and e.column is not None


def test_syntax_error_position(engine):
    e = fails(engine, "SELECT * FROM WHERE")
    assert e.wire_message.startswith("line 1:15: mismatched input 'WHERE'")


def test_missing_session_schema_and_catalog(engine):
    e = fails(engine, "SELECT * FROM documents", schema=None)
    assert e.error_name == "MISSING_SCHEMA_NAME"
    assert e.wire_message == "line 1:15: Schema must be specified when session schema is not set"
    e = fails(engine, "SELECT * FROM zoning.documents", catalog=None)
    assert e.error_name == "MISSING_CATALOG_NAME"
    assert e.wire_message == "line 1:15: Catalog must be specified when session catalog is not set"


def test_missing_map_key_fails_like_trino(engine):
    e = fails(engine, f"SELECT summary['no-such-key'] FROM {DOCS}snapshots\"")
    assert e.error_name == "INVALID_FUNCTION_ARGUMENT" and e.error_code == 7
    assert e.message == "Key not present in map: no-such-key" and e.line is None
    row = one(engine, f"SELECT element_at(summary, 'no-such-key'), summary['total-records'] FROM {DOCS}snapshots\" "
                      "ORDER BY committed_at DESC LIMIT 1")
    assert row[0] is None and row[1].isdigit()


# -- functions and encodings ------------------------------------------------------------------------------------

def test_date_diff_counts_whole_units_as_trino_does(engine):
    # 40 minutes across midnight is 0 days in Trino (DuckDB's date_diff would say 1)
    row = one(engine, """
        SELECT date_diff('day', TIMESTAMP '2026-12-07 23:50:04 UTC', TIMESTAMP '2026-12-08 00:30:00 UTC'),
               date_diff('day', TIMESTAMP '2026-12-06 23:50:04 UTC', TIMESTAMP '2026-12-08 00:30:00 UTC'),
               date_diff('hour', TIMESTAMP '2026-12-07 23:50:04 UTC', TIMESTAMP '2026-12-08 01:30:00 UTC')""")
    assert list(row) == [0, 1, 1]


def test_health_query_functions(engine, expected):
    docs = facts(expected, "zoning.documents")
    r = run(engine, f"""
        SELECT snapshot_id, to_unixtime(committed_at) AS committed_epoch_s, operation,
               element_at(summary, 'total-data-files') AS data_files,
               CAST(element_at(summary, 'total-records') AS bigint) AS records,
               cardinality(summary) AS n_keys,
               contains(map_keys(summary), 'trino_user') AS has_user,
               date_diff('day', committed_at, current_timestamp) AS age_days,
               date_trunc('day', committed_at) AS day,
               from_unixtime(to_unixtime(committed_at)) AS again
        FROM iceberg.zoning."documents$snapshots" ORDER BY committed_at DESC LIMIT 1""")
    assert types(r) == [
        ("snapshot_id", "bigint"), ("committed_epoch_s", "double"), ("operation", "varchar"),
        ("data_files", "varchar"), ("records", "bigint"), ("n_keys", "bigint"), ("has_user", "boolean"),
        ("age_days", "bigint"), ("day", "timestamp(3) with time zone"), ("again", "timestamp(3) with time zone")]
    row = r.rows[0]
    assert row[1] * 1000 == pytest.approx(docs["newest_snapshot"]["committed_at_ms"], abs=1)
    assert row[3] == str(docs["data_files"]) and row[4] == docs["records"]
    assert row[6] is True and row[7] == 0
    assert row[8].endswith(" 00:00:00.000 UTC") and row[9] == row_time(docs)
    agg = one(engine, f"SELECT count(*), count_if(operation = 'replace'), min(committed_at), max(committed_at) "
                      f"FROM {DOCS}snapshots\"")
    assert agg[:2] == [46, 1] and agg[3] == docs["newest_snapshot"]["committed_at_trino"]


def row_time(docs):
    return docs["newest_snapshot"]["committed_at_trino"]


def test_scalar_types_and_names(engine):
    r = run(engine, "SELECT 1, 'abc' AS s, 1.50, CAST(2.5 AS double) AS d, nan(), true, NULL, "
                    "DATE '2026-01-02', CAST('12.30' AS decimal(10,2)) AS dec, 10000000000, 7 / 2, x'ff'")
    assert types(r) == [("_col0", "integer"), ("s", "varchar(3)"), ("_col2", "decimal(3,2)"), ("d", "double"),
                        ("_col4", "double"), ("_col5", "boolean"), ("_col6", "unknown"), ("_col7", "date"),
                        ("dec", "decimal(10,2)"), ("_col9", "bigint"), ("_col10", "integer"), ("_col11", "varbinary")]
    assert r.rows == [[1, "abc", "1.50", 2.5, "NaN", True, None, "2026-01-02", "12.30", 10000000000, 3, "/w=="]]


def test_timestamps_in_the_session_zone(engine, expected):
    docs = facts(expected, "zoning.documents")
    ny = one(engine, f"SELECT max(committed_at) FROM {DOCS}snapshots\"", time_zone="America/New_York")[0]
    utc = docs["newest_snapshot"]["committed_at_trino"]
    assert ny.endswith(" America/New_York") and ny[:10] <= utc[:10]
    assert ny != utc.replace(" UTC", " America/New_York") or utc[11:13] == "05"
    row = one(engine, "SELECT filed_at FROM documents ORDER BY filed_at DESC LIMIT 1")
    assert row[0].endswith(" UTC") and len(row[0].split(" ")[1]) == len("00:00:00.000000")
    # Iceberg's timestamptz values carry UTC whatever the session's zone (Trino 476)
    row = one(engine, "SELECT filed_at FROM documents ORDER BY filed_at DESC LIMIT 1", time_zone="America/New_York")
    assert row[0].endswith(" UTC"), row


def test_decimals_maps_and_odd_names(engine, expected):
    ledger = facts(expected, "finance.ledger \"q3\" it's-odd")
    r = run(engine, 'SELECT amount, posted_on FROM iceberg.finance."ledger ""q3"" it\'s-odd" LIMIT 1')
    assert types(r) == [("amount", "decimal(12,2)"), ("posted_on", "date")]
    amount = r.rows[0][0]
    assert isinstance(amount, str) and amount.split(".")[1].__len__() == 2
    total = one(engine, 'SELECT count(*), sum(amount) FROM finance."ledger ""q3"" it\'s-odd"')
    assert total[0] == ledger["records"] and isinstance(total[1], str)
    parts = run(engine, 'SELECT partition FROM finance."ledger ""q3"" it\'s-odd$partitions" ORDER BY 1')
    assert parts.columns[0].type == "row(posted_on_month integer)" and len(parts.rows) == 3


def test_data_table_and_hidden_columns(engine, expected):
    docs = facts(expected, "zoning.documents")
    star = run(engine, "SELECT * FROM documents LIMIT 1")
    assert [c.name for c in star.columns] == [c["name"] for c in docs["columns"]]
    r = run(engine, 'SELECT "$path", "$partition", "$file_modified_time", district, filed_at FROM documents '
                    "ORDER BY filed_at DESC LIMIT 1")
    assert types(r)[:3] == [("$path", "varchar"), ("$partition", "varchar"),
                            ("$file_modified_time", "timestamp(3) with time zone")]
    path, part, mtime, district, filed_at = r.rows[0]
    assert path.startswith(docs["location"] + "/data/district=" + district + "/filed_at_day=")
    assert part == f"district={district}/filed_at_day={filed_at[:10]}"
    assert mtime == docs["last_write"]["committed_at_trino"]          # files carry the scenario clock
    n = one(engine, 'SELECT count(*), count(DISTINCT "$path") FROM zoning.documents')
    assert n == [docs["records"], docs["data_files"]]
    # a read of the data itself agrees with the count taken from file metadata
    assert one(engine, "SELECT count(doc_id), count(DISTINCT doc_id), max(doc_id) FROM zoning.documents") == \
        [docs["records"]] * 3
    per_part = run(engine, 'SELECT "$partition", count(*), count(district) FROM documents GROUP BY 1').rows
    assert len(per_part) == docs["partitions"] and all(r[1] == r[2] for r in per_part)


def test_concurrent_queries(engine, expected):
    docs = facts(expected, "zoning.documents")
    sqls = [f'SELECT count(*) FROM {DOCS}files"', f'SELECT count(*) FROM {DOCS}snapshots"',
            f'SELECT count(*) FROM {DOCS}partitions"', "SELECT count(*) FROM iceberg.audit.\"events$snapshots\""] * 4
    want = {sqls[0]: docs["data_files"], sqls[1]: docs["snapshots"], sqls[2]: docs["partitions"],
            sqls[3]: facts(expected, "audit.events")["snapshots"]}
    results, errors = {}, []

    def go(i, sql):
        try:
            results[i] = run(engine, sql).rows[0][0]
        except Exception as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=go, args=(i, s)) for i, s in enumerate(sqls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert all(results[i] == want[s] for i, s in enumerate(sqls))


def test_nan_and_special_doubles(engine):
    row = one(engine, "SELECT nan(), infinity(), -infinity(), 1e10, CAST(0.1 AS double)")
    assert row[:3] == ["NaN", "Infinity", "-Infinity"]
    assert row[3] == 1e10 and math.isclose(row[4], 0.1)


@pytest.mark.parametrize("sql,where,token", [
    ("SELEC 1", "1:1", "SELEC"),
    ("SELECT 1 FROM", "1:14", "<EOF>"),
    ("SELECT * FROM WHERE", "1:15", "WHERE"),
    ("SELECT *\nFROM documents\nWHERE", "3:6", "<EOF>"),
])
def test_syntax_error_positions(engine, sql, where, token):
    e = fails(engine, sql)
    assert e.error_name == "SYNTAX_ERROR" and e.error_code == 1
    assert e.wire_message.startswith(f"line {where}: mismatched input '{token}'. Expecting: ")


def test_system_catalog(engine):
    r = run(engine, "SELECT node_version, coordinator, state FROM system.runtime.nodes")
    assert r.rows == [["480", True, "active"]]
    assert run(engine, "SHOW SCHEMAS FROM system").rows == [["information_schema"], ["jdbc"], ["metadata"], ["runtime"]]
    e = fails(engine, "SELECT * FROM system.nope.t")
    assert e.error_name == "SCHEMA_NOT_FOUND" and e.wire_message == "line 1:15: Schema 'nope' does not exist"


def test_count_if_over_no_rows_is_zero(engine):
    assert one(engine, 'SELECT count_if(file_size_in_bytes > 0), count(*), sum(record_count) '
                       'FROM iceberg.zoning."staging$files"') == [0, 0, None]


HEALTH_SQL = """WITH
props AS (
  SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop
  FROM "iceberg"."{s}"."{t}$properties"
),
cfg AS (
  SELECT COALESCE(TRY_CAST(target_prop AS bigint), 134217728) AS target,
         TRY_CAST(target_prop AS bigint) IS NOT NULL AS target_from_property
  FROM props
),
files AS (
  SELECT f.content, f.file_size_in_bytes AS size, f.record_count AS records, {part} AS part,
         f.file_size_in_bytes < cfg.target * 0.75 AS small
  FROM "iceberg"."{s}"."{t}$files" f CROSS JOIN cfg
),
file_agg AS (
  SELECT count_if(content = 0) AS data_files, count_if(content = 0 AND small) AS small_files,
         COALESCE(sum(CASE WHEN content = 0 THEN size END), 0) AS total_bytes,
         COALESCE(sum(CASE WHEN content = 0 THEN records END), 0) AS records
  FROM files
),
parts AS (
  SELECT part, count(*) AS files, count_if(small) AS small, sum(size) AS bytes
  FROM files WHERE content = 0 GROUP BY part
),
part_agg AS (
  SELECT count(*) AS partitions, count_if(small >= 12) AS small_file_partitions,
         count_if(small >= 12 AND bytes < files * (cfg.target / 8)) AS critical_partitions
  FROM parts CROSS JOIN cfg
),
snaps AS (
  SELECT committed_at, operation,
         TRY_CAST(element_at(summary, 'total-data-files') AS bigint) AS total_files,
         TRY_CAST(element_at(summary, 'deleted-data-files') AS bigint) AS deleted_files
  FROM "iceberg"."{s}"."{t}$snapshots"
),
compaction AS (
  SELECT max(committed_at) AS last_compaction FROM snaps WHERE operation = 'replace' AND deleted_files > 0
),
snap_agg AS (
  SELECT count(*) AS snapshots, min(committed_at) AS oldest_snapshot,
         max(CASE WHEN operation <> 'replace' THEN committed_at END) AS last_write
  FROM snaps
),
since AS (
  SELECT count_if(s.operation <> 'replace' AND s.committed_at > c.last_compaction) AS writes_since_compaction
  FROM snaps s CROSS JOIN compaction c
),
trend AS (
  SELECT array_agg(to_unixtime(committed_at) ORDER BY committed_at) AS trend_at,
         array_agg(total_files ORDER BY committed_at) AS trend_files
  FROM snaps WHERE total_files IS NOT NULL
)
SELECT cfg.target, cfg.target_from_property, file_agg.data_files, file_agg.small_files, file_agg.total_bytes,
       file_agg.records, part_agg.partitions, part_agg.small_file_partitions, snap_agg.snapshots,
       to_unixtime(snap_agg.oldest_snapshot) AS oldest_snapshot, to_unixtime(snap_agg.last_write) AS last_write,
       to_unixtime(compaction.last_compaction) AS last_compaction, since.writes_since_compaction,
       trend.trend_at, trend.trend_files
FROM cfg CROSS JOIN file_agg CROSS JOIN part_agg CROSS JOIN snap_agg CROSS JOIN compaction CROSS JOIN since
     CROSS JOIN trend"""


@pytest.mark.parametrize("table", ["zoning.documents", "zoning.parcels", "zoning.inspections", "zoning.staging",
                                   "finance.ledger \"q3\" it's-odd"])
def test_floe_health_statement(engine, expected, table):
    """The one-statement-per-table health query floe runs, with its values checked."""
    t = facts(expected, table)
    part = "f.partition" if t["partitioning"] else "CAST(NULL AS varchar)"
    sql = HEALTH_SQL.format(s=t["schema"], t=t["table"].replace('"', '""'), part=part)
    r = run(engine, sql)
    row = dict(zip([c.name for c in r.columns], r.rows[0]))
    types = dict((c.name, c.type) for c in r.columns)
    assert types["target"] == "bigint" and types["trend_at"] == "array(double)"
    assert types["trend_files"] == "array(bigint)" and types["oldest_snapshot"] == "double"
    target = int(t["properties"].get("write.target-file-size-bytes", 134217728))
    assert row["target"] == target and row["target_from_property"] is ("write.target-file-size-bytes" in t["properties"])
    assert [row["data_files"], row["total_bytes"], row["records"]] == [t["data_files"], t["total_bytes"], t["records"]]
    small = t["small_files"] if target == 134217728 else None
    if small is not None:
        assert row["small_files"] == small
    assert row["snapshots"] == t["snapshots"]
    if t["partitioning"]:
        assert row["partitions"] == t["partitions"]
        if target == 134217728:
            assert row["small_file_partitions"] == t["small_file_partitions"]
    if t["last_replace"]:
        assert round(row["last_compaction"] * 1000) == t["last_replace"]["committed_at_ms"]
    else:
        assert row["last_compaction"] is None
    if t["snapshots"]:
        assert round(row["oldest_snapshot"] * 1000) == t["oldest_snapshot"]["committed_at_ms"]
        assert len(row["trend_at"]) == t["snapshots"] and row["trend_files"][-1] == t["data_files"]
    else:
        assert row["trend_at"] is None and row["writes_since_compaction"] == 0
