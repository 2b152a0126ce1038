//! Health rules: pure functions from facts to verdicts. Each finding carries its rule id,
//! severity and a human reason; a 0-100 score is 100 minus the penalties of the findings.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::fmt::{human_duration, thousands};
use crate::lakehouse::model::{PartitionStats, TableStats};

pub mod airflow;
mod dag;
mod findings;
pub mod incidents;
pub mod mapping;
mod rule;

/// What was read of a table's maintenance DAG: the Airflow layer's reduction of its runs
/// (`airflow::facts`), which the rules judge.
pub use crate::airflow::facts::DagFacts;
pub use dag::{dag_findings, evaluate_dag};
use findings::{
    SmallFileCost, delete_finding, large_files_finding, metadata_findings, small_files_finding,
    stale_dag_finding, staleness_finding,
};
pub use rule::Rule;

/// The rules' thresholds: settings (`[health]` of a profile), read by `config`.
pub use crate::config::HealthConfig;

use crate::lakehouse::scan::ScanParams;
pub use crate::lakehouse::scan::excess_files;

impl HealthConfig {
    /// What the lakehouse's reads need of these thresholds (see [`ScanParams`]).
    pub fn scan(&self) -> ScanParams {
        ScanParams {
            target_file_size: self.target_file_size,
            small_file_ratio: self.small_file_ratio,
            large_file_ratio: self.large_file_ratio,
            min_small_files: self.min_small_files,
            critical_partition_small_files: self.critical_partition_small_files,
            small_manifest_size: self.small_manifest_size,
            max_small_manifests: self.max_small_manifests.min(self.critical_manifests),
            trend_limit: self.trend_limit,
            stale_critical: self.compaction_critical,
        }
    }

    /// Files below this many bytes are small, for a table whose target is `target` (the
    /// scan's line: the rules and the reads draw it alike).
    pub fn small_threshold(&self, target: u64) -> u64 {
        self.scan().small_threshold(target)
    }
}

impl From<HealthConfig> for ScanParams {
    fn from(h: HealthConfig) -> ScanParams {
        h.scan()
    }
}

impl Default for ScanParams {
    /// The scan of the default thresholds.
    fn default() -> ScanParams {
        HealthConfig::default().scan()
    }
}

/// Severity of one partition by the rules: a small-file partition holds at least
/// `min_small_files` small files (WARNING); CRITICAL when it also holds
/// `critical_partition_small_files` small files more than its bytes need.
pub fn partition_severity(p: &PartitionStats, target: u64, cfg: &HealthConfig) -> Severity {
    if p.small_files < cfg.min_small_files {
        Severity::Ok
    } else if p.small_files >= cfg.critical_partition_small_files
        && excess_files(p.data_files, p.total_bytes, target) >= cfg.critical_partition_small_files
    {
        Severity::Critical
    } else {
        Severity::Warning
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    Ok,
    Info,
    Warning,
    Critical,
    Unknown,
}

impl Severity {
    /// The text label (readable without colour).
    pub fn label(self) -> &'static str {
        match self {
            Severity::Ok => "OK",
            Severity::Info => "INFO",
            Severity::Warning => "WARNING",
            Severity::Critical => "CRITICAL",
            Severity::Unknown => "UNKNOWN",
        }
    }

    /// Short label for narrow columns.
    pub fn short(self) -> &'static str {
        match self {
            Severity::Ok => "OK",
            Severity::Info => "INFO",
            Severity::Warning => "WARN",
            Severity::Critical => "CRIT",
            Severity::Unknown => "UNKN",
        }
    }

    /// Nagios plugin exit code.
    pub fn exit_code(self) -> i32 {
        match self {
            Severity::Ok | Severity::Info => 0,
            Severity::Warning => 1,
            Severity::Critical => 2,
            Severity::Unknown => 3,
        }
    }

    /// Order for "worst first": Critical, Unknown, Warning, Info, Ok.
    pub fn rank(self) -> u8 {
        match self {
            Severity::Critical => 4,
            Severity::Unknown => 3,
            Severity::Warning => 2,
            Severity::Info => 1,
            Severity::Ok => 0,
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub rule: Rule,
    pub severity: Severity,
    pub message: String,
    /// Points taken off the score.
    pub penalty: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Health {
    pub status: Severity,
    pub score: u32,
    pub findings: Vec<Finding>,
}

impl Health {
    /// Small files wait for a compaction: a compaction finding above INFO (enough small
    /// files, two or more in a partition to merge). What is said of a table's small files
    /// after a compaction (the watch's line, the `i` popup) follows this one answer.
    pub fn waits_for_compaction(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.rule.waits_for_compaction() && f.severity > Severity::Info)
    }

    fn from_findings(mut findings: Vec<Finding>) -> Health {
        findings.sort_by(|a, b| {
            b.severity
                .rank()
                .cmp(&a.severity.rank())
                .then(b.penalty.cmp(&a.penalty))
        });
        let penalty: u32 = findings.iter().map(|f| f.penalty).sum();
        let status = findings
            .iter()
            .map(|f| f.severity)
            .filter(|s| *s != Severity::Info)
            .max_by_key(|s| s.rank())
            .unwrap_or(Severity::Ok);
        Health {
            status,
            score: 100u32.saturating_sub(penalty),
            findings,
        }
    }
}

fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".into()
    } else {
        format!("{:.0}%", part as f64 * 100.0 / whole as f64)
    }
}

fn age(now: DateTime<Utc>, t: DateTime<Utc>) -> i64 {
    (now - t).num_seconds().max(0)
}

/// An error line short enough for a finding (the whole line is in the DAGs tab's log).
fn clip(e: &str) -> String {
    const MAX: usize = 240;
    if e.chars().count() <= MAX {
        return e.to_string();
    }
    format!("{}…", e.chars().take(MAX).collect::<String>())
}

/// What the snapshots past retention cost, from the snapshot summaries the health
/// statement reads (`total-data-files` per snapshot, the trend).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetentionCost {
    /// Snapshots older than the retention, the current one aside: what
    /// `expire_snapshots` would remove.
    pub expirable: u64,
    /// Data files only those snapshots still reference (rewritten or deleted since), as
    /// the drops in `total-data-files` tell; a lower bound when writes also added files.
    pub pinned_files: u64,
}

/// The cost of the snapshots past retention, or `None` when the summaries carry no
/// `total-data-files` to weigh it with, or when the cutoff falls among the snapshots read
/// only as a summary ([`TableStats::trend_tail`]: more than `trend_limit` snapshots are
/// younger than the retention, and which of the rest are past it is not known).
pub fn retention_cost(
    stats: &TableStats,
    cfg: &HealthConfig,
    now: DateTime<Utc>,
) -> Option<RetentionCost> {
    if stats.trend.is_empty() {
        return None;
    }
    let retention =
        chrono::Duration::from_std(cfg.snapshot_retention).unwrap_or(chrono::Duration::MAX);
    let cutoff = now.checked_sub_signed(retention)?;
    // The tail's newest snapshot joins the sequence; the others are counted and their
    // drops summed, which is all the cost needs once all of them are past the cutoff.
    let mut seq = Vec::with_capacity(stats.trend.len() + 1);
    let (mut expirable, mut within) = (0u64, 0u64);
    if let Some(tail) = stats.trend_tail {
        if tail.newest >= cutoff {
            return stats
                .oldest_snapshot
                .is_some_and(|o| o >= cutoff)
                .then_some(RetentionCost {
                    expirable: 0,
                    pinned_files: 0,
                });
        }
        expirable = tail.snapshots.saturating_sub(1);
        within = tail.drops;
        seq.push((tail.newest, tail.last_files));
    }
    seq.extend_from_slice(&stats.trend);
    let last = seq.len() - 1;
    // The current snapshot is never expired, however old.
    let expirable_here = seq[..last].iter().filter(|(t, _)| *t < cutoff).count();
    if expirable_here == 0 {
        return Some(RetentionCost {
            expirable: 0,
            pinned_files: 0,
        });
    }
    expirable += expirable_here as u64;
    // Drops between two expirable snapshots are files only expirable ones hold; drops
    // after the newest expirable one count up to the files it held.
    let newest = expirable_here - 1;
    let drop = |i: usize| seq[i].1.saturating_sub(seq[i + 1].1);
    within += (0..newest).map(drop).sum::<u64>();
    let after: u64 = (newest..last).map(drop).sum();
    Some(RetentionCost {
        expirable,
        pinned_files: within + after.min(seq[newest].1),
    })
}

/// A Delta table keeps its versions by its log's own retention (no snapshot to expire);
/// what stays on storage is the files its OPTIMIZEs replaced, until a vacuum removes
/// them. INFO once the newest OPTIMIZE is past the retention: a vacuum would free what it
/// replaced. Trino's vacuum commits no version, so whether one ran since is not known.
fn delta_vacuum(stats: &TableStats, cfg: &HealthConfig, now: DateTime<Utc>) -> Option<Finding> {
    let at = stats.last_compaction?;
    let retention = cfg.snapshot_retention.as_secs() as i64;
    let old = age(now, at);
    if old <= retention {
        return None;
    }
    Some(Finding {
        rule: Rule::SnapshotBloat,
        severity: Severity::Info,
        message: format!(
            "{} versions; the files the OPTIMIZE of {} ago replaced are past the {} retention: \
             vacuum removes them (Trino's vacuum commits no version: whether one ran since is not known; \
             the Snapshots tab and the vacuum's plan read from the table's log what it deletes)",
            thousands(stats.snapshots),
            human_duration(old),
            human_duration(retention)
        ),
        penalty: 0,
    })
}

/// Snapshots past retention (or too many of them). What they cost sets the severity:
/// INFO while few snapshots could be expired and they pin few files (a healthy but
/// unmaintained small table is not a WARNING), WARNING once either is worth an
/// `expire_snapshots`, CRITICAL when they are also too many. Summaries without totals
/// leave the cost unknown: WARNING, as a retention breach always was.
fn snapshot_bloat(stats: &TableStats, cfg: &HealthConfig, now: DateTime<Utc>) -> Option<Finding> {
    if stats.format == crate::lakehouse::delta::TableFormat::Delta {
        return delta_vacuum(stats, cfg, now);
    }
    if stats.snapshots <= 1 {
        return None;
    }
    let oldest_age = stats.oldest_snapshot.map(|t| age(now, t)).unwrap_or(0);
    let past_retention = oldest_age > cfg.snapshot_retention.as_secs() as i64;
    let too_many = stats.snapshots > cfg.max_snapshots;
    if !past_retention && !too_many {
        return None;
    }
    let cost = retention_cost(stats, cfg, now);
    let worth = cost.is_none_or(|c| {
        c.expirable >= cfg.expirable_snapshots_warn || c.pinned_files >= cfg.pinned_files_warn
    });
    let severity = if past_retention && too_many {
        Severity::Critical
    } else if too_many || worth {
        Severity::Warning
    } else {
        Severity::Info
    };
    let mut msg = format!(
        "{} snapshots, oldest {} old",
        thousands(stats.snapshots),
        human_duration(oldest_age)
    );
    if past_retention {
        msg.push_str(&format!(
            " — beyond the {} retention: expire_snapshots is not running",
            human_duration(cfg.snapshot_retention.as_secs() as i64)
        ));
    }
    if too_many {
        msg.push_str(&format!(
            " — more than {} snapshots",
            thousands(cfg.max_snapshots)
        ));
    }
    if past_retention && let Some(c) = cost {
        msg.push_str(&format!(
            "; {} could be expired, pinning {} data files no longer live",
            thousands(c.expirable),
            thousands(c.pinned_files)
        ));
        if severity == Severity::Info {
            msg.push_str(&format!(
                " (worth an action from {} snapshots or {} files)",
                thousands(cfg.expirable_snapshots_warn),
                thousands(cfg.pinned_files_warn)
            ));
        }
    }
    Some(Finding {
        rule: Rule::SnapshotBloat,
        severity,
        message: msg,
        penalty: match severity {
            Severity::Critical => 20,
            Severity::Warning => 10,
            _ => 0,
        },
    })
}

/// Evaluate one table. `dag` is its maintenance DAG when one is known.
pub fn evaluate(
    stats: &TableStats,
    dag: Option<&DagFacts>,
    cfg: &HealthConfig,
    now: DateTime<Utc>,
) -> Health {
    let cost = SmallFileCost::of(stats, cfg);
    let mut out = Vec::new();
    if stats.is_empty_table() {
        out.push(Finding {
            rule: Rule::Empty,
            severity: Severity::Info,
            message: "empty: no snapshot has been committed".into(),
            penalty: 0,
        });
    }
    out.extend(small_files_finding(stats, cfg, &cost));
    out.extend(staleness_finding(stats, cfg, now, &cost));
    out.extend(snapshot_bloat(stats, cfg, now));
    // Delete files (merge-on-read).
    out.extend(delete_finding(stats, cfg));
    // Metadata: manifests and metadata files; files far over the target.
    out.extend(metadata_findings(stats, cfg));
    out.extend(large_files_finding(stats, cfg));
    // The correlation no single tool shows: the table's compaction is stale, and what its
    // maintenance DAG says about it. (The DAG's own findings are the DAG's verdict.)
    if let Some(d) = dag {
        let f = stale_dag_finding(d, &out, &cost, now);
        out.extend(f);
    }
    Health::from_findings(out)
}

#[cfg(test)]
mod tests;
