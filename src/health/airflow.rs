//! Airflow as floe judges it (pure, from what was read): its own health, its import
//! errors, and its Trino connections beside the Trino floe reached.

use url::Url;

use super::{Finding, Rule, Severity};
use crate::airflow::scan::DagList;
use crate::airflow::{
    AirflowHealth, Connection, ConnectionTest, DagRunState, HealthStatus, TaskState, TestSite,
    Tested,
};

/// Components the header should name (unhealthy ones only).
pub fn unhealthy(h: &AirflowHealth) -> Vec<&'static str> {
    [
        ("scheduler", &h.scheduler),
        ("dag-processor", &h.dag_processor),
        ("metadatabase", &h.metadatabase),
    ]
    .into_iter()
    .filter(|(_, c)| c.status == Some(HealthStatus::Unhealthy))
    .map(|(n, _)| n)
    .collect()
}

/// How a DAG run's state reads (`None`: the DAG never ran).
pub fn run_severity(state: Option<&DagRunState>) -> Severity {
    match state {
        Some(DagRunState::Failed) => Severity::Critical,
        Some(DagRunState::Queued | DagRunState::Running) => Severity::Warning,
        Some(DagRunState::Success) => Severity::Ok,
        Some(DagRunState::Unknown(_)) | None => Severity::Info,
    }
}

/// How a task instance's state reads (`None`: not scheduled yet).
pub fn task_severity(state: Option<&TaskState>) -> Severity {
    match state {
        Some(TaskState::Failed | TaskState::UpstreamFailed) => Severity::Critical,
        Some(
            TaskState::UpForRetry
            | TaskState::Restarting
            | TaskState::Queued
            | TaskState::Running
            | TaskState::Scheduled
            | TaskState::Deferred,
        ) => Severity::Warning,
        Some(TaskState::Success) => Severity::Ok,
        Some(
            TaskState::Removed
            | TaskState::UpForReschedule
            | TaskState::Skipped
            | TaskState::AwaitingInput
            | TaskState::Unknown(_),
        )
        | None => Severity::Info,
    }
}

/// Where a task instance stands in the drill-down: the failed task on top, then what
/// failed because of it, then what will be tried again, then the rest.
pub fn task_rank(state: Option<&TaskState>) -> u8 {
    match state {
        Some(TaskState::Failed) => 0,
        Some(TaskState::UpstreamFailed) => 1,
        Some(TaskState::UpForRetry) => 2,
        _ => 3,
    }
}

/// `host:port` of a URL as a connection would name it.
fn endpoint(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Findings about Airflow's Trino connections (as `airflow::scan::trino_connections` read
/// them, each with its test): one that fails its test through Airflow, or points somewhere
/// other than the Trino floe reached; an untested one where floe reached Trino is an INFO
/// (what a failing task's error may still name after a fix, where Airflow tests nothing).
pub fn connection_findings(conns: &[(Connection, Option<Tested>)], trino: &Url) -> Vec<Finding> {
    conns
        .iter()
        .filter_map(|(c, tested)| {
            let theirs = format!(
                "{}:{}",
                c.host.as_deref().unwrap_or(""),
                c.port.unwrap_or(8080)
            );
            tested_finding(&c.connection_id, &theirs, trino, tested.as_ref())
        })
        .collect()
}

/// [`tested_finding`] of a test the API server ran.
pub fn connection_finding(
    id: &str,
    theirs: &str,
    trino: &Url,
    tested: Option<&ConnectionTest>,
) -> Option<Finding> {
    let tested = tested.map(|t| Tested {
        test: t.clone(),
        site: TestSite::ApiServer,
    });
    tested_finding(id, theirs, trino, tested.as_ref())
}

/// Why a connection's finding says nothing of whether it works, as its message ends.
pub const NOT_TESTED: &str = " (not tested)";
/// Airflow refuses to test connections (`[core] test_connection`, disabled by default).
pub const TESTS_DISABLED: &str = " (Airflow does not test connections here)";
/// The test ran without the secret floe never reads: `…: why)`.
pub const NO_VERDICT: &str = " (its test is no verdict: ";

/// What one connection at `theirs` says, beside the Trino floe reached at `trino`.
///
/// Only a failed test is trouble, and only a test of the stored connection is a verdict (a
/// failure for the password floe withheld is [`ConnectionTest::NoVerdict`]). A connection
/// whose test passes works, wherever it points: floe on a bastion reaches the coordinator
/// through a tunnel or another name while the workers use the cluster's own, so an
/// endpoint unlike floe's is at most an INFO. An untested one at another endpoint is a
/// WARNING, unless floe itself came through a loopback or link-local address (a tunnel's
/// end): then nothing tells the two apart. An untested one where floe reached Trino is an
/// INFO that says so.
pub fn tested_finding(
    id: &str,
    theirs: &str,
    trino: &Url,
    tested: Option<&Tested>,
) -> Option<Finding> {
    let ours = endpoint(trino);
    let floe_local = trino
        .host_str()
        .is_some_and(crate::config::uri::is_local_host);
    let finding = |rule, severity, message: String| Finding {
        rule,
        severity,
        message,
        penalty: 0,
    };
    let on = match tested.map(|t| t.site) {
        Some(TestSite::Worker) => " on a worker",
        _ => "",
    };
    match tested.map(|t| &t.test) {
        Some(ConnectionTest::Failed(msg)) => Some(finding(
            Rule::AirflowConnectionFailing,
            Severity::Critical,
            format!(
                "Airflow connection {id} points at {theirs} and fails its test{on}: {}{}",
                msg.lines().next().unwrap_or(""),
                if theirs != ours {
                    format!(" — floe reached {ours}")
                } else {
                    String::new()
                }
            ),
        )),
        Some(ConnectionTest::Passed(_)) if theirs == ours => Some(finding(
            Rule::AirflowConnectionWorks,
            Severity::Info,
            format!("Airflow connection {id} points at {theirs} and its test passes{on}"),
        )),
        Some(ConnectionTest::Passed(_)) => Some(finding(
            Rule::AirflowConnectionWorks,
            Severity::Info,
            format!(
                "Airflow connection {id} points at {theirs} and its test passes{on} — floe reached {ours}: the same coordinator by another name, or another one"
            ),
        )),
        untested if theirs == ours => Some(finding(
            Rule::AirflowConnectionUntested,
            Severity::Info,
            format!(
                "Airflow connection {id} points at {theirs}, the Trino floe reached{}",
                why_untested(untested)
            ),
        )),
        untested if floe_local => Some(finding(
            Rule::AirflowConnectionElsewhere,
            Severity::Info,
            format!(
                "Airflow connection {id} points at {theirs} — floe reached Trino through {ours} on this machine (a tunnel?), so that says nothing of it{}",
                why_untested(untested)
            ),
        )),
        untested => Some(finding(
            Rule::AirflowConnectionElsewhere,
            Severity::Warning,
            format!(
                "Airflow connection {id} points at {theirs} — floe reached {ours}{}",
                why_untested(untested)
            ),
        )),
    }
}

fn why_untested(tested: Option<&ConnectionTest>) -> String {
    match tested {
        Some(ConnectionTest::NotAllowed(_)) => TESTS_DISABLED.into(),
        Some(ConnectionTest::NoVerdict(why)) => format!("{NO_VERDICT}{why})"),
        _ => NOT_TESTED.into(),
    }
}

/// Findings about Airflow itself: import errors, unhealthy scheduler or DAG processor.
pub fn server_findings(list: &DagList) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &list.import_errors {
        out.push(Finding {
            rule: Rule::DagImportError,
            severity: Severity::Critical,
            message: format!("import error in {}: {}", e.filename, e.summary()),
            penalty: 0,
        });
    }
    if let Some(h) = &list.health {
        for (name, c) in [
            ("scheduler", &h.scheduler),
            ("dag processor", &h.dag_processor),
            ("metadatabase", &h.metadatabase),
        ] {
            if c.status == Some(HealthStatus::Unhealthy) {
                out.push(Finding {
                    rule: Rule::AirflowUnhealthy,
                    severity: Severity::Critical,
                    message: format!("Airflow {name} is unhealthy"),
                    penalty: 0,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_connection_whose_test_passes_is_never_trouble_wherever_it_points() {
        let passed = ConnectionTest::Passed(String::new());
        // floe on a bastion, through a tunnel: the workers use the cluster's own name.
        let f = connection_finding(
            "trino_default",
            "trino.prod.internal:8443",
            &url("http://localhost:18443"),
            Some(&passed),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Info, "{f:?}");
        assert!(f.message.contains("its test passes"), "{}", f.message);
        // The demo lab opened with --trino http://localhost:PORT.
        let f = connection_finding(
            "trino_default",
            "127.0.0.1:35019",
            &url("http://localhost:35019"),
            Some(&passed),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Info);
        // The same endpoint: it works, which is all there is to say.
        let f = connection_finding(
            "trino_default",
            "127.0.0.1:35019",
            &url("http://127.0.0.1:35019"),
            Some(&passed),
        )
        .unwrap();
        assert_eq!(
            (f.rule, f.severity),
            (Rule::AirflowConnectionWorks, Severity::Info)
        );
        // Untested where floe reached Trino: an INFO that says so (what a failing task's
        // error may name after a fix, where Airflow tests nothing).
        let f = connection_finding(
            "trino_default",
            "127.0.0.1:35019",
            &url("http://127.0.0.1:35019"),
            None,
        )
        .unwrap();
        assert_eq!(
            (f.rule, f.severity),
            (Rule::AirflowConnectionUntested, Severity::Info)
        );
        assert_eq!(
            f.message,
            "Airflow connection trino_default points at 127.0.0.1:35019, the Trino floe reached (not tested)"
        );
    }

    /// A test that failed for the password floe withheld is no verdict: never a failing
    /// connection, whatever it said.
    #[test]
    fn a_test_without_the_stored_password_is_no_verdict() {
        let t = Tested {
            test: ConnectionTest::NoVerdict("Airflow 2 tests only the fields it is sent".into()),
            site: TestSite::ApiServer,
        };
        let f = tested_finding(
            "trino_secure",
            "trino.prod.internal:8443",
            &url("http://127.0.0.1:8443"),
            Some(&t),
        )
        .unwrap();
        assert_eq!(
            (f.rule, f.severity),
            (Rule::AirflowConnectionElsewhere, Severity::Info)
        );
        assert!(
            f.message
                .ends_with(" (its test is no verdict: Airflow 2 tests only the fields it is sent)"),
            "{}",
            f.message
        );
        let worker = Tested {
            test: ConnectionTest::Failed("failed to resolve trino-old.internal".into()),
            site: TestSite::Worker,
        };
        let f = tested_finding(
            "trino_documents",
            "trino-old.internal:8080",
            &url("http://127.0.0.1:8443"),
            Some(&worker),
        )
        .unwrap();
        assert!(
            f.message.contains(
                "trino-old.internal:8080 and fails its test on a worker: failed to resolve"
            ),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_failed_test_is_critical_and_an_untested_elsewhere_warns_unless_floe_came_through_a_tunnel()
    {
        let failed = ConnectionTest::Failed("failed to resolve trino-old.internal".into());
        let f = connection_finding(
            "trino_documents",
            "trino-old.internal:8080",
            &url("http://127.0.0.1:35019"),
            Some(&failed),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Critical);
        assert_eq!(f.rule, Rule::AirflowConnectionFailing);
        let f = connection_finding(
            "trino_documents",
            "trino-old.internal:8080",
            &url("https://trino.internal:8443"),
            None,
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Warning);
        assert!(f.message.ends_with("(not tested)"), "{}", f.message);
        let not_allowed = ConnectionTest::NotAllowed("403".into());
        let f = connection_finding(
            "trino_documents",
            "trino.prod.internal:8443",
            &url("http://127.0.0.1:8443"),
            Some(&not_allowed),
        )
        .unwrap();
        assert_eq!(f.severity, Severity::Info, "{f:?}");
        assert!(f.message.ends_with(TESTS_DISABLED), "{}", f.message);
    }
}
