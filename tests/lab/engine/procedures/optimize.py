"""`optimize`: rewrite the small files of each partition into one and commit a `replace`
snapshot; `WHERE` selects files by the domains Trino's planner can absorb."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import DataFile, ManifestContent, ManifestEntry, ManifestEntryStatus
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _OverwriteFiles
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, YearTransform
from pyiceberg import types as it
from sqlglot import exp

from ...common.errors import TrinoError
from ..api import Progress, Result
from ..units import UnitError, parse_data_size
from ..warehouse import local_path
from .. import where as W
from .shared import CachedMetadataMixin, Ctx, metrics_result, new_query_id, rows_result


class _ReplaceFiles(CachedMetadataMixin, _OverwriteFiles):
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
        from ...scenarios.history import order_summary

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
    from ..wire import zone

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
        from ..query import syntax_error
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
        # Trino 476 fails the plan with an internal error, not a user error
        raise TrinoError("GENERIC_INTERNAL_ERROR", W.FILTER_NODE) from None
    schema = tbl.schema()
    specs = tbl.specs()

    def field_index(spec, name: str, kind: str) -> int | None:
        for i, pf in enumerate(spec.fields):
            if schema.find_field(pf.source_id).name.lower() == name:
                if kind == "identity" and isinstance(pf.transform, IdentityTransform):
                    return i
                if kind == "temporal" and not isinstance(pf.transform, IdentityTransform):
                    return i
        return None

    # A constraint on a column is enforced only when every spec of the files it reads
    # partitions by that column (an evolved table's older files may not): else the plan
    # keeps a filter, and Trino refuses it.
    used = {f.spec_id for f in files}
    for name in domains:
        col = cols[name]
        if col.kind != "meta" and any(field_index(specs[i], name, col.kind) is None for i in used):
            raise TrinoError("GENERIC_INTERNAL_ERROR", W.FILTER_NODE)
    out = []
    for f in files:
        spec = specs[f.spec_id]
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
                idx = field_index(spec, name, col.kind)
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
    # Trino 476 (the lab's real coordinator) answers with the `rows` column and no row:
    # no data, no updateCount
    return rows_result([])


def _target_max_file_size(ctx: Ctx) -> int:
    v = ctx.session.properties.get(f"{ctx.catalog}.target_max_file_size")
    try:
        return parse_data_size(v) if v else 1 << 30
    except UnitError:
        return 1 << 30


class _Writer:
    """New data files in the table's layout (Trino names them <query id>-<uuid>.parquet)."""

    def __init__(self, tbl: Table, ctx: Ctx) -> None:
        from ...scenarios.history import FastDataFileWriter

        self.fast = FastDataFileWriter(tbl.metadata, tbl.io)
        self.prefix = (ctx.session.query_id or new_query_id())

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
