use super::*;
use crate::app::action::Action;
use crate::app::dags::DagMsg;
use crate::app::testing::dags::with_dags;
use crate::app::testing::{code, key, tref};
use crate::app::update::update;
use crate::health::Rule;
use crate::health::incidents::Kind;
use crossterm::event::KeyCode;

fn connections() -> Vec<Finding> {
    vec![Finding {
        rule: Rule::AirflowConnectionFailing,
        severity: Severity::Critical,
        message: "Airflow connection trino_documents points at trino-old.internal:8080 and fails its test: name resolution failed".into(),
        penalty: 0,
    }]
}

/// The DAGs loaded, the connection checked.
pub(crate) fn triaged() -> State {
    let mut s = with_dags();
    update(
        &mut s,
        Action::Dags(DagMsg::ConnectionFindings(connections())),
    );
    s
}

#[test]
fn incidents_follow_the_tables_and_dags() {
    let mut s = triaged();
    assert!(s.triage.incidents.is_empty(), "derived only when on screen");
    update(&mut s, key('0'));
    let kinds: Vec<Kind> = s.triage.incidents.iter().map(|i| i.kind).collect();
    assert_eq!(kinds[0], Kind::Endpoint, "{kinds:?}");
    let first = &s.triage.incidents[0];
    assert_eq!(first.dags, vec!["compact_documents"]);
    assert_eq!(first.worst_table(), Some(&tref("zoning", "documents")));
    assert!(
        first
            .cause
            .contains("connection trino_documents → trino-old.internal:8080"),
        "{}",
        first.cause
    );
    // The import error and the paused DAG are their own incidents.
    assert!(kinds.contains(&Kind::ImportError), "{kinds:?}");
    assert!(kinds.contains(&Kind::DagPaused), "{kinds:?}");
}

#[test]
fn zero_opens_the_tab_and_tab_cycles_through_it() {
    let mut s = triaged();
    assert_eq!(s.tab, Tab::Tables, "floe opens on Tables");
    update(&mut s, key('0'));
    assert_eq!(s.tab, Tab::Triage);
    update(&mut s, code(KeyCode::Tab));
    assert_eq!(s.tab, Tab::Tables);
    update(&mut s, code(KeyCode::BackTab));
    assert_eq!(s.tab, Tab::Triage);
    update(&mut s, code(KeyCode::BackTab));
    assert_eq!(s.tab, Tab::Dags);
}

#[test]
fn enter_opens_the_failing_log_and_esc_comes_back() {
    let mut s = triaged();
    update(&mut s, key('0'));
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Dags);
    assert_eq!(s.dags.level(), DagLevel::Log);
    assert_eq!(s.dags.dag_id.as_deref(), Some("compact_documents"));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::LoadLog { dag_id, task_id, .. }
            if dag_id == "compact_documents" && task_id == "compact")),
        "{fx:?}"
    );
    assert!(fx.iter().any(|e| matches!(e, Effect::LoadTasks { .. })));
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Triage);
    // Elsewhere Esc keeps its meaning.
    update(&mut s, key('4'));
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Dags);
}

#[test]
fn enter_on_a_table_incident_opens_its_partitions() {
    let mut s = triaged();
    update(&mut s, key('0'));
    let pos = s
        .triage
        .grid
        .index
        .iter()
        .position(|&i| s.triage.incidents[i].kind == Kind::DagPaused)
        .unwrap();
    s.triage.grid.move_by(pos as isize, 10);
    // events is not read in the fixture: the paused DAG's incident is about the DAG.
    update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Dags);
    assert_eq!(s.dags.selected().unwrap().dag.dag_id, "expire_snapshots");
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Triage);

    // A table without a DAG: its partitions.
    let mut s = crate::app::testing::loaded();
    update(&mut s, key('0'));
    let inc = s.triage.selected().unwrap().clone();
    assert_eq!(inc.kind, Kind::Unmaintained);
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Partitions);
    assert_eq!(s.partitions.detail.table, Some(tref("zoning", "documents")));
    assert!(!fx.is_empty());
    assert_eq!(
        s.tables.selected().unwrap().table,
        tref("zoning", "documents")
    );
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Triage);
}

#[test]
fn actions_act_on_the_selected_incident() {
    let mut s = triaged();
    // The Tables selection points elsewhere: the incident decides.
    s.tables.grid.selected = s.tables.grid.len() - 1;
    update(&mut s, key('0'));
    let fx = update(&mut s, key('o'));
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::PlanMaintenance { table, .. }
            if *table == tref("zoning", "documents"))),
        "{fx:?}"
    );
    update(&mut s, key('0'));
    s.popup = None;
    update(&mut s, key('t'));
    match &s.popup {
        Some(Popup::ConfirmDag(c)) => assert!(c.lines[0].contains("compact_documents")),
        p => panic!("{p:?}"),
    }
}

#[test]
fn the_selection_stays_on_its_incident_across_refreshes() {
    let mut s = triaged();
    update(&mut s, key('0'));
    update(&mut s, key('j'));
    let before = s.triage.selected().unwrap().cause.clone();
    update(
        &mut s,
        Action::Dags(DagMsg::ConnectionFindings(connections())),
    );
    assert!(s.triage.dirty);
    let now = s.now;
    update(&mut s, Action::Tick(now));
    assert!(!s.triage.dirty);
    assert_eq!(s.triage.selected().unwrap().cause, before);
}

#[test]
fn before_the_failing_task_is_read_enter_opens_the_runs() {
    let mut s = triaged();
    s.dags.failures.clear();
    update(&mut s, key('0'));
    let fx = update(&mut s, code(KeyCode::Enter));
    assert_eq!(s.tab, Tab::Dags);
    assert_eq!(s.dags.level(), DagLevel::Runs);
    assert_eq!(
        fx,
        vec![Effect::LoadRuns {
            dag_id: "compact_documents".into()
        }]
    );
    update(&mut s, code(KeyCode::Esc));
    assert_eq!(s.tab, Tab::Triage);
}

mod keys {
    use super::*;
    use crate::app::action::Action;
    use crate::app::state::{State, Tab};
    use crate::app::testing::*;
    use crate::app::update::update;

    /// `start_tab = "auto"`: open on Triage, and move to Tables once the first refresh is in
    /// only when nothing needs attention; a tab the operator chose is never left on its own.
    #[test]
    fn auto_start_stays_on_triage_with_incidents_and_leaves_it_without() {
        let start = |stats: crate::lakehouse::model::TableStats, touch: bool| {
            let mut s = State::new(t0());
            s.tab = Tab::Triage;
            s.auto_start = true;
            let fx = update(&mut s, Action::Start);
            if touch {
                update(&mut s, key('4'));
                update(&mut s, key('0'));
            }
            let fx = crate::app::testing::listed(&mut s, &fx, vec![tref("zoning", "documents")]);
            assert_eq!(s.tab, Tab::Triage, "still reading");
            let (survey, _) = crate::app::testing::read_of(&fx, crate::refresh::ReadKind::Survey);
            crate::app::testing::answer(
                &mut s,
                survey,
                crate::refresh::Answer::Files(vec![(tref("zoning", "documents"), Ok(stats))]),
            );
            s
        };
        let s = start(incident_stats(), false);
        assert_eq!(s.tab, Tab::Triage, "the incident is where to start");
        assert!(!s.triage.incidents.is_empty());
        let s = start(healthy_stats(), false);
        assert_eq!(s.tab, Tab::Tables, "nothing to triage: the tables");
        let s = start(healthy_stats(), true);
        assert_eq!(s.tab, Tab::Triage, "the operator's choice stays");
    }
}

/// The seed's morning: the connection fixed, `t y` triggered the compaction DAG. Its run
/// is running, and its facts ask who writes its table; once read, Triage says
/// "compaction running (compact_documents, 40 %)" instead of proposing `o`.
#[test]
fn a_compaction_running_elsewhere_is_said_instead_of_proposing_o() {
    use crate::app::maintenance::MaintenanceMsg;
    use crate::app::testing::dags::failing_facts;
    use crate::health::incidents::Next;
    use crate::mutation::contention::{RunningStatement, RunningTask, Writers};
    let mut s = triaged();
    let generation = s.dags.generation;
    let mut running = failing_facts();
    running.active_run = Some("manual__2026-12-01T11:56:00+00:00".into());
    let fx = update(
        &mut s,
        Action::Dags(DagMsg::Facts {
            generation,
            dag_id: "compact_documents".into(),
            result: Ok(running),
        }),
    );
    let docs = tref("zoning", "documents");
    assert!(
        fx.iter()
            .any(|e| matches!(e, Effect::CheckWriters { table } if *table == docs)),
        "{fx:?}"
    );
    let w = Writers {
        table: Some(docs.clone()),
        statements: vec![RunningStatement {
            query_id: "20261201_115700_00042_abcde".into(),
            state: "RUNNING".into(),
            user: "etl".into(),
            source: Some("airflow".into()),
            query: "ALTER TABLE iceberg.zoning.documents EXECUTE optimize".into(),
            elapsed_ms: Some(60_000),
            progress: Some(40),
        }],
        tasks: vec![RunningTask {
            dag_id: "compact_documents".into(),
            run_id: "manual__2026-12-01T11:56:00+00:00".into(),
            task_id: Some("compact".into()),
            since: Some(s.now),
        }],
        unread: vec![],
    };
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Writers {
            table: docs.clone(),
            result: Ok(w),
        }),
    );
    update(&mut s, key('0'));
    let first = &s.triage.incidents[0];
    assert_eq!(first.worst_table(), Some(&docs));
    assert!(
        !first
            .next
            .iter()
            .any(|n| matches!(n, Next::Optimize { .. })),
        "{:?}",
        first.next
    );
    let said: Vec<String> = first.next.iter().map(Next::text).collect();
    assert!(
        said.contains(&"compaction running (compact_documents, 40 %)".to_string()),
        "{said:?}"
    );
    // Read again once it ended: `o` is proposed again.
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Writers {
            table: docs.clone(),
            result: Ok(Writers::default()),
        }),
    );
    update(&mut s, key('0'));
    assert!(
        s.triage.incidents[0]
            .next
            .iter()
            .any(|n| matches!(n, Next::Optimize { table } if *table == docs)),
        "{:?}",
        s.triage.incidents[0].next
    );
}
