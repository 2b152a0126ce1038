//! What floe reads of one table is bounded however long its history: the real Trino
//! decides what a LIMIT returns and what the aggregates count.

mod common;

use common::lab;
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::trino::Client;

#[tokio::test]
async fn the_snapshots_read_are_the_newest_few_while_the_verdict_counts_them_all() {
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), "floe")).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
    .with_snapshot_limit(5);
    let t = TableRef::new(
        "iceberg",
        "t_trust",
        format!("history_{}", std::process::id()),
    );
    for q in [
        "CREATE SCHEMA IF NOT EXISTS iceberg.t_trust".to_string(),
        format!("DROP TABLE IF EXISTS {}", t.sql()),
        format!(
            "CREATE TABLE {} (id bigint, k varchar) WITH (partitioning = ARRAY['k'])",
            t.sql()
        ),
    ] {
        lake.client.query(&q).await.unwrap();
    }
    for i in 0..12 {
        lake.client
            .query(&format!("INSERT INTO {} VALUES ({i}, 'a')", t.sql()))
            .await
            .unwrap();
    }
    let all = lake
        .client
        .query(&format!(
            "SELECT snapshot_id FROM {} ORDER BY committed_at",
            t.meta("snapshots")
        ))
        .await
        .unwrap();
    let ids: Vec<i64> = all
        .rows
        .iter()
        .map(|r| r.i64("snapshot_id").unwrap())
        .collect();
    // Twelve inserts, and the snapshot CREATE TABLE commits.
    let n = ids.len();
    assert!(n >= 12, "{n}");
    let read = lake.snapshots(&t).await.unwrap();
    let got: Vec<i64> = read.iter().map(|s| s.snapshot_id).collect();
    assert_eq!(got, ids[n - 5..].to_vec(), "the newest five, oldest first");
    let stats = lake.table_stats(&t).await.unwrap();
    assert_eq!(
        stats.snapshots, n as u64,
        "the verdict still counts every snapshot"
    );
}
