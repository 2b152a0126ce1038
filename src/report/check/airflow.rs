//! Airflow's part of a check: what it says of the maintenance DAGs and of its Trino
//! connections, read once (`floe check`, each refresh of `floe serve`), and how it goes into
//! the report beside the tables.

use std::collections::BTreeMap;

use chrono::Utc;

use super::Running;
use crate::airflow::model::Tested;
use crate::airflow::{AirflowClient, AirflowError, Connection, ConnectionTest, scan};
use crate::config::Settings;
use crate::health::mapping::{DagName, map_dags};
use crate::health::{DagFacts, Finding, Rule, Severity, evaluate_dag};
use crate::lakehouse::model::TableRef;
use crate::report::{AirflowInfo, ConnectionReport, DagReport, Report};

/// What Airflow said, ready to correlate.
pub(crate) struct AirflowRead {
    info: AirflowInfo,
    dags: Vec<(crate::airflow::Dag, Result<DagFacts, AirflowError>)>,
    findings: Vec<Finding>,
    connections: Vec<ConnectionReport>,
}

impl AirflowRead {
    /// Whether Airflow answered (its DAGs were listed).
    pub(crate) fn reached(&self) -> bool {
        self.info.error.is_none()
    }
}

/// Airflow as `floe check` reads it, once: the server, its DAGs (runs, failing task and
/// log, the code of the DAGs that maintain a listed table), its Trino connections with
/// their tests. `tables` are the listed tables, sent once the fleet is listed. `None`
/// without Airflow in the settings; an unreachable Airflow is a finding.
pub(crate) async fn read_airflow(
    settings: &Settings,
    running: &Running,
    tables: tokio::sync::oneshot::Receiver<Vec<TableRef>>,
) -> Option<AirflowRead> {
    let a = settings.airflow.as_ref()?;
    let mut info = AirflowInfo {
        url: a.url.to_string(),
        version: None,
        api: None,
        error: None,
    };
    let unreachable = |info: AirflowInfo, e: String| AirflowRead {
        findings: vec![Finding {
            rule: Rule::AirflowUnreachable,
            severity: Severity::Unknown,
            message: format!("DAGs not evaluated: {e}"),
            penalty: 0,
        }],
        info: AirflowInfo {
            error: Some(e),
            ..info
        },
        dags: Vec::new(),
        connections: Vec::new(),
    };
    let connecting = running.start(format!("Airflow: connecting to {}", a.url));
    let client = match AirflowClient::connect(a).await {
        Ok(c) => c,
        Err(e) => return Some(unreachable(info, e.to_string())),
    };
    drop(connecting);
    info.version = Some(client.server_version().version.clone());
    info.api = Some(client.api());
    let listing = running.start(format!("Airflow: listing the DAGs of {}", a.url));
    let list = match scan::list(&client).await {
        Ok(l) => l,
        Err(e) => return Some(unreachable(info, e.to_string())),
    };
    drop(listing);
    let intervals: BTreeMap<String, std::time::Duration> = settings
        .maintenance
        .iter()
        .filter_map(|m| Some((m.dag_id.clone(), m.interval?)))
        .collect();
    let watching = running.clone();
    let started =
        move |dag_id: &str| watching.start(format!("Airflow: runs and logs of DAG {dag_id}"));
    let connections = async {
        let _testing = running.start(format!("Airflow: the connections of {}", a.url));
        let conns = scan::trino_connections(&client, a.test_connections).await;
        let findings = crate::health::airflow::connection_findings(&conns, &settings.trino.url);
        (findings, conns.iter().map(connection_report).collect())
    };
    // The code of the DAGs that maintain a table (what hides their failures), once the
    // tables are listed.
    let codes = async {
        let tables = tables.await.unwrap_or_default();
        let names: Vec<DagName> = list.dags.iter().map(DagName::of).collect();
        let mapped = map_dags(&tables, &names, &settings.maintenance);
        let maintaining = mapped.into_values().map(|m| m.dag_id).collect();
        let _reading = running.start(format!(
            "Airflow: the maintenance DAGs' source on {}",
            a.url
        ));
        scan::codes(
            &client,
            &list.dags,
            &maintaining,
            settings.max_concurrent_queries,
        )
        .await
    };
    let (mut facts, (conn, connections), mut codes) = tokio::join!(
        scan::facts_observed(
            &client,
            &list.dags,
            &intervals,
            settings.health.dag_interval,
            settings.max_concurrent_queries,
            &started
        ),
        connections,
        codes
    );
    let mut findings = crate::health::airflow::server_findings(&list);
    findings.extend(conn);
    let dags = list
        .dags
        .into_iter()
        .map(|d| {
            let f = facts
                .remove(&d.dag_id)
                .unwrap_or_else(|| Err(AirflowError::Internal("its facts were not read".into())))
                .map(|mut f| {
                    f.code = codes.remove(&d.dag_id);
                    f
                });
            (d, f)
        })
        .collect();
    Some(AirflowRead {
        info,
        dags,
        findings,
        connections,
    })
}

/// Which DAG maintains which table, and what each DAG says: the report's DAGs and their
/// findings; the mapping and each readable DAG's facts, for the tables' verdicts.
pub(super) fn dag_reports(
    report: &mut Report,
    a: AirflowRead,
    tables: &[TableRef],
    settings: &Settings,
    now: chrono::DateTime<Utc>,
) -> (
    BTreeMap<TableRef, crate::health::mapping::Mapped>,
    BTreeMap<String, DagFacts>,
) {
    let mut facts_by_dag: BTreeMap<String, DagFacts> = BTreeMap::new();
    let names: Vec<DagName> = a
        .dags
        .iter()
        .map(|(d, _)| DagName {
            dag_id: d.dag_id.clone(),
            tags: d.tags.clone(),
        })
        .collect();
    let mapping = map_dags(tables, &names, &settings.maintenance);
    for (dag, facts) in a.dags {
        let maintained: Vec<String> = mapping
            .iter()
            .filter(|(_, m)| m.dag_id == dag.dag_id)
            .map(|(t, _)| t.to_string())
            .collect();
        match facts {
            Ok(f) => {
                report.dags.push(DagReport {
                    health: evaluate_dag(&f, now),
                    facts: f.clone(),
                    tables: maintained,
                });
                facts_by_dag.insert(dag.dag_id.clone(), f);
            }
            Err(e) => report.findings.push(Finding {
                rule: Rule::DagUnreadable,
                severity: Severity::Unknown,
                message: format!("DAG {}: cannot read its runs: {e}", dag.dag_id),
                penalty: 0,
            }),
        }
    }
    // A configured DAG Airflow does not list is a finding of its own.
    for m in &settings.maintenance {
        if !names.iter().any(|n| n.dag_id == m.dag_id) {
            report.findings.push(Finding {
                rule: Rule::DagMissing,
                severity: Severity::Warning,
                message: format!(
                    "DAG {} (maintains {}) is not among Airflow's maintenance DAGs",
                    m.dag_id, m.table
                ),
                penalty: 0,
            });
        }
    }
    report.findings.extend(a.findings);
    report.connections = a.connections;
    report.airflow = Some(a.info);
    (mapping, facts_by_dag)
}

/// A connection as the report keeps it: where it points and whether its test passed.
fn connection_report((c, tested): &(Connection, Option<Tested>)) -> ConnectionReport {
    ConnectionReport {
        id: c.connection_id.clone(),
        endpoint: format!(
            "{}:{}",
            c.host.as_deref().unwrap_or(""),
            c.port.unwrap_or(8080)
        ),
        test: match tested.as_ref().map(|t| &t.test) {
            Some(ConnectionTest::Passed(_)) => Some(true),
            Some(ConnectionTest::Failed(_)) => Some(false),
            Some(ConnectionTest::NotAllowed(_) | ConnectionTest::NoVerdict(_)) | None => None,
        },
    }
}
