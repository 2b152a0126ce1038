//! From what the API returned to what the health rules need ([`DagFacts`]): pure
//! functions over already-fetched data, so every boundary is testable without a server.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::model::{Dag, DagImportError, DagRun, DagRunState, TaskInstance, TaskState};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

/// The failing task of a failed run and what its log says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskFailure {
    pub run_id: String,
    pub task_id: String,
    pub try_number: u32,
    /// The error line of its log, when the log could be read and shows one.
    pub error_line: Option<String>,
}

/// How often a schedule fires, for the schedules floe can read with certainty: the presets
/// (`@hourly`, `@daily`, `@midnight`, `@weekly`), and crons that fire once an hour
/// (`M * * * *`), once a day (`M H * * *`) or once a week (`M H * * D`). Anything else
/// (`*/5 …`, lists, ranges, months, assets, `None`) → `None`: the caller's default applies.
pub fn schedule_interval(schedule: &str) -> Option<Duration> {
    let s = schedule.trim();
    match s {
        "@hourly" => return Some(HOUR),
        "@daily" | "@midnight" => return Some(DAY),
        "@weekly" => return Some(7 * DAY),
        _ => {}
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    if fields.len() != 5 {
        return None;
    }
    let fixed = |f: &str, max: u32| f.parse::<u32>().is_ok_and(|n| n <= max);
    let (min, hour, dom, month, dow) = (fields[0], fields[1], fields[2], fields[3], fields[4]);
    if !fixed(min, 59) || dom != "*" || month != "*" {
        return None;
    }
    match (hour, dow) {
        ("*", "*") => Some(HOUR),
        (h, "*") if fixed(h, 23) => Some(DAY),
        (h, d) if fixed(h, 23) && fixed(d, 7) => Some(7 * DAY),
        _ => None,
    }
}

/// The import error of a DAG's file: v2 matches `relative_fileloc` (and the bundle), v1
/// the absolute `fileloc`.
pub fn import_error_for<'a>(dag: &Dag, errors: &'a [DagImportError]) -> Option<&'a DagImportError> {
    errors.iter().find(|e| {
        let bundle_ok = match (&dag.bundle_name, &e.bundle_name) {
            (Some(a), Some(b)) => a == b,
            _ => true,
        };
        bundle_ok
            && (dag.relative_fileloc.as_deref() == Some(e.filename.as_str())
                || dag.fileloc.as_deref() == Some(e.filename.as_str()))
    })
}

/// The task that failed a run: a `failed` task (not `upstream_failed`), the one that
/// failed first when several did.
pub fn failing_task(tasks: &[TaskInstance]) -> Option<&TaskInstance> {
    tasks
        .iter()
        .filter(|t| t.state == Some(TaskState::Failed))
        .min_by_key(|t| (t.end_date.or(t.start_date), t.task_id.clone()))
        .or_else(|| {
            tasks
                .iter()
                .find(|t| t.state == Some(TaskState::UpForRetry))
        })
}

/// Runs newest first (by `run_after`, else logical date), whatever order they came in.
pub fn newest_first(runs: &[DagRun]) -> Vec<&DagRun> {
    let mut v: Vec<&DagRun> = runs.iter().collect();
    v.sort_by_key(|r| std::cmp::Reverse(r.sort_time()));
    v
}

/// The newest failed run among `runs`.
pub fn latest_failed(runs: &[DagRun]) -> Option<&DagRun> {
    newest_first(runs)
        .into_iter()
        .find(|r| r.state == DagRunState::Failed)
}

/// The summary the health rules read, from already-fetched data.
///
/// * `runs`: the window floe looked at (any order).
/// * last run: the newest **finished** run (success or failed), so a run in progress does
///   not hide that the previous one failed; when none has finished, the newest run.
///   Its time is when it finished (else started, else was queued or due).
/// * last success: when the newest successful run finished.
/// * `failure`: the failing task of the newest failed run, used only when it belongs to
///   that run.
/// * `import_error`: the summary of the DAG file's import error, if any; a DAG flagged
///   `has_import_errors` without a matching error says so.
/// * expected interval: from the schedule (`@daily`/daily cron → 24 h, hourly → 1 h, weekly,
///   v1 timedeltas), else `default_interval` (the config; a maintenance mapping's own
///   interval, when set, should replace the result's `expected_interval`).
/// * `guessed` is left false: whether the table mapping was guessed is the caller's to say.
pub fn dag_facts(
    dag: &Dag,
    runs: &[DagRun],
    failure: Option<&TaskFailure>,
    import_error: Option<&str>,
    default_interval: Duration,
) -> DagFacts {
    let ordered = newest_first(runs);
    let last = ordered
        .iter()
        .find(|r| r.state.is_finished())
        .or(ordered.first());
    let last_success = ordered.iter().find(|r| r.state == DagRunState::Success);
    let failed: Vec<&&DagRun> = ordered
        .iter()
        .filter(|r| r.state == DagRunState::Failed)
        .collect();
    let failure = match (failed.first(), failure) {
        (Some(run), Some(f)) if f.run_id == run.run_id => Some(f),
        _ => None,
    };
    let import_error = import_error.map(str::to_string).or_else(|| {
        dag.has_import_errors
            .then(|| "the DAG file has an import error (not found in the list)".to_string())
    });
    DagFacts {
        dag_id: dag.dag_id.clone(),
        guessed: false,
        paused: dag.paused,
        import_error,
        last_run_state: last.map(|r| r.state.clone()),
        active_run: ordered
            .iter()
            .find(|r| matches!(r.state, DagRunState::Queued | DagRunState::Running))
            .map(|r| r.run_id.clone()),
        last_run_at: last.and_then(|r| r.last_activity()),
        last_success_at: last_success.and_then(|r| r.end_date.or(r.last_activity())),
        failed_runs: failed.len() as u32,
        failing_task: failure.map(|f| f.task_id.clone()),
        error_line: failure.and_then(|f| f.error_line.clone()),
        expected_interval: dag.schedule_interval.unwrap_or(default_interval),
        code: None,
    }
}

/// What floe knows of the Airflow DAG that maintains a table: what its runs, tasks and
/// import errors say, no verdict (the health rules judge it: `health::dag_findings`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DagFacts {
    pub dag_id: String,
    /// True when the mapping was guessed from the DAG's id or tags, not configured.
    pub guessed: bool,
    pub paused: bool,
    pub import_error: Option<String>,
    pub last_run_state: Option<DagRunState>,
    /// The newest run still queued or running, when there is one: the run to watch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_run: Option<String>,
    pub last_run_at: Option<DateTime<Utc>>,
    pub last_success_at: Option<DateTime<Utc>>,
    /// Failed runs in the window floe looked at, and the failing task of the latest one.
    pub failed_runs: u32,
    pub failing_task: Option<String>,
    pub error_line: Option<String>,
    /// How often the DAG should succeed (schedule or config).
    pub expected_interval: Duration,
    /// What its own code says (read once per version of its file, for the DAGs floe maps
    /// to tables); `None` until read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<crate::dag_code::CodeFacts>,
}

impl DagFacts {
    /// The DAG's latest run failed.
    pub fn last_run_failed(&self) -> bool {
        self.last_run_state == Some(DagRunState::Failed)
    }

    /// The latest run's state as Airflow spells it, `none` without a run.
    pub fn last_run_text(&self) -> &str {
        self.last_run_state
            .as_ref()
            .map_or("none", DagRunState::as_str)
    }
}

#[cfg(test)]
mod tests;
