//! The layout readers against what a real Trino 476 sent (the captures of
//! `tests/fixtures/trino476/`, decoded as the client decodes them): the partitioning of
//! `SHOW CREATE TABLE`, and the partition values rendered from `$files.partition`.

use super::{Transform, parse_partition_entry, partitioning_from_show_create};
use crate::trino::Value;
use crate::trino::client::captures::{capture, rows};

/// An identity value on a timestamp with time zone keeps its microseconds when rendered.
#[test]
fn an_identity_timestamp_with_time_zone_keeps_its_microseconds() {
    let r = rows(&capture("partitions/by_tstz6"));
    let Value::Row(f) = &r[0].values[0] else {
        panic!()
    };
    assert!(
        Transform::Identity.render(&f[0].1).ends_with(".123456 UTC"),
        "{:?}",
        f[0].1
    );
}

/// `SHOW CREATE TABLE` of every Trino-written layout: the text floe reads the partitioning
/// from, typed `varchar(<length>)`.
#[test]
fn show_create_table_declares_each_layout() {
    for (table, want) in [
        ("bucketed", vec!["bucket(id, 4)"]),
        ("truncated", vec!["truncate(name, 6)"]),
        ("monthly", vec!["month(ts)"]),
        ("hourly", vec!["hour(tstz)"]),
        ("yearly", vec!["year(d)"]),
        ("by_date", vec!["d"]),
        ("by_flag", vec!["flag"]),
        ("by_amount", vec!["amount"]),
        ("by_ts6", vec!["ts"]),
        ("by_tstz6", vec!["tstz"]),
        ("by_region_day", vec!["region", "day(tstz)"]),
        ("sorted", vec!["region"]),
        ("v1", vec!["region"]),
        ("unpartitioned", vec![]),
        ("evolved", vec!["region", "day(tstz)"]),
        ("unpartitioned_now", vec![]),
        ("with_deletes", vec!["region"]),
        ("mixed_case__q__name", vec!["region"]),
    ] {
        let c = capture(&format!("show_create/{table}"));
        let r = rows(&c);
        assert_eq!(r.len(), 1, "{table}");
        let text = r[0].values[0].as_str().unwrap();
        let col = &r[0].columns[0];
        assert_eq!(col.name, "Create Table");
        assert_eq!(
            col.type_text,
            format!("varchar({})", text.chars().count()),
            "{table}"
        );
        let got: Vec<String> = partitioning_from_show_create(text)
            .unwrap_or_else(|e| panic!("{table}: {e}\n{text}"))
            .iter()
            .map(|f| f.name.clone())
            .collect();
        let expected: Vec<String> = want
            .iter()
            .map(|e| parse_partition_entry(e).unwrap().name)
            .collect();
        assert_eq!(got, expected, "{table}:\n{text}");
    }
    let sorted = rows(&capture("show_create/sorted"));
    assert!(
        sorted[0].values[0]
            .as_str()
            .unwrap()
            .contains("sorted_by = ARRAY['id ASC NULLS FIRST']")
    );
}
