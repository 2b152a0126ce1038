use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use crate::airflow::{DagRun, DagRunState};
use crate::app::action::{Action, Effect};
use crate::app::state::State;
use crate::app::testing::dags::with_dags;
use crate::app::testing::{key, loaded, t0, tref};
use crate::app::update::update;
use crate::lakehouse::model::SnapshotInfo;

/// The seed's story: daily appends for 16 days, one compaction 15 days ago.
fn snapshots() -> Vec<SnapshotInfo> {
    (0..17)
        .map(|i| {
            let compaction = i == 1;
            SnapshotInfo {
                committed_at: t0()
                    - chrono::Duration::days(16 - i as i64)
                    - chrono::Duration::hours(9),
                snapshot_id: 8_667_764_846_443_717_000 + i as i64,
                parent_id: None,
                operation: if compaction {
                    crate::lakehouse::model::SnapshotOperation::Replace
                } else {
                    crate::lakehouse::model::SnapshotOperation::Append
                },
                added_data_files: Some(if compaction { 144 } else { 126 }),
                deleted_data_files: compaction.then_some(1800),
                total_data_files: Some(match i {
                    0 => 1800,
                    _ => 144 + (i as u64 - 1) * 126,
                }),
                added_records: Some(12_600),
                total_records: Some(180_000 + i as u64 * 12_600),
                total_delete_files: Some(0),
                added_files_size: None,
                removed_files_size: None,
                trino_user: Some(if compaction { "etl" } else { "ingest" }.into()),
                trino_query_id: None,
            }
        })
        .collect()
}

/// The nightly compaction: a success the night after the compaction, then a failure
/// every night since.
fn runs() -> Vec<DagRun> {
    (1..=14)
        .map(|d| {
            let at = t0() - chrono::Duration::hours(9) - chrono::Duration::days(d);
            crate::app::testing::dags::scheduled_run(
                format!("scheduled__{}", at.format("%Y-%m-%dT%H:%M:%S+00:00")),
                at,
                if d == 14 {
                    DagRunState::Success
                } else {
                    DagRunState::Failed
                },
            )
        })
        .collect()
}

fn on_snapshots(mut s: State) -> (State, Vec<Effect>) {
    update(&mut s, key('3'));
    let request = s.snapshots.detail.request;
    let fx = update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Loaded {
            request,
            table: tref("zoning", "documents"),
            result: Ok(snapshots()),
        }),
    );
    s.status = None;
    (s, fx)
}

fn screen(s: &mut State, w: u16, h: u16) -> Terminal<TestBackend> {
    update(s, Action::Resize(w, h));
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| super::super::draw(f, s)).unwrap();
    term
}

fn text(term: &Terminal<TestBackend>) -> String {
    let buf = term.backend().buffer();
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                + "\n"
        })
        .collect()
}

#[test]
fn the_timeline_reads_the_dag_runs_and_says_what_they_mean() {
    let (mut s, fx) = on_snapshots(with_dags());
    // The snapshots arrived: the mapped DAG's runs are read for the timeline.
    assert_eq!(
        fx,
        vec![Effect::LoadTimelineRuns {
            dag_id: "compact_documents".into()
        }]
    );
    assert!(text(&screen(&mut s, 80, 24)).contains("compact_documents: reading its runs"));
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Runs {
            dag_id: "compact_documents".into(),
            result: Ok(runs()),
        }),
    );
    insta::assert_snapshot!("timeline_80x24", screen(&mut s, 80, 24).backend());
    insta::assert_snapshot!("timeline_160x48", screen(&mut s, 160, 48).backend());
    let shown = text(&screen(&mut s, 160, 48));
    assert!(
        shown.contains("compact_documents has failed every run since 2026-11-16"),
        "{shown}"
    );
    // Returning to the tab with everything loaded reads nothing again.
    update(&mut s, key('1'));
    assert!(update(&mut s, key('3')).is_empty());
    // Another DAG's runs arriving late change nothing.
    let before = s.snapshots.runs.clone();
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Runs {
            dag_id: "compact_parcels".into(),
            result: Ok(vec![]),
        }),
    );
    assert_eq!(s.snapshots.runs, before);
}

#[test]
fn no_color_keeps_the_glyphs_and_their_words() {
    let (mut s, _) = on_snapshots(with_dags());
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Runs {
            dag_id: "compact_documents".into(),
            result: Ok(runs()),
        }),
    );
    s.no_color = true;
    let term = screen(&mut s, 80, 24);
    for cell in term.backend().buffer().content() {
        assert_eq!(cell.fg, Color::Reset, "a coloured cell under NO_COLOR");
    }
    let shown = text(&term);
    let runs_line = shown
        .lines()
        .find(|l| l.starts_with("runs"))
        .unwrap_or_else(|| panic!("a runs row:\n{shown}"));
    assert_eq!(runs_line.matches('✗').count(), 13, "{runs_line}");
    assert_eq!(runs_line.matches('✓').count(), 1, "{runs_line}");
    assert!(
        shown.contains("✗ failed ✓ ok"),
        "the legend says it in words"
    );
}

#[test]
fn short_terminals_keep_the_sentence() {
    let (mut s, _) = on_snapshots(loaded());
    let shown = text(&screen(&mut s, 80, 12));
    assert!(shown.contains("compactions stopped 2026-11-14;"), "{shown}");
    assert!(!shown.contains('└'), "no chart at 12 rows:\n{shown}");
}

#[test]
fn a_table_no_dag_maps_to_says_so() {
    let mut s = with_dags();
    s.dags.mapping.clear();
    let (mut s, fx) = on_snapshots(s);
    assert!(fx.is_empty(), "{fx:?}");
    let shown = text(&screen(&mut s, 120, 30));
    assert!(
        shown.contains("no maintenance DAG maps to this table"),
        "{shown}"
    );
    assert!(!shown.lines().any(|l| l.starts_with("runs")), "{shown}");
}

#[test]
fn a_dag_list_arriving_later_brings_the_runs() {
    let mut s = loaded();
    s.airflow_configured = true;
    let (mut s, fx) = on_snapshots(s);
    assert!(fx.is_empty(), "no DAG known yet: {fx:?}");
    let shown = text(&screen(&mut s, 160, 48));
    assert!(shown.contains("maintenance DAGs not read yet"), "{shown}");
    s.dags.generation += 1;
    let generation = s.dags.generation;
    let fx = update(
        &mut s,
        Action::Dags(crate::app::dags::DagMsg::Loaded {
            generation,
            result: Ok(crate::app::testing::dags::list()),
        }),
    );
    assert!(
        fx.contains(&Effect::LoadTimelineRuns {
            dag_id: "compact_documents".into()
        }),
        "{fx:?}"
    );
    // Facts arriving after it read nothing more.
    let fx = update(
        &mut s,
        Action::Dags(crate::app::dags::DagMsg::Facts {
            generation,
            dag_id: "compact_documents".into(),
            result: Ok(crate::app::testing::dags::failing_facts()),
        }),
    );
    assert!(
        !fx.iter()
            .any(|e| matches!(e, Effect::LoadTimelineRuns { .. })),
        "{fx:?}"
    );
}

#[test]
fn wrapping_keeps_words_whole() {
    assert_eq!(
        super::wrap_words("compactions stopped 2026-11-14; files 1 → 2", 20, 3),
        vec!["compactions stopped", "2026-11-14; files 1", "→ 2"]
    );
    assert_eq!(
        super::wrap_words("a b c d e f g h i j", 8, 1),
        vec!["a b c d…"]
    );
}

#[test]
fn a_delta_tables_history_brings_its_log_and_the_sentence_says_what_a_vacuum_deletes() {
    let mut s = loaded();
    let t = tref("zoning", "documents");
    let row = s.tables.row_mut(&t).unwrap();
    row.read.stats.as_mut().unwrap().format = crate::lakehouse::delta::TableFormat::Delta;
    let (mut s, fx) = on_snapshots(s);
    let log = Effect::LoadDeltaLog {
        table: t.clone(),
        retention_secs: 7 * 86_400,
    };
    assert!(fx.contains(&log), "{fx:?}");
    let facts = crate::lakehouse::delta::log::LogFacts {
        versions: Some((0, 48)),
        freeable_files: 28,
        freeable_bytes: 46_080,
        dv_files: 8,
        dv_rows: 12,
        ..Default::default()
    };
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Log {
            table: t,
            result: Ok(facts),
        }),
    );
    let shown = text(&screen(&mut s, 200, 30));
    let words = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains(
            "a vacuum at 7d deletes 28 files (45 KB) the log (versions 0-48) removed; deletion vectors hide 12 rows in 8 live files"
        ),
        "{shown}"
    );
    // An Iceberg table's history reads no log.
    let (_, fx) = on_snapshots(loaded());
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::LoadDeltaLog { .. })),
        "{fx:?}"
    );
}

#[test]
fn a_log_error_from_the_server_reaches_the_sentence_inert() {
    let mut s = loaded();
    let t = tref("zoning", "documents");
    let row = s.tables.row_mut(&t).unwrap();
    row.read.stats.as_mut().unwrap().format = crate::lakehouse::delta::TableFormat::Delta;
    let (mut s, _) = on_snapshots(s);
    update(
        &mut s,
        Action::Snapshots(crate::app::snapshots::SnapshotsMsg::Log {
            table: t,
            result: Err(crate::trino::TrinoError::Malformed {
                url: "http://trino/".into(),
                message: "bad\x1b]52;c;ZXZpbA==\x07log\u{202e}gol".into(),
            }),
        }),
    );
    for (w, h) in [(200, 30), (80, 12)] {
        let shown = text(&screen(&mut s, w, h));
        assert!(
            w < 200
                || (shown.contains("the table's log could not be read")
                    && shown.contains("bad\\x1b]52;c;")),
            "the escape shown, not sent: {shown}"
        );
        assert!(
            !shown.contains('\x1b') && !shown.contains('\x07') && !shown.contains('\u{202e}'),
            "{shown:?}"
        );
    }
}
