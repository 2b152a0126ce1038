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
    // Drawn reaches only the cluster on screen.
    let before: Vec<u64> = f.clusters.iter().map(|s| s.frames).collect();
    update(&mut f, FleetAction::Input(Action::Drawn));
    let after: Vec<u64> = f.clusters.iter().map(|s| s.frames).collect();
    assert_eq!(after[1], before[1] + 1);
    assert_eq!((after[0], after[2]), (before[0], before[2]));
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
