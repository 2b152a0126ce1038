//! The two-step read (a metadata-only survey of many tables a statement, then the files
//! of the tables whose verdict they can change) gives the verdicts the one-statement
//! health read gave, on every table of the seed: the real Trino 476 and the stand-in.

use crate::common;

use common::{lab, user};
use floe::health::{HealthConfig, evaluate};
use floe::lakehouse::model::TableStats;
use floe::lakehouse::queries::Lakehouse;
use floe::lakehouse::summary::FileRead;
use floe::trino::Client;

fn lakehouse(url: &str, user: &str, cfg: &HealthConfig) -> Lakehouse {
    lakehouse_of(url, user, cfg, "iceberg")
}

fn lakehouse_of(url: &str, user: &str, cfg: &HealthConfig, catalog: &str) -> Lakehouse {
    Lakehouse::new(
        Client::new(lab().config(url, user)).unwrap(),
        catalog,
        cfg.clone(),
    )
}

/// The facts both reads must agree on: every one a verdict uses, less the metadata log,
/// which the survey leaves to the change probe (compared on its own below), and the
/// snapshot id only the survey reads.
fn comparable(s: &TableStats) -> TableStats {
    TableStats {
        files_unread: false,
        metadata_files: None,
        metadata_at: None,
        snapshot_id: None,
        ..s.clone()
    }
}

/// The tables the lab's scenario wrote in the catalog: in `iceberg`, the seed's (its
/// expected.json); elsewhere every table but `scratch`'s. Never what other tests of the
/// suite write meanwhile (clones, long tables of millions of rows, trust tables): which of
/// them exist depends on the order the tests ran in, and reading each again by the
/// one-statement read made this test the suite's longest (119 s of 882).
async fn seed_tables(lake: &Lakehouse) -> Vec<floe::lakehouse::model::TableRef> {
    let seed = &lab().expected["tables"];
    lake.discover(&[], &[])
        .await
        .unwrap()
        .into_iter()
        .filter(|t| t.schema != "scratch")
        .filter(|t| {
            lake.catalog != "iceberg" || !seed[format!("{}.{}", t.schema, t.table)].is_null()
        })
        .collect()
}

async fn same_verdicts_as_the_one_statement_read(url: &str, who: &str) {
    same_verdicts_at(url, who, HealthConfig::default()).await;
    // A trend of three snapshots: every table of more than four has a history longer
    // than its survey's window, read again on the server (`history_sql`).
    let short = HealthConfig {
        trend_limit: 3,
        ..HealthConfig::default()
    };
    same_verdicts_at(url, &format!("{who}_short"), short).await;
}

async fn same_verdicts_at(url: &str, who: &str, cfg: HealthConfig) {
    let lake = lakehouse(url, &user(who), &cfg);
    lake.connect().await.unwrap();
    let tables = seed_tables(&lake).await;
    assert!(tables.len() >= 8, "{tables:?}");
    let now = chrono::Utc::now();
    let surveys = lake.survey(&tables).await;
    if cfg.trend_limit < 10 {
        let long = surveys
            .iter()
            .filter(|(_, s)| {
                s.as_ref()
                    .is_ok_and(|s| s.totals.snapshots > cfg.trend_limit + 1)
            })
            .count();
        assert!(
            long >= 3,
            "tables with a history longer than the window: {long}"
        );
    }
    let probes: std::collections::HashMap<_, _> = lake.probe(&tables).await.into_iter().collect();
    let mut read_files = 0;
    for (t, survey) in surveys {
        let survey = survey.unwrap_or_else(|e| panic!("survey of {t}: {e}"));
        let old = lake.table_stats_in_one(&t).await.unwrap();
        if survey.totals.committed_at != old.newest_snapshot {
            // Not at its newest commit (rolled back, or a branch's commit is newer): the
            // one-statement read judges the newest commit, the survey the table as it is
            // now (`refresh_lab::a_rolled_back_compaction_shows_the_small_files_again`).
            continue;
        }
        // The metadata log the survey does not read: the probe's is the one-statement
        // read's.
        let probe = probes[&t]
            .as_ref()
            .unwrap_or_else(|e| panic!("probe of {t}: {e}"));
        assert_eq!(
            (probe.metadata_files, probe.snapshot_id),
            (old.metadata_files, survey.totals.snapshot_id),
            "{t}"
        );
        let mut adopted = survey.stats(&cfg.scan());
        floe::refresh::adopt_probe(&mut adopted, probe);
        assert_eq!(adopted.metadata_files, old.metadata_files, "{t}");
        assert!(adopted.metadata_files.is_some(), "{t}");
        let new = match survey.file_read(&cfg.scan()) {
            FileRead::NotNeeded => {
                let s = survey.stats(&cfg.scan());
                assert!(s.files_unread, "{t}");
                assert!(
                    old.data_files < cfg.min_small_files || old.snapshots == 0,
                    "{t}: {old:?}"
                );
                // What the totals say of the files is what the files say. A fleet's
                // survey reads no target: its bound of the small files is at the default
                // one (no verdict of a table this small uses it; the screen shows none).
                assert_eq!(s.data_files, old.data_files, "{t}");
                if old.target_file_size == cfg.target_file_size {
                    assert!(s.small_files <= old.small_files, "{t}: a lower bound");
                }
                let (a, b) = (
                    evaluate(&s, None, &cfg, now),
                    evaluate(&old, None, &cfg, now),
                );
                assert_eq!(a.status, b.status, "{t}: {a:?} vs {b:?}");
                continue;
            }
            FileRead::Needed(_) => {
                read_files += 1;
                lake.file_stats(&t, &survey.stats).await.unwrap()
            }
        };
        // The manifests are read only where a finding or the layout needs them: a table
        // whose files and removals bound its manifests under `max_small_manifests`
        // cannot hold enough of them for a finding, and is not asked.
        let new = if new.manifests.is_none() {
            assert!(
                old.manifests.is_some_and(|m| m <= cfg.max_small_manifests),
                "{t}: manifests not read, yet {old:?}"
            );
            let (a, b) = (
                evaluate(&new, None, &cfg, now),
                evaluate(&old, None, &cfg, now),
            );
            assert_eq!(a.status, b.status, "{t}: {a:?} vs {b:?}");
            TableStats {
                manifests: old.manifests,
                small_manifests: old.small_manifests,
                manifest_bytes: old.manifest_bytes,
                ..new
            }
        } else {
            new
        };
        assert_eq!(comparable(&new), comparable(&old), "{t}");
        let (a, b) = (
            evaluate(&new, None, &cfg, now),
            evaluate(&old, None, &cfg, now),
        );
        assert_eq!(a, b, "{t}");
        // And the one-table path says the same.
        assert_eq!(
            comparable(&lake.table_stats(&t).await.unwrap()),
            comparable(&old),
            "{t}"
        );
    }
    assert!(
        read_files >= 4,
        "the seed's decayed tables are read file by file"
    );
}

#[tokio::test]
async fn the_survey_and_the_file_read_give_the_one_statement_verdicts_on_the_real_trino() {
    same_verdicts_as_the_one_statement_read(&lab().trino_url(), "survey_real").await;
    // The survey reads the snapshots' rows; with a window of four, a batch holding the
    // long histories reached its limit and was read again in the aggregate form.
    let sqls = |who: &str| {
        let who = user(who);
        async move {
            lab()
                .real_queries_of(&who)
                .await
                .into_iter()
                .filter_map(|q| q["sql"].as_str().map(str::to_string))
                .collect::<Vec<String>>()
        }
    };
    let rows = |v: &[String]| {
        v.iter()
            .filter(|s| s.contains("parent_id, summary, CAST(NULL AS varchar) AS prop"))
            .count()
    };
    // The aggregate form (a fleet's read again when its rows were cut; a one-table read
    // has `$manifests` in it).
    let aggregate = |v: &[String]| {
        v.iter()
            .filter(|s| s.contains("AS i, s.snapshots") && !s.contains("$manifests"))
            .count()
    };
    let default = sqls("survey_real").await;
    assert!(
        rows(&default) >= 1 && aggregate(&default) == 0,
        "{default:#?}"
    );
    let short = sqls("survey_real_short").await;
    assert!(rows(&short) >= 1 && aggregate(&short) >= 1, "{short:#?}");
}

#[tokio::test]
async fn the_survey_and_the_file_read_give_the_one_statement_verdicts_on_the_stand_in() {
    same_verdicts_as_the_one_statement_read(&lab().stand_in_url(), "survey_stand_in").await;
}

/// A fleet's file reads (several tables a statement over `$files`, the small files dated
/// only where the verdict needs their age) give every seed table the verdict the
/// one-statement read gives: the same status, findings and score, the same file facts,
/// and where they date the small files, the same date.
async fn fleet_reads_keep_the_verdicts(url: &str, who: &str) {
    fleet_reads_keep_the_verdicts_of(url, who, "iceberg", HealthConfig::default()).await;
}

/// The tables compared.
async fn fleet_reads_keep_the_verdicts_of(
    url: &str,
    who: &str,
    catalog: &str,
    cfg: HealthConfig,
) -> usize {
    let lake = lakehouse_of(url, &user(who), &cfg, catalog);
    lake.connect().await.unwrap();
    let tables = seed_tables(&lake).await;
    let now = chrono::Utc::now();
    let mut items = Vec::new();
    for (t, survey) in lake.survey(&tables).await {
        let survey = survey.unwrap_or_else(|e| panic!("survey of {t}: {e}"));
        if matches!(survey.file_read(&cfg.scan()), FileRead::Needed(_)) {
            items.push(floe::lakehouse::queries::FileItem::of(
                t,
                survey.stats(&cfg.scan()),
            ));
        }
    }
    assert!(items.len() >= 4, "{items:?}");
    let mut dated = 0;
    let mut compared = 0;
    for (t, new) in lake.files_batch(&items).await {
        let new = new.unwrap_or_else(|e| panic!("file read of {t}: {e}"));
        let old = lake.table_stats_in_one(&t).await.unwrap();
        if (old.snapshots, old.newest_snapshot) != (new.snapshots, new.newest_snapshot) {
            // Written between the two reads (another test's table): nothing to compare.
            continue;
        }
        compared += 1;
        let facts = |s: &TableStats| {
            (
                s.target_file_size,
                s.data_files,
                s.small_files,
                s.large_files,
                s.total_bytes,
                (s.partitions, s.small_file_partitions, s.critical_partitions),
                s.max_partition_small_files,
                (s.position_delete_files, s.equality_delete_files),
            )
        };
        assert_eq!(facts(&new), facts(&old), "{t}");
        // Manifests are read where the layout or a finding needs them; where they are not,
        // the table cannot hold enough for one.
        match new.manifests {
            Some(_) => assert_eq!(
                (new.manifests, new.small_manifests),
                (old.manifests, old.small_manifests),
                "{t}"
            ),
            None => assert!(
                old.small_manifests.unwrap_or(0) <= cfg.max_small_manifests
                    && old.manifests.unwrap_or(0) < cfg.critical_manifests,
                "{t}: {old:?}"
            ),
        }
        if let Some(a) = new.oldest_small_file_at {
            dated += 1;
            // Where the one statement could not date them (a table whose `$entries` the
            // server fails), a table written by appends alone is dated by its history.
            if let Some(b) = old.oldest_small_file_at {
                if new.oldest_small_is_lower_bound && !old.oldest_small_is_lower_bound {
                    // Dated from its history, at least as old as a small file it proves:
                    // never older than the oldest one (its verdict compared below).
                    assert!(a >= b, "{t}: {new:?}\nvs {old:?}");
                } else {
                    // The history's commit time against the files' own (`$entries`, or
                    // their modification time): the same instant, to the second.
                    assert!(
                        (a - b).num_milliseconds().abs() < 1000
                            && new.oldest_small_is_lower_bound == old.oldest_small_is_lower_bound,
                        "{t}: {new:?}\nvs {old:?}"
                    );
                }
            } else {
                assert!(
                    new.oldest_small_file_at >= new.oldest_snapshot,
                    "{t}: {new:?}"
                );
            }
        }
        let (a, b) = (
            evaluate(&new, None, &cfg, now),
            evaluate(&old, None, &cfg, now),
        );
        let verdict = |h: &floe::health::Health| {
            (
                h.status,
                h.score,
                h.findings
                    .iter()
                    .map(|f| (f.rule, f.severity, f.penalty))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(verdict(&a), verdict(&b), "{t}: {a:?}\nvs {b:?}");
    }
    // documents (compacted, its staleness is its small files' age) at least.
    if catalog == "iceberg" {
        assert!(dated >= 1, "no table dated");
    }
    assert!(
        compared * 4 >= items.len() * 3,
        "{compared} of {}",
        items.len()
    );
    compared
}

#[tokio::test]
async fn the_fleet_file_reads_keep_the_one_statement_verdicts_on_the_real_trino() {
    fleet_reads_keep_the_verdicts(&lab().trino_url(), "fleet_reads_real").await;
}

#[tokio::test]
async fn the_fleet_file_reads_keep_the_one_statement_verdicts_on_the_stand_in() {
    fleet_reads_keep_the_verdicts(&lab().stand_in_url(), "fleet_reads_stand_in").await;
}

/// The same on the layouts catalog's tables (identity, bucket, truncate, the time
/// transforms, a v1 table, a spec evolved and one evolved to no partitioning, delete
/// files, a quoted name), each small: with a partition of two small files counting,
/// nearly every one of them is read.
#[tokio::test]
async fn the_fleet_file_reads_keep_the_verdicts_of_every_layout_on_the_real_trino() {
    let catalog = lab().v["trino"]["layouts"]["catalog"]
        .as_str()
        .expect("lab.json trino.layouts names the catalog of the Trino-written tables")
        .to_string();
    let cfg = HealthConfig {
        min_small_files: 2,
        ..HealthConfig::default()
    };
    let read =
        fleet_reads_keep_the_verdicts_of(&lab().trino_url(), "fleet_reads_layouts", &catalog, cfg)
            .await;
    assert!(read >= 15, "{read} of the layouts read");
}

/// The same on a fleet written the pyiceberg way (`pyfleet`: identity partitions, an
/// `append` a load, one table in three compacted): the real Trino 476 fails `$entries` on
/// every table of it, so the one-statement read dates small files by their modification
/// times; the fleet's reads date them from the history wherever it settles the verdict,
/// and scan the files of the others only.
#[tokio::test]
async fn the_fleet_file_reads_keep_the_verdicts_of_a_pyiceberg_fleet_on_the_real_trino() {
    let catalog = lab().v["pyfleet"]["catalog"]
        .as_str()
        .expect("lab.json pyfleet names the catalog of the pyiceberg-written fleet")
        .to_string();
    let who = "fleet_reads_pyfleet";
    let read = fleet_reads_keep_the_verdicts_of(
        &lab().trino_url(),
        who,
        &catalog,
        HealthConfig::default(),
    )
    .await;
    assert!(read >= 10, "{read} of the pyiceberg fleet read");
    // Its tables hold a few MB each: their totals prove every file small, and their
    // partitions' counts came from `$partitions` (the facts compared above).
    let sent = lab().real_queries_of(&user(who)).await;
    let from_partitions = sent
        .iter()
        .filter(|q| {
            q["sql"]
                .as_str()
                .is_some_and(|s| s.contains("$partitions\""))
        })
        .count();
    assert!(
        from_partitions >= 1,
        "no file read from $partitions: {sent:?}"
    );
}

/// On the same fleet, what the fleet's reads send to date small files: the files of a
/// compacted table are scanned (`"$file_modified_time"`) only where its history cannot
/// settle its verdict; `$entries`, which the real 476 fails on every table of it, is
/// asked only of tables that need the read, and what failed is kept beside the stats
/// cache: the next launch on the same server asks it of none (481+ reads it).
#[tokio::test]
async fn a_pyiceberg_fleet_scans_only_the_files_its_history_cannot_date() {
    let catalog = lab().v["pyfleet"]["catalog"].as_str().unwrap().to_string();
    let cache = std::env::temp_dir().join(format!("floe-pyfleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let stats_cache = cache.join("stats.json");
    let first = pyfleet_dating(&catalog, "pyfleet_dating", &stats_cache).await;
    let (settled, unsettled, scans, entries) = first;
    assert!(
        settled >= 2,
        "{settled} compacted tables dated by their history"
    );
    if lab().trino_version() >= 481 {
        assert_eq!((scans, entries), (0, unsettled), "481+ reads $entries");
        return;
    }
    assert_eq!(
        scans, unsettled,
        "a scan for each table its history cannot date ({settled} dated by it)"
    );
    assert!(
        (1..=unsettled).contains(&entries),
        "$entries asked of the tables that need the read only: {entries} of {unsettled}"
    );
    // The next launch, the same coordinator and version: no $entries at all.
    let again = pyfleet_dating(&catalog, "pyfleet_dating_again", &stats_cache).await;
    assert_eq!(again, (settled, unsettled, unsettled, 0), "{again:?}");
    let _ = std::fs::remove_dir_all(&cache);
}

/// One fleet read of `catalog` as `who`, learning beside `stats_cache`: the compacted
/// tables whose small files' age matters, those the history settles and those it does
/// not, and the statements sent that scanned files and that read `$entries`.
async fn pyfleet_dating(
    catalog: &str,
    who: &str,
    stats_cache: &std::path::Path,
) -> (usize, usize, usize, usize) {
    use floe::lakehouse::dating::compacted_since;
    let cfg = HealthConfig::default();
    let scan = cfg.scan();
    let u = user(who);
    let lake =
        lakehouse_of(&lab().trino_url(), &u, &cfg, catalog).with_fallbacks_beside(stats_cache);
    lake.connect().await.unwrap();
    let tables = seed_tables(&lake).await;
    let mut items = Vec::new();
    let mut histories = std::collections::HashMap::new();
    for (t, survey) in lake.survey(&tables).await {
        let survey = survey.unwrap();
        if matches!(survey.file_read(&scan), FileRead::Needed(_)) {
            histories.insert(t.clone(), survey.history.clone());
            items.push(floe::lakehouse::queries::FileItem::of(
                t,
                survey.stats(&scan),
            ));
        }
    }
    let now = chrono::Utc::now();
    let (mut settled, mut unsettled) = (0, 0);
    for (t, stats) in lake.files_batch(&items).await {
        let stats = stats.unwrap();
        let needs_age = stats.last_compaction.is_some()
            && stats.small_files >= scan.min_small_files
            && stats.max_partition_small_files.is_none_or(|m| m >= 2);
        if !needs_age {
            continue;
        }
        if compacted_since(&histories[&t], &stats, &scan, now).is_some() {
            settled += 1;
        } else {
            unsettled += 1;
        }
        assert!(stats.oldest_small_file_at.is_some(), "{t}: {stats:?}");
    }
    let sent = lab().real_queries_of(&u).await;
    let count = |needle: &str| {
        sent.iter()
            .filter(|q| q["sql"].as_str().unwrap_or("").contains(needle))
            .count()
    };
    (
        settled,
        unsettled,
        count("$file_modified_time"),
        count("$entries"),
    )
}
