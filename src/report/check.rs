//! `floe check`: connect, discover, read every table with bounded concurrency, read the
//! maintenance DAGs, correlate, evaluate.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;

use super::{Report, TableReport, TrinoInfo};
use crate::config::Settings;
use crate::health::{DagFacts, Finding, Health, Rule, Severity, evaluate};
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::queries::Lakehouse;
use crate::trino::{Client, TrinoError};

mod airflow;
pub(crate) use airflow::{AirflowRead, read_airflow};

/// The default of `floe check --timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What is still running, for the message of a check that ran out of time.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<Mutex<Vec<String>>>);

/// Marks one piece of work done when dropped (finished or abandoned).
pub(crate) struct RunningGuard {
    running: Running,
    what: String,
}

impl Running {
    pub(crate) fn start(&self, what: String) -> RunningGuard {
        if let Ok(mut v) = self.0.lock() {
            v.push(what.clone());
        }
        RunningGuard {
            running: self.clone(),
            what,
        }
    }

    pub(crate) fn snapshot(&self) -> Vec<String> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        if let Ok(mut v) = self.running.0.lock()
            && let Some(i) = v.iter().position(|w| *w == self.what)
        {
            v.remove(i);
        }
    }
}

/// The message of a check that ran out of time: what was still running, at most ten.
fn timed_out(timeout: Duration, running: &[String]) -> String {
    let mut m = format!(
        "the check did not finish within its {} timeout (--timeout)",
        humantime::format_duration(timeout)
    );
    if running.is_empty() {
        return m;
    }
    m.push_str("; still running: ");
    m.push_str(
        &running
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("; "),
    );
    if running.len() > 10 {
        m.push_str(&format!("; and {} more", running.len() - 10));
    }
    m
}

/// What a check that found no table says: the filters it applied.
fn no_tables_message(catalog: &str, schemas: &[String], globs: &[String]) -> String {
    let list = |v: &[String]| {
        if v.is_empty() {
            "all".to_string()
        } else {
            v.join(", ")
        }
    };
    format!(
        "no table matched (catalog {catalog}; schemas: {}; tables: {}): the filters, the catalog or the user's privileges leave nothing to check",
        list(schemas),
        list(globs)
    )
}

/// Evaluate every table the settings select (plus `--table` globs), and the maintenance
/// DAGs when Airflow is configured, within [`DEFAULT_TIMEOUT`].
pub async fn run(settings: &Settings, globs: &[String]) -> Report {
    run_within(settings, globs, DEFAULT_TIMEOUT).await
}

/// [`run`] with an overall deadline: past `timeout` the report is UNKNOWN (exit 3) and
/// names what was still running (which tables' statements, which Airflow calls); the
/// statements still running are cancelled on Trino.
pub async fn run_within(settings: &Settings, globs: &[String], timeout: Duration) -> Report {
    run_cached(settings, globs, timeout, None).await
}

/// [`run_within`], taking a table's stats from the stats cache (the TUI's warm start)
/// when they were read at most `cached_max_age` ago; `None`: every table read fresh.
pub async fn run_cached(
    settings: &Settings,
    globs: &[String],
    timeout: Duration,
    cached_max_age: Option<Duration>,
) -> Report {
    let running = Running::default();
    let mut work = Box::pin(run_tracked(settings, globs, &running, cached_max_age));
    tokio::select! {
        report = &mut work => report,
        _ = tokio::time::sleep(timeout) => {
            let still = running.snapshot();
            // Dropping the work sends DELETE for every query it had running; give those
            // requests a moment before the process exits.
            drop(work);
            tokio::time::sleep(Duration::from_millis(500)).await;
            let mut report = empty_report(settings);
            report.fatal = Some(timed_out(timeout, &still));
            report
        }
    }
}

/// A report of `settings`' cluster with nothing read yet.
pub(crate) fn empty_report(settings: &Settings) -> Report {
    Report {
        generated_at: Utc::now(),
        profile: settings.profile.clone(),
        trino: TrinoInfo {
            url: settings.trino.url.to_string(),
            version: None,
            uptime_seconds: None,
        },
        airflow: None,
        tables: Vec::new(),
        dags: Vec::new(),
        findings: Vec::new(),
        connections: Vec::new(),
        fatal: None,
        warnings: settings.warnings(),
    }
}

async fn run_tracked(
    settings: &Settings,
    globs: &[String],
    running: &Running,
    cached_max_age: Option<Duration>,
) -> Report {
    let mut report = empty_report(settings);
    let Some(lake) = connect(settings, running, &mut report).await else {
        return report;
    };
    let mut all_globs = settings.trino.tables.clone();
    all_globs.extend(globs.iter().cloned());
    // The DAGs' code is read for the DAGs that maintain a listed table: the fleet read
    // lists them.
    let (listed, tables_read) = tokio::sync::oneshot::channel();
    let fleet = async {
        let f = read_fleet(settings, &all_globs, &lake, running, cached_max_age).await;
        let tables = f.as_ref().map_or_else(
            |_| Vec::new(),
            |f| f.tables.iter().map(|(t, _)| t.clone()).collect(),
        );
        let _ = listed.send(tables);
        f
    };
    let airflow = read_airflow(settings, running, tables_read);
    let (fleet, airflow) = tokio::join!(fleet, airflow);
    let results = match fleet {
        Ok(f) => f,
        Err(e) => {
            report.fatal = Some(format!(
                "cannot list the tables of catalog {}: {e}",
                settings.trino.catalog
            ));
            return report;
        }
    };
    if let Some(w) = results.warning {
        report.warnings.push(w);
    }
    assemble(
        &mut report,
        results.tables,
        airflow,
        settings,
        &all_globs,
        Utc::now(),
    );
    for t in &mut report.tables {
        t.format = Some(lake.format_of_catalog(&t.table.catalog));
    }
    report
}

/// The report of what was read, as of `now`: each table's verdict (with the facts of the
/// DAG that maintains it), each DAG's, Airflow's own findings and connections, worst DAG
/// first. `globs` are the listing's filters (what an empty listing names). What `floe
/// check` and each refresh of `floe serve` make of their reads.
pub(crate) fn assemble(
    report: &mut Report,
    results: Vec<(TableRef, Result<TableStats, TrinoError>)>,
    airflow: Option<AirflowRead>,
    settings: &Settings,
    globs: &[String],
    now: chrono::DateTime<Utc>,
) {
    let tables: Vec<TableRef> = results.iter().map(|(t, _)| t.clone()).collect();
    if tables.is_empty() {
        // Nothing seen is not the same as nothing wrong: a typo in --table, a schema that
        // does not exist, or a user whose SELECT was revoked all read this way.
        report.findings.push(Finding {
            rule: Rule::NoTables,
            severity: Severity::Unknown,
            message: no_tables_message(&settings.trino.catalog, &settings.trino.schemas, globs),
            penalty: 0,
        });
    }
    let (mapping, facts_by_dag) = match airflow {
        Some(a) => airflow::dag_reports(report, a, &tables, settings, now),
        None => Default::default(),
    };
    for (table, r) in results {
        let dag = mapping.get(&table).and_then(|m| {
            facts_by_dag.get(&m.dag_id).map(|f| DagFacts {
                guessed: m.guessed,
                ..f.clone()
            })
        });
        report
            .tables
            .push(table_report(table, r, dag, settings, now));
    }
    report.tables.sort_by(|a, b| a.table.cmp(&b.table));
    report.dags.sort_by(|a, b| {
        b.health
            .status
            .rank()
            .cmp(&a.health.status.rank())
            .then(a.facts.dag_id.cmp(&b.facts.dag_id))
    });
    report.generated_at = now;
}

/// Connect to Trino; `None` (with the report's fatal error set) when it fails.
async fn connect(settings: &Settings, running: &Running, report: &mut Report) -> Option<Lakehouse> {
    let client = match Client::from_settings(&settings.trino, settings.query_timeout) {
        Ok(c) => c,
        Err(e) => {
            report.fatal = Some(e.to_string());
            return None;
        }
    };
    let lake = Lakehouse::new(
        client,
        settings.trino.catalog.clone(),
        settings.health.clone(),
    )
    .with_catalogs_of(&settings.trino)
    .with_fallbacks_beside(&settings.stats_cache);
    let connecting = running.start(format!("Trino: connecting to {}", settings.trino.url));
    let connected = lake.connect().await;
    drop(connecting);
    match connected {
        Ok(info) => {
            report.trino.version = Some(info.node_version.version.clone());
            report.trino.uptime_seconds = info.uptime_secs();
            Some(lake)
        }
        Err(e) => {
            report.fatal = Some(e.to_string());
            None
        }
    }
}

/// Every table's stats, or why they could not be read, in listing order; and what the
/// report says of the cache.
struct FleetRead {
    tables: Vec<(TableRef, Result<TableStats, TrinoError>)>,
    warning: Option<String>,
}

/// The fleet read as the TUI reads it ([`crate::refresh`]): from the stats cache the TUI
/// and earlier checks keep, every cached table probed and only those that changed read
/// again (the tables never read surveyed, ten a statement, their files read where they
/// can change the verdict); with `--cached-max-age` the tables read that recently are
/// taken as they are. What was read is kept in the cache for the next run.
async fn read_fleet(
    settings: &Settings,
    globs: &[String],
    lake: &Lakehouse,
    running: &Running,
    cached_max_age: Option<Duration>,
) -> Result<FleetRead, TrinoError> {
    use crate::refresh::{Refresh, TableRead, VecRecords, drive};
    let url = settings.trino.url.as_str();
    let now = Utc::now();
    let warm = crate::cache::load(&settings.stats_cache, &settings.profile, url);
    let young = |e: &crate::cache::Entry| {
        cached_max_age.is_some_and(|age| {
            now.signed_duration_since(e.read_at)
                .to_std()
                .is_ok_and(|a| a <= age)
        })
    };
    let trusted: Vec<TableRef> = warm
        .iter()
        .filter(|e| young(e))
        .map(|e| e.table.clone())
        .collect();
    let oldest_trusted = warm.iter().filter(|e| young(e)).map(|e| e.read_at).min();
    let oldest = warm.iter().map(|e| e.read_at).min();
    let mut records = VecRecords(
        warm.into_iter()
            .map(|e| {
                let trust = young(&e);
                let mut r = TableRead::cached(e.stats, e.probe, e.read_at);
                if trust {
                    // Taken as it is: no probe (--cached-max-age).
                    r.cached = false;
                    r.checked_at = Some(now);
                }
                (e.table, r)
            })
            .collect(),
    );
    // Every cached table is probed (a cached verdict is confirmed or read again), none
    // by rotation: a check looks at every table it does not trust.
    let mut policy = crate::refresh::RefreshPolicy::of(settings);
    policy.full_every = None;
    let mut refresh = Refresh::new(policy, 0);
    if !records.0.is_empty() {
        refresh.warm(now, oldest);
    }
    let scan = settings.health.scan();
    let reader = drive::Reader {
        lake,
        schemas: settings.trino.schemas.clone(),
        globs: globs.to_vec(),
        scan: &scan,
        refresh_every: settings.refresh,
    };
    let watch = |read: &crate::refresh::Read| running.start(format!("Trino: {}", read.describe()));
    drive::drive(&mut refresh, &mut records, &reader, false, Utc::now, watch).await?;
    let entries: Vec<crate::cache::Entry> = records
        .0
        .iter()
        .filter_map(|(t, r)| {
            Some(crate::cache::Entry {
                profile: settings.profile.clone(),
                url: url.to_string(),
                table: t.clone(),
                probe: r.probe,
                read_at: r.read_at?,
                stats: r.stats.clone()?,
            })
        })
        .collect();
    if let Err(e) = crate::cache::merge(&settings.stats_cache, &settings.profile, url, entries) {
        tracing::warn!(path = %settings.stats_cache.display(), "cannot write the stats cache: {e}");
    }
    let listed: std::collections::HashSet<&TableRef> = records.0.iter().map(|(t, _)| t).collect();
    let from_cache = trusted.iter().filter(|t| listed.contains(t)).count();
    let warning = oldest_trusted.filter(|_| from_cache > 0).map(|oldest| {
        format!(
            "{} of {} tables from the stats cache (read up to {} ago, --cached-max-age)",
            from_cache,
            records.0.len(),
            crate::fmt::human_duration(Utc::now().signed_duration_since(oldest).num_seconds())
        )
    });
    let tables = records
        .0
        .into_iter()
        .map(|(t, r)| {
            let result = match (r.error, r.stats) {
                (Some(e), _) => Err(e),
                (None, Some(st)) => Ok(st),
                (None, None) => Err(TrinoError::Internal(format!("{t} was not read"))),
            };
            (t, result)
        })
        .collect();
    Ok(FleetRead { tables, warning })
}

/// One table's part of the report: its verdict, or UNKNOWN naming the failed read.
pub(crate) fn table_report(
    table: TableRef,
    r: Result<TableStats, TrinoError>,
    dag: Option<DagFacts>,
    settings: &Settings,
    now: chrono::DateTime<Utc>,
) -> TableReport {
    match r {
        Ok(stats) => TableReport {
            health: evaluate(&stats, dag.as_ref(), &settings.health, now),
            table,
            stats: Some(stats),
            error: None,
            dag,
            format: None,
        },
        Err(e) => TableReport {
            health: Health {
                status: Severity::Unknown,
                score: 0,
                findings: vec![Finding {
                    rule: Rule::Unreadable,
                    severity: Severity::Unknown,
                    message: format!("health query failed: {e}"),
                    penalty: 0,
                }],
            },
            table,
            stats: None,
            error: Some(e.to_string()),
            dag,
            format: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_names_what_was_still_running() {
        let running = Running::default();
        let a = running.start("Trino: the health queries of iceberg.zoning.documents".into());
        let b = running.start("Airflow: runs and logs of DAG compact_documents".into());
        let done = running.start("Trino: the health queries of iceberg.audit.events".into());
        drop(done);
        let m = timed_out(Duration::from_secs(600), &running.snapshot());
        assert_eq!(
            m,
            "the check did not finish within its 10m timeout (--timeout); still running: \
             Trino: the health queries of iceberg.zoning.documents; \
             Airflow: runs and logs of DAG compact_documents"
        );
        drop((a, b));
        assert!(running.snapshot().is_empty());
        let many: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
        assert!(timed_out(Duration::from_secs(1), &many).ends_with("t9; and 2 more"));
    }
}
