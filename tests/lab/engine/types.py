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


# -- Trino type strings ---------------------------------------------------------------------
#
# A parsed type is a tuple: ("bigint",), ("decimal", p, s), ("timestamp", p, tz: bool),
# ("varchar", n | None), ("array", T), ("map", K, V), ("row", [(name, T), ...]).

def parse_type(s: str):
    p = _TypeParser(s)
    t = p.parse()
    p.skip_ws()
    if p.i != len(p.s):
        raise ValueError(f"bad type {s!r}")
    return t


class _TypeParser:
    def __init__(self, s: str) -> None:
        self.s = s
        self.i = 0

    def skip_ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def word(self) -> str:
        self.skip_ws()
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] == "_"):
            self.i += 1
        return self.s[j:self.i]

    def peek(self, c: str) -> bool:
        self.skip_ws()
        return self.s.startswith(c, self.i)

    def expect(self, c: str) -> None:
        if not self.peek(c):
            raise ValueError(f"expected {c!r} at {self.i} in {self.s!r}")
        self.i += len(c)

    def number(self) -> int:
        return int(self.word())

    def parse(self):
        w = self.word().lower()
        if w == "timestamp" or w == "time":
            prec = 3
            if self.peek("("):
                self.expect("(")
                prec = self.number()
                self.expect(")")
            tz = False
            save = self.i
            if self.word().lower() == "with":
                self.word()  # time
                self.word()  # zone
                tz = True
            else:
                self.i = save
            return (w, prec, tz)
        if w == "decimal":
            self.expect("(")
            p = self.number()
            self.expect(",")
            s = self.number()
            self.expect(")")
            return ("decimal", p, s)
        if w in ("varchar", "char"):
            n = None
            if self.peek("("):
                self.expect("(")
                n = self.number()
                self.expect(")")
            return (w, n)
        if w == "array":
            self.expect("(")
            t = self.parse()
            self.expect(")")
            return ("array", t)
        if w == "map":
            self.expect("(")
            k = self.parse()
            self.expect(",")
            v = self.parse()
            self.expect(")")
            return ("map", k, v)
        if w == "row":
            self.expect("(")
            fields = []
            while True:
                self.skip_ws()
                if self.s[self.i] == '"':
                    j = self.i + 1
                    name = []
                    while True:
                        c = self.s[j]
                        if c == '"':
                            if j + 1 < len(self.s) and self.s[j + 1] == '"':
                                name.append('"')
                                j += 2
                                continue
                            break
                        name.append(c)
                        j += 1
                    self.i = j + 1
                    fname = "".join(name)
                else:
                    fname = self.word()
                fields.append((fname, self.parse()))
                if self.peek(","):
                    self.expect(",")
                    continue
                self.expect(")")
                break
            return ("row", fields)
        if w == "interval":
            a = self.word().lower()
            self.word()
            b = self.word().lower()
            return ("interval", a, b)
        return (w,)


def format_type(t) -> str:
    k = t[0]
    if k in ("timestamp", "time"):
        return f"{k}({t[1]})" + (" with time zone" if t[2] else "")
    if k == "decimal":
        return f"decimal({t[1]},{t[2]})"
    if k in ("varchar", "char"):
        return k if t[1] is None else f"{k}({t[1]})"
    if k == "array":
        return f"array({format_type(t[1])})"
    if k == "map":
        return f"map({format_type(t[1])}, {format_type(t[2])})"
    if k == "row":
        return row_type([(n, format_type(ft)) for n, ft in t[1]])
    if k == "interval":
        return f"interval {t[1]} to {t[2]}"
    return k


def arrow_type(t):
    """The Arrow type the engine materializes a Trino type as (before DuckDB sees it)."""
    import pyarrow as pa

    if isinstance(t, str):
        t = parse_type(t)
    k = t[0]
    simple = {
        "bigint": pa.int64(), "integer": pa.int32(), "smallint": pa.int16(), "tinyint": pa.int8(),
        "double": pa.float64(), "real": pa.float32(), "boolean": pa.bool_(), "date": pa.date32(),
        "varbinary": pa.binary(), "uuid": pa.string(),
    }
    if k in simple:
        return simple[k]
    if k in ("varchar", "char"):
        return pa.string()
    if k == "json":
        return pa.json_()
    if k == "decimal":
        return pa.decimal128(t[1], t[2])
    if k == "timestamp":
        return pa.timestamp("us", tz="UTC") if t[2] else pa.timestamp("us")
    if k == "time":
        return pa.time64("us")
    if k == "array":
        return pa.list_(arrow_type(t[1]))
    if k == "map":
        return pa.map_(arrow_type(t[1]), arrow_type(t[2]))
    if k == "row":
        return pa.struct([pa.field(n, arrow_type(ft)) for n, ft in t[1]])
    raise ValueError(f"no arrow type for {t}")


def arrow_schema(columns: list[tuple[str, str]]):
    import pyarrow as pa

    return pa.schema([pa.field(n, arrow_type(t)) for n, t in columns])


def _data_precision(t: tuple) -> tuple:
    return ("timestamp", 6, True) if t == ("timestamp", 3, True) else t


def duck_to_trino(dt) -> tuple:
    """Map a DuckDB result type (DuckDBPyType) to a parsed Trino type."""
    s = str(dt)
    return _duck_str_to_trino(s, dt)


def _duck_str_to_trino(s: str, dt=None) -> tuple:
    u = s.upper()
    simple = {
        "BIGINT": ("bigint",), "HUGEINT": ("bigint",), "UBIGINT": ("bigint",), "UHUGEINT": ("bigint",),
        "INTEGER": ("integer",), "UINTEGER": ("bigint",), "SMALLINT": ("smallint",), "USMALLINT": ("integer",),
        "TINYINT": ("tinyint",), "UTINYINT": ("smallint",), "DOUBLE": ("double",), "FLOAT": ("real",),
        "BOOLEAN": ("boolean",), "VARCHAR": ("varchar", None), "DATE": ("date",), "BLOB": ("varbinary",),
        "JSON": ("json",), "UUID": ("uuid",), "TIMESTAMP WITH TIME ZONE": ("timestamp", 3, True),
        "TIMESTAMP": ("timestamp", 6, False), "TIMESTAMP_MS": ("timestamp", 3, False),
        "TIMESTAMP_S": ("timestamp", 0, False), "TIMESTAMP_NS": ("timestamp", 9, False),
        "TIME": ("time", 6, False), "INTERVAL": ("interval", "day", "second"), "\"NULL\"": ("unknown",),
        "NULL": ("unknown",),
    }
    if u in simple:
        return simple[u]
    if u.endswith("[]") or (u.endswith("]") and "[" in u and not u.startswith(("STRUCT", "MAP"))):
        if dt is not None:
            try:
                return ("array", duck_to_trino(dict(dt.children)["child"]))
            except Exception:
                pass
        return ("array", _duck_str_to_trino(s[: s.rindex("[")]))
    if u.startswith("DECIMAL"):
        p, sc = u[u.index("(") + 1:u.index(")")].split(",")
        return ("decimal", int(p), int(sc))
    if dt is not None:
        try:
            if u.startswith("STRUCT"):
                # a timestamp with time zone in a row comes from the data (partition values,
                # column stats): Iceberg's timestamptz, timestamp(6); the metadata tables'
                # own timestamp(3) columns are never inside rows
                return ("row", [(name, _data_precision(duck_to_trino(child))) for name, child in dt.children])
            if u.startswith("MAP"):
                ch = dict(dt.children)
                return ("map", duck_to_trino(ch["key"]), duck_to_trino(ch["value"]))
            if u.endswith("[]"):
                return ("array", duck_to_trino(dict(dt.children)["child"]))
        except Exception:
            pass
    if u.endswith("[]"):
        return ("array", _duck_str_to_trino(s[:-2]))
    return ("varchar", None)
