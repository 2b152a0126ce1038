use super::*;
use crate::fmt::thousands;
use crate::health::Rule;
use chrono::TimeZone;
use std::time::Duration;

const MB: u64 = 1 << 20;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 29, 12, 0, 0).unwrap()
}

fn hours_ago(h: i64) -> DateTime<Utc> {
    now() - chrono::Duration::hours(h)
}

/// A table that is fine on every rule.
fn healthy() -> TableStats {
    TableStats {
        target_file_size: 128 * MB,
        data_files: 40,
        small_files: 2,
        total_bytes: 40 * 120 * MB,
        records: 1_000_000,
        partitioned: true,
        partitions: 20,
        small_file_partitions: 0,
        critical_partitions: 0,
        snapshots: 5,
        oldest_snapshot: Some(hours_ago(72)),
        newest_snapshot: Some(hours_ago(1)),
        last_compaction: Some(hours_ago(10)),
        last_write: Some(hours_ago(1)),
        writes_since_compaction: 1,
        ..Default::default()
    }
}

/// The incident: thousands of 2 MB files, last compaction 15 days ago, written daily.
fn incident() -> TableStats {
    TableStats {
        target_file_size: 128 * MB,
        data_files: 18_000,
        small_files: 18_000,
        total_bytes: 18_000 * 2 * MB,
        records: 90_000_000,
        partitioned: true,
        partitions: 600,
        small_file_partitions: 600,
        // 30 files a partition: none holds 100 more than its bytes need.
        critical_partitions: 0,
        snapshots: 30,
        oldest_snapshot: Some(hours_ago(24 * 20)),
        newest_snapshot: Some(hours_ago(2)),
        last_compaction: Some(hours_ago(24 * 15)),
        last_write: Some(hours_ago(2)),
        writes_since_compaction: 15,
        files_after_compaction: Some(600),
        ..Default::default()
    }
}

fn rules(h: &Health) -> Vec<&'static str> {
    h.findings.iter().map(|f| f.rule.as_str()).collect()
}

fn finding<'a>(h: &'a Health, rule: &str) -> &'a Finding {
    h.findings
        .iter()
        .find(|f| f.rule.as_str() == rule)
        .unwrap_or_else(|| panic!("no {rule} in {h:?}"))
}

#[test]
fn healthy_table_is_ok_with_full_score() {
    let h = evaluate(&healthy(), None, &HealthConfig::default(), now());
    assert_eq!(h.status, Severity::Ok);
    assert_eq!(h.score, 100);
    assert!(h.findings.is_empty(), "{h:?}");
}

#[test]
fn the_incident_is_critical_and_says_why() {
    let h = evaluate(&incident(), None, &HealthConfig::default(), now());
    assert_eq!(h.status, Severity::Critical);
    let small = finding(&h, "small_files");
    assert_eq!(small.severity, Severity::Critical);
    assert!(
        small.message.contains("18,000 of 18,000"),
        "{}",
        small.message
    );
    assert!(small.message.contains("96 MB"), "{}", small.message);
    assert!(small.message.contains("2.0 MB"), "{}", small.message);
    let stale = finding(&h, "compaction_stale");
    assert_eq!(stale.severity, Severity::Critical);
    assert!(stale.message.contains("15d ago"), "{}", stale.message);
    assert!(
        stale.message.contains("grew from 600 to 18,000"),
        "{}",
        stale.message
    );
    // Twenty days of snapshots are past the 7-day retention as well.
    assert_eq!(finding(&h, "snapshot_bloat").severity, Severity::Warning);
    assert_eq!(h.score, 100 - 40 - 30 - 10);
}

#[test]
fn small_file_threshold_is_ratio_of_target_and_property_wins() {
    let cfg = HealthConfig::default();
    assert_eq!(cfg.small_threshold(128 * MB), 96 * MB);
    assert_eq!(cfg.small_threshold(64 * 1024), 48 * 1024);
    let mut s = incident();
    s.target_file_size = 64 * 1024;
    s.target_from_property = true;
    let h = evaluate(&s, None, &cfg, now());
    assert!(
        finding(&h, "small_files")
            .message
            .contains("table property")
    );
}

#[test]
fn below_min_small_files_is_never_flagged_for_small_files_or_staleness() {
    let cfg = HealthConfig::default();
    let mut s = incident();
    s.data_files = 11;
    s.small_files = 11;
    s.total_bytes = 11 * 1024;
    s.last_compaction = None;
    let h = evaluate(&s, None, &cfg, now());
    assert!(!rules(&h).contains(&"small_files"), "{h:?}");
    assert!(!rules(&h).contains(&"never_compacted"), "{h:?}");
    assert!(!rules(&h).contains(&"compaction_stale"), "{h:?}");
    // One more small file crosses the line: worth compacting, but 12 KB in 12 files
    // cost a reader nothing, so never compacted is a WARNING, not CRITICAL.
    s.data_files = 12;
    s.small_files = 12;
    let h = evaluate(&s, None, &cfg, now());
    assert!(rules(&h).contains(&"small_files"));
    assert_eq!(finding(&h, "small_files").severity, Severity::Warning);
    let never = finding(&h, "never_compacted");
    assert_eq!(never.severity, Severity::Warning);
    assert!(
        never.message.contains("cost a reader little"),
        "{}",
        never.message
    );
    assert_eq!(h.status, Severity::Warning);
}

/// Tiny tables of the lab's kind: 16 files of 1.3 KB (22 KB), and finance.budget's 168
/// files of 2.3 KB over 12 partitions, never compacted, stale for two weeks.
fn tiny(files: u64, file_bytes: u64, partitions: u64) -> TableStats {
    TableStats {
        target_file_size: 128 * MB,
        data_files: files,
        small_files: files,
        total_bytes: files * file_bytes,
        records: files * 10,
        partitioned: partitions > 1,
        partitions,
        small_file_partitions: if files / partitions.max(1) >= 12 {
            partitions
        } else {
            0
        },
        critical_partitions: 0,
        snapshots: 14,
        oldest_snapshot: Some(hours_ago(24 * 14)),
        newest_snapshot: Some(hours_ago(2)),
        last_write: Some(hours_ago(2)),
        oldest_small_file_at: Some(hours_ago(24 * 14)),
        ..Default::default()
    }
}

#[test]
fn tiny_tables_of_small_files_are_a_warning_with_the_reason() {
    let cfg = HealthConfig::default();
    for s in [tiny(16, 1331, 1), tiny(168, 2355, 12)] {
        let h = evaluate(&s, None, &cfg, now());
        assert_eq!(h.status, Severity::Warning, "{h:?}");
        let f = finding(&h, "small_files");
        assert_eq!(f.severity, Severity::Warning);
        let why = format!(
            "{} small files: WARNING, worth compacting; CRITICAL from 1,000 files more than the bytes need, or 100 in one partition",
            s.small_files
        );
        assert!(f.message.contains(&why), "{}", f.message);
        // Never compacted and its DAG stale: as critical as what it costs, a WARNING.
        assert_eq!(finding(&h, "never_compacted").severity, Severity::Warning);
        let h = evaluate(&s, Some(&dag("failed")), &cfg, now());
        assert_eq!(finding(&h, "stale_dag_failing").severity, Severity::Warning);
        let mut d = dag("success");
        d.paused = true;
        let h = evaluate(&s, Some(&d), &cfg, now());
        assert_eq!(finding(&h, "stale_dag_paused").severity, Severity::Warning);
        // Compacted once, long ago: stale past compaction_critical, still a WARNING.
        let mut c = s.clone();
        c.last_compaction = Some(hours_ago(24 * 13));
        let h = evaluate(&c, None, &cfg, now());
        let stale = finding(&h, "compaction_stale");
        assert_eq!(stale.severity, Severity::Warning);
        assert!(
            stale.message.contains("cost a reader little"),
            "{}",
            stale.message
        );
    }
}

#[test]
fn small_files_turn_critical_when_a_reader_pays_for_them() {
    let cfg = HealthConfig::default();
    // The lab's documents table: 2,004 files of 4.2 KB (8.2 MB): 2,003 files too many.
    let mut s = tiny(2004, 4300, 360);
    s.small_file_partitions = 77;
    let h = evaluate(&s, None, &cfg, now());
    assert_eq!(h.status, Severity::Critical);
    let f = finding(&h, "small_files");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.message
            .contains("CRITICAL: a reader opens 2,004 files where 1 would hold the 8.2 MB"),
        "{}",
        f.message
    );
    assert_eq!(finding(&h, "never_compacted").severity, Severity::Critical);
    let h = evaluate(&s, Some(&dag("failed")), &cfg, now());
    assert_eq!(
        finding(&h, "stale_dag_failing").severity,
        Severity::Critical
    );
    // The boundary: 1,000 files more than the bytes need.
    let mut b = tiny(1000, 1000, 1);
    assert_eq!(
        excess_files(b.data_files, b.total_bytes, b.target_file_size),
        999
    );
    assert_eq!(
        finding(&evaluate(&b, None, &cfg, now()), "small_files").severity,
        Severity::Warning
    );
    b.data_files = 1001;
    b.small_files = 1001;
    assert_eq!(
        finding(&evaluate(&b, None, &cfg, now()), "small_files").severity,
        Severity::Critical
    );
    // Bytes count: 1,200 small files of 90 MB need 844 files of 128 MB; a reader opens
    // 356 more than that, which is worth compacting, not an emergency.
    let big = tiny(1200, 90 * MB, 1);
    assert_eq!(
        finding(&evaluate(&big, None, &cfg, now()), "small_files").severity,
        Severity::Warning
    );
    // One partition holding 100 small files more than its bytes need is enough.
    let mut p = tiny(400, 2000, 20);
    assert_eq!(
        finding(&evaluate(&p, None, &cfg, now()), "small_files").severity,
        Severity::Warning
    );
    p.critical_partitions = 1;
    let f = evaluate(&p, None, &cfg, now());
    let small = finding(&f, "small_files");
    assert_eq!(small.severity, Severity::Critical);
    assert!(
        small
            .message
            .contains("1 partition holds ≥ 100 small files more than its bytes need"),
        "{}",
        small.message
    );
    // The thresholds are the config's.
    let strict = HealthConfig {
        critical_small_files: 100,
        ..HealthConfig::default()
    };
    assert_eq!(
        evaluate(&tiny(168, 2355, 12), None, &strict, now()).status,
        Severity::Critical
    );
}

#[test]
fn a_partition_is_critical_when_a_reader_of_it_pays() {
    let cfg = HealthConfig::default();
    let part = |files: u64, bytes: u64| PartitionStats {
        values: vec![],
        data_files: files,
        small_files: files,
        total_bytes: files * bytes,
        records: files,
        min_file: bytes,
        max_file: bytes,
        delete_files: 0,
        oldest_small_file_at: None,
        spec_id: None,
    };
    let t = 128 * MB;
    assert_eq!(partition_severity(&part(11, 1000), t, &cfg), Severity::Ok);
    assert_eq!(
        partition_severity(&part(16, 1300), t, &cfg),
        Severity::Warning
    );
    assert_eq!(
        partition_severity(&part(100, 1300), t, &cfg),
        Severity::Warning
    );
    assert_eq!(
        partition_severity(&part(101, 1300), t, &cfg),
        Severity::Critical
    );
    // 150 files of 100 MB need 118 of 128 MB: 32 too many.
    assert_eq!(
        partition_severity(&part(150, 100 * MB), t, &cfg),
        Severity::Warning
    );
}

#[test]
fn over_partitioned_tables_count_at_table_level() {
    // 500 partitions with 3 small files each: no small-file partition, but the table's
    // average is far below the small threshold.
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.partitions = 500;
    s.data_files = 1500;
    s.small_files = 1500;
    s.small_file_partitions = 0;
    s.total_bytes = 1500 * 40 * MB;
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "small_files");
    // 60 GB need 469 files of 128 MB: a reader opens 1,031 more, past critical_small_files.
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.message.contains("over-partitioned"), "{}", f.message);
}

#[test]
fn a_few_small_files_in_a_big_table_are_informational() {
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.data_files = 10_000;
    s.small_files = 15;
    s.total_bytes = 10_000 * 120 * MB;
    s.partitions = 1000;
    let h = evaluate(&s, None, &cfg, now());
    assert_eq!(finding(&h, "small_files").severity, Severity::Info);
    assert_eq!(h.status, Severity::Ok);
}

#[test]
fn staleness_boundaries_and_needs_writes_since() {
    let cfg = HealthConfig::default();
    let mut s = incident();
    s.last_compaction = Some(hours_ago(35));
    let h = evaluate(&s, None, &cfg, now());
    assert!(!rules(&h).contains(&"compaction_stale"));
    s.last_compaction = Some(hours_ago(36));
    let h = evaluate(&s, None, &cfg, now());
    assert_eq!(finding(&h, "compaction_stale").severity, Severity::Warning);
    s.last_compaction = Some(hours_ago(48));
    let h = evaluate(&s, None, &cfg, now());
    assert_eq!(finding(&h, "compaction_stale").severity, Severity::Critical);
    // Not written since the compaction: not stale, however old.
    s.last_compaction = Some(hours_ago(24 * 30));
    s.last_write = Some(hours_ago(24 * 31));
    let h = evaluate(&s, None, &cfg, now());
    assert!(!rules(&h).contains(&"compaction_stale"));
}

#[test]
fn snapshot_bloat() {
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.snapshots = 400;
    s.oldest_snapshot = Some(hours_ago(24 * 60));
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "snapshot_bloat");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.message.contains("400 snapshots") && f.message.contains("60d"),
        "{}",
        f.message
    );
    s.snapshots = 501;
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "snapshot_bloat").severity,
        Severity::Critical
    );
    s.oldest_snapshot = Some(hours_ago(24 * 7 - 1));
    s.snapshots = 400;
    assert!(!rules(&evaluate(&s, None, &cfg, now())).contains(&"snapshot_bloat"));
}

#[test]
fn delete_files_ratio() {
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.delete_files = 4; // 10% of 40
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "delete_files").severity,
        Severity::Warning
    );
    s.delete_files = 20;
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "delete_files").severity,
        Severity::Critical
    );
    s.delete_files = 1;
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "delete_files").severity,
        Severity::Info
    );
}

#[test]
fn empty_table_is_info_only() {
    let s = TableStats {
        target_file_size: 128 * MB,
        ..Default::default()
    };
    let h = evaluate(&s, None, &HealthConfig::default(), now());
    assert_eq!(h.status, Severity::Ok);
    assert_eq!(rules(&h), vec!["empty"]);
}

fn dag(state: &str) -> DagFacts {
    DagFacts {
        dag_id: "compact_documents".into(),
        guessed: false,
        paused: false,
        import_error: None,
        last_run_state: Some(crate::airflow::DagRunState::parse(state)),
        active_run: None,
        last_run_at: Some(hours_ago(10)),
        last_success_at: None,
        failed_runs: 14,
        failing_task: Some("compact".into()),
        error_line: Some(
            "ConnectionError: trino-old.internal:8080: Name or service not known".into(),
        ),
        expected_interval: Duration::from_secs(86_400),
        code: None,
    }
}

#[test]
fn a_lower_bound_wait_is_said_and_never_reads_as_fresh() {
    let cfg = HealthConfig::default();
    let mut s = incident();
    s.last_compaction = Some(hours_ago(100));
    s.oldest_small_is_lower_bound = true;
    // The oldest snapshot left is 20 h old (a 1 d retention): below compaction_warn.
    s.oldest_small_file_at = Some(hours_ago(20));
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "compaction_age_unknown");
    assert!(
        f.message.contains("at least 20h") && f.message.contains("real age is unknown"),
        "{}",
        f.message
    );
    // Past the limit even as a lower bound: stale, and said to be at least that.
    s.oldest_small_file_at = Some(hours_ago(60));
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "compaction_stale");
    assert!(
        f.message.contains("waiting since at least"),
        "{}",
        f.message
    );
}

#[test]
fn an_unpaused_dag_that_never_ran_is_a_finding() {
    let never = DagFacts {
        last_run_state: None,
        active_run: None,
        last_run_at: None,
        last_success_at: None,
        failed_runs: 0,
        failing_task: None,
        error_line: None,
        ..dag("success")
    };
    let h = evaluate_dag(&never, now());
    assert_eq!(h.status, Severity::Warning, "{h:?}");
    let f = h
        .findings
        .iter()
        .find(|f| f.rule == crate::health::Rule::DagNeverRan)
        .unwrap();
    assert!(f.message.contains("has never run"), "{}", f.message);
    // Paused, it says so instead; with runs, the usual rules speak.
    let paused = DagFacts {
        paused: true,
        ..never.clone()
    };
    assert!(
        !evaluate_dag(&paused, now())
            .findings
            .iter()
            .any(|f| f.rule == crate::health::Rule::DagNeverRan)
    );
}

#[test]
fn correlation_names_the_failing_dag_and_its_error() {
    let h = evaluate(
        &incident(),
        Some(&dag("failed")),
        &HealthConfig::default(),
        now(),
    );
    let f = finding(&h, "stale_dag_failing");
    assert!(
        f.message.contains(
            "compact_documents is failing: compact: ConnectionError: trino-old.internal:8080"
        ),
        "{}",
        f.message
    );
    assert!(
        !rules(&h).contains(&"dag_failing"),
        "the DAG's own findings are the DAG's verdict"
    );
    let d = evaluate_dag(&dag("failed"), now());
    assert!(rules(&d).contains(&"dag_failing"));
    assert!(rules(&d).contains(&"dag_no_success"));
}

#[test]
fn correlation_catches_the_silent_success() {
    let mut d = dag("success");
    d.last_success_at = Some(hours_ago(10));
    d.failing_task = None;
    d.error_line = None;
    d.failed_runs = 0;
    let h = evaluate(&incident(), Some(&d), &HealthConfig::default(), now());
    let f = finding(&h, "stale_dag_succeeds");
    assert!(
        f.message
            .contains("although its DAG compact_documents reports success"),
        "{}",
        f.message
    );
    assert!(!rules(&h).contains(&"dag_failing"));
    // A healthy table with a succeeding DAG: no correlation finding.
    let h = evaluate(&healthy(), Some(&d), &HealthConfig::default(), now());
    assert!(h.findings.is_empty(), "{h:?}");
}

#[test]
fn paused_and_import_error_dags() {
    let mut d = dag("success");
    d.paused = true;
    d.last_success_at = Some(hours_ago(24 * 30));
    let h = evaluate_dag(&d, now());
    assert_eq!(finding(&h, "dag_paused").severity, Severity::Warning);
    assert!(
        !rules(&h).contains(&"dag_no_success"),
        "a paused DAG is reported as paused, not as late"
    );
    let h = evaluate(&incident(), Some(&d), &HealthConfig::default(), now());
    assert!(rules(&h).contains(&"stale_dag_paused"));
    d.import_error = Some("ModuleNotFoundError: No module named 'x'".into());
    assert_eq!(evaluate_dag(&d, now()).status, Severity::Critical);
    let h = evaluate(&incident(), Some(&d), &HealthConfig::default(), now());
    let f = finding(&h, "stale_dag_broken");
    assert!(
        f.message.contains("does not import: ModuleNotFoundError"),
        "{}",
        f.message
    );
}

#[test]
fn no_success_boundary_is_twice_the_interval() {
    let mut d = dag("success");
    d.last_success_at = Some(hours_ago(48));
    assert!(!rules(&evaluate_dag(&d, now())).contains(&"dag_no_success"));
    d.last_success_at = Some(hours_ago(49));
    assert!(rules(&evaluate_dag(&d, now())).contains(&"dag_no_success"));
}

#[test]
fn severity_codes_and_order() {
    assert_eq!(Severity::Ok.exit_code(), 0);
    assert_eq!(Severity::Warning.exit_code(), 1);
    assert_eq!(Severity::Critical.exit_code(), 2);
    assert_eq!(Severity::Unknown.exit_code(), 3);
    assert!(Severity::Critical.rank() > Severity::Unknown.rank());
    assert!(Severity::Unknown.rank() > Severity::Warning.rank());
    assert_eq!(thousands(1234567), "1,234,567");
    assert_eq!(thousands(12), "12");
}

#[test]
fn staleness_is_the_age_of_the_oldest_waiting_small_file() {
    let cfg = HealthConfig::default();
    let mut s = incident();
    // A partial optimize an hour ago: small files written 15 days ago still wait.
    s.last_compaction = Some(hours_ago(1));
    s.writes_since_compaction = 0;
    s.last_write = Some(hours_ago(2));
    s.files_after_compaction = None;
    s.oldest_small_file_at = Some(hours_ago(24 * 15));
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "compaction_stale");
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.message.contains("small files waiting since 15d"),
        "{}",
        f.message
    );
    assert!(f.message.contains("last compaction 1h"), "{}", f.message);
    // The failing DAG is named while the files wait.
    let h = evaluate(&s, Some(&dag("failed")), &cfg, now());
    assert!(rules(&h).contains(&"stale_dag_failing"), "{h:?}");
    // Boundaries follow the waiting age, not the compaction.
    s.oldest_small_file_at = Some(hours_ago(35));
    assert!(!rules(&evaluate(&s, None, &cfg, now())).contains(&"compaction_stale"));
    s.oldest_small_file_at = Some(hours_ago(36));
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "compaction_stale").severity,
        Severity::Warning
    );
    // An old compaction with only fresh small files waiting is not stale.
    s.last_compaction = Some(hours_ago(24 * 30));
    s.oldest_small_file_at = Some(hours_ago(3));
    assert!(!rules(&evaluate(&s, None, &cfg, now())).contains(&"compaction_stale"));
    // Fewer small files than min_small_files: nothing waits that matters.
    s.oldest_small_file_at = Some(hours_ago(24 * 15));
    s.small_files = 11;
    assert!(!rules(&evaluate(&s, None, &cfg, now())).contains(&"compaction_stale"));
}

#[test]
fn equality_deletes_weigh_more_than_position_deletes() {
    let cfg = HealthConfig::default();
    let mut s = healthy(); // 40 data files, 1,000,000 rows
    s.delete_files = 2;
    s.position_delete_files = 2;
    s.position_deletes = 100;
    let f = finding(&evaluate(&s, None, &cfg, now()), "delete_files").clone();
    assert_eq!(f.severity, Severity::Info, "{}", f.message);
    assert!(
        f.message
            .contains("2 position and 0 equality delete files for 40 data files (5%)"),
        "{}",
        f.message
    );
    // The same two files as equality deletes: 2 × 4 / 40 = 20%.
    s.position_delete_files = 0;
    s.position_deletes = 0;
    s.equality_delete_files = 2;
    s.equality_deletes = 100;
    let f = finding(&evaluate(&s, None, &cfg, now()), "delete_files").clone();
    assert_eq!(f.severity, Severity::Warning, "{}", f.message);
    assert!(f.message.contains("weighted ×4"), "{}", f.message);
    // Many deleted rows make few files critical.
    s.equality_delete_files = 0;
    s.equality_deletes = 0;
    s.position_delete_files = 1;
    s.delete_files = 1;
    s.position_deletes = 300_000;
    let f = finding(&evaluate(&s, None, &cfg, now()), "delete_files").clone();
    assert_eq!(f.severity, Severity::Critical, "{}", f.message);
    assert!(f.message.contains("300,000 deleted rows"), "{}", f.message);
    s.position_deletes = 50_000;
    assert_eq!(
        finding(&evaluate(&s, None, &cfg, now()), "delete_files").severity,
        Severity::Warning
    );
}

#[test]
fn manifests_and_metadata_files() {
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.manifests = Some(150);
    s.small_manifests = Some(100);
    s.manifest_bytes = Some(150 << 10);
    s.metadata_files = Some(200);
    let h = evaluate(&s, None, &cfg, now());
    assert!(h.findings.is_empty(), "{h:?}");
    s.small_manifests = Some(101);
    s.metadata_files = Some(201);
    let h = evaluate(&s, None, &cfg, now());
    let m = finding(&h, "manifests");
    assert_eq!(m.severity, Severity::Warning);
    assert!(m.message.contains("optimize_manifests"), "{}", m.message);
    assert!(
        m.message.contains("150 manifests, 101 small"),
        "{}",
        m.message
    );
    let f = finding(&h, "metadata_files");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("201 metadata files"), "{}", f.message);
    // Planning reads every manifest: from critical_manifests of them, CRITICAL.
    s.manifests = Some(999);
    let h = evaluate(&s, None, &cfg, now());
    assert_eq!(finding(&h, "manifests").severity, Severity::Warning);
    s.manifests = Some(1000);
    let h = evaluate(&s, None, &cfg, now());
    let m = finding(&h, "manifests");
    assert_eq!(m.severity, Severity::Critical);
    assert!(
        m.message.contains("CRITICAL from 1,000 manifests"),
        "{}",
        m.message
    );
    // A server without the metadata tables: no verdict.
    s.manifests = None;
    s.small_manifests = None;
    s.metadata_files = None;
    assert!(evaluate(&s, None, &cfg, now()).findings.is_empty());
}

#[test]
fn files_far_over_the_target_are_informational() {
    let cfg = HealthConfig::default();
    let mut s = healthy();
    s.large_files = 3;
    let h = evaluate(&s, None, &cfg, now());
    let f = finding(&h, "large_files");
    assert_eq!(f.severity, Severity::Info);
    assert_eq!(h.score, 100);
    assert!(
        f.message.contains("3 of 40 data files are over 1.8"),
        "{}",
        f.message
    );
    assert!(f.message.contains("230 MB"), "{}", f.message);
}

/// Snapshot bloat weighs what the snapshots past retention cost before it warns.
mod noise {
    use super::*;

    /// `n` snapshots a day apart, the newest `newest_h` hours ago, with `files(i)` data
    /// files after snapshot `i` (oldest first).
    fn history(n: usize, newest_h: i64, files: impl Fn(usize) -> u64) -> TableStats {
        let trend: Vec<_> = (0..n)
            .map(|i| (hours_ago(newest_h + 24 * (n - 1 - i) as i64), files(i)))
            .collect();
        TableStats {
            target_file_size: 128 * MB,
            data_files: files(n - 1),
            small_files: files(n - 1),
            total_bytes: files(n - 1) * 4096,
            records: 100,
            snapshots: n as u64,
            oldest_snapshot: trend.first().map(|t| t.0),
            newest_snapshot: trend.last().map(|t| t.0),
            last_write: trend.last().map(|t| t.0),
            trend,
            ..Default::default()
        }
    }

    #[test]
    fn a_small_table_that_never_expired_is_info_not_a_warning() {
        // Three appends, the last 30 days ago: two could be expired, nothing is pinned.
        let s = history(3, 24 * 30, |i| i as u64 + 1);
        let h = evaluate(&s, None, &HealthConfig::default(), now());
        let f = finding(&h, "snapshot_bloat");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.penalty, 0);
        assert_eq!(h.status, Severity::Ok);
        assert_eq!(h.score, 100);
        assert!(
            f.message
                .contains("2 could be expired, pinning 0 data files")
                && f.message
                    .contains("worth an action from 100 snapshots or 1,000 files"),
            "{}",
            f.message
        );
    }

    #[test]
    fn many_expirable_snapshots_are_a_warning() {
        let cfg = HealthConfig::default();
        // A daily append for 120 days: 112 snapshots past the 7-day retention.
        let s = history(120, 1, |i| i as u64 + 1);
        let c = retention_cost(&s, &cfg, now()).unwrap();
        assert_eq!(c.pinned_files, 0);
        assert!((105..=115).contains(&c.expirable), "{c:?}");
        let f = evaluate(&s, None, &cfg, now());
        assert_eq!(finding(&f, "snapshot_bloat").severity, Severity::Warning);
        let mut lenient = cfg.clone();
        lenient.expirable_snapshots_warn = 200;
        let f = evaluate(&s, None, &lenient, now());
        assert_eq!(finding(&f, "snapshot_bloat").severity, Severity::Info);
    }

    #[test]
    fn files_pinned_by_old_snapshots_are_a_warning_however_few_snapshots() {
        let cfg = HealthConfig::default();
        // 2,000 small files compacted to 10, 20 days ago; a few appends since.
        let files = |i: usize| match i {
            0 => 2000,
            1 => 10,
            i => 10 + i as u64,
        };
        let s = history(5, 24 * 16, files);
        let c = retention_cost(&s, &cfg, now()).unwrap();
        assert_eq!(c.expirable, 4);
        assert_eq!(c.pinned_files, 1990);
        let h = evaluate(&s, None, &cfg, now());
        let f = finding(&h, "snapshot_bloat");
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(f.penalty, 10);
        assert!(
            f.message.contains("pinning 1,990 data files"),
            "{}",
            f.message
        );
        // A compaction inside the retention pins nothing yet that expiring would free
        // beyond what the newest expirable snapshot held.
        let s = history(3, 1, |i| if i == 0 { 2000 } else { 10 });
        let c = retention_cost(&s, &cfg, now()).unwrap();
        assert_eq!(c.expirable, 0);
    }

    #[test]
    fn too_many_snapshots_still_warn_and_with_retention_are_critical() {
        let cfg = HealthConfig {
            max_snapshots: 10,
            ..HealthConfig::default()
        };
        let s = history(12, 1, |i| i as u64 + 1);
        assert_eq!(
            finding(&evaluate(&s, None, &cfg, now()), "snapshot_bloat").severity,
            Severity::Critical
        );
        let recent = TableStats {
            oldest_snapshot: Some(hours_ago(5)),
            ..history(12, 1, |i| i as u64 + 1)
        };
        assert_eq!(
            finding(&evaluate(&recent, None, &cfg, now()), "snapshot_bloat").severity,
            Severity::Warning
        );
    }

    #[test]
    fn summaries_without_totals_leave_the_cost_unknown_and_warn() {
        let mut s = history(3, 24 * 30, |i| i as u64 + 1);
        s.trend.clear();
        assert_eq!(retention_cost(&s, &HealthConfig::default(), now()), None);
        let h = evaluate(&s, None, &HealthConfig::default(), now());
        assert_eq!(finding(&h, "snapshot_bloat").severity, Severity::Warning);
    }

    /// `s` as the health statement returns it with `trend_limit = keep`: the newest `keep`
    /// totals one by one, the older ones summarised the way the statement sums them.
    fn bounded(s: &TableStats, keep: usize) -> TableStats {
        let split = s.trend.len().saturating_sub(keep);
        let (old, newest) = s.trend.split_at(split);
        let trend_tail = old
            .last()
            .map(|&(t, files)| crate::lakehouse::model::TrendTail {
                snapshots: old.len() as u64,
                newest: t,
                last_files: files,
                drops: old.windows(2).map(|w| w[0].1.saturating_sub(w[1].1)).sum(),
            });
        TableStats {
            trend: newest.to_vec(),
            trend_tail,
            ..s.clone()
        }
    }

    #[test]
    fn a_bounded_trend_weighs_the_snapshots_past_retention_as_the_whole_one() {
        // Growth, compactions and quiet days in an irregular mix, 300 daily snapshots.
        let files =
            |i: usize| ((i * 37) % 11) as u64 * 40 + if i.is_multiple_of(29) { 1 } else { 500 };
        let full = history(300, 1, files);
        for retention_days in [0, 1, 6, 7, 8, 30, 100, 250, 299, 400] {
            let cfg = HealthConfig {
                snapshot_retention: std::time::Duration::from_secs(retention_days * 86_400 + 1800),
                ..HealthConfig::default()
            };
            let whole = retention_cost(&full, &cfg, now());
            for keep in [1, 2, 5, 50, 299, 300, 1000] {
                let part = bounded(&full, keep);
                let got = retention_cost(&part, &cfg, now());
                let cutoff = now() - chrono::Duration::from_std(cfg.snapshot_retention).unwrap();
                let in_tail = part.trend_tail.is_some_and(|t| t.newest >= cutoff)
                    && full.oldest_snapshot.is_some_and(|o| o < cutoff);
                // With the cutoff among the summarised snapshots, which of them are past it
                // is not known.
                let want = if in_tail { None } else { whole };
                assert_eq!(got, want, "retention {retention_days}d, keep {keep}");
            }
        }
    }

    #[test]
    fn a_million_snapshots_read_bounded_keep_their_critical_verdict() {
        let cfg = HealthConfig::default();
        // A million snapshots, the newest 1,000 read one by one: past retention and too
        // many, whatever the tail's cost.
        let mut s = history(1000, 1, |i| i as u64 + 1);
        s.snapshots = 1_000_000;
        s.oldest_snapshot = Some(hours_ago(24 * 400));
        s.trend_tail = Some(crate::lakehouse::model::TrendTail {
            snapshots: 999_000,
            newest: hours_ago(24 * 1000),
            last_files: 1,
            drops: 0,
        });
        let c = retention_cost(&s, &cfg, now()).unwrap();
        assert!(c.expirable > 999_000, "{c:?}");
        let h = evaluate(&s, None, &cfg, now());
        assert_eq!(finding(&h, "snapshot_bloat").severity, Severity::Critical);
        // The cutoff among the summarised snapshots: the cost is unknown, the verdict stays.
        s.trend_tail.as_mut().unwrap().newest = hours_ago(2);
        assert_eq!(retention_cost(&s, &cfg, now()), None);
        let h = evaluate(&s, None, &cfg, now());
        assert_eq!(finding(&h, "snapshot_bloat").severity, Severity::Critical);
    }
}

#[test]
fn one_small_file_a_partition_leaves_a_compaction_nothing_to_merge() {
    // What an optimize of the incident leaves: each of its 360 partitions one small file
    // (the oldest never rewritten, alone in its partition).
    let cfg = HealthConfig::default();
    let mut s = incident();
    s.partitions = 360;
    s.data_files = 360;
    s.small_files = 360;
    s.small_file_partitions = 0;
    s.total_bytes = 360 * 6 * 1024;
    s.max_partition_small_files = Some(1);
    s.oldest_small_file_at = Some(hours_ago(24 * 15));
    s.last_compaction = Some(hours_ago(1));
    s.files_after_compaction = Some(360);
    s.writes_since_compaction = 0;
    let dag = dag("success");
    let h = evaluate(&s, Some(&dag), &cfg, now());
    let f = finding(&h, "small_files");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains("a compaction has nothing to merge"),
        "{}",
        f.message
    );
    assert!(!rules(&h).contains(&"compaction_stale"), "{h:?}");
    assert!(!rules(&h).contains(&"stale_dag_succeeds"), "{h:?}");
    // Two small files in one partition: that partition is worth a compaction again.
    s.max_partition_small_files = Some(2);
    let h = evaluate(&s, Some(&dag), &cfg, now());
    assert_eq!(finding(&h, "small_files").severity, Severity::Warning);
    assert!(rules(&h).contains(&"compaction_stale"), "{h:?}");
}

#[test]
fn ids_are_snake_case_and_unique() {
    let mut seen = std::collections::BTreeSet::new();
    for r in Rule::ALL {
        let id = r.as_str();
        assert!(
            id.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{id}"
        );
        assert!(seen.insert(id), "{id} twice");
        assert_eq!(serde_json::to_value(r).unwrap(), id);
    }
    assert!(Rule::StaleDagFailing.is_dag_correlation());
    assert!(!Rule::DagFailing.is_dag_correlation());
}

#[test]
fn a_delta_tables_versions_are_not_snapshots_to_expire_its_old_optimize_is_a_vacuum_to_run() {
    let cfg = HealthConfig::default();
    let day = chrono::Duration::days(1);
    let mut s = TableStats {
        format: crate::lakehouse::delta::TableFormat::Delta,
        data_files: 2,
        snapshots: 49,
        oldest_snapshot: Some(now() - day * 21),
        newest_snapshot: Some(now() - day),
        ..Default::default()
    };
    // 49 versions over three weeks, never optimized: Delta's log keeps them itself.
    let h = evaluate(&s, None, &cfg, now());
    assert!(
        h.findings.iter().all(|f| f.rule != Rule::SnapshotBloat),
        "{h:?}"
    );
    // An OPTIMIZE 12 days ago: what it replaced is past the retention.
    s.last_compaction = Some(now() - day * 12);
    let h = evaluate(&s, None, &cfg, now());
    let f = h
        .findings
        .iter()
        .find(|f| f.rule == Rule::SnapshotBloat)
        .expect("a vacuum to run");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.contains(
            "the OPTIMIZE of 12d ago replaced are past the 7d retention: vacuum removes them"
        ) && !f.message.contains("expire_snapshots"),
        "{}",
        f.message
    );
    // Within the retention: nothing to say.
    s.last_compaction = Some(now() - day * 3);
    let h = evaluate(&s, None, &cfg, now());
    assert!(h.findings.iter().all(|f| f.rule != Rule::SnapshotBloat));
}

#[test]
fn a_delta_tables_deletion_vectors_since_its_optimize_are_an_info() {
    let cfg = HealthConfig::default();
    let mut s = TableStats {
        format: crate::lakehouse::delta::TableFormat::Delta,
        data_files: 12,
        deletion_vector_removals: Some(2),
        ..Default::default()
    };
    let h = evaluate(&s, None, &cfg, now());
    let f = h
        .findings
        .iter()
        .find(|f| f.rule == Rule::DeleteFiles)
        .expect("deletion vectors");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.starts_with(
            "deletion vectors on: 2 DELETE/MERGE/UPDATE commits since the last OPTIMIZE"
        ),
        "{}",
        f.message
    );
    s.deletion_vector_removals = Some(0);
    let h = evaluate(&s, None, &cfg, now());
    assert!(h.findings.iter().all(|f| f.rule != Rule::DeleteFiles));
}
