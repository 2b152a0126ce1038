"""control("clone_table"): an isolated, mutable copy of a table with the same history.

Data files are hard-linked (copied when the file system refuses) under a new table location;
every manifest and manifest list is rewritten with the new paths, keeping snapshot ids,
sequence numbers, timestamps and statuses; the metadata keeps the snapshots, snapshot log and
refs (a fresh metadata log) and is registered under the target name.

`sort_order_id` (optional, an integer or null) sets every data file's sort order id in the
copy: null as pyiceberg's own writer leaves it, which the real Trino 476 fails `$entries` on
(a table of that kind with the source's history).

`summary_without` (optional, a list of keys) leaves those keys out of every snapshot's
summary in the copy: a writer that records no `total-delete-files`, say (the spec makes
every summary field optional).
"""

from __future__ import annotations

import copy
import os
import shutil
import time
import uuid
from typing import TYPE_CHECKING

from pyiceberg.manifest import DataFileContent, ManifestEntry, write_manifest_list
from pyiceberg.serializers import ToOutputFile

from ..common.errors import TrinoError
from .warehouse import local_path

if TYPE_CHECKING:
    from .core import Engine


KEEP = object()
# The position of `sort_order_id` in pyiceberg's DataFile record (its `sort_order_id` property).
SORT_ORDER_ID = 15


def _split(name: str, default_catalog: str) -> tuple[str, str, str]:
    parts = name.split(".")
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return default_catalog, parts[0], parts[1]
    raise TrinoError("SYNTAX_ERROR", f"expected schema.table or catalog.schema.table, got {name!r}")


def _link(src: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def make_room(w, cat: str, ns: str, name: str, replace: bool) -> str:
    """Make way for a new table `ns.name` (the caller holds its table lock): an existing one
    is dropped when `replace`, else that is Trino's TABLE_ALREADY_EXISTS; the schema is
    created when missing. Returns a fresh location for the table's files."""
    if w.metadata_location(ns, name) is not None:
        if not replace:
            raise TrinoError("TABLE_ALREADY_EXISTS", f"Table '{cat}.{ns}.{name}' already exists")
        w.catalog.drop_table((ns, name))
    if not w.catalog.namespace_exists(ns):
        w.catalog.create_namespace(ns)
    safe = "".join(c if (c.isalnum() or c in "_-") else "_" for c in name)
    return f"file://{w.dir / 'warehouse' / ns}/{safe}-{uuid.uuid4().hex}"


def _manifest_writer(content, *args):
    """A v2 manifest writer keeping the source manifest's content: a delete manifest stays
    one (Trino fails a table whose delete files sit in a data manifest: 'GenericDataFile
    cannot be cast to class org.apache.iceberg.DeleteFile')."""
    from pyiceberg.manifest import ManifestContent

    from ..scenarios.history import BufferedManifestWriter

    class Writer(BufferedManifestWriter):
        def content(self):
            return content

        @property
        def _meta(self):
            return {**super()._meta, "content": "deletes" if content == ManifestContent.DELETES else "data"}

    return Writer(*args)


def clone_table(engine: "Engine", payload: dict) -> dict:

    t0 = time.monotonic()
    default_catalog = payload.get("catalog") or ("iceberg" if "iceberg" in engine.warehouses
                                                 else next(iter(engine.warehouses)))
    if not payload.get("source") or not payload.get("target"):
        raise TrinoError("INVALID_ARGUMENTS", "clone_table needs source and target")
    s_cat, s_schema, s_table = _split(payload["source"], default_catalog)
    t_cat, t_schema, t_table = _split(payload["target"], s_cat)
    if t_cat != s_cat:
        raise TrinoError("NOT_SUPPORTED", "clone_table copies within one catalog")
    w = engine.warehouse_or_error(s_cat)
    sort_order = payload.get("sort_order_id", KEEP)
    if sort_order is not KEEP and sort_order is not None and (isinstance(sort_order, bool)
                                                            or not isinstance(sort_order, int)):
        raise TrinoError("INVALID_ARGUMENTS", f"clone_table: sort_order_id must be an integer or null, got {sort_order!r}")
    without = payload.get("summary_without") or []
    if not isinstance(without, list) or not all(isinstance(k, str) for k in without):
        raise TrinoError("INVALID_ARGUMENTS", f"clone_table: summary_without must be a list of keys, got {without!r}")
    src = w.load(s_schema, s_table)
    if src is None:
        raise TrinoError("TABLE_NOT_FOUND", f"Table '{s_cat}.{s_schema}.{s_table}' does not exist")
    with engine.table_lock(t_cat, t_schema, t_table):
        new_root = make_room(w, t_cat, t_schema, t_table, bool(payload.get("replace")))
        md = src.metadata
        old_root = md.location.rstrip("/")
        io = src.io

        def moved(path: str) -> str:
            if path.startswith(old_root + "/"):
                return new_root + path[len(old_root):]
            return f"{new_root}/data/{os.path.basename(path)}"

        manifest_map: dict[str, object] = {}
        linked: set[str] = set()
        new_snapshots = []
        for snap in md.snapshots:
            new_manifests = []
            for m in snap.manifests(io):
                nm = manifest_map.get(m.manifest_path)
                if nm is None:
                    entries = m.fetch_manifest_entry(io, discard_deleted=False)
                    spec = md.specs()[m.partition_spec_id]
                    out = io.new_output(moved(m.manifest_path))
                    with _manifest_writer(m.content, spec, md.schema(), out, m.added_snapshot_id,
                                          md.properties.get("write.avro.compression-codec", "gzip")) as mw:
                        for e in entries:
                            src_df = e.data_file
                            if src_df.file_path not in linked:
                                if os.path.exists(local_path(src_df.file_path)):
                                    _link(local_path(src_df.file_path), local_path(moved(src_df.file_path)))
                                linked.add(src_df.file_path)
                            df = copy.copy(src_df)          # entries are shared (manifest_cache)
                            df._data = list(src_df._data)
                            df[1] = moved(src_df.file_path)
                            if sort_order is not KEEP and src_df.content == DataFileContent.DATA:
                                df[SORT_ORDER_ID] = sort_order
                            mw.add_entry(ManifestEntry.from_args(
                                status=e.status, snapshot_id=e.snapshot_id, sequence_number=e.sequence_number,
                                file_sequence_number=e.file_sequence_number, data_file=df))
                    nm = mw.to_manifest_file()
                    nm.sequence_number = m.sequence_number
                    nm.min_sequence_number = m.min_sequence_number
                    manifest_map[m.manifest_path] = nm
                new_manifests.append(nm)
            ml = moved(snap.manifest_list)
            with write_manifest_list(
                format_version=md.format_version, output_file=io.new_output(ml), snapshot_id=snap.snapshot_id,
                parent_snapshot_id=snap.parent_snapshot_id, sequence_number=snap.sequence_number,
                avro_compression=md.properties.get("write.avro.compression-codec", "gzip"),
            ) as lw:
                lw.add_manifests(new_manifests)
            update = {"manifest_list": ml}
            if without and snap.summary is not None:
                kept = {k: v for k, v in snap.summary.additional_properties.items() if k not in without}
                update["summary"] = type(snap.summary)(operation=snap.summary.operation, **kept)
            new_snapshots.append(snap.model_copy(update=update))
        new_md = md.model_copy(update={
            "location": new_root,
            "table_uuid": uuid.uuid4(),
            "snapshots": new_snapshots,
            "metadata_log": [],
        })
        loc = f"{new_root}/metadata/00000-{uuid.uuid4()}.metadata.json"
        ToOutputFile.table_metadata(new_md, io.new_output(loc))
        w.catalog.register_table((t_schema, t_table), loc)
    return {
        "catalog": t_cat, "schema": t_schema, "table": t_table, "location": new_root, "metadata_location": loc,
        "snapshots": len(new_snapshots), "data_files_linked": len(linked), "manifests": len(manifest_map),
        "seconds": round(time.monotonic() - t0, 3),
    }
