"""ALTER TABLE ... EXECUTE: optimize, expire_snapshots, remove_orphan_files, optimize_manifests,
drop_extended_stats, rollback_to_snapshot.

They change the tables for real (pyiceberg commits) with Trino's argument handling, error
texts and result shapes (see notes: trino.md §1.7 and §4). This module resolves the table and
the arguments and dispatches; each procedure lives in its own module.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ...common.errors import TrinoError
from ..api import Result, Session
from ..statements import _lc
from .expire_snapshots import expire_snapshots
from .optimize import optimize
from .optimize_manifests import optimize_manifests
from .remove_orphan_files import remove_orphan_files
from .rollback_to_snapshot import rollback_to_snapshot
from .shared import Ctx, coordinator_result
from .statement import evaluate_properties, parse_statement, procedure_properties

if TYPE_CHECKING:
    from ..core import Engine


def execute(engine: "Engine", sql: str, session: Session, progress, cancelled: threading.Event) -> Result:
    st = parse_statement(sql)
    version = session.server_version
    parts = st.parts
    if len(parts) > 3:
        raise TrinoError("SYNTAX_ERROR", f"Too many dots in table name: {'.'.join(parts)}")
    name = parts[-1].lower()
    schema = parts[-2].lower() if len(parts) > 1 else session.schema
    catalog = parts[-3].lower() if len(parts) > 2 else session.catalog
    pos = _lc(sql, st.table_pos)
    if schema is None:
        raise TrinoError("MISSING_SCHEMA_NAME", "Schema must be specified when session schema is not set", *pos)
    if catalog is None:
        raise TrinoError("MISSING_CATALOG_NAME", "Catalog must be specified when session catalog is not set", *pos)
    qualified = f"{catalog}.{schema}.{name}"
    w = engine.warehouses.get(catalog)
    if w is None:
        raise TrinoError("CATALOG_NOT_FOUND", f"Catalog '{catalog}' not found", *pos)
    if w.metadata_location(schema, name) is None:
        raise TrinoError("TABLE_NOT_FOUND", f"Table '{qualified}' does not exist", *pos)
    props = procedure_properties(st.procedure, version)
    if props is None:
        raise TrinoError("PROCEDURE_NOT_FOUND", f"Table procedure not registered: {st.procedure}")
    stmt_pos = 0
    while stmt_pos < len(sql) and sql[stmt_pos].isspace():
        stmt_pos += 1
    if st.where_sql is not None and st.procedure != "optimize":
        raise TrinoError("NOT_SUPPORTED", f"WHERE not supported for procedure {st.procedure}", *_lc(sql, stmt_pos))
    values = evaluate_properties(catalog, st.procedure, props, st.args, sql, stmt_pos)
    ctx = Ctx(engine, sql, session, catalog, schema, name, progress, cancelled)
    old_location = w.metadata_location(schema, name)
    with engine.table_lock(catalog, schema, name):
        try:
            if st.procedure == "optimize":
                return optimize(ctx, values, st)
            if st.procedure == "expire_snapshots":
                return expire_snapshots(ctx, values)
            if st.procedure == "remove_orphan_files":
                return remove_orphan_files(ctx, values)
            if st.procedure == "optimize_manifests":
                return optimize_manifests(ctx)
            if st.procedure == "drop_extended_stats":
                return coordinator_result(version, {})
            if st.procedure == "rollback_to_snapshot":
                return rollback_to_snapshot(ctx, values)
        finally:
            if w.metadata_location(schema, name) != old_location:
                engine.invalidate(catalog, old_location)
    raise TrinoError("PROCEDURE_NOT_FOUND", f"Table procedure not registered: {st.procedure}")
