//! A maintenance plan touches exactly what its confirmation shows: tables made through the
//! real Trino in a schema of their own, whose partition specs, NULLs and value types are
//! the coordinator's.

mod common;

use common::lab;
use floe::health::HealthConfig;
use floe::lakehouse::maintenance::optimize_plan;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::maintain::audit::AuditLog;
use floe::maintain::run::{RunContext, StepEvent, run_plan};
use floe::maintain::select_partitions;
use floe::trino::Client;
use tokio_util::sync::CancellationToken;

const SCHEMA: &str = "t_trust";

fn lakehouse() -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), "floe")).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

async fn sql(lake: &Lakehouse, q: &str) {
    lake.client
        .query(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// A fresh table `name` in the test schema, created with `columns` and `with`, then
/// filled by one INSERT per entry of `inserts` (each its own data file).
async fn table(
    lake: &Lakehouse,
    name: &str,
    columns: &str,
    with: &str,
    inserts: &[&str],
) -> TableRef {
    // A schema of the test's own: two `CREATE SCHEMA IF NOT EXISTS` of one name at once
    // race in the Iceberg JDBC catalog, and one fails with ICEBERG_CATALOG_ERROR.
    let schema = format!("{SCHEMA}_{name}");
    let t = TableRef::new("iceberg", &schema, format!("{name}_{}", std::process::id()));
    sql(
        lake,
        &format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"),
    )
    .await;
    sql(lake, &format!("DROP TABLE IF EXISTS {}", t.sql())).await;
    sql(
        lake,
        &format!("CREATE TABLE {} ({columns}) WITH ({with})", t.sql()),
    )
    .await;
    for values in inserts {
        sql(lake, &format!("INSERT INTO {} VALUES {values}", t.sql())).await;
    }
    t
}

fn ctx(name: &str) -> RunContext {
    let path =
        std::env::temp_dir().join(format!("floe-audit-wt-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    RunContext {
        profile: "lab".into(),
        user: "floe".into(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(path),
    }
}

fn no_events() -> impl Fn(StepEvent) + Send + Sync {
    |_| {}
}

/// Data files per partition, as `$files` tells them (the partition row's text).
async fn files_by_partition(lake: &Lakehouse, t: &TableRef) -> Vec<(String, u64)> {
    let out = lake
        .client
        .query(&format!(
            "SELECT CAST(json_format(CAST(partition AS json)) AS varchar) AS p, count(*) AS n \
             FROM {} GROUP BY 1 ORDER BY 1",
            t.meta("files")
        ))
        .await
        .unwrap();
    out.rows
        .iter()
        .map(|r| (r.str("p").unwrap_or("").to_string(), r.u64("n").unwrap()))
        .collect()
}

#[tokio::test]
async fn partitions_of_a_removed_partitioning_are_refused_before_the_confirmation() {
    let lake = lakehouse();
    let t = table(
        &lake,
        "unspec",
        "id bigint, region varchar",
        "partitioning = ARRAY['region']",
        &["(1, 'a')", "(2, 'a')", "(3, 'b')", "(4, 'b')"],
    )
    .await;
    sql(
        &lake,
        &format!(
            "ALTER TABLE {} SET PROPERTIES partitioning = ARRAY[]",
            t.sql()
        ),
    )
    .await;
    let layout = lake.table_layout(&t).await.unwrap();
    assert!(layout.partitioning.is_empty(), "{layout:?}");
    let list = lake.partitions(&t).await.unwrap();
    let a: Vec<_> = list
        .partitions
        .iter()
        .filter(|p| p.values == vec![("region".to_string(), Some("a".to_string()))])
        .cloned()
        .collect();
    assert_eq!(a.len(), 1, "the old partitions are still listed: {list:?}");
    // From the Partitions tab (marked rows) and from `--partition region=a` alike.
    let err = optimize_plan(&t, &layout, &a, 96 << 20, false).unwrap_err();
    assert!(
        err.contains("no longer partitioned") && err.contains("region=a"),
        "{err}"
    );
    let chosen = select_partitions(&list.partitions, &["region=a".into()]).unwrap();
    let err = optimize_plan(&t, &layout, &chosen, 96 << 20, true).unwrap_err();
    assert!(err.contains("whole table"), "{err}");
    // A spec that changed to other fields: the old field's partitions are refused too.
    sql(
        &lake,
        &format!(
            "ALTER TABLE {} SET PROPERTIES partitioning = ARRAY['bucket(id, 2)']",
            t.sql()
        ),
    )
    .await;
    sql(&lake, &format!("INSERT INTO {} VALUES (5, 'c')", t.sql())).await;
    let fresh = lakehouse();
    let layout = fresh.table_layout(&t).await.unwrap();
    let list = fresh.partitions(&t).await.unwrap();
    let old: Vec<_> = list
        .partitions
        .iter()
        .filter(|p| p.values.iter().any(|(k, v)| k == "region" && v.is_some()))
        .cloned()
        .collect();
    assert!(!old.is_empty(), "{list:?}");
    let err = optimize_plan(&t, &layout, &old, 96 << 20, false).unwrap_err();
    assert!(err.contains("earlier partition spec"), "{err}");
    // Nothing ran: every file is where it was.
    let files: u64 = files_by_partition(&fresh, &t)
        .await
        .iter()
        .map(|(_, n)| n)
        .sum();
    assert_eq!(files, 5);
}

#[tokio::test]
async fn a_null_partition_is_spelled_is_null_and_never_matches_the_string_null() {
    let lake = lakehouse();
    let t = table(
        &lake,
        "nulls",
        "id bigint, region varchar, kind varchar",
        "partitioning = ARRAY['region', 'kind']",
        &[
            "(1, NULL, 'x')",
            "(2, NULL, 'x')",
            "(3, 'null', 'x')",
            "(4, 'null', 'x')",
        ],
    )
    .await;
    let layout = lake.table_layout(&t).await.unwrap();
    let list = lake.partitions(&t).await.unwrap();
    assert_eq!(list.partitions.len(), 2, "{list:?}");
    let labels: Vec<String> = list.partitions.iter().map(|p| p.label()).collect();
    assert!(
        labels.contains(&"region IS NULL/kind=x".to_string())
            && labels.contains(&"region=null/kind=x".to_string()),
        "{labels:?}"
    );
    // The full spec `region=null/kind=x` is the string, and only the string.
    let full = select_partitions(&list.partitions, &["region=null/kind=x".into()]).unwrap();
    assert_eq!(full.len(), 1);
    assert_eq!(full[0].values[0].1.as_deref(), Some("null"));
    // A grouped statement cannot tell them apart by path: refused.
    let err = optimize_plan(&t, &layout, &full, 96 << 20, true).unwrap_err();
    assert!(err.contains("ungrouped"), "{err}");
    // The partial spec `region IS NULL` compacts the NULL partition only.
    let chosen = select_partitions(&list.partitions, &["region IS NULL".into()]).unwrap();
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, false).unwrap();
    assert!(plan.steps[0].sql.contains("\"region\" IS NULL"), "{plan}");
    run_plan(
        &lake,
        &plan,
        &ctx("nulls"),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    let files = files_by_partition(&lake, &t).await;
    assert_eq!(
        files,
        vec![
            (r#"{"region":"null","kind":"x"}"#.to_string(), 2),
            (r#"{"region":null,"kind":"x"}"#.to_string(), 1),
        ],
        "only the NULL partition was rewritten"
    );
    // `region=null` on a partial spec means the string too.
    let s = select_partitions(&list.partitions, &["region=null".into()]).unwrap();
    let plan = optimize_plan(&t, &layout, &s, 96 << 20, false).unwrap();
    assert!(plan.steps[0].sql.contains("\"region\" = 'null'"), "{plan}");
}

#[tokio::test]
async fn a_microsecond_timestamp_partition_is_selected_at_full_precision() {
    let lake = lakehouse();
    let t = table(
        &lake,
        "micros",
        "id bigint, at timestamp(6) with time zone",
        "partitioning = ARRAY['at']",
        &[
            "(1, TIMESTAMP '2026-03-02 10:00:00.123456 UTC')",
            "(2, TIMESTAMP '2026-03-02 10:00:00.123456 UTC')",
            "(3, TIMESTAMP '2026-03-02 10:00:00.123 UTC')",
            "(4, TIMESTAMP '2026-03-02 10:00:00.123 UTC')",
        ],
    )
    .await;
    let layout = lake.table_layout(&t).await.unwrap();
    let list = lake.partitions(&t).await.unwrap();
    let labels: Vec<String> = list.partitions.iter().map(|p| p.label()).collect();
    assert_eq!(labels.len(), 2);
    assert_ne!(labels[0], labels[1], "two partitions read apart");
    let micro: Vec<_> = list
        .partitions
        .iter()
        .filter(|p| p.label().contains(".123456"))
        .cloned()
        .collect();
    assert_eq!(micro.len(), 1, "{labels:?}");
    let plan = optimize_plan(&t, &layout, &micro, 96 << 20, false).unwrap();
    run_plan(
        &lake,
        &plan,
        &ctx("micros"),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    let out = lake
        .client
        .query(&format!(
            "SELECT CAST(partition.at AS varchar) AS at, count(*) AS n FROM {} GROUP BY 1 ORDER BY 1",
            t.meta("files")
        ))
        .await
        .unwrap();
    let files: Vec<(String, u64)> = out
        .rows
        .iter()
        .map(|r| (r.str("at").unwrap().to_string(), r.u64("n").unwrap()))
        .collect();
    assert_eq!(
        files,
        vec![
            ("2026-03-02 10:00:00.123000 UTC".to_string(), 2),
            ("2026-03-02 10:00:00.123456 UTC".to_string(), 1),
        ],
        "{plan}"
    );
}
