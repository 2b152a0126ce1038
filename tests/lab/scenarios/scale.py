"""The scale scenario (catalog `scale`): many tables of varied sizes across 10 schemas.

Three fleets by writer (`--writers`), each served as a catalog of its own by the lab:

- `mixed` (catalog `scale`): 80 % of the tables written the way Trino and Spark write
  (Iceberg's Java library: sort order id 0 on every data file, merging appends), 20 % the
  way pyiceberg writes, a few of 20,000+ files, one CRITICAL table a schema;
- `trino` (catalog `scale_trino`): the same fleet, table for table, every table written the
  Java way;
- `pyiceberg` (catalog `scale_pyiceberg`): every table written the way pyiceberg writes
  (no sort order id on its data files, so the real Trino 476 fails `$entries` on them; fast
  appends, one new manifest a commit; pyiceberg's own snapshot summaries and no table
  properties), identity-partitioned by region into 2-6 partitions, 4-24 small files, one
  table in three compacted (a `replace` commit: recently, a day ago with writes since, or
  days ago with writes since).

Speed comes from writing a small set of template Parquet files once (per partition value and
size) and giving every table its own copies, with the statistics read once from the
templates; tables are built in two worker processes and registered in one transaction.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import shutil
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.manifest import DataFile
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestamptzType

from .expected import table_facts, verdict
from .history import FastDataFileWriter, HistoryWriter, local_path
from .seed import BASE_PROPERTIES, DAY_MS, HOUR_MS, trino_extra

SCHEMAS = ["sales", "marketing", "finance_ops", "logistics", "support", "risk", "hr", "engineering",
           "legal", "telemetry"]
PREFIXES = ["orders", "events", "metrics", "customers", "invoices", "sessions", "shipments", "tickets"]
REGIONS = ["emea", "amer", "apac", "latam"]
# the pyiceberg fleet's tables hold up to six region partitions
REGIONS_MORE = ["mena", "anz"]
WRITERS = ("mixed", "pyiceberg", "trino")
SIZES = {"s": (20, 60), "m": (400, 900), "l": (3000, 5000)}
# Every CRITICAL_EVERY-th table from CRITICAL_AT on is CRITICAL (more than 100 small files in
# one partition): 97 is prime to the 10 schemas, so each schema gets one, none first in its list.
CRITICAL_EVERY, CRITICAL_AT = 97, 50
# Every PYICEBERG_EVERY-th table is written as pyiceberg's own writer writes (no sort order id
# on its data files: Trino 476 fails `$entries` on it, so readers take their `$files`
# fallback); the rest as Trino and Spark write (sort order 0), as most of a real fleet is.
PYICEBERG_EVERY, PYICEBERG_AT = 5, 3
# A few tables of 20,000+ files (a streaming sink nobody compacts), as real fleets have: at
# these indexes when the fleet is that large, unpartitioned, of the smallest template files.
HUGE_AT = (211, 733)
HUGE_FILES = (20_000, 22_000)


def _schema() -> Schema:
    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "region", StringType(), required=False),
        NestedField(3, "ts", TimestamptzType(), required=False),
        NestedField(4, "amount", DoubleType(), required=False),
        NestedField(5, "note", StringType(), required=False),
    )


def _spec(kind: str) -> PartitionSpec:
    if kind == "region":
        return PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))
    if kind == "day":
        return PartitionSpec(PartitionField(source_id=3, field_id=1000, transform=DayTransform(), name="ts_day"))
    return PartitionSpec()


def _rows(rnd: random.Random, n: int, region: str, day_ms: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "region": pa.array([region] * n, pa.string()),
        "ts": pa.array([v * 1000 for v in rnd.choices(range(day_ms, day_ms + DAY_MS - 1, 997), k=n)],
                       pa.timestamp("us", tz="UTC")),
        "amount": pa.array([round(rnd.random() * 1000, 2) for _ in range(n)], pa.float64()),
        "note": pa.array(rnd.choices(["ok", "late", "retry", "manual", "auto"], k=n), pa.string()),
    })


class Templates:
    """Template files per (partition kind, partition value, size): written once, copied per table."""

    def __init__(self, out: Path, now_ms: int, seed: int, more_regions: bool = False) -> None:
        from .catalog import open_catalog

        self.dir = out / "warehouse" / ".templates"
        self.now = now_ms
        self.rnd = random.Random(seed)
        self.catalog = open_catalog(out)
        self.days = [(now_ms - i * DAY_MS) - (now_ms - i * DAY_MS) % DAY_MS for i in range(40)]
        self.files: dict[tuple, DataFile] = {}
        io = self.catalog._load_file_io(location=str(self.dir))
        for kind in ("region", "day", "none"):
            w = HistoryWriter(io=io, schema=_schema(), spec=_spec(kind), location=f"file://{self.dir}/{kind}",
                              properties=dict(BASE_PROPERTIES), created_ms=now_ms, rnd=self.rnd)
            fast = FastDataFileWriter(w.metadata, io)
            for size, (lo, hi) in SIZES.items():
                if kind == "region":
                    for r in REGIONS:
                        self.files[(kind, r, size)] = fast.write_one((r,), _rows(self.rnd, self.rnd.randint(lo, hi), r, self.days[0]))
                elif kind == "day":
                    for d in self.days:
                        self.files[(kind, d // DAY_MS, size)] = fast.write_one(
                            (d // DAY_MS,), _rows(self.rnd, self.rnd.randint(lo, hi), "emea", d))
                else:
                    self.files[(kind, None, size)] = fast.write_one(None, _rows(self.rnd, self.rnd.randint(lo, hi), "emea", self.days[0]))
        if more_regions:
            # a random stream of their own: the other fleets' templates stay as they were
            rnd = random.Random(seed + 1)
            w = HistoryWriter(io=io, schema=_schema(), spec=_spec("region"), location=f"file://{self.dir}/region-more",
                              properties=dict(BASE_PROPERTIES), created_ms=now_ms, rnd=rnd)
            fast = FastDataFileWriter(w.metadata, io)
            for size, (lo, hi) in SIZES.items():
                for r in REGIONS_MORE:
                    self.files[("region", r, size)] = fast.write_one((r,), _rows(rnd, rnd.randint(lo, hi), r, self.days[0]))


_TEMPLATES: Templates | None = None


def _copy_file(t: DataFile, new_uri: str, mtime_ms: int, sort_order_id: int | None) -> DataFile:
    dst = local_path(new_uri)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copyfile(local_path(t.file_path), dst)
    os.utime(dst, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    df = DataFile.from_args(
        content=t.content, file_path=new_uri, file_format=t.file_format, partition=t.partition,
        record_count=t.record_count, file_size_in_bytes=t.file_size_in_bytes, column_sizes=t.column_sizes,
        value_counts=t.value_counts, null_value_counts=t.null_value_counts, nan_value_counts=t.nan_value_counts,
        lower_bounds=t.lower_bounds, upper_bounds=t.upper_bounds, key_metadata=None, split_offsets=t.split_offsets,
        equality_ids=None, sort_order_id=sort_order_id,
    )
    df.spec_id = 0
    return df


def _plan(i: int, seed: int, writers: str = "mixed") -> dict[str, Any]:
    """Table `i` of the fleet written by `writers` (see the module's doc)."""
    if writers == "pyiceberg":
        return _pyiceberg_plan(i, seed)
    plan = _java_plan(i, seed)
    if writers == "trino":
        plan["sort_order_id"] = 0
    return plan


def _java_plan(i: int, seed: int) -> dict[str, Any]:
    rnd = random.Random(seed * 7919 + i)
    schema = SCHEMAS[i % len(SCHEMAS)]
    name = f"{PREFIXES[(i // len(SCHEMAS)) % len(PREFIXES)]}_{i // len(SCHEMAS):03d}"
    kind = rnd.choices(["region", "day", "none"], weights=[6, 3, 1])[0]
    cls = rnd.choices(["tiny", "small", "medium", "large"], weights=[40, 30, 20, 10])[0]
    files = {"tiny": (1, 3), "small": (4, 12), "medium": (13, 40), "large": (41, 120)}[cls]
    plan = {"i": i, "schema": schema, "name": name, "kind": kind, "class": cls,
            "files": rnd.randint(*files), "commits": rnd.randint(1, 4), "replace": rnd.random() < 0.15,
            "stale_days": rnd.choice([0, 0, 0, 1, 2, 5, 12, 35]), "seed": seed * 104729 + i,
            "sort_order_id": None if i % PYICEBERG_EVERY == PYICEBERG_AT else 0}
    if i in HUGE_AT:
        plan.update({"kind": "none", "class": "huge", "files": rnd.randint(*HUGE_FILES),
                     "commits": rnd.randint(20, 30), "replace": False, "stale_days": 2})
    if i % CRITICAL_EVERY == CRITICAL_AT:
        # the incident of the fleet: a streaming load's small files piling up in one partition,
        # never compacted; one such table in every schema, at a different place in each listing
        plan.update({"kind": "region", "class": "critical", "files": rnd.randint(150, 200),
                     "commits": rnd.randint(12, 20), "replace": False, "stale_days": 12})
    return plan


# The pyiceberg fleet: one table in PY_COMPACTED_EVERY compacted, by turns recently (the
# compaction the newest commit), a few hours ago with loads since (the small files wait less
# than compaction_warn) and days ago with loads since (stale).
PY_COMPACTED_EVERY, PY_COMPACTED_AT = 3, 1
PY_COMPACTIONS = ("recent", "writes_since", "stale")


def _pyiceberg_plan(i: int, seed: int) -> dict[str, Any]:
    rnd = random.Random(seed * 7919 + i)
    files = rnd.randint(4, 24)
    compaction = None
    if i % PY_COMPACTED_EVERY == PY_COMPACTED_AT:
        compaction = PY_COMPACTIONS[(i // PY_COMPACTED_EVERY) % len(PY_COMPACTIONS)]
    return {"i": i, "schema": SCHEMAS[i % len(SCHEMAS)],
            "name": f"{PREFIXES[(i // len(SCHEMAS)) % len(PREFIXES)]}_{i // len(SCHEMAS):03d}",
            "kind": "region", "class": "many" if files >= 12 else "few", "files": files,
            "partitions": rnd.randint(2, 6), "compaction": compaction,
            "stale_days": rnd.choice([0, 0, 1, 2, 5, 12, 35]),
            "sizes": rnd.choice([[8, 2, 0], [6, 3, 1], [4, 4, 2]]),
            "seed": seed * 104729 + i, "sort_order_id": None, "writer": "pyiceberg"}


def _compact(w: HistoryWriter, ts_r: int, extra: dict[str, str], skip_empty: bool = True) -> None:
    """A compaction: the files of each partition that holds more than one merged into one
    (with nothing to merge, no commit unless `skip_empty` is false: the mixed fleet's
    compaction commits all the same, as it always has)."""
    import pyarrow.parquet as pq

    groups = [fs for fs in w.live_by_partition().values() if len(fs) > 1]
    if not groups and skip_empty:
        return
    removed = [f for fs in groups for f in fs]
    items = []
    for fs in groups:
        tables = [pq.read_table(local_path(f.file_path)) for f in fs]
        items.append((tuple(fs[0].partition), pa.concat_tables(tables)))
    merged = w.write_partitioned(items, ts_r)
    w.replace(removed, merged, ts_r, extra)


def build_pyiceberg_table(plan: dict[str, Any], out: str, now_ms: int) -> tuple[str, str, str, dict]:
    """A table as pyiceberg writes it: each load one `append` of one file in each partition
    it touches, dated by its commit, with pyiceberg's summaries and no table properties."""
    from pyiceberg.io.pyarrow import PyArrowFileIO

    tpl = _TEMPLATES
    rnd = random.Random(plan["seed"])
    io = PyArrowFileIO()
    regions = (REGIONS + REGIONS_MORE)[: plan["partitions"]]
    location = f"file://{out}/warehouse/{plan['schema']}/{plan['name']}-{uuid.UUID(int=rnd.getrandbits(128)).hex}"
    mode = plan["compaction"]
    if mode == "recent":
        compacted = now_ms - rnd.randint(1, 20) * HOUR_MS
        last = compacted - HOUR_MS
    elif mode == "writes_since":
        compacted = now_ms - rnd.randint(6, 20) * HOUR_MS
        last = now_ms - rnd.randint(1, 5) * HOUR_MS
    elif mode == "stale":
        compacted = now_ms - rnd.randint(3, 20) * DAY_MS
        last = now_ms - max(plan["stale_days"] * DAY_MS, HOUR_MS) - rnd.randint(1, 20) * HOUR_MS
        last = max(last, compacted + 2 * HOUR_MS)
    else:
        compacted = None
        last = now_ms - plan["stale_days"] * DAY_MS - rnd.randint(1, 20) * HOUR_MS
    first = (compacted if mode == "stale" else last) - rnd.randint(2, 30) * DAY_MS
    w = HistoryWriter(io=io, schema=_schema(), spec=_spec("region"), location=location, properties={},
                      created_ms=first - HOUR_MS, rnd=rnd, sort_order_id=None, committer="pyiceberg")

    def loads(n: int) -> list[list[str]]:
        out_, left = [], n
        while left > 0:
            k = min(left, rnd.randint(1, len(regions)))
            out_.append(rnd.sample(regions, k))
            left -= k
        return out_

    counter = 0

    def append(parts: list[str], ts: int) -> None:
        nonlocal counter
        files = []
        for r in parts:
            t = tpl.files[("region", r, rnd.choices(["s", "m", "l"], weights=plan["sizes"])[0])]
            uri = (f"{location}/data/{w.spec.partition_to_path(t.partition, w.schema)}/"
                   f"{counter:05d}-0-{uuid.UUID(int=rnd.getrandbits(128))}.parquet")
            counter += 1
            files.append(_copy_file(t, uri, ts, None))
        w.append(files, ts, {})

    def spread(batches: list[list[str]], lo: int, hi: int) -> None:
        n = len(batches)
        for k, parts in enumerate(batches):
            append(parts, lo + (hi - lo) * k // max(1, n - 1) if n > 1 else hi)

    if mode is None:
        spread(loads(plan["files"]), first, last)
    else:
        # the loads before the compaction, then (but for a recent one) the loads since
        before = loads(rnd.randint(len(regions) + 2, 2 * len(regions) + 6))
        spread(before, first, (last if mode == "recent" else compacted) - HOUR_MS)
        _compact(w, compacted, {})
        if mode != "recent":
            since = max(1, plan["files"] - len(w.live_files()))
            spread(loads(since), compacted + HOUR_MS, last)
    metadata_location = w.finish()
    facts = table_facts(plan["schema"], plan["name"], w, metadata_location, {},
                        f"pyiceberg-written, {len(regions)} region partitions, "
                        f"{'never compacted' if mode is None else 'compacted (' + mode + ')'}")
    facts["size_class"] = plan["class"]
    facts["writer"] = "pyiceberg"
    facts["compaction"] = mode or "never"
    facts["verdict"] = verdict(w, now_ms)
    facts.pop("small_file_partition_list", None)
    return plan["schema"], plan["name"], metadata_location, facts


def build_table(plan: dict[str, Any], out: str, now_ms: int) -> tuple[str, str, str, dict]:
    if plan.get("writer") == "pyiceberg":
        return build_pyiceberg_table(plan, out, now_ms)
    from .catalog import open_catalog

    from pyiceberg.io.pyarrow import PyArrowFileIO

    tpl = _TEMPLATES
    rnd = random.Random(plan["seed"])
    io = PyArrowFileIO()
    kind = plan["kind"]
    location = f"file://{out}/warehouse/{plan['schema']}/{plan['name']}-{uuid.UUID(int=rnd.getrandbits(128)).hex}"
    last = now_ms - plan["stale_days"] * DAY_MS - rnd.randint(1, 20) * HOUR_MS
    first = last - rnd.randint(plan["commits"], 30) * DAY_MS
    w = HistoryWriter(io=io, schema=_schema(), spec=_spec(kind), location=location,
                      properties=dict(BASE_PROPERTIES), created_ms=first - HOUR_MS, rnd=rnd,
                      sort_order_id=plan["sort_order_id"])
    n_commits = plan["commits"]
    per = [plan["files"] // n_commits + (1 if k < plan["files"] % n_commits else 0) for k in range(n_commits)]
    times = [first + (last - first) * k // max(1, n_commits - 1) for k in range(n_commits)] if n_commits > 1 else [last]
    size_weights = {"tiny": [8, 2, 0], "small": [6, 3, 1], "medium": [4, 4, 2], "large": [3, 4, 3],
                    "critical": [1, 0, 0], "huge": [1, 0, 0]}[plan["class"]]
    counter = 0
    for k, (count, ts) in enumerate(zip(per, times)):
        if count == 0:
            continue
        files = []
        for _ in range(count):
            size = rnd.choices(["s", "m", "l"], weights=size_weights)[0]
            if kind == "region":
                regions = REGIONS[:1] if plan["class"] == "critical" else REGIONS[: 2 + plan["i"] % 3]
                key = (kind, rnd.choice(regions), size)
            elif kind == "day":
                day = (ts - ts % DAY_MS) // DAY_MS - rnd.randint(0, 2)
                day = max(day, (now_ms - 39 * DAY_MS) // DAY_MS)
                key = (kind, min(day, (now_ms // DAY_MS)), size)
            else:
                key = (kind, None, size)
            t = tpl.files.get(key) or tpl.files[(kind, next(iter(k2[1] for k2 in tpl.files if k2[0] == kind)), size)]
            part = "" if kind == "none" else "/" + w.spec.partition_to_path(t.partition, w.schema)
            uri = f"{location}/data{part}/{counter:05d}-0-{uuid.UUID(int=rnd.getrandbits(128))}.parquet"
            counter += 1
            files.append(_copy_file(t, uri, ts, plan["sort_order_id"]))
        w.append(files, ts, trino_extra(ts, "etl", rnd))
        if plan["replace"] and k == n_commits - 1 and len(w.live_files()) > 1 and kind != "day":
            # a compaction right after the last load: the smallest files of each partition merged
            ts_r = ts + HOUR_MS
            _compact(w, ts_r, trino_extra(ts_r, "airflow", rnd), skip_empty=False)
    metadata_location = w.finish()
    facts = table_facts(plan["schema"], plan["name"], w, metadata_location, dict(BASE_PROPERTIES),
                        f"{plan['class']} table, {kind} partitioning")
    facts["size_class"] = plan["class"]
    facts["writer"] = "pyiceberg" if plan["sort_order_id"] is None else "trino"
    facts["verdict"] = verdict(w, now_ms)
    facts.pop("small_file_partition_list", None)
    return plan["schema"], plan["name"], metadata_location, facts


def _work(args):
    plan, out, now_ms = args
    return build_table(plan, out, now_ms)


def build_scale(catalog, out: Path, now_ms: int, n_tables: int, seed: int,
                writers: str = "mixed") -> dict[str, dict[str, Any]]:
    global _TEMPLATES
    if writers not in WRITERS:
        raise ValueError(f"writers: one of {', '.join(WRITERS)}, not {writers!r}")
    _TEMPLATES = Templates(out, now_ms, seed, more_regions=writers == "pyiceberg")
    plans = [_plan(i, seed, writers) for i in range(n_tables)]
    for s in sorted({p["schema"] for p in plans}):
        catalog.create_namespace(s)
    work = [(p, str(out), now_ms) for p in plans]
    workers = max(1, min(2, os.cpu_count() or 1))
    if workers > 1 and n_tables >= 50:
        ctx = mp.get_context("fork")
        with ctx.Pool(workers) as pool:
            results = pool.map(_work, work, chunksize=max(1, len(work) // (workers * 8)))
    else:
        results = [_work(a) for a in work]
    shutil.rmtree(_TEMPLATES.dir, ignore_errors=True)
    # one transaction for all registrations (each is a row in catalog.db)
    import sqlite3

    con = sqlite3.connect(str(out / "catalog.db"))
    with con:
        con.executemany(
            "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
            "previous_metadata_location, iceberg_type) VALUES (?, ?, ?, ?, NULL, 'TABLE')",
            [(catalog.name, s, t, loc) for s, t, loc, _ in results],
        )
    con.close()
    return {f"{s}.{t}": facts for s, t, _loc, facts in results}
