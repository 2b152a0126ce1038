//! The incidents at the top of the text and markdown reports (and in JSON): the same
//! triage as the TUI's first tab, from what the check read.

use super::Report;
use crate::health::triage::{Facts, Incident, Next, TableFacts, incidents};

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
