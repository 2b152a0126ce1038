"""The lab's SQL engine: Trino SQL executed for real over Iceberg warehouses.

    from lab.engine import load_engine
    engine = load_engine({"iceberg": "/abs/.lab/warehouses/seed"})
"""

from __future__ import annotations


def load_engine(catalogs: dict[str, str], **kwargs):
    """Open the scenario directories and return an Engine (see engine/api.py)."""
    from .core import Engine

    return Engine(catalogs, **kwargs)


__all__ = ["load_engine"]
