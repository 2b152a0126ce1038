"""A minimal stand-in engine for developing the protocol server without a warehouse.

It runs statements on an in-memory DuckDB and reports DuckDB's column types with Trino
names. It knows nothing about Iceberg; the lab itself always runs the real engine
(`engine.load_engine`). Select it with `"engine": {"kind": "stub"}` in the server config.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math
import re
import threading
import time

from ..common.errors import TrinoError
from ..engine.api import Column, Progress, Result, Session

_TYPE_MAP = {
    "BIGINT": "bigint", "INTEGER": "integer", "SMALLINT": "smallint", "TINYINT": "tinyint",
    "HUGEINT": "bigint", "BOOLEAN": "boolean", "DOUBLE": "double", "FLOAT": "real",
    "VARCHAR": "varchar", "DATE": "date", "BLOB": "varbinary", "TIMESTAMP": "timestamp(6)",
    "TIMESTAMP WITH TIME ZONE": "timestamp(6) with time zone", "UUID": "uuid",
}


def _trino_type(t: str) -> str:
    t = str(t)
    if t in _TYPE_MAP:
        return _TYPE_MAP[t]
    m = re.fullmatch(r"DECIMAL\((\d+),(\d+)\)", t)
    if m:
        return f"decimal({m.group(1)},{m.group(2)})"
    if t.endswith("[]"):
        return f"array({_trino_type(t[:-2])})"
    return "varchar"


def _encode(t: str, v):
    if v is None:
        return None
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, dt.datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, list):
        inner = t[len("array("):-1] if t.startswith("array(") else "varchar"
        return [_encode(inner, x) for x in v]
    return v


class StubEngine:
    def __init__(self) -> None:
        import duckdb

        self._db = duckdb.connect(":memory:")
        self._lock = threading.Lock()

    def execute(self, sql: str, session: Session, progress, cancelled: threading.Event) -> Result:
        import duckdb

        text = sql.strip().rstrip(";")
        m = re.fullmatch(r"(?is)select\s+sleep\((\d+(?:\.\d+)?)\)", text)
        if m:
            # lab-only helper: a statement that runs for a while and reports progress
            total = float(m.group(1))
            steps = max(1, int(total * 10))
            for i in range(steps):
                if cancelled.is_set():
                    raise TrinoError("USER_CANCELED", "Query was canceled")
                progress(Progress(total_splits=steps, completed_splits=i, running_splits=1, processed_rows=i))
                time.sleep(total / steps)
            return Result([Column("_col0", "boolean")], [[True]])
        if cancelled.is_set():
            raise TrinoError("USER_CANCELED", "Query was canceled")
        with self._lock:
            cur = self._db.cursor()
        try:
            cur.execute(text)
            desc = cur.description or []
            rows = cur.fetchall() if desc else []
        except duckdb.ParserException as e:
            raise TrinoError("SYNTAX_ERROR", str(e).splitlines()[0], line=1, column=1) from None
        except duckdb.CatalogException as e:
            msg = str(e).splitlines()[0]
            mt = re.search(r"Table with name (\S+) does not exist", msg)
            if mt:
                raise TrinoError("TABLE_NOT_FOUND", f"Table '{mt.group(1)}' does not exist", line=1, column=1) from None
            raise TrinoError("GENERIC_USER_ERROR", msg) from None
        except duckdb.BinderException as e:
            raise TrinoError("COLUMN_NOT_FOUND", str(e).splitlines()[0], line=1, column=8) from None
        finally:
            cur.close()
        columns = []
        for i, d in enumerate(desc):
            name = d[0]
            if re.fullmatch(r"\d+|.*\(.*\).*", name):
                name = f"_col{i}"
            columns.append(Column(name, _trino_type(d[1])))
        out = [[_encode(c.type, v) for c, v in zip(columns, row)] for row in rows]
        progress(Progress(total_splits=1, completed_splits=1, processed_rows=len(out)))
        return Result(columns, out)

    def control(self, op: str, payload: dict) -> dict:
        if op == "expected":
            return {}
        if op == "reload":
            return {"reloaded": True}
        raise TrinoError("NOT_SUPPORTED", f"stub engine has no operation {op!r}")
