//! One read of everything floe shows about Airflow: the maintenance DAGs with their facts,
//! import errors, scheduler health, and the Trino connections with their tests. Shared by
//! `floe check` and the TUI; what they say is judged in `health::airflow`.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;

use super::endpoints::sources::SourceKey;
use super::facts::DagFacts;
use super::{AirflowClient, AirflowError, AirflowHealth, Connection, Dag, DagImportError, Tested};

/// The DAG list and what surrounds it (one refresh of the DAGs tab).
#[derive(Clone, Debug)]
pub struct DagList {
    pub version: String,
    pub api: super::ApiVersion,
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
        api: client.api(),
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
) -> BTreeMap<String, Result<DagFacts, AirflowError>> {
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
) -> BTreeMap<String, Result<DagFacts, AirflowError>> {
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
                (dag.dag_id.clone(), r)
            }
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}

/// Airflow's Trino connections, each with its test through Airflow when `test` (`None`:
/// untested, or the test could not be asked), on a worker where the server can
/// ([`AirflowClient::check_connection`]); none when they cannot be listed. What they say
/// beside the Trino floe reached is `health::airflow::connection_findings`'s.
pub async fn trino_connections(
    client: &AirflowClient,
    test: bool,
) -> Vec<(Connection, Option<Tested>)> {
    let conns = match client.connections().await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "cannot list Airflow connections");
            return Vec::new();
        }
    };
    // One at a time: a test the API server runs holds one of its workers for as long as
    // the connection takes to fail (a dead host's name resolution: ~25 s), and several at
    // once starve the reads of the DAGs beside them (Airflow 2's two web workers).
    let mut out = Vec::new();
    for c in conns
        .into_iter()
        .filter(|c| c.conn_type.eq_ignore_ascii_case("trino"))
    {
        let tested = if test {
            match client.check_connection(&c).await {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!(connection = %c.connection_id, error = %e, "cannot test an Airflow connection");
                    None
                }
            }
        } else {
            None
        };
        out.push((c, tested));
    }
    out
}

/// What was read of a DAG's code.
#[derive(Clone, Debug, PartialEq)]
pub enum CodeRead {
    /// The version floe has is still Airflow's: nothing was read.
    Unchanged,
    /// A new version: its file and what its code says.
    Read {
        key: SourceKey,
        source: String,
        code: crate::dag_code::DagCode,
    },
}

/// A DAG's code, unless the version Airflow holds is `known` already: its file read and
/// inspected (the parse runs on a blocking thread: a large hostile file never stalls the
/// runtime's workers).
pub async fn read_code(
    client: &AirflowClient,
    dag: &Dag,
    known: Option<SourceKey>,
) -> Result<CodeRead, AirflowError> {
    let key = client.source_key(dag).await?;
    if key.is_fixed() && known.as_ref() == Some(&key) {
        return Ok(CodeRead::Unchanged);
    }
    let source = client.dag_source(dag, &key).await?;
    let dag_id = dag.dag_id.clone();
    let (file, content) = (source.file, source.content);
    tokio::task::spawn_blocking(move || {
        let code = crate::dag_code::inspect(&content, &file, &dag_id);
        CodeRead::Read {
            key,
            source: content,
            code,
        }
    })
    .await
    .map_err(|e| AirflowError::Internal(format!("reading the DAG's code: {e}")))
}

/// The code of the DAGs named in `ids` (those floe maps to tables), `concurrency` at a
/// time: what each says, or what Airflow answered instead of its source.
pub async fn codes(
    client: &AirflowClient,
    dags: &[Dag],
    ids: &std::collections::BTreeSet<String>,
    concurrency: usize,
) -> BTreeMap<String, crate::dag_code::CodeFacts> {
    use crate::dag_code::CodeFacts;
    futures::stream::iter(dags.iter().filter(|d| ids.contains(&d.dag_id)).cloned())
        .map(|dag| async move {
            let facts = match read_code(client, &dag, None).await {
                Ok(CodeRead::Read { code, .. }) => CodeFacts::Read(code),
                Ok(CodeRead::Unchanged) => CodeFacts::Unread {
                    status: None,
                    error: "no version was known, yet none was read".into(),
                },
                Err(e) => CodeFacts::Unread {
                    status: e.status(),
                    error: e.to_string(),
                },
            };
            (dag.dag_id.clone(), facts)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
}
