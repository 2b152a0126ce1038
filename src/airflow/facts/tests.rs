//! `dag_facts` and its helpers at their boundaries.

use chrono::{DateTime, TimeZone, Utc};

use super::*;
use crate::airflow::model::RunType;

const DEFAULT: Duration = Duration::from_secs(36 * 3600);

fn at(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, day, hour, 0, 0).unwrap()
}

fn dag(schedule: Option<&str>) -> Dag {
    Dag {
        dag_id: "compact_documents".into(),
        display_name: "compact_documents".into(),
        description: None,
        paused: false,
        active: true,
        has_import_errors: false,
        owners: vec!["data-platform".into()],
        tags: vec!["maintenance".into()],
        schedule: schedule.map(str::to_string),
        schedule_description: None,
        schedule_interval: schedule.and_then(schedule_interval),
        next_run: None,
        next_logical_date: None,
        fileloc: Some("/dags/compact_documents.py".into()),
        relative_fileloc: Some("compact_documents.py".into()),
        bundle_name: Some("dags-folder".into()),
    }
}

/// A v2 scheduled run of `day` that ran from 00:00:05 to 00:00:10 on that day.
fn run(day: u32, state: DagRunState) -> DagRun {
    let due = at(day, 0);
    let finished = state.is_finished();
    DagRun {
        dag_id: "compact_documents".into(),
        run_id: format!("scheduled__2026-11-{day:02}T00:00:00+00:00"),
        state,
        run_type: RunType::Scheduled,
        logical_date: Some(due),
        run_after: Some(due),
        data_interval_start: Some(due),
        data_interval_end: Some(due),
        queued_at: Some(due + chrono::Duration::seconds(1)),
        start_date: Some(due + chrono::Duration::seconds(5)),
        end_date: finished.then(|| due + chrono::Duration::seconds(10)),
        duration: finished.then(|| Duration::from_secs(5)),
        triggered_by: Some("timetable".into()),
        external_trigger: None,
        note: None,
    }
}

fn failure(day: u32) -> TaskFailure {
    TaskFailure {
        run_id: format!("scheduled__2026-11-{day:02}T00:00:00+00:00"),
        task_id: "compact".into(),
        try_number: 1,
        error_line: Some(
            "ConnectionError: could not connect to Trino at trino-old.internal:8080".into(),
        ),
    }
}

fn ti(task: &str, state: Option<TaskState>, end_hour: Option<u32>) -> TaskInstance {
    TaskInstance {
        dag_id: "d".into(),
        run_id: "r".into(),
        task_id: task.into(),
        map_index: -1,
        state,
        try_number: 1,
        max_tries: Some(0),
        start_date: end_hour.map(|h| at(29, h)),
        end_date: end_hour.map(|h| at(29, h)),
        duration: None,
        hostname: None,
        operator: None,
        pool: None,
        queue: None,
        note: None,
    }
}

#[test]
fn schedules_floe_can_read() {
    let h = Some(Duration::from_secs(3600));
    let d = Some(Duration::from_secs(86_400));
    let w = Some(Duration::from_secs(7 * 86_400));
    assert_eq!(schedule_interval("@daily"), d);
    assert_eq!(schedule_interval("@midnight"), d);
    assert_eq!(schedule_interval("0 0 * * *"), d);
    assert_eq!(schedule_interval("30 2 * * *"), d);
    assert_eq!(schedule_interval(" 59 23 * * * "), d);
    assert_eq!(schedule_interval("@hourly"), h);
    assert_eq!(schedule_interval("0 * * * *"), h);
    assert_eq!(schedule_interval("15 * * * *"), h);
    assert_eq!(schedule_interval("@weekly"), w);
    assert_eq!(schedule_interval("0 0 * * 0"), w);
    // Not simple enough to be sure: the configured default applies.
    for s in [
        "*/5 * * * *",
        "0 */6 * * *",
        "0 0,12 * * *",
        "0 0 1 * *",
        "0 0 * 1 *",
        "0 0 * * 1-5",
        "60 0 * * *",
        "0 24 * * *",
        "@monthly",
        "@once",
        "Asset",
        "",
        "0 0 * *",
    ] {
        assert_eq!(schedule_interval(s), None, "{s:?}");
    }
}

#[test]
fn the_incident_dag() {
    let runs: Vec<DagRun> = (16..=29).map(|d| run(d, DagRunState::Failed)).collect();
    let f = dag_facts(
        &dag(Some("0 0 * * *")),
        &runs,
        Some(&failure(29)),
        None,
        DEFAULT,
    );
    assert_eq!(f.dag_id, "compact_documents");
    assert!(!f.guessed && !f.paused);
    assert_eq!(f.last_run_state, Some(DagRunState::Failed));
    assert_eq!(
        f.last_run_at,
        Some(at(29, 0) + chrono::Duration::seconds(10))
    );
    assert_eq!(f.last_success_at, None);
    assert_eq!(f.failed_runs, 14);
    assert_eq!(f.failing_task.as_deref(), Some("compact"));
    assert!(f.error_line.unwrap().contains("trino-old.internal:8080"));
    assert_eq!(f.expected_interval, Duration::from_secs(86_400));
    assert_eq!(f.import_error, None);
}

#[test]
fn order_of_the_input_does_not_matter() {
    let mut runs: Vec<DagRun> = (20..=29)
        .map(|d| {
            run(
                d,
                if d == 25 {
                    DagRunState::Success
                } else {
                    DagRunState::Failed
                },
            )
        })
        .collect();
    runs.reverse();
    runs.swap(0, 4);
    let f = dag_facts(
        &dag(Some("@daily")),
        &runs,
        Some(&failure(29)),
        None,
        DEFAULT,
    );
    assert_eq!(f.last_run_state, Some(DagRunState::Failed));
    assert_eq!(
        f.last_success_at,
        Some(at(25, 0) + chrono::Duration::seconds(10))
    );
    assert_eq!(f.failed_runs, 9);
    assert_eq!(f.failing_task.as_deref(), Some("compact"));
}

#[test]
fn a_failure_from_another_run_is_not_the_latest_failure() {
    let runs = vec![run(28, DagRunState::Failed), run(29, DagRunState::Failed)];
    let f = dag_facts(&dag(None), &runs, Some(&failure(28)), None, DEFAULT);
    assert_eq!(f.failing_task, None);
    assert_eq!(f.error_line, None);
    assert_eq!(f.failed_runs, 2);
    assert_eq!(f.expected_interval, DEFAULT, "no schedule: the default");
}

#[test]
fn a_run_in_progress_does_not_hide_the_last_result() {
    let runs = vec![
        run(27, DagRunState::Success),
        run(28, DagRunState::Failed),
        run(29, DagRunState::Running),
    ];
    let f = dag_facts(
        &dag(Some("@daily")),
        &runs,
        Some(&failure(28)),
        None,
        DEFAULT,
    );
    assert_eq!(f.last_run_state, Some(DagRunState::Failed));
    assert_eq!(
        f.last_run_at,
        Some(at(28, 0) + chrono::Duration::seconds(10))
    );
    assert_eq!(f.failing_task.as_deref(), Some("compact"));

    // Only unfinished runs: the newest of them.
    let queued = vec![run(29, DagRunState::Queued)];
    let f = dag_facts(&dag(Some("@daily")), &queued, None, None, DEFAULT);
    assert_eq!(f.last_run_state, Some(DagRunState::Queued));
    assert_eq!(
        f.last_run_at,
        Some(at(29, 0) + chrono::Duration::seconds(5))
    );
    assert_eq!(f.last_success_at, None);
    assert_eq!(f.failed_runs, 0);
}

#[test]
fn swallowed_errors_look_like_success() {
    let runs: Vec<DagRun> = (16..=29).map(|d| run(d, DagRunState::Success)).collect();
    let f = dag_facts(&dag(Some("@daily")), &runs, None, None, DEFAULT);
    assert_eq!(f.last_run_state, Some(DagRunState::Success));
    assert_eq!(
        f.last_success_at,
        Some(at(29, 0) + chrono::Duration::seconds(10))
    );
    assert_eq!(f.failed_runs, 0);
    assert_eq!(f.failing_task, None);
}

#[test]
fn paused_without_runs_and_import_errors() {
    let mut d = dag(Some("@hourly"));
    d.paused = true;
    let f = dag_facts(&d, &[], None, None, DEFAULT);
    assert!(f.paused);
    assert_eq!(f.last_run_state, None);
    assert_eq!(f.last_run_at, None);
    assert_eq!(f.expected_interval, Duration::from_secs(3600));

    let mut broken = dag(Some("@daily"));
    broken.has_import_errors = true;
    let f = dag_facts(
        &broken,
        &[],
        None,
        Some("ModuleNotFoundError: No module named 'x'"),
        DEFAULT,
    );
    assert_eq!(
        f.import_error.as_deref(),
        Some("ModuleNotFoundError: No module named 'x'")
    );
    let f = dag_facts(&broken, &[], None, None, DEFAULT);
    assert!(
        f.import_error.unwrap().contains("import error"),
        "flagged but not found"
    );
}

#[test]
fn import_errors_match_by_file() {
    let errs = vec![
        DagImportError {
            id: Some(1),
            filename: "broken_dag.py".into(),
            bundle_name: Some("dags-folder".into()),
            timestamp: None,
            stack_trace: "Traceback …\nModuleNotFoundError: No module named 'x'\n".into(),
        },
        DagImportError {
            id: Some(2),
            filename: "/dags/compact_documents.py".into(),
            bundle_name: None,
            timestamp: None,
            stack_trace: "SyntaxError: invalid syntax".into(),
        },
    ];
    let mut d = dag(None);
    d.relative_fileloc = Some("broken_dag.py".into());
    d.fileloc = Some("/dags/broken_dag.py".into());
    assert_eq!(import_error_for(&d, &errs).unwrap().id, Some(1));
    d.bundle_name = Some("other-bundle".into());
    assert_eq!(
        import_error_for(&d, &errs),
        None,
        "same file name, other bundle"
    );
    let mut v1 = dag(None);
    v1.relative_fileloc = None;
    v1.bundle_name = None;
    assert_eq!(import_error_for(&v1, &errs).unwrap().id, Some(2));
}

#[test]
fn the_failing_task_is_the_one_that_failed_first() {
    let tasks = vec![
        ti("check_table", Some(TaskState::Success), Some(1)),
        ti("report", Some(TaskState::UpstreamFailed), None),
        ti("compact", Some(TaskState::Failed), Some(2)),
        ti("late", Some(TaskState::Failed), Some(3)),
    ];
    assert_eq!(failing_task(&tasks).unwrap().task_id, "compact");
    let none = vec![
        ti("report", Some(TaskState::UpstreamFailed), None),
        ti("x", None, None),
    ];
    assert_eq!(failing_task(&none), None);
    let retrying = vec![ti("compact", Some(TaskState::UpForRetry), Some(2))];
    assert_eq!(failing_task(&retrying).unwrap().task_id, "compact");
}
