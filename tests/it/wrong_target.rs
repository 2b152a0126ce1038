//! A maintenance plan touches exactly what its confirmation shows: tables made through the
//! real Trino in a schema of their own, whose partition specs, NULLs and value types are
//! the coordinator's.

use crate::common;

use common::lab;
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::plan::optimize_plan;
use floe::lakehouse::queries::Lakehouse;
use floe::mutation::audit::AuditLog;
use floe::mutation::audit::RunContext;
use floe::mutation::draft::select_partitions;
use floe::mutation::run::{StepEvent, run_plan};
use floe::trino::Client;
use tokio_util::sync::CancellationToken;

const SCHEMA: &str = "t_trust";

pub(crate) fn lakehouse() -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), "floe")).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

pub(crate) async fn sql(lake: &Lakehouse, q: &str) {
    lake.client
        .query(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// A fresh table `name` in the test schema, created with `columns` and `with`, then
/// filled by one INSERT per entry of `inserts` (each its own data file).
pub(crate) async fn table(
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

pub(crate) fn ctx(name: &str) -> RunContext {
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

pub(crate) fn no_events() -> impl Fn(StepEvent) + Send + Sync {
    |_| {}
}

/// Data files per partition, as `$files` tells them (the partition row's text).
pub(crate) async fn files_by_partition(lake: &Lakehouse, t: &TableRef) -> Vec<(String, u64)> {
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
    let err = optimize_plan(&t, &layout, &a, 96 << 20, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no longer partitioned") && err.contains("region=a"),
        "{err}"
    );
    let chosen = select_partitions(&list.partitions, &["region=a".into()]).unwrap();
    let err = optimize_plan(&t, &layout, &chosen, 96 << 20, true)
        .unwrap_err()
        .to_string();
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
    let err = optimize_plan(&t, &layout, &old, 96 << 20, false)
        .unwrap_err()
        .to_string();
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
    // A grouped statement cannot tell them apart by path: each is planned alone, by
    // its typed predicate.
    let plan = optimize_plan(&t, &layout, &list.partitions, 96 << 20, true).unwrap();
    assert_eq!(plan.steps.len(), 2, "{plan}");
    assert!(
        plan.steps.iter().all(|s| !s.sql.contains("$partition")),
        "{plan}"
    );
    assert!(
        plan.notes[0].starts_with("2 partitions planned alone"),
        "{plan:?}"
    );
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

/// Every live data file of `t`: (spec id, path, partition as JSON text).
async fn files_of(lake: &Lakehouse, t: &TableRef) -> Vec<(i64, String, String)> {
    let out = lake
        .client
        .query(&format!(
            "SELECT spec_id, file_path, json_format(CAST(partition AS json)) AS p FROM {} \
             WHERE content = 0 ORDER BY 2",
            t.meta("files")
        ))
        .await
        .unwrap();
    out.rows
        .iter()
        .map(|r| {
            (
                r.i64("spec_id").unwrap(),
                r.str("file_path").unwrap().to_string(),
                r.str("p").unwrap().to_string(),
            )
        })
        .collect()
}

/// A table partitioned by `region`, two files in each of north and east, then evolved to
/// `region, day(tstz)` with two files in north/2026-11-04 and two in north with a NULL
/// `tstz`: in `$files`, spec 0's north and spec 1's north/NULL read alike.
async fn evolved(lake: &Lakehouse, name: &str) -> TableRef {
    let t = table(
        lake,
        name,
        "id bigint, region varchar, tstz timestamp(6) with time zone",
        "partitioning = ARRAY['region']",
        &[
            "(1, 'north', TIMESTAMP '2026-11-01 10:00:00 UTC')",
            "(2, 'north', TIMESTAMP '2026-11-02 10:00:00 UTC')",
            "(3, 'east', TIMESTAMP '2026-11-01 10:00:00 UTC')",
            "(4, 'east', TIMESTAMP '2026-11-02 10:00:00 UTC')",
        ],
    )
    .await;
    sql(
        lake,
        &format!(
            "ALTER TABLE {} SET PROPERTIES partitioning = ARRAY['region', 'day(tstz)']",
            t.sql()
        ),
    )
    .await;
    for v in [
        "(5, 'north', TIMESTAMP '2026-11-04 10:00:00 UTC')",
        "(6, 'north', TIMESTAMP '2026-11-04 11:00:00 UTC')",
        "(7, 'north', NULL)",
        "(8, 'north', NULL)",
    ] {
        sql(lake, &format!("INSERT INTO {} VALUES {v}", t.sql())).await;
    }
    t
}

#[tokio::test]
async fn a_partition_of_an_earlier_spec_is_optimized_by_its_path_and_nothing_else_is_rewritten() {
    let lake = lakehouse();
    let t = evolved(&lake, "evolved").await;
    let layout = floe::mutation::draft::layout_with_specs(&lake, &t)
        .await
        .unwrap();
    assert_eq!(
        layout.live_specs,
        vec![
            (0, vec!["region".to_string()]),
            (1, vec!["region".to_string(), "tstz_day".to_string()])
        ]
    );
    let list = lake.partitions(&t).await.unwrap();
    let labels: Vec<String> = list.partitions.iter().map(|p| p.label()).collect();
    // Spec 0's north and spec 1's north with a NULL day are two partitions, told apart.
    for want in [
        "region=north/tstz_day IS NULL (spec 0)",
        "region=north/tstz_day IS NULL (spec 1)",
        "region=east/tstz_day IS NULL (spec 0)",
        "region=north/tstz_day=2026-11-04 (spec 1)",
    ] {
        assert!(labels.contains(&want.to_string()), "{want}: {labels:?}");
    }
    // `--partition` names one spec's partition with the label's suffix.
    let old = select_partitions(
        &list.partitions,
        &["region=north/tstz_day IS NULL (spec 0)".into()],
    )
    .unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].data_files, 2);
    let plan = optimize_plan(&t, &layout, &old, 96 << 20, false).unwrap();
    assert_eq!(plan.steps.len(), 1);
    assert!(
        plan.steps[0]
            .sql
            .ends_with(r#"WHERE "$partition" = 'region=north'"#),
        "{plan}"
    );
    // Said before the confirmation: where its rows go.
    let text = plan.to_string();
    assert!(
        text.contains("region=north (spec 0) belongs to an earlier partition spec")
            && text.contains("current partitioning (region, tstz_day)"),
        "{text}"
    );
    let before = files_of(&lake, &t).await;
    let north0: Vec<&String> = before
        .iter()
        .filter(|(s, _, p)| *s == 0 && p.contains(r#""region":"north""#))
        .map(|(_, f, _)| f)
        .collect();
    assert_eq!(north0.len(), 2, "{before:?}");
    let out = run_plan(
        &lake,
        &plan,
        &ctx("evolved"),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    assert!(out[0].ok, "{out:?}");
    // Re-read among spec 0's files only: none left in its north.
    assert_eq!(out[0].files_after, Some(0), "{out:?}");
    let after = files_of(&lake, &t).await;
    // Every other partition's files are where they were, not rewritten.
    for (s, f, p) in &before {
        let rewritten = north0.contains(&f);
        assert_eq!(
            after.iter().any(|(_, g, _)| g == f),
            !rewritten,
            "spec {s} {p} {f}"
        );
    }
    // What was added is spec 1's, in north: the old rows under the current partitioning.
    let added: Vec<&(i64, String, String)> = after
        .iter()
        .filter(|(_, f, _)| !before.iter().any(|(_, g, _)| g == f))
        .collect();
    assert!(!added.is_empty());
    for (s, _, p) in &added {
        assert_eq!(*s, 1, "{p}");
        assert!(
            p == r#"{"region":"north","tstz_day":"2026-11-01"}"#
                || p == r#"{"region":"north","tstz_day":"2026-11-02"}"#,
            "{p}"
        );
    }
}

#[tokio::test]
async fn partitions_of_the_current_spec_beside_an_earlier_one_are_selected_by_path() {
    let lake = lakehouse();
    let t = evolved(&lake, "evolvedcur").await;
    let layout = floe::mutation::draft::layout_with_specs(&lake, &t)
        .await
        .unwrap();
    let list = lake.partitions(&t).await.unwrap();
    // Trino refuses a range on `tstz` while spec 0's files (without day(tstz)) are live:
    // the current spec's partitions go by path too, the NULL day as `null`.
    let chosen = select_partitions(
        &list.partitions,
        &[
            "region=north/tstz_day=2026-11-04".into(),
            "region=north/tstz_day IS NULL (spec 1)".into(),
        ],
    )
    .unwrap();
    assert_eq!(chosen.len(), 2);
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, false).unwrap();
    let sqls: Vec<&str> = plan.steps.iter().map(|s| s.sql.as_str()).collect();
    assert!(
        sqls.iter()
            .any(|s| s.ends_with(r#""$partition" = 'region=north/tstz_day=2026-11-04'"#))
            && sqls
                .iter()
                .any(|s| s.ends_with(r#""$partition" = 'region=north/tstz_day=null'"#)),
        "{plan}"
    );
    assert!(
        !plan.to_string().contains("earlier partition spec"),
        "{plan}"
    );
    let before = files_of(&lake, &t).await;
    let out = run_plan(
        &lake,
        &plan,
        &ctx("evolvedcur"),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    assert!(
        out.iter().all(|o| o.ok && o.files_after == Some(1)),
        "{out:?}"
    );
    let after = files_of(&lake, &t).await;
    // Spec 0's files untouched; spec 1's two partitions hold one file each.
    for (s, f, p) in before.iter().filter(|(s, _, _)| *s == 0) {
        assert!(after.iter().any(|(_, g, _)| g == f), "spec {s} {p}");
    }
    let spec1: Vec<&String> = after
        .iter()
        .filter(|(s, _, _)| *s == 1)
        .map(|(_, _, p)| p)
        .collect();
    assert_eq!(spec1.len(), 2, "{after:?}");
    // A subset of the fields that a live spec lacks is refused before the confirmation;
    // one every live spec has keeps its predicate.
    let day = select_partitions(&list.partitions, &["tstz_day=2026-11-04".into()]).unwrap();
    let err = optimize_plan(&t, &layout, &day, 96 << 20, false)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("not in every one") && err.contains("spec 0: region"),
        "{err}"
    );
    let east = select_partitions(&list.partitions, &["region=east".into()]).unwrap();
    let plan = optimize_plan(&t, &layout, &east, 96 << 20, false).unwrap();
    assert!(
        plan.steps[0].sql.ends_with(r#"WHERE "region" = 'east'"#),
        "{plan}"
    );
}

#[test]
fn the_cli_plans_an_earlier_specs_partition_by_its_path_and_says_where_its_rows_go() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let lake = lakehouse();
    let t = rt.block_on(evolved(&lake, "evolvedcli"));
    let home = std::env::temp_dir().join(format!("floe-wt-cli-{}", std::process::id()));
    let url = lab().trino_url();
    let name = format!("{}.{}", t.schema, t.table);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            url.as_str(),
            "--user",
            "floe",
            "maintain",
            "optimize",
            name.as_str(),
            "--partition",
            "region=north/tstz_day IS NULL (spec 0)",
        ])
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(r#"WHERE "$partition" = 'region=north';"#)
            && text.contains("-- note: region=north (spec 0) belongs to an earlier partition spec"),
        "{text}"
    );
    assert!(text.contains("not run: add --yes"), "{text}");
}
