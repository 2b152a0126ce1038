"""One Trino catalog = one scenario directory: listing, table loading and caches.

Everything derived from a table (metadata tables, its data) is cached keyed by the table's
metadata location, so a commit (which writes a new metadata file) invalidates it naturally.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
from pyiceberg.table import Table

from . import metatables
from .relation import Relation
from .types import iceberg_to_trino

HIDDEN_DATA_COLUMNS = [
    ("$path", "varchar"),
    ("$file_modified_time", "timestamp(3) with time zone"),
    ("$partition", "varchar"),
]


def local_path(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


class LRU:
    """A small thread-safe LRU of computed values with per-key build locks."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Any, threading.Lock] = {}

    def get_or_build(self, key, build: Callable[[], Any]):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            lk = self._building.setdefault(key, threading.Lock())
        with lk:
            with self._lock:
                if key in self._data:
                    self._data.move_to_end(key)
                    return self._data[key]
            value = build()
            with self._lock:
                self._data[key] = value
                self._data.move_to_end(key)
                while len(self._data) > self.capacity:
                    self._data.popitem(last=False)
                self._building.pop(key, None)
            return value

    def peek(self, key):
        with self._lock:
            return self._data.get(key)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def drop_where(self, pred) -> None:
        with self._lock:
            for k in [k for k in self._data if pred(k)]:
                del self._data[k]


@dataclass
class TableRef:
    catalog: str
    schema: str
    table: str

    @property
    def qualified(self) -> str:
        return f"{self.catalog}.{self.schema}.{self.table}"


class Warehouse:
    def __init__(self, trino_catalog: str, directory: str | Path) -> None:
        from ..scenarios.catalog import CATALOG_NAME, open_catalog

        self.name = trino_catalog
        self.dir = Path(directory).resolve()
        self.db_path = self.dir / "catalog.db"
        if not self.db_path.exists():
            raise FileNotFoundError(f"{self.db_path} not found (generate the scenario first)")
        self.catalog = open_catalog(self.dir)
        self.catalog_name = CATALOG_NAME
        self._tables: dict[str, Table] = {}
        self._tables_lock = threading.Lock()
        self._expected: dict | None = None
        self._local = threading.local()

    # -- listing (straight from catalog.db: cheap and always current) -------------------------

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        # One read-only connection per thread: opening one costs more than the lookup, and
        # a statement resolves several relations. Outside a transaction each SELECT sees
        # the latest commit.
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(f"file:{self.db_path}?mode=ro", uri=True, timeout=10)
            self._local.con = con
        return con.execute(sql, args).fetchall()

    def schemas(self) -> list[str]:
        rows = self._query(
            "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? "
            "UNION SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ?",
            (self.catalog_name, self.catalog_name),
        )
        return sorted({r[0] for r in rows})

    def tables(self, schema: str | None = None) -> list[tuple[str, str]]:
        if schema is None:
            rows = self._query("SELECT table_namespace, table_name FROM iceberg_tables WHERE catalog_name = ?",
                               (self.catalog_name,))
        else:
            rows = self._query(
                "SELECT table_namespace, table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?",
                (self.catalog_name, schema),
            )
        return sorted((r[0], r[1]) for r in rows)

    def schema_exists(self, schema: str) -> bool:
        return schema in self.schemas()

    def metadata_location(self, schema: str, table: str) -> str | None:
        rows = self._query(
            "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?",
            (self.catalog_name, schema, table),
        )
        return rows[0][0] if rows else None

    def load(self, schema: str, table: str, location: str | None = None) -> Table | None:
        """The table at its current metadata location (cached per location)."""
        loc = location or self.metadata_location(schema, table)
        if loc is None:
            return None
        with self._tables_lock:
            t = self._tables.get(loc)
        if t is not None:
            return t
        from pyiceberg.serializers import FromInputFile

        io = self.catalog._load_file_io(location=loc)
        md = FromInputFile.table_metadata(io.new_input(loc))
        t = Table((schema, table), metadata=md, metadata_location=loc, io=io, catalog=self.catalog)
        with self._tables_lock:
            if len(self._tables) > 2000:
                self._tables.clear()
            self._tables[loc] = t
        return t

    def forget(self, location: str | None = None) -> None:
        with self._tables_lock:
            if location is None:
                self._tables.clear()
            else:
                self._tables.pop(location, None)

    def expected(self) -> dict:
        p = self.dir / "expected.json"
        if not p.exists():
            return {}
        return json.loads(p.read_text())


# -- data tables ------------------------------------------------------------------------------

def data_columns(table: Table) -> list[tuple[str, str]]:
    return [(f.name, iceberg_to_trino(f.field_type)) for f in table.schema().fields]


def build_data_relation(table: Table, duck_connect: Callable[[], Any], needed: frozenset[str] | None = None) -> Relation:
    """Read the live data files of the current snapshot (with Trino's hidden columns); only
    the `needed` columns when given (at least "$path", which carries the row count)."""
    all_cols = data_columns(table) + HIDDEN_DATA_COLUMNS
    if needed is not None:
        keep = set(needed) or {"$path"}
        cols = [c for c in all_cols if c[0] in keep]
    else:
        cols = all_cols
    hidden = frozenset(n for n, _ in HIDDEN_DATA_COLUMNS)
    files = []
    counts = []
    for _m, e in metatables.live_entries(table):
        df = e.data_file
        p = local_path(df.file_path)
        try:
            mtime_us = int(os.stat(p).st_mtime_ns // 1000)
        except FileNotFoundError:
            mtime_us = None
        files.append((df.file_path, p, mtime_us, metatables.partition_path(table, df)))
        counts.append(df.record_count)
    if not files:
        return Relation.from_rows(cols, [], hidden & {c[0] for c in cols})
    if all(n in hidden for n, _ in cols):
        # only per-file columns: every file contributes its record count of identical rows
        # (the warehouse has no delete files), so the manifests say it all
        idx = pa.array([i for i, n in enumerate(counts) for _ in range(n)], pa.int32())
        per_file = {
            "$path": pa.array([f[0] for f in files], pa.string()),
            "$file_modified_time": pa.array([(f[2] // 1000 * 1000) if f[2] is not None else None for f in files],
                                            pa.timestamp("us", tz="UTC")),
            "$partition": pa.array([f[3] for f in files], pa.string()),
        }
        got = pa.table({n: per_file[n].take(idx) for n, _ in cols})
        return Relation(cols, got, hidden & {c[0] for c in cols})
    info = pa.table({
        "uri": pa.array([f[0] for f in files], pa.string()),
        "local": pa.array([f[1] for f in files], pa.string()),
        "mtime": pa.array([(f[2] // 1000 * 1000) if f[2] is not None else None for f in files],
                          pa.timestamp("us", tz="UTC")),
        "part": pa.array([f[3] for f in files], pa.string()),
    })
    con = duck_connect()
    try:
        con.register("__files", info)
        hidden_sql = {"$path": 'f.uri AS "$path"', "$file_modified_time": 'f.mtime AS "$file_modified_time"',
                      "$partition": 'f.part AS "$partition"'}
        select = ", ".join(hidden_sql[n] if n in hidden_sql else f'd."{n}"' for n, _ in cols)
        paths = "[" + ", ".join("'" + f[1].replace("'", "''") + "'" for f in files) + "]"
        sql = (
            f"SELECT {select} "
            f"FROM read_parquet({paths}, filename = true, union_by_name = true) d "
            f"JOIN __files f ON d.filename = f.local"
        )
        got = con.sql(sql).arrow()
    finally:
        con.close()
    got = _arrow_table(got)
    schema = Relation.from_rows(cols, []).table.schema
    got = got.cast(schema, safe=False) if got.schema != schema else got
    return Relation(cols, got, hidden & {c[0] for c in cols})


def _arrow_table(x) -> pa.Table:
    if isinstance(x, pa.Table):
        return x
    if hasattr(x, "read_all"):
        return x.read_all()
    return pa.Table.from_batches(list(x))
