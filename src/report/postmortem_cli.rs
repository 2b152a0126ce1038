//! `floe report TABLE`: read one table's incident — its health and snapshots from Trino,
//! its maintenance DAG's runs and failing task from Airflow, its actions from the audit
//! log — and write the postmortem ([`super::postmortem`]).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use chrono::Utc;

use super::postmortem::{self, DagSection, Postmortem, Sources};
use super::{AirflowInfo, TrinoInfo};
use crate::airflow::{AirflowClient, scan};
use crate::config::Settings;
use crate::health::mapping::{DagName, map_dags};
use crate::health::{DagFacts, evaluate};
use crate::lakehouse::model::{TableNameError, TableRef};
use crate::lakehouse::queries::Lakehouse;
use crate::mutation::audit::AuditLog;
use crate::text::sanitize;
use crate::timeline::DagRuns;
use crate::trino::{Client, TrinoError};

/// The formats of `floe report`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PostmortemFormat {
    Markdown,
    Json,
}

/// The exit code of a report that could not be made (Nagios UNKNOWN, as `floe check`).
pub const UNKNOWN_EXIT: u8 = 3;

/// The maintenance DAG of `table` and what Airflow says about it.
struct DagRead {
    info: AirflowInfo,
    facts: Option<DagFacts>,
    runs: DagRuns,
    failing_run: Option<String>,
    notes: Vec<String>,
}

async fn read_airflow(settings: &Settings, lake: &Lakehouse, table: &TableRef) -> Option<DagRead> {
    let a = settings.airflow.as_ref()?;
    let configured = settings
        .maintenance
        .iter()
        .find(|m| {
            TableRef::parse(&m.table, &settings.trino.catalog, None)
                .ok()
                .as_ref()
                == Some(table)
        })
        .map(|m| m.dag_id.clone());
    let mut read = DagRead {
        info: AirflowInfo {
            url: a.url.to_string(),
            version: None,
            api: None,
            error: None,
        },
        facts: None,
        runs: DagRuns::NotMapped,
        failing_run: None,
        notes: Vec::new(),
    };
    let unreadable = |mut read: DagRead, e: String| {
        read.notes.push(format!("Airflow at {}: {e}", a.url));
        if let Some(d) = &configured {
            read.runs = DagRuns::Failed {
                dag_id: d.clone(),
                error: e.clone(),
            };
        }
        read.info.error = Some(e);
        read
    };
    let client = match AirflowClient::connect(a).await {
        Ok(c) => c,
        Err(e) => return Some(unreadable(read, e.to_string())),
    };
    read.info.version = Some(client.server_version().version.clone());
    read.info.api = Some(client.api());
    let list = match scan::list(&client).await {
        Ok(l) => l,
        Err(e) => return Some(unreadable(read, e.to_string())),
    };
    // The whole catalog's names decide whether a DAG id's word names this table only.
    let mut tables = lake
        .discover(&settings.trino.schemas, &[])
        .await
        .unwrap_or_default();
    if !tables.contains(table) {
        tables.push(table.clone());
    }
    let names: Vec<DagName> = list
        .dags
        .iter()
        .map(|d| DagName {
            dag_id: d.dag_id.clone(),
            tags: d.tags.clone(),
        })
        .collect();
    let Some(mapped) = map_dags(&tables, &names, &settings.maintenance).remove(table) else {
        return Some(read);
    };
    let Some(dag) = list.dags.iter().find(|d| d.dag_id == mapped.dag_id) else {
        let e = "not among Airflow's maintenance DAGs".to_string();
        read.notes.push(format!("DAG {}: {e}", mapped.dag_id));
        read.runs = DagRuns::Failed {
            dag_id: mapped.dag_id,
            error: e,
        };
        return Some(read);
    };
    let interval = settings
        .maintenance
        .iter()
        .find(|m| m.dag_id == dag.dag_id)
        .and_then(|m| m.interval);
    let ids = std::iter::once(dag.dag_id.clone()).collect();
    let (facts, runs, mut code) = tokio::join!(
        client.fetch_facts(dag, interval.unwrap_or(settings.health.dag_interval)),
        client.runs(&dag.dag_id, a.runs),
        crate::airflow::scan::codes(&client, std::slice::from_ref(dag), &ids, 1)
    );
    match facts {
        Ok(mut f) => {
            f.guessed = mapped.guessed;
            f.code = code.remove(&dag.dag_id);
            if let Some(i) = interval {
                f.expected_interval = i;
            }
            read.facts = Some(f);
        }
        Err(e) => read.notes.push(format!(
            "DAG {}: its facts could not be read: {e}",
            dag.dag_id
        )),
    }
    read.runs = match runs {
        Ok(runs) => {
            read.failing_run =
                crate::airflow::facts::latest_failed(&runs).map(|r| r.run_id.clone());
            DagRuns::Loaded {
                dag_id: dag.dag_id.clone(),
                runs,
            }
        }
        Err(e) => DagRuns::Failed {
            dag_id: dag.dag_id.clone(),
            error: e.to_string(),
        },
    };
    Some(read)
}

/// Why a postmortem could not be made: the name, the coordinator or the table.
#[derive(Clone, Debug, thiserror::Error)]
pub enum GatherError {
    #[error(transparent)]
    Table(#[from] TableNameError),
    #[error("Trino {url}: {source}")]
    Client { url: String, source: TrinoError },
    #[error("cannot reach Trino at {url}: {source}")]
    Unreachable { url: String, source: TrinoError },
    #[error("cannot read table {table}: {source}")]
    Stats { table: TableRef, source: TrinoError },
}

/// Read everything the postmortem of `name` (`[catalog.]schema.table`) needs. An error
/// names what could not be read (the table, the coordinator); what only adds context
/// (Airflow, the snapshots) becomes a note in the document instead.
pub async fn gather(settings: &Settings, name: &str) -> Result<Postmortem, GatherError> {
    let table = TableRef::parse(
        name,
        &settings.trino.catalog,
        settings.trino.schemas.first().map(String::as_str),
    )?;
    let url = || settings.trino.url.to_string();
    let client = Client::from_settings(&settings.trino, settings.query_timeout)
        .map_err(|source| GatherError::Client { url: url(), source })?;
    // The table's own catalog: its connector says how it is read.
    let lake = Lakehouse::new(client, table.catalog.clone(), settings.health.clone());
    let info = lake
        .connect()
        .await
        .map_err(|source| GatherError::Unreachable { url: url(), source })?;
    let trino = TrinoInfo {
        url: settings.trino.url.to_string(),
        version: Some(info.node_version.version.clone()),
        uptime_seconds: info.uptime_secs(),
    };
    let (stats, snapshots, airflow, queries) = tokio::join!(
        lake.table_stats(&table),
        lake.snapshots(&table),
        read_airflow(settings, &lake, &table),
        lake.table_queries(&table)
    );
    let stats = stats.map_err(|source| GatherError::Stats {
        table: table.clone(),
        source,
    })?;
    let mut notes = Vec::new();
    let queries = match queries {
        Ok(q) => Some(q),
        Err(e) => {
            notes.push(format!(
                "the coordinator's query history for {table} could not be read: {e}"
            ));
            None
        }
    };
    let snapshots = match snapshots {
        Ok(s) => Some(s),
        Err(e) => {
            notes.push(format!("the snapshots of {table}: {e}"));
            None
        }
    };
    let (info, facts, runs, failing_run) = match airflow {
        Some(a) => {
            notes.extend(a.notes);
            (Some(a.info), a.facts, a.runs, a.failing_run)
        }
        None => (None, None, DagRuns::NoAirflow, None),
    };
    let now = Utc::now();
    let health = evaluate(&stats, facts.as_ref(), &settings.health, now);
    let dag = facts.as_ref().map(|f| DagSection {
        failing_run: failing_run.filter(|_| f.failing_task.is_some()),
        // The whole-table rule knows this table's size.
        code: f
            .code
            .as_ref()
            .map(|c| {
                c.evidence(&|t| {
                    crate::dag_code::names_table(t, &table)
                        .then(|| crate::dag_code::large(&stats))
                        .flatten()
                })
            })
            .unwrap_or_default(),
        ..DagSection::new(f)
    });
    let audit = AuditLog::new(settings.audit_log.clone()).read();
    Ok(postmortem::build(Sources {
        now,
        profile: &settings.profile,
        table: &table,
        stats: Some(&stats),
        health: &health,
        error: None,
        trino,
        airflow: info,
        dag,
        snapshots: snapshots.as_deref(),
        runs: &runs,
        stale_after: chrono::Duration::from_std(settings.health.compaction_warn)
            .unwrap_or(chrono::Duration::hours(36)),
        audit_log: Some(settings.audit_log.display().to_string()),
        audit: &audit,
        queries,
        notes,
    }))
}

/// `floe report`: the postmortem to stdout or `output` (0600); exit with the table's
/// status as `floe check` does (0 OK, 1 WARNING, 2 CRITICAL), 3 when it could not be
/// made, naming what failed.
pub async fn cli(
    settings: &Settings,
    table: &str,
    format: PostmortemFormat,
    output: Option<&Path>,
    timeout: Duration,
) -> ExitCode {
    let doc = match tokio::time::timeout(timeout, gather(settings, table)).await {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => {
            eprintln!("floe: UNKNOWN: {}", sanitize(&e.to_string()));
            return ExitCode::from(UNKNOWN_EXIT);
        }
        Err(_) => {
            eprintln!(
                "floe: UNKNOWN: the report of {} did not finish within its {} timeout (--timeout)",
                sanitize(table),
                humantime::format_duration(timeout)
            );
            return ExitCode::from(UNKNOWN_EXIT);
        }
    };
    let text = match format {
        PostmortemFormat::Markdown => doc.markdown(),
        PostmortemFormat::Json => doc.json(),
    };
    let code = doc.status().exit_code() as u8;
    match output {
        Some(path) => {
            if let Err(e) = write_private(path, &text) {
                eprintln!(
                    "floe: UNKNOWN: cannot write the report to {}: {e}",
                    sanitize(&path.display().to_string())
                );
                return ExitCode::from(UNKNOWN_EXIT);
            }
            println!(
                "{}: {} written to {}",
                doc.status().label(),
                sanitize(&doc.name),
                sanitize(&path.display().to_string())
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }
    ExitCode::from(code)
}

/// Write `text` to `path` atomically, readable by its owner only: the postmortem holds
/// table names, statements and server errors.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    crate::files::write_atomic(path, text.as_bytes(), 0o600)
}
