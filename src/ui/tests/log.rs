//! A task's log read to the end of its lines at 100x30: the error line wraps, long lines
//! wrap on `w` or scroll with `h`/`l`, frames under site-packages fold to one line `z`
//! unfolds.

use super::*;
use crate::airflow::{LogLine, TaskLog};
use crate::app::dags::{DagLevel, DagMsg};

const ERROR: &str = "ConnectionError: optimize of iceberg.zoning.documents failed: could not connect to Trino at trino-old.internal:8080 (connection trino_documents): failed to execute: HTTPConnectionPool(host='trino-old.internal', port=8080): Max retries exceeded with url: /v1/statement";

fn line(text: &str, error: bool) -> LogLine {
    LogLine {
        timestamp: None,
        level: Some(if error { "error" } else { "info" }.into()),
        text: text.into(),
        error,
    }
}

fn in_log() -> State {
    let mut s = crate::app::testing::dags::with_dags();
    key(&mut s, '4');
    let run = "scheduled__2026-11-29T00:00:00+00:00".to_string();
    s.dags.dag_id = Some("compact_documents".into());
    s.dags.run_id = Some(run.clone());
    s.dags.level = Some(DagLevel::Log);
    let venv = "/opt/airflow/venv/lib/python3.11/site-packages";
    let lines = vec![
        line("[task] compacting iceberg.zoning.documents", false),
        line(
            "[task] connecting with the connection trino_documents, whose extra is {\"protocol\": \"http\", \"verify\": false, \"session_properties\": {\"query_max_run_time\": \"2h\"}} (END-OF-LONG-LINE)",
            false,
        ),
        line("Task failed with exception", true),
        line("Traceback (most recent call last):", true),
        line(
            &format!(
                "  File \"{venv}/airflow/models/taskinstance.py\", line 465, in _execute_task"
            ),
            true,
        ),
        line("    result = _execute_callable(context=context)", true),
        line(
            &format!("  File \"{venv}/airflow/operators/python.py\", line 238, in execute"),
            true,
        ),
        line("    return_value = self.execute_callable()", true),
        line(
            "  File \"/opt/airflow/dags/compact.py\", line 41, in compact",
            true,
        ),
        line("    raise ConnectionError(msg)", true),
        line(ERROR, true),
    ];
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
    assert!(s.dags.log.is_some(), "the log is open");
    s
}

fn text(s: &mut State) -> String {
    let term = screen(s, 100, 30);
    let b = term.backend().buffer();
    (0..b.area.height)
        .map(|y| {
            (0..b.area.width)
                .map(|x| b[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_error_line_is_read_to_its_end_at_100_columns() {
    let mut s = in_log();
    let t = text(&mut s);
    // The pinned error line wraps: its host and the end of the line are on screen.
    assert!(t.contains("trino-old.internal:8080"), "{t}");
    assert!(t.contains("/v1/statement"), "{t}");
    // In the body too, the error line wraps while the others are cut at the edge.
    let body_rows = t.lines().filter(|l| l.contains("/v1/statement")).count();
    assert_eq!(body_rows, 2, "pinned and in the body:\n{t}");
}

#[test]
fn long_lines_wrap_on_w_and_scroll_sideways_without_it() {
    let mut s = in_log();
    key(&mut s, 'g');
    let t = text(&mut s);
    assert!(
        !t.contains("(END-OF-LONG-LINE)"),
        "cut at the edge by default:\n{t}"
    );
    key(&mut s, 'w');
    let t = text(&mut s);
    assert!(t.contains("(END-OF-LONG-LINE)"), "wrapped:\n{t}");
    key(&mut s, 'w');
    for _ in 0..12 {
        key(&mut s, 'l');
    }
    let t = text(&mut s);
    assert!(t.contains("(END-OF-LONG-LINE)"), "scrolled right:\n{t}");
    assert!(!t.contains("[task] compacting"), "scrolled right:\n{t}");
    for _ in 0..12 {
        key(&mut s, 'h');
    }
    assert!(text(&mut s).contains("[task] compacting"));
}

#[test]
fn site_packages_frames_fold_to_one_line_that_z_unfolds() {
    let mut s = in_log();
    key(&mut s, 'g');
    let t = text(&mut s);
    assert!(
        t.contains("⋯ 2 frames under site-packages (4 lines; z unfolds)"),
        "{t}"
    );
    assert!(!t.contains("taskinstance.py"), "{t}");
    // The DAG's own frame stays.
    assert!(t.contains("/opt/airflow/dags/compact.py"), "{t}");
    key(&mut s, 'z');
    let t = text(&mut s);
    assert!(t.contains("taskinstance.py"), "{t}");
    assert!(!t.contains("frames under site-packages ("), "{t}");
    insta::assert_snapshot!("dag_log_folded_100x30", {
        key(&mut s, 'z');
        screen(&mut s, 100, 30).backend().to_string()
    });
}
