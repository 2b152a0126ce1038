//! A table as an incident shows it: what its trouble costs, in a few words.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Next, TableFacts};
use crate::fmt::{human_duration, thousands};
use crate::health::{Finding, Health, Rule, Severity};
use crate::lakehouse::model::{TableRef, TableStats};

/// A table an incident affects, with what it costs in a few words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Affected {
    pub table: TableRef,
    /// The table's name as the line shows it (`documents`, or `zoning.documents` when
    /// two schemas hold a `documents`).
    pub name: String,
    pub severity: Severity,
    /// `2,004 small files, compacted 15d ago`.
    pub summary: String,
    /// What the worst query that read it suffered (the coordinator's record), when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suffered: Option<String>,
    #[serde(skip)]
    pub(super) small_files: u64,
    /// Some partition holds two small files or more: optimize has something to merge.
    #[serde(skip)]
    mergeable: bool,
    /// Who else rewrites it now (`compact_documents, 40 %`), when floe read that one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<String>,
}

/// The table action for an affected table: none while another write rewrites it (the
/// compaction running, said); optimize when it has something to merge; else (every
/// partition holds one small file at most) the findings, which say the partitioning is the
/// fix: a next action is one floe carries out.
pub(super) fn optimize_next(a: &Affected) -> Next {
    if let Some(by) = &a.running {
        // A compaction is under way: a second would race it to the commit.
        return Next::CompactionRunning {
            table: a.table.clone(),
            by: by.clone(),
        };
    }
    if a.mergeable {
        Next::Optimize {
            table: a.table.clone(),
        }
    } else {
        Next::Inspect
    }
}

/// The age of what waits for compaction, in words: `waiting 15d` (the oldest live small
/// file, where the server has `$entries`), else `compacted 15d ago`, or `never
/// compacted (20d of writes)`.
fn waiting(stats: &TableStats, now: DateTime<Utc>) -> String {
    let age = |t: DateTime<Utc>| human_duration((now - t).num_seconds().max(0));
    if let Some(t) = stats.oldest_small_file_at {
        return format!("waiting {}", age(t));
    }
    match (stats.last_compaction, stats.oldest_snapshot) {
        (Some(t), _) => format!("compacted {} ago", age(t)),
        (None, Some(t)) => format!("never compacted ({} of writes)", age(t)),
        (None, None) => "never compacted".into(),
    }
}

fn worst_finding(h: &Health) -> Option<&Finding> {
    h.findings
        .iter()
        .filter(|f| f.severity > Severity::Info)
        .max_by_key(|f| (f.severity.rank(), f.penalty))
}

pub(super) fn status_of(t: &TableFacts) -> Severity {
    if t.error.is_some() {
        return Severity::Unknown;
    }
    t.health.map(|h| h.status).unwrap_or(Severity::Ok)
}

pub(super) fn has_rule(t: &TableFacts, rules: &[Rule]) -> bool {
    t.health.is_some_and(|h| {
        h.findings
            .iter()
            .any(|f| rules.contains(&f.rule) && f.severity > Severity::Info)
    })
}

/// The worst severity of `rule`'s findings over `tables` (OK when none has it).
pub(super) fn rule_severity(tables: &[&TableFacts], rule: Rule) -> Severity {
    tables
        .iter()
        .filter_map(|t| t.health)
        .flat_map(|h| &h.findings)
        .filter(|f| f.rule == rule)
        .map(|f| f.severity)
        .max_by_key(|s| s.rank())
        .unwrap_or(Severity::Ok)
}

/// What the table's trouble costs, in a few words.
pub(super) fn affected(t: &TableFacts, name: String, now: DateTime<Utc>) -> Affected {
    let severity = status_of(t);
    let small = t.stats.map(|s| s.small_files).unwrap_or(0);
    let summary = match (t.error, t.stats, t.health) {
        (Some(e), _, _) => format!("not read: {}", crate::text::clip(e, 120)),
        (None, Some(s), _) if has_rule(t, &Rule::COMPACTION) => format!(
            "{} small files, {}",
            thousands(s.small_files),
            waiting(s, now)
        ),
        (None, Some(s), _) if has_rule(t, &[Rule::SnapshotBloat]) => {
            let mut m = format!("{} snapshots", thousands(s.snapshots));
            if let Some(o) = s.oldest_snapshot {
                m.push_str(&format!(
                    ", oldest {}",
                    human_duration((now - o).num_seconds().max(0))
                ));
            }
            m
        }
        (None, _, Some(h)) => match worst_finding(h) {
            Some(f) => format!("{}: {}", f.rule, crate::text::clip(&f.message, 120)),
            None => "no finding above INFO".into(),
        },
        _ => "not read yet".into(),
    };
    let mergeable = t
        .stats
        .and_then(|s| s.max_partition_small_files)
        .is_none_or(|m| m >= 2);
    Affected {
        table: t.table.clone(),
        name,
        severity,
        summary,
        suffered: t.suffered.map(str::to_string),
        small_files: small,
        mergeable,
        running: t.running.map(str::to_string),
    }
}

/// Worst first: by severity, then the most small files, then by name.
pub(super) fn sort_affected(v: &mut [Affected]) {
    v.sort_by(|a, b| {
        b.severity
            .rank()
            .cmp(&a.severity.rank())
            .then(b.small_files.cmp(&a.small_files))
            .then(a.table.cmp(&b.table))
    });
}

/// The evidence lines of a table: its findings above INFO, the correlation ones left out
/// (the incident's cause says them).
pub(super) fn table_evidence(name: &str, t: &TableFacts) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(e) = t.error {
        out.push(format!("{name}: not read: {e}"));
    }
    if let Some(h) = t.health {
        for f in &h.findings {
            if f.severity > Severity::Info && !f.rule.is_dag_correlation() {
                out.push(format!("{name}: [{}] {}", f.severity.short(), f.message));
            }
        }
    }
    out
}
