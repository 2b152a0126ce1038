//! The rules of one table, a finding each: small files, compaction staleness (and what the
//! table's maintenance DAG says about it), delete files, metadata, large files.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{DagFacts, Finding, HealthConfig, Rule, Severity, age, clip, excess_files, pct};
use crate::airflow::DagRunState;
use crate::fmt::{human_bytes, human_duration, thousands};
use crate::lakehouse::model::TableStats;

/// Why an age that would be CRITICAL is a WARNING: the small files cost a reader little.
const CAPPED: &str = "; a WARNING while its small files cost a reader little";

/// What a table's small files cost a reader, which sets how severe they and the findings
/// that follow them (staleness, the DAG correlations) are.
pub(super) struct SmallFileCost {
    /// At least `min_small_files` small files.
    enough_small: bool,
    /// A partition holds two small files or more: a compaction has something to merge.
    mergeable: bool,
    /// Files a reader opens beyond what the bytes need (at most the small files).
    excess: u64,
    /// Enough small files, and over a critical limit: a reader pays for them.
    costly: bool,
}

impl SmallFileCost {
    pub(super) fn of(stats: &TableStats, cfg: &HealthConfig) -> SmallFileCost {
        let target = stats.target_file_size.max(1);
        let enough_small = stats.small_files >= cfg.min_small_files;
        // No partition holds two small files: a compaction has nothing left to merge (what
        // an optimize of an over-partitioned table leaves), so nothing waits for one.
        let mergeable = stats.max_partition_small_files.is_none_or(|m| m >= 2);
        // Small files (table level; partitions counted in the same aggregate). What a
        // reader pays for them sets the severity; staleness and the DAG correlations
        // follow it.
        let excess =
            excess_files(stats.data_files, stats.total_bytes, target).min(stats.small_files);
        let costly =
            enough_small && (excess >= cfg.critical_small_files || stats.critical_partitions > 0);
        SmallFileCost {
            enough_small,
            mergeable,
            excess,
            costly,
        }
    }

    /// A verdict that would be CRITICAL by age alone stays a WARNING while a reader pays
    /// little.
    fn capped(&self, s: Severity) -> Severity {
        if s == Severity::Critical && !self.costly {
            Severity::Warning
        } else {
            s
        }
    }
}

/// The small files, when there are enough of them to matter.
pub(super) fn small_files_finding(
    stats: &TableStats,
    cfg: &HealthConfig,
    cost: &SmallFileCost,
) -> Option<Finding> {
    if !cost.enough_small {
        return None;
    }
    let target = stats.target_file_size.max(1);
    let threshold = cfg.small_threshold(target);
    let mergeable = cost.mergeable;
    let avg = stats.avg_file_size().unwrap_or(0);
    let warning = stats.small_file_partitions > 0 || avg < threshold;
    let target_src = if stats.target_from_property {
        "table property"
    } else {
        "default"
    };
    let mut msg = format!(
        "{} of {} data files are small (< {}, {} of the {} target, {target_src}); average file {}, {} in all",
        thousands(stats.small_files),
        thousands(stats.data_files),
        human_bytes(threshold),
        pct(threshold, target),
        human_bytes(target),
        human_bytes(avg),
        human_bytes(stats.total_bytes),
    );
    if stats.partitioned {
        msg.push_str(&format!(
            "; {} of {} partitions hold ≥ {} small files",
            thousands(stats.small_file_partitions),
            thousands(stats.partitions),
            cfg.min_small_files
        ));
        if stats.small_file_partitions == 0 && stats.partitions > 1 {
            msg.push_str(" (spread thin: over-partitioned)");
        }
    }
    let bar = format!(
        "CRITICAL from {} files more than the bytes need, or {} in one partition",
        thousands(cfg.critical_small_files),
        thousands(cfg.critical_partition_small_files)
    );
    let (severity, penalty) = if !mergeable {
        msg.push_str(" — no partition holds two of them: a compaction has nothing to merge");
        (Severity::Info, 0)
    } else if cost.costly {
        if cost.excess >= cfg.critical_small_files {
            msg.push_str(&format!(
                " — CRITICAL: a reader opens {} files where {} would hold the {}",
                thousands(stats.data_files),
                thousands(stats.data_files - cost.excess),
                human_bytes(stats.total_bytes)
            ));
        } else {
            msg.push_str(&format!(
                " — CRITICAL: {} partition{} hold{} ≥ {} small files more than {} bytes need",
                thousands(stats.critical_partitions),
                if stats.critical_partitions == 1 {
                    ""
                } else {
                    "s"
                },
                if stats.critical_partitions == 1 {
                    "s"
                } else {
                    ""
                },
                thousands(cfg.critical_partition_small_files),
                if stats.critical_partitions == 1 {
                    "its"
                } else {
                    "their"
                },
            ));
        }
        (Severity::Critical, 40)
    } else if warning {
        msg.push_str(&format!(
            " — {} small files: WARNING, worth compacting; {bar}",
            thousands(stats.small_files)
        ));
        (Severity::Warning, 20)
    } else {
        (Severity::Info, 0)
    };
    Some(Finding {
        rule: Rule::SmallFiles,
        severity,
        message: msg,
        penalty,
    })
}

/// Compaction staleness: only while small files matter, a compaction could merge them,
/// and the table changed since.
pub(super) fn staleness_finding(
    stats: &TableStats,
    cfg: &HealthConfig,
    now: DateTime<Utc>,
    cost: &SmallFileCost,
) -> Option<Finding> {
    if !(cost.enough_small && cost.mergeable) {
        return None;
    }
    match stats.last_compaction {
        None => {
            let severity = cost.capped(Severity::Critical);
            Some(Finding {
                rule: Rule::NeverCompacted,
                severity,
                message: format!(
                    "never compacted, with {} small files{}{}",
                    thousands(stats.small_files),
                    stats
                        .oldest_snapshot
                        .map(|t| format!("; written since {} ago", human_duration(age(now, t))))
                        .unwrap_or_default(),
                    if severity == Severity::Critical {
                        ""
                    } else {
                        CAPPED
                    }
                ),
                penalty: if severity == Severity::Critical {
                    30
                } else {
                    15
                },
            })
        }
        Some(last) => {
            let mut f = stale_finding(stats, last, cfg, now)?;
            if cost.capped(f.severity) != f.severity {
                f.severity = Severity::Warning;
                f.penalty = 15;
                f.message.push_str(CAPPED);
            }
            Some(f)
        }
    }
}

/// What the maintenance DAG `d` says about a compaction the `findings` call stale.
pub(super) fn stale_dag_finding(
    d: &DagFacts,
    findings: &[Finding],
    cost: &SmallFileCost,
    now: DateTime<Utc>,
) -> Option<Finding> {
    let stale = findings.iter().any(|f| {
        matches!(f.rule, Rule::CompactionStale | Rule::NeverCompacted)
            && f.severity >= Severity::Warning
    });
    if !stale {
        return None;
    }
    // As critical as what the stale compaction costs a reader.
    let severity = cost.capped(Severity::Critical);
    let guessed = if d.guessed { " (guessed mapping)" } else { "" };
    let last = d.last_run_state.as_ref();
    if let Some(e) = &d.import_error {
        Some(Finding {
            rule: Rule::StaleDagBroken,
            severity,
            message: format!(
                "compaction stale and its DAG {}{guessed} does not import: {e}",
                d.dag_id
            ),
            penalty: 0,
        })
    } else if d.paused {
        Some(Finding {
            rule: Rule::StaleDagPaused,
            severity,
            message: format!(
                "compaction stale and its DAG {}{guessed} is paused",
                d.dag_id
            ),
            penalty: 0,
        })
    } else if last == Some(&DagRunState::Failed) {
        let what = match (&d.failing_task, &d.error_line) {
            (Some(t), Some(e)) => format!(": {t}: {}", clip(e)),
            (Some(t), None) => format!(": task {t} failed"),
            _ => String::new(),
        };
        Some(Finding {
            rule: Rule::StaleDagFailing,
            severity,
            message: format!(
                "compaction stale and its DAG {}{guessed} is failing{what}",
                d.dag_id
            ),
            penalty: 0,
        })
    } else if last == Some(&DagRunState::Success) {
        Some(Finding {
            rule: Rule::StaleDagSucceeds,
            severity,
            message: format!(
                "compaction stale although its DAG {}{guessed} reports success{}: the DAG does not compact (a swallowed error?)",
                d.dag_id,
                d.last_success_at
                    .map(|t| format!(" ({} ago)", human_duration(age(now, t))))
                    .unwrap_or_default()
            ),
            penalty: 0,
        })
    } else {
        None
    }
}

/// The severity of an age against the staleness limits.
fn stale_level(a: i64, cfg: &HealthConfig) -> Option<(Severity, u32, Duration)> {
    if a >= cfg.compaction_critical.as_secs() as i64 {
        Some((Severity::Critical, 30, cfg.compaction_critical))
    } else if a >= cfg.compaction_warn.as_secs() as i64 {
        Some((Severity::Warning, 15, cfg.compaction_warn))
    } else {
        None
    }
}

/// Compaction staleness of a table compacted at least once. With `$entries` it is what
/// still waits: the age of the oldest live small data file, which a partial optimize does
/// not reset. Without it, the age of the newest compaction when the table was written since.
fn stale_finding(
    stats: &TableStats,
    last: DateTime<Utc>,
    cfg: &HealthConfig,
    now: DateTime<Utc>,
) -> Option<Finding> {
    let mut msg = if let Some(waiting) = stats.oldest_small_file_at {
        let a = age(now, waiting);
        // The snapshot that added the file expired: it has waited at least `a`.
        let bound = if stats.oldest_small_is_lower_bound {
            "at least "
        } else {
            ""
        };
        let Some((severity, penalty, limit)) = stale_level(a, cfg) else {
            if stats.oldest_small_is_lower_bound && stats.small_files > 0 {
                // Not stale by what is known, but what is known is a lower bound: a
                // retention shorter than compaction_warn must not make it look fresh.
                return Some(Finding {
                    rule: Rule::CompactionAgeUnknown,
                    severity: Severity::Info,
                    message: format!(
                        "small files waiting since at least {}: the snapshot that added them has expired, so their real age is unknown (the snapshot retention is shorter than compaction_warn {})",
                        human_duration(a),
                        human_duration(cfg.compaction_warn.as_secs() as i64)
                    ),
                    penalty: 0,
                });
            }
            return None;
        };
        let msg = format!(
            "small files waiting since {bound}{} (over {}); last compaction {} ago, {} writes since",
            human_duration(a),
            human_duration(limit.as_secs() as i64),
            human_duration(age(now, last)),
            stats.writes_since_compaction
        );
        (msg, severity, penalty)
    } else {
        if stats.last_write.is_none_or(|w| w <= last) {
            return None;
        }
        let a = age(now, last);
        let (severity, penalty, limit) = stale_level(a, cfg)?;
        let msg = format!(
            "last compaction {} ago (over {}), {} writes since",
            human_duration(a),
            human_duration(limit.as_secs() as i64),
            stats.writes_since_compaction
        );
        (msg, severity, penalty)
    };
    if let Some(after) = stats.files_after_compaction
        && stats.data_files > after
    {
        msg.0.push_str(&format!(
            "; data files grew from {} to {}",
            thousands(after),
            thousands(stats.data_files)
        ));
    }
    Some(Finding {
        rule: Rule::CompactionStale,
        severity: msg.1,
        message: msg.0,
        penalty: msg.2,
    })
}

/// Merge-on-read delete files: position and equality deletes apart, weighed against the
/// data files and rows they burden; equality deletes weigh `equality_delete_weight` times.
pub(super) fn delete_finding(stats: &TableStats, cfg: &HealthConfig) -> Option<Finding> {
    if let Some(n) = stats.deletion_vector_removals.filter(|n| *n > 0) {
        // A Delta table's deletion vectors: Trino does not say how many, nor what they
        // mark; its history says which commits wrote them.
        return Some(Finding {
            rule: Rule::DeleteFiles,
            severity: Severity::Info,
            message: format!(
                "deletion vectors on: {} DELETE/MERGE/UPDATE commit{} since the last OPTIMIZE \
                 marked rows removed; reads filter them until an OPTIMIZE rewrites those files",
                thousands(n),
                if n == 1 { "" } else { "s" }
            ),
            penalty: 0,
        });
    }
    if stats.delete_files == 0 {
        return None;
    }
    let eq = stats.equality_delete_files.min(stats.delete_files);
    let pos = stats.delete_files - eq;
    let w = cfg.equality_delete_weight;
    let file_ratio = (pos as f64 + w * eq as f64) / stats.data_files.max(1) as f64;
    let deleted = stats.position_deletes as f64 + w * stats.equality_deletes as f64;
    let record_ratio = deleted / stats.records.max(1) as f64;
    let level = |ratio: f64, warn: f64, crit: f64| {
        if ratio >= crit {
            2
        } else if ratio >= warn {
            1
        } else {
            0
        }
    };
    let worst = level(
        file_ratio,
        cfg.delete_file_ratio_warn,
        cfg.delete_file_ratio_critical,
    )
    .max(level(
        record_ratio,
        cfg.delete_record_ratio_warn,
        cfg.delete_record_ratio_critical,
    ));
    let (severity, penalty) = match worst {
        2 => (Severity::Critical, 20),
        1 => (Severity::Warning, 10),
        _ => (Severity::Info, 0),
    };
    let mut msg = if eq == 0 && stats.position_delete_files == 0 {
        // The split is unknown (facts from an older reader).
        format!(
            "{} delete files for {} data files ({:.0}%)",
            thousands(stats.delete_files),
            thousands(stats.data_files),
            file_ratio * 100.0
        )
    } else {
        format!(
            "{} position and {} equality delete files for {} data files ({:.0}%{})",
            thousands(pos),
            thousands(eq),
            thousands(stats.data_files),
            file_ratio * 100.0,
            if eq > 0 {
                format!(", equality deletes weighted ×{w}")
            } else {
                String::new()
            }
        )
    };
    if deleted > 0.0 {
        msg.push_str(&format!(
            "; {} deleted rows and {} equality keys over {} rows ({:.1}%)",
            thousands(stats.position_deletes),
            thousands(stats.equality_deletes),
            thousands(stats.records),
            record_ratio * 100.0
        ));
    }
    msg.push_str("; reads merge them until compaction");
    Some(Finding {
        rule: Rule::DeleteFiles,
        severity,
        message: msg,
        penalty,
    })
}

/// Manifests (`$manifests`) and metadata files (`$metadata_log_entries`), when the server
/// has them.
pub(super) fn metadata_findings(stats: &TableStats, cfg: &HealthConfig) -> Vec<Finding> {
    let mut out = Vec::new();
    if let (Some(total), Some(small)) = (stats.manifests, stats.small_manifests)
        && (small > cfg.max_small_manifests || total >= cfg.critical_manifests)
    {
        let critical = total >= cfg.critical_manifests;
        out.push(Finding {
            rule: Rule::Manifests,
            severity: if critical {
                Severity::Critical
            } else {
                Severity::Warning
            },
            message: format!(
                "{} manifests, {} small (< {}; over {}){}: every query plans through them; run optimize_manifests{}",
                thousands(total),
                thousands(small),
                human_bytes(cfg.small_manifest_size),
                thousands(cfg.max_small_manifests),
                stats
                    .manifest_bytes
                    .map(|b| format!(", {} in all", human_bytes(b)))
                    .unwrap_or_default(),
                if critical {
                    format!(
                        " — CRITICAL from {} manifests",
                        thousands(cfg.critical_manifests)
                    )
                } else {
                    String::new()
                }
            ),
            penalty: if critical { 15 } else { 5 },
        });
    }
    if let Some(n) = stats.metadata_files
        && n > cfg.max_metadata_files
    {
        out.push(Finding {
            rule: Rule::MetadataFiles,
            severity: Severity::Warning,
            message: format!(
                "{} metadata files in the log (over {}): old metadata is not cleaned up (write.metadata.delete-after-commit.enabled, write.metadata.previous-versions-max)",
                thousands(n),
                thousands(cfg.max_metadata_files)
            ),
            penalty: 5,
        });
    }
    out
}

/// Data files far over the target: over-compaction, or a target below what the writers
/// produce (Trino writes up to its own `target_max_file_size`). Informational.
pub(super) fn large_files_finding(stats: &TableStats, cfg: &HealthConfig) -> Option<Finding> {
    if stats.large_files == 0 {
        return None;
    }
    let target = stats.target_file_size.max(1);
    Some(Finding {
        rule: Rule::LargeFiles,
        severity: Severity::Info,
        message: format!(
            "{} of {} data files are over {:.1} × the {} target ({}): over-compacted, or the target is set below what the writers produce",
            thousands(stats.large_files),
            thousands(stats.data_files),
            cfg.large_file_ratio,
            human_bytes(target),
            human_bytes((target as f64 * cfg.large_file_ratio) as u64)
        ),
        penalty: 0,
    })
}
