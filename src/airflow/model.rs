//! What floe reads from Airflow, one model for both APIs (v2 of Airflow 3, v1 of Airflow 2).
//!
//! The wire documents are decoded leniently: unknown fields are ignored (new ones appear in
//! minor releases), every date and duration is optional (v2 runs triggered without a logical
//! date have none; v1 runs carry no duration), states fall back to `Unknown(text)`, and a
//! date the client cannot read becomes `None` instead of failing a whole list.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

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

macro_rules! state_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $var:ident = $text:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $var,)*
            /// A value this version of floe does not know, as the server spelled it.
            Unknown(String),
        }

        impl $name {
            pub fn parse(text: &str) -> $name {
                match text {
                    $($text => $name::$var,)*
                    other => $name::Unknown(other.to_string()),
                }
            }

            /// The server's spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$var => $text,)*
                    $name::Unknown(s) => s,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

state_enum! {
    /// State of a DAG run.
    DagRunState {
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

state_enum! {
    /// Why a DAG run exists.
    RunType {
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

state_enum! {
    /// State of a task instance (`None` in the model when not yet scheduled).
    TaskState {
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

state_enum! {
    /// Status of one component in the health document.
    HealthStatus {
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

// ---------------------------------------------------------------------------------------
// Wire documents
// ---------------------------------------------------------------------------------------

/// RFC 3339 (`…Z`, `…+00:00`), with or without fractional seconds.
pub(crate) fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%:z"))
        .map(|d| d.with_timezone(&Utc))
        .ok()
}

fn lenient_time<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(match v {
        Some(Value::String(s)) => {
            let t = parse_time(&s);
            if t.is_none() {
                tracing::debug!(value = %s, "unreadable Airflow timestamp");
            }
            t
        }
        _ => None,
    })
}

fn seconds(v: Option<f64>) -> Option<Duration> {
    v.filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64)
}

fn between(start: Option<DateTime<Utc>>, end: Option<DateTime<Utc>>) -> Option<Duration> {
    let (s, e) = (start?, end?);
    (e - s).to_std().ok()
}

fn nonempty(s: Option<String>) -> Option<String> {
    s.filter(|x| !x.trim().is_empty())
}

#[derive(Deserialize)]
struct WireTag {
    name: String,
}

#[derive(Deserialize)]
pub(crate) struct WireDag {
    dag_id: String,
    #[serde(default)]
    dag_display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    is_paused: Option<bool>,
    #[serde(default)]
    is_active: Option<bool>,
    #[serde(default)]
    is_stale: Option<bool>,
    #[serde(default)]
    has_import_errors: Option<bool>,
    #[serde(default)]
    owners: Option<Vec<String>>,
    #[serde(default)]
    tags: Option<Vec<Option<WireTag>>>,
    #[serde(default)]
    timetable_summary: Option<String>,
    #[serde(default)]
    schedule_interval: Option<Value>,
    #[serde(default)]
    timetable_description: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_run_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_create_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun_logical_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    next_dagrun: Option<DateTime<Utc>>,
    #[serde(default)]
    fileloc: Option<String>,
    #[serde(default)]
    relative_fileloc: Option<String>,
    #[serde(default)]
    bundle_name: Option<String>,
}

impl From<WireDag> for Dag {
    fn from(w: WireDag) -> Dag {
        let (schedule, timedelta) = match (&w.timetable_summary, &w.schedule_interval) {
            (Some(s), _) if !s.trim().is_empty() => (Some(s.trim().to_string()), None),
            (_, Some(v)) => v1_schedule(v),
            _ => (None, None),
        };
        let schedule_interval = timedelta.or_else(|| {
            schedule
                .as_deref()
                .and_then(crate::airflow::facts::schedule_interval)
        });
        let mut tags: Vec<String> = w
            .tags
            .into_iter()
            .flatten()
            .flatten()
            .map(|t| t.name)
            .collect();
        tags.sort();
        tags.dedup();
        Dag {
            display_name: nonempty(w.dag_display_name).unwrap_or_else(|| w.dag_id.clone()),
            dag_id: w.dag_id,
            description: nonempty(w.description),
            paused: w.is_paused.unwrap_or(false),
            active: match (w.is_stale, w.is_active) {
                (Some(stale), _) => !stale,
                (None, Some(active)) => active,
                (None, None) => true,
            },
            has_import_errors: w.has_import_errors.unwrap_or(false),
            owners: w.owners.unwrap_or_default(),
            tags,
            schedule,
            schedule_description: nonempty(w.timetable_description),
            schedule_interval,
            next_run: w
                .next_dagrun_run_after
                .or(w.next_dagrun_create_after)
                .or(w.next_dagrun_logical_date)
                .or(w.next_dagrun),
            next_logical_date: w.next_dagrun_logical_date.or(w.next_dagrun),
            fileloc: nonempty(w.fileloc),
            relative_fileloc: nonempty(w.relative_fileloc),
            bundle_name: nonempty(w.bundle_name),
        }
    }
}

/// v1 `schedule_interval`: `{"__type":"CronExpression","value":"@daily"}`,
/// `{"__type":"TimeDelta","days":1,"seconds":0,"microseconds":0}`, `{"__type":"RelativeDelta",…}`.
fn v1_schedule(v: &Value) -> (Option<String>, Option<Duration>) {
    match v["__type"].as_str() {
        Some("CronExpression") => (v["value"].as_str().map(|s| s.trim().to_string()), None),
        Some("TimeDelta") => {
            let days = v["days"].as_i64().unwrap_or(0);
            let secs = v["seconds"].as_i64().unwrap_or(0);
            let micros = v["microseconds"].as_i64().unwrap_or(0);
            let mut parts = Vec::new();
            if days != 0 {
                parts.push(format!("days={days}"));
            }
            if secs != 0 {
                parts.push(format!("seconds={secs}"));
            }
            if micros != 0 {
                parts.push(format!("microseconds={micros}"));
            }
            let total = days * 86_400 + secs;
            let interval = (total > 0 || micros > 0).then(|| {
                Duration::from_secs(total.max(0) as u64)
                    + Duration::from_micros(micros.max(0) as u64)
            });
            (Some(format!("timedelta({})", parts.join(", "))), interval)
        }
        Some("RelativeDelta") => (Some("relativedelta".into()), None),
        Some(other) => (Some(other.to_string()), None),
        None => (v.as_str().map(str::to_string), None),
    }
}

#[derive(Deserialize)]
pub(crate) struct WireRun {
    dag_id: String,
    #[serde(alias = "run_id")]
    dag_run_id: String,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    run_type: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    logical_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    execution_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    run_after: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    data_interval_start: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    data_interval_end: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    queued_at: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    start_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    triggered_by: Option<String>,
    #[serde(default)]
    external_trigger: Option<bool>,
    #[serde(default)]
    note: Option<String>,
}

impl From<WireRun> for DagRun {
    fn from(w: WireRun) -> DagRun {
        DagRun {
            dag_id: w.dag_id,
            run_id: w.dag_run_id,
            state: DagRunState::parse(w.state.as_deref().unwrap_or("none")),
            run_type: RunType::parse(w.run_type.as_deref().unwrap_or("none")),
            logical_date: w.logical_date.or(w.execution_date),
            run_after: w.run_after,
            data_interval_start: w.data_interval_start,
            data_interval_end: w.data_interval_end,
            queued_at: w.queued_at,
            start_date: w.start_date,
            end_date: w.end_date,
            duration: seconds(w.duration).or_else(|| between(w.start_date, w.end_date)),
            triggered_by: nonempty(w.triggered_by),
            external_trigger: w.external_trigger,
            note: nonempty(w.note),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireTaskInstance {
    #[serde(default)]
    dag_id: String,
    #[serde(default, alias = "run_id")]
    dag_run_id: String,
    task_id: String,
    #[serde(default)]
    map_index: Option<i64>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    try_number: Option<i64>,
    #[serde(default)]
    max_tries: Option<i64>,
    #[serde(default, deserialize_with = "lenient_time")]
    start_date: Option<DateTime<Utc>>,
    #[serde(default, deserialize_with = "lenient_time")]
    end_date: Option<DateTime<Utc>>,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    hostname: Option<String>,
    #[serde(default)]
    operator_name: Option<String>,
    #[serde(default)]
    operator: Option<String>,
    #[serde(default)]
    pool: Option<String>,
    #[serde(default)]
    queue: Option<String>,
    #[serde(default)]
    note: Option<String>,
}

impl From<WireTaskInstance> for TaskInstance {
    fn from(w: WireTaskInstance) -> TaskInstance {
        let state = nonempty(w.state).map(|s| TaskState::parse(&s));
        let duration = if state.as_ref().is_some_and(|s| *s == TaskState::Running) {
            // After a clear, v2 keeps the previous try's duration while the new try runs.
            None
        } else {
            seconds(w.duration).or_else(|| between(w.start_date, w.end_date))
        };
        TaskInstance {
            dag_id: w.dag_id,
            run_id: w.dag_run_id,
            task_id: w.task_id,
            map_index: w.map_index.unwrap_or(-1),
            state,
            try_number: w.try_number.unwrap_or(0).clamp(0, u32::MAX as i64) as u32,
            max_tries: w.max_tries.map(|n| n.clamp(0, u32::MAX as i64) as u32),
            start_date: w.start_date,
            end_date: w.end_date,
            duration,
            hostname: nonempty(w.hostname),
            operator: nonempty(w.operator_name).or(nonempty(w.operator)),
            pool: nonempty(w.pool),
            queue: nonempty(w.queue),
            note: nonempty(w.note),
        }
    }
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

#[derive(Deserialize)]
pub(crate) struct WireImportError {
    #[serde(default)]
    import_error_id: Option<i64>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    bundle_name: Option<String>,
    #[serde(default, deserialize_with = "lenient_time")]
    timestamp: Option<DateTime<Utc>>,
    #[serde(default)]
    stack_trace: Option<String>,
}

impl From<WireImportError> for DagImportError {
    fn from(w: WireImportError) -> DagImportError {
        DagImportError {
            id: w.import_error_id,
            filename: w.filename.unwrap_or_default(),
            bundle_name: nonempty(w.bundle_name),
            timestamp: w.timestamp,
            stack_trace: w.stack_trace.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct WireConnection {
    connection_id: String,
    #[serde(default)]
    conn_type: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    login: Option<String>,
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    port: Option<i64>,
    #[serde(default)]
    extra: Option<String>,
}

impl From<WireConnection> for Connection {
    fn from(w: WireConnection) -> Connection {
        Connection {
            connection_id: w.connection_id,
            conn_type: w.conn_type.unwrap_or_default(),
            description: nonempty(w.description),
            host: nonempty(w.host),
            login: nonempty(w.login),
            schema: nonempty(w.schema),
            port: w.port.and_then(|p| u16::try_from(p).ok()),
            extra: nonempty(w.extra),
        }
    }
}

impl Connection {
    /// The body of `POST …/connections/test`: the fields the server needs to build the hook.
    /// v2 rejects unknown fields, so only the connection's own fields are sent.
    pub(crate) fn test_body(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("connection_id".into(), self.connection_id.clone().into());
        m.insert("conn_type".into(), self.conn_type.clone().into());
        let mut opt = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                m.insert(k.into(), v.clone().into());
            }
        };
        opt("description", &self.description);
        opt("host", &self.host);
        opt("login", &self.login);
        opt("schema", &self.schema);
        opt("extra", &self.extra);
        if let Some(p) = self.port {
            m.insert("port".into(), p.into());
        }
        Value::Object(m)
    }
}

/// v1 clear dry runs list references, not task instances:
/// `{"dag_id","dag_run_id","execution_date","task_id"}`.
#[derive(Deserialize)]
pub(crate) struct WireTaskRef {
    task_id: String,
    #[serde(default)]
    map_index: Option<i64>,
    #[serde(default)]
    state: Option<String>,
}

impl From<WireTaskRef> for ClearedTask {
    fn from(w: WireTaskRef) -> ClearedTask {
        ClearedTask {
            task_id: w.task_id,
            map_index: w.map_index.unwrap_or(-1),
            state: nonempty(w.state).map(|s| TaskState::parse(&s)),
        }
    }
}

#[cfg(test)]
mod tests;
