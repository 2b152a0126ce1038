//! Compaction staleness is what still waits: the oldest live small data file. A partial
//! optimize compacts some partitions; the small files of the others still wait, so the
//! finding, the failing DAG's correlation and the waiting-since time all stay.

use crate::common;

use std::time::Duration;

use chrono::Utc;
use common::{lab, user};
use floe::health::{DagFacts, HealthConfig, Rule, Severity, evaluate};
use floe::lakehouse::model::{PartitionStats, TableRef};
use floe::lakehouse::plan::optimize_plan;
use floe::lakehouse::queries::Lakehouse;
use floe::mutation::audit::AuditLog;
use floe::mutation::audit::RunContext;
use floe::mutation::run::{StepEvent, run_plan};
use floe::trino::Client;
use tokio_util::sync::CancellationToken;

/// The lab's compaction DAG of the documents table as floe reads it from Airflow: its
/// runs fail on the dead host (see the seed scenario).
fn failing_dag() -> DagFacts {
    DagFacts {
        dag_id: "compact_documents".into(),
        guessed: false,
        paused: false,
        import_error: None,
        last_run_state: Some(floe::airflow::DagRunState::Failed),
        active_run: None,
        last_run_at: Some(Utc::now() - chrono::Duration::hours(3)),
        last_success_at: None,
        failed_runs: 14,
        failing_task: Some("compact".into()),
        error_line: Some("ConnectionError: trino-old.internal:8080".into()),
        expected_interval: Duration::from_secs(86_400),
        code: None,
    }
}

fn rules(h: &floe::health::Health) -> Vec<&'static str> {
    h.findings.iter().map(|f| f.rule.as_str()).collect()
}

#[tokio::test]
async fn a_partial_optimize_leaves_the_waiting_small_files_and_the_finding() {
    let u = user("staleness");
    let table = format!("stale_{}", std::process::id());
    lab()
        .clone_table("zoning.documents", &format!("scratch.{table}"))
        .await;
    let t = TableRef::new("iceberg", "scratch", table);
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &u)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    );
    lake.connect().await.unwrap();
    assert!(
        lake.meta_tables().entries,
        "the lab's real Trino has $entries"
    );
    let cfg = HealthConfig::default();
    let dag = failing_dag();

    let before = lake.table_stats(&t).await.unwrap();
    let waiting = before
        .oldest_small_file_at
        .expect("small files wait in the seed's documents table");
    let h = evaluate(&before, Some(&dag), &cfg, Utc::now());
    let stale = h
        .findings
        .iter()
        .find(|f| f.rule == Rule::CompactionStale)
        .unwrap_or_else(|| panic!("{h:?}"));
    assert_eq!(stale.severity, Severity::Critical);
    assert!(
        stale.message.contains("small files waiting since"),
        "{}",
        stale.message
    );
    assert!(rules(&h).contains(&"stale_dag_failing"), "{h:?}");

    // Optimize the two partitions with the most small files among those that do not hold
    // the oldest waiting file (floe's own maintain path).
    let parts = lake.partitions(&t).await.unwrap();
    assert!(
        parts
            .partitions
            .iter()
            .any(|p| p.oldest_small_file_at == Some(waiting)),
        "the table's oldest waiting file is in one of its partitions"
    );
    let mut younger: Vec<PartitionStats> = parts
        .partitions
        .iter()
        .filter(|p| p.small_files >= 2 && p.oldest_small_file_at.is_some_and(|w| w > waiting))
        .cloned()
        .collect();
    younger.sort_by_key(|p| std::cmp::Reverse(p.small_files));
    let chosen: Vec<PartitionStats> = younger.into_iter().take(2).collect();
    assert_eq!(chosen.len(), 2);
    let layout = lake.table_layout(&t).await.unwrap();
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, false).unwrap();
    let audit = std::env::temp_dir().join(format!("floe-audit-stale-{}.jsonl", std::process::id()));
    let ctx = RunContext {
        profile: "lab".into(),
        user: u.clone(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(audit.clone()),
    };
    let started = Utc::now() - chrono::Duration::seconds(5);
    let out = run_plan(
        &lake,
        &plan,
        &ctx,
        CancellationToken::new(),
        &|_: StepEvent| {},
    )
    .await
    .unwrap();
    assert!(out.iter().all(|o| o.ok), "{out:?}");
    let _ = std::fs::remove_file(audit);

    let after = lake.table_stats(&t).await.unwrap();
    assert!(
        after.last_compaction > before.last_compaction,
        "the optimize committed a compaction: {:?} → {:?}",
        before.last_compaction,
        after.last_compaction
    );
    assert!(after.small_files < before.small_files);
    assert_eq!(
        after.oldest_small_file_at,
        Some(waiting),
        "a partial optimize must not reset what still waits"
    );
    let h = evaluate(&after, Some(&dag), &cfg, Utc::now());
    let stale = h
        .findings
        .iter()
        .find(|f| f.rule == Rule::CompactionStale)
        .unwrap_or_else(|| panic!("{h:?}"));
    assert_eq!(stale.severity, Severity::Critical, "{}", stale.message);
    assert!(rules(&h).contains(&"stale_dag_failing"), "{h:?}");

    // The optimized partitions wait no longer than their new files; the others keep theirs.
    let again = lake.partitions(&t).await.unwrap();
    for p in &again.partitions {
        let old = parts
            .partitions
            .iter()
            .find(|o| o.values == p.values)
            .unwrap();
        if chosen.iter().any(|c| c.values == p.values) {
            assert!(p.data_files <= 2, "{}: {} files", p.label(), p.data_files);
            assert!(
                p.oldest_small_file_at.is_some_and(|w| w >= started),
                "{}: {:?}",
                p.label(),
                p.oldest_small_file_at
            );
        } else {
            assert_eq!(
                p.oldest_small_file_at,
                old.oldest_small_file_at,
                "{}",
                p.label()
            );
        }
    }
}

/// The same story on a table whose `$entries` the real Trino 476 fails (its data files
/// carry no sort order id, as pyiceberg's own writer leaves them; the documents table's
/// history): floe reads it through `$files` and dates its small files by their
/// modification times, so optimizing one partition leaves the waiting age, the finding
/// and the CRITICAL verdict as they were (the newest compaction would say "just
/// compacted"). From 481 the server reads those files' `$entries`: the same story, dated
/// by `$entries`.
#[tokio::test]
async fn a_partial_optimize_of_a_table_read_through_files_keeps_its_waiting_age() {
    let u = user("staleness_files");
    let t = TableRef::new(
        "iceberg",
        "stale_partial",
        format!("unsorted_{}", std::process::id()),
    );
    lab()
        .post(
            "engine/clone_table",
            serde_json::json!({
                "source": "zoning.documents",
                "target": format!("{}.{}", t.schema, t.table),
                "sort_order_id": null,
            }),
        )
        .await;
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &u)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    );
    lake.connect().await.unwrap();
    let cfg = HealthConfig::default();
    let now = Utc::now();

    let before = lake.table_stats(&t).await.unwrap();
    assert!(lake.meta_tables().entries);
    if lab().trino_version() >= 481 {
        assert!(
            lake.meta_tables_for(&t).entries,
            "481+ reads this table's $entries"
        );
    } else {
        assert!(
            !lake.meta_tables_for(&t).entries,
            "the real 476 fails this table's $entries: it is read through $files"
        );
    }
    let waiting = before
        .oldest_small_file_at
        .expect("small files are dated without $entries");
    assert!(!before.oldest_small_is_lower_bound);
    let staleness = |s: &floe::lakehouse::model::TableStats| {
        let h = evaluate(s, None, &cfg, now);
        let f = h
            .findings
            .iter()
            .find(|f| f.rule == Rule::CompactionStale)
            .cloned()
            .unwrap_or_else(|| panic!("no staleness finding: {h:?}"));
        (h.status, f)
    };
    let (status, stale) = staleness(&before);
    assert_eq!(
        (status, stale.severity),
        (Severity::Critical, Severity::Critical)
    );
    let age = stale.message.split(';').next().unwrap().to_string();
    assert!(age.starts_with("small files waiting since "), "{age}");

    // One partition, not the one holding the oldest waiting file.
    let parts = lake.partitions(&t).await.unwrap();
    assert!(
        parts
            .partitions
            .iter()
            .any(|p| p.oldest_small_file_at == Some(waiting)),
        "the partitions are dated the same way: {:?}",
        parts.partitions
    );
    let chosen: Vec<PartitionStats> = parts
        .partitions
        .iter()
        .filter(|p| p.small_files >= 2 && p.oldest_small_file_at.is_some_and(|w| w > waiting))
        .max_by_key(|p| p.small_files)
        .cloned()
        .into_iter()
        .collect();
    assert_eq!(chosen.len(), 1, "{:?}", parts.partitions);
    let layout = lake.table_layout(&t).await.unwrap();
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, false).unwrap();
    let audit = std::env::temp_dir().join(format!(
        "floe-audit-stale-files-{}.jsonl",
        std::process::id()
    ));
    let ctx = RunContext {
        profile: "lab".into(),
        user: u.clone(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(audit.clone()),
    };
    let started = Utc::now() - chrono::Duration::seconds(5);
    let out = run_plan(
        &lake,
        &plan,
        &ctx,
        CancellationToken::new(),
        &|_: StepEvent| {},
    )
    .await
    .unwrap();
    assert!(out.iter().all(|o| o.ok), "{out:?}");
    let _ = std::fs::remove_file(audit);

    let after = lake.table_stats(&t).await.unwrap();
    assert!(
        after.last_compaction.is_some_and(|c| c >= started),
        "the optimize committed a compaction: {:?}",
        after.last_compaction
    );
    assert!(after.small_files < before.small_files);
    assert_eq!(
        after.oldest_small_file_at,
        Some(waiting),
        "a partial optimize must not reset what still waits"
    );
    let (status, stale) = staleness(&after);
    assert_eq!(
        (status, stale.severity),
        (Severity::Critical, Severity::Critical)
    );
    assert_eq!(stale.message.split(';').next().unwrap(), age);

    // The optimized partition waits no longer than its new files.
    let again = lake.partitions(&t).await.unwrap();
    let p = again
        .partitions
        .iter()
        .find(|p| p.values == chosen[0].values)
        .unwrap();
    assert!(p.data_files < chosen[0].data_files, "{}", p.label());
    assert!(
        p.oldest_small_file_at.is_some_and(|w| w >= started),
        "{}: {:?}",
        p.label(),
        p.oldest_small_file_at
    );
}
