"""`rollback_to_snapshot`: point the `main` branch at an earlier snapshot."""

from __future__ import annotations

from ...common.errors import TrinoError
from ..api import Result
from .shared import Ctx, coordinator_result


def rollback_to_snapshot(ctx: Ctx, values: dict) -> Result:
    tbl = ctx.load()
    sid = values.get("snapshot_id")
    if sid is None or tbl.metadata.snapshot_by_id(sid) is None:
        raise TrinoError("INVALID_PROCEDURE_ARGUMENT", f"Snapshot {sid} does not exist")
    from pyiceberg.table.update import SetSnapshotRefUpdate
    from pyiceberg.table.refs import SnapshotRefType

    with tbl.transaction() as tx:
        tx._apply((SetSnapshotRefUpdate(snapshot_id=sid, ref_name="main", type=SnapshotRefType.BRANCH),), ())
    return coordinator_result(ctx.session.server_version, {})
