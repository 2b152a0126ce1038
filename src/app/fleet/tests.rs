use super::*;
use crate::app::action::Action;
use crate::app::testing::{code, key, loaded, t0, unreachable as unreachable_err};
use crossterm::event::KeyCode;

/// Two clusters with the seed's incident each, and one whose Trino is down.
fn fleet() -> Fleet {
    let mut a = loaded();
    a.conn.profile = "prod-eu".into();
    let mut b = loaded();
    b.conn.profile = "prod-us".into();
    b.conn.trino_url = "http://trino.us:8080/".into();
    let mut down = crate::app::state::State::new(t0());
    down.conn.profile = "staging".into();
    down.conn.trino_url = "http://127.0.0.1:9/".into();
    let fx = crate::app::update::update(&mut down, Action::Start);
    let (id, _) = crate::app::testing::read_of(&fx, crate::refresh::ReadKind::List);
    crate::app::testing::answer(
        &mut down,
        id,
        crate::refresh::Answer::Listed(Err(unreachable_err("http://127.0.0.1:9/"))),
    );
    for s in [&mut a, &mut b] {
        s.tab = Tab::Triage;
        crate::app::triage::rebuild(s);
    }
    down.tab = Tab::Triage;
    Fleet::new(vec![a, b, down])
}

#[test]
fn every_clusters_incidents_are_listed_together_worst_first_each_tagged_by_profile() {
    let f = fleet();
    let texts: Vec<String> = f.rows.iter().map(|r| f.row_text(r)).collect();
    assert!(
        texts.iter().any(|t| t.starts_with("[prod-eu] ")),
        "{texts:#?}"
    );
    assert!(
        texts.iter().any(|t| t.starts_with("[prod-us] ")),
        "{texts:#?}"
    );
    let down: Vec<&String> = texts
        .iter()
        .filter(|t| t.starts_with("[staging] "))
        .collect();
    assert_eq!(
        down.len(),
        1,
        "an unreachable cluster is one incident: {texts:#?}"
    );
    assert!(
        down[0].starts_with("[staging] Trino http://127.0.0.1:9/ unreachable: "),
        "{}",
        down[0]
    );
    let ranks: Vec<u8> = f.rows.iter().map(|r| f.severity(r).rank()).collect();
    assert!(
        ranks.windows(2).all(|w| w[0] >= w[1]),
        "worst first: {ranks:?}"
    );
    assert_eq!(f.severity(&f.rows[0]), Severity::Critical);
    let h = f.header();
    assert!(h.starts_with("prod-eu ✓ 1 crit"), "{h}");
    assert!(h.contains(" · prod-us ✓ 1 crit"), "{h}");
    assert!(h.ends_with(" · staging ✗ unreachable"), "{h}");
}

/// Move the merged list down to the first row of `cluster`.
fn select_first_of(f: &mut Fleet, cluster: usize) -> usize {
    let target = f
        .rows
        .iter()
        .position(|r| r.cluster() == cluster)
        .expect("a row of the cluster");
    for _ in 0..target {
        update(f, FleetAction::Input(key('j')));
    }
    target
}

#[test]
fn moving_the_merged_list_brings_the_rows_cluster_to_the_front_on_its_incident() {
    let mut f = fleet();
    assert_eq!(f.active, 0);
    let target = select_first_of(&mut f, 1);
    assert_eq!(f.active, 1, "the row's cluster is in front");
    let Row::Incident { incident, .. } = f.rows[target] else {
        panic!("an incident row")
    };
    assert_eq!(f.clusters[1].triage.grid.selected_row(), Some(incident));
    // Other keys go to the cluster in front only: `i` opens its health popup there.
    let fx = update(&mut f, FleetAction::Input(key('i')));
    assert!(f.clusters[1].popup.is_some());
    assert!(f.clusters[0].popup.is_none() && f.clusters[2].popup.is_none());
    assert!(fx.iter().all(|(c, _)| *c == 1), "{fx:?}");
    // While the popup is open, j is the popup's: the cluster in front stays.
    update(&mut f, FleetAction::Input(key('j')));
    assert_eq!(f.active, 1);
    update(&mut f, FleetAction::Input(code(KeyCode::Esc)));
    assert!(f.clusters[1].popup.is_none());
    // The unreachable cluster's row opens nothing.
    select_first_of(&mut f, 2);
    assert_eq!(f.active, 2);
    assert!(update(&mut f, FleetAction::Input(code(KeyCode::Enter))).is_empty());
}

#[test]
fn an_action_asked_on_a_row_runs_on_that_rows_cluster_and_drawn_reaches_only_the_front() {
    let mut f = fleet();
    select_first_of(&mut f, 1);
    // `o` on the row drafts the optimize on prod-us: every effect is prod-us's.
    let fx = update(&mut f, FleetAction::Input(key('o')));
    assert!(
        fx.iter()
            .any(|(_, e)| matches!(e, Effect::PlanMaintenance { .. })),
        "the optimize asks for its plan: {fx:?}"
    );
    assert!(fx.iter().all(|(c, _)| *c == 1), "{fx:?}");
    // Drawn reaches only the cluster on screen: a question open on another cluster was
    // never drawn, and takes no answer.
    for c in [0, 1] {
        f.clusters[c].popup = Some(crate::app::state::Popup::QuitJobs { shown: false });
    }
    update(
        &mut f,
        FleetAction::Input(Action::Drawn(std::time::Instant::now())),
    );
    let shown = |f: &Fleet, c: usize| {
        matches!(
            f.clusters[c].popup,
            Some(crate::app::state::Popup::QuitJobs { shown: true })
        )
    };
    assert!(shown(&f, 1) && !shown(&f, 0));
    for c in [0, 1] {
        f.clusters[c].popup = None;
    }
    // A result for one cluster leaves the front where it is.
    update(&mut f, FleetAction::Cluster(2, Action::Tick(t0())));
    assert_eq!(f.active, 1);
}

#[test]
fn read_only_is_the_profiles_own() {
    let mut f = fleet();
    // prod-us is read-only; prod-eu is not.
    let us = &mut f.clusters[1];
    us.readonly = true;
    us.keymap = us.keymap.clone().with_readonly(true);
    select_first_of(&mut f, 1);
    let fx = update(&mut f, FleetAction::Input(key('o')));
    assert!(
        !fx.iter()
            .any(|(_, e)| matches!(e, Effect::PlanMaintenance { .. })),
        "a read-only cluster drafts no optimize: {fx:?}"
    );
    update(&mut f, FleetAction::Input(key('g')));
    assert_eq!(f.active, 0);
    assert_eq!(f.clusters[0].conn.profile, "prod-eu");
    let fx = update(&mut f, FleetAction::Input(key('o')));
    assert!(
        fx.iter()
            .any(|(c, e)| *c == 0 && matches!(e, Effect::PlanMaintenance { .. })),
        "the writable cluster drafts it: {fx:?}"
    );
}

fn type_command(f: &mut Fleet, line: &str) -> Vec<(usize, Effect)> {
    update(f, FleetAction::Input(key(':')));
    for ch in line.chars() {
        update(f, FleetAction::Input(key(ch)));
    }
    update(f, FleetAction::Input(code(KeyCode::Enter)))
}

#[test]
fn profile_naming_a_cluster_already_read_brings_it_to_the_front_and_switches_nothing() {
    let mut f = fleet();
    for s in &mut f.clusters {
        s.profiles = ["prod-eu", "prod-us", "staging", "dr"]
            .map(String::from)
            .into();
    }
    assert_eq!(f.active, 0);
    let fx = type_command(&mut f, "profile prod-us");
    assert!(
        !fx.iter()
            .any(|(_, e)| matches!(e, Effect::SwitchProfile(_))),
        "no second reading of prod-us: {fx:?}"
    );
    assert_eq!(f.active, 1, "prod-us is in front");
    assert_eq!(f.clusters[0].conn.profile, "prod-eu");
    assert_eq!(
        f.grid.selected_row().map(|i| f.rows[i].cluster()),
        Some(1),
        "the list is on prod-us's row"
    );
    let status = f.front().status.as_ref().map(|m| m.text.clone());
    assert!(
        status
            .as_deref()
            .is_some_and(|t| t.contains("prod-us in front")),
        "{status:?}"
    );
    // A profile the fleet does not read switches the cluster in front, as on one cluster.
    let fx = type_command(&mut f, "profile dr");
    assert_eq!(
        fx,
        vec![(1, Effect::SwitchProfile("dr".into()))],
        "the front cluster switches"
    );
}

/// `q` on the cluster in front asks about every cluster's running jobs, not its own alone;
/// its `y` cancels them all (before, another cluster's optimize was interrupted without
/// a question).
#[test]
fn quitting_asks_about_every_clusters_jobs_and_cancels_them_all() {
    use crate::app::maintenance::MaintenanceMsg;
    let mut f = fleet();
    // An optimize runs on prod-us while prod-eu is in front.
    {
        let us = &mut f.clusters[1];
        us.tab = Tab::Partitions;
        let mut s = crate::app::testing::plans::on_partitions();
        s.conn.profile = "prod-us".into();
        update_state_to_running_job(&mut s);
        f.clusters[1] = s;
    }
    assert_eq!(f.active, 0);
    assert!(f.clusters[0].jobs.list.iter().all(|j| !j.running()));
    let fx = update(&mut f, FleetAction::Input(key('q')));
    assert!(
        !fx.iter()
            .any(|(_, e)| matches!(e, Effect::Quit | Effect::StopJobs { .. })),
        "asked, not left: {fx:?}"
    );
    assert!(!f.quit());
    assert!(matches!(
        f.clusters[0].popup,
        Some(crate::app::state::Popup::QuitJobs { .. })
    ));
    let lines = crate::app::maintenance::quit::question(&f.clusters[0]);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("[prod-us]") && l.contains("optimize")),
        "{lines:#?}"
    );
    update(
        &mut f,
        FleetAction::Input(Action::Drawn(std::time::Instant::now())),
    );
    let fx = update(&mut f, FleetAction::Input(key('y')));
    assert!(f.quit());
    assert!(
        fx.iter()
            .any(|(c, e)| *c == 1 && matches!(e, Effect::StopJobs { interrupted: false })),
        "prod-us's jobs are cancelled as the operator answered: {fx:?}"
    );
    let _ = MaintenanceMsg::Done {
        job: 0,
        result: Ok(()),
    };
}

/// A confirmation opened on a cluster that was never drawn in front takes no `y` until a
/// frame shows it, and then only a `y` read the dwell after that frame.
#[test]
fn a_confirmation_takes_only_a_key_read_after_it_was_drawn() {
    let mut f = fleet();
    let t = std::time::Instant::now();
    // prod-us comes to the front (never drawn there) and `t` asks to trigger its DAG.
    select_first_of(&mut f, 1);
    let s = &mut f.clusters[1];
    s.popup = Some(crate::app::state::Popup::QuitJobs { shown: false });
    s.jobs.list.clear();
    s.confirm_dwell = std::time::Duration::from_millis(500);
    let y = |at| FleetAction::Input(Action::Key(key_event('y'), at));
    update(&mut f, y(t));
    assert!(!f.quit(), "typed before any frame showed the question");
    update(&mut f, FleetAction::Input(Action::Drawn(t)));
    update(&mut f, y(t + std::time::Duration::from_millis(100)));
    assert!(!f.quit(), "typed within the dwell after the frame");
    update(&mut f, y(t + std::time::Duration::from_millis(600)));
    assert!(f.quit(), "read the dwell after the frame that showed it");
}

fn key_event(c: char) -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::new(KeyCode::Char(c), crossterm::event::KeyModifiers::NONE)
}

/// A cluster left on another tab still has its incidents derived again as it reads:
/// the merged list and the header show it turning CRITICAL (before, only a cluster whose
/// own tab was Triage rebuilt its incidents).
#[test]
fn a_cluster_on_another_tab_shows_its_new_incidents_in_the_merged_list() {
    let mut f = fleet();
    f.clusters[1].tab = Tab::Tables;
    let events = crate::app::testing::tref("audit", "events");
    let mut bloated = crate::app::testing::healthy_stats();
    bloated.snapshots = 900;
    bloated.oldest_snapshot = Some(t0() - chrono::Duration::days(90));
    let fx = crate::app::testing::settle(&mut f.clusters[1], &events, Ok(bloated));
    let _ = fx;
    update(&mut f, FleetAction::Input(Action::Tick(t0())));
    let h = f.header();
    assert!(h.contains("prod-us ✓ 2 crit"), "{h}");
    assert!(
        f.rows
            .iter()
            .any(|r| f.row_text(r).starts_with("[prod-us]") && f.row_text(r).contains("events")),
        "{:#?}",
        f.rows.iter().map(|r| f.row_text(r)).collect::<Vec<_>>()
    );
}

/// The merged list's highlighted row stays on its incident when its cluster's incidents
/// reorder: the row, the evidence and every action are about the same incident (before,
/// the row kept its index and another incident took its place).
#[test]
fn the_merged_selection_keeps_its_incident_when_the_incidents_reorder() {
    use crate::app::testing::{healthy_stats, settle, tref};
    let mut f = fleet();
    // prod-us: documents' incident first, then events' snapshots past retention.
    let mut bloated = healthy_stats();
    bloated.snapshots = 900;
    bloated.oldest_snapshot = Some(t0() - chrono::Duration::days(90));
    settle(&mut f.clusters[1], &tref("audit", "events"), Ok(bloated));
    update(&mut f, FleetAction::Input(Action::Tick(t0())));
    let bloat = f
        .rows
        .iter()
        .position(|r| f.row_text(r).starts_with("[prod-us]") && f.row_text(r).contains("events"))
        .expect("events' incident");
    let Row::Incident { incident, .. } = f.rows[bloat] else {
        panic!("an incident row")
    };
    assert_eq!(incident, 1, "second of prod-us's incidents");
    for _ in 0..bloat {
        update(&mut f, FleetAction::Input(key('j')));
    }
    assert_eq!(f.grid.selected_row(), Some(bloat));
    let before = crate::app::triage::key(&f.clusters[1].triage.incidents[incident]);
    // documents is compacted meanwhile: its incident goes, events' moves up.
    settle(
        &mut f.clusters[1],
        &tref("zoning", "documents"),
        Ok(healthy_stats()),
    );
    update(&mut f, FleetAction::Input(Action::Tick(t0())));
    let now = f.clusters[1]
        .triage
        .incidents
        .iter()
        .position(|i| crate::app::triage::key(i) == before)
        .expect("still an incident");
    assert_ne!(now, incident, "the incidents reordered");
    let sel = f.grid.selected_row().expect("a selection");
    assert_eq!(
        f.rows[sel],
        Row::Incident {
            cluster: 1,
            incident: now
        }
    );
    assert!(f.row_text(&f.rows[sel]).contains("events"));
    assert_eq!(f.clusters[1].triage.grid.selected_row(), Some(now));
}

/// `s` (on its Partitions tab) with an optimize of two partitions running.
fn update_state_to_running_job(s: &mut crate::app::state::State) {
    use crate::app::maintenance::MaintenanceMsg;
    use crate::app::update::update as step;
    step(s, key(' '));
    step(s, key(' '));
    let d = crate::app::testing::plans::draft(s);
    let epoch = s.conn.epoch;
    step(
        s,
        Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
    );
    crate::app::testing::drawn(s);
    let fx = step(s, key('y'));
    assert!(
        fx.iter().any(|e| matches!(e, Effect::RunPlan { .. })),
        "{fx:?}"
    );
    assert!(s.jobs.list.iter().any(|j| j.running()));
}
