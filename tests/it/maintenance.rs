//! Maintenance against the lab: every test works on its own clone of a seed table.

use crate::common;

use std::time::Duration;

use common::{lab, user};
use floe::health::HealthConfig;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::plan::{Plan, Procedure, optimize_plan, table_plan};
use floe::lakehouse::queries::Lakehouse;
use floe::mutation::audit::AuditLog;
use floe::mutation::audit::{Outcome, RunContext};
use floe::mutation::run::{StepEvent, run_plan};
use floe::sql::{quote_ident, quote_string};
use floe::trino::Client;
use serde_json::json;
use tokio_util::sync::CancellationToken;

async fn clone(source: &str, name: &str) -> TableRef {
    let table = format!("{name}_{}", std::process::id());
    lab().clone_table(source, &format!("scratch.{table}")).await;
    TableRef::new("iceberg", "scratch", table)
}

fn lakehouse(url: &str, user: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(url, user)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

fn ctx(name: &str, readonly: bool) -> RunContext {
    let path = std::env::temp_dir().join(format!("floe-audit-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    RunContext {
        profile: "lab".into(),
        user: "floe".into(),
        target: lab().trino_url(),
        readonly,
        audit: AuditLog::new(path),
    }
}

async fn snapshots(lake: &Lakehouse, t: &TableRef) -> Vec<(String, i64)> {
    let out = lake
        .client
        .query(&format!(
            "SELECT operation, snapshot_id FROM {} ORDER BY committed_at",
            t.meta("snapshots")
        ))
        .await
        .unwrap();
    out.rows
        .iter()
        .map(|r| {
            (
                r.str("operation").unwrap().to_string(),
                r.i64("snapshot_id").unwrap(),
            )
        })
        .collect()
}

async fn record_count(lake: &Lakehouse, t: &TableRef) -> u64 {
    lake.client
        .query(&format!("SELECT count(*) AS n FROM {}", t.sql()))
        .await
        .unwrap()
        .rows[0]
        .u64("n")
        .unwrap()
}

fn no_events() -> impl Fn(StepEvent) + Send + Sync {
    |_| {}
}

#[tokio::test]
async fn optimizing_two_partitions_compacts_them_and_commits_replace_snapshots() {
    let t = clone("zoning.documents", "opt").await;
    let lake = lakehouse(&lab().trino_url(), "floe");
    let before = lake.partitions(&t).await.unwrap();
    let mut worst = before.partitions.clone();
    worst.sort_by_key(|p| std::cmp::Reverse(p.small_files));
    let chosen: Vec<_> = worst.into_iter().take(2).collect();
    assert!(
        chosen.iter().all(|p| p.data_files >= 12),
        "the seed has small-file partitions"
    );
    let layout = lake.table_layout(&t).await.unwrap();
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, false).unwrap();
    let snaps_before = snapshots(&lake, &t).await;
    let records_before = record_count(&lake, &t).await;
    let c = ctx("opt", false);
    let seen = std::sync::Mutex::new(Vec::new());
    let on_event = |e: StepEvent| seen.lock().unwrap().push(e);
    let out = run_plan(&lake, &plan, &c, CancellationToken::new(), &on_event)
        .await
        .unwrap();
    assert_eq!(out.len(), 2);
    for (o, p) in out.iter().zip(&plan.steps) {
        assert!(o.ok);
        assert!(
            o.files_after.unwrap() <= 2,
            "{:?}: {} files left",
            p.partition,
            o.files_after.unwrap()
        );
        // Trino 476 answers ALTER TABLE EXECUTE optimize with a `rows` column and no row.
        assert_eq!(o.rows, None, "the 476 result shape: no row");
    }
    assert!(
        seen.lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, StepEvent::Progress { .. }))
    );
    // Read back independently through $partitions.
    for p in &chosen {
        let district = p
            .values
            .iter()
            .find(|(k, _)| k == "district")
            .unwrap()
            .1
            .clone()
            .unwrap();
        let day = p
            .values
            .iter()
            .find(|(k, _)| k == "filed_at_day")
            .unwrap()
            .1
            .clone()
            .unwrap();
        let sql = format!(
            "SELECT file_count, record_count FROM {} WHERE partition.district = {} AND partition.filed_at_day = DATE {}",
            t.meta("partitions"),
            quote_string(&district),
            quote_string(&day)
        );
        let r = &lake.client.query(&sql).await.unwrap().rows[0];
        assert!(r.u64("file_count").unwrap() <= 2);
        assert_eq!(r.u64("record_count").unwrap(), p.records, "no record lost");
    }
    let snaps_after = snapshots(&lake, &t).await;
    let new: Vec<_> = snaps_after[snaps_before.len()..]
        .iter()
        .map(|(op, _)| op.as_str())
        .collect();
    assert_eq!(
        new,
        vec!["replace", "replace"],
        "one replace snapshot per statement"
    );
    assert_eq!(record_count(&lake, &t).await, records_before);
    // floe's own view agrees, and untouched partitions are unchanged.
    let after = lake.partitions(&t).await.unwrap();
    for p in &before.partitions {
        let a = after
            .partitions
            .iter()
            .find(|x| x.label() == p.label())
            .unwrap();
        if chosen.iter().any(|c| c.label() == p.label()) {
            assert!(a.data_files <= 2);
        } else {
            assert_eq!(a.data_files, p.data_files, "{}", p.label());
        }
    }
    // The audit log has one `succeeded` record per statement, with its query id.
    let audit = c.audit.read();
    assert_eq!(audit.len(), 2);
    for (r, s) in audit.iter().zip(&plan.steps) {
        assert_eq!(r.outcome, Outcome::Succeeded);
        assert_eq!(r.statement, s.sql);
        assert_eq!(r.table.as_deref(), Some(t.to_string().as_str()));
        assert!(r.query_id.as_deref().is_some_and(|q| !q.is_empty()));
        assert_eq!(r.files_before, Some(s.files));
        assert!(r.files_after.unwrap() <= 2);
    }
}

#[tokio::test]
async fn cancel_mid_run_stops_the_queue_and_leaves_the_table_valid() {
    let t = clone("zoning.documents", "cancel").await;
    let u = user("mcancel");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    let parts = lake.partitions(&t).await.unwrap();
    let chosen: Vec<_> = parts
        .partitions
        .iter()
        .filter(|p| p.small_files >= 12)
        .take(3)
        .cloned()
        .collect();
    let plan = optimize_plan(
        &t,
        &lake.table_layout(&t).await.unwrap(),
        &chosen,
        96 << 20,
        false,
    )
    .unwrap();
    let snaps_before = snapshots(&lake, &t).await;
    let records = record_count(&lake, &t).await;
    lab()
        .faults(
            &u,
            json!([{"kind": "slow", "ms": 20000, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let token = CancellationToken::new();
    let t2 = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        t2.cancel();
    });
    let c = ctx("cancel", false);
    let err = run_plan(&lake, &plan, &c, token, &no_events())
        .await
        .unwrap_err()
        .to_string();
    lab().clear_faults(&u).await;
    assert!(
        err.contains("cancelled") && err.contains("2 remaining statement(s) not run"),
        "{err}"
    );
    let fresh = lakehouse(&lab().stand_in_url(), "floe");
    assert_eq!(
        snapshots(&fresh, &t).await,
        snaps_before,
        "nothing committed"
    );
    assert_eq!(record_count(&fresh, &t).await, records);
    let audit = c.audit.read();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[0].outcome, Outcome::Cancelled);
    assert_eq!(audit[1].outcome, Outcome::NotRun);
    assert_eq!(
        audit[1].error.as_deref(),
        Some("2 of 3 statement(s) not run: step 1 of 3 was cancelled")
    );
    let q = lab().queries_of(&u).await;
    assert!(
        q.iter().any(|q| q["error_name"] == "USER_CANCELED"),
        "{q:?}"
    );
}

#[tokio::test]
async fn read_only_is_refused_at_execution_time_and_audited() {
    let t = clone("zoning.permits", "ro").await;
    let lake = lakehouse(&lab().trino_url(), "floe");
    let plan = table_plan(
        &t,
        Procedure::Optimize {
            threshold: 96 << 20,
        },
    );
    let before = snapshots(&lake, &t).await;
    let c = ctx("ro", true);
    let err = run_plan(&lake, &plan, &c, CancellationToken::new(), &no_events())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("read-only:"), "{err}");
    assert_eq!(snapshots(&lake, &t).await, before);
    let audit = c.audit.read();
    assert_eq!(audit[0].outcome, Outcome::Refused);
}

#[tokio::test]
async fn expire_retention_error_is_trinos_verbatim_and_the_session_property_lowers_it() {
    let t = clone("audit.events", "expire").await;
    let lake = lakehouse(&lab().trino_url(), "floe");
    let mut plan: Plan = table_plan(
        &t,
        Procedure::ExpireSnapshots {
            retention_secs: 86_400,
        },
    );
    let err = run_plan(
        &lake,
        &plan,
        &ctx("expire", false),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(
            "INVALID_PROCEDURE_ARGUMENT: Retention specified (1.00d) is shorter than the minimum retention configured in the system (7.00d). Minimum retention can be changed with iceberg.expire-snapshots.min-retention configuration property or iceberg.expire_snapshots_min_retention session property"
        ),
        "{err}"
    );
    let before = snapshots(&lake, &t).await.len();
    plan.session = vec![("iceberg.expire_snapshots_min_retention".into(), "1d".into())];
    run_plan(
        &lake,
        &plan,
        &ctx("expire2", false),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    let after = snapshots(&lake, &t).await.len();
    assert!(after < before, "snapshots expired: {before} -> {after}");
}

#[tokio::test]
async fn trino_481_returns_metrics() {
    let t = clone("zoning.permits", "m481").await;
    let lake = lakehouse(&lab().listener("v481"), "floe");
    let parts = lake.partitions(&t).await.unwrap();
    let one: Vec<_> = parts
        .partitions
        .iter()
        .filter(|p| p.small_files >= 12)
        .take(1)
        .cloned()
        .collect();
    let plan = optimize_plan(
        &t,
        &lake.table_layout(&t).await.unwrap(),
        &one,
        96 << 20,
        false,
    )
    .unwrap();
    let out = run_plan(
        &lake,
        &plan,
        &ctx("m481", false),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    let m = &out[0].metrics;
    assert_eq!(
        m.get("rewritten_data_files_count").copied(),
        Some(one[0].data_files as i64),
        "{m:?}"
    );
    assert!(m.get("added_data_files_count").copied().unwrap_or(0) >= 1);
    assert_eq!(out[0].rows, None);
}

#[tokio::test]
async fn hostile_literals_and_identifiers_round_trip_through_the_lab() {
    let values = floe_test_strings();
    let client = lab().client("floe");
    for chunk in values.chunks(25) {
        let cols: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| {
                format!(
                    "{} AS {}",
                    quote_string(v),
                    quote_ident(&format!("c{i} {v}"))
                )
            })
            .collect();
        let out = client
            .query(&format!("SELECT {}", cols.join(", ")))
            .await
            .unwrap();
        for (i, v) in chunk.iter().enumerate() {
            // Trino folds identifiers to lower case; compare the way it does.
            assert_eq!(
                out.columns[i].name.to_lowercase(),
                format!("c{i} {v}").to_lowercase(),
                "identifier {v:?}"
            );
            assert_eq!(
                out.rows[0].values[i].as_str(),
                Some(v.as_str()),
                "literal {v:?}"
            );
        }
    }
}

#[tokio::test]
async fn hostile_partition_values_make_valid_optimize_statements() {
    let t = clone("zoning.documents", "hostile").await;
    let lake = lakehouse(&lab().trino_url(), "floe");
    let layout = lake.table_layout(&t).await.unwrap();
    let before = snapshots(&lake, &t).await;
    let parts: Vec<_> = floe_test_strings()
        .into_iter()
        .take(12)
        .map(|v| floe::lakehouse::model::PartitionStats {
            values: vec![
                ("district".into(), Some(v)),
                ("filed_at_day".into(), Some("2026-11-20".into())),
            ],
            spec_id: None,
            data_files: 0,
            small_files: 0,
            total_bytes: 0,
            records: 0,
            min_file: 0,
            max_file: 0,
            delete_files: 0,
            oldest_small_file_at: None,
        })
        .collect();
    let plan = optimize_plan(&t, &layout, &parts, 96 << 20, false).unwrap();
    // Each parses and selects exactly nothing: no district has such a name.
    run_plan(
        &lake,
        &plan,
        &ctx("hostile", false),
        CancellationToken::new(),
        &no_events(),
    )
    .await
    .unwrap();
    assert_eq!(
        snapshots(&lake, &t).await,
        before,
        "no file selected, no snapshot committed"
    );
}

/// Strings with quotes, backslashes, unicode and SQL punctuation (the same generator the
/// unit tests use, seeded differently).
fn floe_test_strings() -> Vec<String> {
    const ALPHABET: &[&str] = &[
        "a", "'", "''", "\"", "\\", " ", ";", "--", "%", "+", "é", "日本", "🦀", ")", "/*", "$",
        "\t",
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..100)
        .map(|_| {
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let len = 1 + (next() % 10) as usize;
            (0..len)
                .map(|_| ALPHABET[(next() % ALPHABET.len() as u64) as usize])
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn the_cli_prints_without_yes_runs_with_it_and_refuses_when_read_only() {
    let t = clone("zoning.permits", "cli").await;
    let lake = lakehouse(&lab().trino_url(), "floe");
    let before = snapshots(&lake, &t).await;
    let home = std::env::temp_dir().join(format!("floe-cli-home-{}", std::process::id()));
    let run = |extra: &[&str]| {
        let url = lab().trino_url();
        let name = format!("scratch.{}", t.table);
        let mut args = vec![
            "--trino",
            url.as_str(),
            "--user",
            "floe",
            "maintain",
            "optimize",
            name.as_str(),
            "--partition",
            "status=approved",
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
            .args(&args)
            .env("XDG_CONFIG_HOME", home.join("c"))
            .env("XDG_STATE_HOME", home.join("s"))
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("ALTER TABLE \"iceberg\".\"scratch\".\"{}\" EXECUTE optimize(file_size_threshold => '96MB') WHERE \"status\" = 'approved';", t.table)), "{text}");
    assert!(text.contains("not run: add --yes"));
    assert_eq!(
        snapshots(&lake, &t).await,
        before,
        "nothing touched without --yes"
    );
    let out = run(&["--yes", "--readonly"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
    assert_eq!(snapshots(&lake, &t).await, before);
    let out = run(&["--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[1/1] done") && err.contains("files"), "{err}");
    assert_eq!(snapshots(&lake, &t).await.last().unwrap().0, "replace");
    let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read();
    let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["refused", "succeeded"]);
}

#[tokio::test]
async fn identity_fiscal_year_is_read_planned_and_recounted_by_the_tables_spec() {
    // finance.budget: identity `fiscal_year` (integer) and `region` (hostile strings), 14
    // small files in each of its 12 partitions, and a column COMMENT that reads
    // `partitioning = ARRAY['month(ts)']`.
    let t = clone("finance.budget", "budget").await;
    let u = user("budget");
    let lake = lakehouse(&lab().trino_url(), &u);
    // The TUI's partitions view: an identity `fiscal_year` shows its value, not 1970 + it.
    let list = lake.partitions(&t).await.unwrap();
    let labels: Vec<String> = list.partitions.iter().map(|p| p.label()).collect();
    assert_eq!(list.partitions.len(), 12, "{labels:?}");
    assert!(
        labels.contains(&"fiscal_year=2026/region=north".to_string()),
        "{labels:?}"
    );
    assert!(list.partitions.iter().all(|p| p.data_files == 14));
    // The layout is read once per table, not per refresh.
    lake.partitions(&t).await.unwrap();
    let layout = lake.table_layout(&t).await.unwrap();
    let fields: Vec<&str> = layout
        .partitioning
        .iter()
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(
        fields,
        ["fiscal_year", "region"],
        "not the comment's month(ts)"
    );
    let show_create = lab()
        .real_queries_of(&u)
        .await
        .iter()
        .filter(|q| {
            q["sql"]
                .as_str()
                .is_some_and(|s| s.starts_with("SHOW CREATE TABLE"))
        })
        .count();
    assert_eq!(show_create, 1, "SHOW CREATE TABLE once per table");

    // `floe maintain`: a partial spec names a year; the plan selects it by equality and
    // the run records the files really left in the partitions it rewrote.
    let home = std::env::temp_dir().join(format!("floe-budget-home-{}", std::process::id()));
    let run = |extra: &[&str]| {
        let url = lab().trino_url();
        let name = format!("scratch.{}", t.table);
        let mut args = vec![
            "--trino",
            url.as_str(),
            "--user",
            "floe",
            "maintain",
            "optimize",
            name.as_str(),
            "--partition",
            "fiscal_year=2026",
        ];
        args.extend_from_slice(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
            .args(&args)
            .env("XDG_CONFIG_HOME", home.join("c"))
            .env("XDG_STATE_HOME", home.join("s"))
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(r#"WHERE "fiscal_year" = 2026;"#), "{text}");
    let out = run(&["--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("files 84 -> 6"), "{err}");
    let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read();
    assert_eq!(audit.last().unwrap().files_after, Some(6));

    // A grouped plan over two 2025 partitions (one with quotes in its value): the real
    // count, not 0.
    let chosen: Vec<_> = lake
        .partitions(&t)
        .await
        .unwrap()
        .partitions
        .into_iter()
        .filter(|p| {
            p.label() == "fiscal_year=2025/region=north"
                || p.label() == "fiscal_year=2025/region=a'b\"c"
        })
        .collect();
    assert_eq!(chosen.len(), 2);
    let plan = optimize_plan(&t, &layout, &chosen, 96 << 20, true).unwrap();
    assert_eq!(plan.steps.len(), 1);
    let c = ctx("budget", false);
    let outcomes = run_plan(&lake, &plan, &c, CancellationToken::new(), &no_events())
        .await
        .unwrap();
    assert_eq!(outcomes[0].files_after, Some(2));
    assert_eq!(outcomes[0].small_after, Some(2));
    assert_eq!(c.audit.read()[0].files_after, Some(2));
    // The re-read is one statement over the step's partitions only.
    let recounts: Vec<String> = lab()
        .real_queries_of(&u)
        .await
        .iter()
        .filter_map(|q| q["sql"].as_str())
        .filter(|s| s.contains("$files") && !s.contains("GROUP BY"))
        .map(str::to_string)
        .collect();
    assert_eq!(recounts.len(), 1, "{recounts:?}");
    assert!(
        recounts[0].contains(r#"f.partition."fiscal_year" = 2025"#),
        "{recounts:?}"
    );

    // Untouched partitions keep their files.
    let after = lake.partitions(&t).await.unwrap();
    for p in &after.partitions {
        let rewritten = p.label().starts_with("fiscal_year=2026/")
            || chosen.iter().any(|c| c.label() == p.label());
        let want = if rewritten { 1 } else { 14 };
        assert_eq!(p.data_files, want, "{}", p.label());
    }
}

/// `floe maintain optimize <table> --threshold 96MB --yes` as user `u`: the optimize is
/// its only write (its other statements ask the coordinator who else writes the table; a
/// fault meant for the optimize names it with `sql`). Its stderr is piped, its audit log
/// under `home`.
fn spawn_maintain(url: &str, t: &TableRef, u: &str, home: &std::path::Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            url,
            "--user",
            u,
            "maintain",
            "optimize",
            &format!("scratch.{}", t.table),
            "--threshold",
            "96MB",
            "--yes",
        ])
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The stand-in's record of `u`'s optimize once it runs on the engine (the tests that need
/// an optimize held RUNNING on demand use the stand-in's `slow` fault: a real optimize of a
/// lab table ends in seconds).
async fn running_optimize(u: &str) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let q = lab().queries_of(u).await;
        if let Some(q) = q
            .into_iter()
            .find(|q| q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize"))
            && q["state"] == "RUNNING"
        {
            return q;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the optimize never ran"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn query(u: &str, id: &str) -> serde_json::Value {
    lab()
        .queries_of(u)
        .await
        .into_iter()
        .find(|q| q["id"] == id)
        .unwrap()
}

fn wait_exit(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > within {
            let _ = child.kill();
            panic!("floe maintain did not exit within {within:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_cancels_on_trino_on_sigint_and_sigterm_and_exits_130_or_143() {
    for (sig, name, code, outcome) in [
        (libc::SIGINT, "int", 130, "cancelled"),
        (libc::SIGTERM, "term", 143, "interrupted"),
    ] {
        let t = clone("zoning.permits", &format!("clisig{name}")).await;
        let u = user(&format!("clisig{name}"));
        let home = std::env::temp_dir().join(format!("floe-clisig-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let lake = lakehouse(&lab().stand_in_url(), "floe");
        let before = snapshots(&lake, &t).await;
        lab()
            .faults(
                &u,
                json!([{"kind": "slow", "ms": 30000, "count": 1, "sql": "EXECUTE optimize"}]),
            )
            .await;
        let mut child = spawn_maintain(&lab().stand_in_url(), &t, &u, &home);
        let q = running_optimize(&u).await;
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = wait_exit(&mut child, Duration::from_secs(15));
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        lab().clear_faults(&u).await;
        assert_eq!(status.code(), Some(code), "{name}: {err}");
        assert!(err.contains("cancelling on Trino"), "{err}");
        let q = query(&u, q["id"].as_str().unwrap()).await;
        assert_eq!(q["error_name"], "USER_CANCELED", "{q}");
        assert_eq!(q["delete_received"], true, "{q}");
        assert_eq!(snapshots(&lake, &t).await, before, "nothing committed");
        let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read_all();
        let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
        assert_eq!(outcomes, vec!["started", outcome], "{name}");
        assert_eq!(audit[1].query_id.as_deref(), q["id"].as_str());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_exits_the_cli_at_once_while_the_cancel_waits() {
    let t = clone("zoning.permits", "cli2int").await;
    let u = user("cli2int");
    let home = std::env::temp_dir().join(format!("floe-cli2int-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    lab()
        .faults(
            &u,
            json!([{"kind": "slow", "ms": 30000, "count": 1, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let mut child = spawn_maintain(&lab().stand_in_url(), &t, &u, &home);
    running_optimize(&u).await;
    // From now on every request on the query's URIs (the DELETE too) takes 20 s.
    lab()
        .faults(&u, json!([{"kind": "latency", "ms": 20000, "on": "next"}]))
        .await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(1000));
    assert!(
        child.try_wait().unwrap().is_none(),
        "still waiting for the cancel"
    );
    let second = std::time::Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_exit(&mut child, Duration::from_secs(10));
    assert!(second.elapsed() < Duration::from_secs(2), "exited at once");
    lab().clear_faults(&u).await;
    assert_eq!(status.code(), Some(130));
    let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read_all();
    assert_eq!(
        audit[0].outcome,
        Outcome::Started,
        "the trace a hard exit leaves"
    );
}

#[test]
fn a_plan_over_hostile_partition_values_prints_no_control_character() {
    // finance.budget's region values carry ESC [2J, a bidi override, a newline, quotes:
    // the plan `floe maintain` prints (without --yes: nothing runs) shows them escaped,
    // while the SQL inside stays a valid literal of the real value.
    let home = std::env::temp_dir().join(format!("floe-hostile-plan-{}", std::process::id()));
    let url = lab().trino_url();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            url.as_str(),
            "--user",
            "floe",
            "maintain",
            "optimize",
            "finance.budget",
            "--partition",
            "region=\u{1b}[2J",
            "--partition",
            "region=\u{202e}evil",
        ])
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("not run: add --yes"), "{stdout}");
    assert!(
        stdout.contains("\\x1b[2J"),
        "the escape is shown, visibly:\n{stdout}"
    );
    assert!(stdout.contains("\\u{202e}evil"), "{stdout}");
    assert!(floe::text::is_inert(&stdout), "{stdout:?}");
    assert!(floe::text::is_inert(&stderr), "{stderr:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintain_timeout_cancels_on_trino_and_exits_124() {
    let t = clone("zoning.permits", "clitimeout").await;
    let u = user("clitimeout");
    let home = std::env::temp_dir().join(format!("floe-clitimeout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let lake = lakehouse(&lab().stand_in_url(), "floe");
    let before = snapshots(&lake, &t).await;
    lab()
        .faults(
            &u,
            json!([{"kind": "slow", "ms": 30000, "count": 1, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            &lab().stand_in_url(),
            "--user",
            &u,
            "maintain",
            "--timeout",
            "3s",
            "optimize",
            &format!("scratch.{}", t.table),
            "--threshold",
            "96MB",
            "--yes",
        ])
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let q = running_optimize(&u).await;
    let status = wait_exit(&mut child, Duration::from_secs(20));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    lab().clear_faults(&u).await;
    assert_eq!(status.code(), Some(124), "{err}");
    assert!(err.contains("--timeout 3s reached"), "{err}");
    let q = query(&u, q["id"].as_str().unwrap()).await;
    assert_eq!(q["error_name"], "USER_CANCELED", "{q}");
    assert_eq!(snapshots(&lake, &t).await, before, "nothing committed");
    let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read_all();
    let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["started", "cancelled"]);
}

#[tokio::test]
async fn a_statement_whose_answer_was_lost_is_audited_as_may_have_run() {
    // The stand-in processes the POST, then closes the connection without its answer.
    let t = clone("zoning.permits", "mhr").await;
    let u = user("mhr");
    let lake = lakehouse(&lab().stand_in_url(), &u);
    let plan = table_plan(&t, Procedure::OptimizeManifests);
    lab()
        .faults(&u, json!([{"kind": "drop", "on": "post", "count": 1, "sql": "EXECUTE optimize_manifests"}]))
        .await;
    let c = ctx("mhr", false);
    let err = run_plan(&lake, &plan, &c, CancellationToken::new(), &no_events())
        .await
        .unwrap_err()
        .to_string();
    lab().clear_faults(&u).await;
    assert!(err.contains("may have run"), "{err}");
    let audit = c.audit.read();
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].outcome, Outcome::MayHaveRun, "{audit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ssh_drop_cancels_on_trino_and_audits_what_did_not_run() {
    let t = clone("zoning.permits", "clihup").await;
    let u = user("clihup");
    let home = std::env::temp_dir().join(format!("floe-clihup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    // The run's optimizes are slowed (not the reads around them: the plan's, and the
    // check for other writers), so each stays RUNNING long enough to be caught there
    // whatever the load.
    lab()
        .faults(
            &u,
            json!([{"kind": "slow", "ms": 5000, "sql": "EXECUTE optimize"}]),
        )
        .await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args([
            "--trino",
            &lab().stand_in_url(),
            "--user",
            &u,
            "maintain",
            "optimize",
            &format!("scratch.{}", t.table),
            "--partition",
            "status=approved",
            "--partition",
            "status=pending",
            "--threshold",
            "96MB",
            "--yes",
        ])
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let q = running_optimize(&u).await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let status = wait_exit(&mut child, Duration::from_secs(15));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    lab().clear_faults(&u).await;
    assert_eq!(status.code(), Some(129), "{err}");
    let q = query(&u, q["id"].as_str().unwrap()).await;
    assert_eq!(q["error_name"], "USER_CANCELED", "{q}");
    let audit = AuditLog::new(home.join("s/floe/audit.jsonl")).read_all();
    let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["started", "interrupted", "not_run"], "{err}");
    assert_eq!(
        audit[2].error.as_deref(),
        Some("1 of 2 statement(s) not run: step 1 of 2 was interrupted")
    );
    assert!(audit[2].statement.contains("'pending'"), "{:?}", audit[2]);
}
