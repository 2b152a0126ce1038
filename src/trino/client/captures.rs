//! The decoders against what a real Trino 476 sent: every page `tests/fixtures/record_trino.py`
//! recorded (`tests/fixtures/trino476/`) decoded as the client decodes each page it follows.
//! The lakehouse's own readers of these answers are tested beside them, with `capture` and
//! `rows`.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::decode::decode_page;
use crate::trino::output::QueryProgress;
use crate::trino::types::TrinoType;
use crate::trino::value::{Row, Value};
use crate::trino::wire::{QueryResults, ServerInfo};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trino476")
}

/// A capture: `{"statement", "pages": [...]}`.
pub(crate) fn capture(name: &str) -> Json {
    let path = dir().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn captures() -> Vec<(String, Json)> {
    let mut out = Vec::new();
    let mut todo = vec![dir()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "json")
                && p.file_name() != Some("info.json".as_ref())
            {
                let name = p.strip_prefix(dir()).unwrap().with_extension("");
                out.push((
                    name.display().to_string(),
                    capture(&name.display().to_string()),
                ));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn pages(c: &Json) -> Vec<QueryResults> {
    c["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| serde_json::from_value(p.clone()).unwrap())
        .collect()
}

/// Every row of a capture, each page decoded on its own as the client does.
pub(crate) fn rows(c: &Json) -> Vec<Row> {
    c["pages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| decode_page(&p.to_string()).unwrap().1)
        .collect()
}

#[test]
fn every_captured_page_decodes() {
    let all = captures();
    assert!(all.len() >= 50, "{} captures", all.len());
    for (name, c) in &all {
        let ps = c["pages"].as_array().unwrap();
        assert!(!ps.is_empty(), "{name}");
        for (i, p) in ps.iter().enumerate() {
            let (columns, rows) =
                decode_page(&p.to_string()).unwrap_or_else(|e| panic!("{name} page {i}: {e}"));
            for r in &rows {
                assert_eq!(r.values.len(), columns.len(), "{name} page {i}");
            }
            let page: QueryResults = serde_json::from_value(p.clone()).unwrap();
            // Every page but the last has somewhere to go next; the last ends the query.
            assert_eq!(
                page.next_uri.is_none(),
                i + 1 == ps.len(),
                "{name} page {i}"
            );
        }
        let last: QueryResults = serde_json::from_value(ps.last().unwrap().clone()).unwrap();
        assert!(
            matches!(last.stats.state.as_str(), "FINISHED" | "FAILED"),
            "{name}: {}",
            last.stats.state
        );
        assert_eq!(last.error.is_some(), last.stats.state == "FAILED", "{name}");
    }
    let info: ServerInfo =
        serde_json::from_str(&std::fs::read_to_string(dir().join("info.json")).unwrap()).unwrap();
    assert_eq!(info.version_number(), Some(476));
    assert!(!info.starting);
}

#[test]
fn a_statements_stats_go_from_queued_to_finished() {
    let c = capture("probe");
    let ps = pages(&c);
    assert_eq!(ps[0].stats.state, "QUEUED");
    assert!(ps[0].stats.queued && !ps[0].stats.scheduled);
    assert!(ps[0].columns.is_none() && ps[0].data.is_none());
    let last = ps.last().unwrap();
    assert_eq!(last.stats.state, "FINISHED");
    assert!(last.stats.scheduled);
    assert!(last.stats.total_splits > 0);
    assert_eq!(last.stats.completed_splits, last.stats.total_splits);
    assert!(last.stats.processed_rows > 0 && last.stats.processed_bytes > 0);
    assert!(last.stats.elapsed_time_millis > 0);
    let p = QueryProgress::from_stats(&last.id, &last.info_uri, &last.stats);
    assert_eq!(p.state, "FINISHED");
    assert_eq!(p.percentage, Some(100.0));
    assert!(p.info_uri.unwrap().contains(&last.id));
    // The probe's rows: one per table, by index.
    let r = rows(&c);
    assert_eq!(r.len(), 3);
    let cols: Vec<(&str, &str)> = r[0]
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.type_text.as_str()))
        .collect();
    assert_eq!(
        cols,
        [
            ("i", "integer"),
            ("snapshots", "bigint"),
            ("snapshot_id", "bigint"),
            ("committed_at", "double")
        ]
    );
}

#[test]
fn errors_carry_trinos_name_and_location() {
    for (name, error_name, line, column, message) in [
        ("missing_table", "TABLE_NOT_FOUND", 1, 70, "does not exist"),
        ("syntax_error", "SYNTAX_ERROR", 1, 16, "mismatched input"),
        (
            "missing_partition",
            "COLUMN_NOT_FOUND",
            10,
            37,
            "'f.partition' cannot be resolved",
        ),
        (
            "partitions/unpartitioned",
            "INVALID_COLUMN_REFERENCE",
            10,
            47,
            "'e.data_file.partition' is invalid",
        ),
    ] {
        let ps = pages(&capture(name));
        let e = ps.last().unwrap().error.clone().unwrap();
        assert_eq!(e.error_name, error_name, "{name}");
        assert_eq!(e.error_type, "USER_ERROR", "{name}");
        let loc = e.error_location.unwrap();
        assert_eq!(
            (loc.line_number, loc.column_number),
            (line, column),
            "{name}"
        );
        assert!(e.message.contains(message), "{name}: {}", e.message);
        assert!(
            e.message.starts_with(&format!("line {line}:{column}: ")),
            "{name}: {}",
            e.message
        );
    }
    // A predicate optimize cannot enforce: an internal error, without a location.
    let ps = pages(&capture("execute_unenforceable"));
    let e = ps.last().unwrap().error.clone().unwrap();
    assert_eq!(e.error_name, "GENERIC_INTERNAL_ERROR");
    assert_eq!(
        (e.error_code, e.error_type.as_str()),
        (65536, "INTERNAL_ERROR")
    );
    assert!(e.message.contains("Unexpected FilterNode"), "{}", e.message);
}

#[test]
fn table_procedures_answer_a_rows_column_and_no_row() {
    for name in [
        "execute_optimize",
        "execute_optimize_where",
        "execute_optimize_manifests",
        "execute_expire_snapshots",
        "execute_remove_orphan_files",
    ] {
        let c = capture(name);
        let ps = pages(&c);
        let last = ps.last().unwrap();
        assert_eq!(last.stats.state, "FINISHED", "{name}");
        assert_eq!(
            last.update_type.as_deref(),
            Some("ALTER TABLE EXECUTE"),
            "{name}"
        );
        assert_eq!(last.update_count, None, "{name}");
        let (columns, _) =
            decode_page(&c["pages"].as_array().unwrap().last().unwrap().to_string()).unwrap();
        assert_eq!(columns.len(), 1, "{name}");
        assert_eq!(
            (columns[0].name.as_str(), &columns[0].ty),
            ("rows", &TrinoType::BigInt)
        );
        assert!(rows(&c).is_empty(), "{name}");
    }
    // The optimize wrote files: its stats say so.
    let ps = pages(&capture("execute_optimize"));
    assert!(ps.last().unwrap().stats.physical_written_bytes > 0);
}

#[test]
fn a_cancelled_querys_last_page_says_user_canceled() {
    let c = capture("cancelled");
    assert_eq!(c["delete"]["status"], 204);
    let ps = pages(&c);
    let running = ps.iter().find(|p| p.stats.state == "RUNNING").unwrap();
    assert!(running.partial_cancel_uri.is_some());
    let last = ps.last().unwrap();
    assert_eq!(last.stats.state, "FAILED");
    assert!(last.next_uri.is_none());
    let e = last.error.clone().unwrap();
    assert_eq!(
        (e.error_name.as_str(), e.error_type.as_str()),
        ("USER_CANCELED", "USER_ERROR")
    );
    assert_eq!(e.message, "Query was canceled");
}

/// `$files.partition` / `$entries.data_file.partition` as Trino 476 types each transform,
/// and the values floe renders from them.
#[test]
fn partition_rows_of_every_transform() {
    type ValueCheck = fn(&Value) -> bool;
    let expect: &[(&str, &str, ValueCheck)] = &[
        ("bucketed", "row(id_bucket integer)", |v| {
            matches!(v, Value::Int(0..=3))
        }),
        ("truncated", "row(name_trunc varchar)", |v| {
            v.as_str().is_some_and(|s| s.chars().count() <= 6)
        }),
        ("monthly", "row(ts_month integer)", |v| {
            matches!(v, Value::Int(682))
        }),
        (
            "hourly",
            "row(tstz_hour integer)",
            |v| matches!(v, Value::Int(n) if *n > 490_000),
        ),
        ("yearly", "row(d_year integer)", |v| {
            matches!(v, Value::Int(56))
        }),
        ("by_date", "row(d date)", |v| matches!(v, Value::Date(_))),
        ("by_flag", "row(flag boolean)", |v| {
            matches!(v, Value::Bool(_))
        }),
        (
            "by_amount",
            "row(amount decimal(10, 2))",
            |v| matches!(v, Value::Decimal(s) if s.ends_with(".50")),
        ),
        (
            "by_ts6",
            "row(ts timestamp(6))",
            |v| matches!(v, Value::Timestamp(t) if t.and_utc().timestamp_subsec_micros() == 123_456),
        ),
        (
            "by_tstz6",
            "row(tstz timestamp(6) with time zone)",
            |v| matches!(v, Value::TimestampTz(t, z) if t.timestamp_subsec_micros() == 123_456 && z == "UTC"),
        ),
    ];
    for (table, type_text, value_ok) in expect {
        let c = capture(&format!("partitions/{table}"));
        let r = rows(&c);
        assert!(!r.is_empty(), "{table}");
        let part = &r[0].columns[0];
        assert_eq!(
            (part.name.as_str(), part.type_text.as_str()),
            ("part", *type_text),
            "{table}"
        );
        for row in &r {
            match &row.values[0] {
                Value::Row(fields) => {
                    assert_eq!(fields.len(), 1, "{table}");
                    assert!(value_ok(&fields[0].1), "{table}: {:?}", fields[0]);
                }
                other => panic!("{table}: {other:?}"),
            }
        }
    }
}
