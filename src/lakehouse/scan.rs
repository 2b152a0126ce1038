//! What the lakehouse's reads need of the verdicts they serve: the lines the statements
//! count against (the small- and large-file lines, the partitions that count, the small
//! manifests) and how much of the snapshot trend travels. The health rules own the
//! thresholds (`crate::config::HealthConfig`) and give the reads these
//! (`HealthConfig::scan`); the lakehouse never judges, it counts.

/// The parameters of a scan, in the health rules' units.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanParams {
    /// The target file size (bytes) of a table that sets no `write.target-file-size-bytes`.
    pub target_file_size: u64,
    /// A data file is small below `small_file_ratio` × target.
    pub small_file_ratio: f64,
    /// A data file is large above `large_file_ratio` × target.
    pub large_file_ratio: f64,
    /// Small files a partition (or a table) needs before it counts.
    pub min_small_files: u64,
    /// Small files more than its bytes need that make one partition count as critical.
    pub critical_partition_small_files: u64,
    /// A manifest is small below this many bytes.
    pub small_manifest_size: u64,
    /// Small manifests a table may hold before they count (a table that cannot hold more
    /// needs no read of them).
    pub max_small_manifests: u64,
    /// Snapshots whose `total-data-files` travel one by one (the newest); the older ones
    /// as one summary.
    pub trend_limit: u64,
    /// The age past which the small files' wait is critical (`compaction_critical`): a
    /// wait known to be at least that long needs no read of its exact start, since no
    /// later reading can lower its severity.
    pub stale_critical: std::time::Duration,
}

impl ScanParams {
    /// The small-file line at `target` bytes per file.
    pub fn small_threshold(&self, target: u64) -> u64 {
        (target as f64 * self.small_file_ratio).floor() as u64
    }

    /// The small-file line at `target` bytes per file as an integer a file size compares
    /// with exactly: a file is small when its size is below it (`size < target × ratio`).
    pub fn small_line(&self, target: u64) -> u64 {
        (target.max(1) as f64 * self.small_file_ratio).ceil() as u64
    }
}

/// Files a reader opens beyond what `bytes` need at `target` per file: the cost small
/// files put on every scan (`files − ⌈bytes / target⌉`).
pub fn excess_files(files: u64, bytes: u64, target: u64) -> u64 {
    files.saturating_sub(bytes.div_ceil(target.max(1)))
}
