"""expected.json: what the generator wrote, per table, for tests to compare against."""

from __future__ import annotations

import datetime as dt
from typing import Any

from .history import HistoryWriter

# floe's default: a file is small below 75% of a 128 MB target
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
SMALL_FILE_THRESHOLD = int(DEFAULT_TARGET_FILE_SIZE * 0.75)
SMALL_PARTITION_MIN_FILES = 12


def iso(ms: int) -> str:
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def trino_ts(ms: int) -> str:
    """How Trino prints this instant as timestamp(3) with time zone in a UTC session."""
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def _snap(c) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "snapshot_id": c.snapshot_id,
        "operation": c.operation,
        "committed_at_ms": c.timestamp_ms,
        "committed_at": iso(c.timestamp_ms),
        "committed_at_trino": trino_ts(c.timestamp_ms),
    }


def table_facts(schema_name: str, table_name: str, w: HistoryWriter, metadata_location: str,
                set_properties: dict[str, str], notes: str = "") -> dict[str, Any]:
    from ..engine.types import iceberg_to_trino, partition_field_sql, partition_field_type

    files = w.live_files()
    by_part = w.live_by_partition()
    small = [f for f in files if f.file_size_in_bytes < SMALL_FILE_THRESHOLD]
    small_by_part: dict[tuple, int] = {}
    for f in small:
        key = tuple(f.partition)
        small_by_part[key] = small_by_part.get(key, 0) + 1
    small_parts = sorted(
        (w.spec.partition_to_path(next(iter(by_part[k])).partition, w.schema) if w.spec.fields else "", n)
        for k, n in small_by_part.items() if n >= SMALL_PARTITION_MIN_FILES
    )
    commits = w.commits
    ops: dict[str, int] = {}
    for c in commits:
        ops[c.operation] = ops.get(c.operation, 0) + 1
    replaces = [c for c in commits if c.operation == "replace"]
    writes = [c for c in commits if c.operation in ("append", "overwrite", "delete")]
    partitioned = bool(w.spec.fields)
    return {
        "schema": schema_name,
        "table": table_name,
        "notes": notes,
        "location": w.location,
        "metadata_location": metadata_location,
        "format_version": w.format_version,
        "columns": [{"name": f.name, "type": iceberg_to_trino(f.field_type)} for f in w.schema.fields],
        "partitioning": [partition_field_sql(w.schema, pf) for pf in w.spec.fields],
        "partition_fields": [
            {"name": pf.name, "type": partition_field_type(w.schema, pf)} for pf in w.spec.fields
        ],
        "data_files": len(files),
        "small_files": len(small),
        "records": sum(f.record_count for f in files),
        "total_bytes": sum(f.file_size_in_bytes for f in files),
        "min_file_bytes": min((f.file_size_in_bytes for f in files), default=None),
        "max_file_bytes": max((f.file_size_in_bytes for f in files), default=None),
        # an unpartitioned table with data has one (empty) partition, as $partitions shows it
        "partitions": len(by_part) if partitioned else (1 if files else 0),
        "small_file_partitions": len(small_parts),
        "small_file_partition_list": [{"partition": p, "small_files": n} for p, n in small_parts],
        "manifests": len(w._manifests),
        "snapshots": len(commits),
        "operations": ops,
        "current_snapshot_id": commits[-1].snapshot_id if commits else None,
        "oldest_snapshot": _snap(commits[0] if commits else None),
        "newest_snapshot": _snap(commits[-1] if commits else None),
        "last_replace": _snap(replaces[-1] if replaces else None),
        "last_write": _snap(writes[-1] if writes else None),
        "created_at_ms": w.created_ms,
        "properties": dict(set_properties),
        "current_summary": commits[-1].summary if commits else None,
    }


def document(scenario: str, now_ms: int, full: bool, tables: dict[str, dict]) -> dict[str, Any]:
    return {
        "scenario": scenario,
        "full": full,
        "generated_at": iso(now_ms),
        "generated_at_ms": now_ms,
        "target_file_size_bytes": DEFAULT_TARGET_FILE_SIZE,
        "small_file_threshold_bytes": SMALL_FILE_THRESHOLD,
        "small_partition_min_files": SMALL_PARTITION_MIN_FILES,
        "tables": tables,
    }


# floe's default thresholds of the rules `verdict` follows (src/config/health.rs)
CRITICAL_SMALL_FILES = 1000
CRITICAL_PARTITION_SMALL_FILES = 100
COMPACTION_WARN_MS = 36 * 3600 * 1000
COMPACTION_CRITICAL_MS = 48 * 3600 * 1000
_RANK = {"OK": 0, "WARNING": 2, "CRITICAL": 3}


def judge(small: int, excess: int, critical_partitions: int, small_partitions: int,
          max_partition_small: int, small_average: bool, compacted: bool,
          waited_ms: int | None) -> tuple[str | None, dict | None, str]:
    """floe's small-file and staleness rules on a table's counts, whatever its format:
    `small_average` the average file is under the small-file line; `compacted` a
    compaction ever ran; `waited_ms` how long what a compaction should merge has waited
    (None: nothing waits). Returns the small-file severity, the staleness finding and the
    worst status."""
    enough = small >= SMALL_PARTITION_MIN_FILES
    mergeable = max_partition_small >= 2
    costly = enough and (excess >= CRITICAL_SMALL_FILES or critical_partitions > 0)
    small_sev = None
    if enough and mergeable:
        if costly:
            small_sev = "CRITICAL"
        elif small_partitions > 0 or small_average:
            small_sev = "WARNING"
    stale = None
    if enough and mergeable:
        if not compacted:
            stale = {"rule": "never_compacted", "severity": "CRITICAL" if costly else "WARNING"}
        elif waited_ms is not None:
            sev = ("CRITICAL" if waited_ms >= COMPACTION_CRITICAL_MS
                   else "WARNING" if waited_ms >= COMPACTION_WARN_MS else None)
            if sev == "CRITICAL" and not costly:
                sev = "WARNING"
            if sev:
                stale = {"rule": "compaction_stale", "severity": sev}
    worst = max([small_sev or "OK", (stale or {}).get("severity", "OK")], key=_RANK.__getitem__)
    return small_sev, stale, worst


def verdict(w: HistoryWriter, now_ms: int, target: int = DEFAULT_TARGET_FILE_SIZE) -> dict[str, Any]:
    """What floe's small-file and staleness rules (src/health/findings.rs, default
    thresholds) say of the table at `now_ms`, from what the generator wrote: the small
    files and the partitions that hold them, the newest compaction and the commit time of
    the oldest live small file (what `$entries`, or `"$file_modified_time"` where Trino
    cannot read `$entries`, dates it by). `status` is the worst of the two: "OK" means no
    finding at WARNING or above (the fleets hold nothing else that reaches WARNING: no
    delete files, no large files, few manifests and metadata files)."""
    threshold = int(target * 0.75)
    entries = w.live_entries()
    small = [(f, at) for f, at in entries if f.file_size_in_bytes < threshold]
    parts: dict[tuple, list[int]] = {}
    for f, _ in entries:
        p = parts.setdefault(tuple(f.partition) if w.spec.fields else (), [0, 0, 0])
        p[0] += 1
        p[1] += f.file_size_in_bytes
        p[2] += f.file_size_in_bytes < threshold
    files = len(entries)
    total = sum(f.file_size_in_bytes for f, _ in entries)
    excess = min(max(0, files - -(-total // target)), len(small))
    # floe counts no critical partition in an unpartitioned table (its excess decides)
    critical_partitions = sum(
        1 for n, b, s in parts.values()
        if s >= CRITICAL_PARTITION_SMALL_FILES and b <= (n - CRITICAL_PARTITION_SMALL_FILES) * target
    ) if w.spec.fields else 0
    small_partitions = sum(1 for _, _, s in parts.values() if s >= SMALL_PARTITION_MIN_FILES)
    max_partition_small = max((s for _, _, s in parts.values()), default=0)
    replaces = [c for c in w.commits if c.operation == "replace"]
    oldest_small = min((at for _, at in small), default=None)
    small_sev, stale, worst = judge(
        len(small), excess, critical_partitions, small_partitions, max_partition_small,
        total // max(1, files) < threshold, bool(replaces),
        None if oldest_small is None else now_ms - oldest_small)
    return {
        "status": worst,
        "at": iso(now_ms),
        "small_files": small_sev,
        "staleness": stale,
        "excess_files": excess,
        "max_partition_small_files": max_partition_small,
        "critical_partitions": critical_partitions,
        "oldest_small_file_ms": oldest_small,
        "oldest_small_file_at": iso(oldest_small) if oldest_small is not None else None,
    }
