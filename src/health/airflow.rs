//! Airflow's own health as floe judges it (pure: from what its health endpoint said).

use super::Severity;
use crate::airflow::{AirflowHealth, DagRunState, HealthStatus, TaskState};

/// Components the header should name (unhealthy ones only).
pub fn unhealthy(h: &AirflowHealth) -> Vec<&'static str> {
    [
        ("scheduler", &h.scheduler),
        ("dag-processor", &h.dag_processor),
        ("metadatabase", &h.metadatabase),
    ]
    .into_iter()
    .filter(|(_, c)| c.status == Some(HealthStatus::Unhealthy))
    .map(|(n, _)| n)
    .collect()
}

/// How a DAG run's state reads (`None`: the DAG never ran).
pub fn run_severity(state: Option<&DagRunState>) -> Severity {
    match state {
        Some(DagRunState::Failed) => Severity::Critical,
        Some(DagRunState::Queued | DagRunState::Running) => Severity::Warning,
        Some(DagRunState::Success) => Severity::Ok,
        Some(DagRunState::Unknown(_)) | None => Severity::Info,
    }
}

/// How a task instance's state reads (`None`: not scheduled yet).
pub fn task_severity(state: Option<&TaskState>) -> Severity {
    match state {
        Some(TaskState::Failed | TaskState::UpstreamFailed) => Severity::Critical,
        Some(
            TaskState::UpForRetry
            | TaskState::Restarting
            | TaskState::Queued
            | TaskState::Running
            | TaskState::Scheduled
            | TaskState::Deferred,
        ) => Severity::Warning,
        Some(TaskState::Success) => Severity::Ok,
        Some(
            TaskState::Removed
            | TaskState::UpForReschedule
            | TaskState::Skipped
            | TaskState::AwaitingInput
            | TaskState::Unknown(_),
        )
        | None => Severity::Info,
    }
}

/// Where a task instance stands in the drill-down: the failed task on top, then what
/// failed because of it, then what will be tried again, then the rest.
pub fn task_rank(state: Option<&TaskState>) -> u8 {
    match state {
        Some(TaskState::Failed) => 0,
        Some(TaskState::UpstreamFailed) => 1,
        Some(TaskState::UpForRetry) => 2,
        _ => 3,
    }
}
