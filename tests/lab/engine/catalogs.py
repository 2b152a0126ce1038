"""information_schema, <catalog>.system.iceberg_tables and the names Trino resolves."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .relation import Relation
from .warehouse import Warehouse, data_columns

if TYPE_CHECKING:
    pass

INFO_TABLES: dict[str, list[tuple[str, str]]] = {
    "columns": [
        ("table_catalog", "varchar"), ("table_schema", "varchar"), ("table_name", "varchar"),
        ("column_name", "varchar"), ("ordinal_position", "bigint"), ("column_default", "varchar"),
        ("is_nullable", "varchar"), ("data_type", "varchar"),
        ("comment", "varchar"), ("extra_info", "varchar"), ("column_comment", "varchar"),
    ],
    "tables": [
        ("table_catalog", "varchar"), ("table_schema", "varchar"), ("table_name", "varchar"),
        ("table_type", "varchar"), ("table_comment", "varchar"),
    ],
    "views": [
        ("table_catalog", "varchar"), ("table_schema", "varchar"), ("table_name", "varchar"),
        ("view_definition", "varchar"),
    ],
    "schemata": [("catalog_name", "varchar"), ("schema_name", "varchar")],
    "table_privileges": [
        ("grantor", "varchar"), ("grantor_type", "varchar"), ("grantee", "varchar"), ("grantee_type", "varchar"),
        ("table_catalog", "varchar"), ("table_schema", "varchar"), ("table_name", "varchar"),
        ("privilege_type", "varchar"), ("is_grantable", "varchar"), ("with_hierarchy", "varchar"),
    ],
    "roles": [("role_name", "varchar")],
    "applicable_roles": [
        ("grantee", "varchar"), ("grantee_type", "varchar"), ("role_name", "varchar"), ("is_grantable", "varchar"),
    ],
    "enabled_roles": [("role_name", "varchar")],
}
INFO_HIDDEN = {
    "columns": frozenset({"comment", "extra_info", "column_comment"}),
    "tables": frozenset({"table_comment"}),
}
# the order Trino's InformationSchemaTable enum lists them
INFO_TABLE_ORDER = ["columns", "tables", "views", "schemata", "table_privileges", "roles", "applicable_roles",
                    "enabled_roles"]


def schema_names(w: Warehouse) -> list[str]:
    return sorted(set(w.schemas()) | {"information_schema"})


def info_schema_relation(w: Warehouse, table: str, filters: dict[str, str] | None = None) -> Relation:
    filters = filters or {}
    cols = INFO_TABLES[table]
    hidden = INFO_HIDDEN.get(table, frozenset())
    rows: list[list] = []
    want_schema = filters.get("table_schema")
    want_table = filters.get("table_name")
    if table == "schemata":
        rows = [[w.name, s] for s in schema_names(w)]
    elif table == "tables":
        for s, t in w.tables():
            rows.append([w.name, s, t, "BASE TABLE", None])
        for t in INFO_TABLE_ORDER:
            rows.append([w.name, "information_schema", t, "BASE TABLE", None])
        rows = [r for r in rows if (want_schema is None or r[1] == want_schema) and (want_table is None or r[2] == want_table)]
    elif table == "columns":
        for s, t in w.tables(want_schema) if want_schema != "information_schema" else []:
            if want_table is not None and t != want_table:
                continue
            tbl = w.load(s, t)
            if tbl is None:
                continue
            for i, (n, typ) in enumerate(data_columns(tbl), start=1):
                rows.append([w.name, s, t, n, i, None, "YES", typ, None, None, None])
        if want_schema in (None, "information_schema"):
            for t in INFO_TABLE_ORDER:
                if want_table is not None and t != want_table:
                    continue
                for i, (n, typ) in enumerate(INFO_TABLES[t], start=1):
                    if n in INFO_HIDDEN.get(t, ()):
                        continue
                    rows.append([w.name, "information_schema", t, n, i, None, "YES", typ, None, None, None])
    return Relation.from_rows(cols, rows, hidden)


def iceberg_tables_relation(w: Warehouse) -> Relation:
    return Relation.from_rows([("table_schema", "varchar"), ("table_name", "varchar")],
                              [[s, t] for s, t in w.tables()])


def like_to_regex(pattern: str, escape: str | None = None) -> re.Pattern:
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if escape and c == escape and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "%":
            out.append(".*")
        elif c == "_":
            out.append(".")
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("^" + "".join(out) + "$", re.S)
