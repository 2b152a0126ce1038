"""`ALTER TABLE ... EXECUTE <procedure>(<arguments>) [WHERE ...]`: the statement, the
procedures each server version registers and their properties, with Trino's argument errors."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ...common.errors import TrinoError
from ..statements import Cursor, Tok, _lc, tokenize
from ..units import UnitError, parse_data_size, parse_duration


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
