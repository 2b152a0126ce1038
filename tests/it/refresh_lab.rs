//! The refresh on the real Trino, where it once lied or froze: a table rolled back after a
//! compaction is judged by its current snapshot; a table read again on its own (a job
//! ended) while the refresh reads it never stops the refresh; a file read that fails
//! keeps the last good verdict and never caches a bound; a summary that counts no delete
//! files does not make the delete files vanish.

use crate::common;

use common::driver::{Driver, Setup};
use common::{lab, user};
use floe::app::action::Effect;
use floe::health::Severity;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::refresh::{Read, ReadKind};
use floe::trino::{Client, QueryOptions};
use serde_json::json;

fn owner() -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &user("refresh_owner"))).unwrap(),
        "iceberg",
        floe::health::HealthConfig::default(),
    )
}

async fn sql(lake: &Lakehouse, q: &str) -> Vec<floe::trino::Row> {
    lake.client
        .execute(q, QueryOptions::default())
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows
}

/// A table of its own, in a schema of its own (two CREATE SCHEMA of one name at once race
/// on the JDBC catalog), written by `inserts` INSERTs of one small file each.
async fn small_files(lake: &Lakehouse, name: &str, inserts: usize) -> TableRef {
    let schema = format!("r_{name}_{}", std::process::id());
    let t = TableRef::new("iceberg", &schema, "t");
    sql(
        lake,
        &format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"),
    )
    .await;
    sql(lake, &format!("DROP TABLE IF EXISTS {}", t.sql())).await;
    sql(
        lake,
        &format!("CREATE TABLE {} (id bigint, note varchar)", t.sql()),
    )
    .await;
    for i in 0..inserts {
        sql(
            lake,
            &format!("INSERT INTO {} VALUES ({i}, 'row {i}')", t.sql()),
        )
        .await;
    }
    t
}

/// A floe reading `t` alone through `url`.
async fn driver(name: &str, t: &TableRef, url: String) -> Driver {
    Driver::with(
        name,
        Setup {
            schema: &t.schema,
            globs: std::slice::from_ref(&t.table),
            probe_batch: 10,
            every: "1m",
            url,
        },
    )
    .await
}

/// A compaction rolled back (`rollback_to_snapshot`) leaves the table as it was: its small
/// files are the table's again, for an open floe (its probe sees the rollback) and for
/// `floe check`, although the newest snapshot committed is still the compaction's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolled_back_compaction_shows_the_small_files_again() {
    let lake = owner();
    let t = small_files(&lake, "rollback", 14).await;
    let before: i64 = sql(
        &lake,
        &format!(
            "SELECT snapshot_id FROM iceberg.{}.\"{}$snapshots\" ORDER BY committed_at DESC LIMIT 1",
            t.schema, t.table
        ),
    )
    .await[0]
        .i64("snapshot_id")
        .unwrap();
    let mut d = driver("rollback", &t, lab().trino_url()).await;
    d.cycle(true, false).await;
    assert_eq!(d.files_of(&t), Some(14));
    sql(&lake, &format!("ALTER TABLE {} EXECUTE optimize", t.sql())).await;
    d.cycle(false, false).await;
    assert_eq!(d.files_of(&t), Some(1), "the compaction is seen");
    sql(
        &lake,
        &format!(
            "CALL iceberg.system.rollback_to_snapshot('{}', '{}', {before})",
            t.schema, t.table
        ),
    )
    .await;
    // The probe sees the rollback (a new metadata file), the table is read as it is now.
    d.cycle(false, false).await;
    assert_eq!(
        d.files_of(&t),
        Some(14),
        "the small files are the table's again"
    );
    let row = d.state.tables.row(&t).unwrap();
    let st = row.read.stats.as_ref().unwrap();
    assert_eq!(st.snapshot_id, Some(before));
    assert_eq!(st.last_compaction, None, "its compaction was rolled back");
    // A cold start (a full read) and `floe check` say the same.
    let mut cold = driver("rollback_cold", &t, lab().trino_url()).await;
    cold.cycle(true, false).await;
    assert_eq!(cold.files_of(&t), Some(14));
    let settings = floe::config::load(&floe::config::Overrides {
        config: Some(cold.dir.join("config.toml")),
        ..Default::default()
    })
    .unwrap();
    let report = floe::report::check::run(&settings, &[]).await;
    let r = report
        .tables
        .iter()
        .find(|r| r.table == t)
        .expect("checked");
    let st = r.stats.as_ref().expect("read");
    assert_eq!((st.data_files, st.small_files), (14, 14), "{st:?}");
    assert_ne!(r.health.status, Severity::Ok, "{:?}", r.health);
}

/// A maintenance job's end reads its table again while the refresh reads it too (before,
/// the runtime aborted the refresh's read, whose answer never came: floe never refreshed
/// again, and `r` said a refresh was already running). Here the refresh ends, and the next
/// one sees a later write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_ends_while_its_table_is_read_never_stops_the_refresh() {
    let lake = owner();
    let t = small_files(&lake, "race", 3).await;
    let mut d = driver("race", &t, lab().trino_url()).await;
    d.cycle(true, false).await;
    assert_eq!(d.files_of(&t), Some(3));
    // A write the next refresh reads; the refresh's read of the table is in flight when
    // the job on it ends.
    sql(&lake, &format!("INSERT INTO {} VALUES (100, 'x')", t.sql())).await;
    d.start(false, false);
    let mut raced = false;
    while d.state.refresh_in_flight() {
        let fx = d.step().await.expect("the refresh goes on");
        let reading = fx.iter().any(|e| {
            matches!(e, Effect::Read { read, .. }
                if read.kind() == ReadKind::Table || matches!(read, Read::Survey(ts) if ts.contains(&t)))
        });
        if reading && !raced {
            raced = true;
            let again = floe::app::tables::reload_row(&mut d.state, &t).expect("a row");
            d.rt.run(vec![again]);
        }
    }
    assert!(raced, "the table was read by the refresh");
    d.finish().await;
    assert!(!d.state.refresh_in_flight(), "the refresh ended");
    assert_eq!(d.files_of(&t), Some(4));
    // Nothing is left in flight, and the next refresh starts and sees a later write.
    for _ in 0..20 {
        if d.state.tables.refresh.in_flight() == 0 {
            break;
        }
        d.step().await;
    }
    assert_eq!(d.state.tables.refresh.in_flight(), 0);
    sql(&lake, &format!("INSERT INTO {} VALUES (101, 'y')", t.sql())).await;
    d.cycle(false, false).await;
    assert_eq!(d.files_of(&t), Some(5), "the later write is seen");
}

/// `r` reads every table; the survey proves a bound, and the file read fails (the fault
/// proxy answers its statement 500): the last good verdict stays, marked with its error
/// and its age, and the cache keeps that verdict, never the bound (before, the bound was
/// cached and the next launch called the table unchanged: OK with no small files).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_file_read_keeps_the_last_verdict_and_caches_no_bound() {
    let lake = owner();
    let t = small_files(&lake, "bound", 13).await;
    let mut d = driver("bound", &t, lab().proxy_url()).await;
    d.cycle(true, false).await;
    let good = d.state.tables.row(&t).unwrap().read.clone();
    assert_eq!(good.stats.as_ref().map(|s| s.small_files), Some(13));
    assert!(!good.stats.as_ref().unwrap().files_unread);
    lab()
        .real_faults(
            &d.user,
            // (its files are read from `$files`, or `$partitions` where its totals
            // prove them all small)
            json!([{"kind": "status", "status": 500, "on": "post", "sql_contains": "$files",
                    "body": "lab: the file read refused"},
                   {"kind": "status", "status": 500, "on": "post", "sql_contains": "$partitions",
                    "body": "lab: the file read refused"}]),
        )
        .await;
    d.cycle(false, true).await;
    lab().clear_real_faults(&d.user).await;
    let row = d.state.tables.row(&t).unwrap();
    assert!(row.read.error.is_some(), "the failure is said");
    assert_eq!(row.read.stats, good.stats, "the last good verdict stays");
    assert_eq!(row.read.read_at, good.read_at, "with its age");
    assert!(row.read.bound.is_none());
    let cached = floe::cache::load(
        &d.dir.join("stats.json"),
        &d.state.conn.profile,
        &d.state.conn.trino_url,
    );
    let entry = cached.iter().find(|e| e.table == t).expect("cached");
    assert_eq!(entry.stats.small_files, 13);
    assert!(!entry.stats.files_unread, "no bound is cached");
}

/// A writer that records no `total-delete-files` in its summaries: the file read counts
/// the delete files (before, the data-only statement read them as none, and the TUI said
/// no delete files where `floe check` said there were).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_files_a_summary_does_not_count_are_read_not_taken_for_none() {
    let name = format!("deletes_untotalled_{}", std::process::id());
    lab()
        .post(
            "engine/clone_table",
            json!({"source": "layouts.zoo.with_deletes", "target": format!("scratch.{name}"),
                   "summary_without": ["total-delete-files", "total-position-deletes",
                                       "total-equality-deletes"]}),
        )
        .await;
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &user("deletes"))).unwrap(),
        "layouts",
        floe::health::HealthConfig::default(),
    );
    // Beside the layouts' own schema, which other subjects list as it is.
    let t = TableRef::new("layouts", "scratch", name.clone());
    let deletes: u64 = lake
        .client
        .execute(
            &format!(
                "SELECT count(*) AS n FROM layouts.scratch.\"{name}$files\" WHERE content <> 0"
            ),
            QueryOptions::default(),
        )
        .await
        .unwrap()
        .rows[0]
        .u64("n")
        .unwrap();
    assert!(deletes > 0, "the source has delete files");
    lake.connect().await.unwrap();
    let surveyed = lake.survey(std::slice::from_ref(&t)).await;
    let survey = surveyed[0].1.as_ref().unwrap();
    assert_eq!(
        survey.totals.delete_files, None,
        "the summary does not count them"
    );
    let item = floe::lakehouse::queries::FileItem::of(t.clone(), survey.stats(&lake.scan));
    let read = lake.files_batch(&[item]).await;
    let st = read[0].1.as_ref().unwrap();
    assert_eq!(st.delete_files, deletes, "{st:?}");
    assert!(!st.deletes_unknown);
    lake.client
        .execute(&format!("DROP TABLE {}", t.sql()), QueryOptions::default())
        .await
        .unwrap();
}

/// A maintenance job's statements are not the refresh's: the coordinator budget weighs
/// what the refresh spends (before, an optimize's task CPU counted, and the rotation probed
/// no table during the job and for minutes after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_maintenance_job_is_not_counted_against_the_refresh_budget() {
    let lake = owner();
    let t = small_files(&lake, "budget", 12).await;
    let mut d = driver("budget", &t, lab().trino_url()).await;
    d.cycle(true, false).await;
    // What the refresh asked for after its end (the coordinator's record of the queries
    // that read the table) lands first.
    let mut before = d.rt.refresh_cost();
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let now = d.rt.refresh_cost();
        if now == before {
            break;
        }
        before = now;
    }
    assert!(before.statements > 0, "the refresh is counted");
    let layout = lake.table_layout(&t).await.unwrap();
    let plan = floe::lakehouse::plan::optimize_plan(&t, &layout, &[], 96 << 20, false).unwrap();
    d.rt.run(vec![Effect::RunPlan { job: 1, plan }]);
    // The job's events are left unapplied: its end would read the table again, which is
    // the refresh's to count.
    let compacted = format!(
        "SELECT count(*) AS n FROM iceberg.{}.\"{}$snapshots\" WHERE operation = 'replace'",
        t.schema, t.table
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while sql(&lake, &compacted).await[0].u64("n") != Some(1) {
        assert!(std::time::Instant::now() < deadline, "the optimize commits");
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let after = d.rt.refresh_cost();
    let sent: Vec<String> = lab()
        .real_queries_of(&d.user)
        .await
        .iter()
        .map(|q| q["sql"].as_str().unwrap_or("").chars().take(60).collect())
        .collect();
    assert_eq!(
        after.statements, before.statements,
        "the optimize ran on a meter of its own: {sent:#?}"
    );
}

/// The header's refresh age in seconds (`4s ago, next 5s`, `refreshing… (6s ago)`), none
/// before the first refresh.
fn header_age(screen: &str) -> Option<i64> {
    let head = screen.lines().next()?;
    let before = &head[..head.find(" ago")?];
    let token = before.rsplit([' ', '(']).next()?;
    let (n, unit) = token.split_at(token.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = n.parse().ok()?;
    Some(match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return None,
    })
}

/// An open floe at `--refresh 5s` through an optimize of 60 statements (one partition
/// each: the session holds the writers to one partition) keeps refreshing during the job
/// and after it: the header's age never goes above two periods (before the refresh was
/// one value, a read replaced by the job's end was never answered, and the header read
/// "refreshing… (1m ago)" for good).
#[test]
fn an_open_floe_keeps_refreshing_through_an_optimize_of_sixty_statements() {
    use common::pty::Pty;
    use std::time::{Duration, Instant};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let schema = format!("r_sixty_{}", std::process::id());
    let lake = owner();
    rt.block_on(async {
        sql(
            &lake,
            &format!("CREATE SCHEMA IF NOT EXISTS iceberg.{schema}"),
        )
        .await;
        sql(&lake, &format!("DROP TABLE IF EXISTS iceberg.{schema}.t")).await;
        sql(
            &lake,
            &format!(
                "CREATE TABLE iceberg.{schema}.t (id bigint, part integer) \
                 WITH (partitioning = ARRAY['part'])"
            ),
        )
        .await;
        // Three writes of one file in each of the 60 partitions.
        for _ in 0..3 {
            sql(
                &lake,
                &format!(
                    "INSERT INTO iceberg.{schema}.t SELECT x, CAST(x % 60 AS integer) \
                     FROM UNNEST(sequence(0, 59)) AS u(x)"
                ),
            )
            .await;
        }
    });
    let dir = std::env::temp_dir().join(format!("floe-sixty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "audit_log = {:?}\n[trino]\nurl = {:?}\nuser = {:?}\ncatalog = \"iceberg\"\n\
             schemas = [{schema:?}]\nsession = {{ \"iceberg.max_partitions_per_writer\" = \"1\" }}\n",
            dir.join("audit.jsonl").display().to_string(),
            lab().trino_url(),
            user("sixty"),
        ),
    )
    .unwrap();
    let mut pty = Pty::spawn_env(
        &["--config", config.to_str().unwrap(), "--refresh", "5s"],
        &[("XDG_STATE_HOME", dir.join("state").to_str().unwrap())],
        140,
        36,
    );
    pty.wait_for("the table, read", Duration::from_secs(120), |s| {
        s.contains("t: 180 small files") && s.contains("o optimize t")
    });
    pty.send(b"o");
    let plan = pty.wait_for("the plan of 60 statements", Duration::from_secs(60), |s| {
        s.contains("EXECUTE optimize") && s.contains("60 statements")
    });
    pty.answer(b"y");
    pty.wait_for("the job line", Duration::from_secs(30), |s| {
        s.contains("▶ optimize")
    });
    // Every half second until 30 s after the job's end: the age stays within two periods.
    let start = Instant::now();
    let mut ended: Option<Instant> = None;
    let mut oldest = 0;
    while ended.is_none_or(|e| e.elapsed() < Duration::from_secs(30)) {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the job ends: {}",
            pty.screen()
        );
        let s = pty.screen();
        if let Some(age) = header_age(&s) {
            oldest = oldest.max(age);
            assert!(
                age <= 10,
                "the header's age {age}s, two periods are 10s:\n{s}"
            );
        }
        if ended.is_none() && s.contains("of 60 statements done") {
            ended = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    eprintln!("the header's oldest age: {oldest}s; plan:\n{plan}");
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let succeeded = audit
        .lines()
        .filter(|l| l.contains("\"outcome\":\"succeeded\"") && l.contains("EXECUTE optimize"))
        .count();
    assert_eq!(succeeded, 60, "{audit}");
    pty.send(b"q");
    pty.wait_exit(Duration::from_secs(30));
    let _ = std::fs::remove_dir_all(&dir);
    rt.block_on(sql(&lake, &format!("DROP TABLE iceberg.{schema}.t")));
}

#[test]
fn the_header_age_reads_both_forms() {
    assert_eq!(header_age(" floe │ x │ 4s ago, next 5s"), Some(4));
    assert_eq!(header_age(" floe │ x │ refreshing… (1m ago)"), Some(60));
    assert_eq!(header_age(" floe │ x │ refreshing… (- ago)"), None);
}
