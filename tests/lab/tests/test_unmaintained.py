"""control("unmaintained_table"): a small table with snapshots past retention, never expired,
isolated from the seed's tables (checked independently with pyiceberg too)."""

from __future__ import annotations

import os
import time

import pytest

from ..common.errors import TrinoError
from .test_engine_common import engine, fails, one, run, seed  # noqa: F401

# Reads and writes only what it makes itself (its own users, tables, servers and
# caches): runs beside floe's tests (see conftest.py).
pytestmark = pytest.mark.beside_suite

DAY_S = 86_400


def target(name: str) -> str:
    return f"noise_{os.getpid()}.{name}"


def test_snapshots_are_backdated_appends_of_one_small_file_each(engine, seed):
    t = target("three")
    r = engine.control("unmaintained_table", {"target": t, "snapshots": 3, "days_ago": 30})
    assert r["snapshots"] == 3 and r["data_files"] == 3
    schema, table = t.split(".")
    rows = run(engine, f'SELECT to_unixtime(committed_at), operation, summary FROM iceberg.{schema}."{table}$snapshots" '
                       "ORDER BY committed_at").rows
    assert [op for _, op, _ in rows] == ["append"] * 3
    now = time.time()
    ages = [(now - at) / DAY_S for at, _, _ in rows]
    # a day apart, the newest 30 days old: every snapshot is past a 7-day retention
    assert 29.9 < ages[-1] < 30.1 and 31.9 < ages[0] < 32.1, ages
    assert [int(s["total-data-files"]) for _, _, s in rows] == [1, 2, 3]
    assert all("deleted-data-files" not in s for _, _, s in rows)
    files, records, largest = one(
        engine, f'SELECT count(*), sum(record_count), max(file_size_in_bytes) FROM iceberg.{schema}."{table}$files"')
    assert (files, records) == (3, 30), (files, records)
    assert largest < 64 * 1024, "small files"
    assert one(engine, f"SELECT count(*) FROM iceberg.{schema}.\"{table}\"") == [30]

    # a separate catalog reads the same table
    from ..scenarios.catalog import open_catalog

    loaded = open_catalog(seed).load_table((schema, table))
    assert len(loaded.metadata.snapshots) == 3
    assert loaded.metadata.current_snapshot().summary["total-records"] == "30"


def test_the_seed_is_untouched_and_targets_are_not_overwritten(engine):
    before = engine.control("expected", {"catalog": "iceberg"})["tables"].keys()
    t = target("once")
    engine.control("unmaintained_table", {"target": t, "snapshots": 2})
    with pytest.raises(TrinoError) as e:
        engine.control("unmaintained_table", {"target": t})
    assert e.value.error_name == "TABLE_ALREADY_EXISTS"
    r = engine.control("unmaintained_table", {"target": t, "snapshots": 5, "replace": True})
    assert r["snapshots"] == 5
    schema, table = t.split(".")
    assert one(engine, f'SELECT count(*) FROM iceberg.{schema}."{table}$snapshots"') == [5]
    assert engine.control("expected", {"catalog": "iceberg"})["tables"].keys() == before
    assert "noise" not in "".join(before)


@pytest.mark.parametrize("payload", [
    {},
    {"target": "x"},
    {"target": "noise.bad", "snapshots": 0},
    {"target": "noise.bad", "snapshots": 1001},
    {"target": "noise.bad", "snapshots": "3"},
    {"target": "noise.bad", "days_ago": -1},
])
def test_bad_arguments_are_errors(engine, payload):
    with pytest.raises(TrinoError) as e:
        engine.control("unmaintained_table", payload)
    assert e.value.error_name in ("INVALID_ARGUMENTS", "SYNTAX_ERROR")
    assert fails(engine, 'SELECT * FROM iceberg.noise."bad"').error_name in ("TABLE_NOT_FOUND", "SCHEMA_NOT_FOUND")
