use super::*;
use chrono::TimeZone;

fn run(id: &str, source: Option<&str>, q: &str, elapsed: u64, at_min: i64) -> QueryRun {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 29, 8, 0, 0).unwrap();
    QueryRun {
        query_id: id.into(),
        state: QueryState::Finished,
        user: "alice".into(),
        source: source.map(str::to_string),
        query: q.into(),
        created: Some(t0 + chrono::Duration::minutes(at_min)),
        ended: None,
        elapsed_ms: Some(elapsed),
        queued_ms: Some(3),
        cpu_ms: Some(9_000),
        splits: Some(if elapsed > 60_000 { 18_000 } else { 40 }),
        physical_input_bytes: Some(2 << 30),
        physical_written_bytes: Some(0),
        error_code: None,
    }
}

#[test]
fn the_slowest_run_against_the_median_of_its_statement() {
    let q = "SELECT district, count(*) FROM documents GROUP BY 1";
    let runs = vec![
        run("q5", Some("dashboard"), q, 252_000, 254),
        run("q4", Some("dashboard"), &format!("{q}\n"), 18_000, 180),
        run("q3", Some("dashboard"), q, 17_000, 120),
        run("q2", None, "SELECT * FROM documents LIMIT 1", 400, 60),
        run("q1", Some("dashboard"), q, 19_000, 14),
    ];
    let w = suffering(&runs).unwrap();
    assert_eq!(w.run.query_id, "q5");
    assert_eq!(w.same, 4, "whitespace does not make another statement");
    assert_eq!(w.median_ms, 18_500);
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 20, 0).unwrap();
    assert_eq!(
        w.line("documents", now),
        "the dashboard query on documents took 4m12s reading 18,000 splits; its median over the last 4h6m (4 runs) 18s"
    );
    let one = vec![run("q2", None, "SELECT 1 FROM documents", 400, 60)];
    assert_eq!(
        suffering(&one).unwrap().line("documents", now),
        "a query by alice on documents took 400ms reading 40 splits; the only run of it the coordinator keeps"
    );
    assert!(suffering(&[]).is_none());
}

#[test]
fn a_tables_own_maintenance_is_not_what_its_readers_suffered() {
    let runs = vec![
        run(
            "q9",
            Some("airflow"),
            "ALTER TABLE iceberg.zoning.documents\n EXECUTE optimize(file_size_threshold => '96MB')",
            41_000,
            300,
        ),
        run(
            "q1",
            Some("dashboard"),
            "SELECT count(*) FROM documents",
            7_400,
            10,
        ),
    ];
    assert_eq!(suffering(&runs).unwrap().run.query_id, "q1");
    assert!(is_table_procedure("alter table t execute expire_snapshots"));
    assert!(!is_table_procedure(
        "SELECT 'alter table t execute' FROM documents"
    ));
    assert!(suffering(&runs[..1]).is_none());
}

#[test]
fn lines_say_what_is_missing_plainly() {
    let now = Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap();
    let none = TableQueries::Runs {
        runs: vec![],
        unconfirmed: 2,
    };
    let l = lines(&none, "documents", now, 5);
    assert_eq!(
        l[0],
        "queries: none that read documents in the coordinator's recent history"
    );
    assert!(l[1].contains("2 more named documents"), "{l:?}");
    let no = TableQueries::Unavailable {
        reason: "user bob may not read the coordinator's query history".into(),
    };
    assert_eq!(
        lines(&no, "documents", now, 5),
        vec!["queries: user bob may not read the coordinator's query history"]
    );
}

#[test]
fn history_errors_that_are_answers() {
    let q = |name: &str| TrinoError::Query {
        query_id: "q".into(),
        error_name: name.into(),
        error_code: 1,
        error_type: "USER_ERROR".into(),
        message: "m".into(),
        location: None,
    };
    let u = unavailable(&q("TABLE_NOT_FOUND"), "floe", "http://t:8080/").unwrap();
    assert!(u.contains("keeps no query history"), "{u}");
    let u = unavailable(&q("PERMISSION_DENIED"), "mallory", "http://t:8080/").unwrap();
    assert!(u.starts_with("user mallory may not read"), "{u}");
    assert!(unavailable(&q("GENERIC_INTERNAL_ERROR"), "floe", "u").is_none());
}

/// A state is read once from the coordinator's record; one it does not know is kept as
/// spelled, and every state is written back as the server spelled it.
#[test]
fn states_are_read_once_and_kept_as_spelled() {
    assert_eq!(QueryState::parse("FINISHED"), QueryState::Finished);
    assert_eq!(QueryState::parse("FAILED"), QueryState::Failed);
    let odd = QueryState::parse("ABANDONED\u{1b}[2J");
    assert_eq!(odd, QueryState::Other("ABANDONED\u{1b}[2J".into()));
    assert_eq!(odd.as_str(), "ABANDONED\u{1b}[2J");
    let r = run("q1", None, "SELECT 1", 10, 0);
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["state"], "FINISHED");
}

#[test]
fn the_candidates_statement_quotes_the_name() {
    let t = TableRef::new("iceberg", "zoning", "Doc's");
    let sql = candidates_sql(&t);
    assert!(
        sql.contains(r"regexp_like(query, '(?i)(^|[^a-z0-9_$])doc\''s([^a-z0-9_$]|$)')"),
        "{sql}"
    );
    assert!(sql.contains("state IN ('FINISHED', 'FAILED')"), "{sql}");
}

#[test]
fn the_query_list_is_searched_as_the_coordinator_searches_its_record() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    assert!(names_table_word("SELECT * FROM zoning.documents d", &t));
    assert!(names_table_word("select count(*) from DOCUMENTS", &t));
    assert!(names_table_word("SELECT 1 FROM \"documents\"", &t));
    assert!(names_table_word("documents", &t));
    assert!(
        !names_table_word("SELECT * FROM \"documents$files\"", &t),
        "floe's own reads"
    );
    assert!(!names_table_word("SELECT * FROM documents_v2", &t));
    assert!(!names_table_word("SELECT * FROM old_documents", &t));
    assert!(
        names_table_word("SELECT * FROM old_documents JOIN documents USING (id)", &t),
        "a later whole word"
    );
    let dotted = TableRef::new("iceberg", "s", "a.b");
    assert!(names_table_word("SELECT * FROM s.\"a.b\"", &dotted));
    assert!(!names_table_word("SELECT * FROM s.\"axb\"", &dotted));

    assert!(is_optimize("ALTER TABLE zoning.documents EXECUTE optimize"));
    assert!(is_optimize(
        "  alter table t\n  execute   OPTIMIZE(file_size_threshold => '96MB') WHERE d = 'x'"
    ));
    assert!(!is_optimize("ALTER TABLE t EXECUTE optimize_manifests"));
    assert!(!is_optimize("ALTER TABLE t EXECUTE expire_snapshots"));
    assert!(!is_optimize("SELECT 'ALTER TABLE t EXECUTE optimize'"));
    assert!(!is_optimize("ALTER TABLE EXECUTE optimize"), "no table");
}
