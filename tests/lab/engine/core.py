"""The Engine: what the lab's Trino-protocol server calls (see engine/api.py)."""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from ..common.errors import TrinoError
from . import catalogs, metatables, statements
from .api import Progress, ProgressFn, Result, Session
from .relation import Relation
from .warehouse import LRU, Warehouse, build_data_relation

log = logging.getLogger("lab.engine")

_MACROS = [
    # Trino scalar functions DuckDB lacks
    "CREATE OR REPLACE MACRO nan() AS CAST('NaN' AS DOUBLE)",
    "CREATE OR REPLACE MACRO infinity() AS CAST('Infinity' AS DOUBLE)",
    "CREATE OR REPLACE MACRO is_nan(x) AS isnan(x)",
    "CREATE OR REPLACE MACRO is_finite(x) AS isfinite(x)",
    "CREATE OR REPLACE MACRO is_infinite(x) AS isinf(x)",
    """CREATE OR REPLACE MACRO to_iso8601(x) AS
       CASE WHEN typeof(x) = 'DATE' THEN strftime(x, '%Y-%m-%d')
            ELSE strftime(x, '%Y-%m-%dT%H:%M:%S.%g') || CASE WHEN typeof(x) LIKE 'TIMESTAMP WITH%' THEN 'Z' ELSE '' END
       END""",
    # Trino fails a subscript on a missing key; element_at returns NULL (MapSubscriptOperator)
    """CREATE OR REPLACE MACRO __trino_map_subscript(m, k) AS
       CASE WHEN m IS NULL OR k IS NULL THEN NULL
            WHEN map_contains(m, k) THEN m[k]
            ELSE error('Key not present in map: ' || CAST(k AS VARCHAR)) END""",
    """CREATE OR REPLACE MACRO __trino_array_subscript(a, i) AS
       CASE WHEN a IS NULL OR i IS NULL THEN NULL
            WHEN i = 0 THEN error('SQL array indices start at 1')
            WHEN i < 0 THEN error('Array subscript is negative: ' || CAST(i AS VARCHAR))
            WHEN i > len(a) THEN error('Array subscript must be less than or equal to array length: '
                                       || CAST(i AS VARCHAR) || ' > ' || CAST(len(a) AS VARCHAR))
            ELSE a[i] END""",
]

PREWARM_MIN_FILES = 500
# what a health statement and the change probe read (and `$files`, what scripts read)
PREWARM_KINDS = ("properties", "snapshots", "entries", "manifests", "metadata_log_entries", "files")
KNOWN_STATEMENTS = {"alter", "analyze", "call", "comment", "commit", "create", "deallocate", "delete", "deny", "desc",
                    "describe", "drop", "execute", "explain", "grant", "insert", "merge", "prepare", "refresh", "reset",
                    "revoke", "rollback", "set", "show", "start", "truncate", "update", "use", "with", "select",
                    "values", "table"}
SYSTEM_SCHEMAS = ["information_schema", "jdbc", "metadata", "runtime"]


class Engine:
    def __init__(self, catalogs_: dict[str, str], prewarm: bool = True) -> None:
        from . import manifest_cache

        manifest_cache.install()
        self.catalog_dirs = dict(catalogs_)
        self.warehouses: dict[str, Warehouse] = {name: Warehouse(name, d) for name, d in self.catalog_dirs.items()}
        self._duck = duckdb.connect(":memory:")
        self._duck.execute("SET threads = 2")
        for m in _MACROS:
            self._duck.execute(m)
        # every metadata table of a 1,000-table fleet (five per table) stays built
        self._cache = LRU(capacity=8192)
        from collections import OrderedDict

        self._data_tables: OrderedDict = OrderedDict()
        self._data_lock = threading.Lock()
        self._table_locks: dict[tuple[str, str, str], threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._prewarm_thread: threading.Thread | None = None
        if prewarm:
            self._prewarm_thread = threading.Thread(target=self._prewarm, name="engine-prewarm", daemon=True)
            self._prewarm_thread.start()

    # -- infrastructure ---------------------------------------------------------------------------

    def duck_cursor(self, session: Session | None = None):
        cur = self._duck.cursor()
        tz = session.time_zone if session is not None else "UTC"
        try:
            cur.execute(f"SET TimeZone = '{tz}'")
        except Exception:
            cur.execute("SET TimeZone = 'UTC'")
        cur.execute("SET integer_division = true")
        return cur

    def table_lock(self, catalog: str, schema: str, table: str) -> threading.Lock:
        key = (catalog, schema, table)
        with self._locks_lock:
            lk = self._table_locks.get(key)
            if lk is None:
                lk = self._table_locks[key] = threading.Lock()
            return lk

    def warehouse_or_error(self, catalog: str, pos: tuple[int | None, int | None] = (None, None)) -> Warehouse:
        w = self.warehouses.get(catalog)
        if w is None:
            raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{catalog}' not found", *pos)
        return w

    def _prewarm(self) -> None:
        """Build the metadata tables a client reads first ahead of the first query: those of
        the large tables, then every other table's. A real coordinator's own time per
        statement is mostly planning and reading a few files; the lab's would otherwise be
        its Python reading every manifest the first time, which no client can do anything
        about (and which would bound any measurement of a client's cost)."""
        try:
            for cname, w in self.warehouses.items():
                exp_ = w.expected().get("tables", {})
                for key, facts in sorted(exp_.items(), key=lambda kv: -kv[1].get("data_files", 0)):
                    if facts.get("data_files", 0) < PREWARM_MIN_FILES:
                        continue
                    for kind in ("files", "partitions"):
                        self._prewarm_one(cname, facts["schema"], facts["table"], kind)
            for cname, w in self.warehouses.items():
                for s, t in w.tables():
                    for kind in PREWARM_KINDS:
                        self._prewarm_one(cname, s, t, kind)
        except Exception:
            log.exception("prewarm failed")
        # What was built stays for the life of the lab: the collector need not walk it
        # again on every full collection (pauses that grew with the fleet).
        import gc

        gc.collect()
        gc.freeze()
        log.info("prewarm done")

    def _prewarm_one(self, cname: str, schema: str, table: str, kind: str) -> None:
        try:
            self.metadata_relation(cname, schema, table, kind, 480)
        except KeyError:
            pass  # dropped since the scenario was generated
        except Exception:
            log.exception("prewarm %s.%s$%s failed", schema, table, kind)

    def wait_prewarm(self, timeout: float | None = None) -> None:
        if self._prewarm_thread is not None:
            self._prewarm_thread.join(timeout)

    # -- relations ----------------------------------------------------------------------------------

    def metadata_relation(self, catalog: str, schema: str, table: str, kind: str, server_version: int) -> Relation:
        w = self.warehouses[catalog]
        loc = w.metadata_location(schema, table)
        if loc is None:
            raise KeyError(table)
        key = (catalog, loc) + metatables.version_cache_key(kind, server_version)
        tbl = w.load(schema, table, loc)
        full = self._cache.get_or_build(key, lambda: metatables.build(kind, tbl, loc, server_version))
        full.cached = True
        out = metatables.for_version(kind, full, server_version)
        return out

    def data_relation(self, catalog: str, schema: str, table: str) -> Relation:
        w = self.warehouses[catalog]
        loc = w.metadata_location(schema, table)
        tbl = w.load(schema, table, loc)
        from .warehouse import HIDDEN_DATA_COLUMNS, data_columns

        cols = data_columns(tbl) + HIDDEN_DATA_COLUMNS
        hidden = frozenset(n for n, _ in HIDDEN_DATA_COLUMNS)

        def load(needed):
            return self._data_table(catalog, loc, tbl, needed)
        return Relation(cols, None, hidden, loader=load)

    def _data_table(self, catalog: str, loc: str, tbl, needed):
        """A table version's rows with at least the `needed` columns (None: all), reusing any
        cached read that has them."""
        import pyarrow as pa

        from .warehouse import HIDDEN_DATA_COLUMNS, data_columns

        all_names = [n for n, _ in data_columns(tbl) + HIDDEN_DATA_COLUMNS]
        want = frozenset(all_names) if needed is None else frozenset(needed)
        with self._data_lock:
            for (c, l, cols), table in list(self._data_tables.items()):
                if c == catalog and l == loc and want <= cols:
                    self._data_tables.move_to_end((c, l, cols))
                    names = [n for n in table.column_names if n in want] or table.column_names[:1]
                    return table.select(names)
        rel = build_data_relation(tbl, self._duck.cursor, want)
        table: pa.Table = rel.table
        with self._data_lock:
            self._data_tables[(catalog, loc, frozenset(table.column_names))] = table
            while len(self._data_tables) > 24:
                self._data_tables.popitem(last=False)
        return table

    def resolve_relation(self, catalog: str | None, schema: str | None, name: str, session: Session,
                         pos: tuple[int | None, int | None], filters: dict[str, str] | None = None) -> Relation:
        if schema is None:
            schema = session.schema
            if schema is None:
                raise TrinoError("MISSING_SCHEMA_NAME", "Schema must be specified when session schema is not set", *pos)
        if catalog is None:
            catalog = session.catalog
            if catalog is None:
                raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set", *pos)
        catalog, schema, name = catalog.lower(), schema.lower(), name.lower()
        qualified = f"{catalog}.{schema}.{name}"
        w = self.warehouses.get(catalog)
        if w is None and catalog == "system":
            return self._system_relation(schema, name, session, qualified, pos)
        if w is None:
            raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{catalog}' not found", *pos)
        version = session.server_version
        if schema == "information_schema":
            if name in catalogs.INFO_TABLES:
                return catalogs.info_schema_relation(w, name, filters)
            raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)
        if schema == "system" and name == "iceberg_tables" and "system" not in w.schemas():
            if version >= 475:
                return catalogs.iceberg_tables_relation(w)
            raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)
        base, sep, suffix = name.partition("$")
        loc = w.metadata_location(schema, base) if base else None
        if loc is not None:
            if not sep:
                return self.data_relation(catalog, schema, base)
            if metatables.exists_in_version(suffix, version):
                return self.metadata_relation(catalog, schema, base, suffix, version)
            raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)
        if not w.schema_exists(schema):
            raise TrinoError("SCHEMA_NOT_FOUND", f"Schema '{schema}' does not exist", *pos)
        raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)

    def _system_relation(self, schema: str, name: str, session: Session, qualified: str, pos) -> Relation:
        """The few tables of Trino's `system` catalog a client may look at."""
        if schema == "runtime" and name == "nodes":
            return Relation.from_rows(
                [("node_id", "varchar"), ("http_uri", "varchar"), ("node_version", "varchar"),
                 ("coordinator", "boolean"), ("state", "varchar")],
                [["lab-coordinator", "http://127.0.0.1", str(session.server_version), True, "active"]])
        if schema == "metadata" and name == "catalogs":
            rows = [[c, c, "iceberg"] for c in sorted(self.warehouses)] + [["system", "system", "system"]]
            return Relation.from_rows([("catalog_name", "varchar"), ("connector_id", "varchar"),
                                       ("connector_name", "varchar")], sorted(rows))
        if schema not in SYSTEM_SCHEMAS:
            raise TrinoError("SCHEMA_NOT_FOUND", f"Schema '{schema}' does not exist", *pos)
        raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)

    def invalidate(self, catalog: str, old_location: str | None = None) -> None:
        """Free what was cached for a table version that is no longer current (entries are
        keyed by metadata location, so a commit never serves stale data anyway)."""
        w = self.warehouses.get(catalog)
        if w is not None and old_location is not None:
            w.forget(old_location)
        if old_location is not None:
            self._cache.drop_where(lambda k: k[0] == catalog and len(k) > 1 and k[1] == old_location)
            with self._data_lock:
                for k in [k for k in self._data_tables if k[0] == catalog and k[1] == old_location]:
                    del self._data_tables[k]

    # -- execute ---------------------------------------------------------------------------------------

    def execute(self, sql: str, session: Session, progress: ProgressFn | None = None,
                cancelled: threading.Event | None = None) -> Result:
        progress = progress or (lambda p: None)
        cancelled = cancelled or threading.Event()
        if cancelled.is_set():
            raise TrinoError("USER_CANCELED", "Query was canceled")
        if not sql or not sql.strip():
            raise TrinoError("SYNTAX_ERROR", "mismatched input '<EOF>'. Expecting: <query>", 1, 1)
        head = re.match(r"\s*(\w+)(?:\s+(\w+))?", sql)
        first = head.group(1).lower() if head else ""
        second = (head.group(2) or "").lower() if head else ""
        try:
            if first == "show":
                return statements.show(self, sql, session)
            if first in ("describe", "desc"):
                return statements.describe(self, sql, session)
            if first == "set" and second == "session":
                return statements.set_session(self, sql, session)
            if first == "reset" and second == "session":
                return statements.reset_session(self, sql, session)
            if first == "use":
                return statements.use(self, sql, session)
            if first == "alter" and re.match(r"(?is)\s*alter\s+table\s+.+?\s+execute\b", sql):
                from . import procedures
                return procedures.execute(self, sql, session, progress, cancelled)
            if first in ("select", "with", "values", "table") or sql.lstrip().startswith("("):
                return self._query(sql, session, cancelled)
            if first in ("explain",):
                raise TrinoError("NOT_SUPPORTED", "EXPLAIN is not supported by this server")
            if first not in KNOWN_STATEMENTS:
                from .query import STATEMENT_STARTS, line_col
                off = head.start(1) if head else 0
                token = head.group(1) if head else "<EOF>"
                raise TrinoError("SYNTAX_ERROR", f"mismatched input '{token}'. Expecting: {STATEMENT_STARTS}",
                                 *line_col(sql, off))
            return self._unsupported(sql)
        except TrinoError:
            raise
        except Exception as e:  # anything unexpected is an internal error, as in Trino
            log.exception("internal error for %r", sql)
            raise TrinoError("GENERIC_INTERNAL_ERROR", f"{type(e).__name__}: {e}") from e

    def _unsupported(self, sql: str) -> Result:
        try:
            tree = sqlglot.parse_one(sql, read="trino")
        except Exception as e:
            from .query import syntax_error
            raise syntax_error(sql, e) from None
        kind = type(tree).__name__.upper()
        raise TrinoError("NOT_SUPPORTED", f"This server does not support {kind} statements")

    def _query(self, sql: str, session: Session, cancelled: threading.Event) -> Result:
        from . import compiled

        return compiled.run(self, sql, session, cancelled)

    # -- control -----------------------------------------------------------------------------------------

    def control(self, op: str, payload: dict) -> dict:
        payload = payload or {}
        if op == "expected":
            cat = payload.get("catalog")
            if cat:
                return self.warehouse_or_error(cat).expected()
            return {name: w.expected() for name, w in self.warehouses.items()}
        if op == "reload":
            from . import compiled, manifest_cache

            manifest_cache.clear()
            compiled.clear()
            self._cache.clear()
            with self._data_lock:
                self._data_tables.clear()
            for name, d in self.catalog_dirs.items():
                self.warehouses[name] = Warehouse(name, d)
            return {"reloaded": sorted(self.warehouses)}
        if op == "clone_table":
            from .clone import clone_table
            return clone_table(self, payload)
        if op == "unmaintained_table":
            from .unmaintained import unmaintained_table
            return unmaintained_table(self, payload)
        if op == "require_column":
            from .required import require_column
            return require_column(self, payload)
        if op == "prewarm":
            # wait (up to `wait` seconds) until every table's metadata tables are built
            self.wait_prewarm(float(payload.get("wait", 0)))
            t = self._prewarm_thread
            return {"done": t is None or not t.is_alive()}
        if op == "stats":
            return {"cached_relations": len(self._cache._data)}
        raise TrinoError("NOT_SUPPORTED", f"unknown engine operation {op!r}")
