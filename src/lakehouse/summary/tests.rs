use std::sync::Arc;

use super::*;
use crate::health::{HealthConfig, Severity, evaluate};
use crate::lakehouse::model::TableStats;
use crate::lakehouse::scan::ScanParams;
use crate::trino::{Column, TrinoType};

const MB: u64 = 1 << 20;
const TARGET: u64 = 128 * MB;

fn totals(files: u64, bytes: u64) -> Totals {
    Totals {
        snapshots: 3,
        data_files: Some(files),
        files_size: Some(bytes),
        delete_files: Some(0),
        ..Default::default()
    }
}

/// The stats the per-file read would find for `sizes` in one unpartitioned table.
fn stats_of(sizes: &[u64], cfg: &HealthConfig) -> TableStats {
    let line = cfg.small_threshold(TARGET);
    TableStats {
        target_file_size: TARGET,
        data_files: sizes.len() as u64,
        small_files: sizes.iter().filter(|&&s| s < line).count() as u64,
        total_bytes: sizes.iter().sum(),
        snapshots: 3,
        ..Default::default()
    }
}

#[test]
fn one_branch_per_table_each_reading_snapshots_once() {
    let ts = [
        TableRef::new("iceberg", "a", "x"),
        TableRef::new("iceberg", "b", "we\"ird"),
    ];
    let sql = totals_sql(&ts);
    assert_eq!(sql.matches("UNION ALL").count(), 1);
    assert_eq!(sql.matches("FROM ").count(), 2, "{sql}");
    assert_eq!(sql.matches("$snapshots").count(), 2);
    for other in ["$files", "$entries", "$manifests", "$partitions", "WITH"] {
        assert!(!sql.contains(other), "{other} in {sql}");
    }
    assert!(
        sql.contains(r#""iceberg"."b"."we""ird$snapshots""#),
        "{sql}"
    );
    assert!(sql.starts_with("SELECT 0 AS i"));
    for (k, _) in KEYS {
        assert!(sql.contains(&format!("'{k}'")), "{k}");
    }
}

#[test]
fn rows_come_back_by_index_and_a_missing_key_is_unknown() {
    let cols = Arc::new(vec![
        col("i", "integer"),
        col("snapshots", "bigint"),
        col("committed_at", "double"),
        col("data_files", "bigint"),
        col("files_size", "bigint"),
    ]);
    let row = |i: i64, n: i64, files: Option<i64>| Row {
        columns: cols.clone(),
        values: vec![
            Value::Int(i),
            Value::Int(n),
            Value::Double(1_700_000_000.0),
            files.map(Value::Int).unwrap_or(Value::Null),
            Value::Int(4096),
        ],
    };
    let got = parse_totals(&[row(1, 2, None), row(0, 5, Some(40))], 2).unwrap();
    assert_eq!(got[0].snapshots, 5);
    assert_eq!(got[0].data_files, Some(40));
    assert_eq!(got[0].files_size, Some(4096));
    assert_eq!(got[0].committed_at.unwrap().timestamp(), 1_700_000_000);
    assert_eq!(got[1].data_files, None);
    assert!(parse_totals(&[row(0, 1, Some(1))], 2).is_err());
}

#[test]
fn a_few_huge_files_beside_many_small_ones_do_not_look_healthy_on_the_average() {
    let cfg = HealthConfig::default();
    // 10 files of 16 GB and 990 of 1 MB: the average (165 MB) is above the 128 MB target.
    let mut sizes = vec![16 << 30; 10];
    sizes.extend(std::iter::repeat_n(MB, 990));
    let t = totals(sizes.len() as u64, sizes.iter().sum());
    assert!(t.files_size.unwrap() / t.data_files.unwrap() > TARGET);
    // The totals cannot rule the small files out: the per-file read is needed.
    let read = file_read(&t, TARGET, &cfg.scan());
    let FileRead::Needed(Some(b)) = read else {
        panic!("{read:?}")
    };
    assert_eq!(b.at_most, 1000);
    // And the bounds hold what the per-file read finds: 990 small files.
    let found = stats_of(&sizes, &cfg);
    assert_eq!(found.small_files, 990);
    assert!(b.at_least <= found.small_files && found.small_files <= b.at_most);
    // What that read finds is a finding (an average would have said nothing).
    let h = evaluate(&found, None, &cfg, chrono::Utc::now());
    assert!(
        h.findings
            .iter()
            .any(|f| f.rule == crate::health::Rule::SmallFiles)
    );
}

#[test]
fn fewer_files_than_matter_need_no_file_read() {
    let cfg = HealthConfig::default();
    // 11 tiny files: fewer than `min_small_files` (12), whatever their sizes.
    let tiny = vec![1024; 11];
    let t = totals(11, tiny.iter().sum());
    assert_eq!(file_read(&t, TARGET, &cfg.scan()), FileRead::NotNeeded);
    let h = evaluate(&stats_of(&tiny, &cfg), None, &cfg, chrono::Utc::now());
    assert_eq!(h.status, Severity::Ok, "{h:?}");
    // 12 are enough to matter: the read is needed, and the totals prove all 12 small.
    let t = totals(12, 12 * 1024);
    assert_eq!(
        file_read(&t, TARGET, &cfg.scan()),
        FileRead::Needed(Some(SmallFileBounds {
            at_least: 12,
            at_most: 12,
            excess_at_least: 11,
        }))
    );
    // An empty table has nothing to read either.
    assert_eq!(
        file_read(&totals(0, 0), TARGET, &cfg.scan()),
        FileRead::NotNeeded
    );
    assert_eq!(
        file_read(&Totals::default(), TARGET, &cfg.scan()),
        FileRead::NotNeeded
    );
}

#[test]
fn many_small_files_are_proved_from_the_totals_and_rank_first() {
    let cfg = HealthConfig::default();
    // 2,000 files of 1 MB: at most 20 of them can be 96 MB or more.
    let many = small_file_bounds(&totals(2000, 2000 * MB), TARGET, &cfg.scan()).unwrap();
    assert_eq!(many.at_least, 2000 - 20);
    // What a reader pays beyond 16 files of 128 MB (1,984), at most the small files
    // proved: past the CRITICAL line either way.
    assert_eq!(many.excess_at_least, 2000 - 20);
    assert!(many.excess_at_least >= cfg.critical_small_files);
    // Files at the target prove nothing small, and rank below.
    let fine = small_file_bounds(&totals(2000, 2000 * TARGET), TARGET, &cfg.scan()).unwrap();
    assert_eq!((fine.at_least, fine.excess_at_least), (0, 0));
    assert!(many.excess_at_least > fine.excess_at_least);
}

#[test]
fn delete_bytes_in_the_total_keep_the_bounds_bounds() {
    let cfg = HealthConfig::default();
    // 100 data files of 1 MB and 50 delete files of 200 MB in `total-files-size`: the
    // data bytes are unknown, so fewer small files are proved, never more than there are.
    let mut t = totals(100, 100 * MB + 50 * 200 * MB);
    t.delete_files = Some(50);
    let b = small_file_bounds(&t, TARGET, &cfg.scan()).unwrap();
    assert_eq!((b.at_least, b.at_most, b.excess_at_least), (0, 100, 0));
    assert_eq!(
        file_read(&t, TARGET, &cfg.scan()),
        FileRead::Needed(Some(b))
    );
    // 5 delete files of 10 MB hide only some of 100 small files: 95 are still proved.
    let mut t = totals(100, 100 * MB + 50 * MB);
    t.delete_files = Some(5);
    let b = small_file_bounds(&t, TARGET, &cfg.scan()).unwrap();
    assert_eq!(b.at_least, 100 - 1);
}

#[test]
fn a_summary_without_totals_proves_nothing() {
    let cfg = HealthConfig::default();
    let t = Totals {
        snapshots: 4,
        ..Default::default()
    };
    assert_eq!(small_file_bounds(&t, TARGET, &cfg.scan()), None);
    assert_eq!(file_read(&t, TARGET, &cfg.scan()), FileRead::Needed(None));
}

#[test]
fn a_survey_reads_each_metadata_table_once_per_table_and_no_file() {
    let ts = [
        TableRef::new("iceberg", "a", "x"),
        TableRef::new("iceberg", "b", "we\"ird"),
    ];
    // A one-table read: every metadata-only table in one statement.
    let shape = SurveyShape {
        metadata_log: true,
        table_meta: true,
        summaries: "partition_summaries",
    };
    let sql = survey_sql(&ts, &ScanParams::default(), shape);
    assert_eq!(sql.matches("UNION ALL").count(), 1);
    for meta in [
        "$snapshots",
        "$manifests",
        "$metadata_log_entries",
        "$properties",
    ] {
        assert_eq!(sql.matches(meta).count(), 2, "{meta} in {sql}");
    }
    for other in ["$files", "$entries", "$partitions", "WITH", " OVER "] {
        assert!(!sql.contains(other), "{other} in {sql}");
    }
    assert!(sql.starts_with("SELECT 0 AS i"));
    // A fleet's survey: the snapshots and the properties (the current snapshot, the
    // target), on a server without the metadata log either.
    let fleet = survey_sql(
        &ts,
        &ScanParams::default(),
        SurveyShape {
            metadata_log: false,
            table_meta: false,
            summaries: "partitions",
        },
    );
    assert_eq!(fleet.matches("$snapshots").count(), 2, "{fleet}");
    assert_eq!(fleet.matches("$properties").count(), 2, "{fleet}");
    for other in ["$manifests", "$metadata_log_entries", "$files", "$entries"] {
        assert!(!fleet.contains(other), "{other} in {fleet}");
    }
    // What the table's file read needs of it reads alone, ten a statement.
    let meta = file_meta_sql(
        &ts,
        &ScanParams::default(),
        "partitions",
        |_| true,
        |_| None,
    );
    assert_eq!(meta.matches("$manifests").count(), 2, "{meta}");
    assert_eq!(meta.matches("$properties").count(), 2, "{meta}");
    assert!(meta.contains("cardinality(partitions)") && !meta.contains("$snapshots"));
    // The manifests only where the layout or a finding needs them.
    let meta = file_meta_sql(
        &ts,
        &ScanParams::default(),
        "partitions",
        |t| t.schema == "a",
        |_| None,
    );
    assert_eq!(meta.matches("$manifests").count(), 1, "{meta}");
    assert_eq!(meta.matches("$properties").count(), 2, "{meta}");
    // A target the survey read is not read again: it travels as a literal, and every
    // branch has the same columns.
    let known = Props {
        target: Some(64 * MB),
        current: Some(7),
    };
    for manifests in [true, false] {
        let meta = file_meta_sql(
            &ts,
            &ScanParams::default(),
            "partitions",
            |_| manifests,
            |t| (t.schema == "a").then_some(known),
        );
        assert_eq!(meta.matches("$properties").count(), 1, "{meta}");
        assert!(
            meta.contains(&format!("BIGINT '{}' AS target_property", 64 * MB)),
            "{meta}"
        );
        let columns: Vec<usize> = meta
            .split("\nUNION ALL\n")
            .map(|b| {
                // The select list's columns: its commas outside parentheses.
                let list = b.split(" FROM ").next().unwrap();
                let mut depth = 0i32;
                list.chars()
                    .filter(|c| {
                        depth += i32::from(*c == '(') - i32::from(*c == ')');
                        *c == ',' && depth == 0
                    })
                    .count()
            })
            .collect();
        assert!(
            columns.iter().all(|&c| c == columns[0]),
            "{columns:?}: {meta}"
        );
    }
}

#[test]
fn a_table_with_delete_files_or_a_file_far_over_the_target_is_read_however_few_its_files() {
    let cfg = HealthConfig::default();
    let few = totals(5, 5 * MB);
    assert_eq!(file_read(&few, TARGET, &cfg.scan()), FileRead::NotNeeded);
    let deletes = Totals {
        delete_files: Some(2),
        ..few
    };
    assert!(matches!(
        file_read(&deletes, TARGET, &cfg.scan()),
        FileRead::Needed(_)
    ));
    // Five files averaging 2 × the target: one at least is far over it.
    let large = totals(5, 10 * TARGET);
    assert!(matches!(
        file_read(&large, TARGET, &cfg.scan()),
        FileRead::Needed(_)
    ));
    let unknown = Totals {
        delete_files: None,
        ..few
    };
    assert!(matches!(
        file_read(&unknown, TARGET, &cfg.scan()),
        FileRead::Needed(_)
    ));
}

#[test]
fn a_fleet_survey_carries_one_array_and_no_lambda() {
    let ts = [TableRef::new("iceberg", "a", "x")];
    let sql = survey_sql(
        &ts,
        &ScanParams::default(),
        SurveyShape {
            metadata_log: false,
            table_meta: false,
            summaries: "partition_summaries",
        },
    );
    assert_eq!(sql.matches("array_agg").count(), 1, "{sql}");
    assert!(!sql.contains("->") && !sql.contains("reduce("), "{sql}");
    // A history longer than the window is read again with its facts computed on the
    // server, lambdas and all.
    let long = history_sql(&ts, &ScanParams::default());
    assert_eq!(long.matches("$snapshots").count(), 1, "{long}");
    assert!(
        long.contains("reduce(") && long.contains("tail_drops"),
        "{long}"
    );
}

/// The snapshot facts from a history newest first, as the server's aggregates computed
/// them: the newest write, compaction (a `replace` that deleted files) and the files it
/// left, the writes since it, and the trend with the older snapshots as one tail.
#[test]
fn snapshot_facts_from_a_history_are_the_aggregates_facts() {
    use chrono::TimeZone;
    let at = |d: u32| Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap();
    let snap = |id: i64, d: u32, total: Option<u64>, replace: bool, deleted: Option<u64>| Snap {
        id,
        at: at(d),
        total,
        replace,
        deleted,
        parent: None,
        changed_partitions: None,
        ..Default::default()
    };
    // Newest first: three writes after a compaction, a replace that deleted nothing
    // (not a compaction), a write without totals, and older writes with a drop.
    let history = [
        snap(9, 20, Some(40), false, None),
        snap(8, 19, Some(30), false, None),
        snap(7, 18, Some(20), false, None),
        snap(6, 17, Some(10), true, Some(50)),
        snap(5, 16, Some(60), true, Some(0)),
        snap(4, 15, None, false, None),
        snap(3, 14, Some(60), false, None),
        snap(2, 13, Some(45), false, None),
        snap(1, 12, Some(50), false, None),
    ];
    let mut st = TableStats::default();
    snapshot_facts(&history, 4, &mut st);
    assert_eq!(st.last_write, Some(at(20)));
    assert_eq!(st.last_compaction, Some(at(17)));
    assert_eq!(st.files_after_compaction, Some(10));
    assert_eq!(st.writes_since_compaction, 3);
    // The newest four with totals, oldest first; the four older ones with totals as a
    // tail: its newest (60 on the 16th), and the files dropped going forward in time
    // among them (50 on the 12th to 45 on the 13th: 5; 45 → 60 → 60: none).
    assert_eq!(
        st.trend,
        vec![(at(17), 10), (at(18), 20), (at(19), 30), (at(20), 40)]
    );
    assert_eq!(
        st.trend_tail,
        Some(TrendTail {
            snapshots: 4,
            newest: at(16),
            last_files: 60,
            drops: 5,
        })
    );
    // No compaction at all: nothing since one, no files after one.
    let mut st = TableStats::default();
    snapshot_facts(&history[6..], 10, &mut st);
    assert_eq!(
        (
            st.last_compaction,
            st.files_after_compaction,
            st.writes_since_compaction
        ),
        (None, None, 0)
    );
    assert_eq!(st.trend.len(), 3);
    assert_eq!(st.trend_tail, None);
}

/// A table's manifests are read with its target only when its layout is unknown or its
/// manifests could be enough for a finding: every manifest holds a live file or the files
/// its snapshot removed, so a table of fewer files than the limit cannot hold more.
#[test]
fn manifests_are_read_where_the_layout_or_a_finding_needs_them() {
    let t = |files: u64, deletes: u64| Totals {
        snapshots: 3,
        data_files: Some(files),
        delete_files: Some(deletes),
        ..Default::default()
    };
    let max = ScanParams::default().max_small_manifests;
    assert_eq!(manifests_at_most(&t(40, 2), Some(5)), Some(47));
    assert!(!needs_manifests(&t(40, 2), Some(5), true, max));
    // Its layout unknown: the manifests tell it.
    assert!(needs_manifests(&t(40, 2), Some(5), false, max));
    // More files than the limit, or a newest snapshot that removed many.
    assert!(needs_manifests(&t(90, 5), Some(6), true, max));
    assert!(needs_manifests(&t(5, 0), Some(2000), true, max));
    // Summaries that do not tell.
    let untold = Totals {
        delete_files: None,
        ..t(5, 0)
    };
    assert!(needs_manifests(&untold, Some(0), true, max));
    assert!(needs_manifests(&t(5, 0), None, true, max));
}

/// A survey row as the server sends it: the count, the oldest, and the newest snapshots
/// as rows (id, commit time, operation, parent, summary), newest first. The newest
/// summary gives the totals, each snapshot its own counts, the history the rest.
#[test]
fn a_survey_row_gives_the_totals_and_the_history_of_its_snapshots() {
    use chrono::TimeZone;
    let cols = Arc::new(vec![
        col("i", "integer"),
        col("snapshots", "bigint"),
        col("oldest_snapshot", "double"),
        col(
            "history",
            "array(row(snapshot_id bigint, committed_at timestamp(3) with time zone, operation varchar, parent_id bigint, summary map(varchar, varchar)))",
        ),
    ]);
    let at = |d: u32| Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap();
    let text = |s: &str| Value::Text(s.into());
    let snap = |id: i64, d: u32, op: &str, parent: Option<i64>, summary: &[(&str, &str)]| {
        Value::Row(vec![
            (Some("snapshot_id".into()), Value::Int(id)),
            (
                Some("committed_at".into()),
                Value::TimestampTz(at(d), "UTC".into()),
            ),
            (Some("operation".into()), text(op)),
            (
                Some("parent_id".into()),
                parent.map(Value::Int).unwrap_or(Value::Null),
            ),
            (
                Some("summary".into()),
                Value::Map(summary.iter().map(|(k, v)| (text(k), text(v))).collect()),
            ),
        ])
    };
    let history = Value::Array(vec![
        snap(
            3,
            20,
            "append",
            Some(2),
            &[
                ("total-data-files", "30"),
                ("total-files-size", "3000"),
                ("total-delete-files", "0"),
                ("total-records", "300"),
                ("changed-partition-count", "2"),
            ],
        ),
        snap(
            2,
            10,
            "replace",
            Some(1),
            &[("total-data-files", "10"), ("deleted-data-files", "40")],
        ),
        snap(1, 5, "append", None, &[("total-data-files", "50")]),
    ]);
    let row = Row {
        columns: cols,
        values: vec![
            Value::Int(0),
            Value::Int(3),
            Value::Double(at(5).timestamp() as f64),
            history,
        ],
    };
    let got = parse_survey(&[row], 1, false, &ScanParams::default()).unwrap();
    let s = &got[0];
    assert_eq!(
        (
            s.totals.snapshot_id,
            s.totals.committed_at,
            s.totals.oldest_snapshot
        ),
        (Some(3), Some(at(20)), Some(at(5)))
    );
    assert_eq!(
        (s.totals.data_files, s.totals.files_size, s.totals.records),
        (Some(30), Some(3000), Some(300))
    );
    assert_eq!(s.totals.last_replace, Some(at(10)));
    assert_eq!(s.stats.last_compaction, Some(at(10)));
    assert_eq!(s.stats.files_after_compaction, Some(10));
    assert_eq!(s.stats.writes_since_compaction, 1);
    assert_eq!(s.stats.trend, vec![(at(5), 50), (at(10), 10), (at(20), 30)]);
    assert!(!s.long_history && s.partitioned_by_history());
    assert_eq!(s.history[2].parent, None);
    assert_eq!(s.removed_by_newest, Some(0));
}

/// Snapshots as `$snapshots` has them: id, day of November 2026, operation, parent,
/// summary.
type SnapSpec = (
    i64,
    u32,
    &'static str,
    Option<i64>,
    Vec<(&'static str, &'static str)>,
);

fn snapshot_fields(s: &SnapSpec) -> Vec<(Option<String>, Value)> {
    use chrono::TimeZone;
    let (id, d, op, parent, summary) = s;
    let text = |s: &str| Value::Text(s.into());
    vec![
        (Some("snapshot_id".into()), Value::Int(*id)),
        (
            Some("committed_at".into()),
            Value::TimestampTz(
                Utc.with_ymd_and_hms(2026, 11, *d, 0, 0, 0).unwrap(),
                "UTC".into(),
            ),
        ),
        (Some("operation".into()), text(op)),
        (
            Some("parent_id".into()),
            parent.map(Value::Int).unwrap_or(Value::Null),
        ),
        (
            Some("summary".into()),
            Value::Map(summary.iter().map(|(k, v)| (text(k), text(v))).collect()),
        ),
    ]
}

fn col(n: &str, t: &str) -> Column {
    Column {
        name: n.into(),
        type_text: t.into(),
        ty: TrinoType::parse(t).unwrap(),
    }
}

/// The rows of [`survey_rows_sql`] for tables of `snaps` (by index), in the order given.
fn plain_rows(tables: &[Vec<SnapSpec>]) -> Vec<Row> {
    let cols = Arc::new(vec![
        col("i", "integer"),
        col("snapshot_id", "bigint"),
        col("committed_at", "timestamp(3) with time zone"),
        col("operation", "varchar"),
        col("parent_id", "bigint"),
        col("summary", "map(varchar, varchar)"),
    ]);
    let mut rows = Vec::new();
    for (i, snaps) in tables.iter().enumerate() {
        for s in snaps {
            let mut values = vec![Value::Int(i as i64)];
            values.extend(snapshot_fields(s).into_iter().map(|(_, v)| v));
            rows.push(Row {
                columns: cols.clone(),
                values,
            });
        }
    }
    rows
}

/// The row of [`survey_sql`]'s aggregate form for the same table: count, oldest, the
/// window newest first.
fn aggregate_row(i: usize, snaps: &[SnapSpec], window: usize) -> Row {
    use chrono::TimeZone;
    let cols = Arc::new(vec![
        col("i", "integer"),
        col("snapshots", "bigint"),
        col("oldest_snapshot", "double"),
        col(
            "history",
            "array(row(snapshot_id bigint, committed_at timestamp(3) with time zone, operation varchar, parent_id bigint, summary map(varchar, varchar)))",
        ),
    ]);
    let mut sorted: Vec<&SnapSpec> = snaps.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let oldest = snaps.iter().map(|s| s.1).min().map_or(Value::Null, |d| {
        Value::Double(
            Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0)
                .unwrap()
                .timestamp() as f64,
        )
    });
    Row {
        columns: cols,
        values: vec![
            Value::Int(i as i64),
            Value::Int(snaps.len() as i64),
            oldest,
            Value::Array(
                sorted
                    .iter()
                    .take(window)
                    .map(|s| Value::Row(snapshot_fields(s)))
                    .collect(),
            ),
        ],
    }
}

/// The fleet's survey reads the snapshots' rows as they are and derives what the
/// aggregate form computed on the server: the same survey for every table, in any order
/// of rows; a table with no row has no snapshot; a statement cut at its limit says so.
#[test]
fn a_survey_of_plain_rows_gives_what_the_aggregate_gives() {
    let compacted: Vec<SnapSpec> = vec![
        (1, 5, "append", None, vec![("total-data-files", "50")]),
        (
            3,
            20,
            "append",
            Some(2),
            vec![
                ("total-data-files", "30"),
                ("total-files-size", "3000"),
                ("total-delete-files", "0"),
                ("total-records", "300"),
                ("changed-partition-count", "2"),
            ],
        ),
        (
            2,
            10,
            "replace",
            Some(1),
            vec![("total-data-files", "10"), ("deleted-data-files", "40")],
        ),
    ];
    // Two commits at the same time: the higher id is the newer, as the aggregate orders.
    let tied: Vec<SnapSpec> = vec![
        (
            7,
            3,
            "append",
            None,
            vec![("total-data-files", "4"), ("total-files-size", "40")],
        ),
        (
            9,
            3,
            "append",
            Some(7),
            vec![("total-data-files", "8"), ("total-files-size", "80")],
        ),
    ];
    let empty: Vec<SnapSpec> = Vec::new();
    let tables = vec![compacted, empty, tied];
    let cfg = ScanParams::default();
    let window = cfg.trend_limit as usize + 1;
    let mut rows = plain_rows(&tables);
    rows.reverse();
    let plain = parse_survey_rows(&rows, 3, &cfg).unwrap().expect("not cut");
    let aggregate: Vec<Row> = tables
        .iter()
        .enumerate()
        .map(|(i, s)| aggregate_row(i, s, window))
        .collect();
    let agg = parse_survey(&aggregate, 3, false, &cfg).unwrap();
    assert_eq!(plain, agg);
    assert_eq!(plain[0].totals.data_files, Some(30));
    assert_eq!(plain[0].stats.last_compaction, agg[0].stats.last_compaction);
    assert_eq!(
        (plain[1].totals.snapshots, plain[1].totals.snapshot_id),
        (0, None)
    );
    assert_eq!(plain[1].file_read(&cfg), FileRead::NotNeeded);
    assert_eq!(plain[2].totals.snapshot_id, Some(9));
    assert_eq!(plain[2].totals.data_files, Some(8));

    // A window of 2: the aggregate form's history goes on beyond it (read again on the
    // server); the plain rows hold every snapshot, whose facts are derived here.
    let short = ScanParams {
        trend_limit: 1,
        ..ScanParams::default()
    };
    let plain = parse_survey_rows(&plain_rows(&tables), 3, &short)
        .unwrap()
        .expect("7 rows, under the limit of 3 × 2 + 1");
    let aggregate: Vec<Row> = tables
        .iter()
        .enumerate()
        .map(|(i, s)| aggregate_row(i, s, 2))
        .collect();
    let cut = parse_survey(&aggregate, 3, false, &short).unwrap();
    assert!(cut[0].long_history && !plain[0].long_history);
    assert_eq!(plain[0].history.len(), 2);
    assert_eq!(plain[0].stats.last_compaction, cut[0].stats.last_compaction);
    assert_eq!(plain[1..], cut[1..]);
    assert_eq!(
        plain[0].totals.oldest_snapshot,
        agg[0].totals.oldest_snapshot
    );

    // Cut at its limit: which table lost rows the rows cannot tell.
    let mut five = tables[0].clone();
    five.push((4, 21, "append", Some(3), vec![("total-data-files", "31")]));
    five.push((5, 22, "append", Some(4), vec![("total-data-files", "32")]));
    let one = vec![five];
    let tiny = ScanParams {
        trend_limit: 0,
        ..ScanParams::default()
    };
    assert_eq!(survey_rows_limit(1, &tiny), 5);
    assert_eq!(
        parse_survey_rows(&plain_rows(&one), 1, &tiny).unwrap(),
        None
    );
    let sql = survey_rows_sql(
        &[
            TableRef::new("iceberg", "a", "x"),
            TableRef::new("iceberg", "b", "y"),
        ],
        &cfg,
    );
    assert!(
        sql.ends_with(&format!("LIMIT {}", 2 * (window + 2) + 1)),
        "{sql}"
    );
    assert_eq!(sql.matches("$snapshots").count(), 2, "{sql}");
    assert_eq!(sql.matches("$properties").count(), 2, "{sql}");
    for costly in ["GROUP BY", "ORDER BY", "array_agg", "count("] {
        assert!(!sql.contains(costly), "{costly}: {sql}");
    }
}

/// The survey judges the table as it is now: after a rollback of a compaction its
/// current snapshot is the one before it, whatever was committed after; a branch's
/// commits are not the table's.
#[test]
fn a_survey_takes_the_current_snapshot_and_its_line_not_the_newest_commit() {
    let appended: Vec<SnapSpec> = vec![
        (
            1,
            1,
            "append",
            None,
            vec![("total-data-files", "100"), ("total-files-size", "1000")],
        ),
        (
            2,
            2,
            "append",
            Some(1),
            vec![("total-data-files", "200"), ("total-files-size", "2000")],
        ),
        // The compaction that was rolled back, and an append on it, also gone.
        (
            3,
            3,
            "replace",
            Some(2),
            vec![
                ("total-data-files", "2"),
                ("total-files-size", "2000"),
                ("deleted-data-files", "200"),
            ],
        ),
        (
            4,
            4,
            "append",
            Some(3),
            vec![("total-data-files", "3"), ("total-files-size", "2010")],
        ),
    ];
    let cfg = ScanParams::default();
    let mut rows = plain_rows(std::slice::from_ref(&appended));
    rows.extend(prop_rows(
        0,
        &[
            ("current-snapshot-id", "2"),
            ("write.target-file-size-bytes", "1048576"),
        ],
    ));
    let s = &parse_survey_rows(&rows, 1, &cfg).unwrap().expect("not cut")[0];
    assert_eq!(s.totals.snapshot_id, Some(2));
    assert_eq!(
        s.totals.data_files,
        Some(200),
        "the rolled-back compaction's total is not the table's"
    );
    assert_eq!(
        s.stats.last_compaction, None,
        "the table was never compacted, as it is now"
    );
    assert_eq!(s.totals.snapshots, 4, "every snapshot is still kept");
    assert_eq!(
        s.target(&cfg),
        1 << 20,
        "its own target, read with its snapshots"
    );
    assert!(s.stats(&cfg).target_from_property);
    // Without the properties (a server that has none of them): the newest.
    let s = &parse_survey_rows(&plain_rows(std::slice::from_ref(&appended)), 1, &cfg)
        .unwrap()
        .expect("not cut")[0];
    assert_eq!(s.totals.snapshot_id, Some(4));
    // A branch off snapshot 2 committed after main's snapshot 4: main stays the table.
    let mut branched = appended.clone();
    branched.push((
        5,
        5,
        "append",
        Some(2),
        vec![("total-data-files", "250"), ("total-files-size", "2500")],
    ));
    let mut rows = plain_rows(std::slice::from_ref(&branched));
    rows.extend(prop_rows(0, &[("current-snapshot-id", "4")]));
    let s = &parse_survey_rows(&rows, 1, &cfg).unwrap().expect("not cut")[0];
    assert_eq!(
        (s.totals.snapshot_id, s.totals.data_files),
        (Some(4), Some(3))
    );
    let line: Vec<i64> = s.history.iter().map(|h| h.id).collect();
    assert_eq!(line, [4, 3, 2, 1], "the branch's commit is off the line");
    assert!(s.stats.last_compaction.is_some());
}

/// The property rows of a plain survey for table `i`.
fn prop_rows(i: i64, props: &[(&str, &str)]) -> Vec<Row> {
    let cols = Arc::new(vec![
        col("i", "integer"),
        col("snapshot_id", "bigint"),
        col("committed_at", "timestamp(3) with time zone"),
        col("operation", "varchar"),
        col("parent_id", "bigint"),
        col("summary", "map(varchar, varchar)"),
        col("prop", "varchar"),
        col("value", "varchar"),
    ]);
    props
        .iter()
        .map(|(k, v)| Row {
            columns: cols.clone(),
            values: vec![
                Value::Int(i),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Text((*k).into()),
                Value::Text((*v).into()),
            ],
        })
        .collect()
}
