//! The health rules' thresholds as a profile's `[health]` section sets them: settings,
//! read and checked here; the rules (`crate::health`) judge with them and give the
//! lakehouse's reads what they need of them (`HealthConfig::scan`).

use std::time::Duration;

#[derive(Clone, Debug, PartialEq)]
pub struct HealthConfig {
    /// Default target file size (bytes) when the table sets no `write.target-file-size-bytes`.
    pub target_file_size: u64,
    /// A data file is small below `small_file_ratio` × target.
    pub small_file_ratio: f64,
    /// Small files a partition (or a table) needs before it counts.
    pub min_small_files: u64,
    /// Small files turn CRITICAL once a reader of the table opens this many more files than
    /// its bytes need (files − ⌈bytes / target⌉): below it they are a WARNING, worth a
    /// compaction, not an emergency. Staleness and the DAG correlations follow.
    pub critical_small_files: u64,
    /// …or once one partition holds this many small files more than its bytes need: a
    /// reader of that partition alone pays for them.
    pub critical_partition_small_files: u64,
    pub compaction_warn: Duration,
    pub compaction_critical: Duration,
    pub snapshot_retention: Duration,
    pub max_snapshots: u64,
    /// Snapshots past retention stay INFO until this many could be expired…
    pub expirable_snapshots_warn: u64,
    /// …or they pin this many data files the table no longer uses.
    pub pinned_files_warn: u64,
    /// Delete files per data file (equality deletes weighted by `equality_delete_weight`).
    pub delete_file_ratio_warn: f64,
    pub delete_file_ratio_critical: f64,
    /// How much more an equality delete file costs a read than a position delete file.
    pub equality_delete_weight: f64,
    /// Deleted rows (position deletes, equality delete keys weighted) per data row.
    pub delete_record_ratio_warn: f64,
    pub delete_record_ratio_critical: f64,
    /// A data file is large above `large_file_ratio` × target (over-compaction, or a
    /// target set below what the writers produce).
    pub large_file_ratio: f64,
    /// A manifest is small below this many bytes.
    pub small_manifest_size: u64,
    /// More small manifests than this slow every query's planning: `optimize_manifests`.
    pub max_small_manifests: u64,
    /// From this many manifests (small or not) the planning of every query reads so much
    /// metadata that the finding is CRITICAL.
    pub critical_manifests: u64,
    /// More metadata files than this in the metadata log: old ones are not cleaned up.
    pub max_metadata_files: u64,
    /// How often a maintenance DAG is expected to succeed when its mapping says nothing.
    pub dag_interval: Duration,
    /// An optimize expected to take longer than this is offered incrementally too.
    pub incremental_over: Duration,
    /// The share of the small files the first part of an incremental optimize holds.
    pub incremental_share: f64,
    /// Snapshots whose `total-data-files` the health statement returns one by one (the
    /// newest); the older ones travel as one summary
    /// ([`TrendTail`](crate::lakehouse::model::TrendTail)), so a table with a
    /// million snapshots is still one small row and keeps its verdict.
    pub trend_limit: u64,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            target_file_size: 128 << 20,
            small_file_ratio: 0.75,
            min_small_files: 12,
            critical_small_files: 1000,
            critical_partition_small_files: 100,
            compaction_warn: Duration::from_secs(36 * 3600),
            compaction_critical: Duration::from_secs(48 * 3600),
            snapshot_retention: Duration::from_secs(7 * 86_400),
            max_snapshots: 500,
            expirable_snapshots_warn: 100,
            pinned_files_warn: 1000,
            delete_file_ratio_warn: 0.10,
            delete_file_ratio_critical: 0.50,
            equality_delete_weight: 4.0,
            delete_record_ratio_warn: 0.05,
            delete_record_ratio_critical: 0.25,
            large_file_ratio: 1.8,
            small_manifest_size: 4 << 20,
            max_small_manifests: 100,
            critical_manifests: 1000,
            max_metadata_files: 200,
            dag_interval: Duration::from_secs(86_400),
            incremental_over: Duration::from_secs(30 * 60),
            incremental_share: 0.5,
            trend_limit: 1000,
        }
    }
}
