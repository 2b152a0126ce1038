use super::*;
use crate::lakehouse::scan::ScanParams;

#[test]
fn globs() {
    assert!(glob_match("zoning.*", "zoning.documents"));
    assert!(glob_match("*.doc*", "zoning.documents"));
    assert!(glob_match("documents", "documents"));
    assert!(glob_match("d?cuments", "documents"));
    assert!(!glob_match("zoning.*", "finance.ledger"));
    assert!(glob_match("*", ""));
    assert!(!glob_match("a*b", "acd"));
}

fn field(entry: &str) -> PartitionField {
    crate::lakehouse::plan::parse_partition_entry(entry).unwrap()
}

#[test]
fn transform_values() {
    assert_eq!(
        partition_value_text(Some(&field("month(ts)")), &Value::Int(674)),
        "2026-03"
    );
    assert_eq!(
        partition_value_text(Some(&field("year(ts)")), &Value::Int(56)),
        "2026"
    );
    assert_eq!(
        partition_value_text(Some(&field("hour(ts)")), &Value::Int(494_000)),
        "2026-05-10-08"
    );
    assert_eq!(
        partition_value_text(Some(&field("bucket(id, 16)")), &Value::Int(7)),
        "7"
    );
    assert_eq!(
        partition_value_text(Some(&field("district")), &Value::Text("north".into())),
        "north"
    );
}

#[test]
fn identity_columns_named_like_transforms_keep_their_values() {
    // `fiscal_year` is an identity column: 2026 is the year 2026, not 1970 + 2026.
    for (entry, v, want) in [
        ("fiscal_year", Value::Int(2026), "2026"),
        ("report_month", Value::Int(3), "3"),
        ("shift_hour", Value::Int(14), "14"),
        ("created_day", Value::Int(5), "5"),
    ] {
        let f = field(entry);
        assert_eq!(f.name, entry);
        assert_eq!(partition_value_text(Some(&f), &v), want, "{entry}");
    }
    // A field the spec does not know is its value, whatever its name.
    assert_eq!(partition_value_text(None, &Value::Int(2026)), "2026");
}

#[test]
fn recount_reads_only_the_steps_partitions_typed_by_their_transforms() {
    let t = TableRef::new("iceberg", "finance", "budget");
    let spec = TableLayout {
        columns: vec![
            ("fiscal_year".into(), "integer".into()),
            ("region".into(), "varchar".into()),
            ("ts".into(), "timestamp(6)".into()),
        ],
        partitioning: ["fiscal_year", "region", "month(ts)"]
            .iter()
            .map(|e| field(e))
            .collect(),
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let sql = recount_sql(
        &t,
        &spec,
        &[
            vec![
                ("fiscal_year".into(), Some("2026".into())),
                ("region".into(), Some("it's".into())),
                ("ts_month".into(), Some("2026-03".into())),
            ],
            vec![("region".into(), None)],
        ],
        1000,
    )
    .unwrap();
    assert!(
        sql.contains(r#"(f.partition."fiscal_year" = 2026 AND f.partition."region" = 'it''s' AND f.partition."ts_month" = 674)"#),
        "{sql}"
    );
    assert!(
        sql.contains(r#"OR (f.partition."region" IS NULL)"#),
        "{sql}"
    );
    assert_eq!(sql.matches("$files").count(), 1);
    assert!(!sql.contains("$properties"));
    assert_eq!(
        recount_sql(&t, &spec, &[vec![("nope".into(), Some("1".into()))]], 1),
        Err(RecountError::Predicate(PredicateError::NotInSpec(
            "nope".into()
        )))
    );
    assert_eq!(
        recount_sql(&t, &spec, &[], 1).unwrap_err().to_string(),
        "no partition to re-read"
    );
}

#[test]
fn stats_sql_reads_every_table_once_and_quotes_names() {
    let t = TableRef::new("iceberg", "finance", r#"ledger "q3" it's-odd"#);
    let files_only = MetaTables {
        entries: false,
        metadata_log: true,
        file_times: false,
    };
    let sql = stats_sql(
        &t,
        &ScanParams::default(),
        Layout::PartitionColumn,
        files_only,
    );
    assert!(
        sql.contains(r#""iceberg"."finance"."ledger ""q3"" it's-odd$files""#),
        "{sql}"
    );
    assert_eq!(sql.matches("$files").count(), 1);
    assert_eq!(sql.matches("$snapshots").count(), 1);
    assert_eq!(sql.matches("$properties").count(), 1);
    assert!(sql.contains("element_at(s.summary, 'total-data-files')"));
    assert!(
        !sql.contains("summary["),
        "missing keys must not fail the query"
    );
    let unpart = stats_sql(
        &t,
        &ScanParams::default(),
        Layout::Unpartitioned,
        files_only,
    );
    assert!(!unpart.contains("f.partition"));
}

/// Every metadata table and every CTE is named once: Trino inlines `WITH`, so a second
/// reference would be a second scan.
#[test]
fn per_table_statements_name_each_metadata_table_and_cte_once() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    let h = ScanParams::default();
    let metas = [
        MetaTables::ALL,
        MetaTables {
            entries: false,
            metadata_log: true,
            file_times: false,
        },
        MetaTables {
            entries: false,
            metadata_log: false,
            file_times: false,
        },
        MetaTables {
            entries: false,
            metadata_log: true,
            file_times: true,
        },
    ];
    for meta in metas {
        for layout in [
            Layout::PartitionColumn,
            Layout::Unpartitioned,
            Layout::Directory,
        ] {
            for (what, sql) in [
                ("stats", stats_sql(&t, &h, layout, meta)),
                ("partitions", partitions_sql(&t, &h, layout, meta)),
            ] {
                let ctx = format!("{what} {layout:?} {meta:?}:\n{sql}");
                let files = if meta.entries { "$entries" } else { "$files" };
                assert_eq!(sql.matches(files).count(), 1, "{ctx}");
                let other = if meta.entries { "$files" } else { "$entries" };
                assert_eq!(sql.matches(other).count(), 0, "{ctx}");
                assert_eq!(sql.matches("$snapshots").count(), 1, "{ctx}");
                assert_eq!(sql.matches("$properties").count(), 1, "{ctx}");
                if what == "stats" {
                    assert_eq!(sql.matches("$manifests").count(), 1, "{ctx}");
                    assert_eq!(
                        sql.matches("$metadata_log_entries").count(),
                        usize::from(meta.metadata_log),
                        "{ctx}"
                    );
                }
                for cte in ["cfg", "stream", "timed", "parts", "tbl", "man", "meta"] {
                    let defined = sql.contains(&format!("{cte} AS ("));
                    let refs = sql
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .filter(|w| *w == cte)
                        .count();
                    if defined {
                        // the definition, and one FROM/JOIN (qualified column uses aside)
                        let from = sql.matches(&format!("FROM {cte} ")).count()
                            + sql.matches(&format!("FROM {cte}\n")).count()
                            + sql.matches(&format!("JOIN {cte} ")).count()
                            + usize::from(sql.ends_with(&format!("JOIN {cte}")));
                        assert_eq!(from, 1, "{cte} is read {from} times: {ctx}");
                        assert!(refs >= 2, "{ctx}");
                    }
                }
            }
        }
    }
}

/// Without `$entries`, files are dated by the data table's hidden columns, read once and
/// joined on the file's path; `$entries` itself needs no such read.
#[test]
fn files_are_dated_by_their_modification_time_only_without_entries() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    let h = ScanParams::default();
    let hidden = r#"SELECT "$path" AS path, min("$file_modified_time") AS modified FROM "iceberg"."zoning"."documents" GROUP BY 1"#;
    let dated = MetaTables {
        entries: false,
        metadata_log: true,
        file_times: true,
    };
    for sql in [
        stats_sql(&t, &h, Layout::PartitionColumn, dated),
        partitions_sql(&t, &h, Layout::PartitionColumn, dated),
        small_file_ages_sql(&t, &h),
    ] {
        assert_eq!(sql.matches(hidden).count(), 1, "{sql}");
        assert!(sql.contains("m.path = f.file_path"), "{sql}");
    }
    let with_entries = MetaTables {
        file_times: true,
        ..MetaTables::ALL
    };
    for sql in [
        partitions_sql(&t, &h, Layout::PartitionColumn, with_entries),
        partitions_sql(
            &t,
            &h,
            Layout::PartitionColumn,
            MetaTables {
                file_times: false,
                ..dated
            },
        ),
    ] {
        assert!(!sql.contains("$file_modified_time"), "{sql}");
    }
    let ages = small_file_ages_sql(&t, &h);
    assert!(
        ages.contains("f.content = 0 AND f.file_size_in_bytes < cfg.target * 0.75"),
        "{ages}"
    );
}

/// A file read after a survey reads the files' metadata table alone when the survey's
/// snapshots date the files, `$snapshots` beside it when they do not; never
/// `$properties` (the target arrives as a literal, the survey's or the read-ahead's).
#[test]
fn a_file_read_reads_one_metadata_table_when_the_survey_dates_its_files() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    let h = ScanParams::default();
    let target = 64 << 20;
    for layout in [Layout::PartitionColumn, Layout::Unpartitioned] {
        let ids = files_sql(&t, &h, layout, MetaTables::ALL, target, Dating::SnapshotIds);
        assert_eq!(ids.matches("$entries").count(), 1, "{ids}");
        for other in ["$snapshots", "$properties", "$files", "$manifests"] {
            assert!(!ids.contains(other), "{other}: {ids}");
        }
        assert!(ids.contains("small_sids") && ids.contains("e.snapshot_id AS sid"));
        let joined = files_sql(&t, &h, layout, MetaTables::ALL, target, Dating::Join);
        assert_eq!(joined.matches("$snapshots").count(), 1, "{joined}");
        assert!(!joined.contains("$properties") && !joined.contains("small_sids"));
    }
    // The lines as integer literals of the exact products: 0.75 and 1.8 × 64 MiB.
    let sql = files_sql(
        &t,
        &h,
        Layout::PartitionColumn,
        MetaTables::ALL,
        target,
        Dating::SnapshotIds,
    );
    assert!(sql.contains("f.size < 50331648 AS small"), "{sql}");
    assert!(sql.contains("f.size > 120795955 AS large"), "{sql}");
    assert!(sql.contains("* BIGINT '67108864'"), "{sql}");
    // Without `$entries` the ids do not exist: `$files`, undated or by modification time.
    let files = MetaTables {
        entries: false,
        ..MetaTables::ALL
    };
    let sql = files_sql(
        &t,
        &h,
        Layout::PartitionColumn,
        files,
        target,
        Dating::SnapshotIds,
    );
    assert!(
        sql.contains("$files") && !sql.contains("small_sids"),
        "{sql}"
    );
}

#[test]
fn small_files_are_dated_by_the_snapshots_that_added_them_and_a_snapshot_not_listed_is_a_bound() {
    use chrono::TimeZone;
    let at = |d: u32| Utc.with_ymd_and_hms(2026, 11, d, 0, 0, 0).unwrap();
    // The survey's newest snapshots, newest first.
    let times = [(30, at(30)), (20, at(20)), (10, at(10))];
    assert_eq!(date_by_ids(&[], &times, Some(at(1))), None);
    // Every id listed: the oldest of them, exact.
    assert_eq!(
        date_by_ids(&[30, 20], &times, Some(at(1))),
        Some((at(20), false))
    );
    // An id the list does not hold is older than all it holds (expired, or past the
    // list's length): the files have waited since the oldest listed commit at least.
    assert_eq!(
        date_by_ids(&[30, 7], &times, Some(at(1))),
        Some((at(10), true))
    );
    assert_eq!(date_by_ids(&[7], &times, Some(at(1))), Some((at(10), true)));
    // No list at all: the oldest snapshot the table keeps bounds it.
    assert_eq!(date_by_ids(&[7], &[], Some(at(1))), Some((at(1), true)));
    assert_eq!(date_by_ids(&[7], &[], None), None);
}

/// A table whose summary counts no delete files is read with one level of aggregation,
/// a row per partition (the planning a second level costs is what the script's whole read
/// costs); one with delete files with the whole read, in a statement of its own.
#[test]
fn a_batch_reads_the_data_files_alone_where_no_delete_file_exists() {
    let item = |name: &str, layout: Layout, deletes: bool| FileReadItem {
        table: TableRef::new("iceberg", "s", name),
        layout,
        target: 128 << 20,
        deletes,
        all_small: false,
    };
    let h = ScanParams::default();
    let sql = data_files_batch_sql(
        &[
            item("a", Layout::PartitionColumn, false),
            item("b", Layout::Unpartitioned, false),
        ],
        &h,
    );
    assert_eq!(sql.matches("UNION ALL").count(), 1, "{sql}");
    assert_eq!(sql.matches("$files").count(), 2, "{sql}");
    assert_eq!(sql.matches("GROUP BY").count(), 1, "{sql}");
    assert_eq!(sql.matches("SELECT").count(), 4, "one level a table: {sql}");
    for other in [
        "$entries",
        "$snapshots",
        "$properties",
        "WITH",
        "sum(files)",
    ] {
        assert!(!sql.contains(other), "{other}: {sql}");
    }
    let (a, b) = sql.split_once("UNION ALL").unwrap();
    assert!(
        a.contains("SELECT 0 AS i") && a.contains("GROUP BY f.partition"),
        "{a}"
    );
    assert!(
        b.contains("SELECT 1 AS i") && !b.contains("GROUP BY"),
        "{b}"
    );
    let small = (128u64 << 20) * 3 / 4;
    assert!(
        a.contains(&format!("f.file_size_in_bytes < {small}")),
        "{a}"
    );

    let sql = files_batch_sql(&[item("c", Layout::PartitionColumn, true)], &h);
    assert!(
        sql.contains("position_delete_files") && sql.contains("count_if(kind = 0 AND content = 1)"),
        "{sql}"
    );
}

/// A table whose totals prove every file small has its partitions' counts read from
/// `$partitions` (cheaper to plan than the `$files` aggregate), in the same columns: its
/// files are its small files, none large. Not a table of the directory layout, nor one
/// whose totals do not prove it (bytes at the line, a delete file, no totals).
#[test]
fn a_table_proved_all_small_is_counted_from_its_partitions() {
    let h = ScanParams::default();
    let item = |name: &str, layout: Layout, all_small: bool| FileReadItem {
        table: TableRef::new("iceberg", "s", name),
        layout,
        target: 128 << 20,
        deletes: false,
        all_small,
    };
    let sql = data_files_batch_sql(
        &[
            item("a", Layout::PartitionColumn, true),
            item("b", Layout::Unpartitioned, true),
            item("c", Layout::Directory, true),
            item("d", Layout::PartitionColumn, false),
        ],
        &h,
    );
    let branches: Vec<&str> = sql.split("UNION ALL").collect();
    assert_eq!(branches.len(), 4, "{sql}");
    for b in &branches[..2] {
        assert!(
            b.contains("$partitions\"")
                && b.contains("file_count AS files, file_count AS small_files, BIGINT '0' AS large_files, total_size AS bytes")
                && !b.contains("$files"),
            "{b}"
        );
    }
    for b in &branches[2..] {
        assert!(b.contains("$files\"") && !b.contains("$partitions"), "{b}");
    }

    let survey = |files: u64, bytes: u64| TableStats {
        target_file_size: 128 << 20,
        data_files: files,
        total_bytes: bytes,
        files_unread: true,
        ..TableStats::default()
    };
    let line = (128u64 << 20) * 3 / 4;
    assert!(every_file_small(&survey(20, 40 << 20), &h));
    assert!(every_file_small(&survey(20, line - 1), &h));
    // At the line one file may be exactly it: not small.
    assert!(!every_file_small(&survey(20, line), &h));
    // No totals: the summary proves nothing.
    assert!(!every_file_small(&survey(0, 0), &h));
    assert!(!every_file_small(&survey(20, 0), &h));
    // Delete files, counted or unknown.
    let with_deletes = TableStats {
        delete_files: 1,
        ..survey(20, 1 << 20)
    };
    assert!(!every_file_small(&with_deletes, &h));
    let unknown = TableStats {
        deletes_unknown: true,
        ..survey(20, 1 << 20)
    };
    assert!(!every_file_small(&unknown, &h));
    // Facts already read from the files are not a survey's bound.
    let read = TableStats {
        files_unread: false,
        ..survey(20, 1 << 20)
    };
    assert!(!every_file_small(&read, &h));
    // A table's own target moves the line.
    let bigger = TableStats {
        target_file_size: 512 << 20,
        ..survey(20, line + 1)
    };
    assert!(every_file_small(&bigger, &h));
}

/// The rows of one partitioned table's data-file read: a partition per row.
fn partition_rows(parts: &[(u64, u64, u64, u64)]) -> Vec<Row> {
    use std::sync::Arc;
    let col = |n: &str| crate::trino::Column {
        name: n.into(),
        type_text: "bigint".into(),
        ty: crate::trino::TrinoType::parse("bigint").unwrap(),
    };
    let cols = Arc::new(vec![
        col("i"),
        col("files"),
        col("small_files"),
        col("large_files"),
        col("bytes"),
    ]);
    parts
        .iter()
        .map(|&(f, s, l, b)| Row {
            columns: cols.clone(),
            values: [0, f, s, l, b]
                .into_iter()
                .map(|v| Value::Int(v as i64))
                .collect(),
        })
        .collect()
}

/// The counts summed on the client are those the server's second level of aggregation
/// gave: the table's files, small and large ones, bytes, and its partitions by the same
/// lines (one with `min_small_files` small files counts; one with
/// `critical_partition_small_files` small files more than its bytes need is critical).
#[test]
fn a_tables_counts_are_summed_from_its_partitions_by_the_health_lines() {
    let h = ScanParams::default();
    let mb = 1u64 << 20;
    let survey = TableStats {
        target_file_size: 128 * mb,
        records: 4_242,
        files_unread: true,
        ..Default::default()
    };
    let rows = partition_rows(&[
        // 150 files of 1 MB: 149 more than its bytes need, critical.
        (150, 150, 0, 150 * mb),
        // 120 small files beside 10 huge ones: the bytes cover them, not critical, but it
        // counts (and a whole-table average of this partition looks healthy).
        (130, 120, 10, 120 * mb + 10 * 4096 * mb),
        // 5 small files: below `min_small_files`.
        (6, 5, 0, 5 * mb + 128 * mb),
    ]);
    let st = data_file_counts(&rows, Layout::PartitionColumn, &survey, &h).unwrap();
    assert_eq!(
        (st.data_files, st.small_files, st.large_files),
        (286, 275, 10)
    );
    assert_eq!(st.total_bytes, 275 * mb + 10 * 4096 * mb + 128 * mb);
    assert_eq!(
        (
            st.partitions,
            st.small_file_partitions,
            st.critical_partitions
        ),
        (3, 2, 1)
    );
    assert_eq!(st.max_partition_small_files, Some(150));
    assert!(st.partitioned && !st.files_unread);
    assert_eq!(st.records, 4_242, "the summary's records");
    assert_eq!((st.delete_files, st.oldest_small_file_at), (0, None));

    // At the line: files − ⌈bytes / target⌉ ≥ 100 ⇔ bytes ≤ (files − 100) × target.
    let edge = |bytes: u64| {
        let rows = partition_rows(&[(101, 100, 0, bytes)]);
        data_file_counts(&rows, Layout::PartitionColumn, &survey, &h)
            .unwrap()
            .critical_partitions
    };
    assert_eq!(edge(128 * mb), 1);
    assert_eq!(edge(128 * mb + 1), 0);
}

/// A partitioned table without a data file has no row; an unpartitioned one has one row
/// of zeros (an aggregate without groups): neither counts a partition.
#[test]
fn a_table_without_data_files_counts_nothing() {
    let h = ScanParams::default();
    let survey = TableStats::default();
    let st = data_file_counts(&[], Layout::PartitionColumn, &survey, &h).unwrap();
    assert_eq!((st.data_files, st.partitions), (0, 0));
    assert_eq!(st.max_partition_small_files, None);
    let st = data_file_counts(
        &partition_rows(&[(0, 0, 0, 0)]),
        Layout::Unpartitioned,
        &survey,
        &h,
    )
    .unwrap();
    assert_eq!((st.data_files, st.partitions), (0, 0));
    assert_eq!(st.max_partition_small_files, None);
    let st = data_file_counts(
        &partition_rows(&[(40, 30, 0, 30)]),
        Layout::Unpartitioned,
        &survey,
        &h,
    )
    .unwrap();
    assert_eq!((st.data_files, st.small_files, st.partitions), (40, 30, 0));
    assert_eq!(st.max_partition_small_files, Some(30));
    assert!(!st.partitioned);
}
