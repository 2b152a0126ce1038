use super::*;

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
