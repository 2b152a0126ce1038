//! One table as a flat record: the names here are the public ones of
//! `floe check --format json`, and every serialised view of a table uses this record.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::TableReport;
use crate::health::{DagFacts, Finding, Health, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

/// A table's stats and verdict. Counts are `None` when the table could not be read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableRecord {
    pub catalog: String,
    pub schema: String,
    pub table: String,
    /// `iceberg` or `delta`, when the catalog's connector is known.
    pub format: Option<crate::lakehouse::delta::TableFormat>,
    pub status: Severity,
    pub score: u32,
    pub data_files: Option<u64>,
    pub small_files: Option<u64>,
    pub total_bytes: Option<u64>,
    pub records: Option<u64>,
    pub partitions: Option<u64>,
    pub partitioned: Option<bool>,
    pub small_file_partitions: Option<u64>,
    pub snapshots: Option<u64>,
    pub delete_files: Option<u64>,
    /// Position (content 1) and equality (content 2) delete files.
    pub position_delete_files: Option<u64>,
    pub equality_delete_files: Option<u64>,
    /// Data files over `large_file_ratio` × target.
    pub large_files: Option<u64>,
    pub target_file_size: Option<u64>,
    /// The commit time of the oldest live small data file (RFC 3339; servers with
    /// `$entries`), and its age in hours at `now`.
    pub small_files_waiting_since: Option<String>,
    pub small_files_waiting_hours: Option<f64>,
    /// Manifests of the current snapshot and the small ones (`$manifests`).
    pub manifests: Option<u64>,
    pub small_manifests: Option<u64>,
    /// Metadata files in the metadata log (`$metadata_log_entries`).
    pub metadata_files: Option<u64>,
    /// RFC 3339 with milliseconds, UTC.
    pub last_compaction_at: Option<String>,
    /// Hours between the last compaction and `now`, to two decimals.
    pub last_compaction_age_hours: Option<f64>,
    pub last_write_at: Option<String>,
    pub oldest_snapshot_at: Option<String>,
    pub maintenance_dag: Option<DagRecord>,
    /// Why the table could not be read.
    pub error: Option<String>,
    pub findings: Vec<Finding>,
}

/// The maintenance DAG of a table, as the table record names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DagRecord {
    pub dag_id: String,
    pub guessed: bool,
    pub last_run_state: Option<String>,
}

impl DagRecord {
    pub fn new(d: &DagFacts) -> DagRecord {
        DagRecord {
            dag_id: d.dag_id.clone(),
            guessed: d.guessed,
            last_run_state: d.last_run_state.as_ref().map(|s| s.to_string()),
        }
    }
}

impl TableRecord {
    /// A table's record from its stats (if read) and its verdict; ages are taken at `now`.
    /// `maintenance_dag` and `error` start empty.
    pub fn new(
        table: &TableRef,
        stats: Option<&TableStats>,
        health: &Health,
        now: DateTime<Utc>,
    ) -> TableRecord {
        let n = |f: fn(&TableStats) -> u64| stats.map(f);
        let at = |f: fn(&TableStats) -> Option<DateTime<Utc>>| timestamp(stats.and_then(f));
        TableRecord {
            catalog: table.catalog.clone(),
            schema: table.schema.clone(),
            table: table.table.clone(),
            // (read stats know their format; a postmortem's record has no report's)
            format: stats.map(|s| s.format),
            status: health.status,
            score: health.score,
            data_files: n(|s| s.data_files),
            small_files: n(|s| s.small_files),
            total_bytes: n(|s| s.total_bytes),
            records: n(|s| s.records),
            partitions: n(|s| s.partitions),
            partitioned: stats.map(|s| s.partitioned),
            small_file_partitions: n(|s| s.small_file_partitions),
            snapshots: n(|s| s.snapshots),
            delete_files: n(|s| s.delete_files),
            position_delete_files: n(|s| s.position_delete_files),
            equality_delete_files: n(|s| s.equality_delete_files),
            large_files: n(|s| s.large_files),
            target_file_size: n(|s| s.target_file_size),
            small_files_waiting_since: at(|s| s.oldest_small_file_at),
            small_files_waiting_hours: age_hours(now, stats.and_then(|s| s.oldest_small_file_at)),
            manifests: stats.and_then(|s| s.manifests),
            small_manifests: stats.and_then(|s| s.small_manifests),
            metadata_files: stats.and_then(|s| s.metadata_files),
            last_compaction_at: at(|s| s.last_compaction),
            last_compaction_age_hours: age_hours(now, stats.and_then(|s| s.last_compaction)),
            last_write_at: at(|s| s.last_write),
            oldest_snapshot_at: at(|s| s.oldest_snapshot),
            maintenance_dag: None,
            error: None,
            findings: health.findings.clone(),
        }
    }

    /// The record of one table of a `floe check` report.
    pub fn from_report(t: &TableReport, now: DateTime<Utc>) -> TableRecord {
        TableRecord {
            maintenance_dag: t.dag.as_ref().map(DagRecord::new),
            error: t.error.clone(),
            format: t.format.or(t.stats.as_ref().map(|s| s.format)),
            ..TableRecord::new(&t.table, t.stats.as_ref(), &t.health, now)
        }
    }
}

/// A report timestamp: RFC 3339 with milliseconds, UTC.
pub fn timestamp(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// Hours from `t` to `now` (never negative), to two decimals.
fn age_hours(now: DateTime<Utc>, t: Option<DateTime<Utc>>) -> Option<f64> {
    t.map(|t| ((now - t).num_milliseconds().max(0) as f64 / 3_600_000.0 * 100.0).round() / 100.0)
}
