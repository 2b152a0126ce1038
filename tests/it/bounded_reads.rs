//! What floe reads of one table is bounded however long its history: the real Trino
//! decides what a LIMIT returns and what the aggregates count.

use crate::common;

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
        "t_trust_snaps",
        format!("history_{}", std::process::id()),
    );
    for q in [
        "CREATE SCHEMA IF NOT EXISTS iceberg.t_trust_snaps".to_string(),
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

#[tokio::test]
async fn a_small_file_whose_snapshot_expired_has_a_lower_bound_age() {
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), "floe")).unwrap(),
        "iceberg",
        HealthConfig::default(),
    );
    let t = TableRef::new(
        "iceberg",
        "t_trust_expired",
        format!("expired_{}", std::process::id()),
    );
    for q in [
        "CREATE SCHEMA IF NOT EXISTS iceberg.t_trust_expired".to_string(),
        format!("DROP TABLE IF EXISTS {}", t.sql()),
        format!(
            "CREATE TABLE {} (id bigint, k varchar) WITH (partitioning = ARRAY['k'])",
            t.sql()
        ),
        format!("INSERT INTO {} VALUES (1, 'a')", t.sql()),
        format!("INSERT INTO {} VALUES (2, 'a')", t.sql()),
    ] {
        lake.client.query(&q).await.unwrap();
    }
    // Two files: too few for a verdict, so a refresh reads no more than the survey; the
    // file read is what dates them, asked here directly.
    let files = |lake: &Lakehouse, t: &TableRef| {
        let (lake, t) = (lake.clone(), t.clone());
        async move {
            let (_, survey) = lake.survey(std::slice::from_ref(&t)).await.pop().unwrap();
            lake.file_stats(&t, &survey.unwrap().stats).await.unwrap()
        }
    };
    let before = files(&lake, &t).await;
    assert!(before.oldest_small_file_at.is_some(), "{before:?}");
    assert!(
        !before.oldest_small_is_lower_bound,
        "every file's snapshot is there"
    );
    // Expire every snapshot but the current one: the files stay, their snapshots go.
    lake.client
        .execute(
            &format!(
                "ALTER TABLE {} EXECUTE expire_snapshots(retention_threshold => '0s')",
                t.sql()
            ),
            floe::trino::QueryOptions {
                session: vec![("iceberg.expire_snapshots_min_retention".into(), "0s".into())],
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let after = files(&lake, &t).await;
    assert_eq!(after.snapshots, 1, "{after:?}");
    assert_eq!(after.small_files, 2);
    assert!(
        after.oldest_small_is_lower_bound,
        "the first file's snapshot expired: its age is a lower bound ({after:?})"
    );
}

#[tokio::test]
async fn an_unpartitioned_table_made_by_trino_is_read_not_unknown() {
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), "floe")).unwrap(),
        "iceberg",
        HealthConfig::default(),
    );
    let t = TableRef::new(
        "iceberg",
        "t_trust_flat",
        format!("flat_{}", std::process::id()),
    );
    for q in [
        "CREATE SCHEMA IF NOT EXISTS iceberg.t_trust_flat".to_string(),
        format!("DROP TABLE IF EXISTS {}", t.sql()),
        format!("CREATE TABLE {} (id bigint)", t.sql()),
        format!("INSERT INTO {} VALUES (1)", t.sql()),
        format!("INSERT INTO {} VALUES (2)", t.sql()),
    ] {
        lake.client.query(&q).await.unwrap();
    }
    let stats = lake
        .table_stats(&t)
        .await
        .unwrap_or_else(|e| panic!("an unpartitioned table reads: {e}"));
    assert_eq!(stats.data_files, 2);
    assert!(!stats.partitioned);
    let parts = lake.partitions(&t).await.unwrap();
    assert_eq!(parts.partitions.len(), 1, "{parts:?}");
}

#[tokio::test]
async fn a_long_history_travels_as_a_bounded_row_and_weighs_as_the_whole_one() {
    let client = || Client::new(lab().config(&lab().trino_url(), "floe")).unwrap();
    // Every snapshot past the retention but the current one.
    let health = HealthConfig {
        snapshot_retention: std::time::Duration::from_secs(1),
        ..HealthConfig::default()
    };
    let whole = Lakehouse::new(client(), "iceberg", health.clone());
    let bounded = Lakehouse::new(
        client(),
        "iceberg",
        HealthConfig {
            trend_limit: 4,
            ..health.clone()
        },
    );
    let t = TableRef::new(
        "iceberg",
        "t_trust_trend",
        format!("trend_{}", std::process::id()),
    );
    for q in [
        "CREATE SCHEMA IF NOT EXISTS iceberg.t_trust_trend".to_string(),
        format!("DROP TABLE IF EXISTS {}", t.sql()),
        format!(
            "CREATE TABLE {} (id bigint, k varchar) WITH (partitioning = ARRAY['k'])",
            t.sql()
        ),
    ] {
        whole.client.query(&q).await.unwrap();
    }
    // Eight small files, compacted to one, then three more: the compaction's drop ends up
    // among the summarised snapshots.
    for i in 0..8 {
        whole
            .client
            .query(&format!("INSERT INTO {} VALUES ({i}, 'a')", t.sql()))
            .await
            .unwrap();
    }
    whole
        .client
        .query(&format!("ALTER TABLE {} EXECUTE optimize", t.sql()))
        .await
        .unwrap();
    for i in 0..3 {
        whole
            .client
            .query(&format!("INSERT INTO {} VALUES ({i}, 'b')", t.sql()))
            .await
            .unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let all = whole.table_stats(&t).await.unwrap();
    let part = bounded.table_stats(&t).await.unwrap();
    assert!(all.trend_tail.is_none(), "{all:?}");
    assert!(all.trend.len() >= 12, "{all:?}");
    assert_eq!(
        part.trend.len(),
        4,
        "only the newest four one by one: {part:?}"
    );
    assert_eq!(part.trend[..], all.trend[all.trend.len() - 4..]);
    let tail = part.trend_tail.expect("the older snapshots summarised");
    assert_eq!(tail.snapshots as usize, all.trend.len() - 4);
    assert_eq!(tail.newest, all.trend[all.trend.len() - 5].0);
    assert_eq!(part.snapshots, all.snapshots, "the count is every snapshot");
    let now = chrono::Utc::now();
    let cost = floe::health::retention_cost(&all, &health, now).unwrap();
    assert!(cost.pinned_files >= 7, "the compaction's drop: {cost:?}");
    assert_eq!(
        floe::health::retention_cost(&part, &health, now),
        Some(cost),
        "the summary weighs the old snapshots as the whole history does"
    );
    assert_eq!(
        floe::health::evaluate(&part, None, &health, now).findings,
        floe::health::evaluate(&all, None, &health, now).findings
    );
}
