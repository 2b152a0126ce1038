use super::*;
use crate::trino::Value;

fn documents() -> (TableRef, TableLayout) {
    let layout = TableLayout {
        columns: vec![
            ("doc_id".into(), "bigint".into()),
            ("district".into(), "varchar".into()),
            ("filed_at".into(), "timestamp(6) with time zone".into()),
        ],
        partitioning: partitioning_from_show_create(
            "CREATE TABLE x (\n doc_id bigint\n)\nWITH (\n   format = 'PARQUET',\n   partitioning = ARRAY['district','day(filed_at)']\n)",
        )
        .unwrap(),
        live_specs: Vec::new(),
        format: Default::default(),
    };
    (TableRef::new("iceberg", "zoning", "documents"), layout)
}

fn part(values: &[(&str, Option<&str>)], files: u64) -> PartitionStats {
    PartitionStats {
        values: values
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
        data_files: files,
        small_files: files,
        total_bytes: files * 4000,
        records: files * 10,
        min_file: 3000,
        max_file: 5000,
        delete_files: 0,
        oldest_small_file_at: None,
        spec_id: None,
    }
}

#[test]
fn parses_partitioning_entries() {
    assert_eq!(
        parse_partition_entry("day(filed_at)").unwrap(),
        PartitionField {
            name: "filed_at_day".into(),
            source: "filed_at".into(),
            transform: Transform::Day
        }
    );
    assert_eq!(
        parse_partition_entry("bucket(id, 16)").unwrap().transform,
        Transform::Bucket(16)
    );
    assert_eq!(
        parse_partition_entry("truncate(name, 4)").unwrap().name,
        "name_trunc"
    );
    assert_eq!(
        parse_partition_entry(r#""Odd ""Col""#).unwrap().source,
        r#"Odd "Col"#
    );
    assert_eq!(
        parse_partition_entry(r#"month("Filed At")"#).unwrap().name,
        "Filed At_month"
    );
    assert!(parse_partition_entry("zorder(a)").is_err());
    let f = partitioning_from_show_create(
        "WITH (partitioning = ARRAY['a','year(it''s)'], location = 'x')",
    )
    .unwrap();
    assert_eq!(f.len(), 2);
    assert_eq!(f[1].source, "it's");
    assert!(
        partitioning_from_show_create("WITH (format = 'PARQUET')")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn one_statement_per_partition_oldest_first_with_typed_aligned_predicates() {
    let (t, l) = documents();
    let parts = vec![
        part(
            &[
                ("district", Some("south")),
                ("filed_at_day", Some("2026-03-02")),
            ],
            24,
        ),
        part(
            &[
                ("district", Some("north")),
                ("filed_at_day", Some("2026-03-01")),
            ],
            18,
        ),
    ];
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, false).unwrap();
    assert_eq!(plan.steps.len(), 2);
    assert_eq!(
        plan.steps[0].sql,
        r#"ALTER TABLE "iceberg"."zoning"."documents" EXECUTE optimize(file_size_threshold => '96MB') WHERE "district" = 'north' AND "filed_at" >= TIMESTAMP '2026-03-01 00:00:00 UTC' AND "filed_at" < TIMESTAMP '2026-03-02 00:00:00 UTC'"#
    );
    assert_eq!(
        plan.steps[0].partition.as_deref(),
        Some("district=north/filed_at_day=2026-03-01")
    );
    assert_eq!(plan.files(), 42);
    assert!(
        plan.summary().contains("2 partitions, 2 statements"),
        "{}",
        plan.summary()
    );
    assert!(plan.to_string().contains("\"district\" = 'south'"));
}

#[test]
fn grouped_statement_uses_partition_paths() {
    let (t, l) = documents();
    let parts = vec![
        part(
            &[
                ("district", Some("o'hare east")),
                ("filed_at_day", Some("2026-03-02")),
            ],
            24,
        ),
        part(
            &[
                ("district", Some("north")),
                ("filed_at_day", Some("2026-03-01")),
            ],
            18,
        ),
    ];
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, true).unwrap();
    assert_eq!(plan.steps.len(), 1);
    assert!(
        plan.steps[0].sql.ends_with(
            r#"WHERE "$partition" IN ('district=north/filed_at_day=2026-03-01', 'district=o%27hare+east/filed_at_day=2026-03-02')"#
        ),
        "{}",
        plan.steps[0].sql
    );
}

#[test]
fn nulls_months_hours_dates_and_buckets() {
    let l = TableLayout {
        columns: vec![
            ("k".into(), "integer".into()),
            ("d".into(), "date".into()),
            ("ts".into(), "timestamp(6)".into()),
            ("id".into(), "bigint".into()),
        ],
        partitioning: vec![
            parse_partition_entry("k").unwrap(),
            parse_partition_entry("month(d)").unwrap(),
            parse_partition_entry("hour(ts)").unwrap(),
        ],
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let p = part(
        &[
            ("k", None),
            ("d_month", Some("2026-12")),
            ("ts_hour", Some("2026-03-02-23")),
        ],
        3,
    );
    assert_eq!(
        partition_predicate(&l, &p).unwrap(),
        r#""k" IS NULL AND "d" >= DATE '2026-12-01' AND "d" < DATE '2027-01-01' AND "ts" >= TIMESTAMP '2026-03-02 23:00:00' AND "ts" < TIMESTAMP '2026-03-03 00:00:00'"#
    );
    let p = part(&[("k", Some("12; DROP TABLE x"))], 3);
    assert!(
        partition_predicate(&l, &p)
            .unwrap_err()
            .to_string()
            .contains("not a valid integer")
    );
    let mut l2 = l.clone();
    l2.partitioning = vec![parse_partition_entry("bucket(id, 8)").unwrap()];
    let p = part(&[("id_bucket", Some("3"))], 3);
    assert_eq!(
        partition_predicate(&l2, &p).unwrap(),
        r#""$partition" = 'id_bucket=3'"#
    );
    let p = part(&[("unknown", Some("3"))], 3);
    assert!(
        partition_predicate(&l2, &p)
            .unwrap_err()
            .to_string()
            .contains("unknown")
    );
}

#[test]
fn whole_table_and_other_procedures() {
    let t = TableRef::new("iceberg", "finance", r#"ledger "q3" it's-odd"#);
    let plan = optimize_plan(&t, &TableLayout::default(), &[], 48 * 1024, false).unwrap();
    assert_eq!(
        plan.steps[0].sql,
        r#"ALTER TABLE "iceberg"."finance"."ledger ""q3"" it's-odd" EXECUTE optimize(file_size_threshold => '48kB')"#
    );
    let plan = table_plan(
        &t,
        Procedure::ExpireSnapshots {
            retention_secs: 7 * 86_400,
        },
    );
    assert!(
        plan.steps[0]
            .sql
            .ends_with("EXECUTE expire_snapshots(retention_threshold => '7d')")
    );
    let plan = table_plan(
        &t,
        Procedure::RemoveOrphanFiles {
            retention_secs: 36 * 3600,
        },
    );
    assert!(
        plan.steps[0]
            .sql
            .ends_with("EXECUTE remove_orphan_files(retention_threshold => '36h')")
    );
    let plan = table_plan(&t, Procedure::OptimizeManifests);
    assert!(plan.steps[0].sql.ends_with("EXECUTE optimize_manifests"));
    assert_eq!(trino_duration(90), "90s");
    assert_eq!(trino_duration(5400), "90m");
}

/// A small deterministic generator of hostile strings: quotes, backslashes, unicode,
/// newlines, SQL punctuation, percent and plus signs.
pub fn hostile_strings(n: usize, seed: u64) -> Vec<String> {
    const ALPHABET: &[&str] = &[
        "a", "Z", "0", "'", "''", "\"", "\\", "\\'", " ", "\n", "\t", ";", "--", "/*", "*/", "%",
        "+", "=", "/", "é", "ß", "日本", "🦀", "\u{200b}", ")", "(", ",", "$", "?", ":",
    ];
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|_| {
            let len = 1 + (next() % 12) as usize;
            (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[test]
fn hostile_values_stay_inside_their_literal() {
    let (t, l) = documents();
    for v in hostile_strings(300, 7) {
        let p = part(
            &[("district", Some(&v)), ("filed_at_day", Some("2026-03-02"))],
            2,
        );
        let plan = optimize_plan(&t, &l, &[p], 1 << 20, false).unwrap();
        let sql = &plan.steps[0].sql;
        // Undo the literal's escaping: exactly the value comes back.
        let start = sql.find("\"district\" = '").unwrap() + "\"district\" = '".len();
        let rest = &sql[start..];
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        loop {
            match chars.next() {
                Some('\'') if chars.peek() == Some(&'\'') => {
                    out.push('\'');
                    chars.next();
                }
                Some('\'') => break,
                Some(c) => out.push(c),
                None => panic!("unterminated literal in {sql}"),
            }
        }
        assert_eq!(out, v);
        let tail: String = chars.collect();
        assert!(
            tail.starts_with(" AND \"filed_at\" >= TIMESTAMP '2026-03-02 00:00:00 UTC'"),
            "{sql}"
        );
    }
}

#[test]
fn partitioning_comes_from_the_with_clause_not_from_a_comment() {
    // Trino's own text: a column comment (quotes doubled, a newline) and the table comment
    // carry `partitioning = ARRAY[…]`; only the WITH clause counts.
    let text = "CREATE TABLE iceberg.finance.budget (\n   fiscal_year integer COMMENT 'was: partitioning = ARRAY[''year(booked_at)'']\nWITH (partitioning = ARRAY[''amount''])',\n   region varchar COMMENT '''',\n   \"odd \"\"col\"\"\" varchar,\n   amount decimal(12, 2)\n)\nCOMMENT 'partitioning = ARRAY[''bucket(amount, 4)'']'\nWITH (\n   format = 'PARQUET',\n   format_version = 2,\n   location = 's3://lake/finance/budget',\n   partitioning = ARRAY['fiscal_year','region','bucket(\"odd \"\"col\"\"\", 8)']\n)";
    let f = partitioning_from_show_create(text).unwrap();
    assert_eq!(
        f,
        vec![
            PartitionField {
                name: "fiscal_year".into(),
                source: "fiscal_year".into(),
                transform: Transform::Identity,
            },
            PartitionField {
                name: "region".into(),
                source: "region".into(),
                transform: Transform::Identity,
            },
            PartitionField {
                name: r#"odd "col"_bucket"#.into(),
                source: r#"odd "col""#.into(),
                transform: Transform::Bucket(8),
            },
        ]
    );
    // Only a comment mentions partitioning: the table is not partitioned.
    assert!(
        partitioning_from_show_create(
            "CREATE TABLE x (\n   a bigint COMMENT 'partitioning = ARRAY[''a'']'\n)\nWITH (\n   format = 'PARQUET'\n)"
        )
        .unwrap()
        .is_empty()
    );
    assert!(partitioning_from_show_create("WITH (partitioning = 'a')").is_err());
}

#[test]
fn identity_year_columns_make_equality_predicates() {
    let l = TableLayout {
        columns: vec![
            ("fiscal_year".into(), "integer".into()),
            ("region".into(), "varchar".into()),
        ],
        partitioning: partitioning_from_show_create(
            "WITH (partitioning = ARRAY['fiscal_year','region'])",
        )
        .unwrap(),
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let p = part(
        &[("fiscal_year", Some("2026")), ("region", Some("emea"))],
        9,
    );
    assert_eq!(
        partition_predicate(&l, &p).unwrap(),
        r#""fiscal_year" = 2026 AND "region" = 'emea'"#
    );
    assert_eq!(
        files_partition_predicate(&l, &p.values).unwrap(),
        r#"f.partition."fiscal_year" = 2026 AND f.partition."region" = 'emea'"#
    );
}

#[test]
fn files_predicates_turn_rendered_values_back_into_field_values() {
    let l = TableLayout {
        columns: vec![
            ("ts".into(), "timestamp(6) with time zone".into()),
            ("id".into(), "bigint".into()),
            ("name".into(), "varchar".into()),
        ],
        partitioning: [
            "year(ts)",
            "month(ts)",
            "day(ts)",
            "hour(ts)",
            "bucket(id, 16)",
            "truncate(name, 2)",
        ]
        .iter()
        .map(|e| parse_partition_entry(e).unwrap())
        .collect(),
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let one = |k: &str, v: &str| files_partition_predicate(&l, &[(k.into(), Some(v.into()))]);
    assert_eq!(
        one("ts_year", "2026").unwrap(),
        r#"f.partition."ts_year" = 56"#
    );
    assert_eq!(
        one("ts_month", "2026-03").unwrap(),
        r#"f.partition."ts_month" = 674"#
    );
    assert_eq!(
        one("ts_day", "2026-03-02").unwrap(),
        r#"f.partition."ts_day" = DATE '2026-03-02'"#
    );
    assert_eq!(
        one("ts_hour", "2026-05-10-08").unwrap(),
        r#"f.partition."ts_hour" = 494000"#
    );
    assert_eq!(
        one("id_bucket", "7").unwrap(),
        r#"f.partition."id_bucket" = 7"#
    );
    assert_eq!(
        one("name_trunc", "a'").unwrap(),
        r#"f.partition."name_trunc" = 'a'''"#
    );
    assert!(one("ts_month", "March").is_err());
    assert!(one("id_bucket", "1 OR 1=1").is_err());
    // Rendering and reading back agree.
    for (entry, n) in [("year(ts)", 56), ("month(ts)", 674), ("hour(ts)", 494_000)] {
        let f = parse_partition_entry(entry).unwrap();
        let text = f.transform.render(&crate::trino::Value::Int(n));
        assert_eq!(
            one(&f.name, &text).unwrap(),
            format!("f.partition.\"{}\" = {n}", f.name)
        );
    }
}

#[test]
fn steps_record_the_partitions_they_rewrite() {
    let (t, l) = documents();
    let a = part(
        &[
            ("district", Some("north")),
            ("filed_at_day", Some("2026-03-02")),
        ],
        9,
    );
    let b = part(
        &[
            ("district", Some("south")),
            ("filed_at_day", Some("2026-03-01")),
        ],
        4,
    );
    let single = optimize_plan(&t, &l, &[a.clone(), b.clone()], 96 << 20, false).unwrap();
    assert_eq!(single.steps[0].targets, vec![b.values.clone()]);
    assert_eq!(single.steps[1].targets, vec![a.values.clone()]);
    let grouped = optimize_plan(&t, &l, &[a.clone(), b.clone()], 96 << 20, true).unwrap();
    assert_eq!(
        grouped.steps[0].targets,
        vec![b.values.clone(), a.values.clone()]
    );
    // A partial spec (a subset of the fields) targets every partition it matches.
    let partial = part(&[("district", Some("north"))], 13);
    let plan = optimize_plan(&t, &l, std::slice::from_ref(&partial), 96 << 20, false).unwrap();
    assert_eq!(plan.steps[0].targets, vec![partial.values]);
    assert!(
        table_plan(&t, Procedure::OptimizeManifests).steps[0]
            .targets
            .is_empty()
    );
}

#[test]
fn a_whole_table_plan_says_what_it_will_rewrite() {
    // An unpartitioned table: its one row is the whole table; the confirmation must not
    // say "0 small files" for a table that holds 40.
    let t = TableRef::new("iceberg", "zoning", "inspections");
    let whole = part(&[], 40);
    let plan = optimize_plan(
        &t,
        &TableLayout::default(),
        std::slice::from_ref(&whole),
        96 << 20,
        false,
    )
    .unwrap();
    assert_eq!(plan.steps.len(), 1);
    assert!(
        !plan.steps[0].sql.contains("WHERE"),
        "{}",
        plan.steps[0].sql
    );
    assert_eq!(plan.steps[0].partition, None);
    assert_eq!(plan.files(), whole.small_files);
    assert_eq!(plan.bytes(), whole.total_bytes);
    assert!(
        plan.summary().contains("the whole table"),
        "{}",
        plan.summary()
    );
    assert!(
        plan.summary()
            .contains(&format!("{} small files", whole.small_files)),
        "{}",
        plan.summary()
    );
    // Drafted without reading the table (floe maintain on the whole table): no counts,
    // and the summary says so instead of claiming 0.
    let blind = optimize_plan(&t, &TableLayout::default(), &[], 96 << 20, false).unwrap();
    assert!(
        blind.summary().contains("files not counted"),
        "{}",
        blind.summary()
    );
}

#[test]
fn identity_timestamps_with_zone_keep_their_microseconds() {
    let layout = TableLayout {
        columns: vec![("tstz".into(), "timestamp(6) with time zone".into())],
        partitioning: vec![parse_partition_entry("tstz").unwrap()],
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let at = chrono::DateTime::parse_from_rfc3339("2026-11-05T11:15:00.123456Z")
        .unwrap()
        .to_utc();
    let text = layout.partitioning[0]
        .transform
        .render(&Value::TimestampTz(at, "UTC".into()));
    assert_eq!(text, "2026-11-05 11:15:00.123456 UTC");
    let values = vec![("tstz".to_string(), Some(text))];
    assert_eq!(
        files_partition_predicate(&layout, &values).unwrap(),
        "f.partition.\"tstz\" = TIMESTAMP '2026-11-05 11:15:00.123456 UTC'"
    );
    let p = PartitionStats {
        values,
        ..part(&[], 3)
    };
    assert_eq!(
        partition_predicate(&layout, &p).unwrap(),
        "\"tstz\" = TIMESTAMP '2026-11-05 11:15:00.123456 UTC'"
    );
}

#[test]
fn partitions_of_a_table_with_several_live_specs_are_selected_by_their_own_path() {
    let (t, mut layout) = documents();
    assert!(!layout.mixed_specs());
    assert_eq!(
        spec_fields_from_path("district=a%2Fb/filed_at_day=2026-03-02").unwrap(),
        vec!["district".to_string(), "filed_at_day".to_string()]
    );
    assert!(spec_fields_from_path("district").is_err());
    layout.live_specs = vec![
        (0, vec!["district".into()]),
        (1, vec!["district".into(), "filed_at_day".into()]),
    ];
    assert!(layout.mixed_specs());
    let mut old = part(&[("district", Some("north")), ("filed_at_day", None)], 3);
    old.spec_id = Some(0);
    let mut cur = part(
        &[
            ("district", Some("north")),
            ("filed_at_day", Some("2026-03-02")),
        ],
        2,
    );
    cur.spec_id = Some(1);
    let plan = optimize_plan(&t, &layout, &[old.clone(), cur.clone()], 1000, false).unwrap();
    let sqls: Vec<&str> = plan.steps.iter().map(|s| s.sql.as_str()).collect();
    assert!(
        sqls.iter()
            .any(|s| s.ends_with(r#"WHERE "$partition" = 'district=north'"#)),
        "{plan}"
    );
    assert!(
        sqls.iter().any(
            |s| s.ends_with(r#"WHERE "$partition" = 'district=north/filed_at_day=2026-03-02'"#)
        ),
        "{plan}"
    );
    assert!(plan.steps.iter().all(|s| s.spec_id.is_some()));
    assert!(
        plan.notes
            .iter()
            .any(|n| n.contains("district=north (spec 0) belongs to an earlier")),
        "{plan}"
    );
    // Grouped: never two specs in one statement.
    let grouped = optimize_plan(&t, &layout, &[old.clone(), cur], 1000, true).unwrap();
    assert_eq!(grouped.steps.len(), 2, "{grouped}");
    // A spec no longer live, or a partial spec over a field spec 0 lacks: refused.
    old.spec_id = Some(7);
    assert!(
        optimize_plan(&t, &layout, &[old], 1000, false)
            .unwrap_err()
            .to_string()
            .contains("spec 7")
    );
    let partial = part(&[("filed_at_day", Some("2026-03-02"))], 2);
    let err = optimize_plan(&t, &layout, &[partial], 1000, false).unwrap_err();
    assert!(matches!(err, PlanRefusal::NotInEverySpec { .. }), "{err:?}");
    assert!(err.to_string().contains("not in every one"), "{err}");
}

/// A coordinator whose writers hold fewer partitions than a group: statements of at
/// most that many.
#[test]
fn grouped_statements_stay_within_the_writers_limit() {
    let t = TableRef::new("iceberg", "sales", "orders");
    let l = TableLayout {
        columns: vec![("region".into(), "varchar".into())],
        partitioning: vec![parse_partition_entry("region").unwrap()],
        live_specs: Vec::new(),
        format: Default::default(),
    };
    let parts: Vec<PartitionStats> = (0..107)
        .map(|i| PartitionStats {
            values: vec![("region".into(), Some(format!("r{i:03}")))],
            data_files: 3,
            small_files: 3,
            total_bytes: 3000,
            records: 30,
            min_file: 900,
            max_file: 1100,
            delete_files: 0,
            oldest_small_file_at: None,
            spec_id: None,
        })
        .collect();
    let plan = optimize_plan_within(&t, &l, &parts, 96 << 20, true, 20).unwrap();
    assert_eq!(plan.steps.len(), 107usize.div_ceil(20));
    assert!(plan.steps.iter().all(|s| s.targets.len() <= 20));
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, true).unwrap();
    assert_eq!(plan.steps.len(), 107usize.div_ceil(MAX_GROUP));
    assert_eq!(plan.files(), 321);
}

fn delta_layout(columns: &[(&str, &str)], partitioned_by: &str) -> TableLayout {
    let text = format!(
        "CREATE TABLE delta.sales.orders (\n   x bigint\n)\nWITH (\n   location = 's3://lake/x',\n   partitioned_by = ARRAY[{partitioned_by}]\n)"
    );
    TableLayout {
        columns: columns
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect(),
        partitioning: delta_partitioning_from_show_create(&text).unwrap(),
        live_specs: Vec::new(),
        format: crate::lakehouse::delta::TableFormat::Delta,
    }
}

#[test]
fn a_delta_tables_partitioning_is_its_partitioned_by_columns_each_by_identity() {
    let l = delta_layout(&[("region", "varchar")], "'region', 'day'");
    assert_eq!(
        l.partitioning
            .iter()
            .map(|f| (f.name.as_str(), f.source.as_str(), f.transform.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("region", "region", Transform::Identity),
            ("day", "day", Transform::Identity)
        ]
    );
    assert!(
        delta_partitioning_from_show_create("CREATE TABLE t (\n   x bigint\n)")
            .unwrap()
            .is_empty(),
        "unpartitioned"
    );
    // (a column named like a transform is a column)
    let l = delta_layout(&[("year", "integer")], "'year'");
    assert_eq!(l.partitioning[0].transform, Transform::Identity);
}

#[test]
fn a_delta_plan_groups_one_columns_partitions_in_an_in_list_and_never_uses_the_partition_path() {
    let t = TableRef::new("delta", "sales", "orders");
    let l = delta_layout(&[("region", "varchar"), ("day", "date")], "'region'");
    let parts = vec![
        part(&[("region", Some("emea"))], 4),
        part(&[("region", Some("o'hare"))], 3),
        part(&[("region", None)], 2),
    ];
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, true).unwrap();
    let sql: Vec<&str> = plan.steps.iter().map(|s| s.sql.as_str()).collect();
    assert_eq!(
        sql,
        vec![
            "ALTER TABLE \"delta\".\"sales\".\"orders\" EXECUTE optimize(file_size_threshold => '96MB') WHERE \"region\" IN ('emea', 'o''hare')",
            "ALTER TABLE \"delta\".\"sales\".\"orders\" EXECUTE optimize(file_size_threshold => '96MB') WHERE \"region\" IS NULL",
        ]
    );
    assert_eq!(plan.steps[0].targets.len(), 2);
    assert_eq!(plan.steps[0].small_files, 7);
    // Not grouped: a statement a partition.
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, false).unwrap();
    assert_eq!(plan.steps.len(), 3);
    assert!(
        plan.steps
            .iter()
            .any(|s| s.sql.ends_with("WHERE \"region\" = 'emea'")),
        "{plan}"
    );
    // Two columns: Delta takes no disjunction over both, so a statement a partition,
    // grouped or not, each by its typed values.
    let l = delta_layout(&[("region", "varchar"), ("day", "date")], "'region', 'day'");
    let parts = vec![
        part(&[("region", Some("emea")), ("day", Some("2026-12-01"))], 4),
        part(&[("region", Some("amer")), ("day", Some("2026-12-02"))], 4),
    ];
    let plan = optimize_plan(&t, &l, &parts, 96 << 20, true).unwrap();
    assert_eq!(plan.steps.len(), 2, "{plan}");
    assert!(
        plan.steps
            .iter()
            .all(|s| !s.sql.contains("$partition") && s.sql.contains("\"day\" = DATE '")),
        "{plan}"
    );
}

#[test]
fn a_vacuum_is_a_call_of_the_tables_catalog_with_its_names_and_retention_quoted() {
    let t = TableRef::new("delta lake", "o'sales", "orders");
    let plan = table_plan(
        &t,
        Procedure::Vacuum {
            retention_secs: 7 * 86_400,
        },
    );
    assert_eq!(
        plan.steps[0].sql,
        "CALL \"delta lake\".system.vacuum('o''sales', 'orders', '7d')"
    );
    assert_eq!(
        plan.summary(),
        format!("vacuum {t}: remove the files no version of the last 7d references")
    );
}
