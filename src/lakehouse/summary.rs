//! The first pass over a fleet: each table's newest snapshot summary (`total-data-files`,
//! `total-files-size`, `total-delete-files`, …) and its snapshot count and ages, read from
//! `$snapshots` alone — the table's metadata file, no manifest is opened — for many tables
//! in one `UNION ALL` statement; and what those totals prove about a table's small files,
//! which decides whether the per-file read (`$entries`/`$files`, every manifest) can
//! change its verdict and how soon it is worth sending.
//!
//! Totals bound the small files; they never show them. Every file that is not small holds
//! at least the small-file line in bytes, so at most ⌊bytes / line⌋ files are not small:
//! a table has at least `files − ⌊bytes / line⌋` small files, and at most all of them. An
//! average proves nothing healthy: a few huge files beside many small ones average above
//! the line. Only a table with fewer data files than `min_small_files` is proved free of
//! small-file and staleness findings by its totals alone. Pure: the statement's text, how
//! its rows are read, and the bounds.

use chrono::{DateTime, Utc};

use super::model::TableRef;
use super::probe::by_index;
use crate::health::{HealthConfig, excess_files};
use crate::trino::{Row, Value};

/// What the newest snapshot's summary and the snapshot list say of one table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Snapshots the table keeps (0: empty, nothing committed).
    pub snapshots: u64,
    pub snapshot_id: Option<i64>,
    pub committed_at: Option<DateTime<Utc>>,
    pub oldest_snapshot: Option<DateTime<Utc>>,
    /// The newest `replace` snapshot (a compaction, or any rewrite).
    pub last_replace: Option<DateTime<Utc>>,
    /// `total-data-files`: live data files.
    pub data_files: Option<u64>,
    /// `total-files-size`: bytes of the live data files and delete files together.
    pub files_size: Option<u64>,
    /// `total-delete-files`.
    pub delete_files: Option<u64>,
    /// `total-records`.
    pub records: Option<u64>,
    /// `total-position-deletes`, `total-equality-deletes` (records).
    pub position_deletes: Option<u64>,
    pub equality_deletes: Option<u64>,
}

/// The summary keys read, each with the column it comes back as.
const KEYS: [(&str, &str); 6] = [
    ("total-data-files", "data_files"),
    ("total-files-size", "files_size"),
    ("total-delete-files", "delete_files"),
    ("total-records", "records"),
    ("total-position-deletes", "position_deletes"),
    ("total-equality-deletes", "equality_deletes"),
];

/// One statement reading the totals of `tables`: one branch per table, each reading its
/// `$snapshots` exactly once (no `WITH`: Trino would inline it into every reference),
/// rows carrying the branch's index in `tables` as `i`.
pub fn totals_sql(tables: &[TableRef]) -> String {
    let keys: String = KEYS
        .iter()
        .map(|(k, col)| {
            format!(
                ", TRY_CAST(element_at(max_by(summary, committed_at), '{k}') AS bigint) AS {col}"
            )
        })
        .collect();
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, count(*) AS snapshots, max_by(snapshot_id, committed_at) AS snapshot_id, \
                 to_unixtime(max(committed_at)) AS committed_at, to_unixtime(min(committed_at)) AS oldest_snapshot, \
                 to_unixtime(max(CASE WHEN operation = 'replace' THEN committed_at END)) AS last_replace{keys} \
                 FROM {}",
                t.meta("snapshots")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// The totals of a batch's rows, by index in the batch.
pub fn parse_totals(rows: &[Row], batch: usize) -> Result<Vec<Totals>, String> {
    let time = |r: &Row, n: &str| r.get(n).and_then(Value::as_datetime);
    by_index(rows, batch, "totals", |r| Totals {
        snapshots: r.u64("snapshots").unwrap_or(0),
        snapshot_id: r.i64("snapshot_id"),
        committed_at: time(r, "committed_at"),
        oldest_snapshot: time(r, "oldest_snapshot"),
        last_replace: time(r, "last_replace"),
        data_files: r.u64("data_files"),
        files_size: r.u64("files_size"),
        delete_files: r.u64("delete_files"),
        records: r.u64("records"),
        position_deletes: r.u64("position_deletes"),
        equality_deletes: r.u64("equality_deletes"),
    })
}

/// What a table's totals prove about its small files at `target` bytes per file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallFileBounds {
    /// Small files it holds at least: `files − ⌊bytes / line⌋`.
    pub at_least: u64,
    /// Small files it may hold: every data file.
    pub at_most: u64,
    /// Files a reader opens beyond what the bytes need, at least (the verdict's measure
    /// of cost, `min(files − ⌈bytes / target⌉, small files)`).
    pub excess_at_least: u64,
}

/// Whether the per-file read can change a table's verdict, from its totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileRead {
    /// Fewer data files than `min_small_files` (or no snapshot at all): no small-file or
    /// staleness finding is possible, whatever the files' sizes; the totals decide.
    NotNeeded,
    /// The totals bound the small files without deciding; `bounds` orders the reads
    /// (the most excess files proved first). `None` when the summary carries no totals
    /// (a writer that records none): nothing is proved.
    Needed(Option<SmallFileBounds>),
}

/// The bounds of [`Totals`] at `target` (`None` without `total-data-files` and
/// `total-files-size`). `total-files-size` counts delete files too: the data bytes are
/// at most that, which keeps every bound a bound (a weaker one).
pub fn small_file_bounds(t: &Totals, target: u64, cfg: &HealthConfig) -> Option<SmallFileBounds> {
    let files = t.data_files?;
    let bytes = t.files_size?;
    // A file is small below this line (health's rule); one that is not holds at least it.
    let line = (target as f64 * cfg.small_file_ratio).max(1.0);
    let not_small_at_most = ((bytes as f64 / line).floor() as u64).min(files);
    let at_least = files - not_small_at_most;
    Some(SmallFileBounds {
        at_least,
        at_most: files,
        excess_at_least: excess_files(files, bytes, target).min(at_least),
    })
}

/// Whether `t`'s per-file read can change its verdict (see [`FileRead`]).
pub fn file_read(t: &Totals, target: u64, cfg: &HealthConfig) -> FileRead {
    match t.data_files {
        _ if t.snapshots == 0 => FileRead::NotNeeded,
        Some(n) if n < cfg.min_small_files => FileRead::NotNeeded,
        _ => FileRead::Needed(small_file_bounds(t, target, cfg)),
    }
}

#[cfg(test)]
mod tests;
