"""A materialized relation: Trino-typed columns over an Arrow table DuckDB can scan."""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from .types import arrow_schema


@dataclass
class Relation:
    # (name, Trino type) in Trino's column order, hidden columns included
    columns: list[tuple[str, str]]
    table: pa.Table | None
    hidden: frozenset[str] = field(default_factory=frozenset)
    # for relations whose rows are expensive (data tables): built on first use, with only
    # the columns a query needs when `needed` is set
    loader: object = None
    needed: frozenset | None = None
    # held by the engine's caches (the same object is handed to every statement reading it)
    cached: bool = False

    def materialize(self) -> pa.Table:
        if self.table is None:
            self.table = self.loader(self.needed)
        return self.table

    @property
    def loaded(self) -> bool:
        return self.table is not None

    def empty(self) -> pa.Table:
        return arrow_schema(self.columns).empty_table()

    @staticmethod
    def from_rows(columns: list[tuple[str, str]], rows: list[dict] | list[list], hidden=frozenset()) -> "Relation":
        schema = arrow_schema(columns)
        if rows and isinstance(rows[0], dict):
            table = pa.Table.from_pylist(rows, schema=schema)
        else:
            cols = list(zip(*rows)) if rows else [[] for _ in columns]
            table = pa.Table.from_arrays(
                [pa.array(list(c), type=schema.field(i).type) for i, c in enumerate(cols)], schema=schema
            )
        return Relation(columns, table, frozenset(hidden))

    def visible(self) -> list[tuple[str, str]]:
        return [c for c in self.columns if c[0] not in self.hidden]

    def type_of(self, name: str) -> str | None:
        for n, t in self.columns:
            if n == name:
                return t
        return None

    def project(self, names: list[str], renames: dict[str, str] | None = None) -> "Relation":
        renames = renames or {}
        cols = []
        for n in names:
            t = self.type_of(n)
            cols.append((renames.get(n, n), t))
        table = self.materialize().select(names)
        if renames:
            table = table.rename_columns([renames.get(n, n) for n in names])
        return Relation(cols, table, frozenset(renames.get(h, h) for h in self.hidden if h in names))
