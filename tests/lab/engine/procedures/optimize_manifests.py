"""`optimize_manifests`: rewrite the current snapshot's data manifests, clustered by the
first partition field, into a `replace` snapshot."""

from __future__ import annotations

from pyiceberg.manifest import ManifestContent, ManifestEntry, ManifestEntryStatus
from pyiceberg.table.snapshots import Operation, Summary
from pyiceberg.table.update.snapshot import _SnapshotProducer

from ..api import Result
from .shared import CachedMetadataMixin, Ctx, coordinator_result


class _RewriteManifests(CachedMetadataMixin, _SnapshotProducer["_RewriteManifests"]):
    def __init__(self, transaction, io, groups, snapshot_properties, previous_summary, replaced: int) -> None:
        super().__init__(Operation.REPLACE, transaction, io, snapshot_properties=snapshot_properties)
        self._groups = groups
        self._previous = previous_summary or {}
        self._replaced = replaced
        self._created = 0

    def _deleted_entries(self) -> list[ManifestEntry]:
        return []

    def _existing_manifests(self):
        out = []
        for spec_id, entries in self._groups:
            with self.new_manifest_writer(self.spec(spec_id)) as w:
                for e in entries:
                    w.add_entry(ManifestEntry.from_args(
                        status=ManifestEntryStatus.EXISTING, snapshot_id=e.snapshot_id,
                        sequence_number=e.sequence_number, file_sequence_number=e.file_sequence_number,
                        data_file=e.data_file))
            out.append(w.to_manifest_file())
        self._created = len(out)
        return out

    def _summary(self, snapshot_properties: dict[str, str] = {}) -> Summary:  # noqa: B006
        tail = ("engine-name", "engine-version", "iceberg-version")
        props = {k: v for k, v in snapshot_properties.items() if k not in tail}
        props["manifests-created"] = str(len(self._groups))
        props["manifests-kept"] = "0"
        props["manifests-replaced"] = str(self._replaced)
        props["entries-processed"] = str(sum(len(es) for _, es in self._groups))
        for k in ("total-records", "total-files-size", "total-data-files", "total-delete-files",
                  "total-position-deletes", "total-equality-deletes"):
            if k in self._previous:
                props[k] = self._previous[k]
        props.update({k: snapshot_properties[k] for k in tail if k in snapshot_properties})
        from ...scenarios.history import order_summary

        return Summary(operation=Operation.REPLACE, **order_summary(props))


def optimize_manifests(ctx: Ctx) -> Result:
    version = ctx.session.server_version
    tbl = ctx.load()
    snap = tbl.metadata.current_snapshot()
    empty = {} if version >= 480 else {}
    if snap is None:
        return coordinator_result(version, empty)
    manifests = [m for m in snap.manifests(tbl.io) if m.content == ManifestContent.DATA]
    target = int(tbl.metadata.properties.get("commit.manifest.target-size-bytes", str(8 * 1024 * 1024)))
    if not manifests or (len(manifests) == 1 and manifests[0].manifest_length < target):
        return coordinator_result(version, empty)
    entries = []
    for m in manifests:
        for e in m.fetch_manifest_entry(tbl.io, discard_deleted=True):
            entries.append(e)
    # cluster by the first partition field's value (at most 200 clusters), as Trino 480 does
    spec = tbl.spec()
    clusters: dict[tuple, list] = {}
    for e in entries:
        first = e.data_file.partition[0] if len(e.data_file.partition) else None
        key = (e.data_file.spec_id, first)
        clusters.setdefault(key, []).append(e)
    if len(clusters) > 200:
        merged: dict[tuple, list] = {}
        for (spec_id, first), es in clusters.items():
            merged.setdefault((spec_id, hash(first) % 200), []).extend(es)
        clusters = merged
    groups = [(k[0], v) for k, v in sorted(clusters.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))]
    tx = tbl.transaction()
    producer = _RewriteManifests(tx, tbl.io, groups, ctx.commit_properties(),
                                 snap.summary.additional_properties if snap.summary else {}, len(manifests))
    producer.commit()
    tx.commit_transaction()
    if version < 480:
        return coordinator_result(version, {})
    return coordinator_result(version, {
        "rewritten_manifests_count": len(manifests), "added_manifests_count": len(groups),
        "kept_manifests_count": 0, "processed_manifest_entries_count": len(entries)})
