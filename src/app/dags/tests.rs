//! The DAGs tab through `update`: the list, the drill-down to the log, the writes and
//! their confirmations, the refresh of the list.

use crate::airflow::{DagRun, DagRunState, LogLine, RunType, TaskLog, TaskState};
use crate::app::action::{Action, DagWrite, Effect};
use crate::app::dags::{DagLevel, DagMsg, command as dag_command};
use crate::app::keymap::Command;
use crate::app::state::Popup;
use crate::app::testing::dags::*;
use crate::app::testing::*;
use crate::app::update::update;
use crossterm::event::KeyCode;
use std::time::Duration;

fn run(state: DagRunState, id: &str) -> DagRun {
    DagRun {
        dag_id: "compact_documents".into(),
        run_id: id.into(),
        state,
        run_type: RunType::Scheduled,
        logical_date: None,
        run_after: Some(t0()),
        data_interval_start: None,
        data_interval_end: None,
        queued_at: None,
        start_date: Some(t0() - chrono::Duration::hours(9)),
        end_date: Some(t0() - chrono::Duration::hours(9) + chrono::Duration::seconds(8)),
        duration: Some(Duration::from_secs(8)),
        triggered_by: None,
        external_trigger: None,
        note: None,
    }
}

#[test]
fn failing_dags_come_first_and_feed_the_tables() {
    let s = with_dags();
    let first = &s.dags.rows[s.dags.grid.index[0]];
    assert_eq!(first.dag.dag_id, "compact_documents");
    assert_eq!(first.tables, vec!["iceberg.zoning.documents"]);
    // The table row carries the DAG's facts (guessed from its tag) and the correlation.
    let docs = s.tables.row(&tref("zoning", "documents")).unwrap();
    assert!(docs.dag.as_ref().unwrap().guessed);
    let h = docs.health.as_ref().unwrap();
    let f = h
        .findings
        .iter()
        .find(|f| f.rule == crate::health::Rule::StaleDagFailing)
        .expect("correlation finding");
    assert!(
        f.message.contains("trino-old.internal:8080"),
        "{}",
        f.message
    );
    assert_eq!(s.dags.import_errors.len(), 1);
}

#[test]
fn configured_mapping_wins_over_the_guess() {
    let mut s = loaded();
    s.airflow_configured = true;
    s.maintenance = vec![crate::config::MaintenanceMapping {
        table: "iceberg.zoning.documents".into(),
        dag_id: "compact_parcels".into(),
        interval: None,
    }];
    update(&mut s, key('r'));
    let g = s.dags.generation;
    update(
        &mut s,
        Action::Dags(DagMsg::Loaded {
            generation: g,
            result: Ok(list()),
        }),
    );
    assert_eq!(
        s.dags.mapping[&tref("zoning", "documents")].dag_id,
        "compact_parcels"
    );
    assert!(!s.dags.mapping[&tref("zoning", "documents")].guessed);
}

#[test]
fn drill_down_to_the_log_which_opens_on_the_error() {
    let mut s = with_dags();
    update(&mut s, key('4'));
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::LoadRuns {
            dag_id: "compact_documents".into()
        }]
    );
    assert_eq!(s.dags.level(), DagLevel::Runs);
    let runs = vec![
        run(DagRunState::Failed, "scheduled__2026-11-29T00:00:00+00:00"),
        run(DagRunState::Failed, "scheduled__2026-11-28T00:00:00+00:00"),
    ];
    update(
        &mut s,
        Action::Dags(DagMsg::Runs {
            dag_id: "compact_documents".into(),
            result: Ok(runs),
        }),
    );
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(
        fx,
        vec![Effect::LoadTasks {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into()
        }]
    );
    let tasks = vec![
        task("check_table", TaskState::Success, 1),
        task("report", TaskState::UpstreamFailed, 0),
        task("compact", TaskState::Failed, 1),
    ];
    update(
        &mut s,
        Action::Dags(DagMsg::Tasks {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            result: Ok(tasks),
        }),
    );
    assert_eq!(
        s.dags.selected_task().unwrap().task_id,
        "compact",
        "the failed task is on top"
    );
    let fx = update(&mut s, code(KeyCode::Enter));
    let [
        Effect::LoadLog {
            task_id,
            try_number: 1,
            ..
        },
    ] = &fx[..]
    else {
        panic!("{fx:?}")
    };
    assert_eq!(task_id, "compact");
    let mut lines: Vec<LogLine> = (0..50)
        .map(|i| LogLine {
            timestamp: None,
            level: Some("info".into()),
            text: format!("line {i}"),
            error: false,
        })
        .collect();
    lines.push(LogLine {
        timestamp: None,
        level: Some("error".into()),
        text: ERROR.into(),
        error: true,
    });
    let log = TaskLog {
        lines,
        error_line: Some(ERROR.into()),
        continuation_token: None,
    };
    update(
        &mut s,
        Action::Dags(DagMsg::Log {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            task_id: "compact".into(),
            try_number: 1,
            result: Ok(log),
        }),
    );
    assert_eq!(
        s.dags.log.as_ref().unwrap().scroll,
        48,
        "opens at the error"
    );
    // / searches the log; esc clears the search, then goes back up.
    update(&mut s, key('/'));
    for c in "line 7".chars() {
        update(&mut s, key(c));
    }
    update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.dags.log.as_ref().unwrap().scroll, 6);
    update(&mut s, key('g'));
    assert_eq!(s.dags.log.as_ref().unwrap().scroll, 0);
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.dags.level(), DagLevel::Log, "first esc clears the search");
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.dags.level(), DagLevel::Tasks);
    update(&mut s, code(KeyCode::Esc));
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.dags.level(), DagLevel::List);
}

#[test]
fn trigger_pause_and_clear_are_confirmed_and_refused_when_read_only() {
    let mut s = with_dags();
    // From the Tables tab, t targets the table's maintenance DAG.
    update(&mut s, key('t'));
    let Some(Popup::ConfirmDag(c)) = &s.popup else {
        panic!("no confirm")
    };
    assert_eq!(
        c.action,
        DagWrite::Trigger {
            dag_id: "compact_documents".into()
        }
    );
    assert!(
        c.lines.iter().any(|l| l.contains("trino-old.internal")),
        "{:?}",
        c.lines
    );
    crate::app::testing::drawn(&mut s);
    assert!(
        update(&mut s, code(KeyCode::Enter)).is_empty(),
        "enter is not yes"
    );
    update(&mut s, key('t'));
    crate::app::testing::drawn(&mut s);
    assert_eq!(
        update(&mut s, key('y')),
        vec![Effect::WriteDag(DagWrite::Trigger {
            dag_id: "compact_documents".into()
        })]
    );
    // C clears the newest failed run, after a dry run.
    let fx = update(&mut s, key('C'));
    assert_eq!(
        fx,
        vec![Effect::PlanClear {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            epoch: s.conn.epoch,
        }]
    );
    let outcome = crate::airflow::ClearOutcome {
        dry_run: true,
        scope: crate::airflow::ClearScope::OnlyFailed,
        tasks: vec![crate::airflow::ClearedTask {
            task_id: "compact".into(),
            map_index: -1,
            state: Some(TaskState::Failed),
        }],
        run: None,
    };
    // A dry run asked on another profile (switched away and back since) opens nothing.
    let epoch = s.conn.epoch;
    update(
        &mut s,
        Action::Dags(DagMsg::ClearPlanned {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            result: Ok(outcome.clone()),
            epoch: epoch + 1,
        }),
    );
    assert!(s.popup.is_none(), "{:?}", s.popup);
    update(
        &mut s,
        Action::Dags(DagMsg::ClearPlanned {
            dag_id: "compact_documents".into(),
            run_id: "scheduled__2026-11-29T00:00:00+00:00".into(),
            result: Ok(outcome),
            epoch,
        }),
    );
    let Some(Popup::ConfirmDag(c)) = &s.popup else {
        panic!()
    };
    assert!(c.lines.iter().any(|l| l.contains("compact (failed)")));
    crate::app::testing::drawn(&mut s);
    let fx = update(&mut s, key('y'));
    assert!(matches!(
        &fx[..],
        [Effect::WriteDag(DagWrite::Clear {
            only_failed: true,
            ..
        })]
    ));
    // p on the DAGs tab toggles pause on the selected DAG.
    update(&mut s, key('4'));
    update(&mut s, key('j'));
    update(&mut s, key('p'));
    let Some(Popup::ConfirmDag(c)) = &s.popup else {
        panic!()
    };
    assert_eq!(
        c.action,
        DagWrite::SetPaused {
            dag_id: "expire_snapshots".into(),
            paused: false
        }
    );
    crate::app::testing::drawn(&mut s);
    update(&mut s, key('n'));
    // Read-only: the keys are gone, and update refuses anyway.
    s.readonly = true;
    s.keymap = s.keymap.clone().with_readonly(true);
    assert!(update(&mut s, key('t')).is_empty());
    assert!(s.popup.is_none());
    assert!(dag_command(&mut s, Command::TriggerDag).is_empty());
    assert!(s.status.as_ref().unwrap().text.contains("read-only"));
}

#[test]
fn the_dag_list_refreshes_at_five_times_the_interval() {
    let mut s = with_dags();
    crate::app::testing::finish_loading(&mut s);
    update(&mut s, key('4'));
    assert!(!s.refresh_in_flight(), "load {:?}", s.tables.load);
    // One refresh interval later: only the selected DAG is re-read.
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(61)));
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::LoadDags { .. })),
        "{fx:?}"
    );
    assert_eq!(
        fx.iter()
            .filter(|e| matches!(e, Effect::LoadDagFacts { .. }))
            .count(),
        1
    );
    // Five intervals after the last full read: everything.
    let tables: Vec<_> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    crate::app::testing::relist(&mut s, tables.clone());
    s.tables.refresh.abandon();
    for t in tables {
        crate::app::testing::settle(&mut s, &t, Ok(healthy_stats()));
    }
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(301)));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::LoadDags { .. })),
        "{fx:?}"
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::CheckConnections)));
}
