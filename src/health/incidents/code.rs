//! What a DAG's own code adds to its incident: the tables its SQL names, when floe knows
//! they are large, and the Airflow connections its tasks use.

use super::connections::{ConnFinding, ids};
use super::{Next, Triage};
use crate::health::DagFacts;

impl Triage<'_, '_> {
    /// The Airflow connections the DAG's code says its tasks use that fail their test or
    /// point elsewhere: their findings as evidence, their fix as a next action (the DAG ↔
    /// connection link from the code, not from a name).
    pub(super) fn code_connections(&self, d: &DagFacts, evidence: &mut Vec<String>) -> Vec<Next> {
        let Some(code) = d.code.as_ref().and_then(|c| c.code()) else {
            return Vec::new();
        };
        let used = code.connection_ids();
        let troubled: Vec<&ConnFinding> = self
            .conns
            .iter()
            .filter(|c| c.trouble && used.contains(&c.id.as_str()))
            .collect();
        evidence.extend(troubled.iter().map(|c| c.finding.message.clone()));
        if troubled.is_empty() {
            return Vec::new();
        }
        vec![Next::FixConnection {
            connections: ids(&troubled),
            endpoint: troubled.first().map(|c| c.endpoint.clone()),
        }]
    }

    /// The bytes of the table an SQL name (`iceberg.zoning.permits`) names, when floe
    /// knows it is large.
    pub(super) fn large_table(&self, name: &str) -> Option<u64> {
        self.facts.tables.iter().find_map(|t| {
            let stats = t.stats?;
            crate::dag_code::names_table(name, t.table)
                .then(|| crate::dag_code::large(stats))
                .flatten()
        })
    }
}
