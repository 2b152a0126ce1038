use super::*;
use crate::app::testing::dags::{ERROR, failing_facts};
use crate::app::testing::{incident_stats, t0, tref};
use crate::health::{HealthConfig, evaluate};
use crate::mutation::audit::Outcome;
use crate::report::markdown_writer as md;

pub(super) fn trino() -> TrinoInfo {
    TrinoInfo {
        url: "http://127.0.0.1:8080/".into(),
        version: Some("480".into()),
        uptime_seconds: Some(9000.0),
    }
}

pub(super) fn audit(table: &str, action: &str, statement: &str, query: &str) -> Record {
    let mut r = Record::now(
        "lab",
        "floe",
        "http://127.0.0.1:8080/",
        Action::parse(action),
        statement,
    );
    r.time = "2026-11-29T09:30:00.000Z".into();
    r.table = Some(table.into());
    r.query_id = Some(query.into());
    r.outcome = Outcome::Succeeded;
    r.files_before = Some(28);
    r.files_after = Some(2);
    r.duration_ms = 4200;
    r
}

pub(super) fn doc(
    stats: &TableStats,
    dag: Option<DagSection>,
    runs: &DagRuns,
    audit: &[Record],
) -> Postmortem {
    let facts = failing_facts();
    let health = evaluate(stats, Some(&facts), &HealthConfig::default(), t0());
    let table = tref("zoning", "documents");
    build(Sources {
        now: t0(),
        profile: "lab",
        table: &table,
        stats: Some(stats),
        health: &health,
        error: None,
        trino: trino(),
        airflow: None,
        dag,
        snapshots: Some(&[]),
        runs,
        stale_after: chrono::Duration::hours(36),
        audit_log: Some("/var/lib/floe/audit.jsonl".into()),
        audit,
        queries: None,
        notes: Vec::new(),
    })
}

#[test]
fn the_incident_reads_as_a_write_up() {
    let audit = vec![
        audit(
            "iceberg.zoning.documents",
            "optimize",
            "ALTER TABLE \"iceberg\".\"zoning\".\"documents\" EXECUTE optimize WHERE district = 'north'",
            "20261129_093000_00042_lab01",
        ),
        audit("iceberg.audit.events", "optimize", "ALTER …", "other"),
        {
            let mut r = audit("", "trigger_dag", "trigger compact_documents", "");
            r.table = None;
            r.query_id = None;
            r
        },
    ];
    let mut dag = DagSection::new(&failing_facts());
    dag.failing_run = Some("scheduled__2026-11-29T00:00:00+00:00".into());
    let p = doc(
        &incident_stats(),
        Some(dag),
        &DagRuns::Loaded {
            dag_id: "compact_documents".into(),
            runs: vec![],
        },
        &audit,
    );
    assert_eq!(
        p.actions.len(),
        2,
        "the table's optimize and its DAG's trigger"
    );
    let md = p.markdown();
    for want in [
        "# Postmortem: `iceberg.zoning.documents`",
        "**CRITICAL**",
        "| `small_files` |",
        "| `stale_dag_failing` |",
        "- DAG: `compact_documents`",
        "- failing task: `compact` of run `scheduled__2026-11-29T00:00:00+00:00`",
        "trino-old.internal:8080",
        "`20261129_093000_00042_lab01`",
        "28 → 2",
        "- Trino `http://127.0.0.1:8080/` version 480, coordinator up 2h30m",
        "> no snapshots; compact\\_documents has no runs",
    ] {
        assert!(md.contains(want), "{want:?} not in:\n{md}");
    }
    assert!(md.contains(&md::code(ERROR)));
    assert!(!md.contains("other"), "another table's action: {md}");
    let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
    assert_eq!(v["name"], "iceberg.zoning.documents");
    assert_eq!(v["dag"]["error_line"], ERROR);
    assert_eq!(v["actions"][0]["query_id"], "20261129_093000_00042_lab01");
    assert_eq!(v["trino"]["version"], "480");
    assert_eq!(v["table"]["status"], "CRITICAL");
}

#[test]
fn runs_of_appends_fold_into_one_row_between_the_events_that_matter() {
    use crate::airflow::DagRunState;
    let t = |h: i64| t0() - chrono::Duration::hours(h);
    let snap = |i: i64, h: i64, op: &str, total: u64, deleted: Option<u64>| SnapshotInfo {
        committed_at: t(h),
        snapshot_id: 1000 + i,
        parent_id: None,
        operation: crate::lakehouse::model::SnapshotOperation::parse(op),
        added_data_files: Some(10),
        deleted_data_files: deleted,
        total_data_files: Some(total),
        added_records: None,
        total_records: None,
        total_delete_files: None,
        added_files_size: None,
        removed_files_size: None,
        trino_user: None,
        trino_query_id: None,
    };
    // 22 appends, a compaction, 38 appends, a delete, 3 appends.
    let mut snaps = Vec::new();
    let mut h = 200;
    let mut total = 0;
    for i in 0..22 {
        total += 10;
        snaps.push(snap(i, h, "append", total, None));
        h -= 1;
    }
    snaps.push(snap(22, h, "replace", 12, Some(total)));
    total = 12;
    h -= 1;
    for i in 23..61 {
        total += 10;
        snaps.push(snap(i, h, "append", total, None));
        h -= 1;
    }
    snaps.push(snap(61, h, "delete", total, None));
    h -= 1;
    for i in 62..65 {
        total += 10;
        snaps.push(snap(i, h, "append", total, None));
        h -= 1;
    }
    // A failed run of the maintenance DAG among the appends after the compaction.
    let run = crate::app::testing::dags::scheduled_run(
        "scheduled__x".into(),
        t(150) + chrono::Duration::minutes(30),
        DagRunState::Failed,
    );
    let runs = DagRuns::Loaded {
        dag_id: "compact_documents".into(),
        runs: vec![run],
    };
    let stats = incident_stats();
    let facts = failing_facts();
    let health = evaluate(&stats, Some(&facts), &HealthConfig::default(), t0());
    let table = tref("zoning", "documents");
    let p = build(Sources {
        now: t0(),
        profile: "lab",
        table: &table,
        stats: Some(&stats),
        health: &health,
        error: None,
        trino: trino(),
        airflow: None,
        dag: None,
        snapshots: Some(&snaps),
        runs: &runs,
        stale_after: chrono::Duration::hours(36),
        audit_log: None,
        audit: &[],
        notes: Vec::new(),
        queries: None,
    });
    let md = p.markdown();
    let timeline: Vec<&str> = md
        .lines()
        .skip_while(|l| *l != "## Timeline")
        .skip(4)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let events: Vec<&str> = timeline
        .iter()
        .map(|l| l.split('|').nth(2).unwrap().trim())
        .collect();
    assert_eq!(
        events,
        vec![
            "· 22 appends, 11-21 01:00 → 11-21 22:00",
            "◆ compaction (replace)",
            "· 28 appends, 11-22 00:00 → 11-23 03:00",
            "✗ run failed",
            "· 10 appends, 11-23 04:00 → 11-23 13:00",
            "· write (delete)",
            "· 3 appends, 11-23 15:00 → 11-23 17:00",
        ],
        "{md}"
    );
    assert!(timeline[0].contains("| 10 → 220 |"), "{}", timeline[0]);
    // JSON keeps every event.
    let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
    assert_eq!(v["timeline"]["events"].as_array().unwrap().len(), 66);
}

#[test]
fn the_sequence_tells_symptom_cause_fix_run_and_result_with_times() {
    use crate::airflow::DagRunState;
    use crate::app::testing::dags::scheduled_run;
    use crate::lakehouse::query_history::{QueryRun, TableQueries};
    use chrono::TimeZone;
    let t = |h: u32, m: u32| chrono::Utc.with_ymd_and_hms(2026, 11, 29, h, m, 0).unwrap();
    let rec = |action: &str, statement: &str, time: &str| {
        let mut r = audit("", action, statement, "");
        r.table = None;
        r.query_id = None;
        r.files_before = None;
        r.files_after = None;
        r.time = time.into();
        r.duration_ms = 0;
        r
    };
    let audit = vec![
        rec(
            "fix_connection",
            "set connection trino_documents host=127.0.0.1 port=8080",
            "2026-11-29T09:10:00.000Z",
        ),
        // Another DAG's connection: not this incident's fix.
        rec(
            "fix_connection",
            "set connection trino_documents_old host=h port=1",
            "2026-11-29T09:11:00.000Z",
        ),
        rec(
            "trigger_dag",
            "trigger compact_documents",
            "2026-11-29T09:12:00.000Z",
        ),
    ];
    let mut dag = DagSection::new(&failing_facts());
    dag.last_success_at = Some("2026-11-15T00:00:00Z".into());
    let runs = DagRuns::Loaded {
        dag_id: "compact_documents".into(),
        runs: vec![
            scheduled_run(
                "scheduled__ok".into(),
                t(0, 0) - chrono::Duration::days(14),
                DagRunState::Success,
            ),
            scheduled_run(
                "scheduled__first_failed".into(),
                t(0, 0) - chrono::Duration::days(13),
                DagRunState::Failed,
            ),
            scheduled_run("scheduled__2".into(), t(0, 0), DagRunState::Failed),
            scheduled_run("manual__fix".into(), t(9, 12), DagRunState::Success),
        ],
    };
    let mut p = doc(&incident_stats(), Some(dag), &runs, &audit);
    p.queries = Some(TableQueries::Runs {
        runs: vec![QueryRun {
            query_id: "q1".into(),
            state: crate::lakehouse::query_history::QueryState::Finished,
            user: "bi".into(),
            source: Some("dashboard".into()),
            query: "SELECT 1 FROM documents".into(),
            created: Some(t(8, 14)),
            ended: None,
            elapsed_ms: Some(252_000),
            queued_ms: None,
            cpu_ms: None,
            splits: Some(18_000),
            physical_input_bytes: None,
            physical_written_bytes: None,
            error_code: None,
        }],
        unconfirmed: 0,
    });
    let seq = sequence(&p);
    let steps: Vec<(&str, String)> = seq
        .iter()
        .map(|s| (s.step, s.at.format("%m-%d %H:%M").to_string()))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("cause", "11-16 00:00".to_string()),
            ("symptom", "11-29 08:14".to_string()),
            ("fix", "11-29 09:10".to_string()),
            ("run", "11-29 09:12".to_string()),
            ("run", "11-29 09:12".to_string()),
        ],
        "{seq:#?}"
    );
    assert!(seq[0].what.starts_with(
        "DAG compact_documents failing from run scheduled__first_failed: ConnectionError"
    ));
    assert!(
        seq[1]
            .what
            .starts_with("the dashboard query on documents took 4m12s reading 18,000 splits")
    );
    assert_eq!(
        seq[2].what,
        "set connection trino_documents host=127.0.0.1 port=8080 (succeeded)"
    );
    let md = p.markdown();
    assert!(
        md.contains("## Sequence\n\n| when (UTC) | step | what |"),
        "{md}"
    );
    assert!(md.contains("| 2026-11-29 09:10 | fix | set connection trino\\_documents host=127.0.0.1 port=8080 (succeeded) |"), "{md}");

    // Written after the verified fix: the DAG's last success is the fix's run, and a
    // later run of the query was slower (a busy coordinator). The cause is still the
    // streak's first failure, the symptom still the run before the fix.
    if let Some(d) = p.dag.as_mut() {
        d.last_success_at = Some("2026-11-29T09:12:30Z".into());
    }
    if let Some(TableQueries::Runs { runs, .. }) = p.queries.as_mut() {
        let mut later = runs[0].clone();
        later.query_id = "q2".into();
        later.created = Some(t(10, 0));
        later.elapsed_ms = Some(300_000);
        later.splits = Some(360);
        runs.push(later);
    }
    let seq = sequence(&p);
    let steps: Vec<(&str, String)> = seq
        .iter()
        .map(|s| (s.step, s.at.format("%m-%d %H:%M").to_string()))
        .collect();
    assert_eq!(steps[0], ("cause", "11-16 00:00".to_string()), "{seq:#?}");
    assert_eq!(steps[1], ("symptom", "11-29 08:14".to_string()), "{seq:#?}");
    assert_eq!(
        steps.last().unwrap(),
        &("result", "11-29 10:00".to_string())
    );
    assert!(
        seq.last()
            .unwrap()
            .what
            .ends_with("took 5m (the symptom's run: 4m12s)"),
        "{seq:#?}"
    );
}

#[test]
fn the_symptoms_next_runs_after_the_fix_are_its_result() {
    use crate::lakehouse::query_history::{QueryRun, TableQueries};
    use chrono::TimeZone;
    let t = |h: u32, m: u32| chrono::Utc.with_ymd_and_hms(2026, 11, 29, h, m, 0).unwrap();
    let run = |id: &str, at: DateTime<Utc>, ms: u64| QueryRun {
        query_id: id.into(),
        state: crate::lakehouse::query_history::QueryState::Finished,
        user: "bi".into(),
        source: Some("dashboard".into()),
        query: "SELECT district, count(*) FROM documents GROUP BY 1".into(),
        created: Some(at),
        ended: None,
        elapsed_ms: Some(ms),
        queued_ms: None,
        cpu_ms: None,
        splits: None,
        physical_input_bytes: None,
        physical_written_bytes: None,
        error_code: None,
    };
    let mut p = doc(&incident_stats(), None, &DagRuns::NoAirflow, &[]);
    p.queries = Some(TableQueries::Runs {
        runs: vec![
            run("q3", t(11, 56), 19_000),
            run("q2", t(8, 0), 18_000),
            run("q1", t(8, 14), 252_000),
        ],
        unconfirmed: 0,
    });
    let steps = symptom_after(&p, t(9, 10));
    assert_eq!(steps.len(), 1, "{steps:#?}");
    assert_eq!(steps[0].step, "result");
    assert_eq!(steps[0].at, t(11, 56));
    assert_eq!(
        steps[0].what,
        "the dashboard query on documents took 19s (the symptom's run: 4m12s)"
    );
}

#[test]
fn nothing_mapped_nothing_done() {
    let p = doc(&incident_stats(), None, &DagRuns::NoAirflow, &[]);
    let md = p.markdown();
    assert!(md.contains("Airflow is not configured"), "{md}");
    assert!(md.contains("None recorded in the audit log"), "{md}");
}

#[test]
fn hostile_values_stay_in_their_cell_and_span() {
    let h = crate::text::hostile_sample();
    let evil = format!("x` | **y** [z](http://e) <img src=x> ``` {h}");
    let mut dag = DagSection::new(&failing_facts());
    dag.dag_id = evil.clone();
    dag.error_line = Some(evil.clone());
    dag.failing_task = Some(evil.clone());
    let mut a = audit("iceberg.zoning.documents", &evil, &evil, &evil);
    a.partition = Some(evil.clone());
    a.error = Some(evil.clone());
    let p = doc(&incident_stats(), Some(dag), &DagRuns::NotMapped, &[a]);
    let md = p.markdown();
    assert!(crate::text::is_inert(&md), "{md:?}");
    // Every line of the actions table has exactly its 10 unescaped pipes.
    for line in md.lines().filter(|l| l.starts_with("| 2026-11-29")) {
        let unescaped = line
            .char_indices()
            .filter(|(i, c)| *c == '|' && (*i == 0 || &line[i - 1..*i] != "\\"))
            .count();
        assert_eq!(unescaped, 10, "{line}");
    }
    let text = md::text(&evil);
    assert!(text.contains("\\<img") && text.contains("\\[z\\](http") && !text.contains("**"));
    // A code span's fence is longer than any backtick run inside it.
    assert!(md.contains("- error: ````x`"), "{md}");
    let v: serde_json::Value = serde_json::from_str(&p.json()).unwrap();
    assert_eq!(v["dag"]["error_line"], evil, "JSON keeps the real string");
    assert!(crate::text::is_inert(&p.json()));
}
