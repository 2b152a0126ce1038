"""Table procedures for real: optimize compacts and commits one replace snapshot (checked
independently with pyiceberg), cancel leaves the table unchanged, WHERE and argument
rejections, expire_snapshots retention rules, remove_orphan_files, optimize_manifests."""

from __future__ import annotations

import os
import threading
import time

import pytest

from ..common.errors import TrinoError
from .test_engine_common import clone, engine, expected, facts, fails, one, run, seed  # noqa: F401

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

FILTER_NODE = "Unexpected FilterNode found in plan; probably connector was not able to handle provided WHERE expression"


def independent_table(seed_dir, name: str):
    """The table as a separate pyiceberg catalog sees it (nothing shared with the engine)."""
    from ..scenarios.catalog import open_catalog

    schema, table = name.split(".", 1)
    return open_catalog(seed_dir).load_table((schema, table))


def partitions(engine, table: str) -> dict[str, tuple[int, int]]:
    rows = run(engine, f'SELECT partition, file_count, record_count FROM iceberg.{table.split(".")[0]}.'
                       f'"{table.split(".")[1]}$partitions"').rows
    return {f"district={p[0]}/filed_at_day={p[1]}": (n, r) for p, n, r in rows}


def two_small_partitions(engine, table: str) -> list[str]:
    parts = partitions(engine, table)
    many = sorted((p for p, (n, _r) in parts.items() if n >= 12), key=lambda p: (-parts[p][0], p))
    assert len(many) >= 2
    return many[:2]


def test_optimize_two_partitions(engine, seed, expected):
    docs = facts(expected, "zoning.documents")
    t = clone(engine, "zoning.documents")
    schema, name = t.split(".")
    before = partitions(engine, t)
    p1, p2 = two_small_partitions(engine, t)
    n1, n2 = before[p1][0], before[p2][0]
    records = before[p1][1] + before[p2][1]
    snaps_before = one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$snapshots"')[0]
    current_before = independent_table(seed, t).metadata.current_snapshot_id

    seen = []
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize WHERE \"$partition\" IN ('{p1}', '{p2}')",
            progress=lambda p: seen.append((p.total_splits, p.completed_splits, p.physical_written_bytes)))
    assert r.update_type == "ALTER TABLE EXECUTE"
    assert [(c.name, c.type) for c in r.columns] == [("rows", "bigint")]
    assert r.rows == []
    assert seen[0][0] == n1 + n2 and seen[-1][1] == n1 + n2 and seen[-1][2] > 0

    # one replace snapshot with a correct summary
    snaps = run(engine, f'SELECT operation, summary, parent_id FROM iceberg.{schema}."{name}$snapshots" '
                        "ORDER BY committed_at DESC").rows
    assert len(snaps) == snaps_before + 1
    op, summary, parent = snaps[0]
    assert op == "replace" and parent == current_before
    assert summary["deleted-data-files"] == str(n1 + n2)
    added = int(summary["added-data-files"])
    assert 2 <= added <= 4
    assert summary["added-records"] == summary["deleted-records"] == str(records)
    assert summary["changed-partition-count"] == "2"
    assert summary["total-data-files"] == str(docs["data_files"] - n1 - n2 + added)
    assert summary["total-records"] == str(docs["records"])
    assert summary["trino_query_id"] == "20261129_000000_00000_tests" and summary["trino_user"] == "floe"
    assert summary["engine-name"] == "trino"
    assert int(summary["total-files-size"]) == docs["total_bytes"] - int(summary["removed-files-size"]) + \
        int(summary["added-files-size"])

    # $partitions shows the new counts, the rest is untouched
    after = partitions(engine, t)
    assert after[p1][0] <= 2 and after[p2][0] <= 2
    assert after[p1][1] == before[p1][1] and after[p2][1] == before[p2][1]
    assert {p: v for p, v in after.items() if p not in (p1, p2)} == \
        {p: v for p, v in before.items() if p not in (p1, p2)}

    # pyiceberg, reading the warehouse on its own, agrees
    tbl = independent_table(seed, t)
    assert tbl.metadata.current_snapshot().summary.operation.value == "replace"
    tasks = list(tbl.scan().plan_files())
    assert len(tasks) == docs["data_files"] - n1 - n2 + added
    assert tbl.scan().to_arrow().num_rows == docs["records"]
    d, day = p1.split("/")[0].split("=")[1], p1.split("=")[-1]
    from pyiceberg.expressions import And, EqualTo
    part_files = list(tbl.scan(row_filter=EqualTo("district", d)).plan_files())
    assert sum(1 for f in part_files if f.file.file_path.split("/")[-2] == f"filed_at_day={day}") <= 2

    # running it again selects nothing and commits nothing
    again = run(engine, f"ALTER TABLE {t} EXECUTE optimize WHERE \"$partition\" IN ('{p1}', '{p2}')")
    assert again.rows == []
    assert one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$snapshots"')[0] == snaps_before + 1


def test_optimize_with_day_aligned_predicates(engine):
    t = clone(engine, "zoning.documents")
    schema, name = t.split(".")
    p1, _ = two_small_partitions(engine, t)
    district, day = p1.split("/")[0].split("=")[1], p1.split("=")[-1]
    before = partitions(engine, t)
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize WHERE district = '{district}' "
                    f"AND CAST(filed_at AS date) = DATE '{day}'")
    assert r.rows == [] and partitions(engine, t)[p1][0] == 1
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize(file_size_threshold => '1MB') WHERE district <> '{district}' "
                    f"AND filed_at >= TIMESTAMP '{day} 00:00:00' AND filed_at < TIMESTAMP '{day} 00:00:00' + INTERVAL '1' DAY")
    after = partitions(engine, t)
    others = [p for p in before if p.endswith(day) and p != p1]
    assert r.rows == []
    assert all(after[p][0] == 1 for p in others + [p1])
    n = one(engine, f"SELECT count(*) FROM iceberg.{schema}.\"{name}$snapshots\" WHERE operation = 'replace'")[0]
    assert n == 3


def test_optimize_metrics_from_481(engine):
    t = clone(engine, "zoning.permits")
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize WHERE status = 'pending'", server_version=481)
    assert [(c.name, c.type) for c in r.columns] == [("metric_name", "varchar"), ("metric_value", "bigint")]
    m = dict(r.rows)
    assert m == {"rewritten_data_files_count": 60, "removed_delete_files_count": 0, "added_data_files_count": 1}


def test_optimize_nothing_selected_commits_nothing(engine):
    t = clone(engine, "zoning.parcels")
    schema, name = t.split(".")
    n = one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$snapshots"')[0]
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize")
    assert r.rows == []
    assert one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$snapshots"')[0] == n


def test_cancel_mid_optimize_leaves_the_table_unchanged(engine, seed):
    t = clone(engine, "zoning.documents")
    schema, name = t.split(".")
    tbl_before = independent_table(seed, t)
    files_before = sorted(f.file.file_path for f in tbl_before.scan().plan_files())
    data_dir = tbl_before.location()[len("file://"):] + "/data"
    on_disk_before = sum(len(fs) for _, _, fs in os.walk(data_dir))
    cancelled = threading.Event()

    def progress(p):
        if p.completed_splits >= 5:
            cancelled.set()
    e = None
    try:
        run(engine, f"ALTER TABLE {t} EXECUTE optimize", progress=progress, cancelled=cancelled)
    except Exception as ex:  # noqa: BLE001
        e = ex
    assert e is not None and getattr(e, "error_name", None) == "USER_CANCELED"
    tbl = independent_table(seed, t)
    assert tbl.metadata.current_snapshot_id == tbl_before.metadata.current_snapshot_id
    assert sorted(f.file.file_path for f in tbl.scan().plan_files()) == files_before
    assert sum(len(fs) for _, _, fs in os.walk(data_dir)) == on_disk_before       # nothing left behind
    assert tbl.scan().to_arrow().num_rows == one(engine, f"SELECT count(*) FROM {t}")[0]


REJECTED = [
    "pages > 3",                                                              # a data column
    "district = 'north' OR CAST(filed_at AS date) = DATE '2026-01-01'",       # OR across columns
    "filed_at > TIMESTAMP '2026-11-20 10:00:00'",                              # not on a day boundary
    "filed_at = TIMESTAMP '2026-11-20 00:00:00'",
    "lower(district) = 'north'",                                              # an expression on a partition column
    "district LIKE 'n%'",
]


@pytest.mark.parametrize("predicate", REJECTED)
def test_where_rejections(engine, predicate):
    e = fails(engine, f"ALTER TABLE zoning.documents EXECUTE optimize WHERE {predicate}")
    assert e.error_name == "GENERIC_INTERNAL_ERROR" and e.error_code == 65536
    assert e.wire_message == FILTER_NODE


def test_where_unknown_column_and_non_optimize(engine):
    sql = "ALTER TABLE zoning.documents EXECUTE optimize WHERE nope = 1"
    e = fails(engine, sql)
    assert e.error_name == "COLUMN_NOT_FOUND" and e.wire_message == "line 1:53: Column 'nope' cannot be resolved"
    e = fails(engine, "ALTER TABLE zoning.documents EXECUTE expire_snapshots WHERE district = 'x'")
    assert e.error_name == "NOT_SUPPORTED"
    assert e.wire_message == "line 1:1: WHERE not supported for procedure expire_snapshots"


ARGUMENT_ERRORS = [
    ("optimize(file_size_threshold => '10MB', '1MB')", "INVALID_ARGUMENTS",
     "line 1:1: Named and positional arguments cannot be mixed"),
    ("optimize('10MB', '1MB')", "INVALID_ARGUMENTS", "line 1:1: Too many positional arguments"),
    ("optimize(foo => '10MB')", "INVALID_PROCEDURE_ARGUMENT",
     "Catalog 'iceberg' table procedure 'optimize' property 'foo' does not exist"),
    ("optimize(file_size_threshold => 'abc')", "INVALID_PROCEDURE_ARGUMENT",
     "Unable to set catalog 'iceberg' table procedure 'optimize' property 'file_size_threshold' to ['abc']: "
     "size is not a valid data size string: abc"),
    ("optimize(file_size_threshold => 10)", "INVALID_PROCEDURE_ARGUMENT",
     "Invalid value for catalog 'iceberg' table procedure 'optimize' property 'file_size_threshold': "
     "Cannot convert [10] to varchar"),
    ("expire_snapshots(retention_threshold => '7d', retention_threshold => '8d')", "DUPLICATE_PROPERTY",
     None),
    ("no_such_procedure", "PROCEDURE_NOT_FOUND", "Table procedure not registered: no_such_procedure"),
]


@pytest.mark.parametrize("call,name,message", ARGUMENT_ERRORS)
def test_argument_errors(engine, call, name, message):
    e = fails(engine, f"ALTER TABLE zoning.documents EXECUTE {call}")
    assert e.error_name == name
    if message is not None:
        assert e.wire_message == message


def test_procedure_on_missing_table(engine):
    e = fails(engine, "ALTER TABLE zoning.nope EXECUTE optimize")
    assert e.wire_message == "line 1:13: Table 'iceberg.zoning.nope' does not exist"


RETENTION = ("Retention specified (1.00d) is shorter than the minimum retention configured in the system (7.00d). "
             "Minimum retention can be changed with iceberg.expire-snapshots.min-retention configuration property "
             "or iceberg.expire_snapshots_min_retention session property")


def test_expire_snapshots_retention_rules(engine, seed, expected):
    e = fails(engine, "ALTER TABLE audit.events EXECUTE expire_snapshots(retention_threshold => '1d')")
    assert e.error_name == "INVALID_PROCEDURE_ARGUMENT" and e.error_code == 30
    assert e.wire_message == RETENTION
    e = fails(engine, "ALTER TABLE audit.events EXECUTE expire_snapshots(retention_threshold => '36h')",
              properties={"iceberg.expire_snapshots_min_retention": "2d"})
    assert e.wire_message == RETENTION.replace("(1.00d)", "(1.50d)").replace("(7.00d)", "(2.00d)")
    e = fails(engine, "ALTER TABLE audit.events EXECUTE remove_orphan_files(retention_threshold => '90m')")
    assert e.wire_message == (
        "Retention specified (1.50h) is shorter than the minimum retention configured in the system (7.00d). "
        "Minimum retention can be changed with iceberg.remove-orphan-files.min-retention configuration property "
        "or iceberg.remove_orphan_files_min_retention session property")
    old = fails(engine, "ALTER TABLE audit.events EXECUTE expire_snapshots(retention_threshold => '1d')",
                server_version=463)
    assert "iceberg.expire_snapshots.min-retention configuration property" in old.wire_message


def test_expire_snapshots_really_expires(engine, seed, expected):
    ev = facts(expected, "audit.events")
    t = clone(engine, "audit.events")
    schema, name = t.split(".")
    tbl = independent_table(seed, t)
    lists_before = {s.manifest_list for s in tbl.metadata.snapshots}
    now_ms = time.time() * 1000
    keep = [s for s in tbl.metadata.snapshots if s.timestamp_ms >= now_ms - 3 * 86_400_000]
    r = run(engine, f"ALTER TABLE {t} EXECUTE expire_snapshots(retention_threshold => '3d')",
            properties={"iceberg.expire_snapshots_min_retention": "1d"})
    assert r.update_type == "ALTER TABLE EXECUTE"
    assert [c.name for c in r.columns] == ["metric_name", "metric_value"] and r.rows == []
    n, oldest = one(engine, f'SELECT count(*), min(committed_at) FROM iceberg.{schema}."{name}$snapshots"')
    assert n == len(keep) < ev["snapshots"]
    tbl = independent_table(seed, t)
    assert len(tbl.metadata.snapshots) == n
    assert tbl.scan().to_arrow().num_rows == ev["records"]
    gone = lists_before - {s.manifest_list for s in tbl.metadata.snapshots}
    assert gone and not any(os.path.exists(p[len("file://"):]) for p in gone)
    r = run(engine, f"ALTER TABLE {t} EXECUTE expire_snapshots(retention_threshold => '7d')", server_version=477)
    assert [c.name for c in r.columns] == ["rows"] and r.rows == []


def test_remove_orphan_files(engine, seed):
    t = clone(engine, "zoning.inspections")
    tbl = independent_table(seed, t)
    data = tbl.location()[len("file://"):] + "/data"
    old = os.path.join(data, "orphan-old.parquet")
    young = os.path.join(data, "orphan-young.parquet")
    for p in (old, young):
        with open(p, "wb") as f:
            f.write(b"PAR1 not really")
    ten_days = time.time() - 10 * 86400
    os.utime(old, (ten_days, ten_days))
    r = run(engine, f"ALTER TABLE {t} EXECUTE remove_orphan_files(retention_threshold => '7d')")
    m = dict(r.rows)
    assert list(m) == ["processed_manifests_count", "active_files_count", "scanned_files_count",
                       "deleted_files_count"]
    assert m["deleted_files_count"] == 1 and m["processed_manifests_count"] == 10
    assert not os.path.exists(old) and os.path.exists(young)
    assert independent_table(seed, t).scan().to_arrow().num_rows == one(engine, f"SELECT count(*) FROM {t}")[0]


def test_optimize_manifests(engine, seed, expected):
    ev = facts(expected, "audit.events")
    t = clone(engine, "audit.events")
    schema, name = t.split(".")
    manifests = one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$manifests"')[0]
    assert manifests == ev["manifests"] > 1
    r = run(engine, f"ALTER TABLE {t} EXECUTE optimize_manifests")
    m = dict(r.rows)
    assert m["rewritten_manifests_count"] == manifests and m["kept_manifests_count"] == 0
    assert m["processed_manifest_entries_count"] == ev["data_files"]
    after = one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$manifests"')[0]
    assert after == m["added_manifests_count"] < manifests
    op, summary = one(engine, f'SELECT operation, summary FROM iceberg.{schema}."{name}$snapshots" '
                              "ORDER BY committed_at DESC LIMIT 1")
    assert op == "replace" and summary["manifests-replaced"] == str(manifests)
    assert summary["total-data-files"] == str(ev["data_files"])
    tbl = independent_table(seed, t)
    assert len(list(tbl.scan().plan_files())) == ev["data_files"]
    again = run(engine, f"ALTER TABLE {t} EXECUTE optimize_manifests")
    assert again.rows == [] or dict(again.rows)["rewritten_manifests_count"] == after


def test_clone_keeps_history(engine, seed, expected):
    docs = facts(expected, "zoning.documents")
    t = clone(engine, "zoning.documents")
    schema, name = t.split(".")
    src = run(engine, 'SELECT snapshot_id, committed_at, operation FROM iceberg.zoning."documents$snapshots" ORDER BY 2').rows
    dst = run(engine, f'SELECT snapshot_id, committed_at, operation FROM iceberg.{schema}."{name}$snapshots" ORDER BY 2').rows
    assert src == dst and len(dst) == docs["snapshots"]
    assert one(engine, f'SELECT count(*), sum(file_size_in_bytes) FROM iceberg.{schema}."{name}$files"') == \
        [docs["data_files"], docs["total_bytes"]]
    tbl = independent_table(seed, t)
    assert tbl.location() != docs["location"] and tbl.scan().to_arrow().num_rows == docs["records"]
    assert all(f.file.file_path.startswith(tbl.location()) for f in tbl.scan().plan_files())


def test_clone_can_leave_the_data_files_without_a_sort_order(engine, seed):
    """`sort_order_id: null` writes the copy's data files as pyiceberg's own writer does (the
    kind of table whose `$entries` the real Trino 476 fails), history and files unchanged."""
    t = clone(engine, "zoning.documents")
    target = t + "_unsorted"
    engine.control("clone_table", {"source": t, "target": target, "sort_order_id": None})
    for name, sort_orders in ((t, [[0]]), (target, [[None]])):
        schema, table = name.split(".")
        assert run(engine, f'SELECT DISTINCT sort_order_id FROM iceberg.{schema}."{table}$files"').rows == sort_orders
        assert run(engine, f'SELECT DISTINCT e.data_file.sort_order_id FROM iceberg.{schema}."{table}$entries" e '
                           "WHERE e.status <> 2").rows == sort_orders
    schema, table = target.split(".")
    src = run(engine, 'SELECT snapshot_id, committed_at FROM iceberg.zoning."documents$snapshots" ORDER BY 2').rows
    assert run(engine, f'SELECT snapshot_id, committed_at FROM iceberg.{schema}."{table}$snapshots" ORDER BY 2').rows == src
    tbl = independent_table(seed, target)
    assert all(f.file.sort_order_id is None for f in tbl.scan().plan_files())
    with pytest.raises(TrinoError):
        engine.control("clone_table", {"source": t, "target": target + "2", "sort_order_id": "zero"})


def test_clone_can_leave_keys_out_of_every_summary(engine, seed):
    """`summary_without` writes the copy's snapshots as a writer that records none of those
    keys would (every summary field is optional): history and files unchanged."""
    t = clone(engine, "finance.budget")
    target = t + "_untotalled"
    engine.control("clone_table", {"source": t, "target": target,
                                   "summary_without": ["total-delete-files", "total-data-files"]})
    schema, table = target.split(".")
    rows = run(engine, f'SELECT summary FROM iceberg.{schema}."{table}$snapshots"').rows
    assert rows and all("total-delete-files" not in r[0] and "total-data-files" not in r[0] for r in rows)
    assert all("total-records" in r[0] for r in rows), "the other keys stay"
    src_schema, src_table = t.split(".")
    count = f'SELECT count(*) FROM iceberg.{{}}."{{}}$files"'
    assert run(engine, count.format(schema, table)).rows == run(engine, count.format(src_schema, src_table)).rows
    with pytest.raises(TrinoError):
        engine.control("clone_table", {"source": t, "target": target + "2", "summary_without": "total-data-files"})


def test_optimize_keeps_the_starting_data_sequence_number(engine):
    t = clone(engine, "zoning.permits")
    schema, name = t.split(".")
    start_seq = one(engine, f'SELECT max(sequence_number) FROM iceberg.{schema}."{name}$entries"')[0]
    run(engine, f"ALTER TABLE {t} EXECUTE optimize WHERE status = 'approved'")
    added = run(engine, f'SELECT sequence_number, file_sequence_number, data_file.partition '
                        f'FROM iceberg.{schema}."{name}$entries" WHERE status = 1').rows
    assert added == [[start_seq, start_seq + 1, ["approved"]]]
    deleted = one(engine, f'SELECT count(*) FROM iceberg.{schema}."{name}$entries" WHERE status = 2')[0]
    assert deleted == 60


def test_manifest_evaluation_is_safe_across_threads(engine, seed):
    """pyiceberg evaluates manifests for a commit on a thread pool with one shared evaluator
    that keeps per-manifest state; the engine's producers give each evaluation its own."""
    from concurrent.futures import ThreadPoolExecutor

    from ..engine.procedures.optimize import _ReplaceFiles
    from pyiceberg.table.snapshots import Operation

    t = clone(engine, "zoning.documents")
    tbl = independent_table(seed, t)
    live = [e.data_file for m in tbl.current_snapshot().manifests(tbl.io) for e in m.fetch_manifest_entry(tbl.io)]
    newest_day = max(f.partition[1] for f in live)
    files = [f for f in live if f.partition[0] == "north" and f.partition[1] == newest_day]
    producer = _ReplaceFiles(operation=Operation.OVERWRITE, transaction=tbl.transaction(), io=tbl.io)
    for f in files:
        producer.delete_data_file(f)
    producer._build_delete_files_partition_predicate()
    evaluate = producer._build_manifest_evaluator(0)
    manifests = list(tbl.current_snapshot().manifests(tbl.io)) * 200
    want = [evaluate(m) for m in manifests]
    assert any(want) and not all(want)
    for _ in range(3):
        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(evaluate, manifests)) == want
    assert len(producer._deleted_entries()) == len(files)
