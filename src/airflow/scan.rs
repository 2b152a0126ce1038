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
    let ours = endpoint(trino);
    let mut out = Vec::new();
    for c in conns
        .iter()
        .filter(|c| c.conn_type.eq_ignore_ascii_case("trino"))
    {
        let theirs = format!(
            "{}:{}",
            c.host.as_deref().unwrap_or(""),
            c.port.unwrap_or(8080)
        );
        let tested = if test {
            client.test_connection(c).await.ok()
        } else {
            None
        };
        match tested {
            Some(ConnectionTest::Failed(msg)) => out.push(Finding {
                rule: Rule::AirflowConnectionFailing,
                severity: Severity::Critical,
                message: format!(
                    "Airflow connection {} points at {theirs} and fails its test: {}{}",
                    c.connection_id,
                    msg.lines().next().unwrap_or(""),
                    if theirs != ours {
                        format!(" — floe reached {ours}")
                    } else {
                        String::new()
                    }
                ),
                penalty: 0,
            }),
            _ if theirs != ours => out.push(Finding {
                rule: Rule::AirflowConnectionElsewhere,
                severity: Severity::Warning,
                message: format!(
                    "Airflow connection {} points at {theirs} — floe reached {ours}{}",
                    c.connection_id,
                    match tested {
                        Some(ConnectionTest::Passed(_)) => " (its test passes)",
                        Some(ConnectionTest::NotAllowed(_)) =>
                            " (the server does not allow testing it)",
                        _ => "",
                    }
                ),
                penalty: 0,
            }),
            _ => {}
        }
    }
    out
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
