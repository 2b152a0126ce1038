//! Whole-screen snapshots over TestBackend at 80x24 and 160x48.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};

use crate::app::action::Action;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::state::{Level, Popup, State};
use crate::app::testing::{loaded, partitions, t0};
use crate::app::update::update;
use crate::lakehouse::model::{SnapshotInfo, SnapshotOperation, TableRef};
use crate::trino::ServerInfo;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// `insta::assert_snapshot!`, kept with this module's other files: `ui/tests/snapshots/`
/// (`ui/snapshots/` is the Snapshots tab's module).
macro_rules! snapshot {
    ($($args:tt)*) => {
        insta::with_settings!({ snapshot_path => "tests/snapshots" }, {
            insta::assert_snapshot!($($args)*)
        })
    };
}

fn key(s: &mut State, c: char) {
    update(
        s,
        Action::Key(
            KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
}

fn with_info(mut s: State) -> State {
    let info: ServerInfo = serde_json::from_str(
        r#"{"nodeVersion":{"version":"480"},"environment":"lab","coordinator":true,"starting":false,"uptime":"2.50h"}"#,
    )
    .unwrap();
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ServerInfo(Ok(info))),
    );
    s
}

/// Draw `s` at `w`x`h`, and tell it the frame was drawn (as the event loop does).
fn screen(s: &mut State, w: u16, h: u16) -> Terminal<TestBackend> {
    update(s, Action::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| super::draw(f, s)).unwrap();
    update(s, Action::Drawn(std::time::Instant::now()));
    term
}

fn all_loaded() -> State {
    let mut s = with_info(loaded());
    let id = crate::app::testing::survey_in_flight(&s);
    crate::app::testing::answer(
        &mut s,
        id,
        crate::refresh::Answer::failed(
            crate::refresh::ReadKind::Survey,
            vec![TableRef::new("iceberg", "audit", "events")],
            crate::app::testing::query_failed(
                "TABLE_NOT_FOUND",
                "line 1:15: Table 'iceberg.audit.events' does not exist",
                "20261129_090000_00007_lab01",
            ),
        ),
    );
    s.status = None;
    s
}

fn snapshots() -> Vec<SnapshotInfo> {
    // Daily appends for 16 days with one compaction 15 days ago.
    (0..17)
        .map(|i| {
            let compaction = i == 1;
            let total = if i == 0 {
                1800
            } else if compaction {
                144
            } else {
                144 + (i as u64 - 1) * 126
            };
            SnapshotInfo {
                committed_at: t0()
                    - chrono::Duration::days(16 - i as i64)
                    - chrono::Duration::hours(9),
                snapshot_id: 8_667_764_846_443_717_000 + i as i64,
                parent_id: None,
                operation: if compaction {
                    SnapshotOperation::Replace
                } else {
                    SnapshotOperation::Append
                },
                added_data_files: Some(if compaction { 144 } else { 126 }),
                deleted_data_files: if compaction { Some(1800) } else { None },
                total_data_files: Some(total),
                added_records: Some(12_600),
                total_records: Some(180_000 + i as u64 * 12_600),
                total_delete_files: Some(0),
                added_files_size: None,
                removed_files_size: None,
                trino_user: Some(if compaction {
                    "etl".into()
                } else {
                    "ingest".into()
                }),
                trino_query_id: None,
            }
        })
        .collect()
}

#[test]
fn tables_80x24() {
    let mut s = all_loaded();
    snapshot!(screen(&mut s, 80, 24).backend());
}

#[test]
fn tables_160x48_with_breakdown_panel() {
    let mut s = all_loaded();
    snapshot!(screen(&mut s, 160, 48).backend());
}

#[test]
fn tables_loading_and_stale() {
    let mut s = State::new(t0());
    s.conn.profile = "lab".into();
    s.conn.trino_url = "http://127.0.0.1:8080/".into();
    update(&mut s, Action::Start);
    snapshot!("tables_discovering", screen(&mut s, 80, 24).backend());
    let mut s = all_loaded();
    s.readonly = true;
    s.keymap = s.keymap.clone().with_readonly(true);
    s.tables.load = crate::app::state::Load::Loaded;
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    snapshot!(
        "tables_refreshing_readonly",
        screen(&mut s, 80, 24).backend()
    );
}

#[test]
fn tables_error_keeps_rows() {
    let mut s = all_loaded();
    crate::app::testing::list_fails(
        &mut s,
        crate::app::testing::unreachable("http://127.0.0.1:8080/v1/statement"),
    );
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ServerInfo(Err(
            crate::app::testing::unreachable("http://127.0.0.1:8080/v1/info"),
        ))),
    );
    snapshot!(screen(&mut s, 80, 24).backend());
}

#[test]
fn partitions_with_marks() {
    let mut s = all_loaded();
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    let req = s.partitions.detail.request;
    update(
        &mut s,
        Action::Partitions(crate::app::partitions::PartitionsMsg::Loaded {
            request: req,
            table: TableRef::new("iceberg", "zoning", "documents"),
            result: Ok(partitions(40)),
        }),
    );
    key(&mut s, ' ');
    key(&mut s, ' ');
    snapshot!("partitions_80x24", screen(&mut s, 80, 24).backend());
    snapshot!("partitions_160x48", screen(&mut s, 160, 48).backend());
}

#[test]
fn snapshots_with_growth_chart() {
    let mut s = all_loaded();
    key(&mut s, '3');
    let req = s.snapshots.detail.request;
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Loaded {
            request: req,
            table: TableRef::new("iceberg", "zoning", "documents"),
            result: Ok(snapshots()),
        }),
    );
    snapshot!("snapshots_80x24", screen(&mut s, 80, 24).backend());
    snapshot!("snapshots_160x48", screen(&mut s, 160, 48).backend());
}

#[test]
fn help_overlay_and_info_popup() {
    let mut s = all_loaded();
    key(&mut s, '?');
    snapshot!("help_80x24", screen(&mut s, 80, 24).backend());
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    key(&mut s, 'i');
    snapshot!("info_80x24", screen(&mut s, 80, 24).backend());
}

#[test]
fn the_help_scrolls_to_its_last_keys_at_80x24() {
    let mut s = all_loaded();
    key(&mut s, '?');
    let text = |s: &mut State| format!("{:?}", screen(s, 80, 24).backend());
    let top = text(&mut s);
    assert!(top.contains("j/k scroll"), "{top}");
    assert!(!top.contains("copy the SQL"), "{top}");
    key(&mut s, 'G');
    let bottom = text(&mut s);
    assert!(bottom.contains("copy the SQL"), "{bottom}");
    assert_eq!(s.popup, Some(Popup::Help), "scrolling keeps the help open");
    key(&mut s, 'g');
    assert_eq!(text(&mut s), top);
}

#[test]
fn dags_tab_without_airflow() {
    let mut s = all_loaded();
    key(&mut s, '4');
    snapshot!(screen(&mut s, 80, 24).backend());
}

#[test]
fn prompt_and_status_lines() {
    let mut s = all_loaded();
    key(&mut s, '/');
    key(&mut s, 'd');
    key(&mut s, 'o');
    snapshot!("filter_prompt", screen(&mut s, 80, 24).backend());
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    s.set_status(
        Level::Error,
        "partitions of iceberg.zoning.documents: GENERIC_INTERNAL_ERROR: boom (query q1)",
    );
    snapshot!("error_status", screen(&mut s, 80, 24).backend());
}

#[test]
fn no_color_uses_no_colour_and_reverse_video_selection() {
    let mut s = all_loaded();
    s.no_color = true;
    let term = screen(&mut s, 80, 24);
    let buf = term.backend().buffer();
    for cell in buf.content() {
        assert_eq!(
            cell.fg,
            Color::Reset,
            "a coloured cell under NO_COLOR: {cell:?}"
        );
        assert_eq!(
            cell.bg,
            Color::Reset,
            "a coloured cell under NO_COLOR: {cell:?}"
        );
    }
    // The selected row (first data row, y = 3) is reverse video.
    let y = 3;
    assert!((0..80).any(|x| buf[(x, y)].modifier.contains(Modifier::REVERSED)));
    // Severity is readable as text.
    let text: String = (0..80).map(|x| buf[(x, y)].symbol().to_string()).collect();
    assert!(text.contains("CRIT"), "{text}");
    // With colour, the same screen colours the severity.
    s.no_color = false;
    let term = screen(&mut s, 80, 24);
    assert!(
        term.backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.fg == Color::Red)
    );
}

#[test]
fn tiny_terminals_and_resize_storms_do_not_panic() {
    let mut s = all_loaded();
    for (w, h) in [
        (20, 5),
        (1, 1),
        (0, 0),
        (19, 4),
        (21, 6),
        (80, 6),
        (300, 100),
        (40, 10),
        (20, 5),
    ] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        update(&mut s, Action::Resize(w, h));
        for tab in ['1', '2', '3', '4', '?'] {
            key(&mut s, tab);
            term.draw(|f| super::draw(f, &s)).unwrap();
            update(
                &mut s,
                Action::Key(
                    KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
                    std::time::Instant::now(),
                ),
            );
        }
    }
    let mut term = Terminal::new(TestBackend::new(20, 5)).unwrap();
    term.draw(|f| super::draw(f, &s)).unwrap();
    snapshot!("tiny_20x5", term.backend());
}

#[test]
fn formatting_helpers() {
    assert_eq!(super::thousands(18000), "18,000");
    assert_eq!(super::compact(950), "950");
    assert_eq!(super::compact(18_000), "18k");
    assert_eq!(super::compact(1_234_567), "1.2M");
}

fn confirm_state() -> State {
    use crate::lakehouse::plan::{Procedure, TableLayout, parse_partition_entry};
    use crate::mutation::draft::PlanDraft;
    let mut s = all_loaded();
    update(
        &mut s,
        Action::Key(
            KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
            std::time::Instant::now(),
        ),
    );
    let req = s.partitions.detail.request;
    update(
        &mut s,
        Action::Partitions(crate::app::partitions::PartitionsMsg::Loaded {
            request: req,
            table: TableRef::new("iceberg", "zoning", "documents"),
            result: Ok(partitions(12)),
        }),
    );
    key(&mut s, ' ');
    key(&mut s, ' ');
    let marked = s
        .partitions
        .rows
        .iter()
        .filter(|r| s.partitions.is_marked(r))
        .map(|r| r.stats.clone())
        .collect();
    let draft = PlanDraft {
        table: TableRef::new("iceberg", "zoning", "documents"),
        procedure: Procedure::Optimize {
            threshold: 96 << 20,
        },
        layout: TableLayout {
            columns: vec![
                ("district".into(), "varchar".into()),
                ("filed_at".into(), "timestamp(6) with time zone".into()),
            ],
            partitioning: vec![
                parse_partition_entry("district").unwrap(),
                parse_partition_entry("day(filed_at)").unwrap(),
            ],
            live_specs: Vec::new(),
            format: Default::default(),
        },
        partitions: marked,
        note: None,
        grouped: false,
        measured: None,
        writer_partitions: crate::lakehouse::plan::DEFAULT_WRITER_PARTITIONS,
    };
    let epoch = s.conn.epoch;
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(draft))),
    );
    // On screen, as the event loop draws it.
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    s
}

#[test]
fn confirm_popup_shows_the_exact_sql() {
    let mut s = confirm_state();
    snapshot!("confirm_80x24", screen(&mut s, 80, 24).backend());
    snapshot!("confirm_160x48", screen(&mut s, 160, 48).backend());
}

#[test]
fn progress_line_and_queue() {
    use crate::mutation::run::{StepEvent, StepOutcome};
    use crate::trino::QueryProgress;
    let mut s = confirm_state();
    key(&mut s, 'y');
    let job = s.jobs.list.last().unwrap().id;
    let done = StepOutcome {
        ok: true,
        cancelled: false,
        query_id: Some("20261129_091500_00042_lab01".into()),
        error: None,
        rows: Some(1402),
        metrics: Default::default(),
        duration_ms: 1300,
        files_after: Some(1),
        small_after: Some(1),
    };
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Step {
            job,
            event: StepEvent::Started { step: 0 },
        }),
    );
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Step {
            job,
            event: StepEvent::Finished {
                step: 0,
                outcome: done,
            },
        }),
    );
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Step {
            job,
            event: StepEvent::Started { step: 1 },
        }),
    );
    let p = QueryProgress {
        query_id: "20261129_091502_00043_lab01".into(),
        state: "RUNNING".into(),
        scheduled: true,
        percentage: Some(45.0),
        total_splits: 18,
        completed_splits: 8,
        processed_rows: 760,
        ..Default::default()
    };
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Step {
            job,
            event: StepEvent::Progress {
                step: 1,
                progress: p,
            },
        }),
    );
    snapshot!("progress_80x24", screen(&mut s, 80, 24).backend());
    key(&mut s, 'Q');
    snapshot!("queue_80x24", screen(&mut s, 80, 24).backend());
}

mod dags {
    use super::*;
    use crate::airflow::{LogLine, TaskLog, TaskState};
    use crate::app::dags::DagMsg;
    use crate::app::testing::dags::{ERROR, task, with_dags};

    #[test]
    fn dags_tab_failing_first_with_import_error_and_the_failing_task() {
        let mut s = with_dags();
        key(&mut s, '4');
        snapshot!("dags_80x24", screen(&mut s, 80, 24).backend());
        snapshot!("dags_160x48", screen(&mut s, 160, 48).backend());
        // The Tables tab shows the DAG beside the compaction age, and the correlation.
        key(&mut s, '1');
        snapshot!("tables_with_dags_80x24", screen(&mut s, 80, 24).backend());
        snapshot!("tables_with_dags_160x48", screen(&mut s, 160, 48).backend());
    }

    #[test]
    fn runs_tasks_log_and_confirm() {
        let mut s = with_dags();
        key(&mut s, '4');
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        update(
            &mut s,
            Action::Dags(DagMsg::Runs {
                dag_id: "compact_documents".into(),
                result: Ok(vec![]),
            }),
        );
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        s.dags.level = Some(crate::app::dags::DagLevel::Tasks);
        s.dags.run_id = Some("scheduled__2026-11-29T00:00:00+00:00".into());
        let run = s.dags.run_id.clone().unwrap();
        update(
            &mut s,
            Action::Dags(DagMsg::Tasks {
                dag_id: "compact_documents".into(),
                run_id: run.clone(),
                result: Ok(vec![
                    task("check_table", TaskState::Success, 1),
                    task("compact", TaskState::Failed, 1),
                    task("report", TaskState::UpstreamFailed, 0),
                ]),
            }),
        );
        snapshot!("dag_tasks_80x24", screen(&mut s, 80, 24).backend());
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        let mut lines: Vec<LogLine> = (0..30)
            .map(|i| LogLine {
                timestamp: None,
                level: Some("info".into()),
                text: format!("[task] step {i}"),
                error: false,
            })
            .collect();
        lines.push(LogLine {
            timestamp: None,
            level: Some("error".into()),
            text: "Task failed with exception".into(),
            error: true,
        });
        lines.push(LogLine {
            timestamp: None,
            level: Some("error".into()),
            text: ERROR.into(),
            error: true,
        });
        update(
            &mut s,
            Action::Dags(DagMsg::Log {
                dag_id: "compact_documents".into(),
                run_id: run,
                task_id: "compact".into(),
                try_number: 1,
                result: Ok(TaskLog {
                    lines,
                    error_line: Some(ERROR.into()),
                    continuation_token: None,
                }),
            }),
        );
        snapshot!("dag_log_80x24", screen(&mut s, 80, 24).backend());
        key(&mut s, '1');
        key(&mut s, 't');
        snapshot!("confirm_trigger_80x24", screen(&mut s, 80, 24).backend());
    }
}

/// Text from servers (table and partition names, DAG ids, errors, log lines) may carry
/// terminal escapes and bidi overrides: whatever reaches the screen buffer is inert.
mod hostile {
    use super::*;
    use crate::airflow::{DagImportError, LogLine, TaskLog, TaskState};
    use crate::app::dags::DagMsg;
    use crate::app::testing::dags::{dag, failing_facts, list, task};
    use crate::lakehouse::model::PartitionStats;
    use crate::text::{hostile_sample, is_inert};

    fn h(prefix: &str) -> String {
        format!("{prefix}{}", hostile_sample())
    }

    fn assert_inert(term: &Terminal<TestBackend>, what: &str, shown: &str) {
        let buf = term.backend().buffer();
        let text: String = buf.content().iter().map(|c| c.symbol()).collect();
        assert!(
            text.contains(shown),
            "{what}: {shown:?} is not on screen:\n{text}"
        );
        let mut drawn = 0;
        for (i, cell) in buf.content().iter().enumerate() {
            assert!(
                is_inert(cell.symbol()),
                "{what}: cell {i} holds {:?}",
                cell.symbol()
            );
            drawn += usize::from(!cell.symbol().trim().is_empty());
        }
        assert!(drawn > 0, "{what}: nothing drawn");
    }

    /// Draw at 80x24 and 160x48; `shown` (the start of a hostile string) is on screen.
    fn both_sizes(s: &mut State, what: &str, shown: &str) {
        for (w, h) in [(80, 24), (160, 48)] {
            assert_inert(&screen(s, w, h), &format!("{what} at {w}x{h}"), shown);
        }
    }

    fn hostile_tables() -> State {
        let mut s = with_info(crate::app::testing::loaded());
        let bad = TableRef::new("iceberg", h("sch"), h("tbl"));
        let failing = TableRef::new("iceberg", "zoning", h("err"));
        // Format characters with no newline before them: they reach the cell.
        let bidi = TableRef::new("iceberg", "aaa", "\u{202e}\u{2066}gnirts\u{2069}");
        crate::app::testing::relist(&mut s, vec![bad.clone(), failing.clone(), bidi.clone()]);
        s.tables.refresh.abandon();
        crate::app::testing::settle(&mut s, &bidi, Ok(crate::app::testing::healthy_stats()));
        crate::app::testing::settle(&mut s, &bad, Ok(crate::app::testing::incident_stats()));
        crate::app::testing::settle(
            &mut s,
            &failing,
            Err(crate::app::testing::query_failed(
                "TABLE_NOT_FOUND",
                &h(""),
                "q1",
            )),
        );
        s
    }

    #[test]
    fn tables_partitions_and_status_draw_no_control_character() {
        let mut s = hostile_tables();
        assert!(s.status.is_some(), "the error reaches the status line");
        both_sizes(&mut s, "tables", "scha");
        both_sizes(&mut s, "a bidi table name", "aaa.\\u{202e}");
        key(&mut s, 'i');
        both_sizes(&mut s, "health breakdown", "scha");
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        let req = s.partitions.detail.request;
        let table = s
            .partitions
            .detail
            .table
            .clone()
            .expect("a table drilled into");
        let mut list = partitions(6);
        for (i, p) in list.partitions.iter_mut().enumerate() {
            p.values = vec![
                (h("field"), Some(h(&format!("v{i}")))),
                ("filed_at_day".into(), None),
            ];
        }
        list.partitions.push(PartitionStats {
            values: vec![(h("k"), Some(h("\u{202e}reversed")))],
            ..list.partitions[0].clone()
        });
        update(
            &mut s,
            Action::Partitions(crate::app::partitions::PartitionsMsg::Loaded {
                request: req,
                table,
                result: Ok(list),
            }),
        );
        key(&mut s, ' ');
        // Names too long for the column show their values (`v3a\x1b]52…`), escaped.
        both_sizes(&mut s, "partitions", "a\\x1b]52;c;");
        key(&mut s, '/');
        for c in hostile_sample().chars().take(8) {
            key(&mut s, c);
        }
        both_sizes(&mut s, "filter prompt", "/a");
    }

    #[test]
    fn dags_and_logs_draw_no_control_character() {
        let mut s = crate::app::testing::dags::with_dags();
        let generation = s.dags.generation + 1;
        s.dags.generation = generation;
        let mut l = list();
        l.dags.push(dag(&h("dag"), &h("iceberg.zoning.tag"), false));
        l.import_errors.push(DagImportError {
            id: Some(2),
            filename: h("evil.py"),
            bundle_name: Some(h("bundle")),
            timestamp: None,
            stack_trace: h("Traceback:\n"),
        });
        update(
            &mut s,
            Action::Dags(DagMsg::Loaded {
                generation,
                result: Ok(l),
            }),
        );
        let mut facts = failing_facts();
        facts.error_line = Some(h("ConnectionError: "));
        facts.failing_task = Some(h("task"));
        update(
            &mut s,
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id: "compact_documents".into(),
                result: Ok(facts),
            }),
        );
        update(
            &mut s,
            Action::Dags(DagMsg::Facts {
                generation,
                dag_id: h("dag"),
                result: Err(crate::airflow::AirflowError::Malformed {
                    url: "http://airflow/api/v2/dags".into(),
                    message: h("403: "),
                }),
            }),
        );
        key(&mut s, '4');
        both_sizes(&mut s, "DAGs", "daga");
        key(&mut s, '1');
        both_sizes(&mut s, "tables with DAGs", "documents");
        key(&mut s, '4');
        s.dags.level = Some(crate::app::dags::DagLevel::Tasks);
        s.dags.dag_id = Some("compact_documents".into());
        s.dags.run_id = Some(h("run"));
        let run = s.dags.run_id.clone().unwrap();
        let mut t = task(&h("task"), TaskState::Failed, 1);
        t.run_id = run.clone();
        update(
            &mut s,
            Action::Dags(DagMsg::Tasks {
                dag_id: "compact_documents".into(),
                run_id: run.clone(),
                result: Ok(vec![t, task("compact", TaskState::Failed, 1)]),
            }),
        );
        both_sizes(&mut s, "task instances", "taska");
        let fx = update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        let Some(crate::app::action::Effect::LoadLog {
            dag_id,
            run_id,
            task_id,
            try_number,
        }) = fx.into_iter().next()
        else {
            panic!("enter on a task opens its log");
        };
        let lines: Vec<LogLine> = (0..5)
            .map(|i| LogLine {
                timestamp: None,
                level: Some(h("info")),
                text: h(&format!("[task] step {i} ")),
                error: i == 4,
            })
            .collect();
        update(
            &mut s,
            Action::Dags(DagMsg::Log {
                dag_id,
                run_id,
                task_id,
                try_number,
                result: Ok(TaskLog {
                    lines,
                    error_line: Some(h("error: ")),
                    continuation_token: None,
                }),
            }),
        );
        assert!(s.dags.log.is_some(), "the log is open");
        both_sizes(&mut s, "log", "[task] step");
        s.set_status(Level::Error, h("Airflow: "));
        both_sizes(&mut s, "error status", "Airflow: a");
    }
}

/// Every popup and prompt at 20x5: clipped, framed, readable; never a panic.
#[test]
fn every_popup_at_20x5() {
    let mut s = confirm_state();
    let mut out = format!("confirm\n{}\n", screen(&mut s, 20, 5).backend());
    key(&mut s, 'n');
    assert!(s.popup.is_none(), "n declines the plan");
    for (name, keys) in [
        ("help", "?"),
        ("health breakdown", "i"),
        ("queue", "Q"),
        ("command line", ":refresh"),
        ("filter", "/north"),
    ] {
        for c in keys.chars() {
            key(&mut s, c);
        }
        out.push_str(&format!("{name}\n{}\n", screen(&mut s, 20, 5).backend()));
        update(
            &mut s,
            Action::Key(
                KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE),
                std::time::Instant::now(),
            ),
        );
        assert!(s.popup.is_none() && s.prompt.is_none(), "{name} closed");
    }
    snapshot!("every_popup_20x5", out);
}

#[test]
fn unverified_tls_is_a_badge_in_the_header() {
    let mut s = with_info(loaded());
    let before = screen(&mut s, 160, 48).backend().to_string();
    assert!(!before.contains("TLS UNVERIFIED"));
    s.conn.warnings = vec!["TLS certificate verification is OFF for Trino".into()];
    let after = screen(&mut s, 160, 48).backend().to_string();
    let header = after.lines().next().unwrap();
    assert!(header.contains("TLS UNVERIFIED"), "{header}");
}

mod dag_source;
mod log;
mod prose;
mod widths;
