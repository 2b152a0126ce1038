//! Every input to `update` (Action) and every piece of work it asks for (Effect).

use std::path::PathBuf;
use std::time::Duration;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;

use super::connection::ConnectionMsg;
use super::dags::DagMsg;
use super::export::{ExportData, ExportFormat};
use super::maintenance::MaintenanceMsg;
use super::partitions::PartitionsMsg;
use super::snapshots::SnapshotsMsg;
use super::tables::TablesMsg;
use crate::health::HealthConfig;
use crate::lakehouse::model::{PartitionStats, TableRef};
use crate::lakehouse::plan::Plan;
use crate::trino::TrinoError;

pub use crate::mutation::draft::MaintenanceKind;

#[derive(Clone, Debug)]
pub enum Action {
    /// The runtime is up: load everything.
    Start,
    /// A key, and when it was read from the terminal.
    Key(KeyEvent, std::time::Instant),
    Tick(DateTime<Utc>),
    /// What floe's statements have cost the coordinator so far (the client's meter).
    Cost(crate::trino::Cost),
    Resize(u16, u16),
    /// The coordinator's info, its login, a profile switch.
    Connection(ConnectionMsg),
    /// A result for the Tables tab.
    Tables(TablesMsg),
    /// A result for the Partitions tab.
    Partitions(PartitionsMsg),
    /// A result for the Snapshots tab (its snapshots, its DAG's runs).
    Snapshots(SnapshotsMsg),
    Exported(Result<PathBuf, crate::app::export::ExportError>),
    /// A result for the DAGs tab.
    Dags(DagMsg),
    /// A result for maintenance (a drafted plan, a job's progress and end).
    Maintenance(MaintenanceMsg),
    /// SIGTERM, SIGHUP (a dropped SSH session): leave cleanly.
    Terminate,
    /// The operator chose to leave (on another cluster of `floe --all`, which asked about
    /// this one's jobs too): leave, cancelling them on Trino.
    Leave,
    /// A frame was drawn at this instant: a confirm popup on screen now accepts a `y`
    /// read `confirm_dwell` after it.
    Drawn(std::time::Instant),
    /// The coordinator's record of the recent queries that read a table.
    Queries {
        table: TableRef,
        result: Result<crate::lakehouse::query_history::TableQueries, TrinoError>,
    },
}

/// What the screen needs to know about a (new) profile.
#[derive(Clone, Debug)]
pub struct ProfileView {
    pub profile: String,
    pub trino_url: String,
    pub readonly: bool,
    pub refresh: Duration,
    pub schemas: Vec<String>,
    pub health: HealthConfig,
    pub airflow_url: Option<String>,
    pub maintenance: Vec<crate::config::MaintenanceMapping>,
    /// How floe connects that the operator must see (TLS verification off…).
    pub warnings: Vec<String>,
    /// The profile's last known stats (the stats cache), painted until revalidated.
    pub cached: Vec<crate::cache::Entry>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    FetchServerInfo,
    /// One of the refresh's reads (see [`crate::refresh`]): answered once, whatever
    /// happens, as `TablesMsg::Answer` with its id.
    Read {
        id: crate::refresh::RequestId,
        read: crate::refresh::Read,
    },
    /// Keep the last stats of every table of a profile for the next start.
    SaveCache {
        profile: String,
        url: String,
        entries: Vec<crate::cache::Entry>,
    },
    LoadPartitions {
        request: u64,
        table: TableRef,
    },
    LoadSnapshots {
        request: u64,
        table: TableRef,
    },
    /// The recent queries the coordinator ran that read the table.
    LoadQueries {
        table: TableRef,
    },
    Export {
        format: ExportFormat,
        data: ExportData,
    },
    SwitchProfile(String),
    /// Build a maintenance plan (the runtime reads the layout, threshold, partitions).
    PlanMaintenance {
        /// The connection it is drafted on (`Conn::epoch`), echoed with the plan.
        epoch: u64,
        table: TableRef,
        kind: MaintenanceKind,
        partitions: Option<Vec<PartitionStats>>,
    },
    RunPlan {
        job: u64,
        plan: Plan,
    },
    /// Read who else writes the table now (the coordinator's running statements, its
    /// maintenance DAG's running task): what Triage says instead of proposing `o`.
    CheckWriters {
        table: TableRef,
    },
    CancelJob(u64),
    /// Stop every running job on Trino: cancelled (the operator quit with `y`) or
    /// interrupted (SIGTERM, SIGHUP). The runtime waits, bounded, for the cancels.
    StopJobs {
        interrupted: bool,
    },
    LoadDags {
        generation: u64,
    },
    LoadDagFacts {
        generation: u64,
        dag: Box<crate::airflow::Dag>,
    },
    CheckConnections,
    /// Read a DAG's code: which version Airflow holds and, unless it is `known`, its file.
    LoadDagCode {
        dag: Box<crate::airflow::Dag>,
        known: Option<crate::airflow::endpoints::sources::SourceKey>,
    },
    LoadRuns {
        dag_id: String,
    },
    LoadTasks {
        dag_id: String,
        run_id: String,
    },
    LoadLog {
        dag_id: String,
        run_id: String,
        task_id: String,
        try_number: u32,
    },
    LoadFailure {
        dag_id: String,
    },
    /// The runs of the maintenance DAG of the Snapshots tab's table, for its timeline.
    LoadTimelineRuns {
        dag_id: String,
    },
    /// The log of the Snapshots tab's Delta table: what a vacuum of `retention_secs`
    /// deletes, the rows its deletion vectors hide.
    LoadDeltaLog {
        table: TableRef,
        retention_secs: u64,
    },
    /// Follow a run to its end, then read `tables` again.
    WatchRun {
        dag_id: String,
        run_id: String,
        tables: Vec<TableRef>,
    },
    /// Read an Airflow connection to show the change to `target` as a diff before `y`.
    PlanConnection {
        connection_id: String,
        target: String,
        /// The profile it was asked on ([`crate::app::state::Conn::epoch`]).
        epoch: u64,
    },
    /// The dry run of a clear (what would run again), shown before the real one.
    PlanClear {
        dag_id: String,
        run_id: String,
        /// The profile it was asked on ([`crate::app::state::Conn::epoch`]), echoed with
        /// the dry run: a plan of another profile's run never opens a confirmation here.
        epoch: u64,
    },
    WriteDag(DagWrite),
    /// Put this text (already cleaned) on the terminal's clipboard (OSC 52).
    Copy(String),
    Quit,
}

/// The writes floe makes to Airflow (each confirmed, audited, refused when read-only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DagWrite {
    Trigger {
        dag_id: String,
    },
    Clear {
        dag_id: String,
        run_id: String,
        only_failed: bool,
    },
    SetPaused {
        dag_id: String,
        paused: bool,
    },
    /// Point an Airflow connection at `host:port` (those two fields only).
    SetConnection {
        connection_id: String,
        host: String,
        port: u16,
    },
}

impl DagWrite {
    pub fn dag_id(&self) -> &str {
        match self {
            DagWrite::Trigger { dag_id }
            | DagWrite::Clear { dag_id, .. }
            | DagWrite::SetPaused { dag_id, .. } => dag_id,
            DagWrite::SetConnection { connection_id, .. } => connection_id,
        }
    }

    /// What it is, as the audit log records it (`trigger_dag`, …).
    pub fn action(&self) -> crate::mutation::audit::Action {
        use crate::mutation::audit::Action;
        match self {
            DagWrite::Trigger { .. } => Action::TriggerDag,
            DagWrite::Clear { .. } => Action::ClearDagRun,
            DagWrite::SetPaused { paused: true, .. } => Action::PauseDag,
            DagWrite::SetPaused { paused: false, .. } => Action::UnpauseDag,
            DagWrite::SetConnection { .. } => Action::FixConnection,
        }
    }
}

/// Work that the runtime keeps at most one of at a time: a newer one replaces (and
/// cancels) the older. Mutations (a job, an Airflow write) have no slot: nothing ever
/// replaces them, and a profile switch leaves them running on their own connection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    ServerInfo,
    Cache,
    Partitions,
    Snapshots,
    Queries(TableRef),
    Export,
    Profile,
    Plan,
    Dags,
    DagFacts(String),
    DagCode(String),
    Connections,
    DagRuns,
    DagTasks,
    DagLog,
    DagFailure(String),
    TimelineRuns,
    DeltaLog,
    Watch,
    Writers(TableRef),
}

impl Effect {
    pub fn slot(&self) -> Option<Slot> {
        Some(match self {
            Effect::FetchServerInfo => Slot::ServerInfo,
            Effect::SaveCache { .. } => Slot::Cache,
            Effect::LoadPartitions { .. } => Slot::Partitions,
            Effect::LoadSnapshots { .. } => Slot::Snapshots,
            Effect::LoadQueries { table } => Slot::Queries(table.clone()),
            Effect::Export { .. } => Slot::Export,
            Effect::SwitchProfile(_) => Slot::Profile,
            Effect::PlanMaintenance { .. } => Slot::Plan,
            Effect::LoadDags { .. } => Slot::Dags,
            Effect::LoadDagFacts { dag, .. } => Slot::DagFacts(dag.dag_id.clone()),
            Effect::CheckConnections => Slot::Connections,
            Effect::LoadDagCode { dag, .. } => Slot::DagCode(dag.dag_id.clone()),
            Effect::LoadRuns { .. } => Slot::DagRuns,
            Effect::LoadTasks { .. } => Slot::DagTasks,
            Effect::LoadLog { .. } => Slot::DagLog,
            Effect::LoadFailure { dag_id } => Slot::DagFailure(dag_id.clone()),
            Effect::LoadTimelineRuns { .. } => Slot::TimelineRuns,
            Effect::LoadDeltaLog { .. } => Slot::DeltaLog,
            Effect::PlanClear { .. } | Effect::PlanConnection { .. } => Slot::Plan,
            Effect::WatchRun { .. } => Slot::Watch,
            Effect::CheckWriters { table } => Slot::Writers(table.clone()),
            Effect::Read { .. }
            | Effect::RunPlan { .. }
            | Effect::WriteDag(_)
            | Effect::CancelJob(_)
            | Effect::StopJobs { .. }
            | Effect::Copy(_)
            | Effect::Quit => return None,
        })
    }
}
