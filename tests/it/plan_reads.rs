//! What `o` on a table reads before its plan, on the real Trino: a table partitioned
//! since its layout was cached is planned by its partitions, and a table spread thin
//! with a NULL partition gets its grouped plan (that partition in a statement of its own).

use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Layout;
use floe::mutation::draft::{MaintenanceKind, Over, draft};
use floe::mutation::run::run_plan;
use tokio_util::sync::CancellationToken;

use crate::wrong_target::{ctx, files_by_partition, lakehouse, no_events, sql, table};

#[tokio::test]
async fn a_table_partitioned_since_its_layout_was_cached_is_planned_by_its_partitions() {
    let lake = lakehouse();
    let t = table(
        &lake,
        "repart",
        "id bigint, region varchar",
        "format = 'PARQUET'",
        &[],
    )
    .await;
    // What the stats cache knew of it: unpartitioned.
    lake.remember_layouts([(t.clone(), Layout::Unpartitioned)]);
    sql(
        &lake,
        &format!(
            "ALTER TABLE {} SET PROPERTIES partitioning = ARRAY['region']",
            t.sql()
        ),
    )
    .await;
    for v in ["(1, 'east')", "(2, 'east')", "(3, 'west')", "(4, 'west')"] {
        sql(&lake, &format!("INSERT INTO {} VALUES {v}", t.sql())).await;
    }
    let d = draft(
        &lake,
        t.clone(),
        MaintenanceKind::Optimize,
        Over::SmallFiles { min_small: 12 },
        None,
    )
    .await
    .unwrap();
    let plan = d.build(d.grouped).unwrap();
    assert_eq!(plan.steps.len(), 1, "{plan}");
    let step = &plan.steps[0];
    assert!(step.sql.contains(" WHERE "), "not the whole table: {plan}");
    assert_eq!((step.files, step.targets.len()), (4, 2), "{plan}");
}

#[tokio::test]
async fn a_table_spread_thin_with_a_null_partition_is_planned_and_optimized() {
    let lake = lakehouse();
    let t: TableRef = table(
        &lake,
        "thinnull",
        "id bigint, region varchar",
        "partitioning = ARRAY['region']",
        &[
            "(1, NULL)",
            "(2, NULL)",
            "(3, 'null')",
            "(4, 'null')",
            "(5, 'east')",
            "(6, 'east')",
        ],
    )
    .await;
    let d = draft(
        &lake,
        t.clone(),
        MaintenanceKind::Optimize,
        Over::SmallFiles { min_small: 12 },
        None,
    )
    .await
    .unwrap();
    assert!(d.grouped, "spread thin: {d:?}");
    let plan = d.build(true).unwrap();
    assert_eq!(plan.steps.len(), 3, "{plan}");
    assert!(
        plan.steps
            .iter()
            .any(|s| s.sql.ends_with("WHERE \"region\" IS NULL")),
        "{plan}"
    );
    run_plan(
        &lake,
        &plan,
        &ctx("thinnull"),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    let files = files_by_partition(&lake, &t).await;
    assert_eq!(
        files,
        vec![
            (r#"{"region":"east"}"#.to_string(), 1),
            (r#"{"region":"null"}"#.to_string(), 1),
            (r#"{"region":null}"#.to_string(), 1),
        ],
        "each partition merged into one file"
    );
}
