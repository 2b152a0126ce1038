"""The seed scenario (catalog `iceberg`): the tables described in tests/lab/README.md."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform, MonthTransform
from pyiceberg.types import (
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
    TimestamptzType,
)

from .expected import table_facts
from .history import ICEBERG_VERSION, TRINO_VERSION, HistoryWriter, trino_query_id

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
MIN_MS = 60_000

# what Trino sets on the tables it creates, plus metadata cleanup
BASE_PROPERTIES = {
    "write.format.default": "PARQUET",
    "write.parquet.compression-codec": "zstd",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "20",
}

DISTRICTS_DEFAULT = ["north", "south", "east", "west", "harbor", "uptown", "midtown", "riverside"]
DISTRICTS_FULL = DISTRICTS_DEFAULT + [
    "oldtown", "lakeside", "hillcrest", "airport", "university", "industrial", "westgate", "eastgate",
]


def table_location(out: Path, ns: str, name: str, rnd: random.Random) -> str:
    safe = "".join(c if (c.isalnum() or c in "_-") else "_" for c in name)
    return f"file://{out / 'warehouse' / ns / safe}-{uuid.UUID(int=rnd.getrandbits(128)).hex}"


def trino_extra(ts_ms: int, user: str, rnd: random.Random) -> dict[str, str]:
    return {
        "trino_query_id": trino_query_id(ts_ms, rnd),
        "trino_user": user,
        "engine-name": "trino",
        "engine-version": TRINO_VERSION,
        "iceberg-version": ICEBERG_VERSION,
    }


def day_start(ms: int) -> int:
    return ms - ms % DAY_MS


def ts_array(values_us: list[int]) -> pa.Array:
    return pa.array(values_us, pa.timestamp("us", tz="UTC"))


class Ids:
    def __init__(self) -> None:
        self.n = 0

    def take(self, k: int) -> list[int]:
        out = list(range(self.n + 1, self.n + k + 1))
        self.n += k
        return out


# finance.budget
BUDGET_YEARS = (2025, 2026)
BUDGET_REGIONS = (
    "north",
    "a'b\"c",             # both quotes
    "Zürich-東京",         # non-ASCII
    "\x1b[2J",             # an ANSI escape (clear screen)
    "\u202eevil",          # a right-to-left override
    "line1\nline2",        # a newline
)
BUDGET_NOTE_DOC = "free text; partitioning = ARRAY['month(ts)']"

WORDS = ("permit", "variance", "appeal", "site plan", "notice", "survey", "deed", "easement", "hearing",
         "minutes", "objection", "renewal", "license", "zoning map", "setback", "parking study")


class Seed:
    def __init__(self, catalog, out: Path, now_ms: int, full: bool, seed: int) -> None:
        self.catalog = catalog
        self.out = out
        self.now = now_ms
        self.full = full
        self.rnd = random.Random(seed)
        self.tables: dict[str, dict[str, Any]] = {}

    # -- helpers -------------------------------------------------------------------------

    def writer(self, ns: str, name: str, schema: Schema, spec: PartitionSpec, props: dict[str, str],
               created_ms: int, sort_order_id: int | None = 0) -> HistoryWriter:
        return HistoryWriter(
            io=self.catalog._load_file_io(location=str(self.out / "warehouse")),
            schema=schema,
            spec=spec,
            location=table_location(self.out, ns, name, self.rnd),
            properties={**BASE_PROPERTIES, **props},
            created_ms=created_ms,
            rnd=self.rnd,
            sort_order_id=sort_order_id,
        )

    def register(self, ns: str, name: str, w: HistoryWriter, props: dict[str, str], notes: str) -> None:
        if not self.catalog.namespace_exists(ns):
            self.catalog.create_namespace(ns)
        location = w.finish()
        self.catalog.register_table((ns, name), location)
        self.tables[f"{ns}.{name}"] = table_facts(ns, name, w, location, {**BASE_PROPERTIES, **props}, notes)

    # -- zoning.documents: the incident ---------------------------------------------------------

    def documents(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "doc_id", LongType(), required=False),
            NestedField(2, "district", StringType(), required=False),
            NestedField(3, "filed_at", TimestamptzType(), required=False),
            NestedField(4, "doc_type", StringType(), required=False),
            NestedField(5, "title", StringType(), required=False),
            NestedField(6, "pages", IntegerType(), required=False),
            NestedField(7, "size_bytes", LongType(), required=False),
            NestedField(8, "status", StringType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="district"),
            PartitionField(source_id=3, field_id=1001, transform=DayTransform(), name="filed_at_day"),
        )
        districts = DISTRICTS_FULL if self.full else DISTRICTS_DEFAULT
        per_partition = (58, 86) if self.full else (6, 24)
        w = self.writer("zoning", "documents", schema, spec, {}, self.now - 46 * DAY_MS)
        ids = Ids()

        def part_table(district: str, day_ms: int, until_ms: int, n: int) -> pa.Table:
            lo = day_ms
            hi = max(lo + MIN_MS, min(until_ms, day_ms + DAY_MS) - MIN_MS)
            return pa.table({
                "doc_id": pa.array(ids.take(n), pa.int64()),
                "district": pa.array([district] * n, pa.string()),
                "filed_at": ts_array([v * 1000 for v in rnd.choices(range(lo, hi + 1), k=n)]),
                "doc_type": pa.array(rnd.choices(("application", "plan", "letter", "notice", "report"), k=n), pa.string()),
                "title": pa.array([f"{a} {b}" for a, b in zip(rnd.choices(WORDS, k=n), rnd.choices(range(1, 10000), k=n))],
                                  pa.string()),
                "pages": pa.array(rnd.choices(range(1, 120 + 1), k=n), pa.int32()),
                "size_bytes": pa.array(rnd.choices(range(2_000, 9_000_000 + 1), k=n), pa.int64()),
                "status": pa.array(rnd.choices(("filed", "review", "approved", "rejected"), k=n),
                                   pa.string()),
            })

        def files_for(day_ms: int, until_ms: int, counts: dict[str, int]):
            day = day_ms // DAY_MS
            for d in districts:
                for _ in range(counts[d]):
                    yield (d, day), part_table(d, day_ms, until_ms, rnd.randint(20, 40))

        # phase 1: 30 daily loads, 3 small files per partition each
        for i in range(45, 15, -1):
            ts = self.now - i * DAY_MS - 20 * MIN_MS
            files = w.write_partitioned(files_for(day_start(ts), ts, {d: 3 for d in districts}), ts)
            w.append(files, ts, trino_extra(ts, "ingest", rnd))

        # the last compaction, 15 days ago: every partition rewritten into one file
        ts = self.now - 15 * DAY_MS
        removed, items = [], []
        for key, part_files in sorted(w.live_by_partition().items()):
            removed.extend(part_files)
            items.append((key, _read_files(part_files)))
        added = w.write_partitioned(items, ts)
        w.replace(removed, added, ts, trino_extra(ts, "airflow", rnd))

        # since then: an append every day, many small files per partition
        for i in range(14, -1, -1):
            ts = self.now - i * DAY_MS - 30 * MIN_MS
            counts = {d: rnd.randint(*per_partition) for d in districts}
            files = w.write_partitioned(files_for(day_start(ts), ts, counts), ts)
            w.append(files, ts, trino_extra(ts, "ingest", rnd))
        self.register("zoning", "documents", w, {},
                      "the incident: compaction stopped 15 days ago, appends since")

    # -- zoning.parcels: healthy, compacted daily ---------------------------------------------

    def parcels(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "parcel_id", LongType(), required=False),
            NestedField(2, "district", StringType(), required=False),
            NestedField(3, "area_sqm", DoubleType(), required=False),
            NestedField(4, "zoning_code", StringType(), required=False),
            NestedField(5, "assessed_value", DecimalType(14, 2), required=False),
            NestedField(6, "updated_at", TimestamptzType(), required=False),
        )
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="district"))
        props = {"write.target-file-size-bytes": "65536"}
        # Healthy all round: compacted daily and snapshots expired after a week, so its
        # history starts six days ago.
        w = self.writer("zoning", "parcels", schema, spec, props, self.now - 7 * DAY_MS)
        ids = Ids()

        def batch(districts: list[str], n: int, until_ms: int):
            for d in districts:
                yield (d,), one(d, n, until_ms)

        def one(d: str, n: int, until_ms: int) -> pa.Table:
            rows = {k: [] for k in ("parcel_id", "district", "area_sqm", "zoning_code", "assessed_value", "updated_at")}
            if True:
                rows["parcel_id"].extend(ids.take(n))
                rows["district"].extend([d] * n)
                rows["area_sqm"].extend(round(rnd.uniform(80, 25_000), 3) for _ in range(n))
                rows["zoning_code"].extend(rnd.choice(("R1", "R2", "R3", "C1", "C2", "M1", "PD", "OS")) for _ in range(n))
                rows["assessed_value"].extend(decimal.Decimal(rnd.randint(5_000_000, 900_000_000)) / 100 for _ in range(n))
                rows["updated_at"].extend(rnd.randint(until_ms - 20 * DAY_MS, until_ms) * 1000 for _ in range(n))
            return pa.table({
                "parcel_id": pa.array(rows["parcel_id"], pa.int64()),
                "district": pa.array(rows["district"], pa.string()),
                "area_sqm": pa.array(rows["area_sqm"], pa.float64()),
                "zoning_code": pa.array(rows["zoning_code"], pa.string()),
                "assessed_value": pa.array(rows["assessed_value"], pa.decimal128(14, 2)),
                "updated_at": ts_array(rows["updated_at"]),
            })

        districts = DISTRICTS_DEFAULT
        ts = self.now - 6 * DAY_MS - 3 * HOUR_MS
        files = w.write_partitioned(batch(districts, 4000, ts), ts)
        w.append(files, ts, trino_extra(ts, "ingest", rnd))
        for i in range(5, -1, -1):
            ts = self.now - i * DAY_MS - 3 * HOUR_MS
            files = w.write_partitioned(batch(districts, 150, ts), ts)
            w.append(files, ts, trino_extra(ts, "ingest", rnd))
            ts_c = ts + HOUR_MS
            groups = [(k, fs) for k, fs in sorted(w.live_by_partition().items()) if len(fs) > 1]
            removed = [f for _, fs in groups for f in fs]
            merged = w.write_partitioned([(k, _read_files(fs)) for k, fs in groups], ts_c)
            w.replace(removed, merged, ts_c, trino_extra(ts_c, "airflow", rnd))
        self.register("zoning", "parcels", w, props, "healthy: compacted daily, files at or above the table's target, a week of snapshots")

    # -- zoning.permits: never compacted ------------------------------------------------------------

    def permits(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "permit_id", LongType(), required=False),
            NestedField(2, "status", StringType(), required=False),
            NestedField(3, "district", StringType(), required=False),
            NestedField(4, "issued_at", TimestamptzType(), required=False),
            NestedField(5, "fee", DecimalType(10, 2), required=False),
            NestedField(6, "description", StringType(), required=False),
        )
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="status"))
        w = self.writer("zoning", "permits", schema, spec, {}, self.now - 21 * DAY_MS)
        ids = Ids()
        statuses = ["approved", "pending", "rejected", "expired", "under_review"]

        def batch(until_ms: int):
            for st in statuses:
                yield (st,), one(st, until_ms)

        def one(s: str, until_ms: int) -> pa.Table:
            rows = {k: [] for k in ("permit_id", "status", "district", "issued_at", "fee", "description")}
            if True:
                n = rnd.randint(15, 35)
                rows["permit_id"].extend(ids.take(n))
                rows["status"].extend([s] * n)
                rows["district"].extend(rnd.choice(DISTRICTS_DEFAULT) for _ in range(n))
                rows["issued_at"].extend(rnd.randint(until_ms - DAY_MS, until_ms) * 1000 for _ in range(n))
                rows["fee"].extend(decimal.Decimal(rnd.randint(2_500, 500_000)) / 100 for _ in range(n))
                rows["description"].extend(f"{rnd.choice(WORDS)} #{rnd.randint(1, 99999)}" for _ in range(n))
            return pa.table({
                "permit_id": pa.array(rows["permit_id"], pa.int64()),
                "status": pa.array(rows["status"], pa.string()),
                "district": pa.array(rows["district"], pa.string()),
                "issued_at": ts_array(rows["issued_at"]),
                "fee": pa.array(rows["fee"], pa.decimal128(10, 2)),
                "description": pa.array(rows["description"], pa.string()),
            })

        for i in range(20, 0, -1):
            ts = self.now - i * DAY_MS - 5 * HOUR_MS
            files = w.write_partitioned((item for _ in range(3) for item in batch(ts)), ts)
            w.append(files, ts, trino_extra(ts, "ingest", rnd))
        self.register("zoning", "permits", w, {}, "never compacted: its DAG swallows the error")

    # -- zoning.inspections: unpartitioned ------------------------------------------------------

    def inspections(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "inspection_id", LongType(), required=False),
            NestedField(2, "parcel_id", LongType(), required=False),
            NestedField(3, "inspected_at", TimestamptzType(), required=False),
            NestedField(4, "result", StringType(), required=False),
            NestedField(5, "inspector", StringType(), required=False),
            NestedField(6, "score", IntegerType(), required=False),
        )
        w = self.writer("zoning", "inspections", schema, PartitionSpec(), {}, self.now - 12 * DAY_MS)
        ids = Ids()

        def batch(until_ms: int) -> pa.Table:
            n = rnd.randint(40, 90)
            return pa.table({
                "inspection_id": pa.array(ids.take(n), pa.int64()),
                "parcel_id": pa.array(rnd.choices(range(1, 40_000 + 1), k=n), pa.int64()),
                "inspected_at": ts_array([v * 1000 for v in rnd.choices(range(until_ms - DAY_MS, until_ms + 1), k=n)]),
                "result": pa.array(rnd.choices(("pass", "fail", "conditional"), k=n), pa.string()),
                "inspector": pa.array(rnd.choices(("kim", "okafor", "silva", "novak", "haddad"), k=n)),
                "score": pa.array(rnd.choices(range(0, 100 + 1), k=n), pa.int32()),
            })

        for i in range(10, 0, -1):
            ts = self.now - i * DAY_MS - 7 * HOUR_MS
            files = w.write_partitioned((((), batch(ts)) for _ in range(4)), ts)
            w.append(files, ts, trino_extra(ts, "ingest", rnd))
        self.register("zoning", "inspections", w, {}, "unpartitioned, some small files")

    # -- zoning.staging: created, never written ------------------------------------------------

    def staging(self) -> None:
        schema = Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "payload", StringType(), required=False),
            NestedField(3, "created_at", TimestamptzType(), required=False),
        )
        w = self.writer("zoning", "staging", schema, PartitionSpec(), {}, self.now - 3 * DAY_MS)
        self.register("zoning", "staging", w, {}, "empty: created, never written")

    # -- audit.events: hundreds of snapshots ------------------------------------------------------

    def events(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "event_id", LongType(), required=False),
            NestedField(2, "event_ts", TimestamptzType(), required=False),
            NestedField(3, "actor", StringType(), required=False),
            NestedField(4, "action", StringType(), required=False),
            NestedField(5, "object_ref", StringType(), required=False),
            NestedField(6, "detail", StringType(), required=False),
        )
        spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=DayTransform(), name="event_ts_day"))
        w = self.writer("audit", "events", schema, spec, {}, self.now - 61 * DAY_MS)
        ids = Ids()
        step = 4 * HOUR_MS
        ts = self.now - 60 * DAY_MS
        while ts < self.now - 10 * MIN_MS:
            n = rnd.randint(10, 30)
            lo = max(day_start(ts - 1), ts - step)
            t = pa.table({
                "event_id": pa.array(ids.take(n), pa.int64()),
                "event_ts": ts_array([v * 1000 for v in rnd.choices(range(lo, ts - 1 + 1), k=n)]),
                "actor": pa.array(rnd.choices(("alice", "bob", "svc-ingest", "svc-airflow"), k=n)),
                "action": pa.array(rnd.choices(("read", "write", "grant", "revoke", "login"), k=n)),
                "object_ref": pa.array([f"zoning.documents/{rnd.randint(1, 99999)}" for _ in range(n)]),
                "detail": pa.array([None if rnd.random() < 0.2 else f"ok {rnd.randint(0, 999)}" for _ in range(n)],
                                   pa.string()),
            })
            files = w.write_partitioned([((day_start(ts - 1) // DAY_MS,), t)], ts)
            w.append(files, ts, trino_extra(ts, "svc-audit", rnd))
            ts += step
        self.register("audit", "events", w, {}, "hundreds of snapshots, the oldest far past the 7-day retention")

    # -- finance."ledger ""q3"" it's-odd" ------------------------------------------------------------

    def ledger(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "entry_id", LongType(), required=False),
            NestedField(2, "account", StringType(), required=False),
            NestedField(3, "amount", DecimalType(12, 2), required=False),
            NestedField(4, "posted_on", DateType(), required=False),
            NestedField(5, "memo", StringType(), required=False),
        )
        spec = PartitionSpec(PartitionField(source_id=4, field_id=1000, transform=MonthTransform(), name="posted_on_month"))
        name = 'ledger "q3" it\'s-odd'
        w = self.writer("finance", name, schema, spec, {}, self.now - 40 * DAY_MS)
        ids = Ids()
        year = dt.datetime.fromtimestamp(self.now / 1000, tz=dt.timezone.utc).year
        q3 = [dt.date(year, 7, 1), dt.date(year, 8, 1), dt.date(year, 9, 1)]
        for i in (35, 20, 5):
            ts = self.now - i * DAY_MS - 9 * HOUR_MS
            rows: dict[str, list] = {k: [] for k in ("entry_id", "account", "amount", "posted_on", "memo")}
            for m in q3:
                n = rnd.randint(30, 60)
                rows["entry_id"].extend(ids.take(n))
                rows["account"].extend(rnd.choice(("4000-rev", "5100-cogs", "6200-opex", "1200-ar")) for _ in range(n))
                rows["amount"].extend(decimal.Decimal(rnd.randint(-5_000_000, 9_000_000)) / 100 for _ in range(n))
                rows["posted_on"].extend(m + dt.timedelta(days=rnd.randint(0, 27)) for _ in range(n))
                rows["memo"].extend(rnd.choice(("accrual", "reversal", "it's fine", 'the "q3" close', None))
                                    for _ in range(n))
            t = pa.table({
                "entry_id": pa.array(rows["entry_id"], pa.int64()),
                "account": pa.array(rows["account"], pa.string()),
                "amount": pa.array(rows["amount"], pa.decimal128(12, 2)),
                "posted_on": pa.array(rows["posted_on"], pa.date32()),
                "memo": pa.array(rows["memo"], pa.string()),
            })
            files = w.write_files([t], ts)
            w.append(files, ts, trino_extra(ts, "finance-etl", rnd))
        self.register("finance", name, w, {}, "a table name that needs quoting")

    # -- finance.budget: identity partitions that look like transforms, hostile values ---------------

    def budget(self) -> None:
        rnd = self.rnd
        schema = Schema(
            NestedField(1, "line_id", LongType(), required=False),
            NestedField(2, "fiscal_year", IntegerType(), required=False),
            NestedField(3, "region", StringType(), required=False, doc="sales region, free text"),
            NestedField(4, "amount", DecimalType(12, 2), required=False),
            NestedField(5, "note", StringType(), required=False, doc=BUDGET_NOTE_DOC),
        )
        spec = PartitionSpec(
            PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="fiscal_year"),
            PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="region"),
        )
        # written as pyiceberg's own writer does: no sort_order_id on its data files, so the
        # real Trino 476 cannot read its $entries (floe reads it through $files)
        w = self.writer("finance", "budget", schema, spec, {}, self.now - 16 * DAY_MS, sort_order_id=None)
        ids = Ids()

        def one(year: int, region: str) -> pa.Table:
            n = rnd.randint(5, 15)
            return pa.table({
                "line_id": pa.array(ids.take(n), pa.int64()),
                "fiscal_year": pa.array([year] * n, pa.int32()),
                "region": pa.array([region] * n, pa.string()),
                "amount": pa.array([decimal.Decimal(rnd.randint(-100_000, 5_000_000)) / 100 for _ in range(n)],
                                   pa.decimal128(12, 2)),
                "note": pa.array([rnd.choice(("plan", "forecast", "it's revised", None)) for _ in range(n)],
                                 pa.string()),
            })

        # every (year, region) partition gets one small file per load: 14 loads, 14 small files each
        for i in range(14, 0, -1):
            ts = self.now - i * DAY_MS - 6 * HOUR_MS
            items = [((y, r), one(y, r)) for y in BUDGET_YEARS for r in BUDGET_REGIONS]
            files = w.write_partitioned(items, ts)
            w.append(files, ts, trino_extra(ts, "finance-etl", rnd))
        self.register("finance", "budget", w, {},
                      "identity partitions fiscal_year (int) and region (hostile strings); a column "
                      "COMMENT that looks like a partitioning property")


def _read_files(files) -> pa.Table:
    import pyarrow.parquet as pq

    from .history import local_path

    return pa.concat_tables([pq.read_table(local_path(f.file_path)) for f in files])


def build_seed(catalog, out: Path, now_ms: int, full: bool, seed: int) -> dict[str, dict[str, Any]]:
    s = Seed(catalog, out, now_ms, full, seed)
    steps: list[Callable[[], None]] = [s.documents, s.parcels, s.permits, s.inspections, s.staging, s.events, s.ledger,
                                       s.budget]
    for step in steps:
        step()
    return s.tables
