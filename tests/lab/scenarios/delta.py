"""The `delta` warehouse: Delta Lake tables written by delta-rs (the `deltalake` package),
dated as production tables are (each commit's time in its log, its files' modification
times), for the real Trino's Delta Lake catalog beside the Iceberg one.

- `sales.orders`: partitioned by region, a load a few hours apart for three weeks, each
  one small file in each region it touches; delta-rs's `OPTIMIZE` twelve days ago, loads
  since: a stale compaction with many small files waiting.
- `web.clicks`: unpartitioned, forty small appends over five days, never optimized.
- `sales.customers`: two writes of one file each: healthy.

`expected.json` holds each table's facts at the generator's clock (live data files, files
under the small-file line, partitions, the newest OPTIMIZE). The lab registers the tables
in the catalog (`CALL delta.system.register_table`) once the real Trino runs, and writes
the Trino-written ones there itself (see realtrino.create_delta_tables).
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
REGIONS = ["emea", "amer", "apac", "latam"]
# floe's default small-file line: 3/4 of a 128 MiB target
SMALL_LINE = int(128 * 1024 * 1024 * 0.75)


def _batch(rnd: random.Random, n: int, regions: list[str], start: int):
    import pyarrow as pa

    return pa.table({
        "order_id": pa.array(range(start, start + n), pa.int64()),
        "region": pa.array([regions[i % len(regions)] for i in range(n)]),
        "amount": pa.array([round(rnd.uniform(1, 500), 2) for _ in range(n)], pa.float64()),
        "note": pa.array([f"order {start + i}" for i in range(n)]),
    })


def _redate(root: Path, times: list[int]) -> None:
    """Give each commit of the table at `root` its time: `times[v]` (ms) for version v, in
    its commitInfo, its add and remove actions, and the modification times of its log file
    and of the data files it added."""
    log = root / "_delta_log"
    for v, ts in enumerate(times):
        path = log / f"{v:020d}.json"
        lines = []
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            action = json.loads(line)
            if "commitInfo" in action:
                action["commitInfo"]["timestamp"] = ts
            if "add" in action:
                action["add"]["modificationTime"] = ts
                data = root / action["add"]["path"]
                if data.exists():
                    os.utime(data, (ts / 1000, ts / 1000))
            if "remove" in action:
                action["remove"]["deletionTimestamp"] = ts
            lines.append(json.dumps(action, separators=(",", ":")))
        path.write_text("\n".join(lines) + "\n")
        os.utime(path, (ts / 1000, ts / 1000))


def _facts(root: Path, partitioned: bool, now_ms: int) -> dict[str, Any]:
    from deltalake import DeltaTable

    dt = DeltaTable(str(root))
    adds = dt.get_add_actions(flatten=True)
    import pyarrow as pa

    adds = pa.table(adds)
    sizes = adds.column("size_bytes").to_pylist()
    parts = set()
    if partitioned:
        parts = set(adds.column("partition.region").to_pylist())
    optimize = [h for h in dt.history() if h.get("operation") == "OPTIMIZE"]
    return {
        "format": "delta",
        "data_files": len(sizes),
        "small_files": sum(1 for s in sizes if s < SMALL_LINE),
        "total_bytes": sum(sizes),
        "partitions": len(parts),
        "version": dt.version(),
        "last_optimize_ms": max((h["timestamp"] for h in optimize), default=None),
        "location": str(root),
    }


# The commits that write no data, as floe reads a Delta history (src/lakehouse/delta.rs):
# the newest of the others is the table's last write.
NOT_WRITES = {
    "OPTIMIZE", "VACUUM START", "VACUUM END", "CREATE TABLE", "CREATE OR REPLACE TABLE",
    "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "ADD COLUMNS", "CHANGE COLUMN", "DROP COLUMNS",
    "RENAME COLUMN", "COMMENT", "SET COLUMN COMMENT", "ADD CONSTRAINT", "DROP CONSTRAINT",
    "UPGRADE PROTOCOL", "RESTORE",
}


def _verdict(root: Path, partitioned: bool, now_ms: int) -> dict[str, Any]:
    """What floe's small-file and staleness rules (default thresholds, as expected.py's
    `verdict` states them for Iceberg) say of the Delta table at `root`, from its live
    files' real sizes and its history: a Delta table's staleness is its newest OPTIMIZE's
    age while a write came after it (no per-file date)."""
    from deltalake import DeltaTable
    import pyarrow as pa

    from .expected import (CRITICAL_PARTITION_SMALL_FILES, DEFAULT_TARGET_FILE_SIZE,
                           SMALL_PARTITION_MIN_FILES, judge)

    target = DEFAULT_TARGET_FILE_SIZE
    dt = DeltaTable(str(root))
    adds = pa.table(dt.get_add_actions(flatten=True))
    sizes = adds.column("size_bytes").to_pylist()
    keys = adds.column("partition.region").to_pylist() if partitioned else [None] * len(sizes)
    parts: dict[Any, list[int]] = {}
    for k, size in zip(keys, sizes):
        p = parts.setdefault(k, [0, 0, 0])
        p[0] += 1
        p[1] += size
        p[2] += size < SMALL_LINE
    files, total = len(sizes), sum(sizes)
    small = sum(1 for x in sizes if x < SMALL_LINE)
    excess = min(max(0, files - -(-total // target)), small)
    critical_partitions = sum(
        1 for n, b, sm in parts.values()
        if sm >= CRITICAL_PARTITION_SMALL_FILES and b <= (n - CRITICAL_PARTITION_SMALL_FILES) * target
    ) if partitioned else 0
    small_partitions = sum(1 for _, _, sm in parts.values() if sm >= SMALL_PARTITION_MIN_FILES) if partitioned else 0
    max_partition_small = max((sm for _, _, sm in parts.values()), default=0)
    history = dt.history()
    optimized = max((h["timestamp"] for h in history if h.get("operation") == "OPTIMIZE"), default=None)
    written = max((h["timestamp"] for h in history if h.get("operation") not in NOT_WRITES), default=None)
    # what waits is what came after the newest OPTIMIZE (a Delta table dates no file)
    waited = (now_ms - optimized
              if optimized is not None and written is not None and written > optimized else None)
    small_sev, stale, worst = judge(
        small, excess, critical_partitions, small_partitions, max_partition_small,
        total // max(1, files) < SMALL_LINE, optimized is not None, waited)
    return {"status": worst, "small_files": small_sev, "staleness": stale,
            "excess_files": excess, "max_partition_small_files": max_partition_small}


def build_delta(out: Path, now_ms: int, seed: int = 20261206, fleet: int = 0) -> dict[str, dict[str, Any]]:
    """Write the warehouse under `out/warehouse`; each table's facts by `schema.table`;
    `fleet` more tables for the fleet bench (see `build_fleet_table`)."""
    from deltalake import DeltaTable, write_deltalake

    rnd = random.Random(seed)
    wh = out / "warehouse"
    tables: dict[str, dict[str, Any]] = {}

    # sales.orders: 3 weeks of loads, OPTIMIZE 12 days ago, loads since
    root = wh / "sales" / "orders"
    times = []
    start = now_ms - 21 * DAY_MS
    optimized_at = now_ms - 12 * DAY_MS
    loads_before = [start + i * (optimized_at - start - HOUR_MS) // 19 for i in range(20)]
    loads_after = [optimized_at + HOUR_MS + i * (now_ms - 2 * HOUR_MS - optimized_at) // 27 for i in range(28)]
    n = 0
    for ts in loads_before:
        regions = rnd.sample(REGIONS, rnd.randint(1, 2))
        write_deltalake(str(root), _batch(rnd, 40, regions, n), mode="append", partition_by=["region"])
        n += 40
        times.append(ts)
    DeltaTable(str(root)).optimize.compact()
    times.append(optimized_at)
    for ts in loads_after:
        regions = rnd.sample(REGIONS, rnd.randint(1, 2))
        write_deltalake(str(root), _batch(rnd, 40, regions, n), mode="append", partition_by=["region"])
        n += 40
        times.append(ts)
    _redate(root, times)
    tables["sales.orders"] = {**_facts(root, True, now_ms), "writer": "delta-rs",
                              "verdict": "stale OPTIMIZE, small files waiting"}

    # web.clicks: 40 small appends over 5 days, never optimized
    root = wh / "web" / "clicks"
    times = []
    for i in range(40):
        write_deltalake(str(root), _batch(rnd, 25, ["web"], i * 25), mode="append")
        times.append(now_ms - 5 * DAY_MS + i * (5 * DAY_MS - HOUR_MS) // 39)
    _redate(root, times)
    tables["web.clicks"] = {**_facts(root, False, now_ms), "writer": "delta-rs",
                            "verdict": "never optimized, small files"}

    # sales.customers: two writes, healthy
    root = wh / "sales" / "customers"
    times = []
    for i in range(2):
        write_deltalake(str(root), _batch(rnd, 100, ["all"], i * 100), mode="append")
        times.append(now_ms - (3 - i) * DAY_MS)
    _redate(root, times)
    tables["sales.customers"] = {**_facts(root, False, now_ms), "writer": "delta-rs", "verdict": "healthy"}
    for k in range(fleet):
        name = f"fleet_{k % 4}.t_{k:03d}"
        tables[name] = build_fleet_table(wh / f"fleet_{k % 4}" / f"t_{k:03d}", k, rnd, now_ms)
    return tables


def build_fleet_table(root: Path, k: int, rnd: random.Random, now_ms: int) -> dict[str, Any]:
    """One table of the fleet bench's Delta fleet: every other one partitioned by region
    (2-4 regions), 4-20 small loads over the last ten days, one in three with an OPTIMIZE
    halfway through its loads."""
    from deltalake import DeltaTable, write_deltalake

    partitioned = k % 2 == 0
    regions = REGIONS[: 2 + k % 3] if partitioned else ["all"]
    loads = rnd.randint(4, 20)
    optimize_at = loads // 2 if k % 3 == 0 else None
    start = now_ms - 10 * DAY_MS
    step = (10 * DAY_MS - HOUR_MS) // loads
    times = []
    for i in range(loads):
        if i == optimize_at:
            DeltaTable(str(root)).optimize.compact()
            times.append(start + i * step - HOUR_MS // 2)
        batch = _batch(rnd, 10, rnd.sample(regions, min(2, len(regions))), i * 10)
        write_deltalake(str(root), batch, mode="append", partition_by=["region"] if partitioned else None)
        times.append(start + i * step)
    _redate(root, times)
    return {**_facts(root, partitioned, now_ms), "writer": "delta-rs",
            "verdict": _verdict(root, partitioned, now_ms)}
