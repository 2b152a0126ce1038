//! What triage hands out: incidents, their kind, next actions and where Enter jumps.

use serde::Serialize;

use super::Affected;
use crate::health::Severity;
use crate::lakehouse::model::TableRef;

/// What kind of root cause an incident has (ranked in this order within a severity).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Failing DAGs whose error names an endpoint (and the Airflow connections there).
    Endpoint,
    /// A failing DAG whose error names no endpoint.
    DagFailing,
    /// A DAG that reports success while its table's compaction stays stale.
    DagSucceedsStale,
    /// A maintenance DAG, or a DAG file, that does not import.
    ImportError,
    /// A paused maintenance DAG.
    DagPaused,
    /// A DAG without a success in its expected interval (and no failure to show).
    DagNoSuccess,
    /// Airflow connections that fail their test or point elsewhere, named by no failure.
    Connection,
    /// Airflow itself: unreachable, unhealthy, a DAG unreadable or missing.
    Airflow,
    /// Tables floe could not read.
    Unreadable,
    /// Tables waiting for compaction that no DAG maintains.
    Unmaintained,
    /// Tables waiting for compaction whose DAG reports nothing wrong.
    CompactionDue,
    /// Snapshots past retention.
    SnapshotBloat,
    /// Any other finding of a table (delete files …).
    Table,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Endpoint => "endpoint",
            Kind::DagFailing => "dag_failing",
            Kind::DagSucceedsStale => "dag_succeeds_stale",
            Kind::ImportError => "import_error",
            Kind::DagPaused => "dag_paused",
            Kind::DagNoSuccess => "dag_no_success",
            Kind::Connection => "connection",
            Kind::Airflow => "airflow",
            Kind::Unreadable => "unreadable",
            Kind::Unmaintained => "unmaintained",
            Kind::CompactionDue => "compaction_due",
            Kind::SnapshotBloat => "snapshot_bloat",
            Kind::Table => "table",
        }
    }
}

/// The next action an incident calls for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Next {
    /// Fix (or repoint) Airflow connections, or whatever is at an endpoint.
    FixConnection {
        connections: Vec<String>,
        endpoint: Option<String>,
    },
    /// Read the failing task's log.
    ReadLog { dag_id: String },
    /// Trigger a run of the DAG (after the cause is fixed).
    Trigger { dag_id: String, after_fix: bool },
    /// Unpause the DAG.
    Unpause { dag_id: String },
    /// Fix the DAG file that does not import.
    FixImport { what: String },
    /// Read the DAG's code: it reports success without doing its work.
    ReadDagCode { dag_id: String },
    /// Optimize the table (the worst of the incident).
    Optimize { table: TableRef },
    /// Another write rewrites the table now (its maintenance DAG, a colleague's floe, a
    /// cron): no optimize is proposed beside it; `by`: who, and how far.
    CompactionRunning { table: TableRef, by: String },
    /// Expire the table's snapshots.
    ExpireSnapshots { table: TableRef },
    /// Map a maintenance DAG to the tables (`[[maintenance]]`).
    MapDag,
    /// Look at the findings.
    Inspect,
}

impl Next {
    /// The action in words, without a key (`trigger compact_documents after fixing`).
    pub fn text(&self) -> String {
        match self {
            Next::FixConnection {
                connections,
                endpoint,
            } => match (connections.is_empty(), endpoint) {
                (false, _) => format!("fix Airflow connection {}", connections.join(", ")),
                (true, Some(e)) => format!("fix what the DAG reaches at {e}"),
                (true, None) => "fix the connection".into(),
            },
            Next::ReadLog { dag_id } => format!("read the log of {dag_id}"),
            Next::Trigger { dag_id, after_fix } => {
                if *after_fix {
                    format!("trigger {dag_id} after fixing")
                } else {
                    format!("trigger {dag_id}")
                }
            }
            Next::Unpause { dag_id } => format!("unpause {dag_id}"),
            Next::FixImport { what } => format!("fix the import of {what}"),
            Next::ReadDagCode { dag_id } => {
                format!("read {dag_id}'s code: it reports success without compacting")
            }
            Next::Optimize { table } => format!("optimize {}", table.table),
            Next::CompactionRunning { by, .. } => format!("compaction running ({by})"),
            Next::ExpireSnapshots { table } => format!("expire snapshots of {}", table.table),
            Next::MapDag => "map a maintenance DAG ([[maintenance]])".into(),
            Next::Inspect => "read the findings".into(),
        }
    }
}

/// Where Enter takes the operator to see the evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Jump {
    /// The DAG's newest failed run and its failing task's log.
    DagFailure { dag_id: String },
    /// The DAG in the DAGs tab.
    Dag { dag_id: String },
    /// The DAG's source, at the line its code finding names.
    DagCode {
        dag_id: String,
        file: String,
        line: usize,
    },
    /// The table's partitions.
    Partitions { table: TableRef },
    /// The table's snapshots.
    Snapshots { table: TableRef },
    /// The table's row (and its findings).
    Table { table: TableRef },
    /// The DAGs tab (import errors, Airflow's state).
    Dags,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Incident {
    pub severity: Severity,
    pub kind: Kind,
    /// The root cause with its evidence, in one line.
    pub cause: String,
    /// Affected tables, worst first.
    pub tables: Vec<Affected>,
    /// DAGs involved, in the order the cause names them.
    pub dags: Vec<String>,
    /// The evidence in full: error lines, connection findings, the tables' findings.
    pub evidence: Vec<String>,
    pub next: Vec<Next>,
    pub jump: Jump,
}

impl Incident {
    /// `cause → documents: 2,004 small files, compacted 15d ago; and 2 more tables`.
    pub fn summary(&self) -> String {
        let mut s = self.cause.clone();
        if let Some(t) = self.tables_text(2) {
            s.push_str(" → ");
            s.push_str(&t);
        }
        s
    }

    /// The affected tables in words, the first `max` with their summary.
    pub fn tables_text(&self, max: usize) -> Option<String> {
        if self.tables.is_empty() {
            return None;
        }
        let mut parts: Vec<String> = self
            .tables
            .iter()
            .take(max)
            .map(|a| format!("{}: {}", a.name, a.summary))
            .collect();
        let rest = self.tables.len().saturating_sub(max);
        if rest > 0 {
            parts.push(format!(
                "and {rest} more table{}",
                if rest == 1 { "" } else { "s" }
            ));
        }
        Some(parts.join("; "))
    }

    /// The DAG the incident's DAG actions (`t`, `p`) act on.
    pub fn dag(&self) -> Option<&str> {
        self.dags.first().map(String::as_str)
    }

    /// The table the incident's table actions (`o`, `x`) act on: the worst one.
    pub fn worst_table(&self) -> Option<&TableRef> {
        self.tables.first().map(|a| &a.table)
    }

    /// Lower-cased text a `/` filter searches.
    pub fn search_text(&self) -> String {
        let mut s = self.summary().to_lowercase();
        for t in &self.tables {
            s.push(' ');
            s.push_str(&t.table.to_string().to_lowercase());
        }
        s
    }
}
