"""The scenario generator: what expected.json claims is what pyiceberg reads back from the
warehouse, the seed tables have the shapes tests/lab/README.md promises, and the history
follows the scenario clock with valid sequence numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .test_engine_common import generate, seed  # noqa: F401

DAY = 86_400_000
SMALL = 100663296


def catalog(d: Path):
    from ..scenarios.catalog import open_catalog

    return open_catalog(d)


@pytest.fixture(scope="module")
def expected_seed(seed) -> dict:
    return json.loads((seed / "expected.json").read_text())


@pytest.mark.beside_suite
def test_expected_json_matches_the_warehouse(seed, expected_seed):
    cat = catalog(seed)
    names = {(t["schema"], t["table"]) for t in expected_seed["tables"].values()}
    listed = {(ns[0], t[1]) for ns in cat.list_namespaces() for t in cat.list_tables(ns)}
    assert names <= listed
    for key, facts in expected_seed["tables"].items():
        tbl = cat.load_table((facts["schema"], facts["table"]))
        tasks = list(tbl.scan().plan_files())
        files = [t.file for t in tasks]
        assert len(files) == facts["data_files"], key
        assert sum(f.file_size_in_bytes for f in files) == facts["total_bytes"], key
        assert sum(f.record_count for f in files) == facts["records"], key
        assert sum(1 for f in files if f.file_size_in_bytes < SMALL) == facts["small_files"], key
        if facts["data_files"] < 2500:
            assert tbl.scan().to_arrow().num_rows == facts["records"], key
        assert len(tbl.metadata.snapshots) == facts["snapshots"], key
        assert tbl.metadata_location == facts["metadata_location"], key
        if tbl.spec().fields:
            assert len({tuple(f.partition) for f in files}) == facts["partitions"], key
        assert {k: tbl.properties[k] for k in facts["properties"]} == facts["properties"], key
        for f in files:
            assert os.path.getsize(f.file_path[len("file://"):]) == f.file_size_in_bytes


@pytest.mark.beside_suite
def test_history_is_valid_and_follows_the_clock(seed, expected_seed):
    cat = catalog(seed)
    now = expected_seed["generated_at_ms"]
    for facts in expected_seed["tables"].values():
        md = cat.load_table((facts["schema"], facts["table"])).metadata
        snaps = md.snapshots
        assert [s.sequence_number for s in snaps] == list(range(1, len(snaps) + 1))
        assert all(a.timestamp_ms < b.timestamp_ms for a, b in zip(snaps, snaps[1:]))
        assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(snaps, snaps[1:]))
        assert all(s.timestamp_ms < now for s in snaps)
        assert [e.snapshot_id for e in md.snapshot_log] == [s.snapshot_id for s in snaps]
        assert md.last_sequence_number == len(snaps)
        for e in md.metadata_log:
            assert os.path.exists(e.metadata_file[len("file://"):])
        if snaps:
            assert md.current_snapshot_id == facts["current_snapshot_id"] == snaps[-1].snapshot_id
            assert md.last_updated_ms == snaps[-1].timestamp_ms


@pytest.mark.beside_suite
def test_seed_tables_have_their_promised_shapes(seed, expected_seed):
    t = expected_seed["tables"]
    now = expected_seed["generated_at_ms"]
    docs = t["zoning.documents"]
    assert docs["partitioning"] == ["district", "day(filed_at)"]
    assert 1800 <= docs["data_files"] <= 2300 and docs["max_file_bytes"] < 20_000
    assert abs(docs["last_replace"]["committed_at_ms"] - (now - 15 * DAY)) < 1000
    assert docs["operations"] == {"append": 45, "replace": 1}
    assert now - docs["last_write"]["committed_at_ms"] < 3_600_000
    assert docs["small_file_partitions"] > 10
    parcels = t["zoning.parcels"]
    assert parcels["properties"]["write.target-file-size-bytes"] == "65536"
    assert parcels["min_file_bytes"] >= 65536 and parcels["newest_snapshot"]["operation"] == "replace"
    # Healthy on every rule: no snapshot older than the 7-day retention either.
    assert now - parcels["oldest_snapshot"]["committed_at_ms"] < 7 * DAY
    permits = t["zoning.permits"]
    assert permits["partitioning"] == ["status"] and "replace" not in permits["operations"]
    assert permits["data_files"] >= 100
    assert t["zoning.inspections"]["partitioning"] == [] and t["zoning.inspections"]["partitions"] == 1
    events = t["audit.events"]
    assert events["snapshots"] >= 300 and now - events["oldest_snapshot"]["committed_at_ms"] > 30 * DAY
    staging = t["zoning.staging"]
    assert staging["snapshots"] == 0 and staging["data_files"] == 0 and staging["current_snapshot_id"] is None
    assert 'finance.ledger "q3" it\'s-odd' in t
    budget = t["finance.budget"]
    assert budget["partitioning"] == ["fiscal_year", "region"]
    assert [f["type"] for f in budget["partition_fields"]] == ["integer", "varchar"]
    assert budget["partitions"] == 12 and budget["small_file_partitions"] == 12
    assert all(p["small_files"] >= 12 for p in budget["small_file_partition_list"])


@pytest.mark.beside_suite
def test_file_modified_times_are_the_commit_times(seed, expected_seed):
    cat = catalog(seed)
    facts = expected_seed["tables"]["zoning.permits"]
    tbl = cat.load_table(("zoning", "permits"))
    commit_ms = {s.timestamp_ms for s in tbl.metadata.snapshots}
    for task in tbl.scan().plan_files():
        mtime_ms = os.stat(task.file.file_path[len("file://"):]).st_mtime_ns // 1_000_000
        assert mtime_ms in commit_ms
    assert facts["data_files"] == len(list(tbl.scan().plan_files()))


@pytest.mark.beside_suite
def test_scale_scenario_small(tmp_path):
    out = tmp_path / "scale"
    generate("--scenario", "scale", "--tables", "60", "--out", str(out))
    exp = json.loads((out / "expected.json").read_text())
    assert exp["scenario"] == "scale" and len(exp["tables"]) == 60
    assert len({t["schema"] for t in exp["tables"].values()}) == 10
    cat = catalog(out)
    for key, facts in list(exp["tables"].items())[:20]:
        tbl = cat.load_table((facts["schema"], facts["table"]))
        files = [f.file for f in tbl.scan().plan_files()]
        assert len(files) == facts["data_files"] and sum(f.record_count for f in files) == facts["records"], key
        assert len(tbl.metadata.snapshots) == facts["snapshots"], key
    sizes = {t["size_class"] for t in exp["tables"].values()}
    assert {"tiny", "small", "medium", "critical"} <= sizes
    # the fleet's incident: more than 100 small files in one partition, never compacted
    (critical,) = [t for t in exp["tables"].values() if t["size_class"] == "critical"]
    assert critical["data_files"] >= 150 and critical["partitions"] == 1, critical
    # most of the fleet reads as Trino or Spark write it; every fifth as pyiceberg does
    writers = [t["writer"] for t in exp["tables"].values()]
    assert writers.count("pyiceberg") == 12 and writers.count("trino") == 48, writers
    for key, facts in list(exp["tables"].items())[:10]:
        tbl = cat.load_table((facts["schema"], facts["table"]))
        ids = {t.file.sort_order_id for t in tbl.scan().plan_files()}
        assert ids == ({None} if facts["writer"] == "pyiceberg" else {0}), (key, ids)


@pytest.mark.beside_suite
def test_scale_scenario_holds_huge_tables_when_large_enough():
    """Tables of 20,000+ files at fixed places of a fleet large enough to hold them."""
    from lab.scenarios.scale import HUGE_AT, HUGE_FILES, _plan

    plans = [_plan(i, 7) for i in range(1000)]
    huge = [p for p in plans if p["class"] == "huge"]
    assert [p["i"] for p in huge] == list(HUGE_AT)
    assert all(HUGE_FILES[0] <= p["files"] <= HUGE_FILES[1] for p in huge)
    assert sum(p["class"] in ("tiny", "small") for p in plans) > 600


def _fleet(tmp_path: Path, writers: str, n: int, now: str = "1790000000") -> tuple[Path, dict]:
    out = tmp_path / f"scale_{writers}"
    generate("--scenario", "scale", "--writers", writers, "--tables", str(n), "--now", now, "--out", str(out))
    return out, json.loads((out / "expected.json").read_text())


@pytest.mark.beside_suite
def test_pyiceberg_fleet_is_written_the_way_pyiceberg_writes(tmp_path):
    """The all-pyiceberg fleet: identity partitions by region (2-6), a few to two dozen small
    files, no sort order id on any data file, fast appends (one manifest a commit, none
    merged), pyiceberg's summaries and no table properties, one table in three compacted,
    every data file dated by its commit."""
    out, exp = _fleet(tmp_path, "pyiceberg", 60)
    tables = exp["tables"]
    assert exp["writers"] == "pyiceberg" and len(tables) == 60
    assert len({t["schema"] for t in tables.values()}) == 10
    assert {t["writer"] for t in tables.values()} == {"pyiceberg"}
    cat = catalog(out)
    for key, facts in tables.items():
        tbl = cat.load_table((facts["schema"], facts["table"]))
        md = tbl.metadata
        assert facts["partitioning"] == ["region"], key
        assert 2 <= facts["partitions"] <= 6, key
        assert dict(md.properties) == {} and facts["properties"] == {}, key
        files = [t.file for t in tbl.scan().plan_files()]
        assert len(files) == facts["data_files"] == facts["small_files"], key
        assert {f.sort_order_id for f in files} == {None}, key
        commit_ms = {s.timestamp_ms for s in md.snapshots}
        for f in files:
            assert os.stat(f.file_path[len("file://"):]).st_mtime_ns // 1_000_000 in commit_ms, key
        for snap in md.snapshots:
            summary = snap.summary.additional_properties
            assert not {"engine-name", "trino_query_id", "iceberg-version"} & set(summary), key
        manifests = md.current_snapshot().manifests(tbl.io)
        if facts["compaction"] == "never":
            # a fast append writes one manifest and keeps every earlier one
            assert facts["operations"] == {"append": facts["snapshots"]}, key
            assert len(manifests) == facts["manifests"], key
            assert len(manifests) == facts["snapshots"], key
            assert 4 <= facts["data_files"] <= 24, key
        else:
            assert facts["operations"]["replace"] == 1, key
    compactions = [t["compaction"] for t in tables.values()]
    assert compactions.count("never") == 40
    assert {"recent", "writes_since", "stale"} <= set(compactions)
    # table sizes either side of min_small_files (12)
    assert any(t["small_files"] >= 12 for t in tables.values())
    assert any(t["small_files"] < 12 for t in tables.values())


@pytest.mark.beside_suite
def test_pyiceberg_fleet_expected_verdicts(tmp_path):
    """expected.json says what floe's small-file and staleness rules make of each table: a
    table of 12 small files or more never compacted is WARNING (never compacted, capped: its
    small files cost a reader little), one recently compacted is OK, one compacted days ago
    with loads since is stale."""
    _out, exp = _fleet(tmp_path, "pyiceberg", 90)
    tables = list(exp["tables"].values())
    for t in tables:
        v = t["verdict"]
        if t["small_files"] < 12:
            assert v["status"] == "OK" and v["small_files"] is None and v["staleness"] is None, t["table"]
        else:
            assert v["status"] == "WARNING" and v["small_files"] == "WARNING", t["table"]
        if t["compaction"] == "never" and t["small_files"] >= 12:
            assert v["staleness"] == {"rule": "never_compacted", "severity": "WARNING"}, t["table"]
        if t["compaction"] == "recent":
            assert v["status"] == "OK" and t["data_files"] <= t["partitions"], t["table"]
    stale = [t for t in tables if t["compaction"] == "stale" and t["small_files"] >= 12]
    assert stale and all(t["verdict"]["staleness"]["rule"] == "compaction_stale" for t in stale)
    by_status = {s: sum(t["verdict"]["status"] == s for t in tables) for s in ("OK", "WARNING", "CRITICAL")}
    assert by_status["OK"] > 0 and by_status["WARNING"] > 0 and by_status["CRITICAL"] == 0, by_status


@pytest.mark.beside_suite
def test_trino_fleet_is_the_mixed_fleet_written_the_java_way(tmp_path):
    """The all-Trino fleet is the mixed fleet table for table, with sort order id 0 on every
    data file: only the mixed fleet's pyiceberg-written fifth changes writer."""
    _, mixed = _fleet(tmp_path, "mixed", 30)
    out, trino = _fleet(tmp_path, "trino", 30)
    assert trino["writers"] == "trino" and mixed["writers"] == "mixed"
    assert list(trino["tables"]) == list(mixed["tables"])
    for key, t in trino["tables"].items():
        m = mixed["tables"][key]
        for fact in ("data_files", "small_files", "partitions", "snapshots", "manifests", "operations",
                     "size_class", "records", "total_bytes"):
            assert t[fact] == m[fact], (key, fact)
        assert t["writer"] == "trino" and t["verdict"]["status"] == m["verdict"]["status"], key
    assert [t["writer"] for t in mixed["tables"].values()].count("pyiceberg") == 6
    cat = catalog(out)
    for facts in list(trino["tables"].values())[:10]:
        tbl = cat.load_table((facts["schema"], facts["table"]))
        assert {t.file.sort_order_id for t in tbl.scan().plan_files()} == {0}, facts["table"]


@pytest.mark.beside_suite
def test_scale_expected_verdicts_name_the_critical_tables(tmp_path):
    """The mixed fleet's CRITICAL table of each schema (one partition of 150-200 small files,
    never compacted) is CRITICAL in expected.json, and nothing else is."""
    _out, exp = _fleet(tmp_path, "mixed", 150)
    critical = sorted(k for k, t in exp["tables"].items() if t["verdict"]["status"] == "CRITICAL")
    assert critical == sorted(k for k, t in exp["tables"].items() if t["size_class"] == "critical")
    assert len(critical) == 2


HOSTILE_REGIONS = {"north", "a'b\"c", "Zürich-東京", "\x1b[2J", "\u202eevil", "line1\nline2"}


def test_budget_through_the_lab(connect):
    """finance.budget: identity partitions named like transforms, hostile partition values and
    a column COMMENT that looks like the partitioning property, as Trino prints them."""
    cur = connect().cursor()
    cur.execute("SHOW CREATE TABLE iceberg.finance.budget")
    text = cur.fetchall()[0][0]
    assert text.startswith("CREATE TABLE iceberg.finance.budget (\n   line_id bigint,\n   fiscal_year integer,\n")
    assert "   note varchar COMMENT 'free text; partitioning = ARRAY[''month(ts)'']'\n)\nWITH (\n" in text
    assert "   partitioning = ARRAY['fiscal_year','region']\n" in text
    assert "   format = 'PARQUET',\n" in text
    cur.execute('SELECT partition.fiscal_year, partition.region, file_count FROM iceberg.finance."budget$partitions"')
    rows = cur.fetchall()
    assert {r[0] for r in rows} == {2025, 2026}
    assert {r[1] for r in rows} == HOSTILE_REGIONS
    assert all(r[2] == 14 for r in rows) and len(rows) == 12
    cur.execute('SELECT DISTINCT partition.region FROM iceberg.finance."budget$files"')
    assert {r[0] for r in cur.fetchall()} == HOSTILE_REGIONS
    cur.execute("SELECT count(*) FROM iceberg.finance.budget WHERE fiscal_year = 2026 AND region = 'a''b\"c'")
    assert cur.fetchall()[0][0] > 0


@pytest.mark.beside_suite
def test_the_delta_scenario_dates_its_commits_and_counts_its_files(tmp_path):
    """delta-rs's tables, each commit at the time the scenario says (its log's commitInfo),
    with the facts expected.json keeps."""
    import json as _json
    import time as _time

    from deltalake import DeltaTable

    from ..scenarios.delta import DAY_MS, build_delta

    now = int(_time.time() * 1000)
    tables = build_delta(tmp_path, now)
    orders = tables["sales.orders"]
    assert (orders["data_files"], orders["small_files"], orders["partitions"]) == (45, 45, 4)
    assert abs(orders["last_optimize_ms"] - (now - 12 * DAY_MS)) < 1000
    assert tables["web.clicks"]["last_optimize_ms"] is None
    history = DeltaTable(str(tmp_path / "warehouse" / "web" / "clicks")).history()
    oldest = min(h["timestamp"] for h in history)
    assert now - 5 * DAY_MS - 1000 <= oldest <= now - 4 * DAY_MS, "dated five days back"
    assert _json.dumps(tables)  # expected.json holds it


@pytest.mark.beside_suite
def test_the_delta_fleet_adds_its_tables_and_leaves_the_others_as_they_were(tmp_path):
    """`--delta-fleet N` (the fleet bench's Delta fleet): N tables more under fleet_0..3,
    every other one partitioned, one in three with an OPTIMIZE; the scenario's own tables
    unchanged."""
    import time as _time

    from ..scenarios.delta import build_delta

    now = int(_time.time() * 1000)
    base = build_delta(tmp_path / "a", now)
    tables = build_delta(tmp_path / "b", now, fleet=6)
    fleet = {k: v for k, v in tables.items() if k.startswith("fleet_")}
    assert sorted(fleet) == ["fleet_0.t_000", "fleet_0.t_004", "fleet_1.t_001", "fleet_1.t_005",
                             "fleet_2.t_002", "fleet_3.t_003"]
    assert [fleet[f"fleet_{k % 4}.t_{k:03d}"]["partitions"] > 0 for k in range(6)] == [True, False] * 3
    assert [fleet[f"fleet_{k % 4}.t_{k:03d}"]["last_optimize_ms"] is not None for k in range(6)] == \
        [True, False, False, True, False, False]
    for name, facts in base.items():
        assert {k: v for k, v in tables[name].items() if k != "location"} == \
            {k: v for k, v in facts.items() if k != "location"}, name
