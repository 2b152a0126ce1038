//! A long optimize on the real Trino, and what an operator meets around one: the job line
//! reads the coordinator's own stats, `c` and quit cancel it there (`USER_CANCELED` in
//! `system.runtime.queries`), a concurrent DELETE that commits first makes it fail in
//! Trino's words with nothing of it committed, a concurrent INSERT does not conflict and
//! loses no row, and a table dropped between the plan and `y` fails its first statement
//! and runs no other.

use crate::common;
use crate::common::pty;

use std::time::{Duration, Instant};

use common::lab;
use floe::health::HealthConfig;
use floe::lakehouse::delta::TableFormat;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::plan::optimize_plan;
use floe::lakehouse::queries::Lakehouse;
use floe::mutation::audit::AuditLog;
use floe::mutation::audit::{Outcome, RunContext};
use floe::mutation::run::{RunError, StepEvent, run_plan};
use floe::trino::{Client, QueryOptions};
use pty::Pty;
use tokio_util::sync::CancellationToken;

pub(crate) fn lakehouse(user: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), user)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
}

pub(crate) fn user(name: &str) -> String {
    format!("ro_{name}_{}", std::process::id())
}

async fn sql(lake: &Lakehouse, q: &str) {
    lake.client
        .query(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"));
}

async fn count(lake: &Lakehouse, q: &str) -> u64 {
    lake.client
        .query(q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows[0]
        .u64("n")
        .unwrap()
}

/// A table of its own (schema `t_long_<name>`): `thousands` × 1,000 rows of a 64-character
/// payload with a `part` column (0-3) that is its identity partitioning when `partitioned`,
/// written in files of about 1 MB (`iceberg.target_max_file_size`), so that optimizing it
/// is seconds of the coordinator's own work: long enough to be watched, raced and cancelled.
pub(crate) async fn long_table(
    lake: &Lakehouse,
    name: &str,
    thousands: u32,
    partitioned: bool,
) -> TableRef {
    long_table_of(lake, TableFormat::Iceberg, name, thousands, partitioned).await
}

/// [`long_table`] in `lake`'s catalog, of `format` (a Delta Lake table's files are about
/// 0.5 MB at the same target: 108 files for 1,500 thousand rows on Trino 476).
pub(crate) async fn long_table_of(
    lake: &Lakehouse,
    format: TableFormat,
    name: &str,
    thousands: u32,
    partitioned: bool,
) -> TableRef {
    let catalog = lake.catalog.as_str();
    let schema = format!("t_long_{name}");
    let t = TableRef::new(catalog, &schema, format!("{name}_{}", std::process::id()));
    sql(
        lake,
        &format!("CREATE SCHEMA IF NOT EXISTS \"{catalog}\".{schema}"),
    )
    .await;
    sql(lake, &format!("DROP TABLE IF EXISTS {}", t.sql())).await;
    let by = if partitioned { "'part'" } else { "" };
    let (with, size) = match format {
        TableFormat::Iceberg => (format!("partitioning = ARRAY[{by}]"), "iceberg"),
        TableFormat::Delta => (format!("partitioned_by = ARRAY[{by}]"), "delta"),
    };
    let ctas = format!(
        "CREATE TABLE {} WITH ({with}) AS \
         SELECT CAST(a % 4 AS integer) AS part, CAST(a AS bigint) * 1000 + b AS id, \
                to_hex(sha256(to_utf8(CAST(a * 1000 + b AS varchar)))) AS payload \
         FROM UNNEST(sequence(1, {thousands})) AS x(a) CROSS JOIN UNNEST(sequence(1, 1000)) AS y(b)",
        t.sql(),
    );
    lake.client
        .execute(
            &ctas,
            QueryOptions {
                session: vec![(format!("{size}.target_max_file_size"), "1MB".into())],
                deadline: Some(Some(Duration::from_secs(600))),
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{ctas}: {e}"));
    t
}

async fn data_files(lake: &Lakehouse, t: &TableRef) -> u64 {
    count(
        lake,
        &format!("SELECT count(*) AS n FROM {}", t.meta("files")),
    )
    .await
}

/// The operations of `t`'s snapshots, oldest first.
async fn operations(lake: &Lakehouse, t: &TableRef) -> Vec<String> {
    lake.client
        .query(&format!(
            "SELECT operation FROM {} ORDER BY committed_at, snapshot_id",
            t.meta("snapshots")
        ))
        .await
        .unwrap()
        .rows
        .iter()
        .map(|r| r.str("operation").unwrap_or("").to_string())
        .collect()
}

fn ctx(name: &str, user: &str) -> RunContext {
    let path =
        std::env::temp_dir().join(format!("floe-audit-ro-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&path);
    RunContext {
        profile: "lab".into(),
        user: user.into(),
        target: lab().trino_url(),
        readonly: false,
        audit: AuditLog::new(path),
    }
}

/// `u`'s optimize as the real coordinator lists it, once it is RUNNING there.
async fn running_optimize(u: &str) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let q = lab().real_queries_of(u).await;
        if let Some(q) = q.into_iter().find(|q| {
            q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize") && q["state"] == "RUNNING"
        }) {
            return q;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the optimize never ran on the real Trino"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn real_query(u: &str, id: &str) -> serde_json::Value {
    lab()
        .real_queries_of(u)
        .await
        .into_iter()
        .find(|q| q["id"] == id)
        .unwrap_or_else(|| panic!("query {id} of {u} is not in system.runtime.queries"))
}

/// A whole-table optimize of `t` run by floe as `u`, while `other` — another client — runs
/// once the optimize is RUNNING on the coordinator. Returns floe's result, the query id of
/// the optimize and whether it was still running when `other` ended.
async fn optimize_racing(
    t: &TableRef,
    u: &str,
    c: &RunContext,
    other: &str,
) -> (Result<(), RunError>, String, bool) {
    let plan = optimize_plan(t, &Default::default(), &[], 96 << 20, false).unwrap();
    assert_eq!(plan.steps.len(), 1, "{plan:?}");
    let lake = lakehouse(u);
    let c2 = c.clone();
    let run = tokio::spawn(async move {
        run_plan(
            &lake,
            &plan,
            &c2,
            CancellationToken::new(),
            &|_: StepEvent| {},
        )
        .await
        .map(|_| ())
    });
    let q = running_optimize(u).await;
    let writer = lakehouse("floe");
    sql(&writer, other).await;
    let id = q["id"].as_str().unwrap().to_string();
    let still_running = real_query(u, &id).await["state"] == "RUNNING";
    (run.await.unwrap(), id, still_running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optimize_that_loses_its_commit_to_a_delete_fails_in_trinos_words_and_commits_nothing() {
    let owner = lakehouse("floe");
    let t = long_table(&owner, "race", 1500, true).await;
    let files = data_files(&owner, &t).await;
    assert!(
        files > 20,
        "{files} files: the table is written in many files"
    );
    let rows = count(&owner, &format!("SELECT count(*) AS n FROM {}", t.sql())).await;
    let u = user("race");
    let c = ctx("race", &u);
    // A whole partition deleted: a metadata-only DELETE that removes files the running
    // optimize read, committed while the optimize still runs.
    let delete = format!("DELETE FROM {} WHERE part = 0", t.sql());
    let (result, id, still_running) = optimize_racing(&t, &u, &c, &delete).await;
    assert!(
        still_running,
        "the optimize ended before the DELETE committed: no race was made"
    );
    let err = result.unwrap_err().to_string();
    let q = real_query(&u, &id).await;
    assert_eq!(q["state"], "FAILED", "{q}");
    let name = q["error_name"].as_str().unwrap().to_string();
    assert!(
        err.starts_with(&format!("{name}: ")) && err.contains(&id),
        "floe says Trino's own error name and query id: {err} / {q}"
    );
    assert!(
        err.contains("the table changed while the statement ran")
            && err.contains("Iceberg committed nothing of it"),
        "and what it means: {err}"
    );
    // Nothing of the optimize was committed: the DELETE's snapshot is the only new one.
    assert_eq!(
        operations(&owner, &t).await,
        vec!["append", "delete"],
        "{err}"
    );
    let left = count(&owner, &format!("SELECT count(*) AS n FROM {}", t.sql())).await;
    assert_eq!(left, rows - rows / 4, "every row the DELETE kept is there");
    let audit = c.audit.read_all();
    let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["started", "failed"]);
    assert_eq!(audit[1].query_id.as_deref(), Some(id.as_str()));
    assert_eq!(audit[1].error.as_deref(), Some(err.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_insert_does_not_conflict_with_an_optimize_and_every_row_survives() {
    let owner = lakehouse("floe");
    let t = long_table(&owner, "append", 1500, true).await;
    let rows = count(&owner, &format!("SELECT count(*) AS n FROM {}", t.sql())).await;
    let u = user("append");
    let c = ctx("append", &u);
    let insert = format!(
        "INSERT INTO {} VALUES (1, -1, 'inserted while the optimize ran')",
        t.sql()
    );
    let (result, _, still_running) = optimize_racing(&t, &u, &c, &insert).await;
    assert!(
        still_running,
        "the optimize ended before the INSERT committed"
    );
    result.unwrap();
    // Iceberg retries the rewrite's commit over the new snapshot: an append adds files,
    // it removes none the rewrite replaced.
    assert_eq!(
        operations(&owner, &t).await,
        vec!["append", "append", "replace"]
    );
    let after = count(&owner, &format!("SELECT count(*) AS n FROM {}", t.sql())).await;
    assert_eq!(after, rows + 1);
    let kept = count(
        &owner,
        &format!("SELECT count(*) AS n FROM {} WHERE id = -1", t.sql()),
    )
    .await;
    assert_eq!(kept, 1);
}

#[tokio::test]
async fn a_table_dropped_between_the_plan_and_y_fails_its_first_statement_and_runs_no_other() {
    let owner = lakehouse("floe");
    let schema = "t_long_dropped";
    let t = TableRef::new("iceberg", schema, format!("dropped_{}", std::process::id()));
    sql(
        &owner,
        &format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"),
    )
    .await;
    sql(&owner, &format!("DROP TABLE IF EXISTS {}", t.sql())).await;
    sql(
        &owner,
        &format!(
            "CREATE TABLE {} (id bigint, region varchar) WITH (partitioning = ARRAY['region'])",
            t.sql()
        ),
    )
    .await;
    for v in ["(1, 'a')", "(2, 'a')", "(3, 'b')", "(4, 'b')"] {
        sql(&owner, &format!("INSERT INTO {} VALUES {v}", t.sql())).await;
    }
    let u = user("dropped");
    let lake = lakehouse(&u);
    let layout = lake.table_layout(&t).await.unwrap();
    let parts = lake.partitions(&t).await.unwrap().partitions;
    let plan = optimize_plan(&t, &layout, &parts, 96 << 20, false).unwrap();
    assert_eq!(plan.steps.len(), 2, "{plan:?}");
    // The plan is on screen; someone drops the table; the operator presses `y`.
    sql(&owner, &format!("DROP TABLE {}", t.sql())).await;
    let c = ctx("dropped", &u);
    let err = run_plan(&lake, &plan, &c, CancellationToken::new(), &|_| {})
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("TABLE_NOT_FOUND: ") && err.ends_with("; 1 remaining statement(s) not run"),
        "{err}"
    );
    assert!(err.contains(&t.table), "the error names the table: {err}");
    let audit = c.audit.read_all();
    let outcomes: Vec<&str> = audit.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, vec!["started", "failed", "not_run"]);
    assert_eq!(
        audit[2].error.as_deref(),
        Some("1 of 2 statement(s) not run: step 1 of 2 did not succeed")
    );
    let sent: Vec<serde_json::Value> = lab()
        .real_queries_of(&u)
        .await
        .into_iter()
        .filter(|q| q["sql"].as_str().unwrap_or("").contains("EXECUTE optimize"))
        .collect();
    assert_eq!(
        sent.len(),
        1,
        "the second statement was never sent: {sent:?}"
    );
    assert_eq!(sent[0]["error_name"], "TABLE_NOT_FOUND", "{sent:?}");
}

/// floe in a terminal on the real Trino, showing only `t`, as user `u`.
pub(crate) fn tui_on(t: &TableRef, u: &str, dir: &std::path::Path) -> Pty {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "audit_log = {:?}\n[trino]\nurl = {:?}\nuser = {u:?}\ncatalog = {:?}\nschemas = [{:?}]\ntables = [\"{}.{}\"]\n",
            dir.join("audit.jsonl").display().to_string(),
            lab().trino_url(),
            t.catalog,
            t.schema,
            t.schema,
            t.table,
        ),
    )
    .unwrap();
    let pty = Pty::spawn(&["--config", config.to_str().unwrap()], 120, 30);
    pty.wait_for("the table, loaded", Duration::from_secs(120), |s| {
        s.lines()
            .any(|l| l.contains(&t.table) && !l.contains('~') && !l.contains('…'))
    });
    pty
}

/// The job line's stats, `(completed splits, total splits, rows)`, when it shows them.
pub(crate) fn job_stats(screen: &str) -> Option<(u64, u64, u64)> {
    let line = screen.lines().find(|l| l.contains("▶ optimize"))?;
    let (before, after) = line.split_once(" splits, ")?;
    let (done, total) = before.rsplit(' ').next()?.split_once('/')?;
    let rows = after.split(" rows").next()?.replace(',', "");
    Some((done.parse().ok()?, total.parse().ok()?, rows.parse().ok()?))
}

/// `o` then `y` on the selected (only, unpartitioned) table: a plan of one statement;
/// returns the job line once it shows the coordinator's stats of that query, scheduled,
/// with rows processed.
pub(crate) fn start_optimize(pty: &mut Pty) -> String {
    pty.send(b"o");
    pty.wait_for("the confirm popup", Duration::from_secs(60), |s| {
        s.contains("EXECUTE optimize")
    });
    pty.answer(b"y");
    let screen = pty.wait_for(
        "the real stats on the job line",
        Duration::from_secs(120),
        |s| job_stats(s).is_some_and(|(_, total, rows)| total > 0 && rows > 0),
    );
    screen
        .lines()
        .find(|l| l.contains("▶ optimize"))
        .unwrap()
        .to_string()
}

/// The audit's cancelled record of a plan cut in its running statement, and that query as
/// the coordinator ended it.
fn assert_cancelled_on_trino(dir: &std::path::Path, u: &str, outcome: &str) {
    let audit = AuditLog::new(dir.join("audit.jsonl")).read_all();
    let cut = audit
        .iter()
        .find(|r| r.outcome.as_str() == outcome)
        .unwrap_or_else(|| panic!("no {outcome} record: {audit:?}"));
    let id = cut
        .query_id
        .clone()
        .expect("the cancelled record has its query id");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let q = rt.block_on(real_query(u, &id));
    assert_eq!(q["state"], "FAILED", "{q}");
    assert_eq!(q["error_name"], "USER_CANCELED", "{q}");
    // Every statement before the cut succeeded, none after it was sent.
    let started = audit
        .iter()
        .filter(|r| r.outcome == Outcome::Started)
        .count();
    let succeeded = audit
        .iter()
        .filter(|r| r.outcome == Outcome::Succeeded)
        .count();
    assert_eq!(started, succeeded + 1, "{audit:?}");
}

/// `c` on the running optimize, then `q`: the job shown cancelled, the terminal given
/// back, the statement cancelled on Trino and audited so.
pub(crate) fn cancel_then_quit(pty: &mut Pty, dir: &std::path::Path, u: &str) {
    pty.send(b"c");
    pty.wait_for("the cancelled job", Duration::from_secs(60), |s| {
        s.contains("⊘ optimize") && s.contains("cancelled")
    });
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(15)).success());
    pty.assert_restored();
    assert_cancelled_on_trino(dir, u, "cancelled");
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn the_job_line_reads_the_real_stats_and_c_cancels_the_optimize_on_trino() {
    let rt = runtime();
    let owner = lakehouse("floe");
    let t = rt.block_on(long_table(&owner, "gauge", 1500, false));
    let u = user("gauge");
    let dir = std::env::temp_dir().join(format!("floe-ro-gauge-{}", std::process::id()));
    let mut pty = tui_on(&t, &u, &dir);
    let line = start_optimize(&mut pty);
    let (done, total, _) = job_stats(&line).unwrap();
    assert!(done <= total, "{line}");
    assert!(
        line.contains(" 1/1 ") && line.contains("· table ·"),
        "one statement: {line}"
    );
    cancel_then_quit(&mut pty, &dir, &u);
    // Unpartitioned: the plan is one statement, and the cancelled one committed nothing.
    let ops = rt.block_on(operations(&owner, &t));
    assert_eq!(
        ops,
        vec!["append"],
        "the cancelled optimize committed nothing"
    );
}

#[test]
fn quitting_while_a_real_optimize_runs_cancels_it_on_trino() {
    let rt = runtime();
    let owner = lakehouse("floe");
    // Twice the gauge test's table: the optimize must still run when the quit's `y` is
    // answered (on an unloaded lab 1,500 thousand rows optimized in 2.8 s, before it).
    let t = rt.block_on(long_table(&owner, "quit", 3000, false));
    let u = user("quit");
    let dir = std::env::temp_dir().join(format!("floe-ro-quit-{}", std::process::id()));
    let mut pty = tui_on(&t, &u, &dir);
    start_optimize(&mut pty);
    pty.send(b"q");
    pty.wait_for("the quit question", Duration::from_secs(10), |s| {
        s.contains("quit while jobs run?")
    });
    pty.answer(b"y");
    assert!(pty.wait_exit(Duration::from_secs(30)).success());
    pty.assert_restored();
    assert_cancelled_on_trino(&dir, &u, "cancelled");
}
