"""Opening a scenario directory's pyiceberg catalog (shared by the generator and the engine)."""

from __future__ import annotations

from pathlib import Path

from pyiceberg.catalog.sql import SqlCatalog

# The pyiceberg catalog name inside catalog.db. Independent of the Trino catalog name the
# lab serves the warehouse under ("iceberg", "scale", ...).
CATALOG_NAME = "lab"


def open_catalog(scenario_dir: str | Path) -> SqlCatalog:
    d = Path(scenario_dir).resolve()
    return SqlCatalog(
        CATALOG_NAME,
        uri=f"sqlite:///{d / 'catalog.db'}",
        warehouse=f"file://{d / 'warehouse'}",
    )
