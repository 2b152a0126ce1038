"""`remove_orphan_files`: delete the files under the table's location that no snapshot,
metadata file or statistics file references and that are older than the retention."""

from __future__ import annotations

import os
import time

from ..api import Result
from ..warehouse import local_path
from .shared import Ctx, check_retention, coordinator_result, reachable_files


def remove_orphan_files(ctx: Ctx, values: dict) -> Result:
    version = ctx.session.server_version
    retention = values["retention_threshold"]
    check_retention(ctx, retention, "orphan")
    tbl = ctx.load()
    md = tbl.metadata
    if md.current_snapshot() is None:
        return coordinator_result(version, {"processed_manifests_count": 0, "active_files_count": 0,
                                            "scanned_files_count": 0, "deleted_files_count": 0}
                                  | ({"deleted_bytes": 0} if version >= 481 else {}))
    lists, manifests, files = reachable_files(tbl, md.snapshots)
    valid = set()
    for p in lists | manifests | files:
        valid.add(os.path.normpath(local_path(p)))
    valid.add(os.path.normpath(local_path(tbl.metadata_location)))
    for e in md.metadata_log:
        valid.add(os.path.normpath(local_path(e.metadata_file)))
    for st in getattr(md, "statistics", []) or []:
        valid.add(os.path.normpath(local_path(st.statistics_path)))
    root = local_path(md.location)
    cutoff = time.time() - retention
    scanned = deleted = deleted_bytes = 0
    for dirpath, _dirs, names in os.walk(root):
        for nm in names:
            p = os.path.normpath(os.path.join(dirpath, nm))
            scanned += 1
            if p in valid or nm == "version-hint.text":
                continue
            try:
                stt = os.stat(p)
            except FileNotFoundError:
                continue
            if stt.st_mtime < cutoff:
                os.unlink(p)
                deleted += 1
                deleted_bytes += stt.st_size
    metrics = {"processed_manifests_count": len(manifests), "active_files_count": len(valid),
               "scanned_files_count": scanned, "deleted_files_count": deleted}
    if version >= 481:
        metrics["deleted_bytes"] = deleted_bytes
    return coordinator_result(version, metrics)
