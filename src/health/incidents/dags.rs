//! DAGs as incidents word them: their causes and failure lines.

use chrono::{DateTime, Utc};

use super::{Jump, Kind, Next, TableFacts, has_rule, rule_severity};
use crate::fmt::human_duration;
use crate::health::{DagFacts, Rule, Severity};

/// ` (paused)` after a failing DAG's id when it is also paused.
pub(super) fn paused(d: &DagFacts) -> &'static str {
    if d.paused { " (paused)" } else { "" }
}

/// Unpausing comes first for the paused ones among failing DAGs.
pub(super) fn unpause<'a>(dags: impl IntoIterator<Item = &'a DagFacts>) -> Vec<Next> {
    dags.into_iter()
        .filter(|d| d.paused)
        .map(|d| Next::Unpause {
            dag_id: d.dag_id.clone(),
        })
        .collect()
}

pub(super) fn runs(n: u32) -> String {
    match n {
        0 | 1 => "last run failed".into(),
        n => format!("failing {n} runs"),
    }
}

/// What a DAG that is not failing has wrong, if anything: its kind, severity, cause and
/// first next actions. `mine` are the troubled tables it maintains.
pub(super) fn dag_cause(
    d: &DagFacts,
    mine: &[&TableFacts],
    now: DateTime<Utc>,
) -> Option<(Kind, Severity, String, Vec<Next>)> {
    let ago = |t: DateTime<Utc>| human_duration((now - t).num_seconds().max(0));
    let every = human_duration(d.expected_interval.as_secs() as i64);
    let dag_id = d.dag_id.clone();
    Some(if let Some(e) = &d.import_error {
        (
            Kind::ImportError,
            Severity::Critical,
            format!(
                "DAG {} does not import: {}",
                d.dag_id,
                crate::text::clip(e, 160)
            ),
            vec![Next::FixImport { what: dag_id }],
        )
    } else if d.paused {
        // As severe as the stale compaction the pause causes costs a reader.
        let sev = rule_severity(mine, Rule::StaleDagPaused).max(Severity::Warning);
        (
            Kind::DagPaused,
            sev,
            format!("DAG {} is paused", d.dag_id),
            vec![Next::Unpause { dag_id }],
        )
    } else if mine.iter().any(|t| has_rule(t, &[Rule::StaleDagSucceeds])) {
        (
            Kind::DagSucceedsStale,
            rule_severity(mine, Rule::StaleDagSucceeds),
            format!(
                "DAG {} reports success{} but its table's compaction stays stale{}",
                d.dag_id,
                d.last_success_at
                    .map(|t| format!(" ({} ago)", ago(t)))
                    .unwrap_or_default(),
                d.code
                    .as_ref()
                    .and_then(|c| c.swallowing_text())
                    .map(|t| format!("; {t}"))
                    .unwrap_or_default()
            ),
            vec![Next::ReadDagCode { dag_id }],
        )
    } else if d.last_run_at.is_none() {
        // Unpaused and never run: it has maintained nothing, so its tables are not
        // "maintained by a DAG that reports nothing wrong".
        (
            Kind::DagNoSuccess,
            Severity::Warning,
            format!(
                "DAG {} is unpaused and has never run (expected every {every})",
                d.dag_id
            ),
            vec![Next::ReadDagCode { dag_id }],
        )
    } else if d
        .last_success_at
        .is_none_or(|t| (now - t).num_seconds() > 2 * d.expected_interval.as_secs() as i64)
    {
        (
            Kind::DagNoSuccess,
            Severity::Warning,
            format!(
                "DAG {} has no success for {} (expected every {every})",
                d.dag_id,
                d.last_success_at
                    .map(ago)
                    .unwrap_or_else(|| "the whole window".into()),
            ),
            vec![Next::ReadLog { dag_id }],
        )
    } else {
        return None;
    })
}

/// `DAG compact_documents: 14 failed runs; task compact: ConnectionError: …`.
pub(super) fn dag_failure_line(d: &DagFacts) -> String {
    let mut s = format!("DAG {}: last run failed", d.dag_id);
    if d.failed_runs > 1 {
        s.push_str(&format!(" ({} failed runs in the window)", d.failed_runs));
    }
    if let Some(t) = &d.failing_task {
        s.push_str(&format!("; task {t}"));
    }
    if let Some(e) = &d.error_line {
        s.push_str(&format!(": {e}"));
    }
    s
}

/// Where Enter takes an incident about a DAG: its code's swallowing handler when the
/// incident is the DAG's reporting success while its table stays stale, else the DAG.
pub(super) fn dag_jump(d: &DagFacts, kind: Kind) -> Jump {
    let code = d.code.as_ref().and_then(|c| c.code());
    match code.and_then(|c| c.swallowing().map(|f| (c, f))) {
        Some((c, f)) if kind == Kind::DagSucceedsStale => Jump::DagCode {
            dag_id: d.dag_id.clone(),
            file: c.file.clone(),
            line: f.line,
        },
        _ => Jump::Dag {
            dag_id: d.dag_id.clone(),
        },
    }
}
