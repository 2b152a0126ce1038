//! Delta Lake tables, read the Delta way through Trino's Delta Lake connector: the same
//! facts as an Iceberg table's (files and small files per partition, the newest
//! compaction, the writes since), from the table's metadata tables alone — `$partitions`
//! (a row a partition: its file count and bytes, from the transaction log; no data file is
//! opened) and `$history` (a row a commit) — several tables a statement. Pure: the
//! statements' text and how their rows become [`TableStats`].
//!
//! `$partitions` counts files and bytes, not each file's size: a partition's small files
//! are those its totals prove (`files − ⌊bytes / line⌋`, as the Iceberg survey's bound),
//! exact for a partition of small files alone, never more than it holds.

use chrono::{DateTime, Utc};

pub mod log;

use super::model::{PartitionStats, SnapshotOperation, TableRef, TableStats};
use super::probe::rows_by_index;
use super::scan::ScanParams;
use super::statements::RowsError;
use crate::trino::{Row, Value};

/// The connector name of a Delta Lake catalog (`system.metadata.catalogs`).
pub const CONNECTOR: &str = "delta_lake";

/// Which format a catalog's tables are, by its connector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    #[default]
    Iceberg,
    Delta,
}

impl TableFormat {
    /// The format of a catalog whose connector is `connector` (`None`: not a table format
    /// floe reads).
    pub fn of_connector(connector: &str) -> Option<TableFormat> {
        match connector {
            "iceberg" => Some(TableFormat::Iceberg),
            CONNECTOR => Some(TableFormat::Delta),
            _ => None,
        }
    }

    /// The format's name in a sentence.
    pub fn title(self) -> &'static str {
        match self {
            TableFormat::Iceberg => "Iceberg",
            TableFormat::Delta => "Delta Lake",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TableFormat::Iceberg => "iceberg",
            TableFormat::Delta => "delta",
        }
    }
}

/// The commits of a Delta table that change no data: everything else wrote (Trino's
/// INSERT commits as `WRITE`; MERGE, UPDATE, DELETE, STREAMING UPDATE, CREATE TABLE AS
/// SELECT, …). `OPTIMIZE` is the compaction (Trino's, and Spark's with or without
/// ZORDER BY).
const NOT_WRITES: &[&str] = &[
    "OPTIMIZE",
    "VACUUM START",
    "VACUUM END",
    "CREATE TABLE",
    "CREATE OR REPLACE TABLE",
    "SET TBLPROPERTIES",
    "UNSET TBLPROPERTIES",
    "ADD COLUMNS",
    "CHANGE COLUMN",
    "DROP COLUMNS",
    "RENAME COLUMN",
    "COMMENT",
    "SET COLUMN COMMENT",
    "ADD CONSTRAINT",
    "DROP CONSTRAINT",
    "UPGRADE PROTOCOL",
    "RESTORE",
];

/// The SQL list of [`NOT_WRITES`].
fn not_writes() -> String {
    NOT_WRITES
        .iter()
        .map(|o| crate::sql::quote_string(o))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The commits that remove rows without rewriting a file where deletion vectors are on.
const ROW_REMOVALS: &str = "'DELETE', 'MERGE', 'UPDATE'";

/// One statement over `tables`: for each, a row a partition (`kind` `p`: its files and
/// bytes) and one row of its history's facts (`kind` `h`: commits, the newest version and
/// commit, the oldest kept, the newest `OPTIMIZE`, the newest write, the writes since that
/// `OPTIMIZE` and the DELETE, MERGE and UPDATE commits since it). Rows carry the table's
/// index as `i`. Whether deletion vectors are on is read after, for the tables with such
/// commits alone ([`deletion_vectors_sql`]): each metadata table a statement references
/// reads the table's log again.
pub fn survey_sql(tables: &[TableRef]) -> String {
    let writes = not_writes();
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, 'p' AS kind, CAST(file_count AS bigint) AS files, CAST(total_size AS bigint) AS bytes, \
                 CAST(NULL AS bigint) AS versions, CAST(NULL AS bigint) AS version, CAST(NULL AS double) AS newest, \
                 CAST(NULL AS double) AS oldest, CAST(NULL AS double) AS last_optimize, CAST(NULL AS double) AS last_write, \
                 CAST(NULL AS bigint) AS writes_since, CAST(NULL AS bigint) AS removals_since FROM {partitions}\n\
                 UNION ALL\n\
                 SELECT {i}, 'h', NULL, NULL, count(*), max(version), to_unixtime(max(\"timestamp\")), \
                 to_unixtime(min(\"timestamp\")), to_unixtime(max(lo)), \
                 to_unixtime(max(CASE WHEN operation NOT IN ({writes}) THEN \"timestamp\" END)), \
                 count_if(operation NOT IN ({writes}) AND \"timestamp\" > lo), \
                 count_if(operation IN ({ROW_REMOVALS}) AND (lo IS NULL OR \"timestamp\" > lo)) \
                 FROM (SELECT version, \"timestamp\", operation, \
                 max(CASE WHEN operation = 'OPTIMIZE' THEN \"timestamp\" END) OVER () AS lo FROM {history}) h",
                partitions = t.meta("partitions"),
                history = t.meta("history"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// Whether deletion vectors are on in each of `tables` (`delta.enableDeletionVectors`,
/// from `$properties`): a row a table, `dv` 1 or 0. Rows carry the table's index as `i`.
pub fn deletion_vectors_sql(tables: &[TableRef]) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, CAST(count_if(key = 'delta.enableDeletionVectors' AND lower(value) = 'true') AS bigint) AS dv \
                 FROM {}",
                t.meta("properties")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The files and bytes of Delta tables `$partitions` has no row for (an unpartitioned
/// table: Trino 476 lists none), from the hidden columns `"$path"` and `"$file_size"`:
/// each data file's footer is opened (a split a file), no column is read. Rows carry the
/// table's index as `i`.
pub fn unpartitioned_sql(tables: &[TableRef]) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, count(*) AS files, COALESCE(sum(size), 0) AS bytes FROM \
                 (SELECT \"$path\", max(\"$file_size\") AS size FROM {} GROUP BY \"$path\")",
                t.sql()
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// What one table's history says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct History {
    pub commits: u64,
    pub version: Option<i64>,
    pub newest: Option<DateTime<Utc>>,
    pub oldest: Option<DateTime<Utc>>,
    pub last_optimize: Option<DateTime<Utc>>,
    pub last_write: Option<DateTime<Utc>>,
    pub writes_since: u64,
    /// DELETE, MERGE and UPDATE commits since the newest `OPTIMIZE` (all, never one).
    pub removals_since: u64,
    /// Deletion vectors are on (`delta.enableDeletionVectors`), read for a table with
    /// `removals_since` alone.
    pub deletion_vectors: bool,
}

/// One table's survey: its partitions' `(files, bytes)` and its history.
pub type DeltaSurvey = (Vec<(u64, u64)>, History);

/// The surveys of a batch's rows: each table's partitions' `(files, bytes)` and history.
pub fn parse_survey(rows: &[Row], batch: usize) -> Result<Vec<DeltaSurvey>, RowsError> {
    let time = |r: &Row, n: &str| r.get(n).and_then(Value::as_datetime);
    rows_by_index(rows, batch, "delta survey")?
        .into_iter()
        .enumerate()
        .map(|(index, table)| {
            let mut parts = Vec::new();
            let mut history = None;
            for r in &table {
                match r.str("kind") {
                    Some("p") => {
                        parts.push((r.u64("files").unwrap_or(0), r.u64("bytes").unwrap_or(0)))
                    }
                    Some("h") => {
                        history = Some(History {
                            commits: r.u64("versions").unwrap_or(0),
                            version: r.i64("version"),
                            newest: time(r, "newest"),
                            oldest: time(r, "oldest"),
                            last_optimize: time(r, "last_optimize"),
                            last_write: time(r, "last_write"),
                            writes_since: r.u64("writes_since").unwrap_or(0),
                            removals_since: r.u64("removals_since").unwrap_or(0),
                            deletion_vectors: false,
                        })
                    }
                    _ => {}
                }
            }
            let history = history.ok_or(RowsError::NoRow {
                what: "delta history",
                index,
            })?;
            Ok((parts, history))
        })
        .collect()
}

/// Small files a partition of `files` files and `bytes` bytes holds at least, below the
/// small-file `line`: every other file holds the line at least.
pub fn small_at_least(files: u64, bytes: u64, line: u64) -> u64 {
    files.saturating_sub(bytes / line.max(1))
}

/// A Delta table's stats from its partitions' totals (`partitioned`: the table has
/// partition columns) and its history, at the default target (Trino's Delta Lake
/// connector writes to no per-table target).
pub fn stats(
    parts: &[(u64, u64)],
    history: &History,
    partitioned: bool,
    cfg: &ScanParams,
) -> TableStats {
    let target = cfg.target_file_size;
    let line = cfg.small_threshold(target);
    let min = cfg.min_small_files;
    let crit = cfg.critical_partition_small_files.max(min);
    let mut st = TableStats {
        format: TableFormat::Delta,
        target_file_size: target,
        partitioned,
        snapshot_id: history.version,
        snapshots: history.commits,
        oldest_snapshot: history.oldest,
        newest_snapshot: history.newest,
        last_compaction: history.last_optimize,
        last_write: history.last_write,
        writes_since_compaction: history.writes_since,
        deletion_vector_removals: history.deletion_vectors.then_some(history.removals_since),
        ..TableStats::default()
    };
    let mut most = None;
    for &(f, b) in parts.iter().filter(|(f, _)| *f > 0) {
        let small = small_at_least(f, b, line);
        st.data_files += f;
        st.total_bytes += b;
        st.small_files += small;
        st.partitions += 1;
        st.small_file_partitions += u64::from(small >= min);
        st.critical_partitions += u64::from(
            small >= crit
                && u128::from(b) <= u128::from(f.saturating_sub(crit)) * u128::from(target),
        );
        most = Some(most.map_or(small, |m: u64| m.max(small)));
    }
    st.max_partition_small_files = most;
    if !partitioned {
        st.partitions = 0;
        st.small_file_partitions = 0;
        st.critical_partitions = 0;
    }
    st
}

/// The partitions of one Delta table (the Partitions tab): `$partitions` with its
/// partition values.
pub fn partitions_sql(t: &TableRef) -> String {
    format!(
        "SELECT json_format(CAST(partition AS json)) AS part, CAST(file_count AS bigint) AS files, \
         CAST(total_size AS bigint) AS bytes FROM {}",
        t.meta("partitions")
    )
}

/// The rows of [`partitions_sql`] as partitions, each with its proved small files.
pub fn parse_partitions(rows: &[Row], cfg: &ScanParams) -> Vec<PartitionStats> {
    let line = cfg.small_threshold(cfg.target_file_size);
    rows.iter()
        .map(|r| {
            let (files, bytes) = (r.u64("files").unwrap_or(0), r.u64("bytes").unwrap_or(0));
            PartitionStats {
                values: partition_values(r.str("part").unwrap_or("{}")),
                data_files: files,
                small_files: small_at_least(files, bytes, line),
                total_bytes: bytes,
                records: 0,
                min_file: 0,
                max_file: 0,
                delete_files: 0,
                oldest_small_file_at: None,
                spec_id: None,
            }
        })
        .collect()
}

/// `{"region":"emea","day":"2026-11-01"}` as `(field, value)` pairs, in the row's order
/// (JSON null: SQL NULL; numbers and booleans as their text).
pub fn partition_values(json: &str) -> Vec<(String, Option<String>)> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(json) else {
        return Vec::new();
    };
    map.into_iter()
        .map(|(k, v)| {
            let text = match v {
                serde_json::Value::Null => None,
                serde_json::Value::String(s) => Some(s),
                other => Some(other.to_string()),
            };
            (k, text)
        })
        .collect()
}

/// The history of one Delta table (the Snapshots tab), newest first, at most `limit`.
pub fn history_sql(t: &TableRef, limit: usize) -> String {
    format!(
        "SELECT version, \"timestamp\" AS committed_at, operation, read_version AS parent_id, \
         user_name, is_blind_append FROM {} ORDER BY version DESC LIMIT {limit}",
        t.meta("history")
    )
}

/// The change probe of Delta tables (the columns of
/// [`crate::lakehouse::probe::parse_probe`]): each one's commits, newest version and its
/// time, from `$history`.
pub fn probe_sql(tables: &[TableRef]) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, count(*) AS snapshots, max(version) AS snapshot_id, \
                 to_unixtime(max(\"timestamp\")) AS committed_at FROM {}",
                t.meta("history")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// A Delta commit as a snapshot's operation: `OPTIMIZE` rewrote files (`replace`), a
/// blind append added files (`append`), a `DELETE` removed rows, any other write
/// replaced files (`overwrite`); metadata commits keep their own name.
pub fn operation_of(operation: &str, blind_append: Option<bool>) -> SnapshotOperation {
    match operation {
        "OPTIMIZE" => SnapshotOperation::Replace,
        "DELETE" => SnapshotOperation::Delete,
        "WRITE" | "STREAMING UPDATE" if blind_append != Some(false) => SnapshotOperation::Append,
        o if NOT_WRITES.contains(&o) => SnapshotOperation::Other(o.to_string()),
        _ => SnapshotOperation::Overwrite,
    }
}

#[cfg(test)]
mod tests;

/// Files and small files of the partitions matching any of `targets` (a target matches a
/// partition whose values hold every pair it names).
pub fn recount(
    partitions: &[PartitionStats],
    targets: &[Vec<(String, Option<String>)>],
) -> (u64, u64) {
    partitions
        .iter()
        .filter(|p| {
            targets
                .iter()
                .any(|want| want.iter().all(|kv| p.values.contains(kv)))
        })
        .fold((0, 0), |(f, s), p| (f + p.data_files, s + p.small_files))
}
