//! The Tables tab's side of the refresh: rows, verdicts, status lines, warm starts, profile
//! switches and keys. What is read when is `crate::refresh`'s (its own tests).

use super::*;
use crate::app::action::Action;
use crate::app::state::Level;
use crate::app::testing::*;
use crate::app::update::update;
use crate::cache::Entry;
use crate::lakehouse::probe::Probe;
use crate::refresh::{Read, ReadKind};

fn probe_of(st: &TableStats, id: i64) -> Probe {
    Probe {
        snapshot_id: Some(id),
        committed_at: st.newest_snapshot,
        snapshots: st.snapshots,
        metadata_at: None,
        metadata_files: None,
    }
}

/// The fixture's state with every table loaded by the cold start.
fn all_loaded() -> State {
    let mut s = loaded();
    let id = survey_in_flight(&s);
    // The survey's answer for the third table, as the file read that follows it would
    // settle it.
    let fx = answer(
        &mut s,
        id,
        Answer::Files(vec![(tref("audit", "events"), Ok(healthy_stats()))]),
    );
    assert!(!s.refresh_in_flight());
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::SaveCache { entries, .. } if entries.len() == 3)),
        "the end of a refresh keeps every table's stats: {fx:?}"
    );
    s
}

/// A steady refresh that looks at every table: the listing answered with the rows'
/// tables, the coordinator's writes answered empty. The probes it sends.
fn steady_refresh(s: &mut State) -> Vec<(crate::refresh::RequestId, Read)> {
    s.tables.refresh.policy.full_every = Some(s.refresh_every);
    let fx = refresh(s, false);
    let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    let fx = listed(s, &fx, tables);
    let mut probes = Vec::new();
    for (id, read) in reads_in(&fx) {
        match read {
            Read::Writes { .. } => {
                answer(s, id, Answer::Written(Ok(Default::default())));
            }
            Read::Probe(_) => probes.push((id, read)),
            other => panic!("{other:?}"),
        }
    }
    probes
}

fn stats_of(s: &State, t: &TableRef) -> TableStats {
    s.tables.row(t).unwrap().read.stats.clone().unwrap()
}

#[test]
fn start_lists_then_reads_worst_first() {
    let s = loaded();
    // documents (CRITICAL) first, parcels (OK), events (not read yet) last.
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
    assert!(s.refresh_in_flight());
    let events = s.tables.row(&tref("audit", "events")).unwrap();
    assert_eq!(s.tables.standing(events), crate::refresh::Standing::Reading);
}

#[test]
fn selection_follows_the_table_when_stats_reorder_rows() {
    let mut s = loaded();
    update(&mut s, key('G')); // audit.events, not read yet
    let mut bloated = healthy_stats();
    bloated.snapshots = 600;
    bloated.oldest_snapshot = Some(t0() - chrono::Duration::days(60));
    let id = survey_in_flight(&s);
    answer(
        &mut s,
        id,
        Answer::Files(vec![(tref("audit", "events"), Ok(bloated))]),
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
    let old = survey_in_flight(&s);
    answer(
        &mut s,
        old,
        Answer::Files(vec![(tref("audit", "events"), Ok(healthy_stats()))]),
    );
    assert!(!s.refresh_in_flight());
    let fx = update(&mut s, key('r'));
    let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    let fx = listed(&mut s, &fx, tables);
    assert!(!reads_in(&fx).is_empty());
    assert!(
        s.tables
            .rows
            .iter()
            .all(|r| r.read.stats.is_some()
                && s.tables.standing(r) != crate::refresh::Standing::Idle),
        "old values stay, marked as read again"
    );
    // An answer to a read of the previous refresh is not taken.
    let parcels = tref("zoning", "parcels");
    let before = stats_of(&s, &parcels);
    answer(
        &mut s,
        old,
        Answer::Files(vec![(parcels.clone(), Ok(incident_stats()))]),
    );
    assert_eq!(stats_of(&s, &parcels), before);
}

#[test]
fn auto_refresh_on_tick_unless_frozen() {
    let mut s = all_loaded();
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(30)));
    assert!(fx.is_empty());
    assert_eq!(s.next_refresh_in(), Some(30));
    update(&mut s, key('f'));
    assert!(s.frozen);
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(61)));
    assert!(fx.is_empty(), "frozen");
    update(&mut s, key('f'));
    let fx = update(&mut s, Action::Tick(t0() + chrono::Duration::seconds(62)));
    read_of(&fx, ReadKind::List);
}

#[test]
fn errors_keep_data_and_show_trino_names() {
    let mut s = loaded();
    let id = survey_in_flight(&s);
    answer(
        &mut s,
        id,
        Answer::Surveyed(vec![(
            tref("audit", "events"),
            Err(query_failed(
                "TABLE_NOT_FOUND",
                "line 1:15: Table 'iceberg.audit.events' does not exist",
                "20261129_1",
            )),
        )]),
    );
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.level, Level::Error);
    assert!(st.text.contains("TABLE_NOT_FOUND"), "{}", st.text);
    // The next refresh fails to list tables: rows stay.
    let fx = update(&mut s, key('r'));
    let (id, _) = read_of(&fx, ReadKind::List);
    answer(
        &mut s,
        id,
        Answer::Listed(Err(unreachable("http://127.0.0.1:1/v1/statement"))),
    );
    assert_eq!(s.tables.rows.len(), 3);
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
    let row = |s: &State| s.tables.row(&parcels).cloned().unwrap();
    assert_eq!(row(&s).status(), Some(crate::health::Severity::Ok));
    let Some(Effect::Read { id, .. }) = reload_row(&mut s, &parcels) else {
        panic!("a read");
    };
    answer(
        &mut s,
        id,
        Answer::Table(
            parcels.clone(),
            Err(query_failed(
                "PERMISSION_DENIED",
                "Access Denied: Cannot select from table",
                "q1",
            )),
        ),
    );
    let r = row(&s);
    assert!(r.read.stats.is_some(), "the last good figures stay");
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
            .row(&parcels)
            .and_then(|r| r.health.clone())
            .unwrap()
    };
    let before = health(&s);
    let later = t0() + chrono::Duration::days(30);
    update(&mut s, Action::Tick(later));
    let after = health(&s);
    let row = s.tables.row(&parcels).unwrap();
    assert_eq!(
        after,
        crate::health::evaluate(
            row.read.stats.as_ref().unwrap(),
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

/// What the screen shows of a table whose files are still being read: the bound its
/// survey proved (`>=`), no verdict, nothing in Triage; the verdict comes with the files.
#[test]
fn a_bound_is_shown_as_one_and_never_as_a_verdict() {
    let mut s = loaded();
    let id = survey_in_flight(&s);
    let events = tref("audit", "events");
    let mut survey = crate::refresh::testing::survey_of(5000, 1 << 20);
    survey.totals.delete_files = Some(0);
    let fx = answer(
        &mut s,
        id,
        Answer::Surveyed(vec![(events.clone(), Ok(survey))]),
    );
    let (files, _) = read_of(&fx, ReadKind::Files);
    let row = s.tables.row(&events).unwrap();
    assert!(row.read.stats.is_none() && row.health.is_none() && row.status().is_none());
    assert_eq!(row.stats().unwrap().small_files, 4948);
    crate::app::triage::rebuild(&mut s);
    assert!(
        !s.triage
            .incidents
            .iter()
            .any(|i| i.summary().contains("events")),
        "no incident rests on a bound"
    );
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 20)).unwrap();
    s.tab = crate::app::state::Tab::Tables;
    term.draw(|f| crate::ui::draw(f, &s)).unwrap();
    let screen: String = term
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(
        screen.contains(">=4948") || screen.contains(">=4.9k"),
        "{screen}"
    );
    // The file read fails: no verdict was ever made of the bound, none is cached.
    let fx = answer(
        &mut s,
        files,
        Answer::Files(vec![(
            events.clone(),
            Err(query_failed("GENERIC_INTERNAL_ERROR", "boom", "q")),
        )]),
    );
    let saved = fx.iter().find_map(|e| match e {
        Effect::SaveCache { entries, .. } => Some(entries.clone()),
        _ => None,
    });
    let saved = saved.expect("the refresh's end writes the cache");
    assert!(!saved.iter().any(|e| e.table == events), "{saved:?}");
    assert!(s.tables.row(&events).unwrap().read.bound.is_none());
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
    assert!(row.read.cached && row.health.is_some());
    let status = s.status.as_ref().unwrap().text.clone();
    assert!(status.contains("as of 3h ago"), "{status}");
    let fx = update(&mut s, Action::Start);
    assert!(
        !s.tables.refresh.full(),
        "the first refresh after a warm start probes"
    );
    let fx = listed(&mut s, &fx, vec![docs.clone()]);
    // The coordinator's writes since the cache was written first (what changed), then
    // the probes.
    let kinds: Vec<ReadKind> = reads_in(&fx).iter().map(|(_, r)| r.kind()).collect();
    assert_eq!(kinds, [ReadKind::Writes, ReadKind::Probe]);
    let (writes, Read::Writes { since }) = read_of(&fx, ReadKind::Writes) else {
        unreachable!()
    };
    assert!(since <= t0() - chrono::Duration::hours(3), "{since}");
    assert!(answer(&mut s, writes, Answer::Written(Ok(Default::default()))).is_empty());
    let (probe, _) = read_of(&fx, ReadKind::Probe);
    let fx = answer(&mut s, probe, Answer::Probed(vec![(docs.clone(), Ok(p))]));
    // Confirmed: nothing new to keep, the cache is not written again (a refresh that
    // changed nothing writes nothing).
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::SaveCache { .. })),
        "{fx:?}"
    );
    assert!(!s.refresh_in_flight());
    let row = s.tables.row(&docs).unwrap();
    assert!(!row.read.cached);
    assert!(s.status.is_none(), "the as-of mark is gone");
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
    let fx = update(&mut s, Action::Start);
    let fx = listed(&mut s, &fx, vec![docs.clone()]);
    let (probe, _) = read_of(&fx, ReadKind::Probe);
    let fx = answer(
        &mut s,
        probe,
        Answer::Probed(vec![(docs.clone(), Ok(probe_of(&st, 8)))]),
    );
    read_of(&fx, ReadKind::Table);
    assert!(
        s.tables.row(&docs).unwrap().read.cached,
        "still as of its age"
    );
}

#[test]
fn a_profile_switch_paints_that_profiles_cache_and_takes_none_of_the_old_answers() {
    let mut s = loaded();
    let old_survey = survey_in_flight(&s);
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
    let mut view = profile_view("prod");
    view.trino_url = "http://prod:8080/".into();
    view.cached = vec![entry];
    let fx = update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ProfileSwitched(Ok(
            view,
        ))),
    );
    // Only the new profile's cached table, dimmed until revalidated.
    assert_eq!(s.tables.rows.len(), 1);
    let row = s.tables.row(&docs).unwrap();
    assert!(row.read.cached && row.health.is_some());
    let status = s.status.as_ref().unwrap().text.clone();
    assert!(
        status.contains("switched to profile prod") && status.contains("as of 2h ago"),
        "{status}"
    );
    assert!(!s.tables.refresh.full(), "the first refresh probes: {fx:?}");
    let (list, _) = read_of(&fx, ReadKind::List);
    assert_ne!(list.epoch, old_survey.epoch, "another connection's ids");
    // The old profile's survey answers late, for a table of the same name: not taken.
    let before = s.tables.row(&docs).unwrap().read.clone();
    answer(
        &mut s,
        old_survey,
        Answer::Files(vec![(docs.clone(), Ok(healthy_stats()))]),
    );
    assert_eq!(s.tables.row(&docs).unwrap().read, before);
    // Nor its listing: the new profile's rows stay.
    let first = crate::refresh::RequestId { n: 1, ..old_survey };
    answer(
        &mut s,
        first,
        Answer::Listed(Ok(vec![tref("zoning", "parcels")])),
    );
    assert_eq!(s.tables.rows.len(), 1);
}

/// A maintenance job's end reads its table again while the refresh reads it too: the
/// refresh still ends (before, its slot lost the first read's answer and floe never
/// refreshed again), and the next one starts on time.
#[test]
fn a_job_that_ends_while_its_table_is_read_never_stops_the_refresh() {
    let mut s = all_loaded();
    let docs = tref("zoning", "documents");
    let probes = steady_refresh(&mut s);
    let mut changed = probe_of(&stats_of(&s, &docs), 9);
    changed.snapshots += 1;
    let mut fx = Vec::new();
    for (id, read) in probes {
        let results = read
            .tables()
            .into_iter()
            .map(|t| {
                let p = if t == docs {
                    changed
                } else {
                    probe_of(&stats_of(&s, &t), 1)
                };
                (t, Ok(p))
            })
            .collect();
        fx.extend(answer(&mut s, id, Answer::Probed(results)));
    }
    let (survey, _) = read_of(&fx, ReadKind::Table);
    // The job ends: documents is read again on its own.
    let reload = reload_row(&mut s, &docs).unwrap();
    let Effect::Read { id: reload, .. } = reload else {
        panic!("{reload:?}")
    };
    // Its own read answers first, then the survey's (in the old runtime, never).
    answer(
        &mut s,
        reload,
        Answer::Table(docs.clone(), Ok(incident_stats())),
    );
    assert!(s.refresh_in_flight(), "the survey is still awaited");
    answer(
        &mut s,
        survey,
        Answer::Table(docs.clone(), Ok(healthy_stats())),
    );
    assert!(!s.refresh_in_flight());
    assert_eq!(
        stats_of(&s, &docs),
        incident_stats(),
        "its own read settled it"
    );
    let later = s.now + chrono::Duration::seconds(61);
    let fx = update(&mut s, Action::Tick(later));
    read_of(&fx, ReadKind::List);
}

/// A profile of two catalogs: the one whose listing answers first has its rows on screen
/// and its tables surveyed before the other's listing answers; the whole listing then
/// adds the other's rows, and none is surveyed twice.
#[test]
fn a_catalogs_rows_come_and_are_surveyed_while_anothers_listing_is_awaited() {
    let mut s = State::new(t0());
    let fx = refresh(&mut s, false);
    let (list, _) = read_of(&fx, ReadKind::List);
    let iceberg = vec![tref("sales", "orders"), tref("sales", "returns")];
    let delta = TableRef::new("delta", "web", "clicks");
    let fx = answer(&mut s, list, Answer::ListedPart(iceberg.clone()));
    let surveyed: Vec<TableRef> = reads_in(&fx).iter().flat_map(|(_, r)| r.tables()).collect();
    assert_eq!(surveyed.len(), 2, "{fx:?}");
    assert_eq!(s.tables.rows.len(), 2);
    assert!(s.refresh_in_flight());
    let all = vec![iceberg[0].clone(), iceberg[1].clone(), delta.clone()];
    let fx = answer(&mut s, list, Answer::Listed(Ok(all)));
    let surveyed: Vec<TableRef> = reads_in(&fx).iter().flat_map(|(_, r)| r.tables()).collect();
    assert_eq!(surveyed, [delta], "{fx:?}");
    assert_eq!(s.tables.rows.len(), 3);
}

/// A filter narrows the rows on screen, not what a refresh keeps up to date: a table it
/// hides is still read.
#[test]
fn a_refresh_reads_the_tables_a_filter_hides() {
    let mut s = State::new(t0());
    let fx = refresh(&mut s, false);
    let tables = vec![tref("sales", "orders"), tref("sales", "returns")];
    crate::app::prompt::set_filter(&mut s, "orders");
    let fx = listed(&mut s, &fx, tables.clone());
    assert_eq!(s.tables.grid.index.len(), 1, "the filter shows one row");
    let mut surveyed: Vec<TableRef> = reads_in(&fx).iter().flat_map(|(_, r)| r.tables()).collect();
    surveyed.sort();
    assert_eq!(surveyed, tables, "{fx:?}");
}
