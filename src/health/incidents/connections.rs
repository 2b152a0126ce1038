//! Airflow's connections as triage reads them from their findings.

use super::plural;
use crate::health::airflow::{NO_VERDICT, TESTS_DISABLED};
use crate::health::{Finding, Rule, Severity};

/// Why nothing says whether a connection works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Untested {
    /// floe did not ask (`airflow.test_connections = false`) or could not.
    NotAsked,
    /// Airflow does not test connections (`[core] test_connection`, disabled by default).
    Disabled,
    /// Its test ran without the secret floe never reads.
    NoVerdict,
}

/// An Airflow connection as its finding describes it.
#[derive(Clone, Debug)]
pub(super) struct ConnFinding<'a> {
    pub(super) id: String,
    pub(super) endpoint: String,
    /// It fails its test (else it points somewhere other than the Trino floe reached).
    pub(super) failing: bool,
    /// Its test passes: no trouble, but what a failing DAG's error may still name.
    pub(super) works: bool,
    /// Neither: why nothing says whether it works.
    pub(super) untested: Option<Untested>,
    /// Worth an incident (above INFO).
    pub(super) trouble: bool,
    pub(super) finding: &'a Finding,
    /// Its place in [`Facts::findings`].
    pub(super) index: usize,
}

impl ConnFinding<'_> {
    /// It may be why a task failed on its endpoint: nothing says it works.
    pub(super) fn suspect(&self) -> bool {
        !self.works
    }
}

/// `Airflow connection ID points at HOST:PORT …` (the connection findings floe writes).
pub(super) fn conn_finding(index: usize, f: &Finding) -> Option<ConnFinding<'_>> {
    let (failing, works) = match f.rule {
        Rule::AirflowConnectionFailing => (true, false),
        Rule::AirflowConnectionElsewhere | Rule::AirflowConnectionUntested => (false, false),
        Rule::AirflowConnectionWorks => (false, true),
        _ => return None,
    };
    let rest = f.message.strip_prefix("Airflow connection ")?;
    let (id, after) = rest.split_once(" points at ")?;
    let endpoint = after
        .split_whitespace()
        .next()?
        .trim_end_matches([',', ';'])
        .to_string();
    let untested = (!failing && !works).then(|| {
        if f.message.ends_with(TESTS_DISABLED) {
            Untested::Disabled
        } else if f.message.contains(NO_VERDICT) {
            Untested::NoVerdict
        } else {
            Untested::NotAsked
        }
    });
    Some(ConnFinding {
        id: id.to_string(),
        endpoint,
        failing,
        works,
        untested,
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
/// does); else, when a failing task's `error` names the endpoint, that the task could not
/// reach it and why nothing was tested; else the endpoint is not the Trino floe reached.
pub(super) fn conn_state(cs: &[&ConnFinding], error: Option<&str>) -> String {
    if cs.iter().any(|c| c.failing) {
        return plural(cs.len(), "fails its test", "fail their test").into();
    }
    match error {
        Some(e) => format!(
            "the host the failing task could not {}; {}",
            failed_to(e),
            why_untested(cs)
        ),
        None => "is not the Trino floe reached".into(),
    }
}

/// Why connections are untested, in words: the first reason among them.
pub(super) fn why_untested(cs: &[&ConnFinding]) -> &'static str {
    let has = |u: Untested| cs.iter().any(|c| c.untested == Some(u));
    if has(Untested::Disabled) {
        "Airflow does not test connections here"
    } else if has(Untested::NoVerdict) {
        "its test is no verdict (it lacks the password floe never reads)"
    } else {
        "not tested"
    }
}

/// What a task's error says it could not do with its endpoint: resolve the host, connect
/// to it, or (anything else) reach it.
fn failed_to(error: &str) -> &'static str {
    let e = error.to_ascii_lowercase();
    if [
        "resolve",
        "name or service not known",
        "nodename nor servname",
        "no such host",
        "getaddrinfo",
        "name resolution",
    ]
    .iter()
    .any(|k| e.contains(k))
    {
        "resolve"
    } else if e.contains("refused") {
        "connect to"
    } else {
        "reach"
    }
}
