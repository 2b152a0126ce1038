//! An effect that panics (a bug, or a server answer nobody foresaw) must not leave its
//! rows loading forever: the runtime watches each effect's task and, when it panicked,
//! sends the result the effect would have sent had it failed, carrying the panic message.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinHandle};

use crate::app::action::{Action, Effect};
use crate::app::dags::DagMsg;
use crate::app::maintenance::MaintenanceMsg;
use crate::app::tables::TablesMsg;

/// Builds the failed result of one effect from an error text.
pub(super) type Reply = Box<dyn FnOnce(String) -> Action + Send>;

/// The failed result of `e`, for when its task panics (`None` for effects that send
/// nothing back or run synchronously). Only the effect's keys are kept, never its data.
pub(super) fn reply_of(e: &Effect) -> Option<Reply> {
    Some(match e {
        Effect::FetchServerInfo => Box::new(|m| Action::ServerInfo(Err(m))),
        Effect::Discover { generation, .. } => {
            let generation = *generation;
            Box::new(move |m| {
                Action::Tables(TablesMsg::Discovered {
                    generation,
                    result: Err(m),
                })
            })
        }
        Effect::LoadStats { generation, table } => {
            let (generation, table) = (*generation, table.clone());
            Box::new(move |m| {
                Action::Tables(TablesMsg::Stats {
                    generation,
                    table,
                    result: Err(m),
                })
            })
        }
        Effect::Probe { generation, tables } => {
            let (generation, tables) = (*generation, tables.clone());
            Box::new(move |m| {
                Action::Tables(TablesMsg::Probed {
                    generation,
                    results: tables.into_iter().map(|t| (t, Err(m.clone()))).collect(),
                })
            })
        }
        Effect::Rank { generation, tables } => {
            let (generation, tables) = (*generation, tables.clone());
            Box::new(move |m| {
                Action::Tables(TablesMsg::Ranked {
                    generation,
                    results: tables.into_iter().map(|t| (t, Err(m.clone()))).collect(),
                })
            })
        }
        Effect::LoadPartitions { request, table } => {
            let (request, table) = (*request, table.clone());
            Box::new(move |m| Action::Partitions {
                request,
                table,
                result: Err(m),
            })
        }
        Effect::LoadQueries { table } => {
            let table = table.clone();
            Box::new(move |m| crate::app::queries::reply(table, Err(m)))
        }
        Effect::LoadSnapshots { request, table } => {
            let (request, table) = (*request, table.clone());
            Box::new(move |m| Action::Snapshots {
                request,
                table,
                result: Err(m),
            })
        }
        Effect::Export { .. } => Box::new(|m| Action::Exported(Err(m))),
        Effect::PlanMaintenance { epoch, .. } => {
            let epoch = *epoch;
            Box::new(move |m| Action::Maintenance(MaintenanceMsg::PlanReady(epoch, Err(m))))
        }
        Effect::RunPlan { job, .. } => {
            let job = *job;
            Box::new(move |m| {
                Action::Maintenance(MaintenanceMsg::Done {
                    job,
                    result: Err(m),
                })
            })
        }
        // Airflow's, and nothing back for the effects of neither.
        _ => return dags_reply_of(e),
    })
}

/// [`reply_of`] for the DAG tab's effects (Airflow's).
fn dags_reply_of(e: &Effect) -> Option<Reply> {
    Some(match e {
        Effect::LoadDags { generation } => {
            let generation = *generation;
            Box::new(move |m| {
                Action::Dags(DagMsg::Loaded {
                    generation,
                    result: Err(m),
                })
            })
        }
        Effect::LoadDagFacts { generation, dag } => {
            let (generation, dag_id) = (*generation, dag.dag_id.clone());
            Box::new(move |m| {
                Action::Dags(DagMsg::Facts {
                    generation,
                    dag_id,
                    result: Err(m),
                })
            })
        }
        Effect::LoadRuns { dag_id } => {
            let dag_id = dag_id.clone();
            Box::new(move |m| {
                Action::Dags(DagMsg::Runs {
                    dag_id,
                    result: Err(m),
                })
            })
        }
        Effect::LoadTimelineRuns { dag_id } => {
            let dag_id = dag_id.clone();
            Box::new(move |m| Action::TimelineRuns {
                dag_id,
                result: Err(m),
            })
        }
        Effect::LoadTasks { dag_id, run_id } => {
            let (dag_id, run_id) = (dag_id.clone(), run_id.clone());
            Box::new(move |m| {
                Action::Dags(DagMsg::Tasks {
                    dag_id,
                    run_id,
                    result: Err(m),
                })
            })
        }
        Effect::LoadLog {
            dag_id,
            run_id,
            task_id,
            try_number,
        } => {
            let (dag_id, run_id, task_id, try_number) =
                (dag_id.clone(), run_id.clone(), task_id.clone(), *try_number);
            Box::new(move |m| {
                Action::Dags(DagMsg::Log {
                    dag_id,
                    run_id,
                    task_id,
                    try_number,
                    result: Err(m),
                })
            })
        }
        Effect::LoadFailure { dag_id } => {
            let dag_id = dag_id.clone();
            Box::new(move |m| {
                Action::Dags(DagMsg::Failure {
                    dag_id,
                    result: Err(m),
                })
            })
        }
        Effect::PlanClear { dag_id, run_id } => {
            let (dag_id, run_id) = (dag_id.clone(), run_id.clone());
            Box::new(move |m| {
                Action::Dags(DagMsg::ClearPlanned {
                    dag_id,
                    run_id,
                    result: Err(m),
                })
            })
        }
        Effect::WatchRun { run_id, .. } => {
            let run_id = run_id.clone();
            Box::new(move |m| {
                Action::Dags(DagMsg::Watched {
                    run_id,
                    result: Err(m),
                    reread: None,
                })
            })
        }
        Effect::PlanConnection {
            connection_id,
            target,
        } => {
            let (connection_id, target) = (connection_id.clone(), target.clone());
            Box::new(move |m| {
                Action::Dags(DagMsg::ConnectionPlanned {
                    connection_id,
                    target,
                    result: Err(m),
                })
            })
        }
        Effect::WriteDag(action) => {
            let action = action.clone();
            Box::new(move |m| {
                Action::Dags(DagMsg::Written {
                    action,
                    result: Err(m),
                })
            })
        }
        // Connection findings have no error to show; profile switches, cancels and quit
        // run on the event loop itself.
        _ => return None,
    })
}

/// Watch an effect's task: a panic becomes `reply`'s failed result on `tx`; a task that
/// was aborted (replaced by a newer request) sends nothing. The handle to abort the
/// effect is returned.
pub(super) fn watch(
    task: JoinHandle<()>,
    reply: Option<Reply>,
    tx: mpsc::UnboundedSender<Action>,
) -> AbortHandle {
    let abort = task.abort_handle();
    tokio::spawn(async move {
        let Err(e) = task.await else { return };
        if !e.is_panic() {
            return;
        }
        let text = message(e.into_panic());
        tracing::error!("an effect panicked: {text}");
        if let Some(reply) = reply {
            let _ = tx.send(reply(format!(
                "internal error: {text} (a bug in floe; details in floe.log)"
            )));
        }
    });
    abort
}

/// Whether `e` is the one effect `FLOE_TEST_PANIC=effect` (a test-only switch, see
/// `terminal::test_panic`) makes panic: the first table-stats load.
pub(super) fn deliberate(e: &Effect) -> bool {
    static DONE: AtomicBool = AtomicBool::new(false);
    super::terminal::test_panic() == Some("effect")
        && matches!(e, Effect::LoadStats { .. })
        && !DONE.swap(true, Ordering::Relaxed)
}

/// A panic payload as text (what `panic!` was given).
pub(super) fn message(payload: Box<dyn Any + Send>) -> String {
    let text = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked".to_string()
    };
    crate::text::one_line(&text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::state::Level;
    use crate::app::testing::{loaded, tref};
    use crate::app::update::update;

    /// The incident's third table is still loading in `loaded()`; its stats effect panics.
    #[tokio::test]
    async fn a_panicking_effect_fails_its_row_and_the_refresh_ends() {
        let mut s = loaded();
        assert!(s.refresh_in_flight(), "one table still loading");
        let effect = Effect::LoadStats {
            generation: s.tables.generation,
            table: tref("audit", "events"),
        };
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(async {
            let v: Vec<u64> = Vec::new();
            // An index out of bounds, as a decoding bug would do.
            let _ = v[usize::from(v.is_empty())];
        });
        watch(task, reply_of(&effect), tx);
        let action = tokio::time::timeout(std::time::Duration::from_secs(5), rx.recv())
            .await
            .expect("a reply within 5s")
            .expect("a reply");
        update(&mut s, action);
        assert!(!s.refresh_in_flight(), "the refresh ended");
        let row = s
            .tables
            .rows
            .iter()
            .find(|r| r.name.contains("events"))
            .unwrap();
        let err = row.error.as_deref().unwrap_or_default();
        assert!(
            err.contains("internal error") && err.contains("index out of bounds"),
            "{err}"
        );
        let status = s.status.as_ref().expect("a status line");
        assert_eq!(status.level, Level::Error);
        assert!(status.text.contains("internal error"), "{}", status.text);
    }

    #[tokio::test]
    async fn an_aborted_effect_sends_nothing() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(std::future::pending::<()>());
        let abort = watch(task, reply_of(&Effect::FetchServerInfo), tx);
        abort.abort();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn every_loading_effect_has_a_failed_result() {
        let m = || "boom".to_string();
        for e in [
            Effect::FetchServerInfo,
            Effect::Discover {
                generation: 1,
                schemas: vec![],
                relearn: false,
            },
            Effect::LoadRuns { dag_id: "d".into() },
            Effect::LoadTimelineRuns { dag_id: "d".into() },
            Effect::LoadFailure { dag_id: "d".into() },
            Effect::WriteDag(crate::app::action::DagWrite::Trigger { dag_id: "d".into() }),
        ] {
            let reply = reply_of(&e).unwrap_or_else(|| panic!("{e:?}"));
            let a = reply(m());
            assert!(format!("{a:?}").contains("boom"), "{a:?}");
        }
        assert!(reply_of(&Effect::Quit).is_none());
    }
}
