"""Trino type names for Iceberg types, partition fields and DuckDB result types."""

from __future__ import annotations

import re

from pyiceberg import types as it
from pyiceberg.partitioning import PartitionField
from pyiceberg.schema import Schema
from pyiceberg.transforms import (
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)

_SIMPLE = re.compile(r"^[a-z_][a-z0-9_]*$")


def quote_field(name: str) -> str:
    """A row field name as Trino prints it inside a type signature."""
    if _SIMPLE.match(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def row_type(fields: list[tuple[str, str]]) -> str:
    return "row(" + ", ".join(f"{quote_field(n)} {t}" for n, t in fields) + ")"


def iceberg_to_trino(t: it.IcebergType) -> str:
    if isinstance(t, it.BooleanType):
        return "boolean"
    if isinstance(t, it.IntegerType):
        return "integer"
    if isinstance(t, it.LongType):
        return "bigint"
    if isinstance(t, it.FloatType):
        return "real"
    if isinstance(t, it.DoubleType):
        return "double"
    if isinstance(t, it.DecimalType):
        return f"decimal({t.precision},{t.scale})"
    if isinstance(t, it.DateType):
        return "date"
    if isinstance(t, it.TimeType):
        return "time(6)"
    if isinstance(t, it.TimestamptzType):
        return "timestamp(6) with time zone"
    if isinstance(t, it.TimestampType):
        return "timestamp(6)"
    if hasattr(it, "TimestamptzNanoType") and isinstance(t, it.TimestamptzNanoType):
        return "timestamp(9) with time zone"
    if hasattr(it, "TimestampNanoType") and isinstance(t, it.TimestampNanoType):
        return "timestamp(9)"
    if isinstance(t, it.StringType):
        return "varchar"
    if isinstance(t, it.UUIDType):
        return "uuid"
    if isinstance(t, (it.FixedType, it.BinaryType)):
        return "varbinary"
    if isinstance(t, it.StructType):
        return row_type([(f.name, iceberg_to_trino(f.field_type)) for f in t.fields])
    if isinstance(t, it.ListType):
        return f"array({iceberg_to_trino(t.element_type)})"
    if isinstance(t, it.MapType):
        return f"map({iceberg_to_trino(t.key_type)}, {iceberg_to_trino(t.value_type)})"
    raise ValueError(f"unsupported Iceberg type {t}")


def partition_field_type(schema: Schema, pf: PartitionField) -> str:
    """The Trino type of a partition field as $partitions / $files show it."""
    src = schema.find_field(pf.source_id).field_type
    tr = pf.transform
    if isinstance(tr, (IdentityTransform, TruncateTransform, VoidTransform)):
        return iceberg_to_trino(src)
    if isinstance(tr, DayTransform):
        return "date"
    if isinstance(tr, (YearTransform, MonthTransform, HourTransform, BucketTransform)):
        return "integer"
    raise ValueError(f"unsupported transform {tr}")


def partition_field_sql(schema: Schema, pf: PartitionField) -> str:
    """A partition field as Trino's `partitioning` table property spells it."""
    col = schema.find_field(pf.source_id).name
    if not _SIMPLE.match(col):
        col = '"' + col.replace('"', '""') + '"'
    tr = pf.transform
    if isinstance(tr, IdentityTransform):
        return col
    if isinstance(tr, YearTransform):
        return f"year({col})"
    if isinstance(tr, MonthTransform):
        return f"month({col})"
    if isinstance(tr, DayTransform):
        return f"day({col})"
    if isinstance(tr, HourTransform):
        return f"hour({col})"
    if isinstance(tr, BucketTransform):
        return f"bucket({col}, {tr.num_buckets})"
    if isinstance(tr, TruncateTransform):
        return f"truncate({col}, {tr.width})"
    if isinstance(tr, VoidTransform):
        return f"void({col})"
    raise ValueError(f"unsupported transform {tr}")


def timestamp_precision(trino_type: str) -> int | None:
    m = re.match(r"^timestamp\((\d+)\)", trino_type)
    return int(m.group(1)) if m else None
