//! What an open floe costs the coordinator, counted on the lab: statements per refresh
//! when nothing changed, one health statement for one written table, and a broken table
//! that cannot blind the others of its probe batch. The refresh runs as the TUI runs it:
//! `update` plans it, the runtime executes its effects against the lab.

use crate::common;

use std::time::Duration;

use common::driver::Driver;
use common::{lab, user};
use floe::config;
use floe::lakehouse::model::TableRef;
use floe::lakehouse::queries::Lakehouse;
use floe::trino::{Client, QueryOptions};
use serde_json::Value;

/// Statements of `user` by kind: (discovery, probes, file reads, metadata-only reads of
/// the tables themselves: the surveys and the target and manifests read ahead of the
/// file reads).
/// A driver whose refreshes are counted by kind of statement.
struct Fleet(Driver);

impl std::ops::Deref for Fleet {
    type Target = Driver;
    fn deref(&self) -> &Driver {
        &self.0
    }
}

impl std::ops::DerefMut for Fleet {
    fn deref_mut(&mut self) -> &mut Driver {
        &mut self.0
    }
}

impl Fleet {
    async fn new(name: &str, globs: &[String], batch: usize, every: &str) -> Fleet {
        Fleet(Driver::new(name, globs, batch, every).await)
    }

    /// Run one refresh to its end; the statements it sent, by kind.
    async fn cycle(&mut self, first: bool, manual: bool) -> (usize, usize, usize, usize) {
        let before = lab().real_queries_of(&self.user).await.len();
        self.0.cycle(first, manual).await;
        let qs = lab().real_queries_of(&self.user).await;
        kinds(&qs[before..])
    }

    fn snapshots_of(&self, t: &TableRef) -> u64 {
        let row = self.state.tables.row(t).expect("the table is listed");
        assert!(row.error().is_none(), "{t}: {:?}", row.error());
        row.stats().expect("stats").snapshots
    }
}

pub fn kinds(qs: &[Value]) -> (usize, usize, usize, usize) {
    let mut k = (0, 0, 0, 0);
    for q in qs {
        let sql = q["sql"].as_str().unwrap_or("");
        if sql.contains("system.runtime.queries") {
            // The coordinator's own record of recent queries (what the tables' readers
            // suffered): no table of the fleet is read, so it is none of the four kinds.
            continue;
        }
        if sql.contains("iceberg_tables") || sql.contains("information_schema") {
            k.0 += 1;
        } else if sql.contains("partition_fields")
            || sql.contains(" AS history")
            || sql.contains("parent_id, summary")
        {
            // A survey, or the target and manifests of the tables whose files are read.
            k.3 += 1;
        } else if sql.contains("$files") || sql.contains("$entries") || sql.contains("$partitions")
        {
            // A file read: several tables a statement in a refresh, one for a table read
            // alone (`$entries` where the server has it).
            k.2 += 1;
        } else if sql.starts_with("SELECT 0 AS i") {
            k.1 += 1;
        } else {
            k.3 += 1;
        }
    }
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steady_refresh_probes_and_reads_only_the_written_table() {
    let pid = std::process::id();
    let mut clones = Vec::new();
    for (i, source) in ["zoning.documents", "zoning.parcels", "audit.events"]
        .iter()
        .enumerate()
    {
        let name = format!("fleet_{i}_{pid}");
        lab().clone_table(source, &format!("scratch.{name}")).await;
        clones.push(TableRef::new("iceberg", "scratch", name));
    }
    let mut f = Fleet::new("steady", &[format!("scratch.fleet_?_{pid}")], 2, "1m").await;

    // The first refresh surveys the three in one statement (their snapshots alone), reads
    // the target and manifests of those whose files can change their verdict in one more
    // (documents' 2,004 and events' 360; the parcels copy's 8 only if its summary lacks
    // the totals that rule them out), then their files, one statement each.
    let (disc, probes, health, surveys) = f.cycle(true, false).await;
    let read = f
        .state
        .tables
        .rows
        .iter()
        .filter(|r| r.stats().is_some_and(|s| !s.files_unread))
        .count();
    assert!((2..=3).contains(&read), "{read}");
    // Their files in one statement (up to FILE_BATCH tables a statement); the age of
    // documents' small files (compacted once: its staleness is their age) from its
    // history, which settles it (compacted 15 days ago, appends since): no read of them.
    assert_eq!((disc, probes, health, surveys), (1, 0, 1, 2));
    let failed: Vec<Value> = lab()
        .real_queries_of(&f.user)
        .await
        .into_iter()
        .filter(|q| !q["error_name"].is_null())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    assert_eq!(f.state.tables.rows.len(), 3);
    // The survey leaves the metadata log to the change probe: no cold statement reads it.
    let logged: Vec<String> = lab()
        .real_queries_of(&f.user)
        .await
        .iter()
        .filter_map(|q| q["sql"].as_str())
        .filter(|q| q.contains("$metadata_log_entries"))
        .map(str::to_string)
        .collect();
    assert!(logged.is_empty(), "{logged:#?}");
    assert!(
        f.state
            .tables
            .rows
            .iter()
            .all(|r| r.stats().is_some_and(|s| s.metadata_files.is_none()))
    );

    // Nothing changed: the rotation looks at all three (within 1m at a 60 s refresh),
    // ⌈3/2⌉ probes, no read; no listing (the cold start's stands five minutes).
    let (disc, probes, health, other) = f.cycle(false, false).await;
    assert_eq!((disc, probes, health, other), (0, 2, 0, 0));
    assert!(
        f.state
            .tables
            .rows
            .iter()
            .all(
                |r| f.state.tables.standing(r) == floe::refresh::Standing::Idle
                    && r.error().is_none()
                    && r.read.checked_at.is_some()
            )
    );
    // The probe gave each table its metadata log: the metadata files' rule has its count,
    // and the next probe compares the newest metadata file.
    for r in &f.state.tables.rows {
        let st = r.stats().unwrap();
        assert!(
            st.metadata_files.is_some_and(|n| n >= 1) && st.metadata_at.is_some(),
            "{}: {st:?}",
            r.name
        );
    }

    // Only the tables the coordinator's writes name (no rotation): a write through it
    // shows within one refresh, and nothing else is probed.
    let mut f = Fleet::new("steady_w", &[format!("scratch.fleet_?_{pid}")], 2, "0s").await;
    f.cycle(true, false).await;
    let (_, _, health, _) = f.cycle(false, false).await;
    assert_eq!(health, 0, "nothing written since");
    let (disc, probes, health, _) = f.cycle(false, false).await;
    assert_eq!(
        (disc, probes, health),
        (0, 0, 0),
        "no write, no probe, no listing"
    );
    let written = &clones[0];
    let before = f.snapshots_of(written);
    let writer = Client::new(lab().config(&lab().trino_url(), &user("steady_writer"))).unwrap();
    writer
        .execute(
            &format!(
                "ALTER TABLE {} EXECUTE optimize(file_size_threshold => '96MB')",
                written.sql()
            ),
            QueryOptions::default(),
        )
        .await
        .unwrap();
    let (disc, probes, health, surveys) = f.cycle(false, false).await;
    assert_eq!(
        (disc, probes, health, surveys),
        (0, 0, 1, 1),
        "the written table read again without a probe: surveyed (with its target and manifests) and its files read"
    );
    assert_eq!(f.snapshots_of(written), before + 1, "the change is noticed");
    // Seen from the coordinator's query list: no statement over its record was sent.
    let record_reads = lab()
        .real_queries_of(&f.user)
        .await
        .iter()
        .filter(|q| {
            q["sql"]
                .as_str()
                .unwrap_or("")
                .contains("system.runtime.queries")
        })
        .count();
    assert_eq!(record_reads, 0, "the writes read from GET /v1/query");

    // A table created through the coordinator: the refresh after the one that reads its
    // CREATE among the writes lists it. Dropped: its read fails TABLE_NOT_FOUND and the
    // next refresh lists without it.
    let created = TableRef::new("iceberg", "scratch", format!("fleet_9_{pid}"));
    let (create, drop) = (
        format!("CREATE TABLE {} (id bigint)", created.sql()),
        format!("DROP TABLE {}", created.sql()),
    );
    let run = |sql: String| async move {
        let c = Client::new(lab().config(&lab().trino_url(), &user("steady_writer"))).unwrap();
        c.execute(&sql, QueryOptions::default()).await.unwrap();
    };
    run(create).await;
    let (disc, ..) = f.cycle(false, false).await;
    assert_eq!(disc, 0, "the writes are read after the listing was taken");
    assert!(f.state.tables.row(&created).is_none());
    let (disc, ..) = f.cycle(false, false).await;
    assert_eq!(disc, 1, "listed for the table the writes named");
    assert!(f.state.tables.row(&created).is_some());
    run(drop).await;
    let (disc, ..) = f.cycle(false, false).await;
    assert_eq!(disc, 0);
    assert!(
        f.state
            .tables
            .row(&created)
            .is_some_and(|r| r.error().is_some()),
        "its read failed"
    );
    let (disc, ..) = f.cycle(false, false).await;
    assert_eq!(disc, 1, "listed for the table gone");
    assert!(f.state.tables.row(&created).is_none());

    // `r` reads everything: one survey, the target and manifests of the tables whose
    // files matter (one statement), and their files.
    let (_, _, health, surveys) = f.cycle(false, true).await;
    // (documents' copy was compacted above: no small files left to date.)
    assert_eq!((health, surveys), (1, 2));
}

/// A coordinator that does not serve its query list to floe (a proxy or gateway answering
/// 404 for `GET /v1/query`): the writes are read with a statement over
/// `system.runtime.queries`, the list is not asked again, and a write still shows within
/// one refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_query_list_the_writes_are_read_with_a_statement() {
    let pid = std::process::id();
    let name = format!("fleet_nolist_{pid}");
    lab()
        .clone_table("audit.events", &format!("scratch.{name}"))
        .await;
    let t = TableRef::new("iceberg", "scratch", name.clone());
    let mut f = Fleet(
        Driver::with(
            "nolist",
            common::driver::Setup {
                schema: "scratch",
                globs: std::slice::from_ref(&name),
                probe_batch: 10,
                every: "0s",
                url: lab().proxy_url(),
            },
        )
        .await,
    );
    lab()
        .real_faults(
            &f.user,
            serde_json::json!([{"kind": "status", "status": 404, "on": "queries", "count": null}]),
        )
        .await;
    f.cycle(true, false).await;
    f.cycle(false, false).await;
    let before = f.snapshots_of(&t);
    let writer = Client::new(lab().config(&lab().trino_url(), &user("nolist_writer"))).unwrap();
    writer
        .execute(
            &format!("ALTER TABLE {} EXECUTE optimize", t.sql()),
            QueryOptions::default(),
        )
        .await
        .unwrap();
    let (disc, probes, health, _) = f.cycle(false, false).await;
    assert_eq!(
        (disc, probes, health),
        (0, 0, 1),
        "the written table read again"
    );
    assert_eq!(f.snapshots_of(&t), before + 1, "the change is noticed");
    let lists: Vec<Value> = lab()
        .proxy_requests_of(&f.user)
        .await
        .into_iter()
        .filter(|r| r["path"].as_str().unwrap_or("").starts_with("/v1/query"))
        .collect();
    assert_eq!(lists.len(), 1, "asked once, then learned: {lists:#?}");
    assert_eq!(lists[0]["status"], 404, "{lists:#?}");
    let record_reads: Vec<String> = lab()
        .real_queries_of(&f.user)
        .await
        .iter()
        .filter_map(|q| q["sql"].as_str())
        .filter(|q| q.contains("system.runtime.queries"))
        .map(str::to_string)
        .collect();
    let writes = record_reads
        .iter()
        .filter(|q| q.contains("\"end\" > from_unixtime"))
        .count();
    assert_eq!(
        writes, 2,
        "the writes, one statement a steady refresh (the Triage's history of its worst table besides): {record_reads:#?}"
    );
    lab().clear_real_faults(&f.user).await;
}

/// What the periodic full re-read used to be there for — commits that add no data: a
/// property, schema or partition-spec change, an expiry — the probe sees on its own
/// (each writes a new metadata file), and exactly that table is read again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_sees_commits_that_write_no_data_and_rereads_only_that_table() {
    let pid = std::process::id();
    let mut clones = Vec::new();
    for (i, source) in ["zoning.documents", "audit.events"].iter().enumerate() {
        let name = format!("fleet_meta_{i}_{pid}");
        lab().clone_table(source, &format!("scratch.{name}")).await;
        clones.push(TableRef::new("iceberg", "scratch", name));
    }
    let mut f = Fleet::new("meta", &[format!("scratch.fleet_meta_?_{pid}")], 50, "1m").await;
    let (_, _, health, _) = f.cycle(true, false).await;
    assert_eq!(
        health, 1,
        "both tables' files in one statement, documents' small files dated by its history"
    );
    let (disc, probes, health, _) = f.cycle(false, false).await;
    assert_eq!((disc, probes, health), (0, 1, 0), "nothing changed");
    let (changed, other) = (&clones[0], &clones[1]);
    let other_read = f.state.tables.row(other).unwrap().read.read_at;
    let snapshots = f.snapshots_of(changed);
    let writer = Client::new(lab().config(&lab().trino_url(), &user("meta_writer"))).unwrap();
    for (what, sql) in [
        (
            "a property change",
            format!(
                "ALTER TABLE {} SET PROPERTIES format = 'ORC'",
                changed.sql()
            ),
        ),
        (
            "a schema change",
            format!(
                "ALTER TABLE {} ADD COLUMN probe_note_{pid} varchar",
                changed.sql()
            ),
        ),
        (
            "a partition-spec change",
            format!(
                "ALTER TABLE {} SET PROPERTIES partitioning = ARRAY[]",
                changed.sql()
            ),
        ),
        (
            "an expiry",
            format!(
                "ALTER TABLE {} EXECUTE expire_snapshots(retention_threshold => '7d')",
                changed.sql()
            ),
        ),
    ] {
        let before = f
            .state
            .tables
            .row(changed)
            .unwrap()
            .read
            .stats
            .clone()
            .unwrap();
        writer
            .execute(&sql, QueryOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{what}: {sql}: {e}"));
        let (disc, probes, health, _) = f.cycle(false, false).await;
        assert_eq!(
            (disc, probes, health),
            (0, 1, 1),
            "{what}: one probe, then the health statement of that table alone"
        );
        let after = f
            .state
            .tables
            .row(changed)
            .unwrap()
            .read
            .stats
            .clone()
            .unwrap();
        assert_ne!(after.metadata_at, before.metadata_at, "{what}: re-read");
        assert_eq!(
            f.state.tables.row(other).unwrap().read.read_at,
            other_read,
            "{what}: the other table is not read again"
        );
    }
    assert!(
        f.snapshots_of(changed) < snapshots,
        "the expiry removed snapshots ({snapshots} before)"
    );
    // Nothing since: the next refresh reads no table.
    let (_, probes, health, _) = f.cycle(false, false).await;
    assert_eq!((probes, health), (1, 0));
}

#[tokio::test]
async fn a_broken_table_does_not_blind_its_probe_batch() {
    let user = user("fleet_broken");
    let lake = Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &user)).unwrap(),
        "iceberg",
        floe::lakehouse::scan::ScanParams::default(),
    );
    let missing = TableRef::new(
        "iceberg",
        "zoning",
        format!("dropped_{}", std::process::id()),
    );
    let tables = vec![
        TableRef::new("iceberg", "zoning", "documents"),
        missing.clone(),
        TableRef::new("iceberg", "audit", "events"),
        TableRef::new("iceberg", "zoning", "parcels"),
    ];
    let out = lake.probe(&tables).await;
    let got: Vec<&TableRef> = out.iter().map(|(t, _)| t).collect();
    assert_eq!(
        got,
        tables.iter().collect::<Vec<_>>(),
        "in order, each once"
    );
    for (t, r) in &out {
        if *t == missing {
            let e = r.as_ref().unwrap_err().to_string();
            assert!(e.contains("TABLE_NOT_FOUND"), "{e}");
        } else {
            let p = r.as_ref().unwrap_or_else(|e| panic!("{t}: {e}"));
            assert!(
                p.metadata_at.is_some() && p.snapshot_id.is_some(),
                "{t}: {p:?}"
            );
        }
    }
    // The probe agrees with the health statement: an unchanged table is not re-read.
    let docs = &tables[0];
    let stats = lake.table_stats(docs).await.unwrap();
    let p = out[0].1.as_ref().unwrap();
    assert!(
        floe::refresh::same_snapshot(&stats, p),
        "{stats:?} vs {p:?}"
    );
    let qs = lab().real_queries_of(&user).await;
    let probes = qs
        .iter()
        .filter(|q| q["sql"].as_str().unwrap_or("").starts_with("SELECT 0 AS i"))
        .count();
    assert!(
        probes <= 7,
        "a few splits, not one statement per table each: {probes}"
    );
}

/// `floe check` reads the fleet as the TUI does, with its cache: a first check reads
/// every table; the next one only probes them (their snapshots unchanged, the verdicts
/// confirmed) and reads nothing again; an entry whose snapshot it cannot confirm is read
/// again; `--cached-max-age` takes an entry that young as it is, unprobed.
#[tokio::test]
async fn check_reads_only_what_changed_since_the_cache_and_trusts_it_only_when_asked() {
    let pid = std::process::id();
    let name = format!("check_cache_{pid}");
    lab()
        .clone_table("zoning.documents", &format!("scratch.{name}"))
        .await;
    let f = Fleet::new("check_cache", std::slice::from_ref(&name), 50, "1h").await;
    let settings = config::load(&config::Overrides {
        config: Some(f.dir.join("config.toml")),
        ..Default::default()
    })
    .map(|mut s| {
        s.stats_cache = f.dir.join("stats.json");
        s
    })
    .unwrap();
    let table = TableRef::new("iceberg", "scratch", name.clone());
    let files_of = |r: &floe::report::Report| {
        r.tables
            .iter()
            .find(|t| t.table == table)
            .and_then(|t| t.stats.as_ref())
            .map(|s| s.data_files)
    };
    let run = |age: Option<u64>| {
        floe::report::check::run_cached(
            &settings,
            &[],
            Duration::from_secs(120),
            age.map(Duration::from_secs),
        )
    };
    let seen = || async { kinds(&lab().real_queries_of(&f.user).await) };
    let first = run(None).await;
    let read = files_of(&first).expect("read");
    assert!(read > 1000, "{read}");
    let before = seen().await;
    let second = run(None).await;
    assert_eq!(files_of(&second), Some(read));
    let after = seen().await;
    assert_eq!(
        (after.1 - before.1, after.2 - before.2, after.3 - before.3),
        (1, 0, 0),
        "one probe, nothing read again"
    );
    // An entry whose snapshot the probe cannot confirm (none recorded) is read again.
    let marked = floe::lakehouse::model::TableStats {
        data_files: 424_242,
        ..Default::default()
    };
    let plant = |age_min: i64| {
        floe::cache::store(
            &settings.stats_cache,
            &settings.profile,
            settings.trino.url.as_str(),
            vec![floe::cache::Entry {
                profile: settings.profile.clone(),
                url: settings.trino.url.to_string(),
                table: table.clone(),
                probe: None,
                read_at: chrono::Utc::now() - chrono::Duration::minutes(age_min),
                stats: marked.clone(),
            }],
        )
        .unwrap()
    };
    plant(30);
    assert_eq!(
        files_of(&run(None).await),
        Some(read),
        "by default a check confirms"
    );
    plant(30);
    assert_eq!(
        files_of(&run(Some(600)).await),
        Some(read),
        "30 min is older than 10 min"
    );
    plant(30);
    let before = seen().await.2;
    let cached = run(Some(3600)).await;
    assert_eq!(files_of(&cached), Some(424_242));
    assert!(
        cached.warnings.iter().any(|w| w.contains("stats cache")),
        "{:?}",
        cached.warnings
    );
    assert_eq!(seen().await.2, before, "no file read for a trusted table");
}
