//! A DAG's own rules: an import error, paused, its last run failed, no success within
//! the expected interval, never ran.

use chrono::{DateTime, Utc};

use super::{DagFacts, Finding, Health, Rule, Severity, age, clip};
use crate::fmt::human_duration;

/// DAG rules: last run failed, no success within the expected interval, paused, import error.
pub fn dag_findings(d: &DagFacts, now: DateTime<Utc>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(e) = &d.import_error {
        out.push(Finding {
            rule: Rule::DagImportError,
            severity: Severity::Critical,
            message: format!("DAG {} has an import error: {e}", d.dag_id),
            penalty: 15,
        });
    }
    if d.paused {
        out.push(Finding {
            rule: Rule::DagPaused,
            severity: Severity::Warning,
            message: format!("DAG {} is paused", d.dag_id),
            penalty: 5,
        });
    }
    if d.last_run_failed() {
        let mut msg = format!("DAG {}: last run failed", d.dag_id);
        if d.failed_runs > 1 {
            msg.push_str(&format!(" ({} failed runs in the window)", d.failed_runs));
        }
        if let Some(t) = &d.failing_task {
            msg.push_str(&format!("; task {t}"));
        }
        if let Some(e) = &d.error_line {
            msg.push_str(&format!(": {}", clip(e)));
        }
        out.push(Finding {
            rule: Rule::DagFailing,
            severity: Severity::Critical,
            message: msg,
            penalty: 15,
        });
    }
    if !d.paused {
        let limit = d.expected_interval.as_secs() as i64 * 2;
        match d.last_success_at {
            Some(t) if age(now, t) > limit => out.push(Finding {
                rule: Rule::DagNoSuccess,
                severity: Severity::Warning,
                message: format!(
                    "DAG {}: no success for {} (expected every {})",
                    d.dag_id,
                    human_duration(age(now, t)),
                    human_duration(d.expected_interval.as_secs() as i64)
                ),
                penalty: 5,
            }),
            None if d.last_run_at.is_some() => out.push(Finding {
                rule: Rule::DagNoSuccess,
                severity: Severity::Warning,
                message: format!("DAG {}: no successful run in the window", d.dag_id),
                penalty: 5,
            }),
            // Unpaused and never run (a start_date still ahead, no schedule): it has
            // maintained nothing, whatever else it reports.
            None if d.import_error.is_none() => out.push(Finding {
                rule: Rule::DagNeverRan,
                severity: Severity::Warning,
                message: format!(
                    "DAG {} is unpaused and has never run (expected every {})",
                    d.dag_id,
                    human_duration(d.expected_interval.as_secs() as i64)
                ),
                penalty: 5,
            }),
            _ => {}
        }
    }
    out
}

/// Verdict for a DAG on its own (DAGs tab, `floe check`).
pub fn evaluate_dag(d: &DagFacts, now: DateTime<Utc>) -> Health {
    Health::from_findings(dag_findings(d, now))
}
