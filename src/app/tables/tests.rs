//! The Tables tab's refresh: probes, the full read's queue, a cold start's ranking, warm
//! starts and profile switches.

use super::*;
use crate::app::action::Action;
use crate::app::testing::{healthy_stats, incident_stats, loaded, query_failed, t0, tref};
use crate::app::update::update;
use crate::cache::Entry;

fn probe_of(st: &TableStats, id: i64) -> Probe {
    Probe {
        snapshot_id: Some(id),
        committed_at: st.newest_snapshot,
        snapshots: st.snapshots,
        metadata_at: None,
        metadata_files: None,
    }
}

/// The fixture's state with every table loaded by a full refresh.
fn all_loaded() -> State {
    let mut s = loaded();
    let generation = s.tables.generation;
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("audit", "events"),
            result: Ok(healthy_stats()),
        }),
    );
    assert!(!s.refresh_in_flight());
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SaveCache { entries, .. } if entries.len() == 3)),
        "the end of a refresh keeps every table's stats: {fx:?}"
    );
    s
}

/// A steady refresh that looks at every table (the rotation's quota covers them all at
/// this interval), the coordinator's record of writes answered empty.
fn auto_refresh(s: &mut State) -> Vec<Effect> {
    s.tables.policy.full_every = Some(s.refresh_every);
    let mut fx = steady_refresh(s);
    let generation = s.tables.generation;
    if let Some(i) = fx
        .iter()
        .position(|e| matches!(e, Effect::RecentWrites { .. }))
    {
        fx.remove(i);
        fx.extend(update(
            s,
            Action::Tables(TablesMsg::Written {
                generation,
                result: Ok(Default::default()),
            }),
        ));
    }
    fx
}

/// A steady refresh as the policy has it: the listing answered with the rows' tables.
fn steady_refresh(s: &mut State) -> Vec<Effect> {
    let fx = refresh(s, false);
    assert!(matches!(fx.last(), Some(Effect::Discover { .. })));
    let generation = s.tables.generation;
    let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    update(
        s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables),
        }),
    )
}

fn stats_of(s: &State, t: &TableRef) -> TableStats {
    s.tables.row(t).unwrap().stats.clone().unwrap()
}

type Probed = Vec<(TableRef, Result<Probe, crate::trino::TrinoError>)>;

fn probed(s: &mut State, results: impl FnOnce(&State) -> Probed) -> Vec<Effect> {
    let results = results(s);
    let generation = s.tables.generation;
    update(
        s,
        Action::Tables(TablesMsg::Probed {
            generation,
            results,
        }),
    )
}

#[test]
fn a_steady_refresh_probes_in_batches_and_reads_only_what_changed() {
    let mut s = all_loaded();
    s.tables.policy.probe_batch = 2;
    let fx = auto_refresh(&mut s);
    assert!(!s.tables.full);
    let batches: Vec<usize> = fx
        .iter()
        .map(|e| match e {
            Effect::Probe { tables, .. } => tables.len(),
            other => panic!("only probes, got {other:?}"),
        })
        .collect();
    assert_eq!(batches, vec![2, 1]);
    let (docs, parcels, events) = (
        tref("zoning", "documents"),
        tref("zoning", "parcels"),
        tref("audit", "events"),
    );
    let mut written = probe_of(&stats_of(&s, &docs), 9);
    written.snapshots += 1;
    written.committed_at = Some(t0());
    let fx = probed(&mut s, |s| {
        vec![
            (docs.clone(), Ok(written)),
            (parcels.clone(), Ok(probe_of(&stats_of(s, &parcels), 1))),
        ]
    });
    assert_eq!(
        fx,
        vec![Effect::LoadStats {
            generation: s.tables.generation,
            table: docs.clone()
        }],
        "only the written table is read again"
    );
    assert!(!s.tables.row(&parcels).unwrap().stale);
    let fx = probed(&mut s, |s| {
        vec![(events.clone(), Ok(probe_of(&stats_of(s, &events), 2)))]
    });
    assert!(fx.is_empty(), "{fx:?}");
    assert!(s.refresh_in_flight(), "documents is still being read");
    let generation = s.tables.generation;
    let mut after = incident_stats();
    after.snapshots += 1;
    after.newest_snapshot = Some(t0());
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: docs.clone(),
            result: Ok(after),
        }),
    );
    assert!(!s.refresh_in_flight());
    assert!(matches!(fx.as_slice(), [Effect::SaveCache { .. }]));
    // Nothing changed since: the next refresh reads no stats at all.
    let fx = auto_refresh(&mut s);
    let results = s
        .tables
        .rows
        .iter()
        .map(|r| {
            let p = r
                .probe
                .unwrap_or_else(|| probe_of(r.stats.as_ref().unwrap(), 1));
            (r.table.clone(), Ok(p))
        })
        .collect();
    assert_eq!(fx.len(), 2);
    let fx = probed(&mut s, |_| results);
    assert!(
        matches!(fx.as_slice(), [Effect::SaveCache { .. }]),
        "{fx:?}"
    );
}

#[test]
fn a_failing_probe_is_that_tables_error_only() {
    let mut s = all_loaded();
    auto_refresh(&mut s);
    let parcels = tref("zoning", "parcels");
    let events = tref("audit", "events");
    let fx = probed(&mut s, |s| {
        vec![
            (
                parcels.clone(),
                Err(query_failed("TABLE_NOT_FOUND", "gone", "q1")),
            ),
            (events.clone(), Ok(probe_of(&stats_of(s, &events), 2))),
        ]
    });
    assert!(fx.is_empty());
    let row = s.tables.row(&parcels).unwrap();
    assert!(row.error.as_deref().unwrap().contains("TABLE_NOT_FOUND"));
    assert!(row.stats.is_some(), "its last stats stay");
    assert!(s.tables.row(&events).unwrap().error.is_none());
    // A table that failed is read in full once it answers again.
    let docs = tref("zoning", "documents");
    probed(&mut s, |s| {
        vec![(docs.clone(), Ok(probe_of(&stats_of(s, &docs), 3)))]
    });
    assert!(!s.refresh_in_flight());
    auto_refresh(&mut s);
    let fx = probed(&mut s, |s| {
        vec![(parcels.clone(), Ok(probe_of(&stats_of(s, &parcels), 1)))]
    });
    assert!(matches!(fx.as_slice(), [Effect::LoadStats { table, .. }] if *table == parcels));
}

#[test]
fn only_a_manual_refresh_relearns_the_layouts() {
    let relearn = |fx: &[Effect]| {
        fx.iter().find_map(|e| match e {
            Effect::Discover { relearn, .. } => Some(*relearn),
            _ => None,
        })
    };
    let mut s = all_loaded();
    assert_eq!(relearn(&refresh(&mut s, false)), Some(false));
    let mut s = all_loaded();
    assert_eq!(relearn(&refresh(&mut s, true)), Some(true));
}

#[test]
fn the_full_read_is_due_by_wall_time_never_by_a_count_of_refreshes() {
    let min = |m: i64| t0() + chrono::Duration::minutes(m);
    let hour = Some(std::time::Duration::from_secs(3600));
    assert!(full_due(None, hour, t0()), "never read in full");
    assert!(full_due(None, None, t0()));
    assert!(!full_due(Some(t0()), hour, min(59)));
    assert!(full_due(Some(t0()), hour, min(60)));
    assert!(!full_due(Some(t0()), None, min(100_000)), "0s: never");
    // A clock that stepped back does not make one due.
    assert!(!full_due(Some(t0()), hour, min(-5)));

    // A steady refresh never reads every table again, however long floe stays open:
    // the rotation looks at each within `full_refresh_every` instead.
    let mut s = all_loaded();
    let start = s.now;
    for k in 0..20 {
        s.now = start + chrono::Duration::minutes(10 * k);
        auto_refresh(&mut s);
        assert!(!s.tables.full);
        s.tables.pending = 0;
    }
    let fx = refresh(&mut s, true);
    assert!(s.tables.full, "r and :refresh read everything: {fx:?}");
}

fn reads(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::LoadStats { table, .. } => Some(table.table.clone()),
            _ => None,
        })
        .collect()
}

fn surveys(fx: &[Effect]) -> Vec<Vec<TableRef>> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Survey { tables, .. } => Some(tables.clone()),
            _ => None,
        })
        .collect()
}

/// The tables of the file reads in `fx`, in order (several a statement).
fn file_reads(fx: &[Effect]) -> Vec<String> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::LoadFiles { tables, .. } => Some(tables),
            _ => None,
        })
        .flatten()
        .map(|(table, survey)| {
            assert!(
                survey.files_unread,
                "{table}: the survey's stats travel with it"
            );
            table.table.clone()
        })
        .collect()
}

/// What a survey finds of a table of `files` data files of `each` bytes.
fn survey_of(files: u64, each: u64) -> crate::lakehouse::summary::Survey {
    use crate::lakehouse::summary::{Survey, Totals};
    let totals = Totals {
        snapshots: 2,
        snapshot_id: Some(7),
        committed_at: Some(t0()),
        oldest_snapshot: Some(t0()),
        data_files: Some(files),
        files_size: Some(files * each),
        delete_files: Some(0),
        records: Some(files * 10),
        position_deletes: Some(0),
        equality_deletes: Some(0),
        ..Default::default()
    };
    Survey {
        totals,
        stats: TableStats {
            snapshots: 2,
            oldest_snapshot: Some(t0()),
            newest_snapshot: Some(t0()),
            ..Default::default()
        },
        meta: None,
        history: Vec::new(),
        long_history: false,
        removed_by_newest: Some(0),
    }
}

#[test]
fn the_file_reads_go_most_excess_files_first_then_the_unranked_then_the_rest() {
    let t = |n: &str| tref("s", n);
    let mut q: std::collections::VecDeque<TableRef> =
        ["a", "b", "c", "d", "e"].iter().map(|n| t(n)).collect();
    let rank = [(t("b"), 0), (t("c"), 7), (t("e"), 40), (t("d"), 7)]
        .into_iter()
        .collect();
    rank_queue(&mut q, &rank);
    let names: Vec<&str> = q.iter().map(|t| t.table.as_str()).collect();
    // Equal ranks keep their order (c before d).
    assert_eq!(names, ["e", "c", "d", "a", "b"]);
}

#[test]
fn a_cold_start_surveys_every_table_and_reads_the_files_of_the_worst_first() {
    const MB: u64 = 1 << 20;
    let mut s = State::new(t0());
    s.tables.policy.reads = 4;
    let tables: Vec<TableRef> = (0..25).map(|i| tref("s", &format!("t{i:02}"))).collect();
    refresh(&mut s, false);
    assert!(s.tables.full, "nothing known: a full read");
    let generation = s.tables.generation;
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables.clone()),
        }),
    );
    // Nothing to read yet: every slot surveys, ten tables a statement.
    assert!(
        reads(&fx).is_empty() && file_reads(&fx).is_empty(),
        "{fx:?}"
    );
    let batches = surveys(&fx);
    let firsts: Vec<&str> = batches.iter().map(|b| b[0].table.as_str()).collect();
    assert_eq!(firsts, ["t00", "t10", "t20"]);
    assert_eq!(batches[0].len(), crate::lakehouse::summary::SURVEY_BATCH);
    assert_eq!(batches[2].len(), 5);
    // t03: 5,000 files of 1 MB; t07: 40 of 1 MB; t05: 300 of 200 MB (no small file
    // proved, its files must tell); every other table 3 files: its totals decide it.
    let found = |t: &TableRef| match t.table.as_str() {
        "t03" => survey_of(5000, MB),
        "t07" => survey_of(40, MB),
        "t05" => survey_of(300, 200 * MB),
        "t21" => survey_of(2000, MB),
        _ => survey_of(3, MB),
    };
    let surveyed = |s: &mut State, batch: &[TableRef]| {
        let results = batch.iter().map(|t| (t.clone(), Ok(found(t)))).collect();
        update(
            s,
            Action::Tables(TablesMsg::Surveyed {
                generation,
                results,
            }),
        )
    };
    let fx = surveyed(&mut s, &batches[0]);
    // One slot is free for the reads while surveys remain: the worst proved first, alone
    // (its proved small files could fill a CRITICAL partition).
    assert_eq!(file_reads(&fx), ["t03"]);
    let queued: Vec<&str> = s.tables.queue.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(queued, ["t07", "t05"]);
    // Decided by their totals: stats now, no read of their files, verdicts evaluated.
    let t01 = s.tables.row(&tref("s", "t01")).unwrap();
    assert!(!t01.loading && t01.health.is_some());
    assert!(t01.stats.as_ref().unwrap().files_unread);
    // t03's totals prove it CRITICAL before its files are read.
    let t03 = s.tables.row(&tref("s", "t03")).unwrap();
    assert!(t03.loading);
    assert_eq!(
        t03.health.as_ref().unwrap().status,
        crate::health::Severity::Critical
    );
    let fx = surveyed(&mut s, &batches[2]);
    assert!(file_reads(&fx).is_empty(), "the read slot is busy: {fx:?}");
    let queued: Vec<&str> = s.tables.queue.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(queued, ["t21", "t07", "t05"], "a worse table goes ahead");
    let fx = surveyed(&mut s, &batches[1]);
    // The surveys are over: the reads take every slot, up to FILE_BATCH a statement.
    assert_eq!(file_reads(&fx), ["t21", "t07", "t05"]);
    assert!(s.refresh_in_flight());
    for batch in [vec!["t03"], vec!["t21", "t07", "t05"]] {
        update(
            &mut s,
            Action::Tables(TablesMsg::FilesRead {
                generation,
                results: batch
                    .iter()
                    .map(|t| (tref("s", t), Ok(incident_stats())))
                    .collect(),
            }),
        );
    }
    assert!(!s.refresh_in_flight(), "every table is in");
}

#[test]
fn the_ranking_never_takes_the_last_read_slot() {
    let window = |reads, rank_slots| {
        RefreshPolicy {
            reads,
            rank_slots,
            ..Default::default()
        }
        .rank_window()
    };
    assert_eq!(window(4, DEFAULT_RANK_SLOTS), (3, 1));
    assert_eq!(window(2, DEFAULT_RANK_SLOTS), (1, 1));
    assert_eq!(window(8, DEFAULT_RANK_SLOTS), (3, 5));
    assert_eq!(window(4, 1), (1, 3), "one ranking slot, as a knob can ask");
    assert_eq!(window(4, 9), (3, 1));
    // A single slot: the ranking runs beside it rather than never.
    assert_eq!(window(1, DEFAULT_RANK_SLOTS), (1, 1));
    assert_eq!(window(0, 0), (1, 1));
}

#[test]
fn a_full_refresh_of_known_tables_surveys_them_in_one_statement_and_keeps_their_rows() {
    let mut s = all_loaded();
    s.tables.policy.reads = 2;
    let fx = refresh(&mut s, true);
    assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
    let generation = s.tables.generation;
    let tables: Vec<TableRef> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables.clone()),
        }),
    );
    let surveyed = surveys(&fx);
    assert_eq!(surveyed.len(), 1, "{fx:?}");
    let mut got = surveyed[0].clone();
    got.sort();
    let mut want = tables.clone();
    want.sort();
    assert_eq!(got, want);
    assert!(reads(&fx).is_empty(), "{fx:?}");
    // Known rows keep their stats while the survey runs.
    assert!(s.tables.rows.iter().all(|r| r.stats.is_some()));
    let results = tables
        .iter()
        .map(|t| (t.clone(), Ok(survey_of(3, 1 << 20))))
        .collect();
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Surveyed {
            generation,
            results,
        }),
    );
    assert!(
        file_reads(&fx).is_empty(),
        "three files a table: nothing to read"
    );
    assert!(!s.refresh_in_flight());
    assert!(fx.iter().any(|e| matches!(e, Effect::SaveCache { .. })));
}

#[test]
fn the_metadata_probe_decides_by_the_newest_metadata_file() {
    let mut st = healthy_stats();
    let at = t0() - chrono::Duration::hours(1);
    st.metadata_at = Some(at);
    let p = |m: chrono::DateTime<Utc>| Probe {
        snapshot_id: Some(1),
        committed_at: None,
        snapshots: 0,
        metadata_at: Some(m),
        metadata_files: None,
    };
    assert!(same_snapshot(&st, &p(at)));
    // A property, schema or spec change or an expiry: a newer metadata file, however
    // the snapshots look.
    assert!(!same_snapshot(
        &st,
        &p(at + chrono::Duration::milliseconds(1))
    ));
    // Stats read without the metadata log (the survey's) are of the probe's snapshot when
    // they name its newest snapshot id, and of no snapshot when they name none.
    st.metadata_at = None;
    st.snapshot_id = None;
    assert!(!same_snapshot(&st, &p(at)));
    st.snapshot_id = Some(1);
    assert!(same_snapshot(&st, &p(at)));
    st.snapshot_id = Some(2);
    assert!(!same_snapshot(&st, &p(at)));
}

#[test]
fn the_first_probe_after_a_survey_keeps_its_stats_and_gives_them_the_metadata_log() {
    let mut s = all_loaded();
    let docs = tref("zoning", "documents");
    let at = t0() - chrono::Duration::minutes(5);
    {
        let row = s.tables.row_mut(&docs).unwrap();
        let st = row.stats.as_mut().unwrap();
        // What a survey leaves: no metadata log, the newest snapshot's id.
        st.metadata_at = None;
        st.metadata_files = None;
        st.snapshot_id = Some(7);
        row.probe = None;
    }
    let probe = |m, files| Probe {
        snapshot_id: Some(7),
        committed_at: None,
        snapshots: 0,
        metadata_at: Some(m),
        metadata_files: Some(files),
    };
    s.tables.pending = 1;
    let g = s.tables.generation;
    let fx = refresh::on_probed(&mut s, g, vec![(docs.clone(), Ok(probe(at, 240)))]);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::LoadStats { .. })),
        "{fx:?}"
    );
    let st = s.tables.row(&docs).unwrap().stats.clone().unwrap();
    assert_eq!((st.metadata_at, st.metadata_files), (Some(at), Some(240)));
    // The metadata files' rule sees what the probe counted.
    let health = s.tables.row(&docs).unwrap().health.clone().unwrap();
    assert!(
        health
            .findings
            .iter()
            .any(|f| f.rule == crate::health::Rule::MetadataFiles),
        "{health:?}"
    );
    // A newer metadata file with the same snapshot (a property change): read again.
    s.tables.pending = 1;
    let later = at + chrono::Duration::seconds(30);
    let fx = refresh::on_probed(&mut s, g, vec![(docs.clone(), Ok(probe(later, 241)))]);
    assert!(
        fx.iter().any(|e| matches!(e, Effect::LoadStats { .. })),
        "{fx:?}"
    );
}

#[test]
fn a_warm_start_paints_the_cache_as_of_its_age_then_the_probe_confirms_it() {
    let mut s = State::new(t0());
    let docs = tref("zoning", "documents");
    let st = incident_stats();
    let p = probe_of(&st, 7);
    let entry = Entry {
        profile: "lab".into(),
        url: "u".into(),
        table: docs.clone(),
        probe: Some(p),
        read_at: t0() - chrono::Duration::hours(3),
        stats: st,
    };
    warm_start(&mut s, vec![entry]);
    let row = s.tables.row(&docs).unwrap();
    assert!(row.cached && row.stale && row.health.is_some());
    let status = s.status.as_ref().unwrap().text.clone();
    assert!(status.contains("as of 3h ago"), "{status}");
    let fx = update(&mut s, Action::Start);
    assert!(
        !s.tables.full,
        "the first refresh after a warm start probes"
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
    let generation = s.tables.generation;
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(vec![docs.clone()]),
        }),
    );
    // The coordinator's writes since the cache was written first (what changed), then
    // the probes.
    match fx.as_slice() {
        [Effect::RecentWrites { since, .. }, Effect::Probe { .. }] => {
            assert!(*since <= t0() - chrono::Duration::hours(3), "{since}")
        }
        other => panic!("{other:?}"),
    }
    let written = update(
        &mut s,
        Action::Tables(TablesMsg::Written {
            generation,
            result: Ok(crate::lakehouse::writes::RecentWrites {
                names: vec![],
                newest: None,
            }),
        }),
    );
    assert!(written.is_empty(), "{written:?}");
    let fx = probed(&mut s, |_| vec![(docs.clone(), Ok(p))]);
    assert!(
        matches!(fx.as_slice(), [Effect::SaveCache { .. }]),
        "{fx:?}"
    );
    let row = s.tables.row(&docs).unwrap();
    assert!(!row.cached && !row.stale);
    assert!(s.status.is_none(), "the as-of mark is gone");
}

/// A warm start probes every cached table, all slots but one at a time; a table the
/// coordinator's writes name goes ahead of the probes still queued, and a table found
/// changed is read in the slot left free.
#[test]
fn a_warm_start_probes_a_written_table_first_and_reads_it_beside_the_probes() {
    let mut s = State::new(t0());
    s.tables.policy.reads = 4;
    s.tables.policy.probe_batch = 10;
    let tables: Vec<TableRef> = (0..100).map(|i| tref("s", &format!("t{i:03}"))).collect();
    let st = incident_stats();
    let entries = tables
        .iter()
        .map(|t| Entry {
            profile: "lab".into(),
            url: "u".into(),
            table: t.clone(),
            probe: Some(probe_of(&st, 7)),
            read_at: t0() - chrono::Duration::minutes(20),
            stats: st.clone(),
        })
        .collect();
    warm_start(&mut s, entries);
    update(&mut s, Action::Start);
    let generation = s.tables.generation;
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables.clone()),
        }),
    );
    assert!(matches!(fx[0], Effect::RecentWrites { .. }), "{fx:?}");
    let sent = probed_tables(&fx);
    assert_eq!(sent.len(), 30, "three probes of ten in flight: {fx:?}");
    assert_eq!(s.tables.probe_queue.len(), 7);
    // The writes name t077, queued: its probe goes next, ahead of the others.
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Written {
            generation,
            result: Ok(crate::lakehouse::writes::RecentWrites {
                names: vec![vec!["s".into(), "t077".into()]],
                newest: Some(t0()),
            }),
        }),
    );
    assert!(fx.is_empty(), "the probe slots are full: {fx:?}");
    assert_eq!(s.tables.probe_queue[0], vec![tref("s", "t077")]);
    // A probe batch ends: t077's probe is sent; t005 changed: its read goes at once.
    let changed = probe_of(&st, 8);
    let fx = probed(&mut s, |_| {
        (0..10)
            .map(|i| {
                let t = tref("s", &format!("t{i:03}"));
                let p = if i == 5 { changed } else { probe_of(&st, 7) };
                (t, Ok(p))
            })
            .collect()
    });
    assert_eq!(probed_tables(&fx), vec![tref("s", "t077")]);
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::LoadStats { table, .. } if table.table == "t005")),
        "{fx:?}"
    );
}

#[test]
fn a_profile_switch_paints_that_profiles_cache_then_probes() {
    let mut s = loaded();
    let docs = tref("zoning", "documents");
    let st = incident_stats();
    let entry = Entry {
        profile: "prod".into(),
        url: "http://prod:8080/".into(),
        table: docs.clone(),
        probe: Some(probe_of(&st, 7)),
        read_at: t0() - chrono::Duration::hours(2),
        stats: st,
    };
    let view = crate::app::action::ProfileView {
        profile: "prod".into(),
        trino_url: "http://prod:8080/".into(),
        readonly: false,
        refresh: std::time::Duration::from_secs(60),
        schemas: vec![],
        health: Default::default(),
        airflow_url: None,
        maintenance: vec![],
        warnings: vec![],
        cached: vec![entry],
    };
    let fx = update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ProfileSwitched(Ok(
            view,
        ))),
    );
    // Only the new profile's cached table, dimmed until revalidated.
    assert_eq!(s.tables.rows.len(), 1);
    let row = s.tables.row(&docs).unwrap();
    assert!(row.cached && row.stale && row.health.is_some());
    let status = s.status.as_ref().unwrap().text.clone();
    assert!(
        status.contains("switched to profile prod") && status.contains("as of 2h ago"),
        "{status}"
    );
    assert!(!s.tables.full, "the first refresh probes: {fx:?}");
    assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
}

#[test]
fn a_write_read_by_a_full_refresh_is_not_read_again_by_the_next_probe() {
    let mut s = all_loaded();
    let events = tref("audit", "events");
    let old = probe_of(&stats_of(&s, &events), 1);
    s.tables.rows.iter_mut().for_each(|r| r.probe = Some(old));
    // A write, then `r`: the stats show the new snapshot.
    refresh(&mut s, true);
    let generation = s.tables.generation;
    let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables),
        }),
    );
    let mut newer = healthy_stats();
    newer.snapshots += 1;
    newer.newest_snapshot = Some(t0());
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: events.clone(),
            result: Ok(newer.clone()),
        }),
    );
    assert_eq!(s.tables.row(&events).unwrap().probe, None);
    s.tables.pending = 0;
    auto_refresh(&mut s);
    let fx = probed(&mut s, |_| vec![(events.clone(), Ok(probe_of(&newer, 2)))]);
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::LoadStats { .. })),
        "{fx:?}"
    );
}

#[test]
fn a_cached_table_at_another_snapshot_is_read_again() {
    let mut s = State::new(t0());
    let docs = tref("zoning", "documents");
    let st = incident_stats();
    let entry = Entry {
        profile: "lab".into(),
        url: "u".into(),
        table: docs.clone(),
        probe: Some(probe_of(&st, 7)),
        read_at: t0(),
        stats: st.clone(),
    };
    warm_start(&mut s, vec![entry]);
    update(&mut s, Action::Start);
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(vec![docs.clone()]),
        }),
    );
    let fx = probed(&mut s, |_| vec![(docs.clone(), Ok(probe_of(&st, 8)))]);
    assert!(matches!(fx.as_slice(), [Effect::LoadStats { .. }]));
    assert!(s.tables.row(&docs).unwrap().cached, "still as of its age");
}

mod keys {
    use super::*;
    use crate::app::action::{Action, Effect};
    use crate::app::state::{Level, State};
    use crate::app::tables::TablesMsg;
    use crate::app::testing::*;
    use crate::app::update::update;

    #[test]
    fn start_discovers_then_loads_stats_worst_first() {
        let s = loaded();
        // documents (CRITICAL) first, parcels (OK), events (not loaded yet) last.
        let names: Vec<_> = s
            .tables
            .grid
            .index
            .iter()
            .map(|&i| s.tables.rows[i].name.clone())
            .collect();
        assert_eq!(
            names,
            vec!["zoning.documents", "zoning.parcels", "audit.events"]
        );
        assert_eq!(s.tables.pending, 1);
        assert!(s.refresh_in_flight());
    }

    #[test]
    fn selection_follows_the_table_when_stats_reorder_rows() {
        let mut s = loaded();
        update(&mut s, key('G')); // audit.events, not loaded yet
        let generation = s.tables.generation;
        let mut bloated = healthy_stats();
        bloated.snapshots = 600;
        bloated.oldest_snapshot = Some(t0() - chrono::Duration::days(60));
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Ok(bloated),
            }),
        );
        assert_eq!(selected_name(&s), "audit.events");
        assert_eq!(
            s.tables.grid.selected, 1,
            "CRITICAL snapshot bloat sorts it second"
        );
    }

    #[test]
    fn refresh_never_overlaps_and_rows_stay_while_reloading() {
        let mut s = loaded();
        let fx = update(&mut s, key('r'));
        assert!(
            fx.is_empty(),
            "the first refresh is still in flight (one table pending)"
        );
        assert!(s.status.as_ref().unwrap().text.contains("already running"));
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Ok(healthy_stats()),
            }),
        );
        assert!(!s.refresh_in_flight());
        let fx = update(&mut s, key('r'));
        assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
        assert!(
            s.tables.rows.iter().all(|r| r.stale && r.stats.is_some()),
            "old values stay, marked stale"
        );
        // A result of the previous generation is ignored.
        let before = s
            .tables
            .row(&tref("zoning", "parcels"))
            .unwrap()
            .stats
            .clone();
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("zoning", "parcels"),
                result: Ok(incident_stats()),
            }),
        );
        assert_eq!(
            s.tables.row(&tref("zoning", "parcels")).unwrap().stats,
            before
        );
    }

    #[test]
    fn auto_refresh_on_tick_unless_frozen() {
        let mut s = loaded();
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Ok(healthy_stats()),
            }),
        );
        let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(30)));
        assert!(fx.is_empty());
        assert_eq!(s.next_refresh_in(), Some(30));
        update(&mut s, key('f'));
        assert!(s.frozen);
        let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(61)));
        assert!(fx.is_empty(), "frozen");
        update(&mut s, key('f'));
        let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(62)));
        assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
    }

    #[test]
    fn errors_keep_data_and_show_trino_names() {
        let mut s = loaded();
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Err(query_failed(
                    "TABLE_NOT_FOUND",
                    "line 1:15: Table 'iceberg.audit.events' does not exist",
                    "20261129_1",
                )),
            }),
        );
        let st = s.status.as_ref().unwrap();
        assert_eq!(st.level, Level::Error);
        assert!(st.text.contains("TABLE_NOT_FOUND"), "{}", st.text);
        // The next refresh fails to list tables: rows stay.
        update(&mut s, key('r'));
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Err(unreachable("http://127.0.0.1:1/v1/statement")),
            }),
        );
        assert_eq!(s.tables.rows.len(), 3);
        assert!(s.tables.rows.iter().all(|r| !r.stale));
        assert!(
            s.status
                .as_ref()
                .unwrap()
                .text
                .contains("connection refused")
        );
        assert!(!s.refresh_in_flight(), "the next refresh retries");
    }

    #[test]
    fn a_table_whose_re_read_failed_says_so_and_is_not_green() {
        let mut s = loaded();
        let parcels = tref("zoning", "parcels");
        let row = |s: &State| {
            s.tables
                .rows
                .iter()
                .find(|r| r.table == parcels)
                .cloned()
                .unwrap()
        };
        assert_eq!(row(&s).status(), Some(crate::health::Severity::Ok));
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: parcels.clone(),
                result: Err(query_failed(
                    "PERMISSION_DENIED",
                    "Access Denied: Cannot select from table",
                    "q1",
                )),
            }),
        );
        let r = row(&s);
        assert!(r.stats.is_some(), "the last good figures stay");
        assert_eq!(r.status(), Some(crate::health::Severity::Unknown));
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 20)).unwrap();
        term.draw(|f| crate::ui::draw(f, &s)).unwrap();
        let screen: String = term
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(
            screen.contains("UNKN    100 zoning.parcels ! re-"),
            "the row says it is not current: {screen}"
        );
    }

    #[test]
    fn verdicts_age_with_the_clock_between_reads() {
        let mut s = loaded();
        let parcels = tref("zoning", "parcels");
        let health = |s: &State| {
            s.tables
                .rows
                .iter()
                .find(|r| r.table == parcels)
                .and_then(|r| r.health.clone())
                .unwrap()
        };
        let before = health(&s);
        let later = t0() + chrono::Duration::days(30);
        update(&mut s, Action::Tick(later));
        let after = health(&s);
        let row = s.tables.rows.iter().find(|r| r.table == parcels).unwrap();
        assert_eq!(
            after,
            crate::health::evaluate(
                row.stats.as_ref().unwrap(),
                row.dag.as_ref(),
                &s.health,
                later
            ),
            "evaluated against the tick's clock"
        );
        assert_ne!(
            after, before,
            "a month without a write or a compaction shows"
        );
    }
}

/// A fleet of `n` tables, every one read and unchanged since.
fn fleet(n: usize) -> State {
    let mut s = State::new(t0());
    s.tables.rows = (0..n)
        .map(|i| {
            let mut r = TableRow::new(tref("s", &format!("t{i:04}")));
            r.stats = Some(healthy_stats());
            r.read_at = Some(t0());
            r
        })
        .collect();
    s.tables.last_full = Some(t0());
    s.tables.writes_since = Some(t0());
    s.refresh_every = std::time::Duration::from_secs(60);
    s.tables.reindex();
    s
}

fn probed_tables(fx: &[Effect]) -> Vec<TableRef> {
    fx.iter()
        .flat_map(|e| match e {
            Effect::Probe { tables, .. } => tables.clone(),
            _ => Vec::new(),
        })
        .collect()
}

/// Answer every probe of `fx` with "unchanged".
fn unchanged(s: &mut State, fx: &[Effect]) {
    let tables = probed_tables(fx);
    probed(s, |s| {
        tables
            .iter()
            .map(|t| (t.clone(), Ok(probe_of(&stats_of(s, t), 1))))
            .collect()
    });
}

#[test]
fn a_steady_refresh_looks_at_every_table_within_full_refresh_every_least_recently_first() {
    let mut s = fleet(1000);
    s.tables.policy.budget = None;
    let mut seen = std::collections::HashSet::new();
    // An hour of refreshes a minute apart: 17 tables each (⌈1000 × 60 s / 1 h⌉), never
    // one twice before every other was looked at.
    for minute in 0..60 {
        s.now = t0() + chrono::Duration::minutes(minute);
        let fx = steady_refresh(&mut s);
        let tables = probed_tables(&fx);
        assert_eq!(tables.len(), 17, "minute {minute}");
        for t in &tables {
            // Once every table was looked at, the rotation starts over with the oldest.
            assert!(
                seen.insert(t.clone()) || seen.len() == 1000,
                "{t} looked at twice before every other (minute {minute})"
            );
        }
        assert!(fx.iter().any(|e| matches!(e, Effect::RecentWrites { .. })));
        assert!(
            fx.iter()
                .all(|e| !matches!(e, Effect::LoadStats { .. } | Effect::Survey { .. }))
        );
        unchanged(&mut s, &fx);
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Written {
                generation,
                result: Ok(Default::default()),
            }),
        );
        assert!(!s.refresh_in_flight());
    }
    assert_eq!(seen.len(), 1000, "every table within the hour");
    let row = s.tables.row(&tref("s", "t0000")).unwrap();
    assert!(
        row.checked_at.is_some(),
        "the row says when it was last checked"
    );
}

#[test]
fn a_write_the_coordinator_ran_is_probed_in_the_same_refresh() {
    let mut s = fleet(200);
    let fx = steady_refresh(&mut s);
    let rotated = probed_tables(&fx);
    let since = fx.iter().find_map(|e| match e {
        Effect::RecentWrites { since, .. } => Some(*since),
        _ => None,
    });
    assert_eq!(since, Some(t0()), "the writes since the last look");
    unchanged(&mut s, &fx);
    assert!(s.refresh_in_flight(), "the writes are still to come");
    let written = tref("s", "t0150");
    assert!(!rotated.contains(&written));
    let generation = s.tables.generation;
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Written {
            generation,
            result: Ok(crate::lakehouse::writes::RecentWrites {
                names: vec![
                    vec!["t0150".to_string()],
                    vec!["other".to_string(), "t0151".to_string()],
                ],
                newest: Some(t0() + chrono::Duration::seconds(30)),
            }),
        }),
    );
    assert_eq!(probed_tables(&fx), vec![written.clone()], "{fx:?}");
    // It changed: read again, in this refresh.
    let mut p = probe_of(&stats_of(&s, &written), 2);
    p.snapshots += 1;
    let fx = probed(&mut s, |_| vec![(written.clone(), Ok(p))]);
    assert!(matches!(fx.as_slice(), [Effect::LoadStats { table, .. }] if *table == written));
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: written.clone(),
            result: Ok(healthy_stats()),
        }),
    );
    // The next read starts after the newest write seen, never before it.
    let fx = steady_refresh(&mut s);
    let since = fx.iter().find_map(|e| match e {
        Effect::RecentWrites { since, .. } => Some(*since),
        _ => None,
    });
    assert_eq!(since, Some(t0() + chrono::Duration::seconds(30)));
    // A coordinator that denies its query list: the refresh ends all the same.
    let mut s = fleet(20);
    let fx = steady_refresh(&mut s);
    unchanged(&mut s, &fx);
    let generation = s.tables.generation;
    update(
        &mut s,
        Action::Tables(TablesMsg::Written {
            generation,
            result: Err(query_failed("PERMISSION_DENIED", "no", "q9")),
        }),
    );
    assert!(!s.refresh_in_flight());
}

#[test]
fn a_refresh_that_cost_the_coordinator_over_its_budget_looks_at_fewer_tables() {
    use crate::trino::Cost;
    let mut s = fleet(1000);
    assert_eq!(rotation(&s).len(), 17);
    // 8 s of planning and CPU in the last two minutes: 4 s a minute, twice the budget.
    let reading = |ms| Cost {
        statements: 10,
        planning_ms: ms,
        cpu_ms: 0,
        elapsed_ms: ms,
    };
    s.now = t0();
    record_cost(&mut s, reading(1_000));
    s.now = t0() + chrono::Duration::minutes(2);
    record_cost(&mut s, reading(9_000));
    assert_eq!(spent_per_minute(&s), Some(4.0));
    assert_eq!(rotation(&s).len(), 8, "half the quota");
    // Within the budget: the whole quota.
    s.now = t0() + chrono::Duration::minutes(7);
    record_cost(&mut s, reading(9_500));
    assert!(spent_per_minute(&s).unwrap() < 2.0);
    assert_eq!(rotation(&s).len(), 17);
    // Tables never read or failed are looked at whatever the budget.
    s.tables.rows[3].error = Some("gone".into());
    s.tables.policy.full_every = None;
    assert_eq!(rotation(&s), vec![tref("s", "t0003")]);
}

#[test]
fn a_cold_start_of_many_tables_ends_whatever_order_the_answers_come_in() {
    const MB: u64 = 1 << 20;
    let mut s = State::new(t0());
    s.tables.policy.reads = 4;
    let tables: Vec<TableRef> = (0..300).map(|i| tref("s", &format!("t{i:03}"))).collect();
    refresh(&mut s, false);
    let generation = s.tables.generation;
    let mut inflight = update(
        &mut s,
        Action::Tables(TablesMsg::Discovered {
            generation,
            result: Ok(tables),
        }),
    );
    let mut sent = 0;
    let mut k = 0usize;
    while !inflight.is_empty() {
        // Answer the effects in a shuffled order.
        k = (k * 7 + 3) % inflight.len();
        let e = inflight.remove(k);
        sent += 1;
        let fx = match e {
            Effect::Survey { tables, .. } => {
                let results = tables
                    .iter()
                    .map(|t| {
                        let n: u64 = t.table[1..].parse().unwrap();
                        (
                            t.clone(),
                            Ok(survey_of(if n.is_multiple_of(3) { 50 } else { 4 }, MB)),
                        )
                    })
                    .collect();
                update(
                    &mut s,
                    Action::Tables(TablesMsg::Surveyed {
                        generation,
                        results,
                    }),
                )
            }
            Effect::LoadFiles { tables, .. } => update(
                &mut s,
                Action::Tables(TablesMsg::FilesRead {
                    generation,
                    results: tables
                        .into_iter()
                        .map(|(t, _)| (t, Ok(healthy_stats())))
                        .collect(),
                }),
            ),
            Effect::LoadStats { table, .. } => update(
                &mut s,
                Action::Tables(TablesMsg::Stats {
                    generation,
                    table,
                    result: Ok(healthy_stats()),
                }),
            ),
            _ => Vec::new(),
        };
        inflight.extend(fx);
        assert!(
            inflight.len() <= 5,
            "at most the slots in flight: {}",
            inflight.len()
        );
    }
    assert!(!s.refresh_in_flight(), "pending {}", s.tables.pending);
    // 30 surveys, the cache, and the 100 tables' file reads, several a statement.
    let reads = sent - 30 - 1;
    assert!(
        (100_usize.div_ceil(super::refresh::FILE_BATCH)..100).contains(&reads),
        "{reads} file reads"
    );
}
