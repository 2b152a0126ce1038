//! Jobs against type-ahead, profile switches and quitting, driven through `update`.

use crossterm::event::KeyCode;

use crate::app::action::{Action, DagWrite, Effect, ProfileView};
use crate::app::dags::DagConfirm;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::prompt::Prompt;
use crate::app::state::{Level, Popup, State};
use crate::app::testing::*;
use crate::app::update::update;
use crate::lakehouse::maintenance::{Procedure, TableLayout};
use crate::maintain::plan::PlanDraft;
use crate::maintain::run::StepEvent;

fn draft() -> PlanDraft {
    PlanDraft {
        table: tref("zoning", "documents"),
        procedure: Procedure::OptimizeManifests,
        layout: TableLayout::default(),
        partitions: Vec::new(),
        note: None,
        grouped: false,
        measured: None,
    }
}

fn plan_ready(s: &mut State) -> Vec<Effect> {
    let epoch = s.conn.epoch;
    update(
        s,
        Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(draft()))),
    )
}

/// A state with a screen: one frame drawn.
fn on_screen() -> State {
    let mut s = loaded();
    update(&mut s, Action::Drawn);
    s
}

/// Confirm a plan (drawn first) and return its job.
fn run_job(s: &mut State) -> u64 {
    plan_ready(s);
    update(s, Action::Drawn);
    match update(s, key('y')).as_slice() {
        [Effect::RunPlan { job, .. }] => *job,
        fx => panic!("not run: {fx:?}"),
    }
}

fn view(name: &str) -> ProfileView {
    ProfileView {
        profile: name.into(),
        trino_url: "http://other:8080/".into(),
        readonly: false,
        refresh: std::time::Duration::from_secs(60),
        schemas: vec![],
        health: Default::default(),
        airflow_url: None,
        maintenance: vec![],
        warnings: Vec::new(),
        cached: Vec::new(),
    }
}

#[test]
fn a_y_typed_before_the_confirm_was_drawn_runs_nothing() {
    let mut s = on_screen();
    plan_ready(&mut s);
    assert!(update(&mut s, key('y')).is_empty(), "not drawn yet");
    assert!(s.jobs.list.is_empty());
    assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
    update(&mut s, Action::Drawn);
    assert!(matches!(
        update(&mut s, key('y')).as_slice(),
        [Effect::RunPlan { .. }]
    ));
}

#[test]
fn a_plan_arriving_under_the_filter_prompt_leaves_the_prompt_and_waits_to_be_seen() {
    let mut s = on_screen();
    update(&mut s, key('/'));
    update(&mut s, key('d'));
    plan_ready(&mut s);
    assert_eq!(
        s.prompt,
        Some(Prompt::Filter("d".into())),
        "the prompt stays"
    );
    // The typed-ahead y goes to the filter, not to the popup.
    assert!(update(&mut s, key('y')).is_empty());
    assert_eq!(s.prompt, Some(Prompt::Filter("dy".into())));
    // Drawn under the prompt: not seen.
    update(&mut s, Action::Drawn);
    update(&mut s, code(KeyCode::Esc));
    assert!(update(&mut s, key('y')).is_empty(), "never shown alone yet");
    assert!(s.jobs.list.is_empty());
    update(&mut s, Action::Drawn);
    assert!(matches!(
        update(&mut s, key('y')).as_slice(),
        [Effect::RunPlan { .. }]
    ));
}

#[test]
fn a_dag_write_confirm_takes_its_y_only_once_drawn() {
    let mut s = on_screen();
    s.popup = Some(Popup::ConfirmDag(Box::new(DagConfirm {
        action: DagWrite::Trigger {
            dag_id: "compact_documents".into(),
        },
        lines: vec![],
        shown: false,
    })));
    assert!(update(&mut s, key('y')).is_empty());
    update(&mut s, Action::Drawn);
    assert_eq!(
        update(&mut s, key('y')),
        vec![Effect::WriteDag(DagWrite::Trigger {
            dag_id: "compact_documents".into()
        })]
    );
}

#[test]
fn a_profile_switch_closes_a_stale_confirm_and_keeps_the_running_job() {
    let mut s = on_screen();
    let job = run_job(&mut s);
    plan_ready(&mut s);
    update(&mut s, Action::Drawn);
    update(&mut s, Action::ProfileSwitched(Ok(view("prod"))));
    assert!(s.popup.is_none(), "the old profile's plan is gone");
    assert!(update(&mut s, key('y')).is_empty());
    let j = s.jobs.list.iter().find(|j| j.id == job).unwrap();
    assert!(j.running());
    assert_eq!(j.profile, "lab");
    // Its end lands in the job, said with its profile, without reloading prod's tables.
    let fx = update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Done {
            job,
            result: Ok(()),
        }),
    );
    assert!(fx.is_empty(), "{fx:?}");
    assert!(!s.jobs.list[0].running());
    let st = s.status.as_ref().unwrap();
    assert!(
        st.text
            .starts_with("[profile lab] ✓ optimize_manifests documents"),
        "{}",
        st.text
    );
}

#[test]
fn quitting_with_a_job_running_asks_and_y_cancels_it_first() {
    let mut s = on_screen();
    run_job(&mut s);
    assert!(update(&mut s, key('q')).is_empty());
    assert!(!s.quit);
    assert!(matches!(s.popup, Some(Popup::QuitJobs { .. })));
    // ctrl-c asks the same question; a y typed before the question was drawn waits.
    assert!(update(&mut s, ctrl('c')).is_empty());
    assert!(update(&mut s, key('y')).is_empty());
    update(&mut s, Action::Drawn);
    update(&mut s, key('n'));
    assert!(s.popup.is_none() && !s.quit);
    update(&mut s, ctrl('c'));
    update(&mut s, Action::Drawn);
    update(&mut s, code(KeyCode::Esc));
    assert!(s.popup.is_none() && !s.quit);
    update(&mut s, key('q'));
    update(&mut s, Action::Drawn);
    assert_eq!(
        update(&mut s, key('y')),
        vec![Effect::StopJobs { interrupted: false }, Effect::Quit]
    );
    assert!(s.quit);
    assert_eq!(s.status.as_ref().unwrap().level, Level::Warn);
}

#[test]
fn sigterm_with_a_job_running_interrupts_it_without_asking() {
    let mut s = on_screen();
    run_job(&mut s);
    assert_eq!(
        update(&mut s, Action::Terminate),
        vec![Effect::StopJobs { interrupted: true }, Effect::Quit]
    );
    assert!(s.quit);
}

#[test]
fn quitting_with_no_job_running_just_quits() {
    let mut s = on_screen();
    assert_eq!(update(&mut s, key('q')), vec![Effect::Quit]);
}

#[test]
fn a_failed_audit_write_is_an_error_on_screen_and_on_the_job() {
    let mut s = on_screen();
    let job = run_job(&mut s);
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Step {
            job,
            event: StepEvent::AuditFailed {
                step: 0,
                error: "audit log /x/audit.jsonl: Permission denied".into(),
            },
        }),
    );
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.level, Level::Error);
    assert!(st.text.contains("AUDIT LOG FAILED"), "{}", st.text);
    assert!(s.jobs.list[0].line(s.now).starts_with("AUDIT LOG FAILED"));
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Done {
            job,
            result: Ok(()),
        }),
    );
    assert_eq!(s.status.as_ref().unwrap().level, Level::Error);
}

#[test]
fn mutations_have_no_slot_so_nothing_replaces_or_aborts_them() {
    let w = Effect::WriteDag(DagWrite::Trigger { dag_id: "d".into() });
    assert_eq!(w.slot(), None);
    let plan = draft().build(false).unwrap();
    assert_eq!(Effect::RunPlan { job: 1, plan }.slot(), None);
}

#[test]
fn the_quit_question_lists_the_running_jobs() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let mut s = on_screen();
    s.no_color = true;
    run_job(&mut s);
    update(&mut s, key('q'));
    update(&mut s, Action::Resize(80, 24));
    let mut term = Terminal::new(TestBackend::new(80, 24)).unwrap();
    term.draw(|f| crate::ui::draw(f, &s)).unwrap();
    insta::assert_snapshot!("quit_jobs_80x24", term.backend());
}

#[test]
fn a_plan_queued_before_a_profile_switch_is_not_shown_on_the_new_profile() {
    let mut s = on_screen();
    let drafted_on = s.conn.epoch;
    update(&mut s, Action::ProfileSwitched(Ok(view("prod"))));
    let fx = update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::PlanReady(drafted_on, Ok(draft()))),
    );
    assert!(fx.is_empty());
    assert!(s.popup.is_none(), "{:?}", s.popup);
    assert!(
        s.status.as_ref().unwrap().text.contains("profile switch"),
        "{:?}",
        s.status
    );
}

#[test]
fn a_plan_arriving_over_a_dag_confirmation_leaves_it_and_its_y() {
    let mut s = on_screen();
    let dag = crate::app::dags::confirm_trigger(&s, "maint_zoning");
    s.popup = Some(Popup::ConfirmDag(Box::new(dag)));
    update(&mut s, Action::Drawn);
    plan_ready(&mut s);
    update(&mut s, Action::Drawn);
    assert!(
        matches!(s.popup, Some(Popup::ConfirmDag(_))),
        "the open confirmation stays: {:?}",
        s.popup
    );
    let fx = update(&mut s, key('y'));
    assert!(
        !fx.iter().any(|e| matches!(e, Effect::RunPlan { .. })),
        "the y goes to the DAG trigger: {fx:?}"
    );
    assert!(s.jobs.list.is_empty());
}

#[test]
fn a_confirm_on_a_terminal_too_small_to_draw_it_is_not_seen() {
    let mut s = on_screen();
    update(&mut s, Action::Resize(19, 4));
    plan_ready(&mut s);
    update(&mut s, Action::Drawn);
    assert!(update(&mut s, key('y')).is_empty(), "not drawn: no y taken");
    assert!(s.jobs.list.is_empty());
    update(&mut s, Action::Resize(80, 24));
    update(&mut s, Action::Drawn);
    assert!(matches!(
        update(&mut s, key('y')).as_slice(),
        [Effect::RunPlan { .. }]
    ));
}

#[test]
fn a_cancel_that_lands_between_two_statements_is_a_cancel_not_a_failure() {
    let mut s = on_screen();
    let job = run_job(&mut s);
    // `c` while the queue is between statements: the next one is never sent, no query
    // is cancelled, and run_plan ends with its "cancelled before step" error.
    let fx = update(&mut s, key('c'));
    assert_eq!(fx, vec![Effect::CancelJob(job)]);
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Done {
            job,
            result: Err("cancelled before step 1 of 1; 1 remaining statement(s) not run".into()),
        }),
    );
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.level, Level::Warn, "{}", st.text);
    assert!(
        st.text
            .starts_with("⊘ optimize_manifests documents cancelled after 0 of 1"),
        "{}",
        st.text
    );
    // A failure the operator did not ask for stays an error.
    let mut s = on_screen();
    let job = run_job(&mut s);
    update(
        &mut s,
        Action::Maintenance(MaintenanceMsg::Done {
            job,
            result: Err(
                "TABLE_NOT_FOUND: line 1:7: Table 'iceberg.zoning.documents' does not exist".into(),
            ),
        }),
    );
    let st = s.status.as_ref().unwrap();
    assert_eq!(st.level, Level::Error);
    assert!(
        st.text
            .starts_with("✗ optimize_manifests documents failed after 0 of 1"),
        "{}",
        st.text
    );
}
