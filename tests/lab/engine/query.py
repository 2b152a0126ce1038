"""SELECT queries: parse Trino SQL, resolve and materialize the relations it reads, run it
in DuckDB, and hand back Trino-typed, wire-encoded results."""

from __future__ import annotations

import re
import threading
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from ..common.errors import TrinoError
from .api import Column, Result, Session
from .parse_cache import parse_trino
from .relation import Relation
from .types import duck_to_trino, format_type, parse_type, timestamp_precision
from .wire import encoder

if TYPE_CHECKING:
    from .compiled import Compiled
    from .core import Engine


def line_col(sql: str, offset: int) -> tuple[int, int]:
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, col


def node_pos(sql: str, node: exp.Expression) -> tuple[int | None, int | None]:
    """1-based line/column where a parsed node starts in the original text."""
    best = None
    for n in node.walk():
        meta = getattr(n, "_meta", None) or {}
        if "start" in meta:
            s = meta["start"]
            if best is None or s < best:
                best = s
    if best is None:
        return None, None
    return line_col(sql, best)


STATEMENT_STARTS = ("'ALTER', 'ANALYZE', 'CALL', 'COMMENT', 'COMMIT', 'CREATE', 'DEALLOCATE', 'DELETE', 'DENY', "
                    "'DESC', 'DESCRIBE', 'DROP', 'EXECUTE', 'EXPLAIN', 'GRANT', 'INSERT', 'MERGE', 'PREPARE', "
                    "'REFRESH', 'RESET', 'REVOKE', 'ROLLBACK', 'SET', 'SHOW', 'START', 'TRUNCATE', 'UPDATE', "
                    "'USE', 'WITH', <query>")


def _end_position(sql: str) -> tuple[int, int]:
    text = sql.rstrip()
    return line_col(sql, len(text)) if text else (1, 1)


def syntax_error(sql: str, e: Exception) -> TrinoError:
    """Trino's parser messages ("mismatched input 'X'. Expecting: ...") at Trino's positions,
    as far as sqlglot's error tells what was expected."""
    errs = getattr(e, "errors", None) or []
    if not errs:
        return TrinoError("SYNTAX_ERROR", "mismatched input '<EOF>'. Expecting: <query>", *_end_position(sql))
    first = errs[0]
    desc = first.get("description") or ""
    line = first.get("line") or 1
    col_end = first.get("col") or 1
    hl = first.get("highlight") or ""
    start = (first.get("start_context") or "")
    offset = len(start) if start and sql.startswith(start) else None
    at_end = "SENTINEL" in desc or (
        hl and offset is not None and sql[offset + len(hl):].strip() == "" and
        (desc.startswith("Expecting") or desc.startswith("Required keyword")))
    if desc.startswith("Expected table name"):
        expecting = "'(', 'LATERAL', 'UNNEST', <identifier>"
    elif desc.startswith("Expecting )"):
        expecting = "')', ','"
    else:
        expecting = "<expression>"
    if at_end:
        line, col = _end_position(sql)
        return TrinoError("SYNTAX_ERROR", f"mismatched input '<EOF>'. Expecting: {expecting}", line, col)
    col = max(1, col_end - len(hl) + 1) if hl else col_end
    return TrinoError("SYNTAX_ERROR", f"mismatched input '{hl or '<EOF>'}'. Expecting: {expecting}", line, col)


def parse(sql: str) -> exp.Expression:
    text = sql.strip()
    if text.endswith(";"):
        # Trino's parser rejects a trailing semicolon
        idx = sql.rstrip().rfind(";")
        line, col = line_col(sql, idx)
        raise TrinoError("SYNTAX_ERROR", "mismatched input ';'. Expecting: <EOF>", line, col)
    try:
        tree = parse_trino(sql)
    except (ParseError, TokenError) as e:
        raise syntax_error(sql, e) from None
    if tree is None:
        raise TrinoError("SYNTAX_ERROR", "mismatched input '<EOF>'. Expecting: <query>", 1, 1)
    return tree


def _ident_name(i) -> str | None:
    if i is None:
        return None
    if isinstance(i, exp.Identifier):
        # Trino canonicalizes names to lower case for catalogs/schemas/tables
        return i.name.lower()
    return str(i.name).lower() if hasattr(i, "name") else str(i).lower()


@dataclass
class Registered:
    name: str            # name registered in the DuckDB cursor
    relation: Relation
    alias: str           # what the query calls it (for qualified column refs)


class QueryRun:
    def __init__(self, engine: "Engine", sql: str, session: Session, cancelled: threading.Event,
                 unmask: dict[str, str] | None = None) -> None:
        self.engine = engine
        self.sql = sql
        self.session = session
        self.cancelled = cancelled
        self.registered: list[Registered] = []
        # placeholders left in the tree for table names (see engine/compiled.py): the name
        # each stands for
        self.unmask = unmask or {}
        # each resolved table as the tree names it (placeholders kept) and its pushed-down
        # filters, in resolution order
        self.refs: list[tuple[str | None, str | None, str, dict[str, str]]] = []
        # what a statement of the same shape can reuse, once this one ran
        self.compiled: "Compiled | None" = None

    def real_name(self, name: str | None) -> str | None:
        return None if name is None else self.unmask.get(name, name).lower()

    # -- resolution ---------------------------------------------------------------------------

    def _cte_names(self, tree: exp.Expression) -> set[str]:
        return {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}

    def resolve_tables(self, tree: exp.Expression) -> None:
        ctes = self._cte_names(tree)
        counter = 0
        for tbl in list(tree.find_all(exp.Table)):
            if not isinstance(tbl.this, exp.Identifier):
                continue  # table functions etc.
            catalog = _ident_name(tbl.args.get("catalog"))
            schema = _ident_name(tbl.args.get("db"))
            name = _ident_name(tbl.this)
            if catalog is None and schema is None and name in ctes:
                continue
            if tbl.args.get("catalog") is not None and isinstance(tbl.args["catalog"], exp.Dot):
                line, col = node_pos(self.sql, tbl)
                raise TrinoError("SYNTAX_ERROR", f"Too many dots in table name: {tbl.sql('trino')}")
            line, col = node_pos(self.sql, tbl)
            filters = _pushdown_filters(tbl)
            self.refs.append((catalog, schema, name, filters))
            rel = self.engine.resolve_relation(self.real_name(catalog), self.real_name(schema),
                                               self.real_name(name), self.session, (line, col), filters=filters)
            reg = f"__r{counter}"
            counter += 1
            alias = tbl.alias or (tbl.this.name if tbl.this is not None else name)
            self.registered.append(Registered(reg, rel, alias.lower()))
            new = exp.Table(this=exp.to_identifier(reg))
            alias_expr = tbl.args.get("alias")
            if alias_expr is None:
                alias_expr = exp.TableAlias(this=exp.to_identifier(alias, quoted=True))
            new.set("alias", alias_expr)
            for k in ("joins", "laterals", "pivots", "hints", "sample", "version", "when"):
                if tbl.args.get(k):
                    new.set(k, tbl.args.get(k))
            tbl.replace(new)

    # -- type lookup for columns ----------------------------------------------------------------

    def column_type(self, name: str, qualifier: str | None = None) -> str | None:
        name = name.lower()
        for r in self.registered:
            if qualifier is not None and r.alias != qualifier.lower():
                continue
            t = r.relation.type_of(name)
            if t is not None:
                return t
        return None

    def expr_column_type(self, e: exp.Expression) -> str | None:
        if isinstance(e, exp.Column) and isinstance(e.this, exp.Identifier):
            q = e.table or None
            return self.column_type(e.name, q)
        if isinstance(e, exp.Dot):
            base = self.expr_column_type(e.this)
            if base and base.startswith("row("):
                t = parse_type(base)
                for n, ft in t[1]:
                    if n == e.name.lower() or n == e.name:
                        return format_type(ft)
        if isinstance(e, exp.Paren):
            return self.expr_column_type(e.this)
        return None

    # -- rewrites -------------------------------------------------------------------------------

    def expand_stars(self, tree: exp.Expression) -> None:
        """Expand * over registered relations to their visible columns (hidden ones stay out)."""
        by_alias = {r.alias: r for r in self.registered}
        for select in tree.find_all(exp.Select):
            projections = select.expressions
            if not any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
                       for p in projections):
                continue
            sources = []
            frm = select.args.get("from_") or select.args.get("from")
            src_nodes = []
            if frm is not None:
                src_nodes.append(frm.this)
            for j in select.args.get("joins") or []:
                src_nodes.append(j.this)
            for s in src_nodes:
                if isinstance(s, exp.Table) and s.alias_or_name.lower() in by_alias:
                    sources.append(by_alias[s.alias_or_name.lower()])
                else:
                    sources = None
                    break
            if not sources:
                continue
            new = []
            for p in projections:
                if isinstance(p, exp.Star):
                    for r in sources:
                        for n, _ in r.relation.visible():
                            new.append(exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(r.alias, quoted=True)))
                elif isinstance(p, exp.Column) and isinstance(p.this, exp.Star):
                    r = by_alias.get(p.table.lower())
                    if r is None:
                        new.append(p)
                        continue
                    for n, _ in r.relation.visible():
                        new.append(exp.column(exp.to_identifier(n, quoted=True), table=exp.to_identifier(r.alias, quoted=True)))
                else:
                    new.append(p)
            select.set("expressions", new)

    def rewrite_functions(self, tree: exp.Expression) -> None:
        for b in list(tree.find_all(exp.Bracket)):
            if b.args.get("safe"):
                continue  # element_at: NULL for a missing key, as in DuckDB
            t = self.expr_column_type(b.this)
            if t is None:
                continue
            if t.startswith("map("):
                b.replace(exp.Anonymous(this="__trino_map_subscript", expressions=[b.this.copy(), b.expressions[0].copy()]))
            elif t.startswith("array("):
                b.replace(exp.Anonymous(this="__trino_array_subscript", expressions=[b.this.copy(), b.expressions[0].copy()]))
        # Trino's count_if is a count (0 over no rows); DuckDB's is a sum (NULL over no rows)
        for c in list(tree.find_all(exp.CountIf)):
            cond = c.this.copy()
            c.replace(exp.Count(this=exp.Case(ifs=[exp.If(this=cond, true=exp.Literal.number(1))])))
        # reduce(array, initial, (s, x) -> ..., s -> s): DuckDB's list_reduce has no finish,
        # so an identity finish is dropped (any other is not supported here)
        for r in list(tree.find_all(exp.Reduce)):
            fin = r.args.get("finish")
            if isinstance(fin, exp.Lambda) and len(fin.expressions) == 1 \
                    and isinstance(fin.this, (exp.Column, exp.Identifier)) and fin.this.name == fin.expressions[0].name:
                r.set("finish", None)
        # Trino's date_diff counts whole units elapsed (23:50 to 00:30 the next day is 0
        # days); DuckDB's counts the boundaries crossed (1). DuckDB's date_sub counts whole units.
        for d in list(tree.find_all(exp.DateDiff)):
            unit = d.args.get("unit")
            if unit is None:
                continue
            d.replace(exp.Anonymous(this="date_sub", expressions=[
                exp.Literal.string(unit.name.lower()), d.expression.copy(), d.this.copy()]))
        for a in list(tree.find_all(exp.ArraySize)):
            t = self.expr_column_type(a.this)
            if t is not None and t.startswith("map("):
                a.replace(exp.Anonymous(this="cardinality", expressions=[a.this.copy()]))

    # -- output names and types ---------------------------------------------------------------------

    def output_specs(self, tree: exp.Expression) -> list[tuple[str | None, exp.Expression | None]]:
        """Trino's name for each output column (None: take DuckDB's) and its expression."""
        node = tree
        while isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            node = node.this
        if isinstance(node, exp.Subquery):
            node = node.this
        if not isinstance(node, exp.Select):
            return []
        specs = []
        for i, p in enumerate(node.expressions):
            if isinstance(p, exp.Alias):
                ident = p.args.get("alias")
                name = ident.name if (isinstance(ident, exp.Identifier) and ident.quoted) else p.alias.lower()
                specs.append((name, p.this))
            elif isinstance(p, exp.Column) and isinstance(p.this, exp.Star) or isinstance(p, exp.Star):
                specs.append((None, None))
            elif isinstance(p, exp.Column):
                specs.append((p.name if p.this.quoted else p.name.lower(), p))
            elif isinstance(p, exp.Dot):
                specs.append((p.name.lower(), p))
            else:
                specs.append((f"_col{i}", p))
        return specs

    def name_unaliased(self, tree: exp.Expression) -> None:
        """DuckDB needs names it can keep apart; alias unnamed expressions as Trino names them."""
        node = tree
        while isinstance(node, (exp.Union, exp.Intersect, exp.Except)):
            node = node.this
        if not isinstance(node, exp.Select):
            return
        new = []
        for i, p in enumerate(node.expressions):
            if isinstance(p, (exp.Alias, exp.Star)) or (isinstance(p, exp.Column)):
                new.append(p)
            elif isinstance(p, exp.Dot):
                new.append(exp.alias_(p, exp.to_identifier(p.name.lower(), quoted=True)))
            else:
                new.append(exp.alias_(p, exp.to_identifier(f"_col{i}", quoted=True)))
        node.set("expressions", new)

    def trino_type_for(self, duck_type, e: exp.Expression | None) -> str:
        t = duck_to_trino(duck_type)
        src = self.expr_column_type(_unwrap(e)) if e is not None else None
        if t[0] == "timestamp":
            p = timestamp_precision(src) if src else None
            if p is None and e is not None:
                cast_p = _cast_precision(e)
                p = cast_p
            if p is not None:
                t = ("timestamp", p, t[2])
            elif not t[2]:
                t = ("timestamp", 3 if duck_type is not None and "MS" in str(duck_type).upper() else 6, False)
            return format_type(t)
        if src and _same_family(parse_type(src), t):
            return src
        if t[0] == "varchar" and e is not None:
            lit = _unwrap(e)
            if isinstance(lit, exp.Literal) and lit.is_string:
                return f"varchar({len(lit.this)})"
        if t[0] == "unknown" or (e is not None and isinstance(_unwrap(e), exp.Null)):
            return "unknown"
        return format_type(t)

    # -- execution ---------------------------------------------------------------------------------

    def run(self, tree: exp.Expression) -> Result:
        self.resolve_tables(tree)
        self.expand_stars(tree)
        self.rewrite_functions(tree)
        specs = self.output_specs(tree)
        self.name_unaliased(tree)
        duck_sql = tree.sql(dialect="duckdb")
        cur = self.engine.duck_cursor(self.session)
        try:
            lazy = [r for r in self.registered if not r.relation.loaded]
            if lazy:
                referenced = {c.name.lower() for c in tree.find_all(exp.Column)}
                unexpanded = any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star))
                                 for sel in tree.find_all(exp.Select) for p in sel.expressions)
                for r in lazy:
                    if not unexpanded:
                        r.relation.needed = frozenset(n for n, _ in r.relation.columns if n.lower() in referenced)
            for r in self.registered:
                cur.register(r.name, r.relation.table if r.relation.loaded else r.relation.empty())
            if lazy:
                # bind against empty stand-ins first: name errors come out before any data is read
                cur.sql(duck_sql)
                for r in lazy:
                    cur.unregister(r.name)
                    cur.register(r.name, r.relation.materialize())
            out = run_watched(cur, duck_sql, self.cancelled)
            if out is None:
                return Result(columns=[], rows=[])
            table, types, names = out
        except TrinoError:
            raise
        except Exception as e:
            if self.cancelled.is_set():
                raise TrinoError("USER_CANCELED", "Query was canceled") from None
            raise self.translate_error(e, tree) from None
        finally:
            try:
                cur.close()
            except Exception:
                pass
        # names and types
        out_names: list[str] = []
        out_types: list[str] = []
        spec_iter = list(specs)
        star_span = len(names) - sum(1 for n, _ in spec_iter if n is not None)
        idx = 0
        for name, e in spec_iter:
            if name is None:
                for _ in range(max(0, star_span)):
                    out_names.append(names[idx])
                    out_types.append(self.trino_type_for(types[idx], exp.column(names[idx])))
                    idx += 1
            else:
                if idx >= len(names):
                    break
                out_names.append(name)
                out_types.append(self.trino_type_for(types[idx], e))
                idx += 1
        while idx < len(names):
            out_names.append(names[idx])
            out_types.append(self.trino_type_for(types[idx], None))
            idx += 1
        from .compiled import Compiled, signature, substitutable

        rels = [r.relation for r in self.registered]
        self.compiled = Compiled(
            refs=tuple(self.refs), signature=signature(rels), duck_sql=duck_sql,
            substitutable=substitutable(duck_sql, len(rels)),
            needed=tuple(r.needed if r.loader is not None else None for r in rels),
            arrow_types=tuple(table.schema.types), out_names=tuple(out_names), out_types=tuple(out_types))
        return encode_result(table, out_names, out_types, self.session)

    def translate_error(self, e: Exception, tree: exp.Expression) -> TrinoError:
        msg = str(e)
        m = re.search(r'Referenced column "([^"]+)" not found', msg) or \
            re.search(r'does not have a column named "([^"]+)"', msg)
        if m:
            col = m.group(1)
            qual = None
            m2 = re.search(r'Values list "([^"]+)" does not have', msg) or re.search(r'Table "([^"]+)" does not have', msg)
            if m2:
                qual = m2.group(1)
            line, c = self._find_column(tree, col, qual)
            shown = f"{qual}.{col}" if qual and not qual.startswith("__r") else col
            return TrinoError("COLUMN_NOT_FOUND", f"Column '{shown}' cannot be resolved", line, c)
        m = re.search(r'Could not find key "([^"]+)" in struct', msg)
        if m:
            # a dereference of a row field the row does not have (e.g. `data_file.partition`
            # of an unpartitioned table's $entries): Trino 476 fails it as
            # INVALID_COLUMN_REFERENCE "Column reference 'e.data_file.partition' is invalid"
            # (COLUMN_NOT_FOUND is for a column of a relation: `f.partition` over $files)
            key = m.group(1)
            for d in tree.find_all(exp.Dot):
                if d.name.lower() == key.lower():
                    line, c = node_pos(self.sql, d)
                    return TrinoError("INVALID_COLUMN_REFERENCE",
                                      f"Column reference '{d.sql(dialect='trino')}' is invalid", line, c)
            return TrinoError("INVALID_COLUMN_REFERENCE", f"Column reference '{key}' is invalid")
        m = re.search(r"Scalar Function with name (\S+) does not exist", msg) or \
            re.search(r"Aggregate Function with name (\S+) does not exist", msg) or \
            re.search(r"Function with name (\S+) does not exist", msg)
        if m:
            fn = m.group(1).strip('"').lower()
            line, c = self._find_function(tree, fn)
            return TrinoError("FUNCTION_NOT_FOUND", f"Function '{fn}' not registered", line, c)
        m = re.search(r"Key not present in map(: .*)?$", msg.splitlines()[0] if msg else "")
        if m:
            return TrinoError("INVALID_FUNCTION_ARGUMENT", "Key not present in map" + (m.group(1) or ""))
        m = re.search(r"(Array subscript .*|SQL array indices start at 1)", msg)
        if m:
            return TrinoError("INVALID_FUNCTION_ARGUMENT", m.group(1).strip())
        if "Conversion Error" in msg or "Could not convert" in msg:
            return TrinoError("INVALID_CAST_ARGUMENT", msg.split("\n")[0].replace("Conversion Error: ", ""))
        if "Division by zero" in msg or "division by zero" in msg:
            return TrinoError("DIVISION_BY_ZERO", "Division by zero")
        if "No function matches" in msg or "Cannot compare" in msg or "Cannot mix" in msg:
            return TrinoError("TYPE_MISMATCH", msg.split("\n")[0].replace("Binder Error: ", ""))
        if "Parser Error" in msg:
            return TrinoError("SYNTAX_ERROR", msg.split("\n")[0].replace("Parser Error: ", ""), 1, 1)
        return TrinoError("GENERIC_INTERNAL_ERROR", msg.split("\n")[0])

    def _find_column(self, tree, col: str, qual: str | None):
        for c in tree.find_all(exp.Column):
            if c.name.lower() == col.lower():
                return node_pos(self.sql, c)
        return None, None

    def _find_function(self, tree, fn: str):
        for f in tree.find_all(exp.Func):
            name = f.sql_name().lower() if not isinstance(f, exp.Anonymous) else str(f.this).lower()
            if name == fn:
                return node_pos(self.sql, f)
        return None, None


class _Watcher:
    """One thread interrupting the DuckDB statements whose query was cancelled (a thread
    per statement would cost more than a short statement itself)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[int, tuple[threading.Event, Any]] = {}
        self._thread: threading.Thread | None = None

    def watch(self, cancelled: threading.Event, cur) -> int:
        with self._lock:
            key = id(cur)
            self._running[key] = (cancelled, cur)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="duckdb-cancel", daemon=True)
                self._thread.start()
            return key

    def done(self, key: int) -> None:
        with self._lock:
            self._running.pop(key, None)

    def _loop(self) -> None:
        import time

        while True:
            time.sleep(0.05)
            with self._lock:
                hit = [cur for c, cur in self._running.values() if c.is_set()]
            for cur in hit:
                try:
                    cur.interrupt()
                except Exception:
                    pass


_WATCHER = _Watcher()
# a plain execute's result as Arrow is copied once more than a relation's: for the few rows
# of a metadata statement that is still cheaper than building the relation
warnings.filterwarnings("ignore", message="Arrow output on a DB-API result")


def run_watched(cur, duck_sql: str, cancelled: threading.Event, as_relation: bool = True):
    """Run `duck_sql` on `cur`, interrupted when `cancelled` is set: (arrow table, DuckDB
    types or None, names or None), or None for a statement without a result. Without
    `as_relation` the statement runs as a plain execute (no relation is built: faster,
    but the DuckDB types are not known)."""
    key = _WATCHER.watch(cancelled, cur)
    try:
        if not as_relation:
            return cur.execute(duck_sql).to_arrow_table(), None, None
        rel = cur.sql(duck_sql)
        if rel is None:
            return None
        types = rel.types
        names = rel.columns
        table = rel.arrow()
        if hasattr(table, "read_all"):
            table = table.read_all()
        return table, types, names
    finally:
        _WATCHER.done(key)


def encode_result(table, out_names: list[str], out_types: list[str], session: Session) -> Result:
    encs = [encoder(parse_type(t), session.time_zone) for t in out_types]
    pylists = [c.to_pylist() for c in table.columns]
    rows = [[encs[j](pylists[j][i]) for j in range(len(encs))] for i in range(table.num_rows)]
    return Result(columns=[Column(n, t) for n, t in zip(out_names, out_types)], rows=rows)


def _pushdown_filters(tbl: exp.Table) -> dict[str, str]:
    """`table_schema = '...'` / `table_name = '...'` conjuncts of the WHERE of the SELECT that
    reads `tbl` (information_schema pushes these down, as Trino does)."""
    select = tbl.find_ancestor(exp.Select)
    if select is None or select.args.get("joins"):
        return {}
    where = select.args.get("where")
    if where is None:
        return {}
    out: dict[str, str] = {}
    stack = [where.this]
    while stack:
        e = stack.pop()
        if isinstance(e, exp.And):
            stack += [e.left, e.right]
        elif isinstance(e, exp.Paren):
            stack.append(e.this)
        elif isinstance(e, exp.EQ):
            a, b = e.left, e.right
            if isinstance(b, exp.Column):
                a, b = b, a
            if isinstance(a, exp.Column) and isinstance(b, exp.Literal) and b.is_string \
                    and a.name.lower() in ("table_schema", "table_name"):
                out[a.name.lower()] = b.this
    return out


def _unwrap(e: exp.Expression | None) -> exp.Expression | None:
    """Look through aggregates/wrappers that keep their argument's type."""
    while e is not None:
        if isinstance(e, exp.Alias):
            e = e.this
        elif isinstance(e, exp.Paren):
            e = e.this
        elif isinstance(e, (exp.Max, exp.Min, exp.AnyValue, exp.First, exp.Last)):
            e = e.this
        elif isinstance(e, exp.Coalesce):
            e = e.this
        elif isinstance(e, (exp.DateTrunc, exp.TimestampTrunc)):
            e = e.this if not isinstance(e.this, exp.Literal) else e.args.get("expression") or e.this
        elif isinstance(e, exp.Anonymous) and str(e.this).lower() in ("arbitrary", "max_by", "min_by", "any_value") and e.expressions:
            e = e.expressions[0]
        else:
            break
    return e


def _cast_precision(e: exp.Expression) -> int | None:
    e = _unwrap(e)
    if isinstance(e, (exp.Cast, exp.TryCast)):
        to = e.args.get("to")
        if isinstance(to, exp.DataType) and to.is_type(*exp.DataType.TEMPORAL_TYPES):
            ps = to.expressions
            if ps:
                try:
                    return int(ps[0].this.this if isinstance(ps[0].this, exp.Literal) else ps[0].name)
                except Exception:
                    return None
            return 3
    if isinstance(e, (exp.CurrentTimestamp, exp.UnixToTime)):
        return 3
    return None


def _same_family(src, dst) -> bool:
    a, b = src[0], dst[0]
    if a == b:
        return True
    if a in ("json", "uuid", "char") and b == "varchar":
        return True
    return False
