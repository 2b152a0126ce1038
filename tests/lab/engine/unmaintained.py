"""control("unmaintained_table"): a small table that never ran expire_snapshots.

`snapshots` appends (default 3), one a day, the newest `days_ago` days before now (default
30), one small data file each: every snapshot but the current one is past a 7-day
retention, and since nothing was ever rewritten or deleted they pin no data file. This is
what most tables of a real lakehouse look like, and what must not read as a WARNING.

The table is written as the scenario generator writes its tables (`HistoryWriter`: pyiceberg's
Parquet, manifest and metadata writers under a backdated clock) into its own location, and
registered under `target` (its schema is created when missing): isolated from every other
table, like a clone.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

import pyarrow as pa
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

from ..common.errors import TrinoError
from .clone import _split, make_room

if TYPE_CHECKING:
    from .core import Engine

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
MAX_SNAPSHOTS = 1000


def _number(payload: dict, key: str, default, lo, hi):
    v = payload.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise TrinoError("INVALID_ARGUMENTS", f"unmaintained_table: {key} must be a number in [{lo}, {hi}], got {v!r}")
    return v


def unmaintained_table(engine: "Engine", payload: dict) -> dict:
    from ..scenarios.history import HistoryWriter
    from ..scenarios.seed import BASE_PROPERTIES, trino_extra

    if not payload.get("target"):
        raise TrinoError("INVALID_ARGUMENTS", "unmaintained_table needs target")
    n = int(_number(payload, "snapshots", 3, 1, MAX_SNAPSHOTS))
    days_ago = float(_number(payload, "days_ago", 30, 0, 3650))
    default_catalog = payload.get("catalog") or ("iceberg" if "iceberg" in engine.warehouses
                                                 else next(iter(engine.warehouses)))
    cat, ns, name = _split(payload["target"], default_catalog)
    w = engine.warehouse_or_error(cat)
    rnd = random.Random(f"{cat}.{ns}.{name}")
    now_ms = int(time.time() * 1000)
    newest = now_ms - int(days_ago * DAY_MS)
    first = newest - (n - 1) * DAY_MS
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
        NestedField(3, "updated_at", TimestamptzType(), required=False),
    )
    with engine.table_lock(cat, ns, name):
        location = make_room(w, cat, ns, name, bool(payload.get("replace")))
        hw = HistoryWriter(
            io=w.catalog._load_file_io(location=str(w.dir / "warehouse")),
            schema=schema,
            spec=PartitionSpec(),
            location=location,
            properties=dict(BASE_PROPERTIES),
            created_ms=first - HOUR_MS,
            rnd=rnd,
        )
        for i in range(n):
            ts = first + i * DAY_MS
            rows = pa.table({
                "id": pa.array([i * 10 + k for k in range(10)], pa.int64()),
                "name": pa.array([f"row {i}-{k}" for k in range(10)], pa.string()),
                "updated_at": pa.array([ts * 1000] * 10, pa.timestamp("us", tz="UTC")),
            })
            files = hw.write_partitioned([((), rows)], ts)
            hw.append(files, ts, trino_extra(ts, "ingest", rnd))
        loc = hw.finish()
        w.catalog.register_table((ns, name), loc)
    return {
        "catalog": cat, "schema": ns, "table": name, "location": location, "metadata_location": loc,
        "snapshots": n, "data_files": n, "oldest_ms": first, "newest_ms": newest,
    }
