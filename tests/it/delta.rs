//! A Delta Lake catalog beside the Iceberg ones, on the lab's real Trino 476 (the only
//! release whose Delta Lake plugin is served): its tables, written by delta-rs and dated
//! as production tables are, listed and read the Delta way (`$partitions`, `$history`;
//! an unpartitioned table's files from their hidden columns), judged by the same rules.

use crate::common;

use chrono::Utc;
use common::{lab, user};
use floe::health::{HealthConfig, Rule, Severity, evaluate};
use floe::lakehouse::delta::TableFormat;
use floe::lakehouse::model::{SnapshotOperation, TableRef};
use floe::lakehouse::queries::Lakehouse;
use floe::trino::Client;
use serde_json::Value;

/// The lab's Delta Lake catalog and its expected.json.
fn delta() -> (String, Value) {
    let d = &lab().v["trino"]["delta"];
    let catalog = d["catalog"]
        .as_str()
        .expect("lab.json trino.delta: the primary real Trino serves a Delta Lake catalog")
        .to_string();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(d["expected"].as_str().unwrap()).unwrap())
            .unwrap();
    (catalog, expected)
}

fn lake(who: &str, catalog: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &user(who))).unwrap(),
        catalog,
        HealthConfig::default(),
    )
}

#[tokio::test]
async fn a_delta_catalogs_tables_are_listed_read_and_judged_by_the_same_rules() {
    let (catalog, expected) = delta();
    let u = "delta_read";
    let lake = lake(u, &catalog);
    lake.connect().await.unwrap();
    let tables = lake.discover(&[], &[]).await.unwrap();
    assert_eq!(
        lake.format(),
        TableFormat::Delta,
        "learned from the catalog's connector"
    );
    let names: Vec<String> = tables
        .iter()
        .map(|t| format!("{}.{}", t.schema, t.table))
        .collect();
    for name in expected["tables"].as_object().unwrap().keys() {
        assert!(names.contains(name), "{name} listed: {names:?}");
    }
    let cfg = HealthConfig::default();
    let now = Utc::now();
    let surveys = lake.survey(&tables).await;
    for (t, s) in surveys {
        let key = format!("{}.{}", t.schema, t.table);
        let Some(want) = expected["tables"].get(&key) else {
            continue;
        };
        let st = s.unwrap_or_else(|e| panic!("{t}: {e}")).stats(&cfg.scan());
        assert_eq!(
            (st.data_files, st.small_files, st.partitions),
            (
                want["data_files"].as_u64().unwrap(),
                want["small_files"].as_u64().unwrap(),
                want["partitions"].as_u64().unwrap()
            ),
            "{key}: {st:?}"
        );
        assert_eq!(
            st.last_compaction.map(|t| t.timestamp_millis()),
            want["last_optimize_ms"].as_i64(),
            "{key}: the newest OPTIMIZE"
        );
        let h = evaluate(&st, None, &cfg, now);
        let rules: Vec<(Rule, Severity)> =
            h.findings.iter().map(|f| (f.rule, f.severity)).collect();
        match key.as_str() {
            "sales.orders" => {
                // (a WARNING: 45 files of 78 KB in all cost a reader little)
                assert!(
                    rules.contains(&(Rule::CompactionStale, Severity::Warning)),
                    "stale OPTIMIZE, small files waiting: {h:?}"
                );
                let f = h
                    .findings
                    .iter()
                    .find(|f| f.rule == Rule::CompactionStale)
                    .unwrap();
                assert!(
                    f.message.contains("last compaction 12d ago"),
                    "{}",
                    f.message
                );
            }
            "web.clicks" => assert!(
                rules.iter().any(|(r, _)| *r == Rule::NeverCompacted),
                "never optimized: {h:?}"
            ),
            "sales.customers" => assert!(
                h.findings.iter().all(|f| f.severity < Severity::Warning),
                "{h:?}"
            ),
            _ => {}
        }
    }
    // Read from the metadata tables; the unpartitioned ones from their files' hidden
    // columns, and nothing else.
    let sent = lab().real_queries_of(&user(u)).await;
    for q in &sent {
        let sql = q["sql"].as_str().unwrap_or("");
        assert!(
            sql.contains("$partitions")
                || sql.contains("$history")
                || sql.contains("\"$path\"")
                || sql.contains("information_schema")
                || sql.contains("iceberg_tables")
                || sql.contains("system.metadata.catalogs"),
            "an unexpected read: {sql}"
        );
    }
    assert!(
        sent.iter()
            .filter(|q| q["sql"].as_str().unwrap_or("").contains("$partitions"))
            .count()
            <= 1,
        "the fleet's partitions in one statement"
    );
}

#[tokio::test]
async fn a_delta_tables_partitions_and_history_fill_the_detail_tabs() {
    let (catalog, expected) = delta();
    let lake = lake("delta_detail", &catalog);
    lake.connect().await.unwrap();
    lake.discover(&[], &[]).await.unwrap();
    let t = TableRef::new(&catalog, "sales", "orders");
    let parts = lake.partitions(&t).await.unwrap();
    assert_eq!(
        parts.partitions.len() as u64,
        expected["tables"]["sales.orders"]["partitions"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(parts.layout_fields, vec!["region".to_string()]);
    assert!(
        parts
            .partitions
            .iter()
            .all(|p| p.small_files == p.data_files && p.data_files > 0)
    );
    let snaps = lake.snapshots(&t).await.unwrap();
    assert_eq!(
        snaps.len() as u64,
        expected["tables"]["sales.orders"]["version"]
            .as_u64()
            .unwrap()
            + 1
    );
    assert_eq!(
        snaps.iter().filter(|s| s.is_compaction()).count(),
        1,
        "one OPTIMIZE"
    );
    assert!(
        snaps
            .iter()
            .filter(|s| !s.is_compaction())
            .all(|s| s.operation == SnapshotOperation::Append)
    );
    assert!(
        snaps
            .windows(2)
            .all(|w| w[0].committed_at <= w[1].committed_at),
        "oldest first"
    );
}
