"""Writes Iceberg tables with a backdated history under a controlled clock.

pyiceberg's public commit path stamps snapshots with the wall clock and copies the whole
table metadata many times per commit (so a table with hundreds of snapshots takes minutes).
Scenario tables are therefore built one level lower, from the same parts pyiceberg uses for
a real commit: data files are written by pyiceberg's Parquet writer (with statistics),
manifests and manifest lists by its Avro writers, snapshot summaries by its summary
collector, and the table metadata is the pydantic model pyiceberg reads back. Every snapshot
gets the timestamp the scenario's clock says, sequence numbers increase by one per commit,
the snapshot log, refs and metadata log are kept as Iceberg's Java library keeps them, and
the last metadata versions are written as files. The table is then registered in the
SqlCatalog, after which pyiceberg (and the engine) read it like any other table.
"""

from __future__ import annotations

import itertools
import os
import random
import uuid
from dataclasses import dataclass, field
from typing import Iterable

import pyarrow as pa
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import _dataframe_to_data_files
from pyiceberg.manifest import (
    DataFile,
    ManifestWriterV2,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import TableMetadata, new_table_metadata
from pyiceberg.table.refs import SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import (
    MetadataLogEntry,
    Operation,
    Snapshot,
    SnapshotLogEntry,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

ICEBERG_VERSION = "Apache Iceberg 1.10.1 (commit ccb8bc435062171e64bc8b7e5f56e6aed9c5b934)"


def _install_avro_writer_caches() -> None:
    """pyiceberg rebuilds the Avro writer tree (and the manifest entry schema) for every
    manifest and manifest list it writes; both are pure functions of the schemas, so they
    are memoized here. Thousands of small manifests then cost milliseconds, not seconds."""
    import pyiceberg.avro.file as avro_file
    import pyiceberg.manifest as manifest

    if getattr(avro_file, "_lab_cached", False):
        return
    resolve, construct = avro_file.resolve_writer, avro_file.construct_writer
    writers: dict = {}

    def resolve_writer(record_schema, file_schema):
        key = ("r", repr(record_schema), repr(file_schema))
        w = writers.get(key)
        if w is None:
            w = writers[key] = resolve(record_schema=record_schema, file_schema=file_schema)
        return w

    def construct_writer(file_schema):
        key = ("c", repr(file_schema))
        w = writers.get(key)
        if w is None:
            w = writers[key] = construct(file_schema=file_schema)
        return w

    schemas: dict = {}
    original = manifest.ManifestWriter._with_partition

    def _with_partition(self, format_version):
        key = (format_version, repr(self._spec), repr(self._schema))
        sc = schemas.get(key)
        if sc is None:
            sc = schemas[key] = original(self, format_version)
        return sc

    # pyiceberg writes one Avro block per manifest entry (slow, and a bigger file); buffer
    # the entries and write them as one block when the writer closes
    add_entry, exit_ = manifest.ManifestWriter.add_entry, manifest.ManifestWriter.__exit__

    def buffered_add_entry(self, entry):
        buf = self.__dict__.setdefault("_lab_buffer", [])
        real = self._writer
        self._writer = _BlockSink(buf)
        try:
            add_entry(self, entry)
        finally:
            self._writer = real
        return self

    def flushing_exit(self, exc_type, exc_value, traceback):
        buf = self.__dict__.pop("_lab_buffer", None)
        if exc_type is None and buf:
            self._writer.write_block(buf)
        return exit_(self, exc_type, exc_value, traceback)

    # reading: the file schema parsed from each file's header, and the reader tree, are
    # likewise pure functions of the header's schema text and the requested schema
    header_schemas: dict = {}
    get_schema = avro_file.AvroFileHeader.get_schema

    def cached_get_schema(self):
        text = self.meta.get(avro_file._SCHEMA_KEY)
        if text is None:
            return get_schema(self)
        sc = header_schemas.get(text)
        if sc is None:
            sc = header_schemas[text] = get_schema(self)
        return sc

    resolve_reader = avro_file.resolve_reader
    readers: dict = {}

    def cached_resolve_reader(file_schema, read_schema, read_types=None, read_enums=None):
        key = (repr(file_schema), repr(read_schema), tuple((read_types or {}).items()),
               tuple((read_enums or {}).items()))
        r = readers.get(key)
        if r is None:
            r = readers[key] = resolve_reader(file_schema, read_schema, read_types or {}, read_enums or {})
        return r

    avro_file.AvroFileHeader.get_schema = cached_get_schema
    avro_file.resolve_reader = cached_resolve_reader
    avro_file.resolve_writer = resolve_writer
    avro_file.construct_writer = construct_writer
    manifest.ManifestWriter._with_partition = _with_partition
    manifest.ManifestWriter.add_entry = buffered_add_entry
    manifest.ManifestWriter.__exit__ = flushing_exit
    avro_file._lab_cached = True


_install_avro_writer_caches()
TRINO_VERSION = "480"


# the order Iceberg's Java SnapshotProducer writes summary keys in (Trino's commits set the
# trino_* keys first; the environment keys come last)
SUMMARY_ORDER = [
    "trino_query_id", "trino_user",
    "added-data-files", "deleted-data-files", "added-delete-files", "removed-position-delete-files",
    "removed-delete-files", "added-position-delete-files", "added-equality-delete-files",
    "removed-equality-delete-files", "added-records", "deleted-records", "added-files-size", "removed-files-size",
    "added-position-deletes", "removed-position-deletes", "added-equality-deletes", "removed-equality-deletes",
    "changed-partition-count", "manifests-created", "manifests-kept", "manifests-replaced", "entries-processed",
    "total-records", "total-files-size", "total-data-files", "total-delete-files", "total-position-deletes",
    "total-equality-deletes", "engine-version", "engine-name", "iceberg-version",
]
_RANK = {k: i for i, k in enumerate(SUMMARY_ORDER)}


def order_summary(props: dict[str, str]) -> dict[str, str]:
    """Summary properties in Java's order (unknown keys keep their place before the totals)."""
    known_total = _RANK["total-records"]
    return dict(sorted(props.items(), key=lambda kv: _RANK.get(kv[0], known_total - 0.5)))


def local_path(uri: str) -> str:
    return uri[len("file://"):] if uri.startswith("file://") else uri


def trino_query_id(ts_ms: int, rnd: random.Random) -> str:
    """A query id shaped like Trino's: yyyyMMdd_HHmmss_NNNNN_xxxxx (UTC)."""
    import datetime as dt

    t = dt.datetime.fromtimestamp(ts_ms / 1000, tz=dt.timezone.utc)
    suffix = "".join(rnd.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(5))
    return f"{t:%Y%m%d_%H%M%S}_{rnd.randint(0, 99999):05d}_{suffix}"


class BufferedManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer (entries are written as one Avro block on close, see
    _install_avro_writer_caches)."""


class _BlockSink:
    def __init__(self, buffer: list) -> None:
        self.buffer = buffer

    def write_block(self, objects: list) -> None:
        self.buffer.extend(objects)


class FastDataFileWriter:
    """Writes Parquet data files the way pyiceberg's writer does (Iceberg field ids, the
    table's Parquet properties, statistics from the Parquet footer via pyiceberg), with the
    per-table work done once instead of per file."""

    def __init__(self, metadata: TableMetadata, io: FileIO, sort_order_id: int | None = 0) -> None:
        from pyiceberg.io.pyarrow import (
            _get_parquet_writer_kwargs,
            compute_statistics_plan,
            parquet_path_to_id_mapping,
            schema_to_pyarrow,
        )

        self.metadata = metadata
        self.io = io
        # 0 (unsorted) is what Iceberg's Java writers (Spark, Flink, Trino) record; pyiceberg's
        # own writer records none, which Trino 476 cannot read in $entries
        self.sort_order_id = sort_order_id
        self.schema = metadata.schema()
        self.spec = metadata.spec()
        self.arrow_schema = schema_to_pyarrow(self.schema, include_field_ids=True)
        self.plan = compute_statistics_plan(self.schema, metadata.properties)
        self.mapping = parquet_path_to_id_mapping(self.schema)
        self.kwargs = _get_parquet_writer_kwargs(metadata.properties)
        self.location = metadata.location.rstrip("/")
        self.write_uuid = uuid.uuid4()
        self.counter = itertools.count(0)

    def path_for(self, partition) -> str:
        name = f"{next(self.counter):05d}-0-{self.write_uuid}.parquet"
        if partition is None:
            return f"{self.location}/data/{name}"
        return f"{self.location}/data/{self.spec.partition_to_path(partition, self.schema)}/{name}"

    def write_one(self, values, table: pa.Table, uri: str | None = None) -> DataFile:
        import pyarrow.parquet as pq
        from pyiceberg.io.pyarrow import data_file_statistics_from_parquet_metadata
        from pyiceberg.manifest import DataFileContent, FileFormat
        from pyiceberg.typedef import Record

        partition = Record(*values) if values is not None else None
        uri = uri or self.path_for(partition)
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        table = table.select(self.arrow_schema.names).cast(self.arrow_schema)
        writer = pq.ParquetWriter(path, schema=self.arrow_schema, store_decimal_as_integer=True, **self.kwargs)
        with writer:
            writer.write(table)
        stats = data_file_statistics_from_parquet_metadata(writer.writer.metadata, self.plan, self.mapping)
        df = DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=uri,
            file_format=FileFormat.PARQUET,
            partition=partition if partition is not None else Record(),
            file_size_in_bytes=os.path.getsize(path),
            sort_order_id=self.sort_order_id,
            equality_ids=None,
            key_metadata=None,
            **stats.to_serialized_dict(),
        )
        df.spec_id = self.metadata.default_spec_id
        return df

    def write_many(self, items) -> list[DataFile]:
        """Write many files; large batches go to two worker processes (the Parquet encoding
        and the statistics are CPU-bound)."""
        from pyiceberg.typedef import Record

        items = list(items)
        if len(items) < 8:
            return [self.write_one(v, t) for v, t in items]
        jobs = [(v, t, self.path_for(Record(*v) if v is not None else None)) for v, t in items]
        if len(jobs) >= PROCESS_POOL_MIN and (os.cpu_count() or 1) >= 2:
            import multiprocessing as mp

            global _ACTIVE_WRITER
            _ACTIVE_WRITER = self
            try:
                with mp.get_context("fork").Pool(2) as pool:
                    return pool.map(_write_job, jobs, chunksize=32)
            finally:
                _ACTIVE_WRITER = None
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=2) as ex:
            return list(ex.map(lambda j: self.write_one(*j), jobs))


PROCESS_POOL_MIN = 256
_ACTIVE_WRITER: "FastDataFileWriter | None" = None


def _write_job(job):
    values, table, uri = job
    return _ACTIVE_WRITER.write_one(values, table, uri)


@dataclass
class _PartitionKey:
    """What pyiceberg's writer needs of a partition key: the record and its path."""

    partition: object
    path: str

    def to_path(self) -> str:
        return self.path


@dataclass
class _LiveEntry:
    data_file: DataFile
    snapshot_id: int
    sequence_number: int
    file_sequence_number: int


@dataclass
class CommitRecord:
    snapshot_id: int
    timestamp_ms: int
    operation: str
    summary: dict[str, str]


@dataclass
class HistoryWriter:
    io: FileIO
    schema: Schema
    spec: PartitionSpec
    location: str
    properties: dict[str, str]
    created_ms: int
    rnd: random.Random
    format_version: int = 2
    # the data files' sort_order_id (see FastDataFileWriter); None as pyiceberg writes
    sort_order_id: int | None = 0
    # how the writer commits: "java" (Iceberg's Java library, as Trino and Spark: merging
    # appends unless `commit.manifest-merge.enabled` is false, summary keys in Java's order)
    # or "pyiceberg" (pyiceberg's own: fast appends, its `commit.manifest-merge.enabled`
    # default being false, and its summaries as its collector builds them)
    committer: str = "java"
    metadata: TableMetadata = field(init=False)
    commits: list[CommitRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        props = dict(self.properties)
        props["format-version"] = str(self.format_version)
        md = new_table_metadata(self.schema, self.spec, UNSORTED_SORT_ORDER, self.location, props)
        self.metadata = md.model_copy(update={"last_updated_ms": self.created_ms})
        # schema/spec with the ids pyiceberg assigned
        self.schema = self.metadata.schema()
        self.spec = self.metadata.spec()
        self._versions: list[tuple[str, TableMetadata]] = []
        self._add_version()
        # live entries per manifest path, and the manifests of the current snapshot
        self._manifest_live: dict[str, list[_LiveEntry]] = {}
        self._manifests: list[ManifestFile] = []
        self._file_to_manifest: dict[str, str] = {}
        self._write_counter = itertools.count(0)
        self._fast: FastDataFileWriter | None = None

    # -- metadata versions -------------------------------------------------------------

    def _metadata_path(self, version: int) -> str:
        return f"{self.location}/metadata/{version:05d}-{uuid.UUID(int=self.rnd.getrandbits(128))}.metadata.json"

    def _add_version(self) -> None:
        self._versions.append((self._metadata_path(len(self._versions)), self.metadata))

    # -- data ------------------------------------------------------------------------------

    def write_files(self, batches: Iterable[pa.Table], mtime_ms: int) -> list[DataFile]:
        """Write each arrow table as one file per partition it touches (pyiceberg splits them)."""
        out: list[DataFile] = []
        write_uuid = uuid.UUID(int=self.rnd.getrandbits(128))
        for batch in batches:
            if batch.num_rows == 0:
                continue
            out.extend(_dataframe_to_data_files(self.metadata, batch, self.io, write_uuid, self._write_counter))
        self._touch(out, mtime_ms)
        return out

    def write_partitioned(self, items: Iterable[tuple[tuple, pa.Table]], mtime_ms: int) -> list[DataFile]:
        """Write one file per (partition, table) item; partition values are given in Iceberg's
        internal representation (identity value, days/months since epoch, ...)."""
        if self._fast is None:
            self._fast = FastDataFileWriter(self.metadata, self.io, self.sort_order_id)
        out = self._fast.write_many(
            ((values if self.spec.fields else None), table) for values, table in items if table.num_rows
        )
        self._touch(out, mtime_ms)
        return out

    @staticmethod
    def _touch(files: list[DataFile], mtime_ms: int) -> None:
        # the file system's modification time is what Trino shows as "$file_modified_time"
        for df in files:
            os.utime(local_path(df.file_path), ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    # -- commits ----------------------------------------------------------------------------

    def _new_snapshot_id(self) -> int:
        while True:
            sid = self.rnd.getrandbits(63)
            if sid and self.metadata.snapshot_by_id(sid) is None:
                return sid

    def _summary(self, op: Operation, added: list[DataFile], removed: list[DataFile], extra: dict[str, str]) -> Summary:
        ssc = SnapshotSummaryCollector()
        for f in added:
            ssc.add_file(f, schema=self.schema, partition_spec=self.spec)
        for f in removed:
            ssc.remove_file(f, schema=self.schema, partition_spec=self.spec)
        cur = self.metadata.current_snapshot()
        previous = cur.summary if cur is not None else None
        base_op = Operation.OVERWRITE if op == Operation.REPLACE else op
        s = update_snapshot_summaries(Summary(operation=base_op, **ssc.build()), previous)
        if self.committer == "pyiceberg":
            return Summary(operation=op, **{**s.additional_properties, **extra})
        return Summary(operation=op, **order_summary({**extra, **s.additional_properties}))

    def _commit(
        self,
        op: Operation,
        ts_ms: int,
        added: list[DataFile],
        removed: list[DataFile],
        extra: dict[str, str],
        added_data_sequence_number: int | None = None,
    ) -> Snapshot:
        md = self.metadata
        sid = self._new_snapshot_id()
        parent = md.current_snapshot()
        seq = md.last_sequence_number + 1
        commit_uuid = uuid.UUID(int=self.rnd.getrandbits(128))
        counter = itertools.count(0)
        compression = md.properties.get("write.avro.compression-codec", "gzip")

        def new_manifest():
            path = f"{self.location}/metadata/{commit_uuid}-m{next(counter)}.avro"
            return BufferedManifestWriter(self.spec, self.schema, self.io.new_output(path), sid, compression)

        new_manifests: list[ManifestFile] = []
        new_live: dict[str, list[_LiveEntry]] = {}
        if added:
            with new_manifest() as w:
                for f in added:
                    w.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED,
                            snapshot_id=sid,
                            sequence_number=added_data_sequence_number,
                            file_sequence_number=None,
                            data_file=f,
                        )
                    )
            mf = w.to_manifest_file()
            new_manifests.append(mf)
            new_live[mf.manifest_path] = [
                _LiveEntry(f, sid, added_data_sequence_number if added_data_sequence_number is not None else seq, seq)
                for f in added
            ]

        removed_paths = {f.file_path for f in removed}
        kept: list[ManifestFile] = []
        touched = {self._file_to_manifest[p] for p in removed_paths}
        for mf in self._manifests:
            if mf.manifest_path not in touched:
                kept.append(mf)
                continue
            live = self._manifest_live[mf.manifest_path]
            survivors = [e for e in live if e.data_file.file_path not in removed_paths]
            gone = [e for e in live if e.data_file.file_path in removed_paths]
            with new_manifest() as w:
                for e in gone:
                    w.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.DELETED,
                            snapshot_id=sid,
                            sequence_number=e.sequence_number,
                            file_sequence_number=e.file_sequence_number,
                            data_file=e.data_file,
                        )
                    )
                for e in survivors:
                    w.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.EXISTING,
                            snapshot_id=e.snapshot_id,
                            sequence_number=e.sequence_number,
                            file_sequence_number=e.file_sequence_number,
                            data_file=e.data_file,
                        )
                    )
            nmf = w.to_manifest_file()
            new_manifests.append(nmf)
            new_live[nmf.manifest_path] = survivors

        manifests = new_manifests + kept
        merged_min = int(md.properties.get("commit.manifest.min-count-to-merge", "100"))
        merge_default = "false" if self.committer == "pyiceberg" else "true"
        merge_on = md.properties.get("commit.manifest-merge.enabled", merge_default) == "true"
        if op == Operation.APPEND and merge_on and len(manifests) >= merged_min:
            # what Iceberg's MergeAppend does once enough small manifests pile up: one manifest
            # with this commit's files ADDED and every other live file EXISTING
            all_live = [e for m in manifests for e in (new_live.get(m.manifest_path) or self._manifest_live[m.manifest_path])]
            with new_manifest() as w:
                for e in all_live:
                    mine = e.snapshot_id == sid
                    w.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED if mine else ManifestEntryStatus.EXISTING,
                            snapshot_id=e.snapshot_id,
                            sequence_number=None if mine else e.sequence_number,
                            file_sequence_number=None if mine else e.file_sequence_number,
                            data_file=e.data_file,
                        )
                    )
            merged = w.to_manifest_file()
            manifests, kept = [merged], []
            new_live = {merged.manifest_path: all_live}
        summary = self._summary(op, added, removed, extra)
        ml_path = f"{self.location}/metadata/snap-{sid}-1-{commit_uuid}.avro"
        with write_manifest_list(
            format_version=self.format_version,
            output_file=self.io.new_output(ml_path),
            snapshot_id=sid,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=seq,
            avro_compression=compression,
        ) as lw:
            lw.add_manifests(manifests)

        snapshot = Snapshot(
            snapshot_id=sid,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            sequence_number=seq,
            timestamp_ms=ts_ms,
            manifest_list=ml_path,
            summary=summary,
            schema_id=md.current_schema_id,
        )
        prev_location, prev_md = self._versions[-1]
        max_log = int(md.properties.get("write.metadata.previous-versions-max", "100"))
        metadata_log = list(md.metadata_log) + [
            MetadataLogEntry(metadata_file=prev_location, timestamp_ms=prev_md.last_updated_ms)
        ]
        metadata_log = metadata_log[-max(1, max_log):]
        self.metadata = md.model_copy(
            update={
                "snapshots": list(md.snapshots) + [snapshot],
                "snapshot_log": list(md.snapshot_log) + [SnapshotLogEntry(snapshot_id=sid, timestamp_ms=ts_ms)],
                "metadata_log": metadata_log,
                "current_snapshot_id": sid,
                "refs": {**md.refs, "main": SnapshotRef(snapshot_id=sid, snapshot_ref_type=SnapshotRefType.BRANCH)},
                "last_sequence_number": seq,
                "last_updated_ms": ts_ms,
            }
        )
        self._add_version()

        # bookkeeping of live files: manifests without live entries drop out of later snapshots
        for mf in kept:
            new_live[mf.manifest_path] = self._manifest_live[mf.manifest_path]
        self._manifest_live = {p: v for p, v in new_live.items() if v}
        self._manifests = [m for m in manifests if m.manifest_path in self._manifest_live]
        self._file_to_manifest = {
            e.data_file.file_path: p for p, entries in self._manifest_live.items() for e in entries
        }
        self.commits.append(CommitRecord(sid, ts_ms, op.value, dict(summary.additional_properties)))
        return snapshot

    def append(self, files: list[DataFile], ts_ms: int, extra: dict[str, str]) -> Snapshot:
        return self._commit(Operation.APPEND, ts_ms, files, [], extra)

    def replace(self, removed: list[DataFile], added: list[DataFile], ts_ms: int, extra: dict[str, str]) -> Snapshot:
        # Trino's optimize keeps the data sequence number of the snapshot it started from
        start = self.metadata.current_snapshot()
        return self._commit(
            Operation.REPLACE, ts_ms, added, removed, extra,
            added_data_sequence_number=start.sequence_number if start else None,
        )

    # -- state -------------------------------------------------------------------------------

    def live_files(self) -> list[DataFile]:
        return [e.data_file for entries in self._manifest_live.values() for e in entries]

    def live_entries(self) -> list[tuple[DataFile, int]]:
        """Every live data file with the commit time of the snapshot that added it."""
        at = {c.snapshot_id: c.timestamp_ms for c in self.commits}
        return [(e.data_file, at[e.snapshot_id]) for entries in self._manifest_live.values() for e in entries]

    def live_by_partition(self) -> dict[tuple, list[DataFile]]:
        out: dict[tuple, list[DataFile]] = {}
        for f in self.live_files():
            out.setdefault(tuple(f.partition), []).append(f)
        return out

    def partition_path(self, f: DataFile) -> str:
        return self.spec.partition_to_path(f.partition, self.schema)

    def finish(self, keep_versions: int | None = None) -> str:
        """Write the metadata files (the current one and those the metadata log names)."""
        keep = len(self.metadata.metadata_log) + 1 if keep_versions is None else keep_versions
        for path, md in self._versions[-keep:]:
            ToOutputFile.table_metadata(md, self.io.new_output(path), overwrite=True)
        return self._versions[-1][0]
