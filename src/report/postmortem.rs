//! The postmortem of one table (`floe report TABLE`, `:export md`): the incident as an
//! operator pastes it into a write-up — the findings with their reasons, the timeline and
//! its sentence, the maintenance DAG's failing task and error line, the Trino coordinator
//! it was read from, and every maintenance action the audit log holds for the table.
//!
//! Pure: the caller gathers what was read; this builds the document and renders it as
//! markdown (every server string made inert and unable to leave its table cell or code
//! span) or JSON (the real strings, serde-escaped).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::record::{DagRecord, TableRecord, timestamp};
use super::{AirflowInfo, TrinoInfo};
use crate::health::{DagFacts, Health, Severity};
use crate::lakehouse::model::{SnapshotInfo, TableRef, TableStats};
use crate::lakehouse::query_history::TableQueries;
use crate::mutation::audit::{Action, Record};
use crate::timeline::{self, DagRuns, Timeline};

mod markdown;
mod sequence;

pub use sequence::{Step, sequence, symptom_after};

/// The maintenance DAG as the postmortem tells it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DagSection {
    pub dag_id: String,
    /// The mapping was guessed from the DAG's id or tags, not configured.
    pub guessed: bool,
    pub paused: bool,
    pub last_run_state: Option<String>,
    pub last_run_at: Option<String>,
    pub last_success_at: Option<String>,
    /// Failed runs in the window floe looked at.
    pub failed_runs: u32,
    pub failing_task: Option<String>,
    /// The run the failing task belongs to, when known.
    pub failing_run: Option<String>,
    /// The error line of the failing task's log.
    pub error_line: Option<String>,
    pub import_error: Option<String>,
    /// What the DAG's own code says (`code: may hide failures: compact_permits.py:56 …`):
    /// advice, with file and line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub code: Vec<String>,
}

impl DagSection {
    pub fn new(f: &DagFacts) -> DagSection {
        DagSection {
            dag_id: f.dag_id.clone(),
            guessed: f.guessed,
            paused: f.paused,
            last_run_state: f.last_run_state.as_ref().map(|s| s.to_string()),
            last_run_at: timestamp(f.last_run_at),
            last_success_at: timestamp(f.last_success_at),
            failed_runs: f.failed_runs,
            failing_task: f.failing_task.clone(),
            failing_run: None,
            error_line: f.error_line.clone(),
            import_error: f.import_error.clone(),
            code: f
                .code
                .as_ref()
                .map(|c| c.evidence(&|_| None))
                .unwrap_or_default(),
        }
    }
}

/// The incident of one table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Postmortem {
    pub generated_at: String,
    pub profile: String,
    /// `catalog.schema.table`
    pub name: String,
    /// The table's stats, verdict and findings (the record of `floe check --format json`).
    pub table: TableRecord,
    pub trino: TrinoInfo,
    pub airflow: Option<AirflowInfo>,
    pub dag: Option<DagSection>,
    pub timeline: Timeline,
    /// Where the actions were read from.
    pub audit_log: Option<String>,
    /// Every maintenance action on the table (and its DAG) the audit log holds, oldest first.
    pub actions: Vec<Record>,
    /// The recent queries the coordinator ran that read the table (its own record), when
    /// they were asked for.
    pub queries: Option<TableQueries>,
    /// What could not be read, so the reader knows what is missing.
    pub notes: Vec<String>,
}

/// What the caller read, for [`build`].
pub struct Sources<'a> {
    pub now: DateTime<Utc>,
    pub profile: &'a str,
    pub table: &'a TableRef,
    pub stats: Option<&'a TableStats>,
    pub health: &'a Health,
    /// Why the table's stats could not be read.
    pub error: Option<&'a str>,
    pub trino: TrinoInfo,
    pub airflow: Option<AirflowInfo>,
    pub dag: Option<DagSection>,
    /// The snapshots, when they were read.
    pub snapshots: Option<&'a [SnapshotInfo]>,
    pub runs: &'a DagRuns,
    /// A compaction older than this, with writes after it, "stopped".
    pub stale_after: chrono::Duration,
    pub audit_log: Option<String>,
    /// Every record of the audit log (outcomes), any table.
    pub audit: &'a [Record],
    /// The coordinator's record of the queries that read the table, when read.
    pub queries: Option<TableQueries>,
    pub notes: Vec<String>,
}

/// The Airflow writes the audit log records, whose statement names the DAG second
/// (`trigger compact_documents`, `clear compact_documents <run>`).
const DAG_ACTIONS: [Action; 4] = [
    Action::TriggerDag,
    Action::ClearDagRun,
    Action::PauseDag,
    Action::UnpauseDag,
];

/// The audit records about `table` (its `catalog.schema.table`), and the writes to its
/// maintenance DAG `dag_id`, oldest first.
pub fn actions_for(records: &[Record], table: &str, dag_id: Option<&str>) -> Vec<Record> {
    let mut v: Vec<Record> = records
        .iter()
        .filter(|r| {
            r.table
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case(table))
                || dag_id.is_some_and(|d| {
                    DAG_ACTIONS.contains(&r.action)
                        && r.statement.split_whitespace().nth(1) == Some(d)
                })
        })
        .cloned()
        .collect();
    v.sort_by(|a, b| a.time.cmp(&b.time));
    v
}

/// The connection fixes of the audit log whose connection the DAG's error line names
/// (`… (connection trino_documents): …`): the fix of this incident's cause.
pub fn connection_fixes(records: &[Record], error_line: Option<&str>) -> Vec<Record> {
    let Some(line) = error_line else {
        return Vec::new();
    };
    let named = |id: &str| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        line.match_indices(id).any(|(i, _)| {
            !line[..i].chars().next_back().is_some_and(word)
                && !line[i + id.len()..].chars().next().is_some_and(word)
        })
    };
    records
        .iter()
        .filter(|r| r.action == Action::FixConnection)
        .filter(|r| {
            r.statement
                .strip_prefix("set connection ")
                .and_then(|rest| rest.split_whitespace().next())
                .is_some_and(|id| !id.is_empty() && named(id))
        })
        .cloned()
        .collect()
}

/// [`actions_for`] and the [`connection_fixes`], oldest first.
fn all_actions(records: &[Record], table: &str, dag: Option<&DagSection>) -> Vec<Record> {
    let mut v = actions_for(records, table, dag.map(|d| d.dag_id.as_str()));
    v.extend(connection_fixes(
        records,
        dag.and_then(|d| d.error_line.as_deref()),
    ));
    v.sort_by(|a, b| a.time.cmp(&b.time));
    v
}

impl Postmortem {
    /// Put in the actions of the audit log at `path` (every record of it, any table).
    pub fn with_audit(mut self, path: &std::path::Path, records: &[Record]) -> Postmortem {
        self.actions = all_actions(records, &self.name, self.dag.as_ref());
        self.audit_log = Some(path.display().to_string());
        self
    }
}

pub fn build(src: Sources<'_>) -> Postmortem {
    let name = src.table.to_string();
    let mut record = TableRecord::new(src.table, src.stats, src.health, src.now);
    record.error = src.error.map(str::to_string);
    record.maintenance_dag = src.dag.as_ref().map(|d| DagRecord {
        dag_id: d.dag_id.clone(),
        guessed: d.guessed,
        last_run_state: d.last_run_state.as_ref().map(|s| s.to_string()),
    });
    let mut notes = src.notes;
    let timeline = match src.snapshots {
        Some(s) => timeline::build(s, src.runs, src.now, src.stale_after),
        None => {
            notes.push(format!("the snapshots of {name} were not read"));
            timeline::build(&[], src.runs, src.now, src.stale_after)
        }
    };
    if let DagRuns::Failed { dag_id, error } = src.runs {
        notes.push(format!(
            "the runs of DAG {dag_id} could not be read: {error}"
        ));
    }
    Postmortem {
        generated_at: src.now.to_rfc3339_opts(SecondsFormat::Secs, true),
        profile: src.profile.to_string(),
        actions: all_actions(src.audit, &name, src.dag.as_ref()),
        name,
        table: record,
        trino: src.trino,
        airflow: src.airflow,
        dag: src.dag,
        timeline,
        audit_log: src.audit_log,
        queries: src.queries,
        notes,
    }
}

impl Postmortem {
    /// The overall status: the table's.
    pub fn status(&self) -> Severity {
        self.table.status
    }

    /// The document as JSON: every string as the server sent it, with what serde leaves
    /// raw written as `\uXXXX`.
    pub fn json(&self) -> String {
        let text = serde_json::to_string_pretty(self).expect("a postmortem serializes");
        crate::text::json_escape_unsafe(&text) + "\n"
    }
}

#[cfg(test)]
mod story_tests;
#[cfg(test)]
mod tests;
