"""Trino's Iceberg metadata tables ("t$snapshots", "t$files", ...) built from the real table.

Column names and types follow Trino's implementations (plugin/trino-iceberg .../system/*),
not pyiceberg's `inspect` tables. Each builder returns the newest (480) shape; `for_version`
projects it to what an older server had.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

from pyiceberg import types as it
from pyiceberg.conversions import from_bytes
from pyiceberg.manifest import DataFile, ManifestContent, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionField
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, YearTransform

from .relation import Relation
from .types import iceberg_to_trino, partition_field_type, row_type

TS3 = "timestamp(3) with time zone"
EPOCH_DATE = dt.date(1970, 1, 1)

METADATA_TABLES = (
    "snapshots", "history", "metadata_log_entries", "refs", "properties", "partitions", "files",
    "manifests", "all_manifests", "entries", "all_entries",
)


class UnknownMetadataTable(Exception):
    pass


# -- Java-compatible text forms -----------------------------------------------------------

def _java_time(t: dt.time) -> str:
    """java.time.LocalTime.toString()."""
    s = f"{t.hour:02d}:{t.minute:02d}"
    if t.second == 0 and t.microsecond == 0:
        return s
    s += f":{t.second:02d}"
    if t.microsecond == 0:
        return s
    if t.microsecond % 1000 == 0:
        return s + f".{t.microsecond // 1000:03d}"
    return s + f".{t.microsecond:06d}"


def _iso_fraction(us: int) -> str:
    """DateTimeFormatter.ISO_LOCAL_TIME fraction: as many digits as needed."""
    if us == 0:
        return ""
    return "." + f"{us:06d}".rstrip("0")


def micros_to_datetime(us: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)


def human_string(t: it.IcebergType, v: Any) -> str:
    """Iceberg's Transforms.identity().toHumanString(type, value) (Java)."""
    if v is None:
        return "null"
    if isinstance(t, it.DateType):
        d = v if isinstance(v, dt.date) else EPOCH_DATE + dt.timedelta(days=v)
        return d.isoformat()
    if isinstance(t, it.TimestamptzType):
        d = micros_to_datetime(v) if isinstance(v, int) else v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return d.date().isoformat() + "T" + _java_time(d.time()) + "Z"
    if isinstance(t, it.TimestampType):
        d = micros_to_datetime(v) if isinstance(v, int) else v
        return d.date().isoformat() + "T" + _java_time(d.time())
    if isinstance(t, it.TimeType):
        us = v if isinstance(v, int) else (v.hour * 3600 + v.minute * 60 + v.second) * 1_000_000 + v.microsecond
        tt = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)).time()
        return _java_time(tt)
    if isinstance(t, (it.FixedType, it.BinaryType)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(t, it.BooleanType):
        return "true" if v else "false"
    if isinstance(t, (it.FloatType, it.DoubleType)):
        return _java_double(float(v))
    if isinstance(t, it.DecimalType):
        return str(v)
    return str(v)


def _java_double(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e7:
        return f"{x:.1f}"
    r = repr(x)
    if "e" in r:
        m, e = r.split("e")
        if "." not in m:
            m += ".0"
        return f"{m}E{int(e)}"
    return r


def _json_single_value(t: it.IcebergType, v: Any) -> Any:
    """Iceberg's SingleValueParser.toJson (as a Python JSON value)."""
    if v is None:
        return None
    if isinstance(t, (it.IntegerType, it.LongType)):
        return int(v)
    if isinstance(t, (it.FloatType, it.DoubleType)):
        return float(v)
    if isinstance(t, it.BooleanType):
        return bool(v)
    if isinstance(t, it.DateType):
        return (EPOCH_DATE + dt.timedelta(days=v)).isoformat() if isinstance(v, int) else v.isoformat()
    if isinstance(t, it.TimestamptzType):
        d = micros_to_datetime(v) if isinstance(v, int) else v.astimezone(dt.timezone.utc).replace(tzinfo=None)
        return d.strftime("%Y-%m-%dT%H:%M:%S") + _iso_fraction(d.microsecond) + "+00:00"
    if isinstance(t, it.TimestampType):
        d = micros_to_datetime(v) if isinstance(v, int) else v
        return d.strftime("%Y-%m-%dT%H:%M:%S") + _iso_fraction(d.microsecond)
    if isinstance(t, it.DecimalType):
        return str(v)
    if isinstance(t, (it.FixedType, it.BinaryType)):
        return bytes(v).hex()
    return str(v)


# -- partition values ---------------------------------------------------------------------

def all_partition_fields(table: Table) -> list[PartitionField]:
    """The union of partition fields across all specs (by field id), in spec order."""
    seen: dict[int, PartitionField] = {}
    for spec_id in sorted(table.specs()):
        for pf in table.specs()[spec_id].fields:
            seen.setdefault(pf.field_id, pf)
    return list(seen.values())


def partition_row_type(table: Table) -> str | None:
    fields = all_partition_fields(table)
    if not fields:
        return None
    schema = table.schema()
    return row_type([(pf.name, partition_field_type(schema, pf)) for pf in fields])


def _partition_value_for_arrow(schema, pf: PartitionField, v: Any) -> Any:
    if v is None:
        return None
    tr = pf.transform
    src = schema.find_field(pf.source_id).field_type
    if isinstance(tr, DayTransform):
        return EPOCH_DATE + dt.timedelta(days=v) if isinstance(v, int) else v
    if isinstance(tr, IdentityTransform):
        if isinstance(src, it.DateType) and isinstance(v, int):
            return EPOCH_DATE + dt.timedelta(days=v)
        if isinstance(src, it.DecimalType) and not isinstance(v, Decimal):
            return Decimal(v)
        if isinstance(src, (it.FixedType, it.BinaryType)):
            return bytes(v)
    return v


def partition_struct(table: Table, data_file: DataFile) -> dict | None:
    fields = all_partition_fields(table)
    if not fields:
        return None
    spec = table.specs()[data_file.spec_id]
    schema = table.schema()
    by_id = {pf.field_id: i for i, pf in enumerate(spec.fields)}
    out = {}
    for pf in fields:
        if pf.field_id in by_id:
            out[pf.name] = _partition_value_for_arrow(schema, pf, data_file.partition[by_id[pf.field_id]])
        else:
            out[pf.name] = None
    return out


def partition_path(table: Table, data_file: DataFile) -> str:
    spec = table.specs()[data_file.spec_id]
    if not spec.fields:
        return ""
    return spec.partition_to_path(data_file.partition, table.schema())


# -- file-level columns -----------------------------------------------------------------------

def _primitive_fields(schema) -> dict[int, Any]:
    out = {}

    def visit(fields):
        for f in fields:
            if isinstance(f.field_type, it.StructType):
                visit(f.field_type.fields)
            elif isinstance(f.field_type, (it.ListType, it.MapType)):
                continue
            else:
                out[f.field_id] = f
    visit(schema.fields)
    return out


def _map_items(m: dict | None) -> list | None:
    if m is None:
        return None
    return sorted(m.items())


def _bounds(prims: dict[int, Any], m: dict | None) -> list | None:
    if m is None:
        return None
    out = []
    for k, b in sorted(m.items()):
        f = prims.get(k)
        if f is None:
            continue
        try:
            v = from_bytes(f.field_type, b)
        except Exception:
            continue
        out.append((k, human_string(f.field_type, v)))
    return out


def readable_metrics(prims: dict[int, Any], df: DataFile) -> str:
    obj = {}
    for f in sorted(prims.values(), key=lambda x: x.name):
        fid = f.field_id

        def bound(m):
            if not m or fid not in m:
                return None
            try:
                return _json_single_value(f.field_type, from_bytes(f.field_type, m[fid]))
            except Exception:
                return None
        obj[f.name] = {
            "column_size": (df.column_sizes or {}).get(fid),
            "value_count": (df.value_counts or {}).get(fid),
            "null_value_count": (df.null_value_counts or {}).get(fid),
            "nan_value_count": (df.nan_value_counts or {}).get(fid),
            "lower_bound": bound(df.lower_bounds),
            "upper_bound": bound(df.upper_bounds),
        }
    return json.dumps(obj, separators=(",", ":"))


def _file_format(df: DataFile) -> str:
    ff = df.file_format
    return str(getattr(ff, "value", ff)).upper()


def data_file_columns(table: Table) -> list[tuple[str, str]]:
    cols = [
        ("content", "integer"),
        ("file_path", "varchar"),
        ("file_format", "varchar"),
        ("spec_id", "integer"),
    ]
    prt = partition_row_type(table)
    if prt:
        cols.append(("partition", prt))
    cols += [
        ("record_count", "bigint"),
        ("file_size_in_bytes", "bigint"),
        ("column_sizes", "map(integer, bigint)"),
        ("value_counts", "map(integer, bigint)"),
        ("null_value_counts", "map(integer, bigint)"),
        ("nan_value_counts", "map(integer, bigint)"),
        ("lower_bounds", "map(integer, varchar)"),
        ("upper_bounds", "map(integer, varchar)"),
        ("key_metadata", "varbinary"),
        ("split_offsets", "array(bigint)"),
        ("equality_ids", "array(integer)"),
        ("sort_order_id", "integer"),
    ]
    return cols


def data_file_row(table: Table, prims: dict[int, Any], df: DataFile) -> dict[str, Any]:
    content = df.content
    return {
        "content": int(getattr(content, "value", content) or 0),
        "file_path": df.file_path,
        "file_format": _file_format(df),
        "spec_id": df.spec_id,
        "partition": partition_struct(table, df),
        "record_count": df.record_count,
        "file_size_in_bytes": df.file_size_in_bytes,
        "column_sizes": _map_items(df.column_sizes),
        "value_counts": _map_items(df.value_counts),
        "null_value_counts": _map_items(df.null_value_counts),
        "nan_value_counts": _map_items(df.nan_value_counts),
        "lower_bounds": _bounds(prims, df.lower_bounds),
        "upper_bounds": _bounds(prims, df.upper_bounds),
        "key_metadata": bytes(df.key_metadata) if df.key_metadata is not None else None,
        "split_offsets": list(df.split_offsets) if df.split_offsets is not None else None,
        "equality_ids": list(df.equality_ids) if df.equality_ids is not None else None,
        "sort_order_id": df.sort_order_id,
    }


# -- builders ---------------------------------------------------------------------------------

def ms_to_us(ms: int) -> int:
    return ms * 1000


def snapshots(table: Table) -> Relation:
    cols = [
        ("committed_at", TS3), ("snapshot_id", "bigint"), ("parent_id", "bigint"),
        ("operation", "varchar"), ("manifest_list", "varchar"), ("summary", "map(varchar, varchar)"),
    ]
    rows = []
    for s in table.metadata.snapshots:
        summary = s.summary
        rows.append({
            "committed_at": ms_to_us(s.timestamp_ms),
            "snapshot_id": s.snapshot_id,
            "parent_id": s.parent_snapshot_id,
            "operation": summary.operation.value if summary is not None else None,
            "manifest_list": s.manifest_list,
            "summary": list(summary.additional_properties.items()) if summary is not None else [],
        })
    return Relation.from_rows(cols, rows)


def _current_ancestors(table: Table) -> set[int]:
    md = table.metadata
    out = set()
    s = md.current_snapshot()
    while s is not None:
        out.add(s.snapshot_id)
        s = md.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
    return out


def history(table: Table) -> Relation:
    cols = [("made_current_at", TS3), ("snapshot_id", "bigint"), ("parent_id", "bigint"),
            ("is_current_ancestor", "boolean")]
    md = table.metadata
    anc = _current_ancestors(table)
    rows = []
    for e in md.snapshot_log:
        s = md.snapshot_by_id(e.snapshot_id)
        rows.append({
            "made_current_at": ms_to_us(e.timestamp_ms),
            "snapshot_id": e.snapshot_id,
            "parent_id": s.parent_snapshot_id if s is not None else None,
            "is_current_ancestor": e.snapshot_id in anc,
        })
    return Relation.from_rows(cols, rows)


def metadata_log_entries(table: Table, metadata_location: str) -> Relation:
    cols = [("timestamp", TS3), ("file", "varchar"), ("latest_snapshot_id", "bigint"),
            ("latest_schema_id", "integer"), ("latest_sequence_number", "bigint")]
    md = table.metadata
    entries = [(e.timestamp_ms, e.metadata_file) for e in md.metadata_log]
    entries.append((md.last_updated_ms, metadata_location))
    log = sorted(md.snapshot_log, key=lambda e: e.timestamp_ms)
    rows = []
    for ts, f in entries:
        sid = None
        for e in log:
            if e.timestamp_ms <= ts:
                sid = e.snapshot_id
        snap = md.snapshot_by_id(sid) if sid is not None else None
        rows.append({
            "timestamp": ms_to_us(ts),
            "file": f,
            "latest_snapshot_id": sid,
            "latest_schema_id": snap.schema_id if snap is not None else None,
            "latest_sequence_number": snap.sequence_number if snap is not None else None,
        })
    return Relation.from_rows(cols, rows)


def refs(table: Table) -> Relation:
    cols = [("name", "varchar"), ("type", "varchar"), ("snapshot_id", "bigint"),
            ("max_reference_age_in_ms", "bigint"), ("min_snapshots_to_keep", "integer"),
            ("max_snapshot_age_in_ms", "bigint")]
    rows = []
    for name, r in table.metadata.refs.items():
        rows.append({
            "name": name,
            "type": str(r.snapshot_ref_type.value).upper(),
            "snapshot_id": r.snapshot_id,
            "max_reference_age_in_ms": r.max_ref_age_ms,
            "min_snapshots_to_keep": r.min_snapshots_to_keep,
            "max_snapshot_age_in_ms": r.max_snapshot_age_ms,
        })
    return Relation.from_rows(cols, rows)


RESERVED_PROPERTIES = {"provider", "format", "current-snapshot-id", "location", "format-version"}


def properties(table: Table, server_version: int) -> Relation:
    cols = [("key", "varchar"), ("value", "varchar")]
    props = table.metadata.properties
    rows: list[tuple[str, str]] = []
    if server_version >= 473:
        cur = table.metadata.current_snapshot()
        rows.append(("format", "iceberg/" + props.get("write.format.default", "parquet")))
        rows.append(("provider", "iceberg"))
        rows.append(("current-snapshot-id", str(cur.snapshot_id) if cur is not None else "none"))
        rows.append(("location", table.metadata.location))
        rows.append(("format-version", str(table.metadata.format_version)))
        so = table.sort_order()
        if so.fields and all(isinstance(f.transform, IdentityTransform) for f in so.fields):
            names = []
            for f in so.fields:
                col = table.schema().find_field(f.source_id).name
                d = "ASC" if str(f.direction).upper().endswith("ASC") else "DESC"
                nulls = "NULLS FIRST" if "FIRST" in str(f.null_order).upper() else "NULLS LAST"
                # Iceberg's SortOrder text, direction and null order always spelled out
                names.append(f"{col} {d} {nulls}")
            rows.append(("sort-order", ", ".join(names)))
        rows += [(k, v) for k, v in props.items() if k not in RESERVED_PROPERTIES]
    else:
        rows += list(props.items())
    return Relation.from_rows(cols, [list(r) for r in rows])


def live_entries(table: Table, snapshot=None):
    """(manifest, entry) for live data entries of a snapshot (default: current)."""
    snap = snapshot or table.metadata.current_snapshot()
    if snap is None:
        return
    for m in snap.manifests(table.io):
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            yield m, e


def files(table: Table) -> Relation:
    cols = data_file_columns(table) + [("readable_metrics", "json")]
    prims = _primitive_fields(table.schema())
    rows = []
    for m, e in live_entries(table):
        row = data_file_row(table, prims, e.data_file)
        row["readable_metrics"] = readable_metrics(prims, e.data_file)
        rows.append(row)
    return Relation.from_rows(cols, rows)


def _merge_min(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _merge_max(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def partitions(table: Table) -> Relation:
    schema = table.schema()
    prt = partition_row_type(table)
    cols: list[tuple[str, str]] = []
    if prt:
        cols.append(("partition", prt))
    cols += [("record_count", "bigint"), ("file_count", "bigint"), ("total_size", "bigint")]
    identity_sources = {pf.source_id for pf in table.spec().fields if isinstance(pf.transform, IdentityTransform)}
    data_cols = [f for f in schema.fields if f.field_id not in identity_sources and f.field_type.is_primitive]
    if data_cols:
        cols.append(("data", row_type([
            (f.name, row_type([("min", iceberg_to_trino(f.field_type)), ("max", iceberg_to_trino(f.field_type)),
                               ("null_count", "bigint"), ("nan_count", "bigint")]))
            for f in data_cols
        ])))
    if table.metadata.current_snapshot() is None:
        return Relation.from_rows(cols, [])
    groups: dict[Any, dict[str, Any]] = {}
    for _m, e in live_entries(table):
        df = e.data_file
        if int(getattr(df.content, "value", df.content) or 0) != 0:
            continue
        ps = partition_struct(table, df)
        key = tuple(sorted(ps.items())) if ps else ()
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"partition": ps, "record_count": 0, "file_count": 0, "total_size": 0,
                               "min": {}, "max": {}, "nulls": {}, "nans": {}, "no_nulls": set(), "no_nans": set()}
        g["record_count"] += df.record_count
        g["file_count"] += 1
        g["total_size"] += df.file_size_in_bytes
        for f in data_cols:
            fid = f.field_id
            if df.lower_bounds and fid in df.lower_bounds:
                g["min"][fid] = _merge_min(g["min"].get(fid), from_bytes(f.field_type, df.lower_bounds[fid]))
            if df.upper_bounds and fid in df.upper_bounds:
                g["max"][fid] = _merge_max(g["max"].get(fid), from_bytes(f.field_type, df.upper_bounds[fid]))
            nc = (df.null_value_counts or {}).get(fid)
            if nc is None:
                g["no_nulls"].add(fid)
            else:
                g["nulls"][fid] = g["nulls"].get(fid, 0) + nc
            nn = (df.nan_value_counts or {}).get(fid)
            if nn is None:
                g["no_nans"].add(fid)
            else:
                g["nans"][fid] = g["nans"].get(fid, 0) + nn
    rows = []
    for g in groups.values():
        row: dict[str, Any] = {}
        if prt:
            row["partition"] = g["partition"]
        row["record_count"] = g["record_count"]
        row["file_count"] = g["file_count"]
        row["total_size"] = g["total_size"]
        if data_cols:
            data = {}
            for f in data_cols:
                fid = f.field_id
                mn, mx = g["min"].get(fid), g["max"].get(fid)
                nulls = None if fid in g["no_nulls"] else g["nulls"].get(fid)
                nans = None if fid in g["no_nans"] else g["nans"].get(fid)
                if mn is None and mx is None and nulls is None:
                    data[f.name] = None
                else:
                    data[f.name] = {"min": _arrow_value(f.field_type, mn), "max": _arrow_value(f.field_type, mx),
                                    "null_count": nulls, "nan_count": nans}
            row["data"] = data
        rows.append(row)
    return Relation.from_rows(cols, rows)


def _arrow_value(t: it.IcebergType, v: Any) -> Any:
    if v is None:
        return None
    if isinstance(t, it.DateType) and isinstance(v, int):
        return EPOCH_DATE + dt.timedelta(days=v)
    if isinstance(t, it.UUIDType):
        return str(v)
    return v


def _partition_summaries(table: Table, m: ManifestFile) -> list[dict]:
    spec = table.specs()[m.partition_spec_id]
    schema = table.schema()
    ptype = spec.partition_type(schema)
    out = []
    for i, s in enumerate(m.partitions or []):
        ft = ptype.fields[i].field_type if i < len(ptype.fields) else it.StringType()

        def h(b):
            if b is None:
                return None
            try:
                return spec.fields[i].transform.to_human_string(ft, from_bytes(ft, b)) \
                    if not isinstance(spec.fields[i].transform, IdentityTransform) \
                    else human_string(ft, from_bytes(ft, b))
            except Exception:
                return None
        out.append({"contains_null": s.contains_null, "contains_nan": s.contains_nan,
                    "lower_bound": h(s.lower_bound), "upper_bound": h(s.upper_bound)})
    return out


SUMMARY_TYPE = "array(row(contains_null boolean, contains_nan boolean, lower_bound varchar, upper_bound varchar))"


def manifests(table: Table) -> Relation:
    cols = [
        ("content", "integer"), ("path", "varchar"), ("length", "bigint"), ("partition_spec_id", "integer"),
        ("added_snapshot_id", "bigint"), ("added_data_files_count", "integer"), ("added_rows_count", "bigint"),
        ("existing_data_files_count", "integer"), ("existing_rows_count", "bigint"),
        ("deleted_data_files_count", "integer"), ("deleted_rows_count", "bigint"),
        ("partition_summaries", SUMMARY_TYPE),
    ]
    snap = table.metadata.current_snapshot()
    rows = []
    if snap is not None:
        for m in snap.manifests(table.io):
            rows.append({
                "content": int(m.content),
                "path": m.manifest_path,
                "length": m.manifest_length,
                "partition_spec_id": m.partition_spec_id,
                "added_snapshot_id": m.added_snapshot_id,
                "added_data_files_count": m.added_files_count,
                "added_rows_count": m.added_rows_count,
                "existing_data_files_count": m.existing_files_count,
                "existing_rows_count": m.existing_rows_count,
                "deleted_data_files_count": m.deleted_files_count,
                "deleted_rows_count": m.deleted_rows_count,
                "partition_summaries": _partition_summaries(table, m),
            })
    return Relation.from_rows(cols, rows)


def all_manifests(table: Table) -> Relation:
    cols = [
        ("content", "integer"), ("path", "varchar"), ("length", "bigint"), ("partition_spec_id", "integer"),
        ("added_snapshot_id", "bigint"), ("added_data_files_count", "integer"),
        ("existing_data_files_count", "integer"), ("deleted_data_files_count", "integer"),
        ("added_delete_files_count", "integer"), ("existing_delete_files_count", "integer"),
        ("deleted_delete_files_count", "integer"), ("partition_summaries", SUMMARY_TYPE),
        ("reference_snapshot_id", "bigint"),
    ]
    rows = []
    for snap in table.metadata.snapshots:
        for m in snap.manifests(table.io):
            data = m.content == ManifestContent.DATA
            rows.append({
                "content": int(m.content),
                "path": m.manifest_path,
                "length": m.manifest_length,
                "partition_spec_id": m.partition_spec_id,
                "added_snapshot_id": m.added_snapshot_id,
                "added_data_files_count": m.added_files_count if data else 0,
                "existing_data_files_count": m.existing_files_count if data else 0,
                "deleted_data_files_count": m.deleted_files_count if data else 0,
                "added_delete_files_count": 0 if data else m.added_files_count,
                "existing_delete_files_count": 0 if data else m.existing_files_count,
                "deleted_delete_files_count": 0 if data else m.deleted_files_count,
                "partition_summaries": _partition_summaries(table, m),
                "reference_snapshot_id": snap.snapshot_id,
            })
    return Relation.from_rows(cols, rows)


def _entries(table: Table, snapshots_) -> Relation:
    dfc = data_file_columns(table)
    cols = [
        ("status", "integer"), ("snapshot_id", "bigint"), ("sequence_number", "bigint"),
        ("file_sequence_number", "bigint"),
        ("data_file", row_type(dfc)),
        ("readable_metrics", "json"),
    ]
    prims = _primitive_fields(table.schema())
    rows = []
    seen: set[str] = set()
    for snap in snapshots_:
        for m in snap.manifests(table.io):
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            for e in m.fetch_manifest_entry(table.io, discard_deleted=False):
                rows.append({
                    "status": int(e.status),
                    "snapshot_id": e.snapshot_id,
                    "sequence_number": e.sequence_number,
                    "file_sequence_number": e.file_sequence_number,
                    "data_file": data_file_row(table, prims, e.data_file),
                    "readable_metrics": readable_metrics(prims, e.data_file),
                })
    return Relation.from_rows(cols, rows)


def entries(table: Table) -> Relation:
    snap = table.metadata.current_snapshot()
    return _entries(table, [snap] if snap is not None else [])


def all_entries(table: Table) -> Relation:
    return _entries(table, list(table.metadata.snapshots))


def build(kind: str, table: Table, metadata_location: str, server_version: int) -> Relation:
    if kind == "snapshots":
        return snapshots(table)
    if kind == "history":
        return history(table)
    if kind == "metadata_log_entries":
        return metadata_log_entries(table, metadata_location)
    if kind == "refs":
        return refs(table)
    if kind == "properties":
        return properties(table, server_version)
    if kind == "partitions":
        return partitions(table)
    if kind == "files":
        return files(table)
    if kind == "manifests":
        return manifests(table)
    if kind == "all_manifests":
        return all_manifests(table)
    if kind == "entries":
        return entries(table)
    if kind == "all_entries":
        return all_entries(table)
    raise UnknownMetadataTable(kind)


def exists_in_version(kind: str, server_version: int) -> bool:
    since = {"metadata_log_entries": 444, "refs": 411, "all_manifests": 467, "entries": 469, "all_entries": 469}
    return kind in METADATA_TABLES and server_version >= since.get(kind, 0)


def version_cache_key(kind: str, server_version: int) -> tuple:
    """Versions that see the same relation share a cache entry."""
    if kind == "properties":
        return (kind, server_version >= 473)
    return (kind,)


def for_version(kind: str, rel: Relation, server_version: int) -> Relation:
    """Project the newest shape of a metadata table to what `server_version` had."""
    names = [n for n, _ in rel.columns]
    if kind == "files":
        if server_version < 465:
            names = [n for n in names if n not in ("spec_id", "partition", "sort_order_id", "readable_metrics")]
        return rel.project(names) if len(names) != len(rel.columns) else rel
    if kind == "manifests":
        renames = {}
        if server_version < 480:
            names = [n for n in names if n != "content"]
        if server_version < 468:
            renames["partition_summaries"] = "partitions"
        return rel.project(names, renames) if (renames or len(names) != len(rel.columns)) else rel
    if kind == "all_manifests":
        if server_version < 480:
            names = [n for n in names if n != "content"]
        if server_version < 476:
            names = [n for n in names if n != "reference_snapshot_id"]
        return rel.project(names) if len(names) != len(rel.columns) else rel
    return rel
