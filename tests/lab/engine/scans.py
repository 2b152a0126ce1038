"""How many times a statement scans each table, the way Trino plans it.

Trino inlines `WITH` queries (trinodb/trino#10): every reference to a named query is planned
again, so a CTE over `"t$files"` referenced twice reads every manifest twice, and a CTE
referenced by a CTE referenced twice counts twice again. A CTE nobody references is not
planned. This module walks the parsed statement with that rule and counts, per table, the
scans the plan would have.
"""

from __future__ import annotations

from collections import Counter

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError


def _name(i) -> str | None:
    if i is None:
        return None
    if isinstance(i, exp.Identifier):
        return i.name.lower()
    return str(getattr(i, "name", i)).lower()


def _with_of(node: exp.Expression):
    return node.args.get("with") or node.args.get("with_")


def count_scans(tree: exp.Expression, catalog: str | None = None, schema: str | None = None) -> Counter:
    """`{"catalog.schema.table": scans}` for every table a statement reads."""

    def visit(node: exp.Expression, env: dict[str, Counter]) -> Counter:
        out: Counter = Counter()
        with_ = _with_of(node)
        if with_ is not None:
            env = dict(env)
            for cte in with_.expressions:
                # a named query sees the ones before it (and, when recursive, itself: one scan)
                env[cte.alias_or_name.lower()] = visit(cte.this, env)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            cat, db, name = _name(node.args.get("catalog")), _name(node.args.get("db")), _name(node.this)
            if cat is None and db is None and name in env:
                out.update(env[name])
            else:
                full = ".".join(p for p in (cat or catalog, db or schema, name) if p)
                out[full] += 1
        for key, child in node.args.items():
            if key in ("with", "with_"):
                continue
            for c in child if isinstance(child, list) else [child]:
                if isinstance(c, exp.Expression):
                    out.update(visit(c, env))
        return out

    return visit(tree, {})


def scans_of_sql(sql: str, catalog: str | None = None, schema: str | None = None) -> dict[str, int]:
    """The scans of a statement's text; `{}` when it does not parse (the engine reports that)."""
    try:
        tree = sqlglot.parse_one(sql, read="trino")
    except (ParseError, TokenError, ValueError):
        return {}
    if tree is None:
        return {}
    return dict(count_scans(tree, catalog, schema))
