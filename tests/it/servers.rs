//! What changed between the Trino releases floe is verified on (476, 483), on the real
//! server the run reads (`cargo xtask test` runs this subject on every version the lab
//! runs): each test asserts the release's own behaviour and what floe makes of it.
//!
//! - 481: `optimize` answers metric rows, not a `rows` column without a row: the job line,
//!   the audit record and the re-read agree with them.
//! - 481: `$entries` reads data files without a sort order id (pyiceberg's): no fallback.
//! - 482: `$files.lower_bounds`/`upper_bounds` are rows, not maps: floe's reads of `$files`
//!   do not change.
//! - 483: `OPTIMIZE` fails when a NOT NULL column holds NULLs: said in Trino's words,
//!   audited as failed, never sent twice.
//! - every release: a statement whose rows fall into more partitions than a writer holds
//!   fails with ICEBERG_TOO_MANY_OPEN_PARTITIONS; floe's plan never sends one.

use crate::common;

use std::time::Duration;

use common::lab;
use floe::app::maintenance::Job;
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::mutation::audit::{AuditLog, RunContext};
use floe::mutation::draft::{MaintenanceKind, Over, draft};
use floe::mutation::run::{StepEvent, run_plan};
use floe::trino::{Client, QueryOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

fn user(name: &str) -> String {
    format!("sv_{name}_{}", std::process::id())
}

fn lakehouse(user: &str, session: &[(&str, &str)]) -> Lakehouse {
    let mut config = lab().config(&lab().trino_url(), user);
    for (k, v) in session {
        config.session.insert(k.to_string(), v.to_string());
    }
    Lakehouse::new(
        Client::new(config).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

async fn sql(lake: &Lakehouse, q: &str) {
    lake.client
        .execute(
            q,
            QueryOptions {
                deadline: Some(Some(Duration::from_secs(300))),
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
}

/// A table of this test's own in schema `sv_<name>` (one schema a test: the JDBC catalog
/// races two creations of one schema), created empty with `columns` and `partitioning`.
async fn table(lake: &Lakehouse, name: &str, columns: &str, partitioning: &str) -> TableRef {
    let schema = format!("sv_{name}");
    let t = TableRef::new(
        "iceberg",
        &schema,
        format!("t{}_{}", lab().trino_version(), std::process::id()),
    );
    sql(
        lake,
        &format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"),
    )
    .await;
    sql(lake, &format!("DROP TABLE IF EXISTS {}", t.sql())).await;
    sql(
        lake,
        &format!(
            "CREATE TABLE {} ({columns}) WITH (partitioning = ARRAY[{partitioning}])",
            t.sql()
        ),
    )
    .await;
    t
}

fn audit(name: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!(
        "floe-audit-sv-{name}-{}-{}.jsonl",
        lab().trino_version(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&p);
    p
}

fn ctx(user: &str, path: &std::path::Path) -> RunContext {
    RunContext {
        profile: "lab".into(),
        user: user.into(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(path.to_path_buf()),
    }
}

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `u`'s statements the coordinator recorded that contain `needle`.
async fn sent(u: &str, needle: &str) -> Vec<Value> {
    lab()
        .real_queries_of(u)
        .await
        .into_iter()
        .filter(|q| q["sql"].as_str().unwrap_or("").contains(needle))
        .collect()
}

/// 481 answers an optimize with metric rows; floe's outcome, its job line, its audit
/// record and its re-read of the partition all say the same: three small files of one
/// partition rewritten into one. Before 481 there is no metric: the re-read alone says it.
#[tokio::test]
async fn an_optimize_reports_what_it_rewrote_in_the_job_the_audit_and_the_reread() {
    let u = user("metrics");
    let lake = lakehouse(&u, &[]);
    let t = table(&lake, "metrics", "id bigint, r varchar", "'r'").await;
    for k in 0..3 {
        sql(
            &lake,
            &format!(
                "INSERT INTO {} VALUES ({k}, 'a'), ({}, 'b')",
                t.sql(),
                k + 10
            ),
        )
        .await;
    }
    lake.connect().await.unwrap();
    let d = draft(
        &lake,
        t.clone(),
        MaintenanceKind::Optimize,
        Over::Named(vec!["r=a".into()]),
        None,
    )
    .await
    .unwrap();
    let plan = d.build(d.grouped).unwrap();
    assert_eq!(plan.steps.len(), 1, "{plan}");
    assert_eq!(plan.steps[0].files, 3, "{plan}");
    let path = audit("metrics");
    let job = std::sync::Mutex::new(Job::new(1, plan.clone(), chrono::Utc::now()));
    let out = run_plan(
        &lake,
        &plan,
        &ctx(&u, &path),
        CancellationToken::new(),
        &|ev: StepEvent| job.lock().unwrap().apply(ev),
    )
    .await
    .unwrap();
    let mut job = job.into_inner().unwrap();
    job.finish(chrono::Utc::now(), None);
    let o = &out[0];
    assert!(o.ok, "{o:?}");
    assert_eq!(o.files_after, Some(1), "the re-read: one file left in r=a");
    let recs = records(&path);
    let done = recs
        .iter()
        .find(|r| r["outcome"] == "succeeded")
        .unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(done["files_before"], 3);
    assert_eq!(done["files_after"], 1);
    let line = job.line(chrono::Utc::now());
    if lab().trino_version() >= 481 {
        let m = &o.metrics;
        assert_eq!(
            (
                m.get("rewritten_data_files_count"),
                m.get("added_data_files_count"),
                m.get("removed_delete_files_count")
            ),
            (Some(&3), Some(&1), Some(&0)),
            "{m:?}"
        );
        // Trino's count and floe's re-read agree: 3 files out, 1 in.
        assert_eq!(
            plan.steps[0].files - o.files_after.unwrap(),
            (m["rewritten_data_files_count"] - m["added_data_files_count"]) as u64
        );
        assert_eq!(o.rows, None);
        assert_eq!(done["metrics"]["rewritten_data_files_count"], 3, "{done}");
        assert_eq!(done["metrics"]["added_data_files_count"], 1, "{done}");
        assert!(
            line.contains("files 3 → 1 (rewrote 3 data files into 1)"),
            "{line}"
        );
    } else {
        // A `rows` column and no row: nothing to say but the re-read.
        assert!(o.metrics.is_empty(), "{:?}", o.metrics);
        assert!(
            done["metrics"].as_object().is_none_or(|m| m.is_empty()),
            "{done}"
        );
        assert!(
            line.contains("files 3 → 1") && !line.contains("rewrote"),
            "{line}"
        );
    }
}

/// pyiceberg writes data files without a sort order id: 476 fails `$entries` on them and
/// floe dates the small files of a compacted table by their modification times instead;
/// 481 reads them, and floe reads `$entries` with no fallback sent. (A table never
/// compacted is dated by its history and reads neither.)
#[tokio::test]
async fn entries_of_pyiceberg_files_are_read_where_the_server_reads_them() {
    let u = user("entries");
    let lake = lakehouse(&u, &[]);
    lake.connect().await.unwrap();
    // A copy of the seed's documents (compacted 15 days ago) whose data files carry no
    // sort order id, as pyiceberg's own writer leaves them.
    let t = TableRef::new(
        "iceberg",
        "sv_entries",
        format!("docs{}_{}", lab().trino_version(), std::process::id()),
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
    let stats = lake.table_stats(&t).await.unwrap();
    assert_eq!(
        Some(stats.data_files),
        lab().table("zoning.documents")["data_files"].as_u64()
    );
    assert!(
        stats.oldest_small_file_at.is_some(),
        "the small files are dated on every release: {stats:?}"
    );
    assert!(lake.meta_tables().entries, "both releases have $entries");
    let fallback = sent(&u, "$file_modified_time").await;
    let entries = sent(&u, "$entries").await;
    assert!(
        !entries.is_empty(),
        "a compacted table's small files are dated by $entries"
    );
    if lab().trino_version() >= 481 {
        assert!(
            lake.meta_tables_for(&t).entries,
            "{} reads $entries of pyiceberg's files",
            lab().trino_version()
        );
        assert!(fallback.is_empty(), "no fallback on 481+: {fallback:?}");
        assert!(
            entries.iter().all(|q| q["state"] == "FINISHED"),
            "{entries:?}"
        );
    } else {
        assert!(!lake.meta_tables_for(&t).entries, "476 fails them");
        assert!(
            entries.iter().any(|q| q["state"] == "FAILED"),
            "476 failed $entries: {entries:?}"
        );
        assert!(!fallback.is_empty(), "the files' modification times");
    }
}

/// 482 types `$files.lower_bounds` as a row: floe reads `$files` without the bounds, so
/// its numbers are the seed's on every release.
#[tokio::test]
async fn files_reads_do_not_depend_on_the_bounds_type() {
    let u = user("bounds");
    let lake = lakehouse(&u, &[]);
    lake.connect().await.unwrap();
    let ty = lab()
        .real_rows(
            "SELECT data_type FROM iceberg.information_schema.columns \
             WHERE table_schema = 'zoning' AND table_name = 'permits$files' \
             AND column_name = 'lower_bounds'",
        )
        .await;
    let ty = ty[0][0].as_str().unwrap().to_string();
    if lab().trino_version() >= 482 {
        assert!(ty.starts_with("row("), "{ty}");
    } else {
        assert!(ty.starts_with("map("), "{ty}");
    }
    for name in ["zoning.permits", "zoning.documents", "finance.budget"] {
        let (schema, table) = name.split_once('.').unwrap();
        let t = TableRef::new("iceberg", schema, table);
        let s = lake.table_stats(&t).await.unwrap();
        let want = lab().table(name);
        assert_eq!(Some(s.data_files), want["data_files"].as_u64(), "{name}");
        assert_eq!(Some(s.small_files), want["small_files"].as_u64(), "{name}");
        let parts = lake.partitions(&t).await.unwrap();
        assert_eq!(
            parts.partitions.iter().map(|p| p.data_files).sum::<u64>(),
            s.data_files,
            "{name}"
        );
    }
    // The plan's read of the live files' partition specs is a `$files` read on every
    // release (the stats above read `$files` or `$entries`, as the release allows).
    let t = TableRef::new("iceberg", "zoning", "documents");
    let layout = floe::mutation::draft::layout_with_specs(&lake, &t)
        .await
        .unwrap();
    assert_eq!(layout.live_specs.len(), 1, "{layout:?}");
    let reads = sent(&u, "$files").await;
    assert!(!reads.is_empty());
    let failed: Vec<Value> = lab()
        .real_queries_of(&u)
        .await
        .into_iter()
        .filter(|q| q["state"] == "FAILED")
        // 476 fails `$entries` of pyiceberg's files (finance.budget): the test above
        .filter(|q| {
            lab().trino_version() >= 481 || !q["sql"].as_str().unwrap_or("").contains("$entries")
        })
        .collect();
    assert!(failed.is_empty(), "every read succeeded: {failed:?}");
    assert!(
        reads
            .iter()
            .all(|q| !q["sql"].as_str().unwrap().contains("_bounds")),
        "floe reads no bounds"
    );
}

/// A column made NOT NULL while its files hold NULLs (another engine's schema change):
/// 483 refuses to optimize it, and floe says so in Trino's words, audits it as failed and
/// sends it once; 476 rewrites it (the reason 483 refuses: a reader of the rewritten file
/// fails).
#[tokio::test]
async fn an_optimize_over_nulls_in_a_not_null_column_fails_in_trinos_words_once() {
    let u = user("notnull");
    let lake = lakehouse(&u, &[]);
    let t = table(
        &lake,
        "notnull",
        "id bigint, note varchar, r varchar",
        "'r'",
    )
    .await;
    for k in 0..3 {
        sql(
            &lake,
            &format!("INSERT INTO {} VALUES ({k}, NULL, 'a')", t.sql()),
        )
        .await;
    }
    let changed = lab()
        .post(
            "engine/require_column",
            serde_json::json!({"target": format!("{}.{}", t.schema, t.table), "column": "note"}),
        )
        .await;
    assert_eq!(changed["required"], true, "{changed}");
    let path = audit("notnull");
    let home = std::env::temp_dir().join(format!(
        "floe-sv-notnull-{}-{}",
        lab().trino_version(),
        std::process::id()
    ));
    std::fs::create_dir_all(&home).unwrap();
    let config = home.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "audit_log = {:?}\n[trino]\nurl = {:?}\nuser = {u:?}\ncatalog = \"iceberg\"\n",
            path.display().to_string(),
            lab().trino_url()
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .arg("--config")
        .arg(&config)
        .args(["maintain", "optimize", &format!("{}.{}", t.schema, t.table)])
        .args(["--partition", "r=a", "--yes"])
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let recs = records(&path);
    let optimizes = sent(&u, "EXECUTE optimize").await;
    assert_eq!(optimizes.len(), 1, "sent once: {optimizes:?}");
    let last = recs.last().unwrap_or_else(|| panic!("no audit: {stderr}"));
    if lab().trino_version() >= 483 {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        let q = &optimizes[0];
        assert_eq!(q["state"], "FAILED", "{q}");
        // Trino's own message, as the coordinator recorded it, is what floe says.
        let failure = lab()
            .real_rows(&format!(
                "SELECT error_type, error_code FROM system.runtime.queries WHERE query_id = '{}'",
                q["id"].as_str().unwrap()
            ))
            .await;
        let code = failure[0][1].as_str().unwrap_or_default().to_string();
        assert!(stderr.contains(&code), "{code} in {stderr}");
        assert!(
            stderr.contains("note") && stderr.to_lowercase().contains("null"),
            "Trino's words name the column: {stderr}"
        );
        assert_eq!(last["outcome"], "failed", "{last}");
        assert!(last["error"].as_str().unwrap().contains(&code), "{last}");
        assert!(
            !recs.iter().any(|r| r["outcome"] == "succeeded"),
            "{recs:?}"
        );
    } else {
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert_eq!(last["outcome"], "succeeded", "{last}");
    }
    let _ = std::fs::remove_dir_all(&home);
}

/// A table of 107 partitions: one optimize over all of it, on a coordinator writing with
/// one writer a task, fails with ICEBERG_TOO_MANY_OPEN_PARTITIONS (the control); floe's
/// plan of the whole table reads the writers' limit and optimizes it in statements within
/// it, each of which succeeds, with no such failure sent.
#[tokio::test]
async fn a_whole_table_optimize_over_more_partitions_than_a_writer_holds_is_split() {
    let u = user("wide");
    // The writers' count a small coordinator has: every writer sees every partition.
    let one_writer = [("task_max_writer_count", "1")];
    let lake = lakehouse(&u, &one_writer);
    // Written with the coordinator's writers as they are (one writer would refuse the
    // INSERT of 107 partitions as well).
    let writer = lakehouse(&u, &[]);
    let t = table(&writer, "wide", "id bigint, d date", "'d'").await;
    for _ in 0..2 {
        sql(
            &writer,
            &format!(
                "INSERT INTO {} SELECT x, date_add('day', x % 107, DATE '2026-01-01') \
                 FROM UNNEST(sequence(1, 1070)) t(x)",
                t.sql()
            ),
        )
        .await;
    }
    let control = lake
        .client
        .execute(
            &format!("ALTER TABLE {} EXECUTE optimize", t.sql()),
            QueryOptions {
                mutation: true,
                ..Default::default()
            },
        )
        .await
        .expect_err("one statement over 107 partitions");
    assert_eq!(
        control.name(),
        "ICEBERG_TOO_MANY_OPEN_PARTITIONS",
        "{control}"
    );

    lake.connect().await.unwrap();
    let d = draft(
        &lake,
        t.clone(),
        MaintenanceKind::Optimize,
        Over::Whole,
        None,
    )
    .await
    .unwrap();
    assert_eq!(d.writer_partitions, 100);
    assert!(d.grouped);
    let note = d.note.clone().unwrap();
    assert!(
        note.contains("107 partitions") && note.contains("ICEBERG_TOO_MANY_OPEN_PARTITIONS"),
        "{note}"
    );
    let plan = d.build(true).unwrap();
    assert_eq!(plan.steps.len(), 2, "{plan}");
    assert!(plan.steps.iter().all(|s| s.targets.len() <= 64), "{plan}");
    let path = audit("wide");
    let before = lab().real_queries_of(&u).await.len();
    let out = run_plan(
        &lake,
        &plan,
        &ctx(&u, &path),
        CancellationToken::new(),
        &|_: StepEvent| {},
    )
    .await
    .unwrap();
    assert!(out.iter().all(|o| o.ok), "{out:?}");
    assert_eq!(
        out.iter().filter_map(|o| o.files_after).sum::<u64>(),
        107,
        "one file a partition"
    );
    let after: Vec<Value> = lab().real_queries_of(&u).await.split_off(before);
    assert!(
        after
            .iter()
            .all(|q| q["error_name"] != "ICEBERG_TOO_MANY_OPEN_PARTITIONS"),
        "{after:?}"
    );
    assert!(
        records(&path)
            .iter()
            .filter(|r| r["outcome"] != "started")
            .all(|r| r["outcome"] == "succeeded"),
        "{:?}",
        records(&path)
    );

    // A session that lowers the limit: the plan follows it.
    let tight = lakehouse(&u, &[("iceberg.max_partitions_per_writer", "20")]);
    tight.connect().await.unwrap();
    let d = draft(
        &tight,
        t.clone(),
        MaintenanceKind::Optimize,
        Over::Whole,
        None,
    )
    .await
    .unwrap();
    assert_eq!(d.writer_partitions, 20);
    let plan = d.build(true).unwrap();
    assert_eq!(plan.steps.len(), 107usize.div_ceil(20), "{plan}");
}
