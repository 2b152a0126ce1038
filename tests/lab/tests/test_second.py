"""The lab's second cluster (`labctl up` starts it): the stand-in over a catalog of its own,
a copy of the seed's, so the same tables under the same names are two clusters' tables."""

import sqlite3
from pathlib import Path

from .. import realtrino


def test_the_second_cluster_serves_a_copy_of_the_seed_catalog_with_the_same_tables(lab):
    second = lab["second"]
    assert second is not None, "labctl up started no second cluster"
    catalog = Path(second["dir"]) / "catalog.db"
    seed = Path(lab["scenario"]["path"]) / "catalog.db"
    assert catalog.exists() and catalog.resolve() != seed.resolve()
    # Its own catalog file: the tables the copy lists are the seed's.
    with sqlite3.connect(f"file:{catalog}?mode=ro", uri=True) as c:
        copied = {(ns, name) for ns, name in c.execute(
            "SELECT table_namespace, table_name FROM iceberg_tables")}
    assert ("zoning", "documents") in copied
    page = realtrino.statement(
        second["url"], "SELECT table_name FROM iceberg.information_schema.tables WHERE table_schema = 'zoning'")
    assert page.get("error") is None, page.get("error")
    served = {r[0] for r in page["rows"]}
    assert {name for ns, name in copied if ns == "zoning"} <= served, (served, copied)
    assert "documents" in served
