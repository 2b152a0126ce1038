//! The Tables tab's refresh: probes, the full read's queue, a cold start's ranking, warm
//! starts and profile switches.

use super::*;
use crate::app::action::Action;
use crate::app::testing::{healthy_stats, incident_stats, loaded, query_failed, t0, tref};
use crate::app::update::update;
use crate::cache::Entry;
use crate::lakehouse::probe::RANK_BATCH;

fn probe_of(st: &TableStats, id: i64) -> Probe {
    Probe {
        snapshot_id: Some(id),
        committed_at: st.newest_snapshot,
        snapshots: st.snapshots,
        metadata_at: None,
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

fn auto_refresh(s: &mut State) -> Vec<Effect> {
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

    let mut s = all_loaded();
    s.tables.policy.full_every = Some(std::time::Duration::from_secs(600));
    let full = |fx: &[Effect]| fx.iter().all(|e| matches!(e, Effect::LoadStats { .. }));
    let start = s.now;
    // A refresh every 5 s for 9 minutes: none reads everything, however many.
    let mut kinds = Vec::new();
    for k in 0..108 {
        s.now = start + chrono::Duration::seconds(5 * k);
        let fx = auto_refresh(&mut s);
        kinds.push(full(&fx));
        s.tables.pending = 0;
    }
    assert!(kinds.iter().all(|f| !f), "{kinds:?}");
    // Ten minutes after the last full read: the next one reads everything, once.
    s.now = start + chrono::Duration::minutes(10);
    assert!(full(&auto_refresh(&mut s)));
    s.tables.pending = 0;
    s.now += chrono::Duration::seconds(5);
    assert!(!full(&auto_refresh(&mut s)));
    s.tables.pending = 0;
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

fn ranks(fx: &[Effect]) -> Vec<Vec<TableRef>> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Rank { tables, .. } => Some(tables.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn ranking_puts_the_most_written_first_then_the_unranked_then_the_compacted() {
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
fn a_cold_start_reads_the_most_written_tables_first_not_the_alphabet() {
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
    // One slot reads (nothing is known to order the reads by), the other three rank
    // the next tables, ten per statement.
    assert_eq!(reads(&fx), ["t00"]);
    let batches = ranks(&fx);
    let firsts: Vec<&str> = batches.iter().map(|b| b[0].table.as_str()).collect();
    assert_eq!(firsts, ["t01", "t11", "t21"]);
    assert_eq!(batches[0].len(), RANK_BATCH);
    assert_eq!(batches[2].len(), 4);
    let written = |t: &TableRef| match t.table.as_str() {
        "t09" => 80,
        "t05" => 20,
        "t04" => 0,
        n if n < "t11" => 3,
        _ => 1,
    };
    let ranked = |s: &mut State, batch: &[TableRef]| {
        let results = batch.iter().map(|t| (t.clone(), Ok(written(t)))).collect();
        update(
            s,
            Action::Tables(TablesMsg::Ranked {
                generation,
                results,
            }),
        )
    };
    let fx = ranked(&mut s, &batches[0]);
    assert!(reads(&fx).is_empty(), "the read slot is busy: {fx:?}");
    assert!(ranks(&fx).is_empty(), "every batch is sent: {fx:?}");
    // As the read ends, the most written starts.
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table: tref("s", "t00"),
            result: Ok(healthy_stats()),
        }),
    );
    assert_eq!(reads(&fx), ["t09"]);
    let fx = ranked(&mut s, &batches[1]);
    assert!(
        reads(&fx).is_empty(),
        "a ranking is still in flight: {fx:?}"
    );
    // The ranking is over: the reads take every slot, most written first.
    let fx = ranked(&mut s, &batches[2]);
    assert_eq!(reads(&fx), ["t05", "t01", "t02"]);
    let queued: Vec<&str> = s.tables.queue.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(queued[..6], ["t03", "t06", "t07", "t08", "t10", "t11"]);
    assert_eq!(
        queued.last(),
        Some(&"t04"),
        "compacted since, nothing written: last"
    );
    assert_eq!(queued.len(), 25 - 5);
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
fn a_full_refresh_of_known_tables_ranks_nothing_and_keeps_the_slots_full() {
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
            result: Ok(tables),
        }),
    );
    assert!(ranks(&fx).is_empty());
    assert_eq!(reads(&fx).len(), 2, "{fx:?}");
    let first = reads(&fx)[0].clone();
    let table = s
        .tables
        .rows
        .iter()
        .find(|r| r.table.table == first)
        .unwrap()
        .table
        .clone();
    let fx = update(
        &mut s,
        Action::Tables(TablesMsg::Stats {
            generation,
            table,
            result: Ok(healthy_stats()),
        }),
    );
    assert_eq!(
        reads(&fx).len(),
        1,
        "the last table starts as one ends: {fx:?}"
    );
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
    };
    assert!(same_snapshot(&st, &p(at)));
    // A property, schema or spec change or an expiry: a newer metadata file, however
    // the snapshots look.
    assert!(!same_snapshot(
        &st,
        &p(at + chrono::Duration::milliseconds(1))
    ));
    // Stats read without the metadata log are read again once.
    st.metadata_at = None;
    assert!(!same_snapshot(&st, &p(at)));
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
    assert!(matches!(fx.as_slice(), [Effect::Probe { .. }]));
    let fx = probed(&mut s, |_| vec![(docs.clone(), Ok(p))]);
    assert!(
        matches!(fx.as_slice(), [Effect::SaveCache { .. }]),
        "{fx:?}"
    );
    let row = s.tables.row(&docs).unwrap();
    assert!(!row.cached && !row.stale);
    assert!(s.status.is_none(), "the as-of mark is gone");
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
