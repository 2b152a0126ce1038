//! Every per-table statement floe sends reads each metadata table once as Trino plans it
//! (`WITH` inlined): the lab counts the scans of each statement (`scans` in
//! `GET /_lab/queries`). The counting is the stand-in's (a real coordinator does not report
//! scans per metadata table), so these tests send their statements there; what the same
//! statements cost the real coordinator is measured by the benchmarks.

use crate::common;

use common::{lab, user};
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::{Lakehouse, Layout, MetaTables, partitions_sql, stats_sql};
use floe::trino::Client;
use serde_json::Value;

fn lakehouse(url: &str, user: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(url, user)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

/// Every metadata table a statement of `user` read was read once; returns how many
/// statements named at least one metadata table.
async fn assert_one_scan_each(user: &str) -> usize {
    let queries = lab().queries_of(user).await;
    let mut counted = 0;
    for q in &queries {
        let scans = q["scans"].as_object().cloned().unwrap_or_default();
        let meta: Vec<(&String, &Value)> = scans.iter().filter(|(k, _)| k.contains('$')).collect();
        if meta.is_empty() {
            continue;
        }
        counted += 1;
        for (table, n) in meta {
            assert_eq!(
                n.as_u64(),
                Some(1),
                "{table} scanned {n} times by:\n{}",
                q["sql"].as_str().unwrap_or("")
            );
        }
    }
    counted
}

fn documents() -> TableRef {
    TableRef::new("iceberg", "zoning", "documents")
}

#[tokio::test]
async fn floes_reads_of_a_table_scan_each_metadata_table_once() {
    let u = user("scans_reads");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    lake.connect().await.unwrap();
    let t = documents();
    let stats = lake.table_stats(&t).await.unwrap();
    assert!(stats.data_files > 0);
    let parts = lake.partitions(&t).await.unwrap();
    assert!(!parts.partitions.is_empty());
    assert!(!lake.snapshots(&t).await.unwrap().is_empty());
    let p = &parts.partitions[0];
    let (files, _) = lake
        .recount(&t, std::slice::from_ref(&p.values), 96 << 20)
        .await
        .unwrap();
    assert_eq!(files, p.data_files);
    // An unpartitioned table: the first form fails on `partition`, the second runs.
    let staging = TableRef::new("iceberg", "zoning", "staging");
    lake.table_stats(&staging).await.unwrap();
    lake.partitions(&staging).await.unwrap();

    // The change probe: many tables' `$metadata_log_entries` in one statement, each read
    // once (a metadata-only read: every commit writes a metadata file, data or not).
    let probed = lake
        .probe(&[
            documents(),
            staging.clone(),
            TableRef::new("iceberg", "zoning", "parcels"),
        ])
        .await;
    assert_eq!(probed.len(), 3);
    assert!(probed.iter().all(|(_, r)| r.is_ok()), "{probed:?}");

    let queries = lab().queries_of(&u).await;
    let sql: Vec<&str> = queries.iter().filter_map(|q| q["sql"].as_str()).collect();
    assert!(sql.iter().any(|s| s.contains("$entries")), "{sql:#?}");
    assert!(
        queries
            .iter()
            .any(|q| q["scans"].as_object().is_some_and(|m| m
                .keys()
                .filter(|k| k.ends_with("$metadata_log_entries"))
                .count()
                == 3)),
        "the probe read three tables' metadata logs in one statement: {sql:#?}"
    );
    assert!(sql.iter().any(|s| s.contains("$manifests")));
    assert!(sql.iter().any(|s| s.contains("$metadata_log_entries")));
    assert!(assert_one_scan_each(&u).await >= 8);
}

#[tokio::test]
async fn every_statement_form_scans_each_metadata_table_once() {
    let u = user("scans_forms");
    let client = Client::new(lab().config(&lab().stand_in_url(), &u)).unwrap();
    let h = floe::lakehouse::scan::ScanParams::default();
    let metas = [
        MetaTables::ALL,
        MetaTables {
            entries: false,
            metadata_log: true,
            file_times: false,
        },
        MetaTables {
            entries: false,
            metadata_log: false,
            file_times: false,
        },
    ];
    let staging = TableRef::new("iceberg", "zoning", "staging");
    let mut n = 0;
    for meta in metas {
        for (t, layout) in [
            (documents(), Layout::PartitionColumn),
            (documents(), Layout::Directory),
            (staging.clone(), Layout::Unpartitioned),
        ] {
            for sql in [
                stats_sql(&t, &h, layout, meta),
                partitions_sql(&t, &h, layout, meta),
            ] {
                client
                    .query(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("{e}\n{sql}"));
                n += 1;
            }
        }
    }
    assert_eq!(assert_one_scan_each(&u).await, n);
}

#[tokio::test]
async fn an_older_server_without_entries_is_read_once_per_table_too() {
    let u = user("scans_v451");
    let lake = lakehouse(&lab().listener("v451"), &u);
    lake.connect().await.unwrap();
    assert!(!lake.meta_tables().entries);
    let t = documents();
    let stats = lake.table_stats(&t).await.unwrap();
    assert!(stats.data_files > 0);
    assert_eq!(stats.oldest_small_file_at, None, "no $entries on 451");
    assert!(
        stats.metadata_files.is_some(),
        "451 has $metadata_log_entries"
    );
    lake.partitions(&t).await.unwrap();
    let queries = lab().queries_of(&u).await;
    assert!(
        queries
            .iter()
            .all(|q| !q["sql"].as_str().unwrap_or("").contains("$entries"))
    );
    assert!(assert_one_scan_each(&u).await >= 2);
}

/// A first read of the tables discovery listed: one survey over `$snapshots` alone, then
/// each table's layout learned from its `$manifests`, read once a table (with its target,
/// several tables a statement): no statement fails on an unpartitioned table whose
/// manifests tell (one without any, an empty table, is learned by its first statement as
/// before).
#[tokio::test]
async fn a_listed_fleet_reads_each_tables_manifests_once_and_none_fails() {
    let u = user("scans_layouts");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    lake.connect().await.unwrap();
    let tables = lake.discover(&["zoning".to_string()], &[]).await.unwrap();
    assert!(tables.len() >= 2, "{tables:?}");
    // The survey of the listing learns every layout, then each table's files are read.
    let mut read = Vec::new();
    for (t, survey) in lake.survey(&tables).await {
        let survey = survey.unwrap();
        let s = lake.file_stats(&t, &survey.stats).await.unwrap();
        read.push((t.table.clone(), s.partitioned, s.snapshots));
    }
    assert!(
        read.iter().any(|(n, p, _)| n == "documents" && *p),
        "{read:?}"
    );
    let queries = lab().queries_of(&u).await;
    let sqls: Vec<&str> = queries.iter().filter_map(|q| q["sql"].as_str()).collect();
    // The survey reads each table's `$snapshots` rows and its `$properties` (the current
    // snapshot and the target) in one statement.
    let is_survey = |s: &str| s.contains(" AS history") || s.contains("parent_id, summary,");
    let surveys: Vec<&&str> = sqls.iter().filter(|s| is_survey(s)).collect();
    assert_eq!(surveys.len(), 1, "{surveys:#?}");
    assert_eq!(surveys[0].matches("$snapshots\"").count(), tables.len());
    assert!(!surveys[0].contains("$manifests"), "{}", surveys[0]);
    for t in &tables {
        for meta in ["manifests", "properties"] {
            let name = format!("\"{}${meta}\"", t.table);
            let reads: usize = sqls.iter().map(|s| s.matches(&name).count()).sum();
            assert!(reads <= 1, "{t}: its ${meta} read {reads} times: {sqls:#?}");
        }
    }
    let meta_reads = sqls
        .iter()
        .filter(|s| (s.contains("$properties\"") || s.contains("$manifests\"")) && !is_survey(s))
        .count();
    assert!(
        sqls.iter().any(|s| s.contains("\"documents$manifests\"")),
        "the layout of documents is learned from its manifests: {sqls:#?}"
    );
    for q in queries.iter().filter(|q| !q["error_name"].is_null()) {
        let sql = q["sql"].as_str().unwrap_or("");
        let (name, _, snapshots) = read
            .iter()
            .find(|(n, _, _)| sql.contains(&format!("\"{n}$entries\"")))
            .unwrap_or_else(|| panic!("a failed statement of no listed table: {q:#?}"));
        assert_eq!(
            *snapshots, 0,
            "{name} has manifests, yet its statement failed: {q:#?}"
        );
    }
    let failed = queries
        .iter()
        .filter(|q| !q["error_name"].is_null())
        .count();
    assert_eq!(
        assert_one_scan_each(&u).await,
        tables.len() + 1 + failed + meta_reads,
        "one file read per table, its retry if it failed, the survey, and the tables' \
         metadata ahead of their file reads"
    );
}

/// A table the stats cache remembers as unpartitioned is asked the unpartitioned form at
/// once: one statement, none failed.
#[tokio::test]
async fn a_remembered_unpartitioned_table_is_read_without_a_retry() {
    let u = user("scans_remembered");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    lake.connect().await.unwrap();
    let staging = TableRef::new("iceberg", "zoning", "staging");
    lake.remember_layouts([(staging.clone(), Layout::Unpartitioned)]);
    // An empty table: its survey has no manifest to tell, the memory stays.
    let (_, survey) = lake
        .survey(std::slice::from_ref(&staging))
        .await
        .pop()
        .unwrap();
    let stats = lake
        .file_stats(&staging, &survey.unwrap().stats)
        .await
        .unwrap();
    assert!(!stats.partitioned);
    let queries = lab().queries_of(&u).await;
    let health: Vec<&Value> = queries
        .iter()
        .filter(|q| q["sql"].as_str().is_some_and(|s| s.contains("$entries")))
        .collect();
    assert_eq!(health.len(), 1, "{queries:#?}");
    assert!(health[0]["error_name"].is_null(), "{:#?}", health[0]);
}

/// A remembered layout can be out of date (the table was partitioned since): the survey
/// reads the table's manifests and corrects it before the files are read; a manual
/// refresh forgets every remembered layout too.
#[tokio::test]
async fn a_stale_remembered_layout_is_corrected_by_the_survey() {
    let u = user("scans_forget");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    lake.connect().await.unwrap();
    let t = documents();
    lake.remember_layouts([(t.clone(), Layout::Unpartitioned)]);
    let fresh = lake.table_stats(&t).await.unwrap();
    assert!(fresh.partitioned, "{fresh:?}");
    assert!(fresh.partitions > 1, "{fresh:?}");
    let failed: Vec<Value> = lab()
        .queries_of(&u)
        .await
        .into_iter()
        .filter(|q| !q["error_name"].is_null())
        .collect();
    assert!(
        failed.is_empty(),
        "no statement in the stale form: {failed:#?}"
    );
    lake.forget_layouts();
    let again = lake.table_stats(&t).await.unwrap();
    assert_eq!(again.data_files, fresh.data_files);
}
