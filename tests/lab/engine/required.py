"""control("require_column"): a column made NOT NULL while its data files hold NULLs.

What another engine leaves behind when it declares a column required after rows without a
value were written (pyiceberg's schema update with `allow_incompatible_changes`): Trino
reads the column as `NOT NULL`, and from 483 refuses to OPTIMIZE the table (its rewrite would
write NULLs into a required Parquet column). Trino itself cannot do this on demand (it has
no `SET NOT NULL`), so the lab does, through pyiceberg on the same catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common.errors import TrinoError
from .clone import _split

if TYPE_CHECKING:
    from .core import Engine


def require_column(engine: "Engine", payload: dict) -> dict:
    target, column = payload.get("target"), payload.get("column")
    if not target or not column:
        raise TrinoError("INVALID_ARGUMENTS", "require_column needs target and column")
    default_catalog = payload.get("catalog") or next(iter(engine.warehouses))
    cat, ns, name = _split(target, default_catalog)
    w = engine.warehouse_or_error(cat)
    with engine.table_lock(cat, ns, name):
        try:
            table = w.catalog.load_table((ns, name))
        except Exception as e:  # noqa: BLE001 - pyiceberg's NoSuchTableError and its kin
            raise TrinoError("TABLE_NOT_FOUND", f"Table '{cat}.{ns}.{name}' does not exist ({e})") from None
        if table.schema().find_field(column, case_sensitive=False) is None:
            raise TrinoError("COLUMN_NOT_FOUND", f"Column '{column}' cannot be resolved in {cat}.{ns}.{name}")
        with table.update_schema(allow_incompatible_changes=True) as update:
            update.update_column(column, required=True)
        table = w.catalog.load_table((ns, name))
    return {"catalog": cat, "schema": ns, "table": name, "column": column,
            "required": table.schema().find_field(column, case_sensitive=False).required,
            "metadata_location": table.metadata_location}
