"""Statements other than queries: SHOW ..., DESCRIBE, SET/RESET SESSION, USE."""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING

from ..common.errors import TrinoError
from .api import Column, Result, Session
from .catalogs import like_to_regex, schema_names
from .types import partition_field_sql
from .units import UnitError, parse_data_size, parse_duration
from .warehouse import data_columns

if TYPE_CHECKING:
    from .core import Engine


# -- a tiny tokenizer for the statements sqlglot does not parse ---------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<q>"(?:[^"]|"")*")            # quoted identifier
      | (?P<s>'(?:[^']|'')*')            # string literal
      | (?P<n>-?\d+(?:\.\d+)?)           # number
      | (?P<w>[A-Za-z_][\w$@]*)          # word
      | (?P<p>=>|<=|>=|<>|!=|\|\||[.,()=;*<>+\-/%\[\]:?])   # punctuation and operators
    )""",
    re.X,
)


class Tok:
    def __init__(self, kind: str, text: str, pos: int) -> None:
        self.kind = kind
        self.text = text
        self.pos = pos

    @property
    def value(self) -> str:
        if self.kind == "q":
            return self.text[1:-1].replace('""', '"')
        if self.kind == "s":
            return self.text[1:-1].replace("''", "'")
        return self.text

    def is_word(self, *words: str) -> bool:
        return self.kind == "w" and self.text.lower() in words


def tokenize(sql: str, start: int = 0) -> list[Tok]:
    out = []
    i = start
    n = len(sql)
    while i < n:
        if sql[i].isspace():
            i += 1
            continue
        m = _TOKEN.match(sql, i)
        if not m or m.end() == i:
            raise TrinoError("SYNTAX_ERROR", f"mismatched input '{sql[i]}'", *_lc(sql, i))
        kind = m.lastgroup
        text = m.group(kind)
        out.append(Tok(kind, text, m.start(kind)))
        i = m.end()
    return out


def _lc(sql: str, pos: int) -> tuple[int, int]:
    line = sql.count("\n", 0, pos) + 1
    col = pos - (sql.rfind("\n", 0, pos) + 1) + 1
    return line, col


class Cursor:
    def __init__(self, sql: str, toks: list[Tok]) -> None:
        self.sql = sql
        self.toks = toks
        self.i = 0

    def peek(self) -> Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise TrinoError("SYNTAX_ERROR", "mismatched input '<EOF>'", *_lc(self.sql, len(self.sql)))
        self.i += 1
        return t

    def accept_word(self, *words: str) -> Tok | None:
        t = self.peek()
        if t is not None and t.is_word(*words):
            self.i += 1
            return t
        return None

    def expect_word(self, *words: str) -> Tok:
        t = self.peek()
        if t is None or not t.is_word(*words):
            self.error(t, f"Expecting: {', '.join(w.upper() for w in words)}")
        self.i += 1
        return t

    def accept_punct(self, p: str) -> bool:
        t = self.peek()
        if t is not None and t.kind == "p" and t.text == p:
            self.i += 1
            return True
        return False

    def error(self, t: Tok | None, expecting: str):
        if t is None:
            raise TrinoError("SYNTAX_ERROR", f"mismatched input '<EOF>'. {expecting}", *_lc(self.sql, len(self.sql)))
        raise TrinoError("SYNTAX_ERROR", f"mismatched input '{t.text}'. {expecting}", *_lc(self.sql, t.pos))

    def qualified_name(self) -> tuple[list[str], int]:
        t = self.next()
        if t.kind not in ("w", "q"):
            self.error(t, "Expecting: <identifier>")
        parts = [t.value.lower() if t.kind == "w" else t.value]
        pos = t.pos
        while self.accept_punct("."):
            t = self.next()
            if t.kind not in ("w", "q"):
                self.error(t, "Expecting: <identifier>")
            parts.append(t.value.lower() if t.kind == "w" else t.value)
        return parts, pos

    def at_end(self) -> bool:
        return self.peek() is None

    def expect_end(self) -> None:
        t = self.peek()
        if t is not None:
            self.error(t, "Expecting: <EOF>")


def _like_filter(cur: Cursor, values: list[str]) -> list[str]:
    if cur.accept_word("like"):
        pat = cur.next()
        if pat.kind != "s":
            cur.error(pat, "Expecting: <string>")
        esc = None
        if cur.accept_word("escape"):
            e = cur.next()
            esc = e.value
        rx = like_to_regex(pat.value, esc)
        values = [v for v in values if rx.match(v)]
    cur.expect_end()
    return values


def _single(name: str, values: list[str]) -> Result:
    return Result(columns=[Column(name, "varchar")], rows=[[v] for v in values])


# -- SHOW ----------------------------------------------------------------------------------------

def show(engine: "Engine", sql: str, session: Session) -> Result:
    cur = Cursor(sql, tokenize(sql))
    start = cur.expect_word("show")
    what = cur.next()
    w = what.text.lower() if what.kind == "w" else ""
    if w == "catalogs":
        return _single("Catalog", _like_filter(cur, sorted(set(engine.warehouses) | {"system"})))
    if w == "schemas":
        catalog = session.catalog
        if cur.accept_word("from", "in"):
            parts, pos = cur.qualified_name()
            catalog = parts[0]
        if catalog is None:
            raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set",
                             *_lc(sql, start.pos))
        if catalog == "system":
            from .core import SYSTEM_SCHEMAS
            return _single("Schema", _like_filter(cur, list(SYSTEM_SCHEMAS)))
        wh = engine.warehouse_or_error(catalog, _lc(sql, start.pos))
        return _single("Schema", _like_filter(cur, schema_names(wh)))
    if w == "tables":
        catalog, schema = session.catalog, session.schema
        if cur.accept_word("from", "in"):
            parts, pos = cur.qualified_name()
            if len(parts) > 2:
                raise TrinoError("SYNTAX_ERROR", f"Too many parts in schema name: {'.'.join(parts)}", *_lc(sql, start.pos))
            if len(parts) == 2:
                catalog, schema = parts
            else:
                schema = parts[0]
        if catalog is None:
            raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set",
                             *_lc(sql, start.pos))
        if schema is None:
            raise TrinoError("MISSING_SCHEMA_NAME", "Schema must be specified when session schema is not set",
                             *_lc(sql, start.pos))
        wh = engine.warehouse_or_error(catalog, _lc(sql, start.pos))
        if schema == "information_schema":
            from .catalogs import INFO_TABLE_ORDER
            names = sorted(INFO_TABLE_ORDER)
        else:
            if schema not in wh.schemas():
                raise TrinoError("SCHEMA_NOT_FOUND", f"Schema '{schema}' does not exist", *_lc(sql, start.pos))
            names = sorted(t for _s, t in wh.tables(schema))
        return _single("Table", _like_filter(cur, names))
    if w == "columns":
        cur.expect_word("from", "in")
        parts, pos = cur.qualified_name()
        cur.expect_end()
        return describe_parts(engine, sql, session, parts, pos)
    if w == "create":
        kind = cur.next()
        if not kind.is_word("table"):
            raise TrinoError("NOT_SUPPORTED", f"SHOW CREATE {kind.text.upper()} is not supported", *_lc(sql, start.pos))
        parts, pos = cur.qualified_name()
        cur.expect_end()
        return show_create_table(engine, sql, session, parts, pos)
    if w == "session":
        return show_session(engine, session, cur)
    raise TrinoError("NOT_SUPPORTED", f"SHOW {what.text.upper()} is not supported by this server", *_lc(sql, start.pos))


def _qualify(engine: "Engine", sql: str, session: Session, parts: list[str], pos: int) -> tuple[str, str, str]:
    if len(parts) > 3:
        raise TrinoError("SYNTAX_ERROR", f"Too many dots in table name: {'.'.join(parts)}")
    parts = list(parts)
    name = parts[-1]
    schema = parts[-2] if len(parts) > 1 else session.schema
    if schema is None:
        raise TrinoError("MISSING_SCHEMA_NAME", "Schema must be specified when session schema is not set", *_lc(sql, pos))
    catalog = parts[-3] if len(parts) > 2 else session.catalog
    if catalog is None:
        raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set", *_lc(sql, pos))
    return catalog, schema.lower(), name.lower()


def describe_parts(engine: "Engine", sql: str, session: Session, parts: list[str], pos: int) -> Result:
    catalog, schema, name = _qualify(engine, sql, session, parts, pos)
    rel = engine.resolve_relation(catalog, schema, name, session, _lc(sql, pos))
    # a data table's columns carry their Iceberg docs as comments (Trino 476 shows them)
    tbl = engine.warehouses[catalog].load(schema, name) if "$" not in name and catalog in engine.warehouses else None
    docs = {f.name: f.doc for f in tbl.schema().fields} if tbl is not None else {}
    rows = [[n, t, "", docs.get(n) or ""] for n, t in rel.visible()]
    return Result(columns=[Column("Column", "varchar"), Column("Type", "varchar"), Column("Extra", "varchar"),
                           Column("Comment", "varchar")], rows=rows)


def describe(engine: "Engine", sql: str, session: Session) -> Result:
    cur = Cursor(sql, tokenize(sql))
    cur.expect_word("describe", "desc")
    parts, pos = cur.qualified_name()
    cur.expect_end()
    return describe_parts(engine, sql, session, parts, pos)


def _quote_ident(name: str) -> str:
    if re.match(r"^[a-z_][a-z0-9_]*$", name):
        return name
    return '"' + name.replace('"', '""') + '"'


def _sql_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def show_create_table(engine: "Engine", sql: str, session: Session, parts: list[str], pos: int) -> Result:
    catalog, schema, name = _qualify(engine, sql, session, parts, pos)
    rel = engine.resolve_relation(catalog, schema, name, session, _lc(sql, pos))
    tbl = engine.warehouses[catalog].load(schema, name) if "$" not in name else None
    if tbl is None:
        raise TrinoError("NOT_SUPPORTED", f"Relation '{catalog}.{schema}.{name}' is not a table", *_lc(sql, pos))
    docs = {f.name: f.doc for f in tbl.schema().fields}
    # the DDL formatter prints type parameters separated by ", " (`decimal(10, 2)`), where
    # DESCRIBE prints the type's name (`decimal(10,2)`)
    cols = ",\n".join(
        f"   {_quote_ident(n)} {re.sub(r',(?! )', ', ', t)}"
        + (f" COMMENT {_sql_string(docs[n])}" if docs.get(n) else "")
        for n, t in data_columns(tbl)
    )
    props = tbl.metadata.properties
    out: dict[str, str] = {}
    out["format"] = _sql_string(props.get("write.format.default", "PARQUET").upper())
    out["format_version"] = str(tbl.metadata.format_version)
    out["location"] = _sql_string(tbl.metadata.location)
    spec = tbl.spec()
    if spec.fields:
        out["partitioning"] = "ARRAY[" + ",".join(_sql_string(partition_field_sql(tbl.schema(), pf)) for pf in spec.fields) + "]"
    so = tbl.sort_order()
    if so.fields:
        items = []
        for f in so.fields:
            col = tbl.schema().find_field(f.source_id).name
            d = "ASC" if str(f.direction).upper().endswith("ASC") else "DESC"
            nulls = "FIRST" if "FIRST" in str(f.null_order).upper() else "LAST"
            items.append(_sql_string(f"{col} {d} NULLS {nulls}"))
        out["sorted_by"] = "ARRAY[" + ",".join(items) + "]"
    if "commit.retry.num-retries" in props:
        out["max_commit_retry"] = props["commit.retry.num-retries"]
    # Trino 476 has no table property for write.metadata.delete-after-commit.enabled or
    # write.metadata.previous-versions-max: its SHOW CREATE TABLE leaves them out
    with_clause = ",\n".join(f"   {k} = {out[k]}" for k in sorted(out))
    comment = props.get("comment")
    comment_clause = f"COMMENT {_sql_string(comment)}\n" if comment else ""
    text = (f"CREATE TABLE {catalog}.{_quote_ident(schema)}.{_quote_ident(name)} (\n{cols}\n)\n"
            f"{comment_clause}WITH (\n{with_clause}\n)")
    # the statement's one column is typed by the text's length, as Trino's VALUES literal
    return Result(columns=[Column("Create Table", f"varchar({len(text)})")], rows=[[text]])


# -- sessions --------------------------------------------------------------------------------------

# system session properties this server knows (name -> kind)
SYSTEM_PROPERTIES = {
    "query_max_run_time": "duration", "query_max_execution_time": "duration", "query_max_planning_time": "duration",
    "join_distribution_type": "varchar", "task_concurrency": "integer", "spooling_enabled": "boolean",
    "hash_partition_count": "integer", "query_priority": "integer", "redistribute_writes": "boolean",
    "task_min_writer_count": "integer", "task_max_writer_count": "integer", "scale_writers": "boolean",
    "optimize_hash_generation": "boolean", "enable_dynamic_filtering": "boolean",
}
# Iceberg catalog session properties (IcebergSessionProperties)
CATALOG_PROPERTIES = {
    "expire_snapshots_min_retention": "duration", "remove_orphan_files_min_retention": "duration",
    "target_max_file_size": "datasize", "idle_writer_min_file_size": "datasize", "compression_codec": "varchar",
    "projection_pushdown_enabled": "boolean", "statistics_enabled": "boolean", "merge_manifests_on_write": "boolean",
    "collect_extended_statistics_on_write": "boolean", "use_file_size_from_metadata": "boolean",
    "dynamic_filtering_wait_timeout": "duration", "orc_bloom_filters_enabled": "boolean",
    "parquet_writer_block_size": "datasize", "parquet_writer_page_size": "datasize", "sorted_writing_enabled": "boolean",
    "incremental_refresh_enabled": "boolean", "query_partition_filter_required": "boolean",
    "max_partitions_per_writer": "integer",
}
# The defaults SHOW SESSION reports (Trino's own), where a client reads one.
CATALOG_DEFAULTS = {
    "expire_snapshots_min_retention": "7d", "remove_orphan_files_min_retention": "7d",
    "max_partitions_per_writer": "100",
}


def _check_value(kind: str, value: str) -> str | None:
    try:
        if kind == "duration":
            parse_duration(value)
        elif kind == "datasize":
            parse_data_size(value)
        elif kind == "integer":
            int(value)
        elif kind == "boolean":
            if value.lower() not in ("true", "false"):
                return f"Invalid boolean value: {value}"
    except (UnitError, ValueError) as e:
        return str(e)
    return None


def set_session(engine: "Engine", sql: str, session: Session) -> Result:
    cur = Cursor(sql, tokenize(sql))
    start = cur.expect_word("set")
    cur.expect_word("session")
    parts, pos = cur.qualified_name()
    if not cur.accept_punct("="):
        cur.error(cur.peek(), "Expecting: '=', '.'")
    v = cur.next()
    if v.kind == "s":
        value = v.value
    elif v.kind in ("n",) or v.is_word("true", "false"):
        value = v.text.lower() if v.kind == "w" else v.text
    else:
        cur.error(v, "Expecting: <expression>")
    cur.expect_end()
    name = ".".join(parts)
    if len(parts) == 1:
        kind = SYSTEM_PROPERTIES.get(parts[0])
        if kind is None:
            raise TrinoError("INVALID_SESSION_PROPERTY", f"Session property '{name}' does not exist", *_lc(sql, start.pos))
    elif len(parts) == 2:
        if parts[0] not in engine.warehouses:
            raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{parts[0]}' not found", *_lc(sql, start.pos))
        kind = CATALOG_PROPERTIES.get(parts[1])
        if kind is None:
            raise TrinoError("INVALID_SESSION_PROPERTY", f"Session property '{name}' does not exist", *_lc(sql, start.pos))
    else:
        raise TrinoError("INVALID_SESSION_PROPERTY", f"Invalid session property '{name}'", *_lc(sql, start.pos))
    problem = _check_value(kind, value)
    if problem:
        raise TrinoError("INVALID_SESSION_PROPERTY",
                         f"Unable to set session property '{name}' to '{value}': {problem}", *_lc(sql, start.pos))
    return Result(
        columns=[Column("result", "boolean")], rows=[[True]], update_type="SET SESSION",
        headers=[("X-Trino-Set-Session", f"{name}={urllib.parse.quote(value, safe='')}")],
    )


def reset_session(engine: "Engine", sql: str, session: Session) -> Result:
    cur = Cursor(sql, tokenize(sql))
    start = cur.expect_word("reset")
    cur.expect_word("session")
    parts, pos = cur.qualified_name()
    cur.expect_end()
    name = ".".join(parts)
    known = (len(parts) == 1 and parts[0] in SYSTEM_PROPERTIES) or (
        len(parts) == 2 and parts[0] in engine.warehouses and parts[1] in CATALOG_PROPERTIES)
    if len(parts) == 2 and parts[0] not in engine.warehouses:
        raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{parts[0]}' not found", *_lc(sql, start.pos))
    if not known:
        raise TrinoError("INVALID_SESSION_PROPERTY", f"Session property '{name}' does not exist", *_lc(sql, start.pos))
    return Result(columns=[Column("result", "boolean")], rows=[[True]], update_type="RESET SESSION",
                  headers=[("X-Trino-Clear-Session", name)])


def use(engine: "Engine", sql: str, session: Session) -> Result:
    cur = Cursor(sql, tokenize(sql))
    start = cur.expect_word("use")
    parts, pos = cur.qualified_name()
    cur.expect_end()
    if len(parts) == 2:
        catalog, schema = parts
    elif len(parts) == 1:
        catalog, schema = session.catalog, parts[0]
        if catalog is None:
            raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set",
                             *_lc(sql, start.pos))
    else:
        raise TrinoError("SYNTAX_ERROR", f"Too many parts in schema name: {'.'.join(parts)}", *_lc(sql, start.pos))
    wh = engine.warehouse_or_error(catalog, _lc(sql, start.pos))
    if schema not in schema_names(wh):
        raise TrinoError("SCHEMA_NOT_FOUND", f"Schema does not exist: {catalog}.{schema}", *_lc(sql, start.pos))
    return Result(columns=[Column("result", "boolean")], rows=[[True]], update_type="USE",
                  headers=[("X-Trino-Set-Catalog", catalog), ("X-Trino-Set-Schema", schema)])


def show_session(engine: "Engine", session: Session, cur: Cursor) -> Result:
    rows = []
    for name, kind in sorted(SYSTEM_PROPERTIES.items()):
        rows.append([name, session.properties.get(name, ""), "", kind, ""])
    for cat in sorted(engine.warehouses):
        for name, kind in sorted(CATALOG_PROPERTIES.items()):
            full = f"{cat}.{name}"
            default = CATALOG_DEFAULTS.get(name, "")
            rows.append([full, session.properties.get(full, default), default, kind, ""])
    values = [r[0] for r in rows]
    keep = set(_like_filter(cur, values))
    return Result(columns=[Column(n, "varchar") for n in ("Name", "Value", "Default", "Type", "Description")],
                  rows=[r for r in rows if r[0] in keep])
