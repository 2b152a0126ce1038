//! One read of everything floe shows about Airflow: the maintenance DAGs with their facts,
//! import errors, scheduler health, and the Trino connections compared with the Trino floe
//! reached. Shared by `floe check` and the TUI.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use url::Url;

use super::{
    AirflowClient, AirflowError, AirflowHealth, ConnectionTest, Dag, DagImportError, HealthStatus,
};
use crate::health::{DagFacts, Finding, Rule, Severity};

/// The DAG list and what surrounds it (one refresh of the DAGs tab).
#[derive(Clone, Debug)]
pub struct DagList {
    pub version: String,
    pub api: String,
    pub health: Option<AirflowHealth>,
    pub dags: Vec<Dag>,
    pub import_errors: Vec<DagImportError>,
}

pub async fn list(client: &AirflowClient) -> Result<DagList, AirflowError> {
    let dags = client.configured_dags().await?;
    // Health and import errors are context: a server that hides them still lists DAGs.
    let health = client.health().await.ok();
    let import_errors = match client.import_errors().await {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read Airflow import errors");
            Vec::new()
        }
    };
    Ok(DagList {
        version: client.server_version().version.clone(),
        api: client.api().to_string(),
        health,
        dags,
        import_errors,
    })
}

/// Facts of every DAG, `concurrency` at a time; a DAG whose runs cannot be read maps to
/// its error.
pub async fn facts(
    client: &AirflowClient,
    dags: &[Dag],
    intervals: &BTreeMap<String, Duration>,
    default_interval: Duration,
    concurrency: usize,
) -> BTreeMap<String, Result<DagFacts, String>> {
    let nothing = |_: &str| ();
    facts_observed(
        client,
        dags,
        intervals,
        default_interval,
        concurrency,
        &nothing,
    )
    .await
}

/// [`facts`], telling `started` the id of each DAG whose reads begin; what `started`
/// returns is dropped when they end (a guard that marks the DAG done).
pub async fn facts_observed<G>(
    client: &AirflowClient,
    dags: &[Dag],
    intervals: &BTreeMap<String, Duration>,
    default_interval: Duration,
    concurrency: usize,
    started: &(dyn Fn(&str) -> G + Sync),
) -> BTreeMap<String, Result<DagFacts, String>> {
    futures::stream::iter(dags.iter().cloned())
        .map(|dag| {
            let interval = intervals.get(&dag.dag_id).copied();
            async move {
                let _running = started(&dag.dag_id);
                let r = client
                    .fetch_facts(&dag, interval.unwrap_or(default_interval))
                    .await
                    .map(|mut f| {
                        if let Some(i) = interval {
                            f.expected_interval = i;
                        }
                        f
                    });
                (dag.dag_id.clone(), r.map_err(|e| e.to_string()))
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

/// `host:port` of a URL as a connection would name it.
fn endpoint(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// Findings about Airflow's Trino connections: one that fails its test through Airflow,
/// or points somewhere other than the Trino floe reached.
pub async fn connection_findings(client: &AirflowClient, trino: &Url, test: bool) -> Vec<Finding> {
    let conns = match client.connections().await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list Airflow connections");
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    for c in conns
        .iter()
        .filter(|c| c.conn_type.eq_ignore_ascii_case("trino"))
    {
        let tested = if test {
            client.test_connection(c).await.ok()
        } else {
            None
        };
        let theirs = format!(
            "{}:{}",
            c.host.as_deref().unwrap_or(""),
            c.port.unwrap_or(8080)
        );
        out.extend(connection_finding(
            &c.connection_id,
            &theirs,
            trino,
            tested.as_ref(),
        ));
    }
    out
}

/// What one connection at `theirs` says, beside the Trino floe reached at `trino`.
///
/// Only a failed test is trouble. A connection whose test passes works, wherever it points:
/// floe on a bastion reaches the coordinator through a tunnel or another name while the
/// workers use the cluster's own, so an endpoint unlike floe's is at most an INFO. An
/// untested one at another endpoint is a WARNING, unless floe itself came through a
/// loopback or link-local address (a tunnel's end): then nothing tells the two apart.
pub fn connection_finding(
    id: &str,
    theirs: &str,
    trino: &Url,
    tested: Option<&ConnectionTest>,
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
    match tested {
        Some(ConnectionTest::Failed(msg)) => Some(finding(
            Rule::AirflowConnectionFailing,
            Severity::Critical,
            format!(
                "Airflow connection {id} points at {theirs} and fails its test: {}{}",
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
            format!("Airflow connection {id} points at {theirs} and its test passes"),
        )),
        _ if theirs == ours => None,
        Some(ConnectionTest::Passed(_)) => Some(finding(
            Rule::AirflowConnectionWorks,
            Severity::Info,
            format!(
                "Airflow connection {id} points at {theirs} and its test passes — floe reached {ours}: the same coordinator by another name, or another one"
            ),
        )),
        _ if floe_local => Some(finding(
            Rule::AirflowConnectionElsewhere,
            Severity::Info,
            format!(
                "Airflow connection {id} points at {theirs} — floe reached Trino through {ours} on this machine (a tunnel?), so that says nothing of it{}",
                untested(tested)
            ),
        )),
        _ => Some(finding(
            Rule::AirflowConnectionElsewhere,
            Severity::Warning,
            format!(
                "Airflow connection {id} points at {theirs} — floe reached {ours}{}",
                untested(tested)
            ),
        )),
    }
}

fn untested(tested: Option<&ConnectionTest>) -> &'static str {
    match tested {
        Some(ConnectionTest::NotAllowed(_)) => " (the server does not allow testing it)",
        _ => " (not tested)",
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
        assert!(
            connection_finding(
                "trino_default",
                "127.0.0.1:35019",
                &url("http://127.0.0.1:35019"),
                None
            )
            .is_none()
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
        assert!(
            f.message.contains("does not allow testing"),
            "{}",
            f.message
        );
    }
}
