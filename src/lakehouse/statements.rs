//! The text of floe's per-table statements and how their rows become the domain model:
//! pure functions (no IO), so each statement can be read, tested and counted on its own.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use super::model::{SnapshotInfo, SnapshotOperation, TableRef, TableStats};
use super::plan::{PartitionField, PredicateError, TableLayout, files_partition_predicate};
use super::queries::Layout;
use super::scan::ScanParams;
use crate::sql::{quote_ident, quote_string};
use crate::trino::{NoColumn, Row, Value};

/// Which optional metadata tables the server has (each appeared in a known release).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaTables {
    /// `$entries` (469+): live files with the snapshot that added them.
    pub entries: bool,
    /// `$metadata_log_entries` (444+).
    pub metadata_log: bool,
    /// Without `$entries`: each file dated by its modification time, the data table's
    /// hidden `"$file_modified_time"` joined on `"$path"` (a split per data file: the
    /// per-file read, only where the age can change a verdict or the operator looks).
    pub file_times: bool,
}

impl MetaTables {
    /// Every metadata table floe can use.
    pub const ALL: MetaTables = MetaTables {
        entries: true,
        metadata_log: true,
        file_times: false,
    };
}

/// The modification time of each data file of `t` with rows (`path`, `modified`): the
/// data table's hidden columns, one split per file and no data column read.
fn file_times_sql(t: &TableRef) -> String {
    format!(
        "SELECT \"$path\" AS path, min(\"$file_modified_time\") AS modified FROM {} GROUP BY 1",
        t.sql()
    )
}

/// `props`-free head of the per-table statements: the table's target file size, from one
/// read of `$properties`.
fn cfg_cte(t: &TableRef, h: &ScanParams) -> String {
    format!(
        "cfg AS (\n  SELECT COALESCE(TRY_CAST(p.target_prop AS bigint), {default}) AS target,\n         TRY_CAST(p.target_prop AS bigint) IS NOT NULL AS target_from_property\n  FROM (SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop\n        FROM {props}) p\n)",
        props = t.meta("properties"),
        default = h.target_file_size,
    )
}

/// The partition of a file row read from `$files` (alias `f`) or `$entries` (`e.data_file`).
fn part_expr(layout: Layout, file: &str) -> String {
    match layout {
        Layout::PartitionColumn => format!("{file}.partition"),
        Layout::Unpartitioned => "CAST(NULL AS varchar)".into(),
        Layout::Directory => format!("regexp_replace({file}.file_path, '/[^/]*$', '')"),
    }
}

/// The partition spec of a file row (`spec_id`, which `$files` and `$entries` have from the
/// release that gave them `partition`).
fn spec_expr(layout: Layout, file: &str) -> String {
    match layout {
        Layout::PartitionColumn => format!("{file}.spec_id"),
        Layout::Unpartitioned | Layout::Directory => "CAST(NULL AS integer)".into(),
    }
}

/// The live files and the snapshots of a table as one stream (`kind` 0: a file, 1: a
/// snapshot), each metadata table read once, joined with the target (`cfg`) and timed:
/// `written_at` is the commit time of the snapshot that added the file (with `$entries`;
/// a file whose snapshot expired is as old as the oldest snapshot left), else with
/// [`MetaTables::file_times`] the file's modification time, `last_compaction`
/// the newest `replace` that rewrote data files. `outer` keeps one row for a table with
/// neither files nor snapshots (its target still comes back).
fn timed_ctes(
    t: &TableRef,
    h: &ScanParams,
    layout: Layout,
    meta: MetaTables,
    outer: bool,
) -> String {
    let null_ts = "CAST(NULL AS timestamp(3) with time zone)";
    let no_trend = "CAST(NULL AS bigint) AS trend_rank, CAST(NULL AS bigint) AS next_files";
    let dated = !meta.entries && meta.file_times;
    let files = if meta.entries {
        format!(
            "SELECT 0 AS kind, e.snapshot_id, e.data_file.content AS content, e.data_file.file_size_in_bytes AS size,\n         e.data_file.record_count AS records, {part} AS part, {spec} AS spec,\n         {null_ts} AS committed_at, CAST(NULL AS varchar) AS operation,\n         CAST(NULL AS bigint) AS total_files, CAST(NULL AS bigint) AS deleted_files, {no_trend},\n         {null_ts} AS modified\n  FROM {entries} e WHERE e.status <> 2",
            part = part_expr(layout, "e.data_file"),
            spec = spec_expr(layout, "e.data_file"),
            entries = t.meta("entries"),
        )
    } else {
        format!(
            "SELECT 0 AS kind, CAST(NULL AS bigint) AS snapshot_id, f.content, f.file_size_in_bytes AS size,\n         f.record_count AS records, {part} AS part, {spec} AS spec,\n         {null_ts} AS committed_at, CAST(NULL AS varchar) AS operation,\n         CAST(NULL AS bigint) AS total_files, CAST(NULL AS bigint) AS deleted_files, {no_trend},\n         {modified} AS modified\n  FROM {files} f{join}",
            part = part_expr(layout, "f"),
            spec = spec_expr(layout, "f"),
            files = t.meta("files"),
            modified = if dated { "m.modified" } else { null_ts },
            join = if dated {
                format!(
                    " LEFT JOIN ({}) m ON m.path = f.file_path",
                    file_times_sql(t)
                )
            } else {
                String::new()
            },
        )
    };
    // A file whose snapshot expired is dated by the oldest snapshot left: a lower bound,
    // said by `written_known` being false.
    let (written, known) = if meta.entries {
        (
            "COALESCE(max(x.committed_at) OVER (PARTITION BY x.snapshot_id), min(x.committed_at) OVER ())"
                .to_string(),
            "max(x.committed_at) OVER (PARTITION BY x.snapshot_id) IS NOT NULL",
        )
    } else if dated {
        // Its modification time: written before its commit, never dated by a snapshot.
        ("x.modified".to_string(), "true")
    } else {
        (null_ts.to_string(), "true")
    };
    // The stats statement ranks the snapshots that record a total, newest first, and pairs
    // each with the next one's total: the newest `trend_limit` travel one by one, the older
    // ones as one summary (a million snapshots stay one small row). Only the snapshots are
    // sorted for it, in their own branch of the stream.
    let total = "TRY_CAST(element_at(s.summary, 'total-data-files') AS bigint)";
    let snapshot_trend = if outer {
        format!(
            "CASE WHEN {total} IS NOT NULL THEN row_number() OVER (PARTITION BY {total} IS NULL ORDER BY s.committed_at DESC, s.snapshot_id DESC) END AS trend_rank,\n         lead({total}) OVER (PARTITION BY {total} IS NULL ORDER BY s.committed_at, s.snapshot_id) AS next_files"
        )
    } else {
        no_trend.to_string()
    };
    let trend = if outer {
        " x.trend_rank, x.next_files,"
    } else {
        ""
    };
    let join = if outer {
        "cfg LEFT JOIN stream x ON true"
    } else {
        "cfg CROSS JOIN stream x"
    };
    format!(
        "{cfg},\n\
         stream AS (\n  {files}\n  UNION ALL\n  SELECT 1 AS kind, s.snapshot_id, NULL, NULL, NULL, NULL, NULL, s.committed_at, s.operation,\n         {total},\n         TRY_CAST(element_at(s.summary, 'deleted-data-files') AS bigint),\n         {snapshot_trend},\n         NULL\n  FROM {snapshots} s\n),\n\
         timed AS (\n  SELECT x.kind, x.content, x.size, x.records, x.part, x.spec, x.committed_at, x.operation, x.total_files,\n         cfg.target, cfg.target_from_property,\n         x.kind = 0 AND x.content = 0 AND x.size < cfg.target * {ratio} AS small,\n         x.kind = 0 AND x.content = 0 AND x.size > cfg.target * {large} AS large,\n         {written} AS written_at, {known} AS written_known,{trend}\n         max(CASE WHEN x.operation = 'replace' AND x.deleted_files > 0 THEN x.committed_at END) OVER () AS last_compaction\n  FROM {join}\n)",
        cfg = cfg_cte(t, h),
        snapshots = t.meta("snapshots"),
        ratio = h.small_file_ratio,
        large = h.large_file_ratio,
    )
}

/// Per-partition aggregates of the file rows of `timed` (grouped by `kind, part`).
const FILE_AGGREGATES: &str = "count_if(kind = 0 AND content = 0) AS files,\n         count_if(small) AS small_files,\n         count_if(large) AS large,\n         COALESCE(sum(CASE WHEN kind = 0 AND content = 0 THEN size END), 0) AS bytes,\n         COALESCE(sum(CASE WHEN kind = 0 AND content = 0 THEN records END), 0) AS records,\n         count_if(kind = 0 AND content = 1) AS position_delete_files,\n         count_if(kind = 0 AND content = 2) AS equality_delete_files,\n         COALESCE(sum(CASE WHEN kind = 0 AND content <> 0 THEN size END), 0) AS delete_bytes,\n         COALESCE(sum(CASE WHEN kind = 0 AND content = 1 THEN records END), 0) AS position_deletes,\n         COALESCE(sum(CASE WHEN kind = 0 AND content = 2 THEN records END), 0) AS equality_deletes,\n         min(CASE WHEN small THEN written_at END) AS oldest_small,\n         COALESCE(bool_or(small AND NOT written_known), false) AS oldest_small_lower";

/// One statement with every health fact of a table (see [`TableStats`]). Each metadata
/// table appears once and every CTE is referenced once, so Trino (which inlines `WITH`)
/// scans each once: files and snapshots travel as one stream, aggregated per partition
/// once; the table's totals aggregate that aggregate.
pub fn stats_sql(t: &TableRef, h: &ScanParams, layout: Layout, meta: MetaTables) -> String {
    let min = h.min_small_files;
    // A partition is critical when it holds `critical_partition_small_files` small files
    // more than its bytes need: files − ⌈bytes / target⌉ ≥ n, i.e. bytes ≤ (files − n) × target.
    let crit = h.critical_partition_small_files.max(min);
    let partition_counts = if layout == Layout::Unpartitioned {
        "0 AS partitions, 0 AS small_file_partitions, 0 AS critical_partitions".to_string()
    } else {
        format!(
            "count_if(kind = 0 AND files > 0) AS partitions,\n         count_if(kind = 0 AND small_files >= {min}) AS small_file_partitions,\n         count_if(kind = 0 AND small_files >= {crit} AND bytes <= (files - {crit}) * target) AS critical_partitions"
        )
    };
    let (meta_cte, meta_col, meta_join) = if meta.metadata_log {
        (
            format!(
                ",\nmeta AS (\n  SELECT count(*) AS metadata_files, max(\"timestamp\") AS metadata_at FROM {}\n)",
                t.meta("metadata_log_entries")
            ),
            "meta.metadata_files, to_unixtime(meta.metadata_at) AS metadata_at",
            " CROSS JOIN meta",
        )
    } else {
        (
            String::new(),
            "CAST(NULL AS bigint) AS metadata_files, CAST(NULL AS double) AS metadata_at",
            "",
        )
    };
    format!(
        "WITH\n{timed},\n\
         parts AS (\n  SELECT kind, part, max(target) AS target, bool_or(target_from_property) AS target_from_property,\n         {FILE_AGGREGATES},\n         count_if(kind = 1) AS snapshots, min(committed_at) AS oldest_snapshot, max(committed_at) AS newest_snapshot,\n         max(CASE WHEN kind = 1 AND operation <> 'replace' THEN committed_at END) AS last_write,\n         max(last_compaction) AS last_compaction,\n         count_if(kind = 1 AND operation <> 'replace' AND committed_at > last_compaction) AS writes_since_compaction,\n         max(CASE WHEN kind = 1 AND committed_at = last_compaction THEN total_files END) AS files_after_compaction,\n         array_agg(to_unixtime(committed_at) ORDER BY committed_at) FILTER (WHERE trend_rank <= {limit}) AS trend_at,\n         array_agg(total_files ORDER BY committed_at) FILTER (WHERE trend_rank <= {limit}) AS trend_files,\n         count_if(trend_rank > {limit}) AS tail_snapshots, max(CASE WHEN trend_rank > {limit} THEN committed_at END) AS tail_newest,\n         max(CASE WHEN trend_rank = {limit} + 1 THEN total_files END) AS tail_last_files,\n         COALESCE(sum(CASE WHEN trend_rank > {limit} + 1 THEN greatest(total_files - next_files, 0) END), 0) AS tail_drops\n  FROM timed GROUP BY kind, part\n),\n\
         tbl AS (\n  SELECT max(target) AS target, bool_or(target_from_property) AS target_from_property,\n         COALESCE(sum(files), 0) AS data_files, COALESCE(sum(small_files), 0) AS small_files, COALESCE(sum(large), 0) AS large_files,\n         COALESCE(sum(bytes), 0) AS total_bytes, COALESCE(sum(records), 0) AS records,\n         COALESCE(sum(position_delete_files), 0) AS position_delete_files, COALESCE(sum(equality_delete_files), 0) AS equality_delete_files,\n         COALESCE(sum(delete_bytes), 0) AS delete_bytes,\n         COALESCE(sum(position_deletes), 0) AS position_deletes, COALESCE(sum(equality_deletes), 0) AS equality_deletes,\n         min(oldest_small) AS oldest_small, COALESCE(bool_or(oldest_small_lower), false) AS oldest_small_lower,\n         max(CASE WHEN kind = 0 THEN small_files END) AS max_partition_small_files,\n         {partition_counts},\n         COALESCE(sum(snapshots), 0) AS snapshots, min(oldest_snapshot) AS oldest_snapshot, max(newest_snapshot) AS newest_snapshot,\n         max(last_write) AS last_write, max(last_compaction) AS last_compaction,\n         COALESCE(sum(writes_since_compaction), 0) AS writes_since_compaction, max(files_after_compaction) AS files_after_compaction,\n         arbitrary(trend_at) AS trend_at, arbitrary(trend_files) AS trend_files,\n         COALESCE(sum(tail_snapshots), 0) AS tail_snapshots, max(tail_newest) AS tail_newest,\n         max(tail_last_files) AS tail_last_files, COALESCE(sum(tail_drops), 0) AS tail_drops\n  FROM parts\n),\n\
         man AS (\n  SELECT count(*) AS manifests, count_if(length < {small_manifest}) AS small_manifests, COALESCE(sum(length), 0) AS manifest_bytes\n  FROM {manifests}\n){meta_cte}\n\
         SELECT tbl.target, tbl.target_from_property,\n       tbl.data_files, tbl.small_files, tbl.large_files, tbl.total_bytes, tbl.records,\n       tbl.position_delete_files + tbl.equality_delete_files AS delete_files,\n       tbl.position_delete_files, tbl.equality_delete_files, tbl.delete_bytes,\n       tbl.position_deletes, tbl.equality_deletes,\n       to_unixtime(tbl.oldest_small) AS oldest_small_file_at, tbl.oldest_small_lower,\n       tbl.partitions, tbl.small_file_partitions, tbl.critical_partitions, tbl.max_partition_small_files,\n       tbl.snapshots, to_unixtime(tbl.oldest_snapshot) AS oldest_snapshot,\n       to_unixtime(tbl.newest_snapshot) AS newest_snapshot, to_unixtime(tbl.last_write) AS last_write,\n       to_unixtime(tbl.last_compaction) AS last_compaction,\n       tbl.writes_since_compaction, tbl.files_after_compaction,\n       tbl.trend_at, tbl.trend_files, tbl.tail_snapshots, to_unixtime(tbl.tail_newest) AS tail_newest,\n       tbl.tail_last_files, tbl.tail_drops,\n       man.manifests, man.small_manifests, man.manifest_bytes, {meta_col}\n\
         FROM tbl CROSS JOIN man{meta_join}",
        timed = timed_ctes(t, h, layout, meta, true),
        small_manifest = h.small_manifest_size,
        manifests = t.meta("manifests"),
        limit = h.trend_limit.max(1),
    )
}

/// The file facts of one table, for a table whose snapshots a survey has read
/// ([`crate::lakehouse::summary::survey_sql`]), at the target file size the survey read
/// (`target`, bytes: its `write.target-file-size-bytes`, else the default): its live files
/// (`$entries`, else `$files`) aggregated per partition and then over the table, each
/// metadata table read once and the lines as literals (no `$properties` here: the survey
/// read it, and a scalar read of it cost each file read a fifth of its planning on Trino
/// 476). With `$entries` a file is dated by the snapshot that added it (`$snapshots`,
/// joined on its id: no window); a file whose snapshot expired is undated, said by
/// `oldest_small_lower`, and the survey's oldest snapshot bounds it.
pub fn files_sql(
    t: &TableRef,
    h: &ScanParams,
    layout: Layout,
    meta: MetaTables,
    target: u64,
    dating: Dating,
) -> String {
    let min = h.min_small_files;
    let crit = h.critical_partition_small_files.max(min);
    let target = target.max(1);
    // A file is small below the line and large above it (the health rules' ratios): the
    // comparison with the exact product, as integers.
    let small = h.small_line(target);
    let large = (target as f64 * h.large_file_ratio).floor() as u64;
    let null_ts = "CAST(NULL AS timestamp(3) with time zone)";
    let dated = !meta.entries && meta.file_times;
    let by_id = meta.entries && dating == Dating::SnapshotIds;
    let (files, known) = if by_id {
        (
            format!(
                "SELECT e.data_file.content AS content, e.data_file.file_size_in_bytes AS size, e.data_file.record_count AS records,\n         {part} AS part, {null_ts} AS written_at, e.snapshot_id AS sid\n  FROM {entries} e WHERE e.status <> 2",
                part = part_expr(layout, "e.data_file"),
                entries = t.meta("entries"),
            ),
            "true",
        )
    } else if meta.entries {
        (
            format!(
                "SELECT e.data_file.content AS content, e.data_file.file_size_in_bytes AS size, e.data_file.record_count AS records,\n         {part} AS part, s.committed_at AS written_at, CAST(NULL AS bigint) AS sid\n  FROM {entries} e LEFT JOIN {snapshots} s ON s.snapshot_id = e.snapshot_id WHERE e.status <> 2",
                part = part_expr(layout, "e.data_file"),
                entries = t.meta("entries"),
                snapshots = t.meta("snapshots"),
            ),
            "f.written_at IS NOT NULL",
        )
    } else {
        (
            format!(
                "SELECT f.content, f.file_size_in_bytes AS size, f.record_count AS records, {part} AS part, {modified} AS written_at, CAST(NULL AS bigint) AS sid\n  FROM {files} f{join}",
                part = part_expr(layout, "f"),
                files = t.meta("files"),
                modified = if dated { "m.modified" } else { null_ts },
                join = if dated {
                    format!(
                        " LEFT JOIN ({}) m ON m.path = f.file_path",
                        file_times_sql(t)
                    )
                } else {
                    String::new()
                },
            ),
            "true",
        )
    };
    let partition_counts = if layout == Layout::Unpartitioned {
        "0 AS partitions, 0 AS small_file_partitions, 0 AS critical_partitions".to_string()
    } else {
        format!(
            "count_if(files > 0) AS partitions,\n       count_if(small_files >= {min}) AS small_file_partitions,\n       count_if(small_files >= {crit} AND bytes <= (files - {crit}) * BIGINT '{target}') AS critical_partitions"
        )
    };
    // The snapshots that added the small files, by id (the survey's list dates them).
    let (sids, small_sids) = if by_id {
        (
            ",\n         array_agg(DISTINCT sid) FILTER (WHERE small) AS sids",
            ",\n       flatten(array_agg(sids) FILTER (WHERE sids IS NOT NULL)) AS small_sids",
        )
    } else {
        ("", "")
    };
    // Nested subqueries, no `WITH`: each is read once, and the statement can be one
    // branch of a `UNION ALL` over several tables ([`files_batch_sql`]).
    format!(
        "SELECT COALESCE(sum(files), 0) AS data_files, COALESCE(sum(small_files), 0) AS small_files, COALESCE(sum(large), 0) AS large_files,\n       COALESCE(sum(bytes), 0) AS total_bytes, COALESCE(sum(records), 0) AS records,\n       COALESCE(sum(position_delete_files), 0) AS position_delete_files, COALESCE(sum(equality_delete_files), 0) AS equality_delete_files,\n       COALESCE(sum(delete_bytes), 0) AS delete_bytes,\n       COALESCE(sum(position_deletes), 0) AS position_deletes, COALESCE(sum(equality_deletes), 0) AS equality_deletes,\n       to_unixtime(min(oldest_small)) AS oldest_small_file_at, COALESCE(bool_or(oldest_small_lower), false) AS oldest_small_lower,\n       max(small_files) AS max_partition_small_files,\n       {partition_counts}{small_sids}\n\
         FROM (\n  SELECT part,\n         {FILE_AGGREGATES}{sids}\n  FROM (\n  SELECT 0 AS kind, f.content, f.size, f.records, f.part, f.sid,\n         f.content = 0 AND f.size < {small} AS small,\n         f.content = 0 AND f.size > {large} AS large,\n         f.written_at, {known} AS written_known\n  FROM (\n  {files}\n  ) f\n  ) timed GROUP BY part\n) parts",
    )
}

/// Per-partition counts of one table, with how long its small files have waited (with
/// `$entries`). One read of each metadata table.
pub fn partitions_sql(t: &TableRef, h: &ScanParams, layout: Layout, meta: MetaTables) -> String {
    format!(
        "WITH\n{timed}\n\
         SELECT part, spec, max(target) AS target,\n         {FILE_AGGREGATES},\n         count_if(kind = 0 AND content <> 0) AS delete_files,\n         min(CASE WHEN kind = 0 AND content = 0 THEN size END) AS min_size,\n         max(CASE WHEN kind = 0 AND content = 0 THEN size END) AS max_size\n\
         FROM timed\n\
         GROUP BY kind, spec, part\n\
         HAVING kind = 0",
        timed = timed_ctes(t, h, layout, meta, false),
    )
}

/// How long the small data files of `t` have waited, where `$entries` cannot say: the
/// oldest modification time among its small data files (`oldest_small`, NULL with none),
/// from `$files` and the data table's hidden columns ([`file_times_sql`]).
pub fn small_file_ages_sql(t: &TableRef, h: &ScanParams) -> String {
    format!(
        "WITH\n{cfg}\n\
         SELECT to_unixtime(min(m.modified)) AS oldest_small\n\
         FROM {files} f CROSS JOIN cfg JOIN ({times}) m ON m.path = f.file_path\n\
         WHERE f.content = 0 AND f.file_size_in_bytes < cfg.target * {ratio}",
        cfg = cfg_cte(t, h),
        files = t.meta("files"),
        times = file_times_sql(t),
        ratio = h.small_file_ratio,
    )
}

/// The listing of a catalog's Iceberg tables: `<catalog>.system.iceberg_tables` (475+)
/// when `iceberg_tables`, else `information_schema.tables` (base tables, without
/// `information_schema` itself); limited to `schemas` unless empty.
pub fn discover_sql(catalog: &str, schemas: &[String], iceberg_tables: bool) -> String {
    let cat = quote_ident(catalog);
    let filter = if schemas.is_empty() {
        String::new()
    } else {
        format!(
            " WHERE table_schema IN ({})",
            schemas
                .iter()
                .map(|s| quote_string(s))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    if iceberg_tables {
        return format!("SELECT table_schema, table_name FROM {cat}.system.iceberg_tables{filter}");
    }
    let where_ = if filter.is_empty() {
        " WHERE table_type = 'BASE TABLE' AND table_schema <> 'information_schema'".to_string()
    } else {
        format!("{filter} AND table_type = 'BASE TABLE'")
    };
    format!("SELECT table_schema, table_name FROM {cat}.information_schema.tables{where_}")
}

/// The newest `limit` snapshots of a table, newest first (a table with a million snapshots
/// is not read whole: the verdict counts them in the health statement).
pub fn snapshots_sql(t: &TableRef, limit: usize) -> String {
    format!(
        "SELECT committed_at, snapshot_id, parent_id, operation, summary FROM {} ORDER BY committed_at DESC LIMIT {limit}",
        t.meta("snapshots")
    )
}

/// A table's columns and their types (`Column`, `Type`, …).
pub fn describe_sql(t: &TableRef) -> String {
    format!("DESCRIBE {}", t.sql())
}

/// A table's DDL, whose `WITH (…)` clause declares its partitioning.
pub fn show_create_sql(t: &TableRef) -> String {
    format!("SHOW CREATE TABLE {}", t.sql())
}

/// A table's properties, `key` and `value`.
pub fn properties_sql(t: &TableRef) -> String {
    format!("SELECT key, value FROM {}", t.meta("properties"))
}

/// Rows that do not hold what their statement selects: a column missing or of another
/// type, a row of a batched statement without its table's index or with one outside the
/// batch, a table of the batch without its row.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RowsError {
    #[error(transparent)]
    NoColumn(#[from] NoColumn),
    #[error("{column} is not a {expected}")]
    NotA {
        column: &'static str,
        expected: &'static str,
    },
    /// `what`: the statement (`probe`, `survey`, …).
    #[error("a {what} row has no index")]
    NoIndex { what: &'static str },
    #[error("a {what} row has index {index}, outside the batch of {batch}")]
    OutsideBatch {
        what: &'static str,
        index: i64,
        batch: usize,
    },
    #[error("no {what} row for table {index} of the batch")]
    NoRow { what: &'static str, index: usize },
}

/// Why the re-read of an optimize step's partitions cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecountError {
    #[error("no partition to re-read")]
    NoPartition,
    #[error(transparent)]
    Predicate(#[from] PredicateError),
}

/// The re-read after an optimize step: files and small files left in its partitions.
pub fn recount_sql(
    t: &TableRef,
    spec: &TableLayout,
    targets: &[Vec<(String, Option<String>)>],
    threshold: u64,
) -> Result<String, RecountError> {
    recount_in_spec_sql(t, spec, None, targets, threshold)
}

/// [`recount_sql`] limited to the files of partition spec `spec_id`, when given: the
/// partitions of a table whose live files span several specs.
pub fn recount_in_spec_sql(
    t: &TableRef,
    spec: &TableLayout,
    spec_id: Option<i32>,
    targets: &[Vec<(String, Option<String>)>],
    threshold: u64,
) -> Result<String, RecountError> {
    if targets.is_empty() {
        return Err(RecountError::NoPartition);
    }
    let preds = targets
        .iter()
        .map(|values| files_partition_predicate(spec, values).map(|p| format!("({p})")))
        .collect::<Result<Vec<_>, _>>()?;
    let preds = preds.join("\n   OR ");
    let preds = match spec_id {
        Some(id) => format!("f.spec_id = {id} AND ({preds})"),
        None => preds,
    };
    Ok(format!(
        "SELECT count_if(f.content = 0) AS files,\n       count_if(f.content = 0 AND f.file_size_in_bytes < {threshold}) AS small_files\nFROM {files} f\nWHERE {preds}",
        files = t.meta("files"),
    ))
}

/// `*` and `?` globs (no character classes), case-sensitive as Trino names are.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0usize, 0usize, None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

mod file_read;
mod parse;
#[cfg(test)]
mod tests;

pub use file_read::{
    Dating, FileReadItem, data_file_counts, data_files_batch_sql, data_files_sql, date_by_ids,
    every_file_small, files_batch_sql, parse_files, small_dates_sql,
};
pub(crate) use parse::{parse_snapshot, partition_field_names};
pub use parse::{parse_stats, partition_value_text};
