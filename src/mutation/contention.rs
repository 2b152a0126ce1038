//! Never two writes on one table: before a plan is drafted and again before each of its
//! statements is sent, floe reads who else writes the table now — the coordinator's
//! running statements (`system.runtime.queries`, any state but FINISHED and FAILED) whose
//! text writes it, and the running tasks of its maintenance DAGs — and a write found
//! refuses the plan, saying who runs it (query id, user, source, how long, its progress).
//!
//! The read costs the coordinator one statement over `system.runtime.queries` (its own
//! memory: no worker, no split), plus one query info (`/v1/query/{id}`) per running write
//! found, for its progress; Airflow, a list of the DAG's newest runs and, for a running
//! one, its task instances. A coordinator that keeps no such record, or a user who may not
//! read it, is said beside the plan, not a refusal; any other failure to read it is (floe
//! cannot tell that the table is free).
//!
//! Query text, users, sources and task ids are the servers': hostile until sanitised where
//! they are shown.

use chrono::{DateTime, Utc};

use crate::airflow::{AirflowClient, AirflowError, DagRunState, TaskState};
use crate::config::MaintenanceMapping;
use crate::health::mapping::{DagName, map_dags};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::queries::Lakehouse;
use crate::lakehouse::query_history::{table_word_pattern, unavailable};
use crate::lakehouse::recent_writes::{WRITE_STATEMENT, names_table, written_target};
use crate::sql::quote_string;
use crate::trino::TrinoError;

/// Runs of a maintenance DAG looked at for a running one (the newest).
const RUNS_LOOKED_AT: usize = 5;

/// A write the coordinator is running on the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningStatement {
    pub query_id: String,
    pub state: String,
    pub user: String,
    pub source: Option<String>,
    /// The statement as the coordinator keeps it (hostile text).
    pub query: String,
    pub elapsed_ms: Option<u64>,
    /// Trino's own progress of it (`progressPercentage`, whole percent), once scheduled.
    pub progress: Option<u8>,
}

/// A running task of one of the table's maintenance DAGs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningTask {
    pub dag_id: String,
    pub run_id: String,
    /// The task running now; `None` between two tasks of the running run.
    pub task_id: Option<String>,
    pub since: Option<DateTime<Utc>>,
}

/// Who else writes a table now, and what could not be read to tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Writers {
    pub table: Option<TableRef>,
    pub statements: Vec<RunningStatement>,
    pub tasks: Vec<RunningTask>,
    /// What was not read (no query history on this coordinator, Airflow unreachable): said
    /// beside a plan, never a refusal.
    pub unread: Vec<String>,
}

impl Writers {
    /// Nobody else writes the table (as far as was read).
    pub fn none(&self) -> bool {
        self.statements.is_empty() && self.tasks.is_empty()
    }

    /// One line per writer: who runs it, how long, its progress.
    pub fn lines(&self, now: DateTime<Utc>) -> Vec<String> {
        let mut out: Vec<String> = self.statements.iter().map(statement_line).collect();
        out.extend(self.tasks.iter().map(|t| task_line(t, now)));
        out
    }

    /// `compact_documents, 40 %`: the DAG (else the statement's query id and user) and
    /// the progress, as Triage shows a compaction running.
    pub fn short(&self) -> String {
        let who = match (self.tasks.first(), self.statements.first()) {
            (Some(t), _) => t.dag_id.clone(),
            (None, Some(s)) => format!("query {} by {}", s.query_id, s.user),
            (None, None) => String::new(),
        };
        match self.statements.iter().find_map(|s| s.progress) {
            Some(p) => format!("{who}, {p} %"),
            None => who,
        }
    }
}

fn statement_line(s: &RunningStatement) -> String {
    let mut l = format!("query {} by {}", s.query_id, s.user);
    if let Some(src) = &s.source {
        l.push_str(&format!(" (source {src})"));
    }
    l.push_str(&format!(", {}", s.state));
    if let Some(ms) = s.elapsed_ms {
        l.push_str(&format!(
            " for {}",
            crate::fmt::human_duration((ms / 1000) as i64)
        ));
    }
    if let Some(p) = s.progress {
        l.push_str(&format!(", {p} %"));
    }
    l.push_str(&format!(": {}", crate::text::clip(&s.query, 160)));
    l
}

fn task_line(t: &RunningTask, now: DateTime<Utc>) -> String {
    let what = match &t.task_id {
        Some(task) => format!("DAG {} runs task {task}", t.dag_id),
        None => format!("DAG {} is running", t.dag_id),
    };
    let since = t
        .since
        .map(|s| {
            format!(
                " for {}",
                crate::fmt::human_duration((now - s).num_seconds().max(0))
            )
        })
        .unwrap_or_default();
    format!("{what} (run {}){since}", t.run_id)
}

/// The plan is refused: another write runs on the table.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} is being written by {}: nothing was sent", .0.table.as_ref().map(ToString::to_string).unwrap_or_default(), .0.lines(Utc::now()).join("; "))]
pub struct Contended(pub Box<Writers>);

/// Whether another write runs on the table could not be told.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "cannot tell whether another write runs on {table}: reading the coordinator's running statements: {source}; nothing was sent"
)]
pub struct Unknown {
    pub table: TableRef,
    pub source: Box<TrinoError>,
}

/// Who else may write the table: the Airflow that runs its maintenance DAGs and those DAGs
/// (none: the coordinator's record only).
#[derive(Clone, Debug, Default)]
pub struct Others {
    pub airflow: Option<AirflowClient>,
    pub dags: Vec<String>,
}

impl Others {
    /// The table's maintenance DAGs as `af` lists them (the configured `[[maintenance]]`
    /// mappings, else the guess from tags and ids the rest of floe makes); a list that
    /// cannot be read is said (`unread`) and leaves Airflow unasked.
    pub async fn of(
        af: Option<AirflowClient>,
        configured: &[MaintenanceMapping],
        t: &TableRef,
        unread: &mut Vec<String>,
    ) -> Others {
        let Some(af) = af else {
            return Others::default();
        };
        match af.configured_dags().await {
            Ok(dags) => {
                let names: Vec<DagName> = dags
                    .iter()
                    .map(|d| DagName {
                        dag_id: d.dag_id.clone(),
                        tags: d.tags.clone(),
                    })
                    .collect();
                let mapped = map_dags(std::slice::from_ref(t), &names, configured);
                Others {
                    dags: mapped
                        .get(t)
                        .map(|m| vec![m.dag_id.clone()])
                        .unwrap_or_default(),
                    airflow: Some(af),
                }
            }
            Err(e) => {
                unread.push(format!(
                    "maintenance DAGs not checked for a running task: {e}"
                ));
                Others::default()
            }
        }
    }
}

/// The statement reading the coordinator's running writes whose text names `t`'s table as
/// a word (refined on the client: the name they write must be `t`'s). Floe's own read of
/// this record starts with SELECT, so it is never among them.
pub fn running_writes_sql(t: &TableRef) -> String {
    let pattern = table_word_pattern(t);
    format!(
        "SELECT query_id, state, \"user\", source, query, created \
         FROM system.runtime.queries \
         WHERE state NOT IN ('FINISHED', 'FAILED') \
         AND regexp_like(query, '{WRITE_STATEMENT}') \
         AND regexp_like(query, {})",
        quote_string(&pattern)
    )
}

/// Who else writes `t` now: the coordinator's running writes of it, each with its
/// progress, and the running tasks of its maintenance DAGs.
pub async fn writers(lake: &Lakehouse, others: &Others, t: &TableRef) -> Result<Writers, Unknown> {
    let mut w = Writers {
        table: Some(t.clone()),
        ..Writers::default()
    };
    let (url, user) = (
        lake.client.url().to_string(),
        lake.client.config().user.clone(),
    );
    let known = no_record()
        .lock()
        .ok()
        .and_then(|m| m.get(&(url.clone(), user.clone())).cloned());
    let read = match known {
        Some(reason) => Err(reason),
        None => match running_statements(lake, t).await {
            Ok(s) => Ok(s),
            Err(e) => match unavailable(&e, &user, &url) {
                // The same answer every time: asked once per coordinator and user.
                Some(reason) => {
                    if let Ok(mut m) = no_record().lock() {
                        m.insert((url, user), reason.clone());
                    }
                    Err(reason)
                }
                None => {
                    return Err(Unknown {
                        table: t.clone(),
                        source: Box::new(e),
                    });
                }
            },
        },
    };
    match read {
        Ok(s) => w.statements = s,
        Err(reason) => w
            .unread
            .push(format!("other writers not checked: {reason}")),
    }
    if let Some(af) = &others.airflow {
        for dag in &others.dags {
            match running_tasks(af, dag).await {
                Ok(tasks) => w.tasks.extend(tasks),
                Err(e) => w
                    .unread
                    .push(format!("DAG {dag} not checked for a running task: {e}")),
            }
        }
    }
    Ok(w)
}

/// Coordinators (URL and user) that keep no record of their running statements, or will
/// not show it to that user, and what they said: process-wide, so the answer is asked for
/// once.
type NoRecord = std::sync::Mutex<std::collections::HashMap<(String, String), String>>;

fn no_record() -> &'static NoRecord {
    static NO_RECORD: std::sync::OnceLock<NoRecord> = std::sync::OnceLock::new();
    NO_RECORD.get_or_init(Default::default)
}

async fn running_statements(
    lake: &Lakehouse,
    t: &TableRef,
) -> Result<Vec<RunningStatement>, TrinoError> {
    let out = lake.client.query(&running_writes_sql(t)).await?;
    let now = Utc::now();
    let mut found = Vec::new();
    for r in &out.rows {
        let Some(q) = crate::trino::client::query_list::ListedQuery::from_row(r) else {
            continue;
        };
        if !written_target(&q.query).is_some_and(|parts| names_table(&parts, t)) {
            continue;
        }
        let created = q.created;
        // The query info for its progress; one the coordinator will not show still counts.
        let info = lake.client.query_info(&q.query_id).await.ok();
        found.push(RunningStatement {
            state: q.state,
            user: q.user,
            source: q.source,
            elapsed_ms: info
                .as_ref()
                .and_then(|i| i.elapsed_ms)
                .or_else(|| created.and_then(|c| u64::try_from((now - c).num_milliseconds()).ok())),
            progress: info
                .as_ref()
                .and_then(|i| i.progress)
                .map(|p| p.round() as u8),
            query: q.query,
            query_id: q.query_id,
        });
    }
    Ok(found)
}

/// The running task of `dag`'s running run, if it has one.
async fn running_tasks(af: &AirflowClient, dag: &str) -> Result<Vec<RunningTask>, AirflowError> {
    let mut out = Vec::new();
    for run in af.runs(dag, RUNS_LOOKED_AT).await? {
        if run.state != DagRunState::Running {
            continue;
        }
        let tasks = af.task_instances(dag, &run.run_id).await?;
        let running: Vec<_> = tasks
            .iter()
            .filter(|t| t.state == Some(TaskState::Running))
            .collect();
        if running.is_empty() {
            out.push(RunningTask {
                dag_id: dag.to_string(),
                run_id: run.run_id.clone(),
                task_id: None,
                since: run.start_date,
            });
        }
        for t in running {
            out.push(RunningTask {
                dag_id: dag.to_string(),
                run_id: run.run_id.clone(),
                task_id: Some(t.task_id.clone()),
                since: t.start_date.or(run.start_date),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_selects_running_writes_naming_the_table_and_never_itself() {
        let t = TableRef::new("iceberg", "zoning", "documents");
        let sql = running_writes_sql(&t);
        assert!(sql.starts_with("SELECT "), "{sql}");
        assert!(sql.contains("state NOT IN ('FINISHED', 'FAILED')"), "{sql}");
        assert!(sql.contains("documents([^a-z0-9_$]|$)"), "{sql}");
        let odd = TableRef::new("iceberg", "finance", "ledger \"q3\" it's-odd");
        let sql = running_writes_sql(&odd);
        assert!(sql.contains(r#"ledger\ \"q3\"\ it\''s\-odd"#), "{sql}");
    }

    #[test]
    fn writers_are_told_with_who_how_long_and_how_far() {
        let now = DateTime::parse_from_rfc3339("2026-12-01T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let w = Writers {
            table: Some(TableRef::new("iceberg", "zoning", "documents")),
            statements: vec![RunningStatement {
                query_id: "20261201_115700_00042_abcde".into(),
                state: "RUNNING".into(),
                user: "etl".into(),
                source: Some("airflow".into()),
                query: "ALTER TABLE iceberg.zoning.documents EXECUTE optimize".into(),
                elapsed_ms: Some(192_000),
                progress: Some(40),
            }],
            tasks: vec![RunningTask {
                dag_id: "compact_documents".into(),
                run_id: "manual__2026-12-01T11:56:00+00:00".into(),
                task_id: Some("compact".into()),
                since: Some(now - chrono::Duration::minutes(4)),
            }],
            unread: vec![],
        };
        assert_eq!(
            w.lines(now),
            vec![
                "query 20261201_115700_00042_abcde by etl (source airflow), RUNNING for 3m, 40 %: ALTER TABLE iceberg.zoning.documents EXECUTE optimize",
                "DAG compact_documents runs task compact (run manual__2026-12-01T11:56:00+00:00) for 4m",
            ]
        );
        assert_eq!(w.short(), "compact_documents, 40 %");
        let alone = Writers {
            tasks: vec![],
            ..w.clone()
        };
        assert_eq!(
            alone.short(),
            "query 20261201_115700_00042_abcde by etl, 40 %"
        );
        assert!(!w.none() && Writers::default().none());
    }
}
