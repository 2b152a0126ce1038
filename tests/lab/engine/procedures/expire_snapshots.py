"""`expire_snapshots`: drop the snapshots past the retention (keeping refs and the last
`retain_last`) and delete the files only they reached."""

from __future__ import annotations

import os
import time

from ..api import Result
from ..warehouse import local_path
from .shared import Ctx, check_retention, coordinator_result, reachable_files


def expire_snapshots(ctx: Ctx, values: dict) -> Result:
    version = ctx.session.server_version
    retention = values["retention_threshold"]
    check_retention(ctx, retention, "expire")
    tbl = ctx.load()
    md = tbl.metadata
    now_ms = int(time.time() * 1000)
    older_than = now_ms - int(retention * 1000)
    retain_last = values.get("retain_last") or int(md.properties.get("history.expire.min-snapshots-to-keep", "1"))
    keep: set[int] = set()
    for ref in md.refs.values():
        keep.add(ref.snapshot_id)
    cur = md.current_snapshot()
    n = 0
    s = cur
    while s is not None and n < retain_last:
        keep.add(s.snapshot_id)
        n += 1
        s = md.snapshot_by_id(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
    expire = [s for s in md.snapshots if s.timestamp_ms < older_than and s.snapshot_id not in keep]
    if not expire:
        return coordinator_result(version, {})
    remaining = [s for s in md.snapshots if s.snapshot_id not in {e.snapshot_id for e in expire}]
    before = reachable_files(tbl, md.snapshots)
    after = reachable_files(tbl, remaining)
    from pyiceberg.table.update import RemoveSnapshotsUpdate

    with tbl.transaction() as tx:
        tx._apply((RemoveSnapshotsUpdate(snapshot_ids=[s.snapshot_id for s in expire]),), ())
    # Iceberg's expiration deletes the files only the expired snapshots referenced
    for kind in range(3):
        for path in before[kind] - after[kind]:
            try:
                os.unlink(local_path(path))
            except OSError:
                pass
    return coordinator_result(version, {})
