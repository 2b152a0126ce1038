use super::*;

const MB: u64 = 1 << 20;

#[test]
fn a_partitions_totals_prove_its_small_files_never_more() {
    let line = 96 * MB;
    // 30 files of 1 MB: all small.
    assert_eq!(small_at_least(30, 30 * MB, line), 30);
    // 3 files holding 200 MB: at most two hold the line, so one at least is small.
    assert_eq!(small_at_least(3, 200 * MB, line), 1);
    // 2 files of 500 MB together: none proved.
    assert_eq!(small_at_least(2, 1000 * MB, line), 0);
}

#[test]
fn a_delta_tables_stats_come_from_its_partitions_and_history() {
    let cfg = ScanParams::default();
    let h = History {
        commits: 49,
        version: Some(48),
        writes_since: 28,
        ..History::default()
    };
    // Four region partitions of small files, one empty (a partition the log still lists
    // with no live file).
    let parts = [(12, 12 * MB), (11, 11 * MB), (0, 0), (22, 22 * MB)];
    let st = stats(&parts, &h, true, &cfg);
    assert_eq!(
        (
            st.data_files,
            st.small_files,
            st.partitions,
            st.max_partition_small_files
        ),
        (45, 45, 3, Some(22))
    );
    assert_eq!(
        (st.snapshots, st.snapshot_id, st.writes_since_compaction),
        (49, Some(48), 28)
    );
    assert!(!st.files_unread);
    // Unpartitioned: one row, no partition counted.
    let st = stats(&[(40, 40 * MB)], &h, false, &cfg);
    assert_eq!((st.data_files, st.small_files, st.partitions), (40, 40, 0));
}

#[test]
fn partition_values_are_read_from_the_rows_json() {
    assert_eq!(
        partition_values(r#"{"region":"emea","day":null,"n":3}"#),
        vec![
            ("day".to_string(), None),
            ("n".to_string(), Some("3".to_string())),
            ("region".to_string(), Some("emea".to_string())),
        ]
    );
    assert!(partition_values("not json").is_empty());
}

#[test]
fn a_catalogs_connector_names_its_format() {
    assert_eq!(
        TableFormat::of_connector("delta_lake"),
        Some(TableFormat::Delta)
    );
    assert_eq!(
        TableFormat::of_connector("iceberg"),
        Some(TableFormat::Iceberg)
    );
    assert_eq!(TableFormat::of_connector("hive"), None);
}

#[test]
fn the_survey_reads_each_tables_partitions_and_history_once() {
    let tables = [
        TableRef::new("delta", "sales", "orders"),
        TableRef::new("delta", "web", "clicks"),
    ];
    let sql = survey_sql(&tables);
    assert_eq!(sql.matches("$partitions\"").count(), 2, "{sql}");
    assert_eq!(sql.matches("$history\"").count(), 2, "{sql}");
    assert_eq!(
        sql.matches("$properties\"").count(),
        0,
        "read after, where it matters"
    );
    let dv = deletion_vectors_sql(&tables[..1]);
    assert!(
        dv.contains("delta.enableDeletionVectors") && dv.contains("orders$properties"),
        "{dv}"
    );
    assert!(sql.contains("'OPTIMIZE'"));
}

#[test]
fn deletion_vectors_are_told_by_the_property_and_their_commits_by_the_history() {
    let cfg = ScanParams::default();
    let mut h = History {
        commits: 17,
        removals_since: 1,
        ..History::default()
    };
    // Off: nothing to say, whatever the history.
    let st = stats(&[(12, 12 * MB)], &h, true, &cfg);
    assert_eq!(st.deletion_vector_removals, None);
    h.deletion_vectors = true;
    let st = stats(&[(12, 12 * MB)], &h, true, &cfg);
    assert_eq!(st.deletion_vector_removals, Some(1));
    assert_eq!(st.format, TableFormat::Delta);
}

#[test]
fn a_recount_sums_the_partitions_any_target_names_in_full_or_in_part() {
    let p = |region: &str, day: &str, files: u64, small: u64| PartitionStats {
        values: vec![
            ("region".into(), Some(region.into())),
            ("day".into(), Some(day.into())),
        ],
        data_files: files,
        small_files: small,
        total_bytes: 0,
        records: 0,
        min_file: 0,
        max_file: 0,
        delete_files: 0,
        oldest_small_file_at: None,
        spec_id: None,
    };
    let parts = vec![
        p("emea", "2026-12-01", 1, 1),
        p("emea", "2026-12-02", 5, 5),
        p("amer", "2026-12-01", 2, 0),
    ];
    let emea = vec![("region".to_string(), Some("emea".to_string()))];
    assert_eq!(recount(&parts, std::slice::from_ref(&emea)), (6, 6));
    let one = parts[2].values.clone();
    assert_eq!(recount(&parts, &[emea, one]), (8, 6));
    assert_eq!(recount(&parts, &[]), (0, 0));
}
