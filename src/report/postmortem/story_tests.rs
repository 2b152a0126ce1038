//! The postmortem after the story (the fix, the trigger, the run's compaction): told in
//! the order it happened, with what the compaction did and which queries were reads.

use super::tests::{audit, doc, trino};
use super::*;
use crate::app::testing::dags::failing_facts;
use crate::app::testing::{incident_stats, t0, tref};
use crate::health::{HealthConfig, evaluate};

fn snapshot(at: DateTime<Utc>, id: i64, operation: &str, total: u64) -> SnapshotInfo {
    SnapshotInfo {
        committed_at: at,
        snapshot_id: id,
        parent_id: None,
        operation: crate::lakehouse::model::SnapshotOperation::parse(operation),
        added_data_files: Some(1),
        deleted_data_files: (operation == "replace").then_some(2_000),
        total_data_files: Some(total),
        added_records: None,
        total_records: None,
        total_delete_files: None,
        added_files_size: None,
        removed_files_size: None,
        trino_user: None,
        trino_query_id: None,
    }
}

/// After the story (fix, trigger, the run's compaction): the run the trigger started comes
/// after the trigger (Airflow stamps it while the POST is answered, before floe writes
/// the outcome), and the optimize before the compaction it committed; the header says
/// what the compaction did to the file count, not "360 → 360".
#[test]
fn after_the_story_the_sequence_and_header_tell_what_happened_in_order() {
    use crate::airflow::DagRunState;
    use crate::app::testing::dags::scheduled_run;
    use chrono::TimeZone;
    let at = |h: u32, m: u32, s: u32, ms: i64| {
        chrono::Utc.with_ymd_and_hms(2026, 11, 29, h, m, s).unwrap()
            + chrono::Duration::milliseconds(ms)
    };
    let mut trigger = audit("", "trigger_dag", "trigger compact_documents", "");
    (trigger.table, trigger.query_id) = (None, None);
    (trigger.files_before, trigger.files_after) = (None, None);
    trigger.time = "2026-11-29T09:12:00.500Z".into();
    trigger.duration_ms = 800;
    let mut fix = trigger.clone();
    fix.action = crate::mutation::audit::Action::FixConnection;
    fix.statement = "set connection trino_documents host=127.0.0.1 port=8080".into();
    fix.time = "2026-11-29T09:10:00.000Z".into();
    let mut optimize = audit(
        "iceberg.zoning.documents",
        "optimize",
        "ALTER TABLE …",
        "q9",
    );
    optimize.time = "2026-11-29T09:20:05.000Z".into();
    optimize.duration_ms = 6_000;
    let runs = DagRuns::Loaded {
        dag_id: "compact_documents".into(),
        runs: vec![scheduled_run(
            "manual__fix".into(),
            at(9, 12, 0, 100),
            DagRunState::Success,
        )],
    };
    let snaps = [
        snapshot(at(8, 0, 0, 0), 1, "append", 2_004),
        snapshot(at(9, 20, 3, 0), 2, "replace", 360),
    ];
    let facts = failing_facts();
    let stats = incident_stats();
    let health = evaluate(&stats, Some(&facts), &HealthConfig::default(), t0());
    let table = tref("zoning", "documents");
    let p = build(Sources {
        now: at(10, 0, 0, 0),
        profile: "lab",
        table: &table,
        stats: Some(&stats),
        health: &health,
        error: None,
        trino: trino(),
        airflow: None,
        dag: Some(DagSection::new(&facts)),
        snapshots: Some(&snaps),
        runs: &runs,
        stale_after: chrono::Duration::hours(36),
        audit_log: None,
        audit: &[fix, trigger, optimize],
        queries: None,
        notes: Vec::new(),
    });
    let seq = sequence(&p);
    let steps: Vec<(&str, &str)> = seq
        .iter()
        .map(|s| (s.step, s.what.split_whitespace().next().unwrap_or("")))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("fix", "set"),
            ("run", "trigger"),
            ("run", "run"),
            ("fix", "ALTER"),
            ("result", "compaction"),
        ],
        "{seq:#?}"
    );
    let sentence = &p.timeline.sentence;
    assert!(sentence.contains("files 2,004 → 360"), "{sentence}");
    assert!(!sentence.contains("360 → 360"), "{sentence}");
}

/// A coordinator record holding only the table's maintenance (floe's optimize, its DAG's)
/// does not read as "no query": the rows are said to be writes, and whose.
#[test]
fn the_queries_section_says_which_runs_are_reads_and_which_are_writes() {
    use crate::lakehouse::query_history::{QueryRun, TableQueries};
    let run = |id: &str, source: &str, query: &str| QueryRun {
        query_id: id.into(),
        state: crate::lakehouse::query_history::QueryState::Finished,
        user: "floe".into(),
        source: Some(source.into()),
        query: query.into(),
        created: Some(t0()),
        ended: None,
        elapsed_ms: Some(6_000),
        queued_ms: None,
        cpu_ms: None,
        splits: Some(2_004),
        physical_input_bytes: None,
        physical_written_bytes: None,
        error_code: None,
    };
    let optimize =
        "ALTER TABLE iceberg.zoning.documents EXECUTE optimize(file_size_threshold => '96MB')";
    let ours = audit("iceberg.zoning.documents", "optimize", optimize, "q_floe");
    let mut p = doc(&incident_stats(), None, &DagRuns::NotMapped, &[ours]);
    p.queries = Some(TableQueries::Runs {
        runs: vec![
            run("q_floe", "floe", optimize),
            run("q_dag", "airflow", optimize),
        ],
        unconfirmed: 0,
    });
    let md = p.markdown();
    assert!(
        md.contains("No query that read `documents` is in the coordinator's recent history: the 2 below are its maintenance, not reads (1 floe's own, 1 not)."),
        "{md}"
    );
    assert!(row_of(&md, "q_floe").contains("| write: floe's |"), "{md}");
    assert!(
        row_of(&md, "q_dag").contains("| write: not floe's |"),
        "{md}"
    );
    // A reader among them is the symptom, and its row says so.
    if let Some(TableQueries::Runs { runs, .. }) = p.queries.as_mut() {
        runs.push(run("q_read", "dashboard", "SELECT count(*) FROM documents"));
    }
    let md = p.markdown();
    assert!(
        md.contains("From the coordinator's own record: the dashboard query"),
        "{md}"
    );
    assert!(row_of(&md, "q_read").contains("| read |"), "{md}");
}

/// The row of the queries table for query `id`.
fn row_of(md: &str, id: &str) -> String {
    md.lines()
        .find(|l| l.contains(id) && (l.contains("| write") || l.contains("| read |")))
        .unwrap_or_default()
        .to_string()
}
