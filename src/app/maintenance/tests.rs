//! Jobs against type-ahead, profile switches and quitting, driven through `update`.

use crossterm::event::KeyCode;

use crate::app::action::{Action, DagWrite, Effect, ProfileView};
use crate::app::dags::DagConfirm;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::prompt::Prompt;
use crate::app::state::{Level, Popup, State};
use crate::app::testing::*;
use crate::app::update::update;
use crate::lakehouse::plan::{Procedure, TableLayout};
use crate::mutation::draft::PlanDraft;
use crate::mutation::run::RunError;
use crate::mutation::run::StepEvent;

fn draft() -> PlanDraft {
    PlanDraft {
        table: tref("zoning", "documents"),
        procedure: Procedure::OptimizeManifests,
        layout: TableLayout::default(),
        partitions: Vec::new(),
        note: None,
        grouped: false,
        measured: None,
        writer_partitions: crate::lakehouse::plan::DEFAULT_WRITER_PARTITIONS,
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    s
}

/// Confirm a plan (drawn first) and return its job.
fn run_job(s: &mut State) -> u64 {
    plan_ready(s);
    update(s, Action::Drawn(std::time::Instant::now()));
    match update(s, key('y')).as_slice() {
        [Effect::RunPlan { job, .. }] => *job,
        fx => panic!("not run: {fx:?}"),
    }
}

fn view(name: &str) -> ProfileView {
    ProfileView {
        airflow_url: None,
        ..crate::app::testing::profile_view(name)
    }
}

#[test]
fn a_y_within_the_confirm_dwell_runs_nothing_and_says_why() {
    let mut s = on_screen();
    s.confirm_dwell = std::time::Duration::from_millis(300);
    plan_ready(&mut s);
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    assert!(s.popup_shown_at.is_some());
    assert!(update(&mut s, key('y')).is_empty(), "typed ahead");
    assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
    assert!(
        s.status.as_ref().unwrap().text.contains("key ignored"),
        "{:?}",
        s.status
    );
    // Scrolling the plan is no answer: it is taken at once, the dwell still counts.
    update(&mut s, key('j'));
    assert!(matches!(s.popup, Some(Popup::Confirm(_))));
    // Another frame does not restart the dwell; once it has passed, y runs the plan.
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    s.popup_shown_at = Some(std::time::Instant::now() - std::time::Duration::from_millis(400));
    assert!(matches!(
        update(&mut s, key('y')).as_slice(),
        [Effect::RunPlan { .. }]
    ));
}

#[test]
fn a_y_typed_before_the_confirm_was_drawn_runs_nothing() {
    let mut s = on_screen();
    plan_ready(&mut s);
    assert!(update(&mut s, key('y')).is_empty(), "not drawn yet");
    assert!(s.jobs.list.is_empty());
    assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    update(&mut s, code(KeyCode::Esc));
    assert!(update(&mut s, key('y')).is_empty(), "never shown alone yet");
    assert!(s.jobs.list.is_empty());
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ProfileSwitched(Ok(
            view("prod"),
        ))),
    );
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    update(&mut s, key('n'));
    assert!(s.popup.is_none() && !s.quit);
    update(&mut s, ctrl('c'));
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    update(&mut s, code(KeyCode::Esc));
    assert!(s.popup.is_none() && !s.quit);
    update(&mut s, key('q'));
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
                error: crate::mutation::audit::AuditError::Io {
                    path: "/x/audit.jsonl".into(),
                    reason: "Permission denied".into(),
                },
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
    update(
        &mut s,
        Action::Connection(crate::app::connection::ConnectionMsg::ProfileSwitched(Ok(
            view("prod"),
        ))),
    );
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    plan_ready(&mut s);
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
    update(&mut s, Action::Drawn(std::time::Instant::now()));
    assert!(update(&mut s, key('y')).is_empty(), "not drawn: no y taken");
    assert!(s.jobs.list.is_empty());
    update(&mut s, Action::Resize(80, 24));
    update(&mut s, Action::Drawn(std::time::Instant::now()));
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
            result: Err(RunError::CancelledBefore { step: 1, of: 1 }),
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
            result: Err(RunError::Step {
                step: 0,
                error: Box::new(
                    query_failed(
                        "TABLE_NOT_FOUND",
                        "line 1:7: Table 'iceberg.zoning.documents' does not exist",
                        "q1",
                    )
                    .into(),
                ),
                remaining: 0,
            }),
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

mod keys {
    use super::*;
    use crate::app::action::{Action, Effect};
    use crate::app::maintenance::MaintenanceMsg;
    use crate::app::prompt::{Prompt, RetentionFor};
    use crate::app::state::{Level, Popup, State};
    use crate::app::update::update;
    use crossterm::event::KeyCode;

    #[test]
    fn readonly_refuses_maintenance() {
        let mut s = loaded();
        s.readonly = true;
        s.keymap = s.keymap.clone().with_readonly(true);
        update(&mut s, key('o'));
        assert!(
            s.status.is_none() || !s.status.as_ref().unwrap().text.contains("not available"),
            "o is not bound at all"
        );
    }

    mod plans {
        use super::*;
        use crate::app::action::MaintenanceKind;
        pub use crate::app::testing::plans::{draft, on_partitions};
        use crate::mutation::run::{StepEvent, StepOutcome};

        fn outcome(ok: bool, after: Option<u64>) -> StepOutcome {
            StepOutcome {
                ok,
                cancelled: false,
                query_id: Some("q1".into()),
                error: (!ok).then(|| query_failed("ICEBERG_COMMIT_ERROR", "conflict", "q1").into()),
                rows: Some(10),
                metrics: Default::default(),
                duration_ms: 1200,
                files_after: after,
                small_after: after,
            }
        }

        #[test]
        fn optimize_marked_partitions_needs_an_explicit_y() {
            let mut s = on_partitions();
            update(&mut s, key(' '));
            update(&mut s, key(' '));
            let fx = update(&mut s, key('o'));
            let [
                Effect::PlanMaintenance {
                    table,
                    kind: MaintenanceKind::Optimize,
                    epoch: _,
                    partitions: Some(p),
                },
            ] = &fx[..]
            else {
                panic!("{fx:?}")
            };
            assert_eq!(table, &tref("zoning", "documents"));
            assert_eq!(p.len(), 2, "the marked partitions");
            let d = draft(&s);
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            drawn(&mut s);
            let Some(Popup::Confirm(c)) = &s.popup else {
                panic!("no confirm popup")
            };
            assert_eq!(c.plan.steps.len(), 2);
            // Enter is not yes.
            let fx = update(&mut s, code(KeyCode::Enter));
            assert!(fx.is_empty() && s.popup.is_none());
            assert!(s.status.as_ref().unwrap().text.contains("nothing was run"));
            let d = draft(&s);
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            drawn(&mut s);
            update(&mut s, key('g'));
            let Some(Popup::Confirm(c)) = &s.popup else {
                panic!()
            };
            assert_eq!(c.plan.steps.len(), 1, "grouped");
            assert!(c.plan.steps[0].sql.contains("\"$partition\" IN"));
            drawn(&mut s);
            update(&mut s, key('g'));
            drawn(&mut s);
            let fx = update(&mut s, key('y'));
            let [Effect::RunPlan { job, plan }] = &fx[..] else {
                panic!("{fx:?}")
            };
            assert_eq!(plan.steps.len(), 2);
            assert!(s.jobs.running_on(&tref("zoning", "documents")).is_some());
            // A second optimize on the same table is refused while the first runs.
            let fx = update(&mut s, key('o'));
            assert!(fx.is_empty());
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("one mutation per table")
            );
            // Progress, then results; the partition's mark goes once it is compacted.
            let job = *job;
            let first = (plan.steps[0].spec_id, plan.steps[0].targets[0].clone());
            assert!(s.partitions.marks.contains(&first));
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::Step {
                    job,
                    event: StepEvent::Started { step: 0 },
                }),
            );
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::Step {
                    job,
                    event: StepEvent::Finished {
                        step: 0,
                        outcome: outcome(true, Some(1)),
                    },
                }),
            );
            assert!(!s.partitions.marks.contains(&first));
            assert!(
                s.status.as_ref().unwrap().text.contains("files"),
                "{:?}",
                s.status
            );
            let fx = update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::Done {
                    job,
                    result: Ok(()),
                }),
            );
            assert!(
                fx.iter().any(|e| matches!(
                    e,
                    Effect::Read {
                        read: crate::refresh::Read::Table(_),
                        ..
                    }
                )),
                "the table row is re-read"
            );
            assert!(
                fx.iter()
                    .any(|e| matches!(e, Effect::LoadPartitions { .. })),
                "its partitions too"
            );
            assert!(s.jobs.running_on(&tref("zoning", "documents")).is_none());
        }

        #[test]
        fn failures_and_cancel_stop_the_queue() {
            let mut s = on_partitions();
            update(&mut s, key(' '));
            update(&mut s, key(' '));
            let d = draft(&s);
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            drawn(&mut s);
            let fx = update(&mut s, key('y'));
            let Effect::RunPlan { job, .. } = fx[0].clone() else {
                panic!()
            };
            assert_eq!(update(&mut s, key('c')), vec![Effect::CancelJob(job)]);
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::Step {
                    job,
                    event: StepEvent::Finished {
                        step: 0,
                        outcome: outcome(false, None),
                    },
                }),
            );
            assert_eq!(s.status.as_ref().unwrap().level, Level::Error);
            assert!(
                s.status
                    .as_ref()
                    .unwrap()
                    .text
                    .contains("ICEBERG_COMMIT_ERROR")
            );
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::Done {
                    job,
                    result: Err(RunError::Step {
                        step: 0,
                        error: Box::new(
                            query_failed("ICEBERG_COMMIT_ERROR", "conflict", "q1").into(),
                        ),
                        remaining: 1,
                    }),
                }),
            );
            let j = s.jobs.list.last().unwrap();
            assert!(matches!(
                j.steps[1],
                crate::app::maintenance::StepStatus::Skipped
            ));
            assert!(
                j.line(s.now)
                    .starts_with("✗ optimize documents failed after 0 of 2")
            );
        }

        #[test]
        fn expire_asks_for_a_retention_then_plans() {
            let mut s = loaded();
            update(&mut s, key('x'));
            assert!(
                matches!(s.prompt, Some(Prompt::Retention(RetentionFor::ExpireSnapshots, ref t)) if t == "7d")
            );
            update(&mut s, code(KeyCode::Backspace));
            update(&mut s, code(KeyCode::Backspace));
            update(&mut s, key('1'));
            update(&mut s, key('d'));
            let fx = update(&mut s, code(KeyCode::Enter));
            assert_eq!(
                fx,
                vec![Effect::PlanMaintenance {
                    epoch: s.conn.epoch,
                    table: tref("zoning", "documents"),
                    kind: MaintenanceKind::ExpireSnapshots {
                        retention_secs: 86_400
                    },
                    partitions: None
                }]
            );
        }

        #[test]
        fn vacuum_asks_for_its_retention_then_plans_and_read_only_has_no_key_for_it() {
            let mut s = loaded();
            update(&mut s, key('V'));
            assert!(
                matches!(s.prompt, Some(Prompt::Retention(RetentionFor::Vacuum, ref t)) if t == "7d")
            );
            let fx = update(&mut s, code(KeyCode::Enter));
            assert_eq!(
                fx,
                vec![Effect::PlanMaintenance {
                    epoch: s.conn.epoch,
                    table: tref("zoning", "documents"),
                    kind: MaintenanceKind::Vacuum {
                        retention_secs: 7 * 86_400
                    },
                    partitions: None
                }]
            );
            let mut s = loaded();
            s.readonly = true;
            s.keymap = s.keymap.clone().with_readonly(true);
            update(&mut s, key('V'));
            assert_eq!(s.prompt, None, "no vacuum in read-only mode");
        }

        #[test]
        fn readonly_refuses_in_update_as_well_as_in_the_keymap() {
            let mut s = on_partitions();
            s.readonly = true;
            // The keymap has no o in read-only mode…
            s.keymap = s.keymap.clone().with_readonly(true);
            assert!(update(&mut s, key('o')).is_empty());
            // …and a plan that arrives anyway is not offered.
            let d = draft(&s);
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            assert!(s.popup.is_none());
            assert!(s.status.as_ref().unwrap().text.contains("read-only"));
        }
    }

    mod optimize_cost {
        use super::*;
        use crate::app::testing::plans::{draft, on_partitions};
        use crate::mutation::eta::{Measured, Rate};

        fn measured(bytes_per_sec: f64) -> Measured {
            Measured {
                rate: Some(Rate {
                    bytes_per_sec,
                    samples: 5,
                    from_audit: 3,
                    from_coordinator: 2,
                }),
                notes: Vec::new(),
            }
        }

        /// Six marked partitions drafted with `m`, on the confirm popup (drawn).
        fn confirming(m: Option<Measured>) -> State {
            let mut s = on_partitions();
            for _ in 0..6 {
                update(&mut s, key(' '));
            }
            let mut d = draft(&s);
            assert_eq!(d.partitions.len(), 6);
            d.measured = m;
            let epoch = s.conn.epoch;
            update(
                &mut s,
                Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Ok(d))),
            );
            update(&mut s, Action::Drawn(std::time::Instant::now()));
            s
        }

        fn confirm(s: &State) -> &crate::app::maintenance::Confirm {
            match &s.popup {
                Some(Popup::Confirm(c)) => c,
                other => panic!("{other:?}"),
            }
        }

        #[test]
        fn the_confirmation_says_how_long_and_on_what_basis() {
            let s = confirming(Some(measured(1_000_000.0)));
            let c = confirm(&s);
            assert_eq!(c.cost.len(), 1, "short: no incremental plan: {:?}", c.cost);
            assert!(
                c.cost[0].starts_with("expected: ~1s at the 977 KB/s of the last 5 optimizes (3 in the audit log, 2 in the coordinator's history)"),
                "{:?}",
                c.cost
            );
            let s = confirming(Some(Measured {
                rate: None,
                notes: vec!["user floe may not read the coordinator's query history".into()],
            }));
            assert_eq!(
                confirm(&s).cost,
                vec![
                    "expected: first time here: no estimate",
                    "estimate: user floe may not read the coordinator's query history"
                ]
            );
            // Not an optimize, or not measured: nothing said.
            assert!(confirm(&confirming(None)).cost.is_empty());
        }

        #[test]
        fn a_long_optimize_offers_the_incremental_plan_and_the_operator_chooses() {
            let mut s = confirming(Some(measured(10.0)));
            let c = confirm(&s).clone();
            assert_eq!(c.plan.steps.len(), 6);
            assert!(c.cost[0].starts_with("expected: ~"), "{:?}", c.cost);
            assert!(
                c.cost[1].starts_with(
                    "over 30m: the incremental plan runs the oldest small files first — part 1: "
                ) && c.cost[1].ends_with("; i: part 1 only"),
                "{:?}",
                c.cost
            );
            update(&mut s, key('i'));
            // Another plan: a `y` in the same input batch, before it is drawn, runs nothing.
            assert!(update(&mut s, key('y')).is_empty());
            assert!(matches!(s.popup, Some(Popup::Confirm(_))), "still asking");
            update(&mut s, Action::Drawn(std::time::Instant::now()));
            let part1 = confirm(&s).clone();
            assert!(part1.incremental);
            assert!(part1.plan.steps.len() < 6, "{}", part1.plan.steps.len());
            assert!(
                part1.cost[0].starts_with(
                    "incremental, part 1 of 2 (the oldest small files, 50% of them): "
                ),
                "{:?}",
                part1.cost
            );
            assert!(part1.cost[1].starts_with("part 2, for a later run: "));
            // `y` runs part 1 only.
            let fx = update(&mut s, key('y'));
            let [Effect::RunPlan { plan, .. }] = &fx[..] else {
                panic!("{fx:?}")
            };
            assert_eq!(plan.steps.len(), part1.plan.steps.len());
            // The oldest small files first: the earliest day of the six partitions.
            assert!(
                plan.steps[0].sql.contains("2026-11-01"),
                "{}",
                plan.steps[0].sql
            );
            // `i` again is the whole plan.
            let mut s = confirming(Some(measured(10.0)));
            update(&mut s, key('i'));
            update(&mut s, Action::Drawn(std::time::Instant::now()));
            update(&mut s, key('i'));
            update(&mut s, Action::Drawn(std::time::Instant::now()));
            assert_eq!(confirm(&s).plan.steps.len(), 6);
            assert!(!confirm(&s).incremental);
        }
    }
}
