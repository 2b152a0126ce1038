use super::*;
use crate::airflow::{DagRunState, RunType};
use crate::app::testing::dags::with_dags;
use crate::app::testing::{healthy_stats, tref};

fn run(state: DagRunState, secs: i64) -> DagRun {
    let t0 = crate::app::testing::t0();
    DagRun {
        dag_id: "compact_documents".into(),
        run_id: "manual__1".into(),
        state,
        run_type: RunType::Manual,
        logical_date: None,
        run_after: Some(t0),
        data_interval_start: None,
        data_interval_end: None,
        queued_at: Some(t0),
        start_date: Some(t0),
        end_date: (secs > 0).then(|| t0 + chrono::Duration::seconds(secs)),
        duration: None,
        triggered_by: None,
        external_trigger: None,
        note: None,
    }
}

#[test]
fn a_run_already_running_for_a_table_in_trouble_is_followed() {
    use crate::app::action::Action;
    use crate::app::dags::DagMsg;
    use crate::app::update::update;
    let mut s = with_dags();
    let docs = tref("zoning", "documents");
    assert!(
        s.tables.row(&docs).unwrap().health.as_ref().unwrap().status
            >= crate::health::Severity::Warning
    );
    let generation = s.dags.generation;
    let facts = |dag: &str, active: Option<&str>| {
        let mut f = crate::app::testing::dags::failing_facts();
        f.dag_id = dag.into();
        f.active_run = active.map(str::to_string);
        Action::Dags(DagMsg::Facts {
            generation,
            dag_id: dag.into(),
            result: Ok(f),
        })
    };
    // Nothing running: nothing watched.
    let a = facts("compact_documents", None);
    update(&mut s, a);
    assert!(s.dags.watch.is_none());
    // A healthy table's DAG running: not followed.
    let a = facts("compact_parcels", Some("scheduled__p"));
    let fx = update(&mut s, a);
    assert!(s.dags.watch.is_none(), "{fx:?}");
    // The troubled table's DAG running a run floe did not start: followed.
    let a = facts("compact_documents", Some("scheduled__2026-11-30"));
    let fx = update(&mut s, a);
    assert!(
        fx.contains(&Effect::WatchRun {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-30".into(),
            tables: vec![docs.clone()]
        }),
        "{fx:?}"
    );
    let w = s.dags.watch.clone().unwrap();
    assert_eq!(w.run_id, "scheduled__2026-11-30");
    // Seen again while watched: one watch, no second poll.
    let a = facts("compact_documents", Some("scheduled__2026-11-30"));
    let fx = update(&mut s, a);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::WatchRun { .. })),
        "{fx:?}"
    );
    assert_eq!(s.dags.watch.as_ref(), Some(&w));
}

#[test]
fn a_triggered_run_is_followed_then_its_table_read_again() {
    let mut s = with_dags();
    let docs = tref("zoning", "documents");
    let before = s.tables.row(&docs).unwrap().read.stats.clone().unwrap();
    let fx = start(&mut s, "compact_documents", "manual__1");
    assert_eq!(
        fx,
        vec![Effect::WatchRun {
            dag_id: "compact_documents".into(),
            run_id: "manual__1".into(),
            tables: vec![docs.clone()]
        }]
    );
    s.now += chrono::Duration::seconds(80);
    on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Running, 0), vec![])),
        None,
    );
    let st = s.status.clone().unwrap().text;
    assert_eq!(st, "watching compact_documents manual__1: running, 1m");
    let mut after = healthy_stats();
    after.data_files = 75;
    on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Success, 130), vec![])),
        Some(vec![(docs.clone(), Ok(after))]),
    );
    let st = s.status.clone().unwrap().text;
    assert_eq!(
        st,
        format!(
            "compact_documents manual__1 succeeded in 2m; documents {} → 75 files; small files no longer waiting",
            thousands(before.data_files)
        )
    );
    assert_eq!(
        s.tables
            .row(&docs)
            .unwrap()
            .read
            .stats
            .as_ref()
            .unwrap()
            .data_files,
        75
    );
    // Another run's answer changes nothing.
    on_progress(
        &mut s,
        "other",
        Err(crate::airflow::AirflowError::Config("x".into())),
        None,
    );
    assert_eq!(s.status.clone().unwrap().text, st);
}

fn task(id: &str, state: TaskState, try_number: u32) -> TaskInstance {
    TaskInstance {
        dag_id: "compact_documents".into(),
        run_id: "manual__1".into(),
        task_id: id.into(),
        map_index: -1,
        state: Some(state),
        try_number,
        max_tries: None,
        start_date: None,
        end_date: None,
        duration: None,
        hostname: None,
        operator: None,
        pool: None,
        queue: None,
        note: None,
    }
}

fn query(
    id: &str,
    elapsed_ms: u64,
    at: DateTime<Utc>,
) -> crate::lakehouse::query_history::QueryRun {
    crate::lakehouse::query_history::QueryRun {
        query_id: id.into(),
        state: crate::lakehouse::query_history::QueryState::Finished,
        user: "alice".into(),
        source: Some("dashboard".into()),
        query: "SELECT district, count(*)\n FROM documents GROUP BY 1".into(),
        created: Some(at),
        ended: None,
        elapsed_ms: Some(elapsed_ms),
        queued_ms: None,
        cpu_ms: None,
        splits: Some(2_008),
        physical_input_bytes: None,
        physical_written_bytes: None,
        error_code: None,
    }
}

fn history(runs: Vec<crate::lakehouse::query_history::QueryRun>) -> crate::app::action::Action {
    crate::app::action::Action::Queries {
        table: tref("zoning", "documents"),
        result: Ok(crate::lakehouse::query_history::TableQueries::Runs {
            runs,
            unconfirmed: 0,
        }),
    }
}

#[test]
fn enter_on_the_watched_runs_incident_opens_the_running_tasks_log_and_follows_its_tail() {
    use crate::app::state::Tab;
    use crate::app::testing::{code, key};
    use crate::app::update::update;
    use crossterm::event::KeyCode;
    let mut s = crate::app::triage::tests::triaged();
    update(&mut s, key('0'));
    let i = s
        .triage
        .incidents
        .iter()
        .position(|i| i.dags.contains(&"compact_documents".to_string()))
        .unwrap();
    s.triage.grid.selected = i;
    start(&mut s, "compact_documents", "manual__1");
    let fx = on_progress(
        &mut s,
        "manual__1",
        Ok((
            run(DagRunState::Running, 0),
            vec![
                task("check_table", TaskState::Success, 1),
                task("compact", TaskState::Running, 2),
            ],
        )),
        None,
    );
    assert!(fx.is_empty(), "no log open yet: {fx:?}");
    assert_eq!(
        running_log(&s),
        Some((
            "compact_documents".into(),
            "manual__1".into(),
            "compact".into(),
            2
        ))
    );
    let fx = update(&mut s, code(KeyCode::Enter));
    let want = Effect::LoadLog {
        dag_id: "compact_documents".into(),
        run_id: "manual__1".into(),
        task_id: "compact".into(),
        try_number: 2,
    };
    assert!(fx.contains(&want), "{fx:?}");
    assert_eq!(s.tab, Tab::Dags);
    assert_eq!(s.dags.level(), super::super::DagLevel::Log);
    // The log arrives: shown from its end.
    let lines: Vec<String> = (0..200).map(|n| format!("line {n}")).collect();
    update(
        &mut s,
        crate::app::action::Action::Dags(super::super::DagMsg::Log {
            dag_id: "compact_documents".into(),
            run_id: "manual__1".into(),
            task_id: "compact".into(),
            try_number: 2,
            result: Ok(crate::airflow::log::parse_v1(&lines.join("\n"))),
        }),
    );
    let v = s.dags.log.as_ref().unwrap();
    assert!(v.scroll > 100, "the tail: {}", v.scroll);
    // Each poll while it runs reads the log again.
    let fx = on_progress(
        &mut s,
        "manual__1",
        Ok((
            run(DagRunState::Running, 0),
            vec![task("compact", TaskState::Running, 2)],
        )),
        None,
    );
    assert_eq!(fx, vec![want]);
    // It ended: the DAG's facts are read again at once, no more log reads.
    let fx = on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Success, 130), vec![])),
        Some(vec![(tref("zoning", "documents"), Ok(healthy_stats()))]),
    );
    assert!(
        matches!(&fx[..], [Effect::LoadDagFacts { dag, .. }] if dag.dag_id == "compact_documents"),
        "{fx:?}"
    );
    assert_eq!(running_log(&s), None);
}

fn unrelated() -> crate::health::incidents::Incident {
    use crate::health::incidents::{Incident, Jump, Kind};
    Incident {
        severity: crate::health::Severity::Critical,
        kind: Kind::ImportError,
        cause: "import error in broken_dag.py".into(),
        tables: Vec::new(),
        dags: Vec::new(),
        evidence: Vec::new(),
        next: Vec::new(),
        jump: Jump::Dags,
    }
}

#[test]
fn the_next_runs_of_the_query_that_suffered_are_shown_when_they_come() {
    use crate::app::update::update;
    let mut s = with_dags();
    let t0 = crate::app::testing::t0();
    let docs = tref("zoning", "documents");
    update(&mut s, history(vec![query("q1", 37_000, t0)]));
    start(&mut s, "compact_documents", "manual__1");
    // Running, it is shown under the incident it concerns only.
    assert!(shown_with(&s, &unrelated()).is_none());
    assert_eq!(
        s.dags
            .watch
            .as_ref()
            .unwrap()
            .query
            .as_ref()
            .unwrap()
            .query_id,
        "q1"
    );
    on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Success, 130), vec![])),
        Some(vec![(docs.clone(), Ok(healthy_stats()))]),
    );
    // The ended watch keeps asking for the table's queries.
    assert_eq!(query_tables(&s), vec![docs.clone()]);
    assert_eq!(next_runs(&s), None, "no run since");
    let later = t0 + chrono::Duration::seconds(200);
    update(
        &mut s,
        history(vec![
            query("q3", 900, later + chrono::Duration::seconds(30)),
            crate::lakehouse::query_history::QueryRun {
                splits: Some(364),
                ..query("q2", 1_100, later)
            },
            query("q1", 37_000, t0),
        ]),
    );
    assert_eq!(
        next_runs(&s).as_deref(),
        Some(
            "the dashboard query on documents since the run: 1.1s, 900ms; 364 splits \
             (before: 37s, 2,008 splits)"
        )
    );
    // Ended, it is shown under any incident, not only the one it concerns.
    assert!(shown_with(&s, &unrelated()).is_some());
}

fn http(status: u16) -> crate::airflow::AirflowError {
    crate::airflow::AirflowError::Http {
        status,
        url: "http://airflow/api/v2/dags/compact_documents/dagRuns/manual__1".into(),
        message: "not found".into(),
    }
}

fn transport() -> crate::airflow::AirflowError {
    crate::airflow::AirflowError::Transport {
        url: "http://airflow".into(),
        message: "connection refused".into(),
    }
}

/// A run Airflow answers 404 about (deleted, or not on this Airflow) is not polled again;
/// any other error is, a bounded number of times in a row.
#[test]
fn a_watch_gives_up_on_a_404_and_after_repeated_errors() {
    assert!(gives_up(1, &http(404)));
    assert!(!gives_up(1, &http(500)));
    assert!(!gives_up(MAX_ERRORS - 1, &transport()));
    assert!(gives_up(MAX_ERRORS, &transport()));

    let mut s = with_dags();
    start(&mut s, "compact_documents", "manual__1");
    on_progress(&mut s, "manual__1", Err(http(404)), None);
    let w = s.dags.watch.clone().unwrap();
    let o = w.outcome.expect("a 404 ends the watch");
    assert!(
        o.starts_with("stopped watching compact_documents manual__1"),
        "{o}"
    );
    assert!(running_log(&s).is_none() && !is_tail(&s, "compact_documents", "manual__1"));

    let mut s = with_dags();
    start(&mut s, "compact_documents", "manual__1");
    for _ in 1..MAX_ERRORS {
        on_progress(&mut s, "manual__1", Err(transport()), None);
    }
    assert_eq!(s.dags.watch.as_ref().unwrap().outcome, None);
    // An answer in between starts the count again.
    let running = Ok((run(DagRunState::Running, 0), vec![]));
    on_progress(&mut s, "manual__1", running, None);
    for _ in 1..MAX_ERRORS {
        on_progress(&mut s, "manual__1", Err(transport()), None);
    }
    assert_eq!(s.dags.watch.as_ref().unwrap().outcome, None);
    on_progress(&mut s, "manual__1", Err(transport()), None);
    let o = s.dags.watch.clone().unwrap().outcome.unwrap();
    assert!(
        o.contains(&format!("after {MAX_ERRORS} failed polls")),
        "{o}"
    );
    assert_eq!(s.status.as_ref().unwrap().level, Level::Error);
}

/// A poll's progress line never covers a warning or error said since (the audit log
/// failing, a refresh's error); it replaces its own lines, and an INFO.
#[test]
fn a_polls_progress_never_covers_a_newer_warning() {
    let mut s = with_dags();
    start(&mut s, "compact_documents", "manual__1");
    let running = || Ok((run(DagRunState::Running, 0), vec![]));
    on_progress(&mut s, "manual__1", running(), None);
    assert!(s.status.as_ref().unwrap().text.starts_with("watching"));
    s.set_status(Level::Error, "AUDIT LOG FAILED: disk full");
    on_progress(&mut s, "manual__1", running(), None);
    assert_eq!(
        s.status.as_ref().unwrap().text,
        "AUDIT LOG FAILED: disk full"
    );
    s.set_status(Level::Warn, "refresh: 2 tables not read");
    on_progress(&mut s, "manual__1", running(), None);
    assert_eq!(
        s.status.as_ref().unwrap().text,
        "refresh: 2 tables not read"
    );
    // Its own error is replaced by its next answer; so is an INFO.
    on_progress(&mut s, "manual__1", Err(transport()), None);
    on_progress(&mut s, "manual__1", running(), None);
    assert!(s.status.as_ref().unwrap().text.starts_with("watching"));
    s.set_status(Level::Info, "copied");
    on_progress(&mut s, "manual__1", running(), None);
    assert!(s.status.as_ref().unwrap().text.starts_with("watching"));
}

/// A trigger answered after `:profile` is not watched on the profile switched to (whose
/// Airflow never heard of its run id), and its answer changes nothing there.
#[test]
fn a_trigger_answered_after_a_profile_switch_is_not_watched() {
    use crate::app::action::{Action, DagWrite};
    use crate::app::dags::DagMsg;
    use crate::app::update::update;
    let mut s = with_dags();
    let sent_on = s.conn.epoch;
    s.conn.epoch += 1;
    let fx = update(
        &mut s,
        Action::Dags(DagMsg::Written {
            action: DagWrite::Trigger {
                dag_id: "compact_documents".into(),
            },
            result: Ok("triggered compact_documents manual__1".into()),
            epoch: sent_on,
        }),
    );
    assert!(fx.is_empty(), "{fx:?}");
    let fx = update(
        &mut s,
        Action::Dags(DagMsg::Triggered {
            dag_id: "compact_documents".into(),
            run_id: "manual__1".into(),
            epoch: sent_on,
        }),
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert!(s.dags.watch.is_none());
    let st = s.status.clone().unwrap();
    assert_eq!(st.level, Level::Warn);
    assert!(st.text.contains("profile left"), "{}", st.text);
    // On the profile it was sent on, it is watched.
    let now = s.conn.epoch;
    let fx = update(
        &mut s,
        Action::Dags(DagMsg::Triggered {
            dag_id: "compact_documents".into(),
            run_id: "manual__1".into(),
            epoch: now,
        }),
    );
    assert!(matches!(fx.as_slice(), [Effect::WatchRun { .. }]), "{fx:?}");
}

/// Right after a compaction that left one small file per partition (nothing it can
/// merge), the watch's line and the `i` popup say the same: not waiting.
#[test]
fn small_files_a_compaction_cannot_merge_are_not_waiting_anywhere() {
    let mut s = with_dags();
    let docs = tref("zoning", "documents");
    start(&mut s, "compact_documents", "manual__1");
    let mut after = healthy_stats();
    after.data_files = 360;
    after.small_files = 300;
    after.partitions = 300;
    after.partitioned = true;
    after.max_partition_small_files = Some(1);
    after.oldest_small_file_at = Some(s.now - chrono::Duration::days(15));
    after.last_compaction = Some(s.now);
    on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Success, 130), vec![])),
        Some(vec![(docs.clone(), Ok(after))]),
    );
    let st = s.status.clone().unwrap().text;
    assert!(st.ends_with("small files no longer waiting"), "{st}");
    let lines: Vec<String> = crate::ui::breakdown::health_breakdown(&s, &docs)
        .into_iter()
        .map(|(_, l)| l)
        .collect();
    assert!(
        !lines.iter().any(|l| l.contains("waiting since")),
        "{lines:#?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(
            "300 small files left, not waiting for a compaction (no partition holds two for a compaction to merge)"
        )),
        "{lines:#?}"
    );
}

/// The table's query history was being read again when the watch began (no query known
/// then): once it is in, the query from before the watch is the one whose next runs show.
#[test]
fn the_query_that_suffered_is_found_when_its_history_comes_after_the_watch_began() {
    use crate::app::update::update;
    let mut s = with_dags();
    let t0 = crate::app::testing::t0();
    let docs = tref("zoning", "documents");
    s.now = t0 + chrono::Duration::seconds(10);
    start(&mut s, "compact_documents", "manual__1");
    assert_eq!(s.dags.watch.as_ref().unwrap().query, None);
    on_progress(
        &mut s,
        "manual__1",
        Ok((run(DagRunState::Success, 130), vec![])),
        Some(vec![(docs.clone(), Ok(healthy_stats()))]),
    );
    // Its tables' history is asked for, to find it.
    assert_eq!(query_tables(&s), vec![docs.clone()]);
    let later = t0 + chrono::Duration::seconds(200);
    update(
        &mut s,
        history(vec![query("q2", 1_100, later), query("q1", 37_000, t0)]),
    );
    assert_eq!(
        next_runs(&s).as_deref(),
        Some(
            "the dashboard query on documents since the run: 1.1s; 2,008 splits (before: 37s, 2,008 splits)"
        )
    );
}
