//! The JSON report (`floe check --format json`).

use chrono::SecondsFormat;
use serde::Serialize;

use super::record::{TableRecord, timestamp};
use super::{AirflowInfo, Report, TrinoInfo};
use crate::health::{Finding, Severity};

impl Report {
    pub(super) fn json(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.json_value()).expect("report serializes");
        s.push('\n');
        s
    }

    /// The report as one JSON document (a `profile` key names its cluster).
    pub(super) fn json_value(&self) -> serde_json::Value {
        #[derive(Serialize)]
        struct J<'a> {
            status: Severity,
            summary: String,
            generated_at: String,
            profile: &'a str,
            trino: &'a TrinoInfo,
            airflow: &'a Option<AirflowInfo>,
            error: &'a Option<String>,
            tables: Vec<serde_json::Value>,
            dags: Vec<serde_json::Value>,
            incidents: Vec<serde_json::Value>,
            findings: &'a [Finding],
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            warnings: &'a [String],
        }
        let tables = self
            .sorted_tables()
            .into_iter()
            .map(|t| {
                serde_json::to_value(TableRecord::from_report(t, self.generated_at))
                    .expect("table record serializes")
            })
            .collect();
        let dags = self
            .dags
            .iter()
            .map(|d| {
                serde_json::json!({
                    "dag_id": d.facts.dag_id,
                    "status": d.health.status,
                    "paused": d.facts.paused,
                    "last_run_state": d.facts.last_run_state,
                    "last_run_at": timestamp(d.facts.last_run_at),
                    "last_success_at": timestamp(d.facts.last_success_at),
                    "failed_runs": d.facts.failed_runs,
                    "failing_task": d.facts.failing_task,
                    "error_line": d.facts.error_line,
                    "import_error": d.facts.import_error,
                    "tables": d.tables,
                    "findings": d.health.findings,
                    "code": d.facts.code,
                    "code_findings": self.code_findings(&d.facts),
                })
            })
            .collect();
        let incidents = self
            .incidents()
            .iter()
            .map(|i| {
                let mut v = serde_json::to_value(i).expect("incident serializes");
                v["summary"] = i.summary().into();
                v
            })
            .collect();
        let j = J {
            status: self.status(),
            summary: self.summary_line(),
            generated_at: self.generated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            profile: &self.profile,
            trino: &self.trino,
            airflow: &self.airflow,
            error: &self.fatal,
            tables,
            dags,
            incidents,
            findings: &self.findings,
            warnings: &self.warnings,
        };
        serde_json::to_value(&j).expect("report serializes")
    }
}
