//! What floe reads from Airflow, one model for both APIs (v2 of Airflow 3, v1 of Airflow 2).
//! The wire documents and their lenient decoding are in [`wire`](super::wire).

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::parse_time;
use crate::spelled::spelled;

/// Which REST API the server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiVersion {
    /// Airflow 2.x, `/api/v1`, HTTP basic auth.
    V1,
    /// Airflow 3.x, `/api/v2`, JWT from `/auth/token`.
    V2,
}

impl ApiVersion {
    /// The path prefix under the base URL, without slashes.
    pub fn prefix(self) -> &'static str {
        match self {
            ApiVersion::V1 => "api/v1",
            ApiVersion::V2 => "api/v2",
        }
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ApiVersion::V1 => "v1",
            ApiVersion::V2 => "v2",
        })
    }
}

spelled! {
    /// State of a DAG run.
    DagRunState else Unknown {
        Queued = "queued",
        Running = "running",
        Success = "success",
        Failed = "failed",
    }
}

impl DagRunState {
    /// Success or failed: the run will not change any more (until cleared).
    pub fn is_finished(&self) -> bool {
        matches!(self, DagRunState::Success | DagRunState::Failed)
    }
}

spelled! {
    /// Why a DAG run exists.
    RunType else Unknown {
        Backfill = "backfill",
        Scheduled = "scheduled",
        Manual = "manual",
        OperatorTriggered = "operator_triggered",
        AssetTriggered = "asset_triggered",
        AssetMaterialization = "asset_materialization",
        /// Airflow 2's name for asset-triggered runs.
        DatasetTriggered = "dataset_triggered",
    }
}

spelled! {
    /// State of a task instance (`None` in the model when not yet scheduled).
    TaskState else Unknown {
        Removed = "removed",
        Scheduled = "scheduled",
        Queued = "queued",
        Running = "running",
        Success = "success",
        Restarting = "restarting",
        Failed = "failed",
        UpForRetry = "up_for_retry",
        UpForReschedule = "up_for_reschedule",
        UpstreamFailed = "upstream_failed",
        Skipped = "skipped",
        Deferred = "deferred",
        AwaitingInput = "awaiting_input",
    }
}

spelled! {
    /// Status of one component in the health document.
    HealthStatus else Unknown {
        Healthy = "healthy",
        Unhealthy = "unhealthy",
    }
}

/// `GET /api/v2/version` or `/api/v1/version`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
pub struct ServerVersion {
    pub version: String,
    #[serde(default)]
    pub git_version: Option<String>,
}

impl ServerVersion {
    /// The major version (`3` of `3.3.2`), when the text starts with a number.
    pub fn major(&self) -> Option<u32> {
        major_of(&self.version)
    }
}

pub(crate) fn major_of(version: &str) -> Option<u32> {
    let digits: String = version
        .trim()
        .trim_start_matches(['v', 'V'])
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// One component of the health document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ComponentHealth {
    /// `None`: the component never reported (e.g. no triggerer is running).
    pub status: Option<HealthStatus>,
    pub latest_heartbeat: Option<DateTime<Utc>>,
}

/// `GET /api/v2/monitor/health` or `/api/v1/health`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AirflowHealth {
    pub metadatabase: ComponentHealth,
    pub scheduler: ComponentHealth,
    /// Airflow 2 reports it only for a standalone dag processor.
    pub dag_processor: ComponentHealth,
    pub triggerer: ComponentHealth,
}

impl AirflowHealth {
    pub(crate) fn from_value(v: &Value) -> AirflowHealth {
        let part = |name: &str| {
            let o = &v[name];
            let status = o["status"].as_str().map(HealthStatus::parse);
            let latest_heartbeat = o
                .as_object()
                .and_then(|m| {
                    m.iter()
                        .find(|(k, _)| k.starts_with("latest_") && k.ends_with("heartbeat"))
                })
                .and_then(|(_, t)| t.as_str())
                .and_then(parse_time);
            ComponentHealth {
                status,
                latest_heartbeat,
            }
        };
        AirflowHealth {
            metadatabase: part("metadatabase"),
            scheduler: part("scheduler"),
            dag_processor: part("dag_processor"),
            triggerer: part("triggerer"),
        }
    }
}

/// A DAG as listed by the API.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Dag {
    pub dag_id: String,
    /// `dag_display_name` when the server has one, else the id.
    pub display_name: String,
    pub description: Option<String>,
    pub paused: bool,
    /// False for DAGs whose file is gone (v1 `is_active`, v2 `!is_stale`).
    pub active: bool,
    pub has_import_errors: bool,
    pub owners: Vec<String>,
    pub tags: Vec<String>,
    /// The schedule as the server summarises it: `@daily`, `0 0 * * *`,
    /// `timedelta(days=1)`, `Asset`; `None` for DAGs run only by hand.
    pub schedule: Option<String>,
    /// The server's sentence for it (`At 00:00`), when it has one.
    pub schedule_description: Option<String>,
    /// How often the schedule fires, when floe can tell (presets, simple crons, timedeltas).
    pub schedule_interval: Option<Duration>,
    /// When the next run is due (v2 `next_dagrun_run_after`, v1 `next_dagrun_create_after`).
    pub next_run: Option<DateTime<Utc>>,
    /// The logical date of the next run.
    pub next_logical_date: Option<DateTime<Utc>>,
    /// Absolute path of the DAG file on the server.
    pub fileloc: Option<String>,
    /// Path relative to its bundle (v2).
    pub relative_fileloc: Option<String>,
    pub bundle_name: Option<String>,
}

/// A DAG run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DagRun {
    pub dag_id: String,
    pub run_id: String,
    pub state: DagRunState,
    pub run_type: RunType,
    /// `None` for v2 runs triggered with `logical_date: null`; v1 `execution_date`.
    pub logical_date: Option<DateTime<Utc>>,
    /// When the run was due or triggered (v2 only).
    pub run_after: Option<DateTime<Utc>>,
    pub data_interval_start: Option<DateTime<Utc>>,
    pub data_interval_end: Option<DateTime<Utc>>,
    pub queued_at: Option<DateTime<Utc>>,
    pub start_date: Option<DateTime<Utc>>,
    pub end_date: Option<DateTime<Utc>>,
    /// The server's duration (v2), else end − start.
    pub duration: Option<Duration>,
    /// `rest_api`, `timetable`, `ui` … (v2 only).
    pub triggered_by: Option<String>,
    /// v1 only.
    pub external_trigger: Option<bool>,
    pub note: Option<String>,
}

impl DagRun {
    /// The time the run is ordered by: `run_after` (v2) else the logical date (v1), else
    /// when it started.
    pub fn sort_time(&self) -> Option<DateTime<Utc>> {
        self.run_after
            .or(self.logical_date)
            .or(self.queued_at)
            .or(self.start_date)
    }

    /// The latest thing that happened to it: finished, else started, else queued or due.
    pub fn last_activity(&self) -> Option<DateTime<Utc>> {
        self.end_date
            .or(self.start_date)
            .or(self.queued_at)
            .or(self.run_after)
            .or(self.logical_date)
    }
}

/// A task instance of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskInstance {
    pub dag_id: String,
    pub run_id: String,
    pub task_id: String,
    /// -1 for unmapped tasks.
    pub map_index: i64,
    /// `None` until the scheduler has looked at it.
    pub state: Option<TaskState>,
    /// 0 before the first try on v2; the try whose log to read.
    pub try_number: u32,
    pub max_tries: Option<u32>,
    pub start_date: Option<DateTime<Utc>>,
    pub end_date: Option<DateTime<Utc>>,
    pub duration: Option<Duration>,
    /// `None` before it ran (the server sends `""`).
    pub hostname: Option<String>,
    /// `@task`, `SQLExecuteQueryOperator` …
    pub operator: Option<String>,
    pub pool: Option<String>,
    pub queue: Option<String>,
    pub note: Option<String>,
}

/// A file the DAG processor could not import.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DagImportError {
    pub id: Option<i64>,
    /// Absolute on v1; relative to its bundle on v2.
    pub filename: String,
    pub bundle_name: Option<String>,
    pub timestamp: Option<DateTime<Utc>>,
    pub stack_trace: String,
}

impl DagImportError {
    /// The last non-empty line of the stack trace: the error itself
    /// (`ModuleNotFoundError: No module named 'x'`).
    pub fn summary(&self) -> String {
        self.stack_trace
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("")
            .to_string()
    }
}

/// A connection as the server lists it. The password is never read (the server masks it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Connection {
    pub connection_id: String,
    pub conn_type: String,
    pub description: Option<String>,
    pub host: Option<String>,
    pub login: Option<String>,
    pub schema: Option<String>,
    pub port: Option<u16>,
    pub extra: Option<String>,
    /// Whether the stored connection holds a secret floe never reads (a password, or a
    /// masked value in its extra): `Some` where the server says so (v2 lists a password as
    /// `***`), `None` where it never shows it (v1).
    pub secret: Option<bool>,
}

/// What `POST …/connections/test` said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum ConnectionTest {
    /// The server could connect; its message.
    Passed(String),
    /// The server tried and could not; its message (the error an operator needs).
    Failed(String),
    /// The server refuses to test connections (`[core] test_connection` is not `Enabled`,
    /// or the user may not): nothing was tested.
    NotAllowed(String),
    /// The test ran on what floe sent, which lacks the secret floe never reads, and failed
    /// for lack of it: no verdict on the stored connection. Why, in words.
    NoVerdict(String),
}

/// Where Airflow ran a connection's test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TestSite {
    /// `POST …/connections/test` on the API server (Airflow 3 merges the stored
    /// connection's secrets into what it is sent; Airflow 2 tests only what it is sent).
    ApiServer,
    /// `POST /api/v2/connections/enqueue-test` (Airflow 3.3+): a worker, whose network is
    /// the tasks' own.
    Worker,
}

/// A connection's test and where it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Tested {
    pub test: ConnectionTest,
    pub site: TestSite,
}

/// Which tasks a clear touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ClearScope {
    /// Only failed and upstream-failed tasks (v2 with `only_failed`).
    OnlyFailed,
    /// Every task of the run: v2 without `only_failed`, and always on v1, whose run-clear
    /// endpoint has no such option.
    AllTasks,
}

/// A task a clear touched (or would touch, on a dry run).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClearedTask {
    pub task_id: String,
    pub map_index: i64,
    /// The state before the clear (v2 dry runs; v1 reports no state).
    pub state: Option<TaskState>,
}

/// What the server answered to a run clear.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClearOutcome {
    pub dry_run: bool,
    /// What the clear covers. `AllTasks` with `only_failed` asked means the server could
    /// not honour it (v1).
    pub scope: ClearScope,
    /// Tasks cleared or to be cleared (dry runs list them; v2 real clears return the run).
    pub tasks: Vec<ClearedTask>,
    /// The run after a real clear (now queued), when the server returns it.
    pub run: Option<DagRun>,
}

impl From<&TaskInstance> for ClearedTask {
    fn from(t: &TaskInstance) -> ClearedTask {
        ClearedTask {
            task_id: t.task_id.clone(),
            map_index: t.map_index,
            state: t.state.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
