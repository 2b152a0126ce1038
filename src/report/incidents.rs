//! The incidents at the top of the text and markdown reports (and in JSON): the same
//! triage as the TUI's first tab, from what the check read.

use super::Report;
use crate::health::incidents::{Facts, Incident, Next, TableFacts, incidents};

impl Report {
    /// The incidents, worst first.
    pub fn incidents(&self) -> Vec<Incident> {
        let facts = Facts {
            tables: self
                .tables
                .iter()
                .map(|t| {
                    let name = t.table.to_string();
                    TableFacts {
                        table: &t.table,
                        suffered: None,
                        running: None,
                        stats: t.stats.as_ref(),
                        health: Some(&t.health),
                        error: t.error.as_deref(),
                        dag_id: t.dag.as_ref().map(|d| d.dag_id.as_str()).or_else(|| {
                            self.dags
                                .iter()
                                .find(|d| d.tables.contains(&name))
                                .map(|d| d.facts.dag_id.as_str())
                        }),
                    }
                })
                .collect(),
            dags: self.dags.iter().map(|d| &d.facts).collect(),
            findings: self.findings.iter().collect(),
            airflow: self.airflow.is_some(),
            fixed: Default::default(),
        };
        incidents(&facts, self.generated_at)
    }
}

/// A next action as an operator without the TUI takes it.
pub(super) fn next_text(n: &Next) -> String {
    match n {
        Next::Optimize { table } => format!("floe maintain optimize {table}"),
        Next::ExpireSnapshots { table } => format!("expire the snapshots of {table}"),
        other => other.text(),
    }
}

/// `fix Airflow connection x · trigger y after fixing · floe maintain optimize z`.
pub(super) fn next_line(i: &Incident) -> String {
    i.next.iter().map(next_text).collect::<Vec<_>>().join(" · ")
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::super::{AirflowInfo, DagReport, Format, Report, TableReport, TrinoInfo};
    use crate::app::testing::dags::{ERROR, failing_facts};
    use crate::app::testing::incident_stats;
    use crate::health::{Finding, HealthConfig, Rule, Severity, evaluate, evaluate_dag};
    use crate::lakehouse::model::TableRef;

    fn report() -> Report {
        let now = chrono::Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap();
        let facts = failing_facts();
        let stats = incident_stats();
        let docs = TableRef::new("iceberg", "zoning", "documents");
        Report {
            generated_at: now,
            profile: "lab".into(),
            trino: TrinoInfo {
                url: "http://127.0.0.1:8080/".into(),
                version: Some("480".into()),
                uptime_seconds: None,
            },
            airflow: Some(AirflowInfo {
                url: "http://127.0.0.1:8081/".into(),
                version: Some("3.3.2".into()),
                api: Some(crate::airflow::ApiVersion::V2),
                error: None,
            }),
            tables: vec![TableReport {
                health: evaluate(&stats, Some(&facts), &HealthConfig::default(), now),
                table: docs.clone(),
                stats: Some(stats),
                error: None,
                // Its DAG's facts were not read: the DAG's list of tables still maps it.
                dag: None,
                format: None,
            }],
            dags: vec![DagReport {
                health: evaluate_dag(&facts, now),
                facts,
                tables: vec![docs.to_string()],
            }],
            findings: vec![Finding {
                rule: Rule::AirflowConnectionFailing,
                severity: Severity::Critical,
                message: "Airflow connection trino_documents points at trino-old.internal:8080 and fails its test: boom\nsecond line".into(),
                penalty: 0,
            }],
            connections: vec![],
            fatal: None,
            warnings: vec![],
        }
    }

    #[test]
    fn the_dead_connection_its_dag_and_its_table_are_one_incident() {
        let r = report();
        let v = r.incidents();
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].tables[0].name, "documents");
        let text = r.render(Format::Text);
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("Incidents (1, worst first):"))
            .unwrap();
        assert_eq!(
            lines[at + 1],
            " 1. CRITICAL DAG compact_documents failing 14 runs (connection trino_documents → \
             trino-old.internal:8080, fails its test) → documents: 2,016 small files, waiting 15d"
        );
        assert_eq!(
            lines[at + 2],
            "    next: fix Airflow connection trino_documents · trigger compact_documents after \
             fixing · floe maintain optimize iceberg.zoning.documents"
        );
        let md = r.render(Format::Markdown);
        assert!(md.contains("### Incidents\n\n1. **CRITICAL** DAG compact\\_documents failing"));
        let json: serde_json::Value = serde_json::from_str(&r.render(Format::Json)).unwrap();
        assert_eq!(json["incidents"][0]["kind"], "endpoint");
        assert!(
            json["incidents"][0]["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e.as_str().unwrap().contains(ERROR))
        );
    }

    #[test]
    fn a_healthy_report_has_no_incident_section() {
        let mut r = report();
        r.tables.clear();
        r.dags.clear();
        r.findings.clear();
        assert!(!r.render(Format::Text).contains("Incidents"));
        assert!(!r.render(Format::Markdown).contains("Incidents"));
    }
}
