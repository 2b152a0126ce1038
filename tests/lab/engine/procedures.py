"""ALTER TABLE ... EXECUTE: optimize, expire_snapshots, remove_orphan_files, optimize_manifests.

They change the tables for real (pyiceberg commits) with Trino's argument handling, error
texts and result shapes (see notes: trino.md §1.7 and §4).
"""

from __future__ import annotations

import datetime as dt
import os
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFile, ManifestContent, ManifestEntry, ManifestEntryStatus
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _OverwriteFiles, _SnapshotProducer
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, YearTransform
from pyiceberg import types as it
from sqlglot import exp

from ..common.errors import TrinoError
from .api import Column, Progress, Result, Session
from .statements import Cursor, Tok, _lc, tokenize
from .units import UnitError, format_duration, parse_data_size, parse_duration
from .warehouse import local_path
from . import where as W

if TYPE_CHECKING:
    from .core import Engine

ICEBERG_VERSION = "Apache Iceberg 1.10.1 (commit ccb8bc435062171e64bc8b7e5f56e6aed9c5b934)"


# -- statement parsing ------------------------------------------------------------------------------

@dataclass
class Arg:
    name: str | None
    tokens: list[Tok]
    text: str
    pos: int


@dataclass
class TableExecute:
    parts: list[str]
    table_pos: int
    procedure: str
    procedure_pos: int
    args: list[Arg]
    where_sql: str | None
    where_offset: int


def parse_statement(sql: str) -> TableExecute:
    toks = tokenize(sql)
    cur = Cursor(sql, toks)
    cur.expect_word("alter")
    cur.expect_word("table")
    parts, table_pos = cur.qualified_name()
    cur.expect_word("execute")
    pt = cur.next()
    if pt.kind not in ("w", "q"):
        cur.error(pt, "Expecting: <identifier>")
    procedure = pt.value.lower() if pt.kind == "w" else pt.value
    args: list[Arg] = []
    if cur.accept_punct("("):
        if not cur.accept_punct(")"):
            while True:
                start = cur.i
                name = None
                t0 = cur.peek()
                if t0 is not None and t0.kind in ("w", "q") and cur.i + 1 < len(toks) and \
                        toks[cur.i + 1].kind == "p" and toks[cur.i + 1].text == "=>":
                    name = t0.value.lower() if t0.kind == "w" else t0.value
                    cur.i += 2
                vstart = cur.i
                depth = 0
                while True:
                    t = cur.peek()
                    if t is None:
                        cur.error(None, "Expecting: ')'")
                    if t.kind == "p" and t.text == "(":
                        depth += 1
                    elif t.kind == "p" and t.text == ")":
                        if depth == 0:
                            break
                        depth -= 1
                    elif t.kind == "p" and t.text == "," and depth == 0:
                        break
                    cur.i += 1
                vt = toks[vstart:cur.i]
                if not vt:
                    cur.error(cur.peek(), "Expecting: <expression>")
                text = sql[vt[0].pos: vt[-1].pos + len(vt[-1].text)]
                args.append(Arg(name, vt, text, toks[start].pos))
                if cur.accept_punct(","):
                    continue
                cur.accept_punct(")")
                break
    where_sql = None
    where_offset = 0
    t = cur.peek()
    if t is not None:
        if not t.is_word("where"):
            cur.error(t, "Expecting: '(', 'WHERE', <EOF>")
        where_offset = t.pos + len(t.text)
        where_sql = sql[where_offset:]
        while where_sql and where_sql[0].isspace():
            where_sql = where_sql[1:]
            where_offset += 1
    return TableExecute(parts, table_pos, procedure, pt.pos, args, where_sql, where_offset)


# -- procedure metadata ------------------------------------------------------------------------------

@dataclass
class Prop:
    name: str
    kind: str          # "datasize" | "duration" | "integer" | "boolean"
    default: Any


def procedure_properties(name: str, version: int) -> list[Prop] | None:
    if name == "optimize":
        return [Prop("file_size_threshold", "datasize", "100MB")]
    if name == "expire_snapshots":
        props = [Prop("retention_threshold", "duration", "7d")]
        if version >= 479:
            props += [Prop("retain_last", "integer", None), Prop("clean_expired_metadata", "boolean", False)]
        return props
    if name == "remove_orphan_files":
        return [Prop("retention_threshold", "duration", "7d")]
    if name == "optimize_manifests" and version >= 470:
        return []
    if name == "drop_extended_stats":
        return []
    if name == "rollback_to_snapshot" and version >= 469:
        return [Prop("snapshot_id", "bigint", None)]
    return None


SQL_TYPE = {"datasize": "varchar", "duration": "varchar", "integer": "integer", "boolean": "boolean", "bigint": "bigint"}


def _literal(arg: Arg):
    """(python value, Trino type of the literal) for the constant argument forms Trino takes."""
    toks = arg.tokens
    if len(toks) == 1:
        t = toks[0]
        if t.kind == "s":
            return t.value, "varchar"
        if t.kind == "n":
            return (Decimal(t.text), "decimal") if "." in t.text else (int(t.text), "integer")
        if t.is_word("true", "false"):
            return t.text.lower() == "true", "boolean"
        if t.is_word("null"):
            return None, "unknown"
    return None, "expression"


def evaluate_properties(catalog: str, procedure: str, props: list[Prop], args: list[Arg], sql: str,
                        stmt_pos: int) -> dict[str, Any]:
    named = [a for a in args if a.name is not None]
    if named and len(named) != len(args):
        raise TrinoError("INVALID_ARGUMENTS", "Named and positional arguments cannot be mixed", *_lc(sql, stmt_pos))
    if not named and len(args) > len(props):
        raise TrinoError("INVALID_ARGUMENTS", "Too many positional arguments", *_lc(sql, stmt_pos))
    given: dict[str, Arg] = {}
    if named:
        for a in args:
            if a.name in given:
                raise TrinoError("DUPLICATE_PROPERTY", f"Duplicate named argument: {a.name}", *_lc(sql, a.pos))
            given[a.name] = a
    else:
        for p, a in zip(props, args):
            given[p.name] = a
    by_name = {p.name: p for p in props}
    desc = f"catalog '{catalog}' table procedure '{procedure}' property"
    out: dict[str, Any] = {}
    for name, a in given.items():
        p = by_name.get(name)
        if p is None:
            raise TrinoError("INVALID_PROCEDURE_ARGUMENT", f"{desc[0].upper()}{desc[1:]} '{name}' does not exist")
        value, vtype = _literal(a)
        want = SQL_TYPE[p.kind]
        ok = (vtype == want) or (want == "bigint" and vtype == "integer") or vtype == "unknown"
        if not ok:
            raise TrinoError("INVALID_PROCEDURE_ARGUMENT",
                             f"Invalid value for {desc} '{name}': Cannot convert [{a.text}] to {want}")
        if value is None:
            raise TrinoError("INVALID_PROCEDURE_ARGUMENT", f"Invalid null value for {desc} '{name}' from [{a.text}]")
        try:
            if p.kind == "datasize":
                value = parse_data_size(value)
            elif p.kind == "duration":
                value = parse_duration(value)
            elif p.kind == "integer" and p.name == "retain_last" and value < 1:
                raise UnitError(f"retain_last must be at least 1, cannot be {value}")
        except UnitError as e:
            raise TrinoError("INVALID_PROCEDURE_ARGUMENT", f"Unable to set {desc} '{name}' to [{a.text}]: {e}") from None
        out[name] = value
    for p in props:
        if p.name not in out and p.default is not None:
            d = p.default
            out[p.name] = parse_data_size(d) if p.kind == "datasize" else parse_duration(d) if p.kind == "duration" else d
    return out


# -- results -----------------------------------------------------------------------------------------

def metrics_result(metrics: dict[str, int]) -> Result:
    return Result(columns=[Column("metric_name", "varchar"), Column("metric_value", "bigint")],
                  rows=[[k, int(v)] for k, v in metrics.items()], update_type="ALTER TABLE EXECUTE")


def rows_result(rows: list[list]) -> Result:
    return Result(columns=[Column("rows", "bigint")], rows=rows, update_type="ALTER TABLE EXECUTE")


def coordinator_result(version: int, metrics: dict[str, int]) -> Result:
    """Coordinator-only procedures: no rows up to 477, metric rows from 478."""
    if version <= 477:
        return rows_result([])
    return metrics_result(metrics)


# -- entry point ---------------------------------------------------------------------------------------

def execute(engine: "Engine", sql: str, session: Session, progress, cancelled: threading.Event) -> Result:
    st = parse_statement(sql)
    version = session.server_version
    parts = st.parts
    if len(parts) > 3:
        raise TrinoError("SYNTAX_ERROR", f"Too many dots in table name: {'.'.join(parts)}")
    name = parts[-1].lower()
    schema = parts[-2].lower() if len(parts) > 1 else session.schema
    catalog = parts[-3].lower() if len(parts) > 2 else session.catalog
    pos = _lc(sql, st.table_pos)
    if schema is None:
        raise TrinoError("MISSING_SCHEMA_NAME", "Schema must be specified when session schema is not set", *pos)
    if catalog is None:
        raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set", *pos)
    qualified = f"{catalog}.{schema}.{name}"
    w = engine.warehouses.get(catalog)
    if w is None:
        raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{catalog}' not found", *pos)
    if w.metadata_location(schema, name) is None:
        raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)
    props = procedure_properties(st.procedure, version)
    if props is None:
        raise TrinoError("PROCEDURE_NOT_FOUND", f"Table procedure not registered: {st.procedure}")
    stmt_pos = 0
    while stmt_pos < len(sql) and sql[stmt_pos].isspace():
        stmt_pos += 1
    if st.where_sql is not None and st.procedure != "optimize":
        raise TrinoError("NOT_SUPPORTED", f"WHERE not supported for procedure {st.procedure}", *_lc(sql, stmt_pos))
    values = evaluate_properties(catalog, st.procedure, props, st.args, sql, stmt_pos)
    ctx = Ctx(engine, sql, session, catalog, schema, name, progress, cancelled)
    old_location = w.metadata_location(schema, name)
    with engine.table_lock(catalog, schema, name):
        try:
            if st.procedure == "optimize":
                return optimize(ctx, values, st)
            if st.procedure == "expire_snapshots":
                return expire_snapshots(ctx, values)
            if st.procedure == "remove_orphan_files":
                return remove_orphan_files(ctx, values)
            if st.procedure == "optimize_manifests":
                return optimize_manifests(ctx)
            if st.procedure == "drop_extended_stats":
                return coordinator_result(version, {})
            if st.procedure == "rollback_to_snapshot":
                return rollback_to_snapshot(ctx, values)
        finally:
            if w.metadata_location(schema, name) != old_location:
                engine.invalidate(catalog, old_location)
    raise TrinoError("PROCEDURE_NOT_FOUND", f"Table procedure not registered: {st.procedure}")


@dataclass
class Ctx:
    engine: "Engine"
    sql: str
    session: Session
    catalog: str
    schema: str
    table: str
    progress: Any
    cancelled: threading.Event

    def load(self) -> Table:
        w = self.engine.warehouses[self.catalog]
        return w.catalog.load_table((self.schema, self.table))

    def commit_properties(self) -> dict[str, str]:
        return {
            "trino_query_id": self.session.query_id or _query_id(),
            "trino_user": self.session.user,
            "engine-name": "trino",
            "engine-version": str(self.session.server_version),
            "iceberg-version": ICEBERG_VERSION,
        }

    def check_cancel(self) -> None:
        if self.cancelled.is_set():
            raise TrinoError("USER_CANCELED", "Query was canceled")


def _query_id() -> str:
    t = dt.datetime.now(dt.timezone.utc)
    suffix = "".join(random.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(5))
    return f"{t:%Y%m%d_%H%M%S}_{random.randint(0, 99999):05d}_{suffix}"


def _min_retention(ctx: Ctx, prop: str) -> float:
    v = ctx.session.properties.get(f"{ctx.catalog}.{prop}")
    if v is None:
        return 7 * 86400.0
    try:
        return parse_duration(v)
    except UnitError:
        raise TrinoError("INVALID_SESSION_PROPERTY", f"{ctx.catalog}.{prop} is invalid: {v}") from None


def _check_retention(ctx: Ctx, retention: float, which: str) -> None:
    version = ctx.session.server_version
    if which == "expire":
        prop = "expire_snapshots_min_retention"
        config = "iceberg.expire-snapshots.min-retention" if version >= 464 else "iceberg.expire_snapshots.min-retention"
    else:
        prop = "remove_orphan_files_min_retention"
        config = ("iceberg.remove-orphan-files.min-retention" if version >= 464
                  else "iceberg.remove_orphan_files.min-retention")
    minimum = _min_retention(ctx, prop)
    if retention < minimum:
        raise TrinoError(
            "INVALID_PROCEDURE_ARGUMENT",
            f"Retention specified ({format_duration(retention)}) is shorter than the minimum retention configured "
            f"in the system ({format_duration(minimum)}). Minimum retention can be changed with {config} "
            f"configuration property or {ctx.catalog}.{prop} session property",
        )


# -- optimize ---------------------------------------------------------------------------------------------

class _CachedMetadataMixin:
    """pyiceberg's producers ask the transaction for the schema and specs per manifest they
    write, and the transaction rebuilds (deep-copies) the table metadata on every access;
    with hundreds of snapshots that dominates a commit. Both are fixed for a commit."""

    def schema(self):
        sc = self.__dict__.get("_lab_schema")
        if sc is None:
            sc = self.__dict__["_lab_schema"] = self._transaction.table_metadata.schema()
        return sc

    def spec(self, spec_id: int):
        specs = self.__dict__.get("_lab_specs")
        if specs is None:
            specs = self.__dict__["_lab_specs"] = self._transaction.table_metadata.specs()
        return specs[spec_id]

    def _build_manifest_evaluator(self, spec_id: int):
        """pyiceberg's manifest evaluator keeps the manifest it is looking at in the visitor
        (`_ManifestEvalVisitor.partition_fields`), and `_deleted_entries` shares one evaluator
        across its thread pool: two threads can then judge a manifest by another one's
        partition bounds and skip files that must be deleted ("Missing required files to
        delete"). Each evaluation here gets the evaluator to itself."""
        from pyiceberg.expressions.visitors import manifest_evaluator

        evaluate = manifest_evaluator(self.spec(spec_id), self.schema(), self.partition_filters[spec_id],
                                      self._case_sensitive)
        lock = threading.Lock()

        def safe(manifest) -> bool:
            with lock:
                return evaluate(manifest)
        return safe


class _ReplaceFiles(_CachedMetadataMixin, _OverwriteFiles):
    """pyiceberg's overwrite producer, recorded as Iceberg's `replace` (RewriteFiles): the
    summary is computed as for an overwrite, then labelled replace. As Trino's optimize
    does (rewriteFiles.dataSequenceNumber), the new files keep the data sequence number of
    the snapshot the rewrite started from."""

    def _manifests(self):
        manifests = super()._manifests()
        start = self._transaction.table_metadata.snapshot_by_id(self._starting_snapshot_id) \
            if self._starting_snapshot_id is not None else None
        if start is None or start.sequence_number is None:
            return manifests
        out = []
        for m in manifests:
            if m.added_snapshot_id == self._snapshot_id and (m.added_files_count or 0) > 0 and \
                    not (m.existing_files_count or 0) and not (m.deleted_files_count or 0):
                entries = [e for e in _read_new_manifest(self._io, m)]
                with self.new_manifest_writer(self.spec(m.partition_spec_id)) as w:
                    for e in entries:
                        w.add_entry(ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id,
                            sequence_number=start.sequence_number, file_sequence_number=None,
                            data_file=e.data_file))
                out.append(w.to_manifest_file())
                try:
                    self._io.delete(m.manifest_path)
                except Exception:
                    pass
            else:
                out.append(m)
        return out

    def _summary(self, snapshot_properties: dict[str, str] = {}) -> Summary:  # noqa: B006
        from ..scenarios.history import order_summary

        s = super()._summary(snapshot_properties)
        return Summary(operation=Operation.REPLACE, **order_summary(dict(s.additional_properties)))


def _read_new_manifest(io, m) -> list[ManifestEntry]:
    """Entries of a manifest this commit just wrote (not through the shared cache)."""
    from pyiceberg.avro.file import AvroFile
    from pyiceberg.manifest import (DEFAULT_READ_VERSION, MANIFEST_ENTRY_SCHEMAS, DataFileContent, FileFormat)

    with AvroFile[ManifestEntry](
        io.new_input(m.manifest_path),
        MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
        read_types={-1: ManifestEntry, 2: DataFile},
        read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent},
    ) as reader:
        return list(reader)


def _live_files(tbl: Table) -> list[DataFile]:
    snap = tbl.metadata.current_snapshot()
    if snap is None:
        return []
    out = []
    for m in snap.manifests(tbl.io):
        if m.content != ManifestContent.DATA:
            continue
        for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
            out.append(e.data_file)
    return out


def filter_columns(tbl: Table) -> dict[str, W.FilterColumn]:
    schema = tbl.schema()
    cols: dict[str, W.FilterColumn] = {}

    def kind_of(t) -> str:
        if isinstance(t, it.StringType):
            return "string"
        if isinstance(t, (it.IntegerType, it.LongType)):
            return "int"
        if isinstance(t, it.DateType):
            return "date"
        if isinstance(t, (it.TimestampType, it.TimestamptzType)):
            return "ts"
        if isinstance(t, it.DecimalType):
            return "decimal"
        if isinstance(t, it.BooleanType):
            return "bool"
        if isinstance(t, (it.FloatType, it.DoubleType)):
            return "double"
        return "string"

    for f in schema.fields:
        cols[f.name.lower()] = W.FilterColumn(f.name, "data", kind_of(f.field_type))
    for pf in tbl.spec().fields:
        src = schema.find_field(pf.source_id)
        col = cols[src.name.lower()]
        if isinstance(pf.transform, IdentityTransform):
            col.kind = "identity"
        elif isinstance(pf.transform, (DayTransform, HourTransform, MonthTransform, YearTransform)):
            if col.kind != "identity":
                col.kind = "temporal"
                col.transform = {DayTransform: "day", HourTransform: "hour", MonthTransform: "month",
                                 YearTransform: "year"}[type(pf.transform)]
    cols["$path"] = W.FilterColumn("$path", "meta", "string")
    cols["$partition"] = W.FilterColumn("$partition", "meta", "string")
    cols["$file_modified_time"] = W.FilterColumn("$file_modified_time", "meta", "ts")
    return cols


def _const_evaluator(ctx: Ctx):
    def ev(e: exp.Expression, kind: str):
        cur = ctx.engine.duck_cursor(ctx.session)
        try:
            sql_expr = e.sql(dialect="duckdb")
            if kind == "ts":
                q = f"SELECT epoch_us(CAST(({sql_expr}) AS TIMESTAMPTZ))"
            elif kind == "date":
                q = f"SELECT CAST(({sql_expr}) AS DATE)"
            elif kind == "boolean":
                q = f"SELECT CAST(({sql_expr}) AS BOOLEAN)"
            else:
                q = f"SELECT {sql_expr}"
            try:
                v = cur.execute(q).fetchone()[0]
            except Exception:
                raise W.Residual() from None
        finally:
            cur.close()
        if kind == "int" and v is not None:
            if isinstance(v, (Decimal, float)) and v != int(v):
                return v
            return int(v)
        if kind == "string" and v is not None and not isinstance(v, str):
            raise W.Residual()
        return v
    return ev


def _day_start(ctx: Ctx):
    from .wire import zone

    z = zone(ctx.session.time_zone)

    def start(d: dt.date) -> int:
        local = dt.datetime(d.year, d.month, d.day, tzinfo=z)
        return (local - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
    return start


def select_files(ctx: Ctx, tbl: Table, files: list[DataFile], st) -> list[DataFile]:
    if st.where_sql is None:
        return files
    try:
        tree = W.parse_where(st.where_sql)
    except Exception as e:
        from .query import syntax_error
        raise syntax_error(ctx.sql, e) from None
    cols = filter_columns(tbl)
    an = W.Analyzer(ctx.sql, st.where_offset - W.WHERE_PREFIX_LEN, cols, _const_evaluator(ctx), _day_start(ctx))
    an.check_columns(tree)
    try:
        domains = an.domains(tree)
        if "__false__" in domains:
            return []
        for name, d in domains.items():
            col = cols[name]
            if col.kind == "temporal" and not W.aligned(col, d):
                raise W.Residual()
    except W.Residual:
        raise TrinoError("NOT_SUPPORTED", W.FILTER_NODE) from None
    spec = tbl.spec()
    schema = tbl.schema()
    out = []
    for f in files:
        ok = True
        for name, d in domains.items():
            col = cols[name]
            if col.kind == "meta":
                if name == "$path":
                    v = f.file_path
                elif name == "$partition":
                    v = spec.partition_to_path(f.partition, schema) if spec.fields else ""
                else:
                    try:
                        v = os.stat(local_path(f.file_path)).st_mtime_ns // 1_000_000 * 1000
                    except FileNotFoundError:
                        v = None
            else:
                idx = None
                for i, pf in enumerate(spec.fields):
                    if schema.find_field(pf.source_id).name.lower() == name:
                        if col.kind == "identity" and isinstance(pf.transform, IdentityTransform):
                            idx = i
                        elif col.kind == "temporal" and not isinstance(pf.transform, IdentityTransform):
                            idx = i
                v = f.partition[idx] if idx is not None else None
                if col.kind == "temporal" and v is not None:
                    v = W.partition_start(col.transform, col.value_kind, v)
                elif col.kind == "identity" and col.value_kind == "decimal" and v is not None:
                    v = Decimal(v)
            if not d.contains(v):
                ok = False
                break
        if ok:
            out.append(f)
    return out


def optimize(ctx: Ctx, values: dict, st) -> Result:
    version = ctx.session.server_version
    tbl = ctx.load()
    threshold = values["file_size_threshold"]
    files = _live_files(tbl)
    selected = select_files(ctx, tbl, files, st)
    groups: dict[tuple, list[DataFile]] = {}
    for f in selected:
        if f.file_size_in_bytes < threshold:
            groups.setdefault((f.spec_id, tuple(f.partition)), []).append(f)
    rewrite = {k: v for k, v in groups.items() if len(v) > 1}
    todo = [f for fs in rewrite.values() for f in fs]
    prog = Progress(total_splits=len(todo))
    ctx.progress(prog)
    if not todo:
        return _optimize_result(version, 0, 0, 0)
    writer = _Writer(tbl, ctx)
    written: list[DataFile] = []
    rows_written = 0
    try:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=2)
        for key, fs in sorted(rewrite.items(), key=lambda kv: str(kv[0])):
            parts = []
            # two readers ahead of the consumer; cancellation is checked between files
            futures = [pool.submit(pq.read_table, local_path(f.file_path)) for f in fs[:2]]
            for i, f in enumerate(fs):
                ctx.check_cancel()
                prog.running_splits = min(2, len(fs) - i)
                t = futures[i].result()
                if i + 2 < len(fs):
                    futures.append(pool.submit(pq.read_table, local_path(fs[i + 2].file_path)))
                parts.append(t)
                prog.completed_splits += 1
                prog.running_splits = min(2, len(fs) - i - 1)
                prog.processed_rows += t.num_rows
                prog.processed_bytes += f.file_size_in_bytes
                prog.physical_input_bytes += f.file_size_in_bytes
                ctx.progress(prog)
            ctx.check_cancel()
            merged = pa.concat_tables(parts, promote_options="default")
            for df in writer.write(fs[0], merged, _target_max_file_size(ctx)):
                written.append(df)
                prog.physical_written_bytes += df.file_size_in_bytes
            rows_written += merged.num_rows
            ctx.progress(prog)
        ctx.check_cancel()
        pool.shutdown(wait=True)
        _commit_replace(ctx, tbl, todo, written)
    except BaseException:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        except NameError:
            pass
        for df in written:
            try:
                os.unlink(local_path(df.file_path))
            except OSError:
                pass
        raise
    return _optimize_result(version, rows_written, len(todo), len(written))


def _optimize_result(version: int, rows: int, rewritten: int, added: int) -> Result:
    if version >= 481:
        return metrics_result({"rewritten_data_files_count": rewritten, "removed_delete_files_count": 0,
                               "added_data_files_count": added})
    return rows_result([[rows]])


def _target_max_file_size(ctx: Ctx) -> int:
    v = ctx.session.properties.get(f"{ctx.catalog}.target_max_file_size")
    try:
        return parse_data_size(v) if v else 1 << 30
    except UnitError:
        return 1 << 30


class _Writer:
    """New data files in the table's layout (Trino names them <query id>-<uuid>.parquet)."""

    def __init__(self, tbl: Table, ctx: Ctx) -> None:
        from ..scenarios.history import FastDataFileWriter

        self.fast = FastDataFileWriter(tbl.metadata, tbl.io)
        self.prefix = (ctx.session.query_id or _query_id())

    def write(self, like: DataFile, table: pa.Table, target: int) -> list[DataFile]:
        values = tuple(like.partition) if self.fast.spec.fields else None
        out = []
        # split only when a single file would exceed the writer target
        est = max(1, table.nbytes)
        pieces = max(1, int(est // max(target, 1)) + (1 if est % max(target, 1) else 0)) if est > target else 1
        step = -(-table.num_rows // pieces)
        for i in range(pieces):
            chunk = table.slice(i * step, step)
            if chunk.num_rows:
                out.append(self.fast.write_one(values, chunk))
        return out


def _commit_replace(ctx: Ctx, tbl: Table, removed: list[DataFile], added: list[DataFile]) -> None:
    from pyiceberg.exceptions import CommitFailedException

    tx = tbl.transaction()
    producer = _ReplaceFiles(operation=Operation.OVERWRITE, transaction=tx, io=tbl.io,
                             snapshot_properties=ctx.commit_properties())
    for f in removed:
        producer.delete_data_file(f)
    for f in added:
        producer.append_data_file(f)
    try:
        producer.commit()
        tx.commit_transaction()
    except CommitFailedException as e:
        raise TrinoError("ICEBERG_COMMIT_ERROR", f"Failed to commit the transaction during optimize: {e}") from None


# -- expire_snapshots -----------------------------------------------------------------------------------------

def _reachable(tbl: Table, snapshots) -> tuple[set[str], set[str], set[str]]:
    """(manifest lists, manifests, data/delete files) referenced by the given snapshots."""
    lists, manifests, files = set(), set(), set()
    seen = set()
    for s in snapshots:
        lists.add(s.manifest_list)
        for m in s.manifests(tbl.io):
            manifests.add(m.manifest_path)
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=False):
                files.add(e.data_file.file_path)
    return lists, manifests, files


def expire_snapshots(ctx: Ctx, values: dict) -> Result:
    version = ctx.session.server_version
    retention = values["retention_threshold"]
    _check_retention(ctx, retention, "expire")
    tbl = ctx.load()
    md = tbl.metadata
    now_ms = int(time.time() * 1000)
    older_than = now_ms - int(retention * 1000)
    retain_last = values.get("retain_last") or int(md.properties.get("history.expire.min-snapshots-to-keep", "1"))
    keep: set[int] = set()
    for ref in md.refs.values():
        keep.add(ref.snapshot_id)
    cur = md.current_snapshot()
    n = 0
    s = cur
    while s is not None and n < retain_last:
        keep.add(s.snapshot_id)
        n += 1
        s = md.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
    expire = [s for s in md.snapshots if s.timestamp_ms < older_than and s.snapshot_id not in keep]
    if not expire:
        return coordinator_result(version, {})
    remaining = [s for s in md.snapshots if s.snapshot_id not in {e.snapshot_id for e in expire}]
    before = _reachable(tbl, md.snapshots)
    after = _reachable(tbl, remaining)
    from pyiceberg.table.update import RemoveSnapshotsUpdate

    with tbl.transaction() as tx:
        tx._apply((RemoveSnapshotsUpdate(snapshot_ids=[s.snapshot_id for s in expire]),), ())
    # Iceberg's expiration deletes the files only the expired snapshots referenced
    for kind in range(3):
        for path in before[kind] - after[kind]:
            try:
                os.unlink(local_path(path))
            except OSError:
                pass
    return coordinator_result(version, {})


# -- remove_orphan_files ---------------------------------------------------------------------------------------

def remove_orphan_files(ctx: Ctx, values: dict) -> Result:
    version = ctx.session.server_version
    retention = values["retention_threshold"]
    _check_retention(ctx, retention, "orphan")
    tbl = ctx.load()
    md = tbl.metadata
    if md.current_snapshot() is None:
        return coordinator_result(version, {"processed_manifests_count": 0, "active_files_count": 0,
                                            "scanned_files_count": 0, "deleted_files_count": 0}
                                  | ({"deleted_bytes": 0} if version >= 481 else {}))
    lists, manifests, files = _reachable(tbl, md.snapshots)
    valid = set()
    for p in lists | manifests | files:
        valid.add(os.path.normpath(local_path(p)))
    valid.add(os.path.normpath(local_path(tbl.metadata_location)))
    for e in md.metadata_log:
        valid.add(os.path.normpath(local_path(e.metadata_file)))
    for st in getattr(md, "statistics", []) or []:
        valid.add(os.path.normpath(local_path(st.statistics_path)))
    root = local_path(md.location)
    cutoff = time.time() - retention
    scanned = deleted = deleted_bytes = 0
    for dirpath, _dirs, names in os.walk(root):
        for nm in names:
            p = os.path.normpath(os.path.join(dirpath, nm))
            scanned += 1
            if p in valid or nm == "version-hint.text":
                continue
            try:
                stt = os.stat(p)
            except FileNotFoundError:
                continue
            if stt.st_mtime < cutoff:
                os.unlink(p)
                deleted += 1
                deleted_bytes += stt.st_size
    metrics = {"processed_manifests_count": len(manifests), "active_files_count": len(valid),
               "scanned_files_count": scanned, "deleted_files_count": deleted}
    if version >= 481:
        metrics["deleted_bytes"] = deleted_bytes
    return coordinator_result(version, metrics)


# -- optimize_manifests ----------------------------------------------------------------------------------------------

class _RewriteManifests(_CachedMetadataMixin, _SnapshotProducer["_RewriteManifests"]):
    def __init__(self, transaction, io, groups, snapshot_properties, previous_summary, replaced: int) -> None:
        super().__init__(Operation.REPLACE, transaction, io, snapshot_properties=snapshot_properties)
        self._groups = groups
        self._previous = previous_summary or {}
        self._replaced = replaced
        self._created = 0

    def _deleted_entries(self) -> list[ManifestEntry]:
        return []

    def _existing_manifests(self):
        out = []
        for spec_id, entries in self._groups:
            with self.new_manifest_writer(self.spec(spec_id)) as w:
                for e in entries:
                    w.add_entry(ManifestEntry.from_args(
                        status=ManifestEntryStatus.EXISTING, snapshot_id=e.snapshot_id,
                        sequence_number=e.sequence_number, file_sequence_number=e.file_sequence_number,
                        data_file=e.data_file))
            out.append(w.to_manifest_file())
        self._created = len(out)
        return out

    def _summary(self, snapshot_properties: dict[str, str] = {}) -> Summary:  # noqa: B006
        tail = ("engine-name", "engine-version", "iceberg-version")
        props = {k: v for k, v in snapshot_properties.items() if k not in tail}
        props["manifests-created"] = str(len(self._groups))
        props["manifests-kept"] = "0"
        props["manifests-replaced"] = str(self._replaced)
        props["entries-processed"] = str(sum(len(es) for _, es in self._groups))
        for k in ("total-records", "total-files-size", "total-data-files", "total-delete-files",
                  "total-position-deletes", "total-equality-deletes"):
            if k in self._previous:
                props[k] = self._previous[k]
        props.update({k: snapshot_properties[k] for k in tail if k in snapshot_properties})
        from ..scenarios.history import order_summary

        return Summary(operation=Operation.REPLACE, **order_summary(props))


def optimize_manifests(ctx: Ctx) -> Result:
    version = ctx.session.server_version
    tbl = ctx.load()
    snap = tbl.metadata.current_snapshot()
    empty = {} if version >= 480 else {}
    if snap is None:
        return coordinator_result(version, empty)
    manifests = [m for m in snap.manifests(tbl.io) if m.content == ManifestContent.DATA]
    target = int(tbl.metadata.properties.get("commit.manifest.target-size-bytes", str(8 * 1024 * 1024)))
    if not manifests or (len(manifests) == 1 and manifests[0].manifest_length < target):
        return coordinator_result(version, empty)
    entries = []
    for m in manifests:
        for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
            entries.append(e)
    # cluster by the first partition field's value (at most 200 clusters), as Trino 480 does
    spec = tbl.spec()
    clusters: dict[tuple, list] = {}
    for e in entries:
        first = e.data_file.partition[0] if len(e.data_file.partition) else None
        key = (e.data_file.spec_id, first)
        clusters.setdefault(key, []).append(e)
    if len(clusters) > 200:
        merged: dict[tuple, list] = {}
        for (spec_id, first), es in clusters.items():
            merged.setdefault((spec_id, hash(first) % 200), []).extend(es)
        clusters = merged
    groups = [(k[0], v) for k, v in sorted(clusters.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))]
    tx = tbl.transaction()
    producer = _RewriteManifests(tx, tbl.io, groups, ctx.commit_properties(),
                                 snap.summary.additional_properties if snap.summary else {}, len(manifests))
    producer.commit()
    tx.commit_transaction()
    if version < 480:
        return coordinator_result(version, {})
    return coordinator_result(version, {
        "rewritten_manifests_count": len(manifests), "added_manifests_count": len(groups),
        "kept_manifests_count": 0, "processed_manifest_entries_count": len(entries)})


# -- rollback_to_snapshot --------------------------------------------------------------------------------------------

def rollback_to_snapshot(ctx: Ctx, values: dict) -> Result:
    tbl = ctx.load()
    sid = values.get("snapshot_id")
    if sid is None or tbl.metadata.snapshot_by_id(sid) is None:
        raise TrinoError("INVALID_PROCEDURE_ARGUMENT", f"Snapshot {sid} does not exist")
    from pyiceberg.table.update import SetSnapshotRefUpdate
    from pyiceberg.table.refs import SnapshotRefType

    with tbl.transaction() as tx:
        tx._apply((SetSnapshotRefUpdate(snapshot_id=sid, ref_name="main", type=SnapshotRefType.BRANCH),), ())
    return coordinator_result(ctx.session.server_version, {})
