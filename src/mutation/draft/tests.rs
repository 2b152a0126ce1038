use super::*;

#[test]
fn a_failed_read_says_what_it_read_and_keeps_trinos_error() {
    let trino = TrinoError::Query {
        query_id: "q1".into(),
        error_name: "TABLE_NOT_FOUND".into(),
        error_code: 46,
        error_type: "USER_ERROR".into(),
        message: "Table 'iceberg.zoning.documents' does not exist".into(),
        location: None,
    };
    let e = PlanError::read("the layout of iceberg.zoning.documents")(trino);
    assert_eq!(
        e.to_string(),
        "reading the layout of iceberg.zoning.documents: TABLE_NOT_FOUND: Table 'iceberg.zoning.documents' does not exist (query q1)"
    );
    let PlanError::Read { source, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(source.name(), "TABLE_NOT_FOUND");
    let refused: PlanError =
        PlanRefusal::Predicate(crate::lakehouse::plan::PredicateError::NoValue).into();
    assert!(matches!(refused, PlanError::Refused(_)));
    assert_eq!(refused.to_string(), "no partition value to match");
}
use crate::lakehouse::plan::{MAX_GROUP, parse_partition_entry};

/// `n` partitions of `small` small files each, one a day from 2026-08-01.
fn spread(n: usize, small: u64) -> Vec<PartitionStats> {
    (0..n)
        .map(|i| PartitionStats {
            values: vec![(
                "ordered_at_day".into(),
                Some(
                    (chrono::NaiveDate::from_ymd_opt(2026, 8, 1).unwrap()
                        + chrono::Duration::days(i as i64))
                    .to_string(),
                ),
            )],
            data_files: small,
            small_files: small,
            total_bytes: small * 4000,
            records: 100,
            min_file: 3000,
            max_file: 5000,
            delete_files: 0,
            oldest_small_file_at: None,
            spec_id: None,
        })
        .collect()
}

#[test]
fn a_table_spread_thin_optimizes_every_partition_with_small_files_in_bounded_groups() {
    let t = TableRef::new("iceberg", "sales", "orders");
    // 1,101 small files over 270 partitions of about four: none holds 12.
    let mut parts = spread(270, 4);
    parts[0].small_files = 5;
    parts[0].data_files = 5;
    parts.push(PartitionStats {
        small_files: 1,
        data_files: 1,
        ..spread(1, 1)[0].clone()
    });
    let got = optimize_targets(&t, parts, 12).unwrap();
    assert_eq!(
        got.partitions.len(),
        270,
        "the lone small file cannot merge"
    );
    assert!(got.grouped);
    let note = got.note.clone().unwrap();
    assert!(
        note.contains("no partition of iceberg.sales.orders holds 12 or more small files")
            && note.contains("1,081 small files are spread over 270 partitions"),
        "{note}"
    );
    let layout = TableLayout {
        columns: vec![("ordered_at".into(), "timestamp(6) with time zone".into())],
        partitioning: vec![parse_partition_entry("day(ordered_at)").unwrap()],
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let draft = PlanDraft {
        table: t.clone(),
        procedure: Procedure::Optimize {
            threshold: 96 << 20,
        },
        layout,
        partitions: got.partitions,
        note: got.note,
        grouped: got.grouped,
        measured: None,
        writer_partitions: crate::lakehouse::plan::DEFAULT_WRITER_PARTITIONS,
    };
    let plan = draft.build(draft.grouped).unwrap();
    assert_eq!(plan.steps.len(), 270usize.div_ceil(MAX_GROUP));
    assert!(plan.steps.iter().all(|s| s.targets.len() <= MAX_GROUP));
    assert_eq!(plan.files(), 1081);
    // Oldest first: the first statement holds the first day.
    assert!(
        plan.steps[0].sql.contains("2026-08-01"),
        "{}",
        plan.steps[0].sql
    );
    // One statement each on g.
    assert_eq!(draft.build(false).unwrap().steps.len(), 270);
}

#[test]
fn partitions_past_min_small_files_are_the_plan_and_nothing_to_merge_says_why() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    let mut parts = spread(10, 3);
    parts[4].small_files = 20;
    let got = optimize_targets(&t, parts, 12).unwrap();
    assert_eq!(got.partitions.len(), 1);
    assert_eq!(got.note, None);
    assert!(!got.grouped);
    let e = optimize_targets(&t, spread(30, 1), 12).unwrap_err();
    assert!(matches!(e, PlanError::OverPartitioned(_)), "{e:?}");
    assert!(e.to_string().contains("over-partitioned"), "{e}");
}

/// A spread-thin table one of whose partitions is NULL (its path is the string
/// 'null''s too): the grouped plan is drawn, that partition in a statement of its own
/// selected by `IS NULL`, the rest grouped by path.
#[test]
fn a_null_partition_of_a_table_spread_thin_is_planned_alone_beside_the_groups() {
    let t = TableRef::new("iceberg", "zoning", "permits");
    let mut parts: Vec<PartitionStats> = spread(100, 3)
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.values = vec![("district".into(), Some(format!("d{i:03}")))];
            p
        })
        .collect();
    parts[7].values[0].1 = None;
    parts[8].values[0].1 = Some("null".into());
    let got = optimize_targets(&t, parts, 12).unwrap();
    assert!(got.grouped);
    let draft = PlanDraft {
        table: t.clone(),
        procedure: Procedure::Optimize {
            threshold: 96 << 20,
        },
        layout: TableLayout {
            columns: vec![("district".into(), "varchar".into())],
            partitioning: vec![parse_partition_entry("district").unwrap()],
            live_specs: Vec::new(),
            format: Default::default(),
        },
        partitions: got.partitions,
        note: got.note,
        grouped: true,
        measured: None,
        writer_partitions: crate::lakehouse::plan::DEFAULT_WRITER_PARTITIONS,
    };
    let plan = draft.build(true).unwrap();
    assert_eq!(plan.steps.len(), 98usize.div_ceil(MAX_GROUP) + 2, "{plan}");
    assert_eq!(plan.files(), 300);
    let alone: Vec<&str> = plan
        .steps
        .iter()
        .filter(|s| !s.sql.contains("\"$partition\""))
        .map(|s| s.sql.as_str())
        .collect();
    assert_eq!(alone.len(), 2, "{plan}");
    assert!(
        alone
            .iter()
            .any(|s| s.ends_with("WHERE \"district\" IS NULL")),
        "{plan}"
    );
    assert!(
        alone
            .iter()
            .any(|s| s.ends_with("WHERE \"district\" = 'null'")),
        "{plan}"
    );
    assert!(
        plan.notes
            .iter()
            .any(|n| n.starts_with("2 partitions planned alone")),
        "{:?}",
        plan.notes
    );
}

/// A `--partition` over some fields that spans more partitions than a writer holds is
/// replaced by the partitions it spans, and the plan groups them within the limit; one
/// within the limit stays one statement over its predicate.
#[test]
fn a_partial_spec_wider_than_a_writer_is_split_into_bounded_statements() {
    let t = TableRef::new("iceberg", "zoning", "documents");
    let days = spread(150, 3);
    let all: Vec<PartitionStats> = days
        .iter()
        .enumerate()
        .map(|(i, p)| PartitionStats {
            values: vec![
                (
                    "district".into(),
                    Some(if i < 120 { "north" } else { "south" }.into()),
                ),
                p.values[0].clone(),
            ],
            ..p.clone()
        })
        .collect();
    let named =
        select_partitions(&all, &["district=north".into(), "district=south".into()]).unwrap();
    assert_eq!(named.len(), 2, "each subset is one aggregated partition");
    let (parts, split) = split_wide(&all, named.clone(), 100);
    assert_eq!(split, 120, "north spans 120 partitions, more than 100");
    assert_eq!(parts.len(), 121, "north's 120 and south's aggregate");
    let draft = PlanDraft {
        table: t.clone(),
        procedure: Procedure::Optimize {
            threshold: 96 << 20,
        },
        layout: TableLayout {
            columns: vec![
                ("district".into(), "varchar".into()),
                ("ordered_at".into(), "timestamp(6) with time zone".into()),
            ],
            partitioning: vec![
                parse_partition_entry("district").unwrap(),
                parse_partition_entry("day(ordered_at)").unwrap(),
            ],
            live_specs: Vec::new(),
            format: Default::default(),
        },
        partitions: parts,
        note: None,
        grouped: true,
        measured: None,
        writer_partitions: 50,
    };
    let plan = draft.build(true).unwrap();
    let grouped: Vec<_> = plan
        .steps
        .iter()
        .filter(|s| s.sql.contains("\"$partition\" IN"))
        .collect();
    assert_eq!(
        grouped.len(),
        3,
        "120 partitions, at most 50 a statement: {plan}"
    );
    assert!(grouped.iter().all(|s| s.targets.len() <= 50), "{plan}");
    let south: Vec<_> = plan
        .steps
        .iter()
        .filter(|s| s.sql.ends_with("WHERE \"district\" = 'south'"))
        .collect();
    assert_eq!(south.len(), 1, "south (30) stays one statement: {plan}");
    assert_eq!(plan.files(), 450);
    // Within the limit nothing is split.
    let (same, none) = split_wide(&all, named, 200);
    assert_eq!((same.len(), none), (2, 0));
}
