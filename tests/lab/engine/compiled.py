"""Compiled statements: what a statement becomes before DuckDB runs it, reused by every
statement of the same shape.

A client reading a fleet sends one statement per table, the table's quoted name the only
difference. Past parsing (see parse_cache.py), most of the lab's own time per statement
goes to copying the parsed tree, rewriting it and generating DuckDB's SQL. None of that
depends on which table a statement reads, only on the columns and types of what it reads:
so a statement whose quoted identifiers name tables and nothing else is compiled with
those names left as placeholders, and the result (DuckDB's SQL, the output names and
types) is kept for its shape. The next statement of that shape resolves its own tables;
when their columns and types are the same, it runs the kept SQL on them.

Anything unexpected on the shared path (a relation of other columns, other result types,
an error) falls back to compiling the statement itself, so its result and its errors are
the ones its own text gives.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

from ..common.errors import TrinoError
from . import parse_cache
from .api import Result, Session
from .relation import Relation

if TYPE_CHECKING:
    from .core import Engine

MAX_SHAPES = 256
MAX_COMPILED = 2048
PLACEHOLDER = "__lab_ident_"

_lock = threading.Lock()
# normalised text -> indices of the placeholders that name a table (or its schema, catalog)
_table_parts: OrderedDict[str, frozenset[int]] = OrderedDict()
# (normalised text, the other identifiers, server version) -> compiled forms by signature
_compiled: OrderedDict[tuple, dict[tuple, "Compiled"]] = OrderedDict()


@dataclass(frozen=True)
class Compiled:
    # each table as the statement names it (placeholders kept) and its pushed-down filters
    refs: tuple
    # the columns (names, Trino types, hidden ones) of what each table resolved to
    signature: tuple
    duck_sql: str
    # per relation, the columns a lazily read one needs (None: not lazy, or all)
    needed: tuple
    # each relation's name appears once in duck_sql: a thread's cursor can run it on the
    # relations it has registered already
    substitutable: bool
    # the Arrow types of its result (a shared run with others is not this compilation's)
    arrow_types: tuple
    out_names: tuple[str, ...]
    out_types: tuple[str, ...]


def signature(relations: list[Relation]) -> tuple:
    return tuple((tuple(tuple(c) for c in r.columns), r.hidden, r.loader is not None) for r in relations)


def table_parts(key: str, template: exp.Expression) -> frozenset[int]:
    """The placeholders of `template` that stand for a table's catalog, schema or name."""
    with _lock:
        hit = _table_parts.get(key)
        if hit is not None:
            _table_parts.move_to_end(key)
            return hit
    found = set()
    for node in template.walk():
        if isinstance(node, exp.Identifier) and node.quoted and str(node.this).startswith(PLACEHOLDER) \
                and isinstance(node.parent, exp.Table) and node.arg_key in ("this", "db", "catalog"):
            try:
                found.add(int(str(node.this)[len(PLACEHOLDER):].rstrip("_")))
            except ValueError:
                continue
    parts = frozenset(found)
    with _lock:
        _table_parts[key] = parts
        while len(_table_parts) > MAX_SHAPES:
            _table_parts.popitem(last=False)
    return parts


def table_only(parts: frozenset[int], idents: list[str]) -> frozenset[int]:
    """Of the table parts, those whose name the statement uses nowhere else (not as a
    column's qualifier, a CTE's name, an alias): their names can differ from one
    statement of the shape to the next without changing what it means."""
    elsewhere = {name.lower() for i, name in enumerate(idents) if i not in parts}
    return frozenset(i for i in parts if idents[i].lower() not in elsewhere)


def run(engine: "Engine", sql: str, session: Session, cancelled: threading.Event) -> Result:
    from .query import QueryRun, parse

    key, idents, shifts = parse_cache.normalise(sql)
    template = parse_cache.template(key) if idents else None
    tables = table_only(table_parts(key, template), idents) if template is not None else frozenset()
    if not tables:
        return QueryRun(engine, sql, session, cancelled).run(parse(sql))
    unmask = {parse_cache.placeholder(i): idents[i] for i in tables}
    ckey = (key, tuple(None if i in tables else name for i, name in enumerate(idents)), session.server_version)
    with _lock:
        forms = _compiled.get(ckey)
        if forms is not None:
            _compiled.move_to_end(ckey)
            forms = list(forms.values())
    for comp in forms or ():
        try:
            out = _run_compiled(engine, comp, unmask, session, cancelled)
        except TrinoError as e:
            if e.error_name == "USER_CANCELED":
                raise
            out = None  # compiled on its own below: the error as its text gives it
        except Exception:
            out = None
        if out is not None:
            return out
    tree = parse_cache._fill(template.copy(), idents, shifts, keep=tables)
    q = QueryRun(engine, sql, session, cancelled, unmask=unmask)
    try:
        result = q.run(tree)
    except TrinoError as e:
        if PLACEHOLDER in (e.message or ""):
            # a message that would show a placeholder: the statement's own text tells it
            return QueryRun(engine, sql, session, cancelled).run(parse(sql))
        raise
    if q.compiled is not None:
        with _lock:
            forms = _compiled.setdefault(ckey, {})
            forms[q.compiled.signature] = q.compiled
            _compiled.move_to_end(ckey)
            while len(_compiled) > MAX_COMPILED:
                _compiled.popitem(last=False)
    return result


def _run_compiled(engine: "Engine", comp: Compiled, unmask: dict[str, str], session: Session,
                  cancelled: threading.Event) -> Result | None:
    """`comp` run on this statement's tables; None when they are not what it was compiled for."""
    from .query import encode_result, run_watched

    def real(n):
        return None if n is None else unmask.get(n, n).lower()

    rels = [engine.resolve_relation(real(c), real(s), real(n), session, (None, None), filters=f)
            for c, s, n, f in comp.refs]
    if signature(rels) != comp.signature:
        return None
    tables = []
    for r, need in zip(rels, comp.needed):
        if r.loader is not None:
            r.needed = need
        tables.append(r.materialize())
    # only what the engine's caches hold stays registered (not a table's data read for
    # this statement's columns, not a listing built for it)
    lazy = [not r.cached for r in rels]
    temporary: list[str] = []
    if comp.substitutable:
        tc = _thread_cursor(engine, session.time_zone)
        cur = tc.cur
        names = []
        for t, once in zip(tables, lazy):
            if once:
                temporary.append(tc.register_once(t))
                names.append(temporary[-1])
            else:
                names.append(tc.name_of(t))
        duck_sql = _REGISTERED.sub(lambda m: names[int(m.group(1))], comp.duck_sql)
    else:
        tc = None
        cur = engine.duck_cursor(session)
        for i, t in enumerate(tables):
            cur.register(f"__r{i}", t)
        duck_sql = comp.duck_sql
    try:
        out = run_watched(cur, duck_sql, cancelled, as_relation=False)
    except Exception:
        if cancelled.is_set():
            raise TrinoError("USER_CANCELED", "Query was canceled") from None
        raise
    finally:
        for name in temporary:
            try:
                cur.unregister(name)
            except Exception:
                pass
        if tc is None:
            try:
                cur.close()
            except Exception:
                pass
    if out is None:
        return None
    table = out[0]
    if tuple(table.schema.types) != comp.arrow_types:
        return None
    return encode_result(table, list(comp.out_names), list(comp.out_types), session)


# `__rN`: the name a compilation gives the N-th relation it reads
_REGISTERED = re.compile(r"\b__r(\d+)\b")
# relations a thread's cursor keeps registered (Arrow tables the engine's caches hold
# anyway: as many as the relation cache holds)
MAX_REGISTERED = 8192


def substitutable(duck_sql: str, relations: int) -> bool:
    """Whether each relation's name appears once in `duck_sql` (so it can be replaced by
    another name) and nothing else looks like one (a string literal, say)."""
    found = [int(m.group(1)) for m in _REGISTERED.finditer(duck_sql)]
    return sorted(found) == list(range(relations))


class _ThreadCursor:
    """A thread's own DuckDB cursor, kept from one statement to the next with the relations
    it has read still registered: registering an Arrow table costs about as much as a
    small statement's whole run, and a fleet's statements read the same ones again."""

    _serial = 0
    _serial_lock = threading.Lock()

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.cur = engine._duck.cursor()
        self.cur.execute("SET integer_division = true")
        self.tz: str | None = None
        self.registered: OrderedDict[int, tuple[str, object]] = OrderedDict()

    def time_zone(self, tz: str) -> None:
        if tz == self.tz:
            return
        try:
            self.cur.execute(f"SET TimeZone = '{tz}'")
        except Exception:
            self.cur.execute("SET TimeZone = 'UTC'")
        self.tz = tz

    @staticmethod
    def _name() -> str:
        with _ThreadCursor._serial_lock:
            _ThreadCursor._serial += 1
            return f"__lab_rel_{_ThreadCursor._serial}"

    def register_once(self, table) -> str:
        """A name for `table` for one statement (the caller unregisters it)."""
        name = self._name()
        self.cur.register(name, table)
        return name

    def name_of(self, table) -> str:
        hit = self.registered.get(id(table))
        if hit is not None and hit[1] is table:
            self.registered.move_to_end(id(table))
            return hit[0]
        name = self._name()
        self.cur.register(name, table)
        # the entry holds the table: its id cannot be another table's while it is here
        self.registered[id(table)] = (name, table)
        while len(self.registered) > MAX_REGISTERED:
            _, (old, _t) = self.registered.popitem(last=False)
            try:
                self.cur.unregister(old)
            except Exception:
                pass
        return name


_local = threading.local()


def _thread_cursor(engine: "Engine", tz: str) -> _ThreadCursor:
    tc = getattr(_local, "cursor", None)
    if tc is None or tc.engine is not engine:
        tc = _local.cursor = _ThreadCursor(engine)
    tc.time_zone(tz)
    return tc


def clear() -> None:
    with _lock:
        _table_parts.clear()
        _compiled.clear()
