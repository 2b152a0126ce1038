//! Airflow's connections as triage reads them from their findings.

use super::plural;
use crate::health::{Finding, Rule, Severity};

/// An Airflow connection as its finding describes it.
#[derive(Clone, Debug)]
pub(super) struct ConnFinding<'a> {
    pub(super) id: String,
    pub(super) endpoint: String,
    /// It fails its test (else it points somewhere other than the Trino floe reached).
    pub(super) failing: bool,
    /// Its test passes: no trouble, but what a failing DAG's error may still name.
    pub(super) works: bool,
    /// Worth an incident (above INFO).
    pub(super) trouble: bool,
    pub(super) finding: &'a Finding,
    /// Its place in [`Facts::findings`].
    pub(super) index: usize,
}

/// `Airflow connection ID points at HOST:PORT …` (the connection findings floe writes).
pub(super) fn conn_finding(index: usize, f: &Finding) -> Option<ConnFinding<'_>> {
    let (failing, works) = match f.rule {
        Rule::AirflowConnectionFailing => (true, false),
        Rule::AirflowConnectionElsewhere => (false, false),
        Rule::AirflowConnectionWorks => (false, true),
        _ => return None,
    };
    let rest = f.message.strip_prefix("Airflow connection ")?;
    let (id, after) = rest.split_once(" points at ")?;
    let endpoint = after.split_whitespace().next()?.to_string();
    Some(ConnFinding {
        id: id.to_string(),
        endpoint,
        failing,
        works,
        // An INFO one (a connection that works, or one floe cannot compare) is no trouble.
        trouble: f.severity > Severity::Info,
        finding: f,
        index,
    })
}

/// The connections' ids, in order.
pub(super) fn ids(cs: &[&ConnFinding]) -> Vec<String> {
    cs.iter().map(|c| c.id.clone()).collect()
}

/// What is wrong with connections at one endpoint: they fail their test (when any
/// does), else the endpoint is not the Trino floe reached.
pub(super) fn conn_state(cs: &[&ConnFinding]) -> &'static str {
    if cs.iter().any(|c| c.failing) {
        plural(cs.len(), "fails its test", "fail their test")
    } else {
        "is not the Trino floe reached"
    }
}
