//! A Delta Lake catalog beside the Iceberg ones, on the lab's real Trino 476 (the only
//! release whose Delta Lake plugin is served): its tables, written by delta-rs and dated
//! as production tables are, listed and read the Delta way (`$partitions`, `$history`;
//! an unpartitioned table's files from their hidden columns), judged by the same rules.

use crate::common;

use chrono::Utc;
use common::{lab, user};
use floe::health::{HealthConfig, Rule, Severity, evaluate};
use floe::lakehouse::delta::TableFormat;
use floe::lakehouse::model::{SnapshotOperation, TableRef};
use floe::lakehouse::queries::Lakehouse;
use floe::trino::Client;
use serde_json::Value;

/// The lab's Delta Lake catalog and its expected.json.
pub(crate) fn delta() -> (String, Value) {
    let d = &lab().v["trino"]["delta"];
    let catalog = d["catalog"]
        .as_str()
        .expect("lab.json trino.delta: the primary real Trino serves a Delta Lake catalog")
        .to_string();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(d["expected"].as_str().unwrap()).unwrap())
            .unwrap();
    (catalog, expected)
}

pub(crate) fn lake(who: &str, catalog: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), &user(who))).unwrap(),
        catalog,
        HealthConfig::default(),
    )
}

#[tokio::test]
async fn a_delta_catalogs_tables_are_listed_read_and_judged_by_the_same_rules() {
    let (catalog, expected) = delta();
    let u = "delta_read";
    let lake = lake(u, &catalog);
    lake.connect().await.unwrap();
    let tables = lake.discover(&[], &[]).await.unwrap();
    assert_eq!(
        lake.format(),
        TableFormat::Delta,
        "learned from the catalog's connector"
    );
    let names: Vec<String> = tables
        .iter()
        .map(|t| format!("{}.{}", t.schema, t.table))
        .collect();
    for name in expected["tables"].as_object().unwrap().keys() {
        assert!(names.contains(name), "{name} listed: {names:?}");
    }
    let cfg = HealthConfig::default();
    let now = Utc::now();
    let surveys = lake.survey(&tables).await;
    for (t, s) in surveys {
        let key = format!("{}.{}", t.schema, t.table);
        let Some(want) = expected["tables"].get(&key) else {
            continue;
        };
        let st = s.unwrap_or_else(|e| panic!("{t}: {e}")).stats(&cfg.scan());
        assert_eq!(
            (st.data_files, st.small_files, st.partitions),
            (
                want["data_files"].as_u64().unwrap(),
                want["small_files"].as_u64().unwrap(),
                want["partitions"].as_u64().unwrap()
            ),
            "{key}: {st:?}"
        );
        assert_eq!(
            st.last_compaction.map(|t| t.timestamp_millis()),
            want["last_optimize_ms"].as_i64(),
            "{key}: the newest OPTIMIZE"
        );
        let h = evaluate(&st, None, &cfg, now);
        let rules: Vec<(Rule, Severity)> =
            h.findings.iter().map(|f| (f.rule, f.severity)).collect();
        match key.as_str() {
            "sales.orders" => {
                // (a WARNING: 45 files of 78 KB in all cost a reader little)
                assert!(
                    rules.contains(&(Rule::CompactionStale, Severity::Warning)),
                    "stale OPTIMIZE, small files waiting: {h:?}"
                );
                let f = h
                    .findings
                    .iter()
                    .find(|f| f.rule == Rule::CompactionStale)
                    .unwrap();
                assert!(
                    f.message.contains("last compaction 12d ago"),
                    "{}",
                    f.message
                );
            }
            "web.clicks" => assert!(
                rules.iter().any(|(r, _)| *r == Rule::NeverCompacted),
                "never optimized: {h:?}"
            ),
            "sales.customers" => assert!(
                h.findings.iter().all(|f| f.severity < Severity::Warning),
                "{h:?}"
            ),
            _ => {}
        }
    }
    // Read from the metadata tables; the unpartitioned ones from their files' hidden
    // columns, and nothing else.
    let sent = lab().real_queries_of(&user(u)).await;
    for q in &sent {
        let sql = q["sql"].as_str().unwrap_or("");
        assert!(
            sql.contains("$partitions")
                || sql.contains("$history")
                || sql.contains("$properties")
                || sql.contains("\"$path\"")
                || sql.contains("information_schema")
                || sql.contains("iceberg_tables")
                || sql.contains("system.metadata.catalogs"),
            "an unexpected read: {sql}"
        );
    }
    // Ten tables a statement (one for the lab's own tables; a lab serving the fleet
    // bench's Delta fleet in the same catalog lists a hundred more).
    let surveys = sent
        .iter()
        .filter(|q| q["sql"].as_str().unwrap_or("").contains("$partitions"))
        .count();
    assert!(
        surveys >= 1 && surveys <= tables.len().div_ceil(10),
        "{} tables' partitions in {surveys} statements",
        tables.len()
    );
    // Trino's own table: deletion vectors on, a DELETE after its OPTIMIZE.
    let returns = TableRef::new(&catalog, "sales", "returns");
    let st = lake.table_stats(&returns).await.unwrap();
    assert_eq!(st.deletion_vector_removals, Some(1), "{st:?}");
    let h = evaluate(&st, None, &cfg, now);
    let dv = h
        .findings
        .iter()
        .find(|f| f.rule == Rule::DeleteFiles)
        .unwrap_or_else(|| panic!("{h:?}"));
    assert!(
        dv.message.starts_with(
            "deletion vectors on: 1 DELETE/MERGE/UPDATE commit since the last OPTIMIZE"
        ),
        "{}",
        dv.message
    );
}

/// `iceberg` read with the lab's Delta catalog beside it, as user `u`.
fn with_delta(u: &str, catalog: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(&lab().trino_url(), u)).unwrap(),
        "iceberg",
        HealthConfig::default(),
    )
    .with_catalogs(&[catalog.to_string()])
}

/// A profile of an Iceberg and a Delta Lake catalog lists both at once: their listings
/// overlap on the coordinator, so a cold start's first survey waits for the slower one,
/// not for both one after the other.
#[tokio::test]
async fn the_iceberg_and_delta_catalogs_are_listed_at_once() {
    let (catalog, _) = delta();
    let u = user("delta_listed_at_once");
    let lake = with_delta(&u, &catalog);
    lake.connect().await.unwrap();
    let tables = lake.discover(&[], &[]).await.unwrap();
    // Each catalog's tables, the profile's own first.
    let first_delta = tables.iter().position(|t| t.catalog == catalog);
    assert!(
        first_delta.is_some_and(|i| i > 0 && tables[..i].iter().all(|t| t.catalog == "iceberg")),
        "{tables:?}"
    );
    let rows = lab()
        .real_rows(&format!(
            "SELECT query, to_unixtime(created), to_unixtime(\"end\") FROM system.runtime.queries \
             WHERE \"user\" = '{u}'"
        ))
        .await;
    let listing = |needle: &str| {
        let r = rows
            .iter()
            .find(|r| r[0].as_str().unwrap_or("").contains(needle))
            .unwrap_or_else(|| panic!("no listing with {needle}: {rows:?}"));
        (r[1].as_f64().unwrap(), r[2].as_f64().unwrap())
    };
    let iceberg = listing("\"iceberg\".system.iceberg_tables");
    let delta = listing(&format!("\"{catalog}\".information_schema.tables"));
    assert!(
        delta.0 < iceberg.1 && iceberg.0 < delta.1,
        "the listings overlap: iceberg {iceberg:?}, delta {delta:?}"
    );
}

/// A cold start connects and lists at once: the cluster's catalog list, which both need
/// to know the other catalogs, is read once.
#[tokio::test]
async fn a_connect_and_a_listing_at_once_read_the_catalog_list_once() {
    let (catalog, _) = delta();
    let u = user("delta_catalogs_once");
    let lake = with_delta(&u, &catalog);
    let (connected, tables) = tokio::join!(lake.connect(), lake.discover(&[], &[]));
    connected.unwrap();
    let tables = tables.unwrap();
    assert!(tables.iter().any(|t| t.catalog == catalog), "{tables:?}");
    let rows = lab()
        .real_rows(&format!(
            "SELECT query FROM system.runtime.queries WHERE \"user\" = '{u}' \
             AND query LIKE '%catalog_name, connector_name FROM system.metadata.catalogs%'"
        ))
        .await;
    assert_eq!(rows.len(), 1, "{rows:?}");
}

/// A profile of an Iceberg and a Delta Lake catalog: the catalog whose listing answers
/// first is told on its own (a cold start surveys it while the other's listing runs), the
/// other comes with the whole listing; a refresh driven to its end, as `floe check` and
/// the TUI drive it, surveys every table of both catalogs once.
#[tokio::test]
async fn a_catalog_listed_first_is_told_alone_and_no_table_is_surveyed_twice() {
    use floe::refresh::drive::{Reader, drive};
    use floe::refresh::{Read, Refresh, RefreshPolicy, VecRecords};
    let (catalog, _) = delta();
    let u = user("delta_listed_in_parts");
    let lake = with_delta(&u, &catalog);
    lake.connect().await.unwrap();
    let parts = std::sync::Mutex::new(Vec::new());
    let on_part = |p: Vec<TableRef>| parts.lock().unwrap().push(p);
    // A few tables of each catalog: what is read is not what is tested.
    let globs = ["finance.*".to_string(), "sales.*".to_string()];
    let tables = lake.discover_in_parts(&[], &globs, &on_part).await.unwrap();
    let parts = parts.into_inner().unwrap();
    assert_eq!(parts.len(), 1, "one catalog before the other: {parts:?}");
    let first = parts[0][0].catalog.clone();
    let of_first: Vec<TableRef> = tables
        .iter()
        .filter(|t| t.catalog == first)
        .cloned()
        .collect();
    assert_eq!(parts[0], of_first, "the whole of one catalog's tables");
    assert!(tables.iter().any(|t| t.catalog != first), "{tables:?}");
    assert!(tables.len() < 10, "{tables:?}");

    let scan = HealthConfig::default().scan();
    let reader = Reader {
        lake: &lake,
        schemas: Vec::new(),
        globs: globs.to_vec(),
        scan: &scan,
        refresh_every: std::time::Duration::from_secs(60),
    };
    let (mut refresh, mut records) = (
        Refresh::new(RefreshPolicy::default(), 0),
        VecRecords::default(),
    );
    let surveyed = std::sync::Mutex::new(Vec::new());
    let watch = |read: &Read| {
        if let Read::Survey(t) = read {
            surveyed.lock().unwrap().extend(t.iter().cloned());
        }
    };
    let ended = drive(&mut refresh, &mut records, &reader, false, Utc::now, watch).await;
    assert!(ended.unwrap().is_some_and(|e| e.full && !e.listing_failed));
    let mut surveyed = surveyed.into_inner().unwrap();
    surveyed.sort();
    let mut expected = tables.clone();
    expected.sort();
    assert_eq!(
        surveyed, expected,
        "every table of both catalogs surveyed, once"
    );
    let listed: Vec<&TableRef> = records.0.iter().map(|(t, _)| t).collect();
    assert_eq!(
        listed,
        tables.iter().collect::<Vec<_>>(),
        "the records in the listing's order"
    );
}

#[tokio::test]
async fn a_delta_tables_partitions_and_history_fill_the_detail_tabs() {
    let (catalog, expected) = delta();
    let lake = lake("delta_detail", &catalog);
    lake.connect().await.unwrap();
    lake.discover(&[], &[]).await.unwrap();
    let t = TableRef::new(&catalog, "sales", "orders");
    let parts = lake.partitions(&t).await.unwrap();
    assert_eq!(
        parts.partitions.len() as u64,
        expected["tables"]["sales.orders"]["partitions"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(parts.layout_fields, vec!["region".to_string()]);
    assert!(
        parts
            .partitions
            .iter()
            .all(|p| p.small_files == p.data_files && p.data_files > 0)
    );
    let snaps = lake.snapshots(&t).await.unwrap();
    assert_eq!(
        snaps.len() as u64,
        expected["tables"]["sales.orders"]["version"]
            .as_u64()
            .unwrap()
            + 1
    );
    assert_eq!(
        snaps.iter().filter(|s| s.is_compaction()).count(),
        1,
        "one OPTIMIZE"
    );
    assert!(
        snaps
            .iter()
            .filter(|s| !s.is_compaction())
            .all(|s| s.operation == SnapshotOperation::Append)
    );
    assert!(
        snaps
            .windows(2)
            .all(|w| w[0].committed_at <= w[1].committed_at),
        "oldest first"
    );
}

/// floe on the lab's real Trino as `u` with `args` after it, its config, state and cache
/// under `home`, without colour.
fn floe(u: &str, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    let url = lab().trino_url();
    let mut all = vec!["--trino", url.as_str(), "--user", u];
    all.extend_from_slice(args);
    std::process::Command::new(env!("CARGO_BIN_EXE_floe"))
        .args(&all)
        .env("XDG_CONFIG_HOME", home.join("c"))
        .env("XDG_STATE_HOME", home.join("s"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `floe maintain …` as `u`, its state under `home`.
fn maintain(u: &str, home: &std::path::Path, args: &[&str]) -> std::process::Output {
    floe(u, home, &[&["maintain"], args].concat())
}

fn home(name: &str) -> std::path::PathBuf {
    let h = std::env::temp_dir().join(format!("floe-delta-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    h
}

fn audit(home: &std::path::Path) -> Vec<floe::mutation::audit::Record> {
    floe::mutation::audit::AuditLog::new(home.join("s/floe/audit.jsonl")).read()
}

/// The operations of a Delta table's versions, oldest first.
pub(crate) async fn operations(lake: &Lakehouse, t: &TableRef) -> Vec<String> {
    let q = format!(
        "SELECT operation FROM {} ORDER BY version",
        t.meta("history")
    );
    lake.client
        .query(&q)
        .await
        .unwrap_or_else(|e| panic!("{q}: {e}"))
        .rows
        .iter()
        .map(|r| r.str("operation").unwrap_or("").to_string())
        .collect()
}

/// A Delta table Trino writes for one test: `loads` INSERTs of a row in each of two
/// regions (a file a region each), deletion vectors on when `dv`.
async fn scratch_table(lake: &Lakehouse, name: &str, loads: u32, dv: bool) -> TableRef {
    let t = TableRef::new(
        &lake.catalog,
        "scratch",
        format!("{name}_{}", std::process::id()),
    );
    for q in [
        format!("CREATE SCHEMA IF NOT EXISTS {}.scratch", lake.catalog),
        format!("DROP TABLE IF EXISTS {}", t.sql()),
        format!(
            "CREATE TABLE {} (id bigint, region varchar) WITH (partitioned_by = ARRAY['region'], \
             deletion_vectors_enabled = {dv})",
            t.sql()
        ),
    ] {
        lake.client
            .query(&q)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    for i in 0..loads {
        let q = format!(
            "INSERT INTO {} VALUES ({i}, 'north'), ({}, 'south')",
            t.sql(),
            i + 1000
        );
        lake.client
            .query(&q)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
    }
    t
}

#[tokio::test]
async fn a_delta_partition_is_optimized_on_the_real_trino_then_re_read_and_audited() {
    let (catalog, _) = delta();
    let u = user("delta_opt");
    let lake = lake(&u, &catalog);
    lake.connect().await.unwrap();
    let t = scratch_table(&lake, "opt", 6, false).await;
    let name = format!("{catalog}.scratch.{}", t.table);
    let h = home("opt");
    // Without --yes: the plan, in the Delta way (the partition by its column's value).
    let out = maintain(&u, &h, &["optimize", &name, "--partition", "region=north"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = format!(
        "ALTER TABLE \"{catalog}\".\"scratch\".\"{}\" EXECUTE optimize(file_size_threshold => '96MB') WHERE \"region\" = 'north';",
        t.table
    );
    assert!(text.contains(&want), "{text}");
    assert!(text.contains("not run: add --yes"), "{text}");
    assert_eq!(
        operations(&lake, &t).await.last().map(String::as_str),
        Some("WRITE"),
        "nothing ran"
    );
    // With it: run, re-read (the partition's six files are one), audited.
    let out = maintain(
        &u,
        &h,
        &["optimize", &name, "--partition", "region=north", "--yes"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("[1/1] done"), "{err}");
    assert_eq!(
        operations(&lake, &t).await.last().map(String::as_str),
        Some("OPTIMIZE")
    );
    let parts = lake.partitions(&t).await.unwrap();
    let files = |region: &str| {
        parts
            .partitions
            .iter()
            .find(|p| p.values == vec![("region".to_string(), Some(region.to_string()))])
            .map(|p| p.data_files)
    };
    assert_eq!(
        (files("north"), files("south")),
        (Some(1), Some(6)),
        "the partition asked for, alone"
    );
    let records = audit(&h);
    let last = records.last().expect("audited");
    assert_eq!(
        (last.action.as_str(), last.outcome.as_str()),
        ("optimize", "succeeded")
    );
    assert_eq!(last.files_before, Some(6));
    assert_eq!(last.files_after, Some(1), "re-read after the statement");
    // The next plan says how long it should take, from that run's bytes and time.
    let out = maintain(&u, &h, &["optimize", &name, "--partition", "region=south"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let eta = text
        .lines()
        .find(|l| l.starts_with("-- expected: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        eta.starts_with("-- expected: ~") && eta.contains("in the audit log"),
        "{eta}"
    );

    // Two marked partitions, grouped: one statement over the column's IN list.
    let t2 = scratch_table(&lake, "grouped", 4, true).await;
    let marked = lake.partitions(&t2).await.unwrap().partitions;
    let d = floe::mutation::draft::draft(
        &lake,
        t2.clone(),
        floe::mutation::draft::MaintenanceKind::Optimize,
        floe::mutation::draft::Over::These(marked),
        None,
    )
    .await
    .unwrap();
    let plan = d.build(true).unwrap();
    assert_eq!(plan.steps.len(), 1, "{plan}");
    assert!(
        plan.steps[0]
            .sql
            .ends_with("WHERE \"region\" IN ('north', 'south')"),
        "{plan}"
    );
    let ctx = floe::mutation::audit::RunContext {
        profile: "lab".into(),
        user: u.clone(),
        target: lab().trino_url(),
        readonly: false,
        audit: floe::mutation::audit::AuditLog::new(h.join("grouped.jsonl")),
    };
    let outcomes = floe::mutation::run::run_plan(
        &lake,
        &plan,
        &ctx,
        tokio_util::sync::CancellationToken::new(),
        &|_| {},
    )
    .await
    .unwrap();
    assert_eq!(
        (outcomes[0].files_after, outcomes[0].small_after),
        (Some(2), Some(2)),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn a_delta_vacuum_shows_its_retention_and_trinos_refusals_in_trinos_words() {
    let (catalog, _) = delta();
    let u = user("delta_vac");
    let lake = lake(&u, &catalog);
    lake.connect().await.unwrap();
    let t = scratch_table(&lake, "vac", 3, false).await;
    let name = format!("{catalog}.scratch.{}", t.table);
    let h = home("vac");
    let out = maintain(&u, &h, &["vacuum", &name]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "CALL \"{catalog}\".system.vacuum('scratch', '{}', '7d');",
            t.table
        )) && text.contains("the last 7d"),
        "the statement and its retention: {text}"
    );
    // Under the catalog's minimum: Trino's refusal, in its words; audited as failed.
    let out = maintain(&u, &h, &["vacuum", &name, "--retention", "1d", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("INVALID_PROCEDURE_ARGUMENT")
            && err.contains("Retention specified (1.00d) is shorter than the minimum retention configured in the system (7.00d)"),
        "{err}"
    );
    let records = audit(&h);
    assert_eq!(
        records
            .iter()
            .map(|r| (r.action.as_str(), r.outcome.as_str()))
            .collect::<Vec<_>>(),
        vec![("vacuum", "failed")]
    );
    // At the minimum: it runs.
    let out = maintain(&u, &h, &["vacuum", &name, "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(audit(&h).last().unwrap().outcome.as_str(), "succeeded");
    // A table with deletion vectors: 476 cannot vacuum it, and says so.
    let dv = scratch_table(&lake, "vac_dv", 2, true).await;
    let out = maintain(
        &u,
        &h,
        &[
            "vacuum",
            &format!("{catalog}.scratch.{}", dv.table),
            "--yes",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("NOT_SUPPORTED")
            && err.contains("Cannot execute vacuum procedure with deletionVectors writer features"),
        "{err}"
    );
}

#[tokio::test]
async fn a_procedure_of_the_other_format_is_refused_before_anything_runs() {
    let (catalog, _) = delta();
    let u = user("delta_refuse");
    let h = home("refuse");
    let out = maintain(
        &u,
        &h,
        &[
            "expire-snapshots",
            &format!("{catalog}.sales.orders"),
            "--yes",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "expire_snapshots is not a procedure of Delta Lake tables, and {catalog}.sales.orders is one: vacuum removes"
        )),
        "{err}"
    );
    let out = maintain(&u, &h, &["vacuum", "iceberg.zoning.permits", "--yes"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("vacuum is not a procedure of Iceberg tables"),
        "{err}"
    );
    assert!(audit(&h).is_empty(), "nothing ran, nothing to audit");
    // Nothing but reads was sent.
    for q in lab().real_queries_of(&u).await {
        let sql = q["sql"].as_str().unwrap_or("");
        assert!(!sql.contains("EXECUTE") && !sql.contains("vacuum"), "{sql}");
    }
}

/// The row of `catalog`.`name` (`schema.table`) among a JSON report's tables.
fn report_table<'a>(tables: &'a [Value], catalog: &str, name: &str) -> Option<&'a Value> {
    tables.iter().find(|t| {
        t["catalog"] == catalog
            && format!(
                "{}.{}",
                t["schema"].as_str().unwrap(),
                t["table"].as_str().unwrap()
            ) == name
    })
}

/// `floe check` as `u` with `args` after the common ones; its stdout and exit code.
fn check(u: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let out = floe(
        u,
        &home(&format!("check-{u}")),
        &[&["check"], args].concat(),
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[tokio::test]
async fn a_profile_reads_its_iceberg_and_delta_catalogs_in_one_report_each_table_tagged() {
    let (catalog, expected) = delta();
    let both = format!("iceberg,{catalog}");
    let u = user("delta_both");
    let (out, err, code) = check(
        &u,
        &[
            "--catalog",
            &both,
            "--schema",
            "zoning",
            "--schema",
            "sales",
            "--schema",
            "web",
            "--format",
            "json",
        ],
    );
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(code, Some(2), "the seed's documents is CRITICAL: {err}");
    let tables = report["tables"].as_array().unwrap();
    let of = |c: &str, name: &str| {
        report_table(tables, c, name).unwrap_or_else(|| panic!("{c}.{name} in {out}"))
    };
    let docs = of("iceberg", "zoning.documents");
    assert_eq!(
        (docs["format"].as_str(), docs["status"].as_str()),
        (Some("iceberg"), Some("CRITICAL"))
    );
    // (the schemas asked for: a bench's lab also serves a Delta fleet beside them)
    for name in expected["tables"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| k.starts_with("sales.") || k.starts_with("web."))
    {
        let t = of(&catalog, name);
        assert_eq!(t["format"], "delta", "{t}");
        assert_eq!(
            t["data_files"], expected["tables"][name]["data_files"],
            "{name}: read the Delta way"
        );
    }
    assert_eq!(
        of(&catalog, "sales.orders")["status"],
        "WARNING",
        "the stale OPTIMIZE"
    );
    // The exporter says each table's format once, beside its usual series.
    let (text, _, _) = check(
        &u,
        &[
            "--catalog",
            &both,
            "--schema",
            "sales",
            "--format",
            "prometheus",
        ],
    );
    assert!(
        text.contains(&format!(
            "floe_table_format{{profile=\"default\",catalog=\"{catalog}\",schema=\"sales\",table=\"orders\",format=\"delta\"}} 1"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "floe_table_data_files{{profile=\"default\",catalog=\"{catalog}\",schema=\"sales\",table=\"orders\"}} "
        )),
        "{text}"
    );
    // A catalog the cluster does not have: said, with those it has.
    let (out, err, code) = check(&u, &["--catalog", "iceberg,lake_nope", "--format", "json"]);
    assert_eq!(code, Some(3), "{out}{err}");
    assert!(
        out.contains("the cluster has no catalog lake_nope (it has ") && out.contains(&catalog),
        "{out}"
    );
}

/// A profile of one Delta Lake catalog: its first launch tries `system.iceberg_tables`,
/// which that catalog has not, and asks the catalog list; what it learned is kept beside
/// the stats cache, so the next launch on the same server sends no failed statement.
#[tokio::test]
async fn a_delta_catalogs_format_is_learned_once_not_at_every_launch() {
    let (catalog, _) = delta();
    let u = user("delta_once");
    let args = [
        "--catalog",
        catalog.as_str(),
        "--schema",
        "sales",
        "--format",
        "json",
    ];
    let failed = |qs: &[Value]| {
        qs.iter()
            .filter(|q| q["state"] == "FAILED")
            .map(|q| q["sql"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    // One home for both launches: the second finds what the first kept.
    let h = home(&format!("once-{u}"));
    let check = |_: &str, args: &[&str]| {
        let out = floe(&u, &h, &[&["check"], args].concat());
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.code(),
        )
    };
    let (out, err, code) = check(&u, &args);
    assert_eq!(code, Some(1), "sales.orders is a WARNING: {out}{err}");
    let first = lab().real_queries_of(&u).await;
    let f = failed(&first);
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].contains("system.iceberg_tables"), "{f:?}");
    let (out, err, code) = check(&u, &args);
    assert_eq!(code, Some(1), "{out}{err}");
    let again = lab().real_queries_of(&u).await;
    let f = failed(&again[first.len()..]);
    assert!(f.is_empty(), "the second launch failed {f:?}");
    assert!(
        !again[first.len()..].iter().any(|q| q["sql"]
            .as_str()
            .unwrap_or("")
            .contains("system.metadata.catalogs")),
        "the second launch asked the catalog list again"
    );
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(
        report["tables"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["format"] == "delta"),
        "{out}"
    );
}

#[test]
fn one_triage_over_both_formats_and_v_vacuums_the_selected_delta_table() {
    use crate::common::pty;
    use std::time::Duration;
    let (catalog, _) = delta();
    let url = lab().trino_url();
    let both = format!("iceberg,{catalog}");
    let u = user("delta_tui");
    let mut pty = pty::Pty::spawn_env(
        &[
            "--trino",
            &url,
            "--user",
            &u,
            "--catalog",
            &both,
            "--schema",
            "zoning",
            "--schema",
            "sales",
            "--schema",
            "web",
        ],
        &[("NO_COLOR", "1")],
        120,
        30,
    );
    // Triage: the seed's documents and the Delta tables waiting, in one incident.
    pty.send(b"0");
    pty.wait_for("both formats on Triage", Duration::from_secs(30), |s| {
        s.contains("documents: 2,004 small files")
            && s.contains("orders: 45 small files, compacted 12d ago")
            && s.contains("clicks: 40 small files, never compacted")
    });
    // The Tables tab names rows by catalog: filter to the Delta table, V asks its retention.
    pty.send(b"1");
    pty.send(b"/");
    pty.send(format!("{catalog}.sales.orders").as_bytes());
    pty.send(b"\r");
    pty.wait_for("the Delta table alone", Duration::from_secs(30), |s| {
        s.contains(&format!("{catalog}.sales.orders")) && !s.contains("iceberg.zoning.documents")
    });
    pty.send(b"V");
    pty.wait_for(
        "the vacuum's retention asked",
        Duration::from_secs(10),
        |s| s.contains("vacuum the files no version of this long references"),
    );
    pty.send(b"\r");
    let s = pty.wait_for("the vacuum's confirmation", Duration::from_secs(30), |s| {
        s.contains(&format!(
            "CALL \"{catalog}\".system.vacuum('sales', 'orders', '7d')"
        ))
    });
    assert!(
        s.contains("remove the files no version of the last 7d references"),
        "{s}"
    );
    // What it deletes, from the table's log, beside the statement.
    assert!(s.contains("note: the log (versions 0-"), "{s}");
    // n: declined, nothing ran.
    pty.send(b"n");
    // Its history tab reads the log too: what a vacuum at the snapshot retention deletes.
    pty.send(b"3");
    pty.wait_for("the Snapshots tab's log", Duration::from_secs(30), |s| {
        let words = s.split_whitespace().collect::<Vec<_>>().join(" ");
        words.contains("a vacuum at 7d deletes") && words.contains("the log (versions 0-")
    });
    pty.send(b"q");
    assert!(pty.wait_exit(Duration::from_secs(10)).success());
    pty.assert_restored();
    let ran = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(lab().real_queries_of(&u));
    assert!(
        ran.iter()
            .all(|q| !q["sql"].as_str().unwrap_or("").contains("vacuum")),
        "declined: no vacuum sent"
    );
}

#[test]
fn doctor_says_which_catalogs_it_reads_and_of_which_format() {
    let (catalog, _) = delta();
    let u = user("delta_doctor");
    let h = home("doctor");
    let doctor = |cats: &str| {
        let out = floe(&u, &h, &["--catalog", cats, "doctor"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = doctor(&format!("iceberg,{catalog}"));
    assert!(
        text.lines().any(|l| l.starts_with("✓ catalogs")
            && l.ends_with(&format!("read: iceberg (Iceberg), {catalog} (Delta Lake)"))),
        "{text}"
    );
    let text = doctor("iceberg,lake_nope");
    assert!(
        text.lines().any(|l| l.starts_with("✗ catalogs")
            && l.contains(
                "trino.catalog (--catalog): the cluster has no catalog lake_nope (it has "
            )),
        "{text}"
    );
}

/// A profile that names no catalog reads every Iceberg and Delta Lake catalog the cluster
/// has (the real Trino's list: the seed's `iceberg`, the pyiceberg fleet, the Delta one),
/// `iceberg` first, each table tagged with its catalog and format; `floe doctor` says so.
#[test]
fn a_profile_naming_no_catalog_reads_every_iceberg_and_delta_catalog_of_the_cluster() {
    let (catalog, _) = delta();
    let u = user("delta_default");
    let (out, err, code) = check(
        &u,
        &[
            "--schema", "zoning", "--schema", "sales", "--format", "json",
        ],
    );
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(code, Some(2), "the seed's documents is CRITICAL: {err}");
    let tables = report["tables"].as_array().unwrap();
    let find = |c: &str, name: &str| report_table(tables, c, name);
    let docs = find("iceberg", "zoning.documents").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(docs["format"], "iceberg");
    let orders = find(&catalog, "sales.orders").unwrap_or_else(|| panic!("{out}"));
    assert_eq!(orders["format"], "delta");
    assert_eq!(
        tables[0]["catalog"], "iceberg",
        "iceberg first, where an unqualified name points"
    );
    let text = String::from_utf8_lossy(&floe(&u, &home("doctor-default"), &["doctor"]).stdout)
        .into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("✓ catalogs"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("read: iceberg (Iceberg), ")
            && line.contains(&format!("{catalog} (Delta Lake)"))
            && line.ends_with("(none named: every Iceberg and Delta Lake catalog of the cluster)"),
        "{line}"
    );
}

/// With no catalog named, a user the cluster denies its `system` catalog (its catalog
/// list) reads `iceberg` alone, as before catalogs were read by default: nothing fails
/// that the list was not read, and `floe doctor` says why and what to set.
#[test]
fn a_user_denied_the_catalog_list_reads_iceberg_alone_and_doctor_says_why() {
    let prefix = lab().v["trino"]["no_system_prefix"]
        .as_str()
        .expect("lab.json: trino.no_system_prefix")
        .to_string();
    let u = format!("{prefix}{}", std::process::id());
    let (out, err, code) = check(&u, &["--schema", "zoning", "--format", "json"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(
        code,
        Some(2),
        "the seed's documents is CRITICAL: {out}\n{err}"
    );
    let tables = report["tables"].as_array().unwrap();
    assert!(
        !tables.is_empty() && tables.iter().all(|t| t["catalog"] == "iceberg"),
        "{out}"
    );
    let text = String::from_utf8_lossy(&floe(&u, &home("doctor-nosystem"), &["doctor"]).stdout)
        .into_owned();
    let line = text
        .lines()
        .find(|l| l.contains("catalogs") && l.contains("the cluster's catalog list not read"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("Access Denied"), "Trino's words: {line}");
    assert!(
        text.contains("floe reads iceberg alone; name the catalogs in trino.catalog"),
        "{text}"
    );
}

/// With no catalog named, a user to whom the cluster shows no `iceberg` catalog (the lab
/// denies it to `noiceberg_` users; elsewhere, a cluster whose Iceberg catalog is named
/// otherwise) reads the catalogs it has: `floe check` judges the Delta catalog's tables
/// and sends nothing to `iceberg`, and `floe doctor` does not fail on it.
#[test]
fn with_no_iceberg_catalog_to_read_the_clusters_others_are_read() {
    let (catalog, _) = delta();
    let prefix = lab().v["trino"]["no_iceberg_prefix"]
        .as_str()
        .expect("lab.json: trino.no_iceberg_prefix")
        .to_string();
    let u = format!("{prefix}{}", std::process::id());
    let (out, err, code) = check(
        &u,
        &[
            "--schema", "zoning", "--schema", "sales", "--format", "json",
        ],
    );
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert!(report["fatal"].is_null(), "{out}\n{err}");
    assert_ne!(code, Some(3), "{out}\n{err}");
    let tables = report["tables"].as_array().unwrap();
    assert!(
        tables.iter().all(|t| t["catalog"] != "iceberg")
            && tables
                .iter()
                .any(|t| t["catalog"] == catalog.as_str() && t["table"] == "orders"),
        "{out}"
    );
    let text = String::from_utf8_lossy(&floe(&u, &home("doctor-noiceberg"), &["doctor"]).stdout)
        .into_owned();
    assert!(
        text.lines().any(|l| l.starts_with("✓ catalogs")
            && l.split_once("read: ").is_some_and(|(_, read)| {
                // each catalog by its whole name: a lab's `scale_pyiceberg` is not `iceberg`
                let names: Vec<&str> = read.split(", ").collect();
                !names.iter().any(|n| n.starts_with("iceberg ("))
                    && names
                        .iter()
                        .any(|n| n.starts_with(&format!("{catalog} (Delta Lake)")))
            })),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("catalog") && l.contains("iceberg not read (")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("✓ system.iceberg_tables") || l.starts_with("✓ $entries")),
        "the Iceberg reads checked on an Iceberg catalog, not the Delta one: {text}"
    );
}

/// What the commit files under `root/_delta_log` say, read here without Trino: the
/// files whose last action is a remove older than `line_ms` (their count and the bytes
/// their adds give) and the other removed ones.
fn removed_in_log(root: &std::path::Path, line_ms: i64) -> ((u64, u64), (u64, u64)) {
    let mut commits: Vec<_> = std::fs::read_dir(root.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    commits.sort();
    // path -> (removed at, or None while live; its add's size)
    let mut files: std::collections::HashMap<String, (Option<i64>, u64)> = Default::default();
    for c in commits {
        for line in std::fs::read_to_string(&c).unwrap().lines() {
            let a: Value = serde_json::from_str(line).unwrap();
            if let Some(add) = a.get("add") {
                let path = add["path"].as_str().unwrap().to_string();
                files.insert(path, (None, add["size"].as_u64().unwrap()));
            } else if let Some(rm) = a.get("remove") {
                let e = files
                    .entry(rm["path"].as_str().unwrap().to_string())
                    .or_default();
                e.0 = Some(rm["deletionTimestamp"].as_i64().unwrap());
            }
        }
    }
    let (mut old, mut young) = ((0, 0), (0, 0));
    for (at, size) in files.values() {
        match at {
            Some(t) if *t < line_ms => old = (old.0 + 1, old.1 + size),
            Some(_) => young = (young.0 + 1, young.1 + size),
            None => {}
        }
    }
    (old, young)
}

#[tokio::test]
async fn the_log_tells_what_a_vacuum_deletes_and_what_deletion_vectors_hide() {
    let (catalog, expected) = delta();
    let u = user("delta_log");
    let lake = lake(&u, &catalog);
    lake.connect().await.unwrap();
    lake.discover(&[], &[]).await.unwrap();
    // delta-rs's table: an OPTIMIZE twelve days ago replaced its first loads' files.
    let orders = TableRef::new(&catalog, "sales", "orders");
    let root = std::path::PathBuf::from(
        expected["tables"]["sales.orders"]["location"]
            .as_str()
            .unwrap(),
    );
    let day = 86_400;
    let now_ms = Utc::now().timestamp_millis();
    let (old, young) = removed_in_log(&root, now_ms - 7 * day * 1000);
    assert!(
        old.0 > 0 && young.0 == 0,
        "the lab's OPTIMIZE: {old:?} {young:?}"
    );
    let week = lake.delta_log(&orders, 7 * day as u64).await.unwrap();
    assert_eq!(
        (
            week.freeable_files,
            week.freeable_bytes,
            week.freeable_unsized
        ),
        (old.0, old.1, 0),
        "{week:?}"
    );
    assert_eq!((week.kept_files, week.dv_files), (0, 0), "{week:?}");
    let version = expected["tables"]["sales.orders"]["version"]
        .as_i64()
        .unwrap();
    assert_eq!(week.versions, Some((0, version)), "every commit read");
    // At a retention longer than the OPTIMIZE's age, the same files are kept.
    let month = lake.delta_log(&orders, 20 * day as u64).await.unwrap();
    assert_eq!(
        (month.freeable_files, month.kept_files, month.kept_bytes),
        (0, old.0, old.1),
        "{month:?}"
    );
    // `floe maintain vacuum` shows it beside the statement, before anything runs.
    let h = home("log");
    let out = maintain(&u, &h, &["vacuum", &format!("{catalog}.sales.orders")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "-- note: the log (versions 0-{version}) names {} files ({}) removed more than 7d ago: this vacuum deletes them",
            old.0,
            floe::fmt::human_bytes(old.1)
        )),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(audit(&h).is_empty(), "nothing ran");
    // Trino's own table: its DELETE of every seventh row wrote deletion vectors (a
    // remove and an add of the same file in one commit: the file stays live).
    let returns = TableRef::new(&catalog, "sales", "returns");
    let f = lake.delta_log(&returns, 7 * day as u64).await.unwrap();
    // return_id 0..83 in fourteen loads of six, every seventh deleted: 12 rows.
    assert_eq!(f.dv_rows, 12, "{f:?}");
    assert!(f.dv_files > 0, "{f:?}");
    // One statement a read of the log: three here, one by `floe maintain`.
    let logs = |sent: Vec<Value>| {
        sent.iter()
            .filter(|q| q["sql"].as_str().unwrap_or("").contains("$transactions"))
            .count()
    };
    assert_eq!(logs(lab().real_queries_of(&user(&u)).await), 3);
    assert_eq!(logs(lab().real_queries_of(&u).await), 1);
}

#[test]
fn a_delta_tables_postmortem_tells_its_story_in_the_same_words() {
    let (catalog, expected) = delta();
    let u = user("delta_pm");
    let h = home("pm");
    let name = format!("{catalog}.sales.orders");
    let out = floe(&u, &h, &["report", &name]);
    let md = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a WARNING, as floe check: {md}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(floe::text::is_inert(&md));
    for want in [
        format!("# Postmortem: `{name}`"),
        "**WARNING**".to_string(),
        "| `compaction_stale` |".to_string(),
        "last compaction 12d ago".to_string(),
        "◆ compaction (replace)".to_string(),
    ] {
        assert!(md.contains(&want), "{want:?} not in:\n{md}");
    }
    let out = floe(&u, &h, &["report", &name, "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["name"], name.as_str());
    assert_eq!(v["table"]["format"], "delta", "{v}");
    let files = expected["tables"]["sales.orders"]["data_files"]
        .as_u64()
        .unwrap();
    assert!(
        md.contains(&floe::fmt::thousands(files)),
        "its {files} data files, read the Delta way:\n{md}"
    );
}
