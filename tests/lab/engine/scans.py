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
    from . import parse_cache

    key, idents, _ = parse_cache.normalise(sql)
    template = parse_cache.template(key) if idents else None
    if template is not None:
        # Counted once per normalised text; the placeholders name the statement's tables.
        names = {parse_cache.placeholder(i): name.lower() for i, name in enumerate(idents)}
        counted = _template_scans(key, template, catalog, schema)
        out: Counter = Counter()
        for table, n in counted.items():
            out[".".join(names.get(part, part) for part in table.split("."))] += n
        return dict(out)
    try:
        tree = sqlglot.parse_one(sql, read="trino")
    except (ParseError, TokenError, ValueError):
        return {}
    if tree is None:
        return {}
    return dict(count_scans(tree, catalog, schema))


_counted: dict[tuple[str, str | None, str | None], Counter] = {}


def _template_scans(key: str, template: exp.Expression, catalog: str | None, schema: str | None) -> Counter:
    k = (key, catalog, schema)
    hit = _counted.get(k)
    if hit is None:
        if len(_counted) > 1024:
            _counted.clear()
        hit = _counted[k] = count_scans(template, catalog, schema)
    return hit
