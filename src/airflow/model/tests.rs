//! Decoding real-shaped documents of both APIs (shapes as measured in
//! notes/airflow.md against Airflow 3.3.2 and 2.10.5).

use super::*;
use crate::airflow::wire::*;

fn t(s: &str) -> DateTime<Utc> {
    parse_time(s).unwrap()
}

#[test]
fn v2_dag_with_unknown_fields() {
    let doc = r#"{
        "dag_id": "compact_documents", "dag_display_name": "compact_documents",
        "is_paused": false, "is_stale": false, "last_parsed_time": "2026-11-29T17:20:01.5Z",
        "last_parse_duration": 0.41, "last_expired": null, "bundle_name": "dags-folder",
        "bundle_version": null, "relative_fileloc": "compact_documents.py",
        "fileloc": "/repo/tests/lab/airflow/dags/compact_documents.py",
        "description": "Daily optimize of iceberg.zoning.documents",
        "timetable_summary": "0 0 * * *", "timetable_description": "At 00:00",
        "timetable_periodic": true,
        "tags": [{"name": "maintenance", "dag_id": "compact_documents", "dag_display_name": "compact_documents"},
                 {"name": "iceberg.zoning.documents", "dag_id": "compact_documents", "dag_display_name": "compact_documents"}],
        "max_active_tasks": 16, "max_active_runs": 2, "max_consecutive_failed_dag_runs": 0,
        "has_task_concurrency_limits": false, "has_import_errors": false,
        "next_dagrun_logical_date": "2026-11-30T00:00:00Z",
        "next_dagrun_data_interval_start": "2026-11-30T00:00:00Z",
        "next_dagrun_data_interval_end": "2026-11-30T00:00:00Z",
        "next_dagrun_run_after": "2026-11-30T00:00:00Z",
        "owners": ["data-platform"], "file_token": "…", "is_backfillable": true,
        "a_field_from_the_future": {"x": 1}
    }"#;
    let d = Dag::from(serde_json::from_str::<WireDag>(doc).unwrap());
    assert_eq!(d.dag_id, "compact_documents");
    assert!(!d.paused);
    assert!(d.active);
    assert!(!d.has_import_errors);
    assert_eq!(d.owners, vec!["data-platform"]);
    assert_eq!(d.tags, vec!["iceberg.zoning.documents", "maintenance"]);
    assert_eq!(d.schedule.as_deref(), Some("0 0 * * *"));
    assert_eq!(d.schedule_description.as_deref(), Some("At 00:00"));
    assert_eq!(d.schedule_interval, Some(Duration::from_secs(86_400)));
    assert_eq!(d.next_run, Some(t("2026-11-30T00:00:00Z")));
    assert_eq!(d.relative_fileloc.as_deref(), Some("compact_documents.py"));
    assert_eq!(d.bundle_name.as_deref(), Some("dags-folder"));
}

#[test]
fn v1_dag_schedules() {
    let doc = r#"{
        "dag_id": "expire_snapshots", "root_dag_id": null, "is_paused": true, "is_active": true,
        "is_subdag": false, "last_parsed_time": "2026-11-29T17:31:19.206401+00:00",
        "last_pickled": null, "last_expired": null, "scheduler_lock": null, "pickle_id": null,
        "default_view": "grid", "fileloc": "/repo/tests/lab/airflow/dags/expire_snapshots.py",
        "file_token": "…", "owners": ["data-platform"], "description": null,
        "schedule_interval": {"__type": "CronExpression", "value": "@daily"},
        "timetable_description": "At 00:00", "tags": [{"name": "maintenance"}],
        "max_active_tasks": 16, "max_active_runs": 16, "has_task_concurrency_limits": false,
        "has_import_errors": false, "next_dagrun": "2026-11-29T00:00:00+00:00",
        "next_dagrun_data_interval_start": "2026-11-29T00:00:00+00:00",
        "next_dagrun_data_interval_end": "2026-11-30T00:00:00+00:00",
        "next_dagrun_create_after": "2026-11-30T00:00:00+00:00"
    }"#;
    let d = Dag::from(serde_json::from_str::<WireDag>(doc).unwrap());
    assert!(d.paused);
    assert!(d.active);
    assert_eq!(d.description, None);
    assert_eq!(d.schedule.as_deref(), Some("@daily"));
    assert_eq!(d.schedule_interval, Some(Duration::from_secs(86_400)));
    assert_eq!(
        d.next_run,
        Some(t("2026-11-30T00:00:00Z")),
        "create_after, not the logical date"
    );
    assert_eq!(d.next_logical_date, Some(t("2026-11-29T00:00:00Z")));
    assert_eq!(d.relative_fileloc, None);

    let td = r#"{"dag_id": "x", "is_paused": null, "tags": null, "owners": [],
        "schedule_interval": {"__type": "TimeDelta", "days": 0, "seconds": 21600, "microseconds": 0}}"#;
    let d = Dag::from(serde_json::from_str::<WireDag>(td).unwrap());
    assert!(!d.paused, "a null is_paused is not paused");
    assert!(d.tags.is_empty());
    assert_eq!(d.schedule.as_deref(), Some("timedelta(seconds=21600)"));
    assert_eq!(d.schedule_interval, Some(Duration::from_secs(6 * 3600)));

    let none = r#"{"dag_id": "manual_only", "schedule_interval": null, "timetable_summary": null}"#;
    let d = Dag::from(serde_json::from_str::<WireDag>(none).unwrap());
    assert_eq!(d.schedule, None);
    assert_eq!(d.schedule_interval, None);
    assert_eq!(d.display_name, "manual_only");
}

#[test]
fn v2_runs_nullable_dates_and_states() {
    let doc = r#"[
        {"dag_run_id":"sync_manual_2","dag_id":"sync_remote_index","dag_display_name":"sync_remote_index",
         "logical_date":null,"queued_at":"2026-11-29T17:22:31.275537Z","start_date":"2026-11-29T17:22:32.854511Z",
         "end_date":"2026-11-29T17:22:40.319238Z","duration":7.464727,"data_interval_start":null,
         "data_interval_end":null,"run_after":"2026-11-29T17:22:31.267339Z","last_scheduling_decision":null,
         "run_type":"manual","state":"failed","triggered_by":"rest_api","triggering_user_name":"admin",
         "conf":{},"note":null,"dag_versions":[],"bundle_version":null,"partition_key":null},
        {"dag_run_id":"manual__2026-11-29T18:00:00.1+00:00","dag_id":"expire_snapshots","logical_date":null,
         "queued_at":"2026-11-29T18:00:00.2Z","start_date":null,"end_date":null,"duration":null,
         "run_after":"2026-11-29T18:00:00.1Z","run_type":"manual","state":"queued","triggered_by":"rest_api"},
        {"dag_run_id":"x","dag_id":"y","run_after":"2026-11-29T00:00:00Z","run_type":"partition_triggered",
         "state":"skipped_by_a_new_release","start_date":"not a date"}
    ]"#;
    let runs: Vec<DagRun> = serde_json::from_str::<Vec<WireRun>>(doc)
        .unwrap()
        .into_iter()
        .map(DagRun::from)
        .collect();
    let failed = &runs[0];
    assert_eq!(failed.state, DagRunState::Failed);
    assert_eq!(failed.run_type, RunType::Manual);
    assert_eq!(failed.logical_date, None);
    assert_eq!(failed.duration, Some(Duration::from_secs_f64(7.464727)));
    assert_eq!(failed.triggered_by.as_deref(), Some("rest_api"));
    assert_eq!(
        failed.last_activity(),
        Some(t("2026-11-29T17:22:40.319238Z"))
    );
    let queued = &runs[1];
    assert_eq!(queued.run_id, "manual__2026-11-29T18:00:00.1+00:00");
    assert_eq!(queued.state, DagRunState::Queued);
    assert!(!queued.state.is_finished());
    assert_eq!((queued.start_date, queued.duration), (None, None));
    assert_eq!(queued.last_activity(), Some(t("2026-11-29T18:00:00.2Z")));
    let odd = &runs[2];
    assert_eq!(
        odd.state,
        DagRunState::Unknown("skipped_by_a_new_release".into())
    );
    assert_eq!(odd.state.as_str(), "skipped_by_a_new_release");
    assert_eq!(odd.run_type, RunType::Unknown("partition_triggered".into()));
    assert_eq!(odd.start_date, None, "an unreadable date is no date");
}

#[test]
fn v1_run_has_execution_date_and_no_duration() {
    let doc = r#"{"conf":{},"dag_id":"compact_documents","dag_run_id":"scheduled__2026-11-28T00:00:00+00:00",
        "data_interval_end":"2026-11-29T00:00:00+00:00","data_interval_start":"2026-11-28T00:00:00+00:00",
        "end_date":"2026-11-29T00:01:10.500000+00:00","execution_date":"2026-11-28T00:00:00+00:00",
        "external_trigger":false,"last_scheduling_decision":"2026-11-29T00:01:10.4+00:00",
        "logical_date":"2026-11-28T00:00:00+00:00","note":null,"run_type":"scheduled",
        "start_date":"2026-11-29T00:00:05.250000+00:00","state":"failed"}"#;
    let r = DagRun::from(serde_json::from_str::<WireRun>(doc).unwrap());
    assert_eq!(r.logical_date, Some(t("2026-11-28T00:00:00Z")));
    assert_eq!(r.run_after, None);
    assert_eq!(r.sort_time(), Some(t("2026-11-28T00:00:00Z")));
    assert_eq!(
        r.duration,
        Some(Duration::from_millis(65_250)),
        "end − start"
    );
    assert_eq!(r.external_trigger, Some(false));
    assert_eq!(r.state, DagRunState::Failed);

    // Only execution_date (older 2.x): it is the logical date.
    let old = r#"{"dag_id":"a","dag_run_id":"b","execution_date":"2026-11-28T00:00:00+00:00","state":"success"}"#;
    let r = DagRun::from(serde_json::from_str::<WireRun>(old).unwrap());
    assert_eq!(r.logical_date, Some(t("2026-11-28T00:00:00Z")));
}

#[test]
fn task_instances_of_both_apis() {
    let v2 = r#"{"id":"0193c5d2-…","task_id":"report","task_display_name":"report","dag_id":"d",
        "dag_run_id":"r","map_index":-1,"logical_date":null,"run_after":"2026-11-29T17:22:31Z",
        "state":null,"try_number":0,"max_tries":0,"start_date":null,"end_date":null,"duration":null,
        "hostname":"","unixname":"root","pid":null,"pool":"default_pool","pool_slots":1,
        "queue":"default","priority_weight":1,"operator":"_PythonDecoratedOperator",
        "operator_name":"@task","queued_when":null,"scheduled_when":null,"executor":null,
        "executor_config":"{}","note":null,"rendered_map_index":null,"rendered_fields":{},
        "trigger":null,"triggerer_job":null,"dag_version":null}"#;
    let ti = TaskInstance::from(serde_json::from_str::<WireTaskInstance>(v2).unwrap());
    assert_eq!(ti.state, None, "null state: not yet scheduled");
    assert_eq!(ti.try_number, 0);
    assert_eq!(ti.hostname, None, "\"\" means it has not run");
    assert_eq!(ti.operator.as_deref(), Some("@task"));
    assert_eq!(ti.map_index, -1);

    let v1 = r#"{"dag_id":"compact_documents","dag_run_id":"scheduled__2026-11-28T00:00:00+00:00",
        "duration":3.2,"end_date":"2026-11-29T00:00:12+00:00","execution_date":"2026-11-28T00:00:00+00:00",
        "executor_config":"{}","hostname":"vm","map_index":-1,"max_tries":0,"note":null,
        "operator":"_PythonDecoratedOperator","pid":4242,"pool":"default_pool","pool_slots":1,
        "priority_weight":2,"queue":"default","queued_when":"2026-11-29T00:00:06+00:00",
        "rendered_fields":{},"sla_miss":null,"start_date":"2026-11-29T00:00:08.8+00:00",
        "state":"failed","task_display_name":"compact","task_id":"compact","trigger":null,
        "triggerer_job":null,"try_number":1,"unixname":"root"}"#;
    let ti = TaskInstance::from(serde_json::from_str::<WireTaskInstance>(v1).unwrap());
    assert_eq!(ti.state, Some(TaskState::Failed));
    assert_eq!(ti.try_number, 1);
    assert_eq!(ti.duration, Some(Duration::from_secs_f64(3.2)));
    assert_eq!(ti.hostname.as_deref(), Some("vm"));
    assert_eq!(ti.operator.as_deref(), Some("_PythonDecoratedOperator"));

    let shutdown = r#"{"task_id":"t","state":"shutdown","try_number":2,
        "duration":99.0,"start_date":"2026-11-29T00:00:00Z"}"#;
    let ti = TaskInstance::from(serde_json::from_str::<WireTaskInstance>(shutdown).unwrap());
    assert_eq!(ti.state, Some(TaskState::Unknown("shutdown".into())));
    let running = r#"{"task_id":"t","state":"running","try_number":2,"duration":99.0}"#;
    let ti = TaskInstance::from(serde_json::from_str::<WireTaskInstance>(running).unwrap());
    assert_eq!(
        ti.duration, None,
        "a running retry keeps the previous try's duration on v2"
    );
}

#[test]
fn health_documents() {
    let v2: Value = serde_json::from_str(
        r#"{"metadatabase":{"status":"healthy"},
            "scheduler":{"status":"healthy","latest_scheduler_heartbeat":"2026-11-29T17:22:26.319879Z"},
            "triggerer":{"status":null,"latest_triggerer_heartbeat":null},
            "dag_processor":{"status":"unhealthy","latest_dag_processor_heartbeat":"2026-11-29T17:00:00Z"}}"#,
    )
    .unwrap();
    let h = AirflowHealth::from_value(&v2);
    assert_eq!(h.metadatabase.status, Some(HealthStatus::Healthy));
    assert_eq!(
        h.scheduler.latest_heartbeat,
        Some(t("2026-11-29T17:22:26.319879Z"))
    );
    assert_eq!(h.triggerer, ComponentHealth::default());
    assert_eq!(h.dag_processor.status, Some(HealthStatus::Unhealthy));

    let v1: Value = serde_json::from_str(
        r#"{"metadatabase":{"status":"healthy"},"scheduler":{"status":"healthy",
            "latest_scheduler_heartbeat":"2026-11-29T17:31:19.206401+00:00"}}"#,
    )
    .unwrap();
    let h = AirflowHealth::from_value(&v1);
    assert_eq!(h.dag_processor.status, None, "absent component");
    assert_eq!(
        h.scheduler.latest_heartbeat,
        Some(t("2026-11-29T17:31:19.206401Z"))
    );
}

#[test]
fn import_errors_connections_versions() {
    let e: DagImportError = serde_json::from_str::<WireImportError>(
        r#"{"import_error_id":1,"timestamp":"2026-11-29T17:20:00.1Z","filename":"broken_dag.py",
            "bundle_name":"dags-folder","stack_trace":"Traceback (most recent call last):\n  File \"<frozen importlib._bootstrap>\", line 241, in _call_with_frames_removed\n  File \"/dags/broken_dag.py\", line 8, in <module>\n    import lakehouse_maintenance_helpers\nModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'\n"}"#,
    )
    .unwrap()
    .into();
    assert_eq!(e.filename, "broken_dag.py");
    assert_eq!(
        e.summary(),
        "ModuleNotFoundError: No module named 'lakehouse_maintenance_helpers'"
    );

    let c: Connection = serde_json::from_str::<WireConnection>(
        r#"{"connection_id":"trino_documents","conn_type":"trino","description":"Trino for zoning.documents compaction",
            "host":"trino-old.internal","login":"etl","schema":"zoning","port":8080,"password":"***",
            "extra":"{\"catalog\": \"iceberg\", \"protocol\": \"http\"}","team_name":null}"#,
    )
    .unwrap()
    .into();
    assert_eq!(c.port, Some(8080));
    let body = c.test_body();
    assert_eq!(body["host"], "trino-old.internal");
    assert_eq!(body["port"], 8080);
    assert!(
        body.get("password").is_none(),
        "the masked password is never sent back"
    );
    assert!(body.get("team_name").is_none());

    let v: ServerVersion = serde_json::from_str(
        r#"{"version":"3.3.2","git_version":".release:aa19d2dbb9ed187ec01957a92848d9b005e9ba9d"}"#,
    )
    .unwrap();
    assert_eq!(v.major(), Some(3));
    assert_eq!(major_of("2.10.5"), Some(2));
    assert_eq!(major_of("v3.0.0rc1"), Some(3));
    assert_eq!(major_of("main"), None);
}

#[test]
fn v1_clear_references() {
    let refs: Vec<WireTaskRef> = serde_json::from_str(
        r#"[{"dag_id":"compact_documents","dag_run_id":"scheduled__2026-11-28T00:00:00+00:00",
             "execution_date":"2026-11-28T00:00:00+00:00","task_id":"compact"}]"#,
    )
    .unwrap();
    let tasks: Vec<ClearedTask> = refs.into_iter().map(ClearedTask::from).collect();
    assert_eq!(tasks[0].task_id, "compact");
    assert_eq!(tasks[0].state, None);
    assert_eq!(tasks[0].map_index, -1);
}
