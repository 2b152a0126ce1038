"""Which files `ALTER TABLE ... EXECUTE optimize WHERE ...` selects, and when Trino refuses.

Trino plans the WHERE clause into the table scan: the predicate becomes a TupleDomain (one
domain per column, conjunctive across columns), and the Iceberg connector must enforce all
of it from partition values and file metadata. If any part is left over, the planner keeps
a FilterNode and TableExecuteStructureValidator fails the statement with "Unexpected
FilterNode found in plan; probably connector was not able to handle provided WHERE
expression".

Enforceable: domains on identity partition columns; domains on the source column of a
temporal partition transform whose ranges start and end on partition boundaries (so
`CAST(ts AS date) = DATE '...'`, or day-aligned `ts >= TIMESTAMP ... AND ts < ...`); and the
metadata columns "$path", "$partition", "$file_modified_time". Anything else (a data
column, OR across columns, LIKE, arbitrary expressions) is left over.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable

import sqlglot
from sqlglot import exp

from ..common.errors import TrinoError

FILTER_NODE = "Unexpected FilterNode found in plan; probably connector was not able to handle provided WHERE expression"
DAY_US = 86_400_000_000
HOUR_US = 3_600_000_000


class Residual(Exception):
    """Part of the predicate cannot become a domain the connector enforces."""


# -- ranges -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Range:
    low: Any = None          # None = unbounded
    low_incl: bool = False
    high: Any = None
    high_incl: bool = False

    def contains(self, v) -> bool:
        if self.low is not None and (v < self.low or (v == self.low and not self.low_incl)):
            return False
        if self.high is not None and (v > self.high or (v == self.high and not self.high_incl)):
            return False
        return True

    def empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        if self.low > self.high:
            return True
        return self.low == self.high and not (self.low_incl and self.high_incl)


def _intersect_range(a: Range, b: Range) -> Range:
    if a.low is None:
        low, li = b.low, b.low_incl
    elif b.low is None:
        low, li = a.low, a.low_incl
    elif a.low > b.low:
        low, li = a.low, a.low_incl
    elif b.low > a.low:
        low, li = b.low, b.low_incl
    else:
        low, li = a.low, a.low_incl and b.low_incl
    if a.high is None:
        high, hi = b.high, b.high_incl
    elif b.high is None:
        high, hi = a.high, a.high_incl
    elif a.high < b.high:
        high, hi = a.high, a.high_incl
    elif b.high < a.high:
        high, hi = b.high, b.high_incl
    else:
        high, hi = a.high, a.high_incl and b.high_incl
    return Range(low, li, high, hi)


@dataclass
class Domain:
    ranges: list[Range] = field(default_factory=list)
    null: bool = False

    @staticmethod
    def all() -> "Domain":
        return Domain([Range()], True)

    @staticmethod
    def none() -> "Domain":
        return Domain([], False)

    def contains(self, v) -> bool:
        if v is None:
            return self.null
        return any(r.contains(v) for r in self.ranges)

    def intersect(self, o: "Domain") -> "Domain":
        out = []
        for a in self.ranges:
            for b in o.ranges:
                r = _intersect_range(a, b)
                if not r.empty():
                    out.append(r)
        return Domain(out, self.null and o.null)

    def union(self, o: "Domain") -> "Domain":
        return Domain(self.ranges + o.ranges, self.null or o.null)

    def complement(self) -> "Domain":
        """Complement of the non-null part (NOT of a comparison is false for NULL)."""
        # walk the sorted union of ranges and emit the gaps
        rs = sorted(self.ranges, key=lambda r: (r.low is not None, r.low if r.low is not None else 0, not r.low_incl))
        out: list[Range] = []
        cur_low, cur_li = None, False  # the gap starts at -inf
        started = False
        for r in rs:
            if r.low is None:
                if r.high is None:
                    return Domain([], False)
                cur_low, cur_li, started = r.high, not r.high_incl, True
                continue
            gap = Range(cur_low if started else None, cur_li, r.low, not r.low_incl)
            if not gap.empty():
                out.append(gap)
            if r.high is None:
                return Domain(out, False)
            if not started or r.high > cur_low or (r.high == cur_low and r.high_incl):
                cur_low, cur_li, started = r.high, not r.high_incl, True
        out.append(Range(cur_low if started else None, cur_li, None, False))
        return Domain([r for r in out if not r.empty()], False)

    def bounds(self):
        for r in self.ranges:
            if r.low is not None:
                yield "low", r.low, r.low_incl
            if r.high is not None:
                yield "high", r.high, r.high_incl


# -- columns the connector can enforce ----------------------------------------------------------

@dataclass
class FilterColumn:
    name: str
    kind: str                         # "identity" | "temporal" | "meta" | "data"
    value_kind: str                   # "string" | "int" | "date" | "ts" | "decimal" | "bool" | "double"
    transform: str | None = None      # for temporal: "day" | "hour" | "month" | "year"


def transform_value(transform: str, value_kind: str, v: int) -> int:
    """Apply an Iceberg temporal transform to an epoch value (micros for ts, days for date)."""
    if value_kind == "date":
        d = dt.date(1970, 1, 1) + dt.timedelta(days=v)
        if transform == "day":
            return v
        if transform == "month":
            return (d.year - 1970) * 12 + d.month - 1
        if transform == "year":
            return d.year - 1970
        return v * 24
    if transform == "hour":
        return v // HOUR_US
    if transform == "day":
        return v // DAY_US
    d = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)
    if transform == "month":
        return (d.year - 1970) * 12 + d.month - 1
    return d.year - 1970


def partition_start(transform: str, value_kind: str, p: int) -> int:
    """The first source value (micros or days) of a partition of a temporal transform."""
    if value_kind == "date":
        if transform == "day":
            return p
        if transform == "month":
            y, m = divmod(p, 12)
            return (dt.date(1970 + y, m + 1, 1) - dt.date(1970, 1, 1)).days
        return (dt.date(1970 + p, 1, 1) - dt.date(1970, 1, 1)).days
    if transform == "hour":
        return p * HOUR_US
    if transform == "day":
        return p * DAY_US
    if transform == "month":
        y, m = divmod(p, 12)
        return (dt.datetime(1970 + y, m + 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    return (dt.datetime(1970 + p, 1, 1) - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)


def aligned(col: FilterColumn, d: Domain) -> bool:
    step = 1
    for side, v, incl in d.bounds():
        if side == "low":
            adj = v - step if incl else v + step
        else:
            adj = v + step if incl else v - step
        if transform_value(col.transform, col.value_kind, v) == transform_value(col.transform, col.value_kind, adj):
            return False
    return True


# -- predicate to per-column domains -------------------------------------------------------------

class Analyzer:
    def __init__(self, sql: str, where_offset: int, columns: dict[str, FilterColumn],
                 const_eval: Callable[[exp.Expression, str], Any], session_zone_start: Callable[[dt.date], int]) -> None:
        self.sql = sql
        self.where_offset = where_offset
        self.columns = columns
        self.const_eval = const_eval
        self.day_start = session_zone_start

    def _pos(self, node: exp.Expression):
        best = None
        for n in node.walk():
            meta = getattr(n, "_meta", None) or {}
            if "start" in meta:
                best = meta["start"] if best is None else min(best, meta["start"])
        if best is None:
            return None, None
        off = self.where_offset + best
        line = self.sql.count("\n", 0, off) + 1
        col = off - (self.sql.rfind("\n", 0, off) + 1) + 1
        return line, col

    def check_columns(self, tree: exp.Expression) -> None:
        for c in tree.find_all(exp.Column):
            if c.name.lower() not in self.columns:
                raise TrinoError("COLUMN_NOT_FOUND", f"Column '{c.name}' cannot be resolved", *self._pos(c))

    def domains(self, e: exp.Expression) -> dict[str, Domain]:
        """Conjunctive per-column domains; raises Residual if something is left over."""
        if isinstance(e, exp.Paren):
            return self.domains(e.this)
        if isinstance(e, exp.And):
            a, b = self.domains(e.left), self.domains(e.right)
            out = dict(a)
            for k, v in b.items():
                out[k] = out[k].intersect(v) if k in out else v
            return out
        if isinstance(e, exp.Or):
            a, b = self.domains(e.left), self.domains(e.right)
            if not a or not b:
                return {}  # TRUE or ...
            if len(a) == 1 and len(b) == 1 and set(a) == set(b):
                k = next(iter(a))
                return {k: a[k].union(b[k])}
            raise Residual()
        if isinstance(e, exp.Not):
            inner = e.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Is):
                col, d = self.leaf(inner)
                return {col: Domain([Range()], False) if d.null else Domain([], True)}
            if isinstance(inner, (exp.And, exp.Or)):
                swapped = (exp.Or if isinstance(inner, exp.And) else exp.And)(
                    this=exp.Not(this=inner.left.copy()), expression=exp.Not(this=inner.right.copy()))
                return self.domains(swapped)
            if isinstance(inner, exp.Not):
                return self.domains(inner.this)
            col, d = self.leaf(inner)
            return {col: d.complement()}
        if isinstance(e, exp.Boolean):
            return {} if e.this else {"__false__": Domain.none()}
        if not list(e.find_all(exp.Column)):
            v = self.const_eval(e, "boolean")
            return {} if v else {"__false__": Domain.none()}
        col, d = self.leaf(e)
        return {col: d}

    # a leaf: one column against constants
    def _column_of(self, e: exp.Expression) -> tuple[str, str | None] | None:
        """(column, cast-to-date marker) if e is a column or CAST(column AS date)/date(column)."""
        while isinstance(e, exp.Paren):
            e = e.this
        if isinstance(e, exp.Column):
            return e.name.lower(), None
        if isinstance(e, (exp.Cast, exp.TryCast)) and isinstance(e.this, exp.Column):
            to = e.args.get("to")
            if isinstance(to, exp.DataType) and to.is_type(exp.DataType.Type.DATE):
                return e.this.name.lower(), "date"
        if isinstance(e, exp.TsOrDsToDate) and isinstance(e.this, exp.Column):
            return e.this.name.lower(), "date"
        if isinstance(e, exp.Date) and isinstance(e.this, exp.Column):
            return e.this.name.lower(), "date"
        if isinstance(e, exp.Anonymous) and str(e.this).lower() == "date" and len(e.expressions) == 1 \
                and isinstance(e.expressions[0], exp.Column):
            return e.expressions[0].name.lower(), "date"
        return None

    def _const(self, col: FilterColumn, cast: str | None, e: exp.Expression):
        if list(e.find_all(exp.Column)):
            raise Residual()
        kind = "date" if cast == "date" else col.value_kind
        v = self.const_eval(e, kind)
        return v

    def leaf(self, e: exp.Expression) -> tuple[str, Domain]:
        ops = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}
        if type(e) in ops:
            op = ops[type(e)]
            left, right = self._column_of(e.left), self._column_of(e.right)
            if left is not None and right is None:
                (name, cast), other = left, e.right
            elif right is not None and left is None:
                (name, cast), other, op = right, e.left, flip[op]
            else:
                raise Residual()
            col = self._filter_column(name)
            v = self._const(col, cast, other)
            return name, self._compare(col, cast, op, v)
        if isinstance(e, exp.In):
            c = self._column_of(e.this)
            if c is None or e.args.get("query") is not None:
                raise Residual()
            name, cast = c
            col = self._filter_column(name)
            d = Domain.none()
            for item in e.expressions:
                d = d.union(self._compare(col, cast, "=", self._const(col, cast, item)))
            return name, d
        if isinstance(e, exp.Between):
            c = self._column_of(e.this)
            if c is None:
                raise Residual()
            name, cast = c
            col = self._filter_column(name)
            lo = self._compare(col, cast, ">=", self._const(col, cast, e.args["low"]))
            hi = self._compare(col, cast, "<=", self._const(col, cast, e.args["high"]))
            return name, lo.intersect(hi)
        if isinstance(e, exp.Is):
            c = self._column_of(e.this)
            if c is None or c[1] is not None:
                raise Residual()
            name = c[0]
            self._filter_column(name)
            if isinstance(e.expression, exp.Null):
                return name, Domain([], True)
            raise Residual()
        raise Residual()

    def _filter_column(self, name: str) -> FilterColumn:
        col = self.columns.get(name)
        if col is None or col.kind == "data":
            raise Residual()
        return col

    def _compare(self, col: FilterColumn, cast: str | None, op: str, v) -> Domain:
        if v is None:
            return Domain.none()  # comparison with NULL is never true
        if cast == "date":
            if col.value_kind == "date":
                pass  # CAST(date AS date) is the column itself
            elif col.value_kind == "ts":
                # Trino unwraps CAST(ts AS date) op d into a range on ts in the session zone
                d0 = self.day_start(v)
                d1 = self.day_start(v + dt.timedelta(days=1))
                if op == "=":
                    return Domain([Range(d0, True, d1, False)])
                if op == "<>":
                    return Domain([Range(None, False, d0, False), Range(d1, True, None, False)])
                if op == "<":
                    return Domain([Range(None, False, d0, False)])
                if op == "<=":
                    return Domain([Range(None, False, d1, False)])
                if op == ">":
                    return Domain([Range(d1, True, None, False)])
                if op == ">=":
                    return Domain([Range(d0, True, None, False)])
            else:
                raise Residual()
        if isinstance(v, dt.date) and not isinstance(v, dt.datetime) and col.value_kind == "date":
            v = (v - dt.date(1970, 1, 1)).days
        if op == "=":
            return Domain([Range(v, True, v, True)])
        if op == "<>":
            return Domain([Range(None, False, v, False), Range(v, False, None, False)])
        if op == "<":
            return Domain([Range(None, False, v, False)])
        if op == "<=":
            return Domain([Range(None, False, v, True)])
        if op == ">":
            return Domain([Range(v, False, None, False)])
        return Domain([Range(v, True, None, False)])


def parse_where(where_sql: str) -> exp.Expression:
    tree = sqlglot.parse_one(f"SELECT 1 FROM t WHERE {where_sql}", read="trino")
    return tree.args["where"].this


WHERE_PREFIX_LEN = len("SELECT 1 FROM t WHERE ")
