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

/// The newest snapshot's summary totals ([`KEYS`]) as columns of an aggregate over
/// `$snapshots`, each led by a comma.
fn newest_totals() -> String {
    KEYS.iter()
        .map(|(k, col)| {
            format!(
                ", TRY_CAST(element_at(max_by(summary, committed_at), '{k}') AS bigint) AS {col}"
            )
        })
        .collect()
}

/// One statement reading the totals of `tables`: one branch per table, each reading its
/// `$snapshots` exactly once (no `WITH`: Trino would inline it into every reference),
/// rows carrying the branch's index in `tables` as `i`.
pub fn totals_sql(tables: &[TableRef]) -> String {
    let keys = newest_totals();
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
pub fn parse_totals(rows: &[Row], batch: usize) -> Result<Vec<Totals>, RowsError> {
    by_index(rows, batch, "totals", totals_of)
}

/// The totals columns of one row (of [`totals_sql`] or [`survey_sql`]).
fn totals_of(r: &Row) -> Totals {
    let time = |n: &str| r.get(n).and_then(Value::as_datetime);
    Totals {
        snapshots: r.u64("snapshots").unwrap_or(0),
        snapshot_id: r.i64("snapshot_id"),
        committed_at: time("committed_at"),
        oldest_snapshot: time("oldest_snapshot"),
        last_replace: time("last_replace"),
        data_files: r.u64("data_files"),
        files_size: r.u64("files_size"),
        delete_files: r.u64("delete_files"),
        records: r.u64("records"),
        position_deletes: r.u64("position_deletes"),
        equality_deletes: r.u64("equality_deletes"),
    }
}

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
    /// ([`SurveyShape::table_meta`]); a fleet's survey leaves them to [`file_meta_sql`].
    pub meta: Option<FileMeta>,
    /// The newest snapshots (at most `trend_limit` + 1), newest first. A file read names
    /// the snapshots that added its small files by id, which these date.
    pub history: Vec<Snap>,
    /// The table has more snapshots than the survey returned one by one: its snapshot
    /// facts are read again by [`history_sql`] (until then they are the window's).
    pub long_history: bool,
    /// Data and delete files the newest snapshot removed (what its own manifests may list
    /// beside the live files: [`manifests_at_most`]).
    pub removed_by_newest: Option<u64>,
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

/// `$manifests` (`m`) and `$properties` (`p`) of `t` as two cross-joined one-row
/// aggregates, each metadata table read once: what [`FILE_META_COLUMNS`] reads.
fn file_meta_from(t: &TableRef, cfg: &ScanParams, summaries: &str) -> String {
    format!(
        "(SELECT count(*) AS manifests, count_if(length < {small}) AS small_manifests, \
         COALESCE(sum(length), 0) AS manifest_bytes, max(cardinality({summaries})) AS partition_fields \
         FROM {manifests}) m \
         CROSS JOIN (SELECT max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS target_prop \
         FROM {properties}) p",
        small = cfg.small_manifest_size,
        manifests = t.meta("manifests"),
        properties = t.meta("properties"),
    )
}

const FILE_META_COLUMNS: &str = "m.manifests, m.small_manifests, m.manifest_bytes, m.partition_fields, \
     TRY_CAST(p.target_prop AS bigint) AS target_property";

/// One statement reading the [`FileMeta`] of each of `tables` (`$properties`, and
/// `$manifests` for those `manifests` says: metadata only), one `UNION ALL` branch a
/// table: the read a fleet's survey leaves to the tables whose files are read, ten a
/// statement. Rows carry the branch's index as `i`.
pub fn file_meta_sql(
    tables: &[TableRef],
    cfg: &ScanParams,
    summaries: &str,
    manifests: impl Fn(&TableRef) -> bool,
) -> String {
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if manifests(t) {
                format!(
                    "SELECT {i} AS i, {FILE_META_COLUMNS} FROM {}",
                    file_meta_from(t, cfg, summaries)
                )
            } else {
                format!(
                    "SELECT {i} AS i, CAST(NULL AS bigint) AS manifests, CAST(NULL AS bigint) AS small_manifests, \
                     CAST(NULL AS bigint) AS manifest_bytes, CAST(NULL AS bigint) AS partition_fields, \
                     TRY_CAST(max(CASE WHEN key = 'write.target-file-size-bytes' THEN value END) AS bigint) AS target_property \
                     FROM {}",
                    t.meta("properties")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
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

/// The [`FileMeta`] of a batch's rows, by index in the batch.
pub fn parse_file_meta(rows: &[Row], batch: usize) -> Result<Vec<FileMeta>, RowsError> {
    by_index(rows, batch, "table metadata", FileMeta::of)
}

/// The newest snapshots a survey returns one by one: `trend_limit`, and one more that
/// tells whether a longer history goes on beyond them.
fn history_window(cfg: &ScanParams) -> u64 {
    cfg.trend_limit.max(1) + 1
}

/// One statement surveying `tables`, one branch per table reading its `$snapshots` (and,
/// per `shape`, its `$manifests`, `$properties` and `$metadata_log_entries`) once each —
/// every one of them from the table's metadata file or its manifest list, no manifest
/// opened — with no window and no `WITH` (Trino would inline a `WITH` into every
/// reference). What a table's snapshots tell travels as little SQL as can carry it: the
/// count, the oldest, and the newest snapshots as one array of rows, newest first (id,
/// commit time, operation, parent, summary), from which every snapshot fact and the
/// newest totals are derived here
/// ([`snapshot_facts`]). Each expression a statement carries costs the coordinator CPU
/// beyond its planning (the code it generates and runs): on Trino 476 this form cost its
/// process 35-40 ms of CPU a table ten to a statement, the same facts as aggregates,
/// arrays and lambdas 80-90 ms. A table whose history goes on beyond the window is read
/// again by [`history_sql`]. Rows carry the branch's index in `tables` as `i`.
pub fn survey_sql(tables: &[TableRef], cfg: &ScanParams, shape: SurveyShape) -> String {
    let window = history_window(cfg);
    let history = "array_agg(ROW(snapshot_id, committed_at, operation, parent_id, summary) \
                   ORDER BY committed_at DESC, snapshot_id DESC)";
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if !shape.metadata_log && !shape.table_meta {
                // A fleet's survey whose rows ([`survey_rows_sql`]) reached their limit:
                // one aggregate, no subquery and no column it does not read (its absent
                // columns read as unknown): on Trino 476 this plans in 3.9 ms a table ten
                // to a statement, the form below in 4.4 ms.
                return format!(
                    "SELECT {i} AS i, count(*) AS snapshots, to_unixtime(min(committed_at)) AS oldest_snapshot, \
                     slice({history}, 1, {window}) AS history FROM {}",
                    t.meta("snapshots")
                );
            }
            let (log, log_cols) = if shape.metadata_log {
                (
                    format!(
                        " CROSS JOIN (SELECT count(*) AS metadata_files, to_unixtime(max(\"timestamp\")) AS metadata_at FROM {}) l",
                        t.meta("metadata_log_entries")
                    ),
                    "l.metadata_files, l.metadata_at",
                )
            } else {
                (
                    String::new(),
                    "CAST(NULL AS bigint) AS metadata_files, CAST(NULL AS double) AS metadata_at",
                )
            };
            let (meta, meta_cols) = if shape.table_meta {
                (
                    format!(" CROSS JOIN {}", file_meta_from(t, cfg, shape.summaries)),
                    FILE_META_COLUMNS,
                )
            } else {
                (
                    String::new(),
                    "CAST(NULL AS bigint) AS manifests, CAST(NULL AS bigint) AS small_manifests, \
                     CAST(NULL AS bigint) AS manifest_bytes, CAST(NULL AS bigint) AS partition_fields, \
                     CAST(NULL AS bigint) AS target_property",
                )
            };
            format!(
                "SELECT {i} AS i, s.snapshots, to_unixtime(s.oldest) AS oldest_snapshot, \
                 slice(s.history, 1, {window}) AS history, {meta_cols}, {log_cols} \
                 FROM (SELECT count(*) AS snapshots, min(committed_at) AS oldest, \
                 {history} AS history FROM {snapshots}) s{meta}{log}",
                snapshots = t.meta("snapshots"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// One snapshot as a survey reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snap {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// `total-data-files`, when the writer recorded it.
    pub total: Option<u64>,
    /// A `replace` (a compaction, or any rewrite).
    pub replace: bool,
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
    fn compaction(&self) -> bool {
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

/// The history column of a survey row: its rows, newest first, with the newest one's
/// summary (its totals).
fn history_of(r: &Row) -> (Vec<Snap>, Vec<(Value, Value)>) {
    let Some(Value::Array(items)) = r.get("history") else {
        return (Vec::new(), Vec::new());
    };
    let mut newest = None;
    let snaps = items
        .iter()
        .filter_map(|v| {
            let Value::Row(f) = v else { return None };
            let field = |k: usize| f.get(k).map(|(_, v)| v);
            let summary = match field(4) {
                Some(Value::Map(m)) => m.as_slice(),
                _ => &[],
            };
            if newest.is_none() {
                newest = Some(summary.to_vec());
            }
            snap_of(field(0), field(1), field(2), field(3), summary)
        })
        .collect();
    (snaps, newest.unwrap_or_default())
}

/// One snapshot from its id, commit time, operation, parent and summary as `$snapshots`
/// has them (`None` without an id or a time).
fn snap_of(
    id: Option<&Value>,
    at: Option<&Value>,
    operation: Option<&Value>,
    parent: Option<&Value>,
    summary: &[(Value, Value)],
) -> Option<Snap> {
    Some(Snap {
        id: id?.as_i64()?,
        at: at?.as_datetime()?,
        total: count_in(summary, "total-data-files"),
        replace: operation.and_then(Value::as_str) == Some("replace"),
        deleted: count_in(summary, "deleted-data-files"),
        parent: parent.and_then(Value::as_i64),
        changed_partitions: count_in(summary, "changed-partition-count"),
    })
}

/// A count of a snapshot summary (text in the map), as the writer recorded it.
fn count_in(summary: &[(Value, Value)], key: &str) -> Option<u64> {
    summary.iter().find_map(|(k, v)| match (k, v) {
        (Value::Text(k), Value::Text(v)) if k == key => v.trim().parse().ok(),
        _ => None,
    })
}

/// The surveys of a batch's rows, by index in the batch; `table_meta`: the statement read
/// each table's [`FileMeta`] ([`SurveyShape::table_meta`]).
pub fn parse_survey(
    rows: &[Row],
    batch: usize,
    table_meta: bool,
    cfg: &ScanParams,
) -> Result<Vec<Survey>, RowsError> {
    let time = |r: &Row, n: &str| r.get(n).and_then(Value::as_datetime);
    by_index(rows, batch, "survey", |r| {
        let (history, newest) = history_of(r);
        Read {
            snapshots: r.u64("snapshots").unwrap_or(0),
            oldest: time(r, "oldest_snapshot"),
            history,
            newest,
            meta: table_meta.then(|| FileMeta::of(r)),
            metadata_files: r.u64("metadata_files"),
            metadata_at: time(r, "metadata_at"),
        }
        .survey(cfg)
    })
}

/// What one survey statement read of a table, before the facts are derived.
struct Read {
    snapshots: u64,
    oldest: Option<DateTime<Utc>>,
    /// The newest snapshots, newest first (at most the window).
    history: Vec<Snap>,
    /// The newest snapshot's summary.
    newest: Vec<(Value, Value)>,
    meta: Option<FileMeta>,
    metadata_files: Option<u64>,
    metadata_at: Option<DateTime<Utc>>,
}

impl Read {
    fn survey(self, cfg: &ScanParams) -> Survey {
        let Read {
            snapshots,
            oldest,
            history,
            newest,
            meta,
            metadata_files,
            metadata_at,
        } = self;
        let [
            data_files,
            files_size,
            delete_files,
            records,
            position_deletes,
            equality_deletes,
        ] = KEYS.map(|(key, _)| count_in(&newest, key));
        let totals = Totals {
            snapshots,
            snapshot_id: history.first().map(|s| s.id),
            committed_at: history.first().map(|s| s.at),
            oldest_snapshot: oldest,
            last_replace: history.iter().find(|s| s.replace).map(|s| s.at),
            data_files,
            files_size,
            delete_files,
            records,
            position_deletes,
            equality_deletes,
        };
        let mut stats = TableStats {
            snapshots,
            snapshot_id: totals.snapshot_id,
            oldest_snapshot: totals.oldest_snapshot,
            newest_snapshot: totals.committed_at,
            manifests: meta.and_then(|m| m.manifests),
            small_manifests: meta.and_then(|m| m.small_manifests),
            manifest_bytes: meta.and_then(|m| m.manifest_bytes),
            metadata_files,
            metadata_at,
            ..Default::default()
        };
        let long_history = (history.len() as u64) < snapshots;
        // The files the newest snapshot removed (its own manifests may list them).
        let removed_by_newest = if snapshots == 0 {
            Some(0)
        } else {
            Some(
                count_in(&newest, "deleted-data-files").unwrap_or(0)
                    + count_in(&newest, "removed-delete-files").unwrap_or(0),
            )
        };
        snapshot_facts(&history, cfg.trend_limit as usize, &mut stats);
        Survey {
            totals,
            stats,
            meta,
            history,
            long_history,
            removed_by_newest,
        }
    }
}

/// The rows a fleet's survey statement may return at most ([`survey_rows_sql`]): every
/// table's window and one more. A statement that returns that many was cut: one table of
/// it at least has more snapshots than its window.
pub fn survey_rows_limit(tables: usize, cfg: &ScanParams) -> u64 {
    tables as u64 * history_window(cfg) + 1
}

/// A fleet's survey: each table's `$snapshots` rows as they are (id, commit time,
/// operation, parent, summary), one `UNION ALL` branch a table, no aggregate and no sort,
/// the statement cut at [`survey_rows_limit`]. The snapshot facts are derived here as
/// from [`survey_sql`]'s arrays. On Trino 476 this plans in 2.0 ms a table ten to a
/// statement, the aggregate form in 3.9-4.1 ms, the script's one-table `$snapshots`
/// read in 4.5-5.0 ms: the aggregate, its sort and a limit per branch are what the
/// planner pays for. A statement cut at its limit is read again in the aggregate form,
/// which cuts each table's history on the server ([`parse_survey_rows`]).
pub fn survey_rows_sql(tables: &[TableRef], cfg: &ScanParams) -> String {
    let branches = tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, snapshot_id, committed_at, operation, parent_id, summary FROM {}",
                t.meta("snapshots")
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n");
    format!("{branches}\nLIMIT {}", survey_rows_limit(tables.len(), cfg))
}

/// The surveys of a batch's rows of [`survey_rows_sql`], by index in the batch; `None`
/// when the statement was cut at its limit (which tables it cut, the rows cannot tell:
/// the batch is read again in the aggregate form). A table with no row has no snapshot.
pub fn parse_survey_rows(
    rows: &[Row],
    batch: usize,
    cfg: &ScanParams,
) -> Result<Option<Vec<Survey>>, RowsError> {
    if rows.len() as u64 >= survey_rows_limit(batch, cfg) {
        return Ok(None);
    }
    let window = history_window(cfg) as usize;
    let mut out = Vec::with_capacity(batch);
    for table in rows_by_index(rows, batch, "survey")? {
        let mut snaps: Vec<(Snap, Vec<(Value, Value)>)> = table
            .iter()
            .filter_map(|r| {
                let summary = match r.get("summary") {
                    Some(Value::Map(m)) => m.clone(),
                    _ => Vec::new(),
                };
                let snap = snap_of(
                    r.get("snapshot_id"),
                    r.get("committed_at"),
                    r.get("operation"),
                    r.get("parent_id"),
                    &summary,
                )?;
                Some((snap, summary))
            })
            .collect();
        // Newest first, as the aggregate form orders them.
        snaps.sort_by(|(a, _), (b, _)| b.at.cmp(&a.at).then(b.id.cmp(&a.id)));
        let snapshots = table.len() as u64;
        let oldest = snaps.iter().map(|(s, _)| s.at).min();
        let newest = snaps.first().map(|(_, m)| m.clone()).unwrap_or_default();
        snaps.truncate(window);
        out.push(
            Read {
                snapshots,
                oldest,
                history: snaps.into_iter().map(|(s, _)| s).collect(),
                newest,
                meta: None,
                metadata_files: None,
                metadata_at: None,
            }
            .survey(cfg),
        );
    }
    Ok(Some(out))
}

/// The snapshot facts of tables whose history goes on beyond a survey's window, computed
/// on the server (one branch a table reading its `$snapshots` once; the trend, the newest
/// snapshots' ids and times and the writes since the newest compaction travel as arrays
/// cut with lambdas, the older snapshots' trend as one summary): what [`snapshot_facts`]
/// derives from a whole history, for a history of any length.
pub fn history_sql(tables: &[TableRef], cfg: &ScanParams) -> String {
    let limit = cfg.trend_limit.max(1);
    let total = "TRY_CAST(element_at(summary, 'total-data-files') AS bigint)";
    let compaction = "operation = 'replace' AND TRY_CAST(element_at(summary, 'deleted-data-files') AS bigint) > 0";
    let newest_first = "ORDER BY committed_at DESC, snapshot_id DESC";
    tables
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "SELECT {i} AS i, to_unixtime(s.last_write) AS last_write, \
                 to_unixtime(s.lc) AS last_compaction, to_unixtime(s.last_replace) AS last_replace, \
                 s.files_after_compaction, \
                 IF(s.lc IS NULL, 0, COALESCE(cardinality(filter(s.writes, w -> w > s.lc)), 0)) AS writes_since_compaction, \
                 slice(s.ta, 1, {limit}) AS trend_at, slice(s.tf, 1, {limit}) AS trend_files, \
                 greatest(COALESCE(cardinality(s.ta), 0) - {limit}, 0) AS tail_snapshots, \
                 element_at(s.ta, {next}) AS tail_newest, element_at(s.tf, {next}) AS tail_last_files, \
                 IF(COALESCE(cardinality(s.tf), 0) >= {after}, reduce(sequence({after}, cardinality(s.tf)), BIGINT '0', \
                 (acc, r) -> acc + greatest(s.tf[r] - s.tf[r - 1], 0), acc -> acc), 0) AS tail_drops \
                 FROM (SELECT max(CASE WHEN operation <> 'replace' THEN committed_at END) AS last_write, \
                 max(CASE WHEN {compaction} THEN committed_at END) AS lc, \
                 max(CASE WHEN operation = 'replace' THEN committed_at END) AS last_replace, \
                 max_by({total}, CASE WHEN {compaction} THEN committed_at END) AS files_after_compaction, \
                 array_agg(committed_at) FILTER (WHERE operation <> 'replace') AS writes, \
                 array_agg(to_unixtime(committed_at) {newest_first}) FILTER (WHERE {total} IS NOT NULL) AS ta, \
                 array_agg({total} {newest_first}) FILTER (WHERE {total} IS NOT NULL) AS tf \
                 FROM {snapshots}) s",
                next = limit + 1,
                after = limit + 2,
                snapshots = t.meta("snapshots"),
            )
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n")
}

/// A row of [`history_sql`] over a survey of the same table: its snapshot facts replace
/// those the survey derived from its window.
pub fn apply_history(r: &Row, survey: &mut Survey) {
    let time = |n: &str| r.get(n).and_then(Value::as_datetime);
    let st = &mut survey.stats;
    st.last_write = time("last_write");
    st.last_compaction = time("last_compaction");
    st.files_after_compaction = r.u64("files_after_compaction");
    st.writes_since_compaction = r.u64("writes_since_compaction").unwrap_or(0);
    survey.totals.last_replace = time("last_replace");
    let mut trend = Vec::new();
    if let (Some(Value::Array(at)), Some(Value::Array(files))) =
        (r.get("trend_at"), r.get("trend_files"))
    {
        // Newest first on the wire: the trend runs oldest first.
        for (a, f) in at.iter().zip(files).rev() {
            if let (Some(t), Some(n)) = (a.as_datetime(), f.as_u64()) {
                trend.push((t, n));
            }
        }
    }
    st.trend = trend;
    let tail_snapshots = r.u64("tail_snapshots").unwrap_or(0);
    st.trend_tail = match (time("tail_newest"), r.u64("tail_last_files")) {
        (Some(newest), Some(last_files)) if tail_snapshots > 0 => Some(TrendTail {
            snapshots: tail_snapshots,
            newest,
            last_files,
            drops: r.u64("tail_drops").unwrap_or(0),
        }),
        _ => None,
    };
    survey.long_history = false;
}

/// The rows of [`history_sql`], by index in the batch.
pub fn parse_history(rows: &[Row], batch: usize) -> Result<Vec<Row>, RowsError> {
    by_index(rows, batch, "history", Row::clone)
}

impl Survey {
    /// The table's target file size: its property when this survey read it, else the
    /// default (what a fleet's survey bounds the small files at until the table's own
    /// target is read with its files).
    pub fn target(&self, cfg: &ScanParams) -> u64 {
        self.meta.map_or(cfg.target_file_size, |m| m.target(cfg))
    }

    /// Whether the table's per-file read can change its verdict (see [`file_read`]).
    pub fn file_read(&self, cfg: &ScanParams) -> FileRead {
        file_read(&self.totals, self.target(cfg), cfg)
    }

    /// The table's stats as far as its totals tell: files, bytes, records and delete
    /// counts from the newest snapshot's summary, the small files at their proved lower
    /// bound, marked unread ([`TableStats::files_unread`]) until the per-file read.
    pub fn stats(&self, cfg: &ScanParams) -> TableStats {
        let t = &self.totals;
        let target = self.target(cfg);
        let bounds = small_file_bounds(t, target, cfg);
        let position_deletes = t.position_deletes.unwrap_or(0);
        let equality_deletes = t.equality_deletes.unwrap_or(0);
        let delete_files = t.delete_files.unwrap_or(0);
        TableStats {
            target_file_size: target,
            target_from_property: self.meta.is_some_and(|m| m.target_property.is_some()),
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
        // A file far over the target (an INFO) shows in the average when there are few.
        Some(n)
            if n < cfg.min_small_files
                && t.files_size.is_some_and(|b| {
                    b as f64 <= n as f64 * target as f64 * cfg.large_file_ratio
                }) =>
        {
            FileRead::NotNeeded
        }
        _ => FileRead::Needed(small_file_bounds(t, target, cfg)),
    }
}

#[cfg(test)]
mod tests;
