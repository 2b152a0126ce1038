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

use super::model::{TableRef, TableStats, TrendTail};
use super::probe::{by_index, rows_by_index};
use super::scan::{ScanParams, excess_files};
use super::statements::RowsError;
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

/// What one metadata-only read tells of a table: its totals, every snapshot fact the
/// verdicts use and the newest snapshots' ids and commit times (which date its files);
/// with [`SurveyShape::table_meta`] its target, its manifests and whether they are
/// partitioned (and its metadata log when asked). `stats` holds these facts with the file
/// facts taken from the totals (see [`Survey::stats`]); the per-file read replaces those.
#[derive(Clone, Debug, PartialEq)]
pub struct Survey {
    pub totals: Totals,
    pub stats: TableStats,
    /// The table's target and manifests, when this survey read them
    /// ([`SurveyShape::table_meta`]); a fleet's survey leaves the manifests to
    /// [`file_meta_sql`].
    pub meta: Option<FileMeta>,
    /// What the table's `$properties` say (its target and current snapshot), when read.
    pub props: Option<Props>,
    /// The newest snapshots (at most `trend_limit` + 1), newest first. A file read names
    /// the snapshots that added its small files by id, which these date.
    pub history: Vec<Snap>,
    /// The table has more snapshots than the survey returned one by one: its snapshot
    /// facts are read again by [`history_sql`] (until then they are the window's).
    pub long_history: bool,
    /// Data and delete files the newest snapshot removed (what its own manifests may list
    /// beside the live files: [`manifests_at_most`]).
    pub removed_by_newest: Option<u64>,
    /// The survey read every fact the table's verdict uses (a Delta table's partitions'
    /// totals and history): `stats` are final, no file read follows.
    pub complete: bool,
}

impl Survey {
    /// Whether a commit of the survey's history wrote two partitions or more: the table's
    /// files carry a partition, whatever its manifests say.
    pub fn partitioned_by_history(&self) -> bool {
        self.history
            .iter()
            .any(|s| s.changed_partitions.is_some_and(|n| n > 1))
    }

    /// Whether the table's `$manifests` must be read with its target before its files
    /// ([`needs_manifests`]).
    pub fn needs_manifests(&self, cfg: &ScanParams) -> bool {
        needs_manifests(
            &self.totals,
            self.removed_by_newest,
            self.partitioned_by_history(),
            cfg.max_small_manifests,
        )
    }
}

/// What a survey reads of a table's `$properties`: its target file size and its current
/// snapshot (after a rollback, or with branches, not the newest one committed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Props {
    /// `write.target-file-size-bytes`, when the table sets it.
    pub target: Option<u64>,
    /// `current-snapshot-id`.
    pub current: Option<i64>,
}

/// What a table's files are read with, beyond its snapshots: its target and its
/// manifests, from `$properties` and `$manifests` (metadata only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileMeta {
    /// `write.target-file-size-bytes` when the table sets it.
    pub target_property: Option<u64>,
    pub manifests: Option<u64>,
    pub small_manifests: Option<u64>,
    pub manifest_bytes: Option<u64>,
    /// `Some(true)` when the current manifests carry partition fields, `Some(false)` when
    /// they carry none, `None` without manifests.
    pub partitioned: Option<bool>,
}

impl FileMeta {
    /// The table's target file size: its property, else the default.
    pub fn target(&self, cfg: &ScanParams) -> u64 {
        self.target_property.unwrap_or(cfg.target_file_size)
    }

    /// `stats` with this target and these manifests.
    pub fn apply(&self, stats: &mut TableStats, cfg: &ScanParams) {
        stats.target_file_size = self.target(cfg);
        stats.target_from_property = self.target_property.is_some();
        stats.manifests = self.manifests;
        stats.small_manifests = self.small_manifests;
        stats.manifest_bytes = self.manifest_bytes;
    }

    fn of(r: &Row) -> FileMeta {
        FileMeta {
            target_property: r.u64("target_property").filter(|&t| t > 0),
            manifests: r.u64("manifests"),
            small_manifests: r.u64("small_manifests"),
            manifest_bytes: r.u64("manifest_bytes"),
            partitioned: r.i64("partition_fields").map(|n| n > 0),
        }
    }
}

/// Tables a survey statement reads. What a statement costs the coordinator beyond its
/// planning (its scheduling, its tasks, the protocol) is paid once for all its tables:
/// on Trino 476 ten `$snapshots` reads in one statement cost its process about 45 ms of
/// CPU a table, one alone about 75 ms (benches/README.md). A wider `UNION ALL` costs no
/// less a table and makes every table of it wait for the slowest.
pub const SURVEY_BATCH: usize = 10;

/// What a survey reads besides the snapshots, by what the server has and who asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SurveyShape {
    /// `$metadata_log_entries` (444+). A fleet's survey leaves it to the change probe,
    /// which reads it anyway. A one-table read (`floe check`, the report, a re-read)
    /// takes it in the same statement.
    pub metadata_log: bool,
    /// `$properties` and `$manifests` ([`FileMeta`]) in the same statement: a one-table
    /// read takes them. A fleet's survey reads `$snapshots` alone: each metadata table a
    /// statement reads costs the coordinator about as much as the snapshots' own read,
    /// and only the tables whose files are read need them ([`file_meta_sql`]).
    pub table_meta: bool,
    /// `$manifests`' partition summaries column (`partition_summaries`, `partitions`
    /// before 468).
    pub summaries: &'static str,
}

/// What a table's manifests can hold at most, from its totals: every manifest of a
/// snapshot holds a live file, or was written by the snapshot itself for the files it
/// removed (Iceberg's writers drop a manifest once nothing in it is live), so at most the
/// live data and delete files plus the files the newest snapshot removed. `None` when the
/// summaries do not tell.
pub fn manifests_at_most(t: &Totals, removed_by_newest: Option<u64>) -> Option<u64> {
    Some(t.data_files? + t.delete_files? + removed_by_newest?)
}

/// Whether a table's `$manifests` must be read with its target: its layout is not known
/// (no commit changed two partitions), or its manifests could be enough for a finding
/// (more than `max_small_manifests`, or its summaries do not tell).
pub fn needs_manifests(
    t: &Totals,
    removed_by_newest: Option<u64>,
    partitioned_known: bool,
    max_small_manifests: u64,
) -> bool {
    !partitioned_known
        || manifests_at_most(t, removed_by_newest).is_none_or(|n| n > max_small_manifests)
}

/// One snapshot as a survey reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snap {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// `total-data-files`, when the writer recorded it.
    pub total: Option<u64>,
    /// A `replace` (a compaction, or any rewrite).
    pub replace: bool,
    /// An `append`: it added files and removed none.
    pub append: bool,
    /// `added-data-files` and `added-files-size`, when the writer recorded them.
    pub added: Option<u64>,
    pub added_bytes: Option<u64>,
    /// `deleted-data-files`.
    pub deleted: Option<u64>,
    /// The snapshot it was committed on (`None` for a table's first).
    pub parent: Option<i64>,
    /// `changed-partition-count`: partitions the commit wrote. More than one proves the
    /// table was partitioned then (an unpartitioned table has one).
    pub changed_partitions: Option<u64>,
}

impl Snap {
    /// A `replace` that rewrote data files: a compaction.
    pub fn compaction(&self) -> bool {
        self.replace && self.deleted.is_some_and(|d| d > 0)
    }
}

/// The snapshot facts the verdicts use, from a table's whole history, newest first
/// (what the aggregates of [`history_sql`] compute on the server for a longer one): the
/// newest write and `replace`, the newest compaction with the files it left and the
/// writes since, and the trend of `total-data-files` (the newest `limit` one by one,
/// oldest first; the rest as a [`TrendTail`]).
pub fn snapshot_facts(history: &[Snap], limit: usize, stats: &mut TableStats) {
    let limit = limit.max(1);
    stats.last_write = history.iter().find(|s| !s.replace).map(|s| s.at);
    let compaction = history.iter().find(|s| s.compaction());
    stats.last_compaction = compaction.map(|s| s.at);
    stats.files_after_compaction = compaction.and_then(|s| s.total);
    stats.writes_since_compaction = compaction.map_or(0, |c| {
        history.iter().filter(|s| !s.replace && s.at > c.at).count() as u64
    });
    let totals: Vec<(DateTime<Utc>, u64)> = history
        .iter()
        .filter_map(|s| s.total.map(|n| (s.at, n)))
        .collect();
    stats.trend = totals.iter().take(limit).rev().copied().collect();
    stats.trend_tail = (totals.len() > limit).then(|| {
        // Oldest last: the drops between consecutive older snapshots, oldest to newest.
        let tail = &totals[limit..];
        let drops = tail.windows(2).map(|w| w[1].1.saturating_sub(w[0].1)).sum();
        TrendTail {
            snapshots: tail.len() as u64,
            newest: tail[0].0,
            last_files: tail[0].1,
            drops,
        }
    });
}

impl Survey {
    /// The table's target file size: its property when this survey read it, else the
    /// default (what a fleet's survey bounds the small files at until the table's own
    /// target is read with its files).
    pub fn target(&self, cfg: &ScanParams) -> u64 {
        match (self.meta, self.props) {
            (Some(m), _) => m.target(cfg),
            (None, Some(p)) => p.target.unwrap_or(cfg.target_file_size),
            (None, None) => cfg.target_file_size,
        }
    }

    /// Whether the table's target is its own: read with its properties (the survey's or
    /// its metadata's), not the default taken for want of them.
    pub fn target_known(&self) -> bool {
        self.meta.is_some() || self.props.is_some()
    }

    /// Whether the table's per-file read can change its verdict (see [`file_read`]).
    pub fn file_read(&self, cfg: &ScanParams) -> FileRead {
        if self.complete {
            return FileRead::NotNeeded;
        }
        file_read(&self.totals, self.target(cfg), cfg)
    }

    /// The table's stats as far as its totals tell: files, bytes, records and delete
    /// counts from the newest snapshot's summary, the small files at their proved lower
    /// bound, marked unread ([`TableStats::files_unread`]) until the per-file read.
    pub fn stats(&self, cfg: &ScanParams) -> TableStats {
        if self.complete {
            return self.stats.clone();
        }
        let t = &self.totals;
        let target = self.target(cfg);
        let bounds = small_file_bounds(t, target, cfg);
        let position_deletes = t.position_deletes.unwrap_or(0);
        let equality_deletes = t.equality_deletes.unwrap_or(0);
        let delete_files = t.delete_files.unwrap_or(0);
        TableStats {
            target_file_size: target,
            target_from_property: self.meta.is_some_and(|m| m.target_property.is_some())
                || self.props.is_some_and(|p| p.target.is_some()),
            data_files: t.data_files.unwrap_or(0),
            small_files: bounds.map_or(0, |b| b.at_least),
            total_bytes: t.files_size.unwrap_or(0),
            records: t.records.unwrap_or(0),
            partitioned: self.meta.and_then(|m| m.partitioned).unwrap_or(false),
            delete_files,
            // The summary counts delete files, not their kinds: all of one kind when only
            // that kind's records are deleted (the per-file read tells the rest).
            position_delete_files: if equality_deletes == 0 {
                delete_files
            } else {
                0
            },
            equality_delete_files: if equality_deletes > 0 && position_deletes == 0 {
                delete_files
            } else {
                0
            },
            position_deletes,
            equality_deletes,
            files_unread: true,
            deletes_unknown: t.delete_files.is_none(),
            ..self.stats.clone()
        }
    }
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
pub fn small_file_bounds(t: &Totals, target: u64, cfg: &ScanParams) -> Option<SmallFileBounds> {
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
pub fn file_read(t: &Totals, target: u64, cfg: &ScanParams) -> FileRead {
    match t.data_files {
        _ if t.snapshots == 0 => FileRead::NotNeeded,
        // Delete files: which kind each is (what a read pays differs four times) is in
        // the files alone.
        Some(_) if t.delete_files.is_none_or(|d| d > 0) => {
            FileRead::Needed(small_file_bounds(t, target, cfg))
        }
        // Too few files for a small-file verdict, and too few bytes for one file over
        // the large-file line (an INFO): nothing a read of the files could find.
        Some(n)
            if n < cfg.min_small_files
                && t.files_size
                    .is_some_and(|b| b as f64 <= target as f64 * cfg.large_file_ratio) =>
        {
            FileRead::NotNeeded
        }
        _ => FileRead::Needed(small_file_bounds(t, target, cfg)),
    }
}

mod parse;
mod sql;
#[cfg(test)]
mod tests;

pub use parse::{
    apply_history, parse_file_meta, parse_history, parse_survey, parse_survey_rows, parse_totals,
    trend_tail,
};
pub use sql::{
    file_meta_sql, history_sql, survey_rows_limit, survey_rows_sql, survey_sql, totals_sql,
};
