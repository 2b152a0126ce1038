"""What the table procedures share: the context of one call, result shapes, commit
properties, the retention checks and the files snapshots reach."""

from __future__ import annotations

import datetime as dt
import random
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyiceberg.table import Table

from ...common.errors import TrinoError
from ..api import Column, Result, Session
from ..units import UnitError, format_duration, parse_duration

if TYPE_CHECKING:
    from ..core import Engine

ICEBERG_VERSION = "Apache Iceberg 1.10.1 (commit ccb8bc435062171e64bc8b7e5f56e6aed9c5b934)"


# -- results -----------------------------------------------------------------------------------------

def metrics_result(metrics: dict[str, int]) -> Result:
    return Result(columns=[Column("metric_name", "varchar"), Column("metric_value", "bigint")],
                  rows=[[k, int(v)] for k, v in metrics.items()], update_type="ALTER TABLE EXECUTE")


def rows_result(rows: list[list]) -> Result:
    return Result(columns=[Column("rows", "bigint")], rows=rows, update_type="ALTER TABLE EXECUTE")


def coordinator_result(version: int, metrics: dict[str, int]) -> Result:
    """Coordinator-only procedures: no rows up to 477, metric rows from 478."""
    if version <= 477:
        return rows_result([])
    return metrics_result(metrics)


# -- the context of one call --------------------------------------------------------------------------

@dataclass
class Ctx:
    engine: "Engine"
    sql: str
    session: Session
    catalog: str
    schema: str
    table: str
    progress: Any
    cancelled: threading.Event

    def load(self) -> Table:
        w = self.engine.warehouses[self.catalog]
        return w.catalog.load_table((self.schema, self.table))

    def commit_properties(self) -> dict[str, str]:
        return {
            "trino_query_id": self.session.query_id or new_query_id(),
            "trino_user": self.session.user,
            "engine-name": "trino",
            "engine-version": str(self.session.server_version),
            "iceberg-version": ICEBERG_VERSION,
        }

    def check_cancel(self) -> None:
        if self.cancelled.is_set():
            raise TrinoError("USER_CANCELED", "Query was canceled")


def new_query_id() -> str:
    t = dt.datetime.now(dt.timezone.utc)
    suffix = "".join(random.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(5))
    return f"{t:%Y%m%d_%H%M%S}_{random.randint(0, 99999):05d}_{suffix}"


def _min_retention(ctx: Ctx, prop: str) -> float:
    v = ctx.session.properties.get(f"{ctx.catalog}.{prop}")
    if v is None:
        return 7 * 86400.0
    try:
        return parse_duration(v)
    except UnitError:
        raise TrinoError("INVALID_SESSION_PROPERTY", f"{ctx.catalog}.{prop} is invalid: {v}") from None


def check_retention(ctx: Ctx, retention: float, which: str) -> None:
    version = ctx.session.server_version
    if which == "expire":
        prop = "expire_snapshots_min_retention"
        config = "iceberg.expire-snapshots.min-retention" if version >= 464 else "iceberg.expire_snapshots.min-retention"
    else:
        prop = "remove_orphan_files_min_retention"
        config = ("iceberg.remove-orphan-files.min-retention" if version >= 464
                  else "iceberg.remove_orphan_files.min-retention")
    minimum = _min_retention(ctx, prop)
    if retention < minimum:
        raise TrinoError(
            "INVALID_PROCEDURE_ARGUMENT",
            f"Retention specified ({format_duration(retention)}) is shorter than the minimum retention configured "
            f"in the system ({format_duration(minimum)}). Minimum retention can be changed with {config} "
            f"configuration property or {ctx.catalog}.{prop} session property",
        )


# -- commits and files ---------------------------------------------------------------------------------

class CachedMetadataMixin:
    """pyiceberg's producers ask the transaction for the schema and specs per manifest they
    write, and the transaction rebuilds (deep-copies) the table metadata on every access;
    with hundreds of snapshots that dominates a commit. Both are fixed for a commit."""

    def schema(self):
        sc = self.__dict__.get("_lab_schema")
        if sc is None:
            sc = self.__dict__["_lab_schema"] = self._transaction.table_metadata.schema()
        return sc

    def spec(self, spec_id: int):
        specs = self.__dict__.get("_lab_specs")
        if specs is None:
            specs = self.__dict__["_lab_specs"] = self._transaction.table_metadata.specs()
        return specs[spec_id]

    def _build_manifest_evaluator(self, spec_id: int):
        """pyiceberg's manifest evaluator keeps the manifest it is looking at in the visitor
        (`_ManifestEvalVisitor.partition_fields`), and `_deleted_entries` shares one evaluator
        across its thread pool: two threads can then judge a manifest by another one's
        partition bounds and skip files that must be deleted ("Missing required files to
        delete"). Each evaluation here gets the evaluator to itself."""
        from pyiceberg.expressions.visitors import manifest_evaluator

        evaluate = manifest_evaluator(self.spec(spec_id), self.schema(), self.partition_filters[spec_id],
                                      self._case_sensitive)
        lock = threading.Lock()

        def safe(manifest) -> bool:
            with lock:
                return evaluate(manifest)
        return safe


def reachable_files(tbl: Table, snapshots) -> tuple[set[str], set[str], set[str]]:
    """(manifest lists, manifests, data/delete files) referenced by the given snapshots."""
    lists, manifests, files = set(), set(), set()
    seen = set()
    for s in snapshots:
        lists.add(s.manifest_list)
        for m in s.manifests(tbl.io):
            manifests.add(m.manifest_path)
            if m.manifest_path in seen:
                continue
            seen.add(m.manifest_path)
            for e in m.fetch_manifest_entry(tbl.io, discard_deleted=False):
                files.add(e.data_file.file_path)
    return lists, manifests, files
