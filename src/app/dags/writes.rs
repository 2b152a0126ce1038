//! Writes to Airflow from the DAGs tab (and the Tables tab, through a table's
//! maintenance DAG): trigger, clear, pause; each shown for confirmation first.

use super::DagLevel;
use crate::airflow::{AirflowError, ApiVersion, ClearOutcome, WriteRequest};
use crate::app::action::{DagWrite, Effect};
use crate::app::keymap::Command;
use crate::app::state::{Level, Popup, State};
use crate::mutation::audit::WriteError;

/// Whether an Airflow write may be asked for at all (not read-only, Airflow configured);
/// when not, the status line says why.
pub(super) fn may_write(s: &mut State) -> bool {
    if s.readonly {
        s.set_status(Level::Error, "read-only: Airflow writes are disabled");
        return false;
    }
    if !s.airflow_configured {
        s.set_status(Level::Warn, "Airflow is not configured (--airflow URL)");
        return false;
    }
    true
}

/// `t`, `C`, `p`: Airflow writes, each shown for confirmation first.
pub fn command(s: &mut State, cmd: Command) -> Vec<Effect> {
    if !may_write(s) {
        return Vec::new();
    }
    let Some(dag_id) = target_dag(s) else {
        s.set_status(
            Level::Warn,
            "no maintenance DAG here: select a DAG, or a table with a mapped DAG",
        );
        return Vec::new();
    };
    match cmd {
        Command::TriggerDag => {
            s.popup = Some(Popup::ConfirmDag(Box::new(confirm_trigger(s, &dag_id))));
            Vec::new()
        }
        Command::PauseDag => {
            match confirm_pause(s, &dag_id) {
                Some(c) => s.popup = Some(Popup::ConfirmDag(Box::new(c))),
                None => s.set_status(Level::Warn, format!("{dag_id} is not loaded yet")),
            }
            Vec::new()
        }
        _ => {
            // The run to clear: the one the tab shows, else the newest failed.
            let run = (s.tab.ops().run)(s).or_else(|| {
                s.dags
                    .failures
                    .get(&dag_id)
                    .and_then(|f| f.as_ref().ok())
                    .map(|f| f.run_id.clone())
            });
            match run {
                Some(run_id) => {
                    s.set_status(
                        Level::Info,
                        format!("dry run: what clearing {run_id} would run again…"),
                    );
                    vec![Effect::PlanClear {
                        dag_id,
                        run_id,
                        epoch: s.conn.epoch,
                    }]
                }
                None => {
                    s.set_status(
                        Level::Warn,
                        format!("no failed run of {dag_id} to clear (enter lists its runs)"),
                    );
                    Vec::new()
                }
            }
        }
    }
}

/// A key while a DAG write awaits `y`.
pub fn on_confirm_key(s: &mut State, c: DagConfirm, cmd: Option<Command>) -> Vec<Effect> {
    if !s.popup_seen(c.shown, cmd == Some(Command::Confirm)) {
        // Typed before the popup was on screen: meant for something else.
        return Vec::new();
    }
    s.popup = None;
    if cmd == Some(Command::Confirm) {
        if s.readonly {
            s.set_status(Level::Error, "read-only: Airflow writes are disabled");
            return Vec::new();
        }
        s.set_status(
            Level::Info,
            format!("{} {}…", c.action.action(), c.action.dag_id()),
        );
        s.airflow_writes.push(in_flight(&c.action));
        return vec![Effect::WriteDag(c.action)];
    }
    s.set_status(Level::Info, "cancelled: nothing was sent to Airflow");
    Vec::new()
}

pub(super) fn on_clear_planned(
    s: &mut State,
    dag_id: &str,
    run_id: &str,
    result: Result<ClearOutcome, AirflowError>,
    epoch: u64,
) {
    if epoch != s.conn.epoch {
        // Asked on another profile: its run is not this profile's to clear.
        return;
    }
    match result {
        Ok(_) if s.popup.is_some() => {
            // Replacing the open popup would hand its answer to this clear.
            s.set_status(
                Level::Warn,
                format!("the clear of {dag_id} {run_id} was planned while another popup was open: not shown (ask again)"),
            );
        }
        Ok(outcome) if !s.readonly => {
            s.status = None;
            s.popup = Some(Popup::ConfirmDag(Box::new(confirm_clear(
                dag_id, run_id, &outcome,
            ))));
        }
        Ok(_) => s.set_status(Level::Error, "read-only: Airflow writes are disabled"),
        Err(e) => s.set_status(Level::Error, format!("dry run of clearing {run_id}: {e}")),
    }
}

/// How a write in flight is named in the quit question.
fn in_flight(a: &DagWrite) -> String {
    format!("{} {}", a.action(), a.dag_id())
}

pub(super) fn on_written(
    s: &mut State,
    action: DagWrite,
    result: Result<String, WriteError>,
    epoch: u64,
) -> Vec<Effect> {
    // In flight whichever profile it was sent on: the quit question stops asking.
    let name = in_flight(&action);
    if let Some(i) = s.airflow_writes.iter().position(|w| *w == name) {
        s.airflow_writes.remove(i);
    }
    if epoch != s.conn.epoch {
        // Sent on the profile left: what is on screen now is another Airflow's.
        let said = match result {
            Ok(msg) => format!("on the profile left: {msg}"),
            Err(e) => format!(
                "on the profile left: {} {}: {e}",
                action.action(),
                action.dag_id()
            ),
        };
        s.set_status(Level::Warn, said);
        return Vec::new();
    }
    if let (DagWrite::SetConnection { connection_id, .. }, Ok(_)) = (&action, &result) {
        s.dags.fixed.insert(connection_id.clone(), s.now);
    }
    match result {
        Ok(msg) => s.set_status(Level::Info, msg),
        Err(e) => s.set_status(
            Level::Error,
            format!("{} {}: {e}", action.action(), action.dag_id()),
        ),
    }
    // Show the new state: the DAG's facts, and its runs when they are open.
    let mut fx = Vec::new();
    if let Some(r) = s.dags.row(action.dag_id()) {
        fx.push(Effect::LoadDagFacts {
            generation: s.dags.generation,
            dag: Box::new(r.dag.clone()),
        });
    }
    if s.dags.dag_id.as_deref() == Some(action.dag_id()) {
        fx.push(Effect::LoadRuns {
            dag_id: action.dag_id().to_string(),
        });
    }
    if matches!(action, DagWrite::SetConnection { .. }) {
        // The connection findings (and the incident built on them) follow its new test.
        fx.push(Effect::CheckConnections);
    }
    if matches!(action, DagWrite::SetPaused { .. }) {
        s.dags.last_full = None;
        fx.extend(super::refresh(s, false));
    }
    fx
}

/// The DAG a write applies to: what the tab says (the selected one on the DAGs tab, the
/// incident's on Triage, the maintenance DAG of the tab's table elsewhere).
pub fn target_dag(s: &State) -> Option<String> {
    (s.tab.ops().dag)(s)
}

/// On the DAGs tab: the selected DAG in the list, else the DAG whose runs are shown.
pub fn selected_dag(s: &State) -> Option<String> {
    match s.dags.level() {
        DagLevel::List => s.dags.selected().map(|r| r.dag.dag_id.clone()),
        _ => s.dags.dag_id.clone(),
    }
}

/// On the DAGs tab: the run selected among a DAG's runs, or the one whose tasks or log
/// are shown; none on the list.
pub fn shown_run(s: &State) -> Option<String> {
    match s.dags.level() {
        DagLevel::List | DagLevel::Source => None,
        DagLevel::Runs => s.dags.selected_run().map(|r| r.run_id.clone()),
        DagLevel::Tasks | DagLevel::Log => s.dags.run_id.clone(),
    }
}

/// The maintenance DAG of the table the tab is about.
pub fn table_dag(s: &State) -> Option<String> {
    let t = (s.tab.ops().table)(s)?;
    s.dags.mapping.get(&t).map(|m| m.dag_id.clone())
}

/// A write to Airflow awaiting `y`.
#[derive(Clone, Debug, PartialEq)]
pub struct DagConfirm {
    pub action: DagWrite,
    pub lines: Vec<String>,
    /// Drawn on screen since it opened (only then does it take a `y`).
    pub shown: bool,
}

pub fn confirm_trigger(s: &State, dag_id: &str) -> DagConfirm {
    let row = s.dags.row(dag_id);
    let mut lines = vec![format!("trigger a run of {dag_id} now")];
    if let Some(r) = row {
        if !r.tables.is_empty() {
            lines.push(format!("it maintains {}", r.tables.join(", ")));
        }
        if r.dag.paused {
            lines.push("the DAG is paused: the run is queued until it is unpaused".into());
        }
        if let Some(f) = &r.facts
            && f.last_run_failed()
        {
            lines.push(format!(
                "its last run failed{}",
                f.error_line
                    .as_ref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            ));
        }
    }
    // The request as it is sent, on the API the DAG list was read from.
    let api = s.dags.api.unwrap_or(ApiVersion::V2);
    lines.push(WriteRequest::trigger(api, dag_id).line(api));
    DagConfirm {
        action: DagWrite::Trigger {
            dag_id: dag_id.to_string(),
        },
        lines,
        shown: false,
    }
}

pub fn confirm_pause(s: &State, dag_id: &str) -> Option<DagConfirm> {
    let paused = s.dags.row(dag_id)?.dag.paused;
    Some(DagConfirm {
        action: DagWrite::SetPaused {
            dag_id: dag_id.to_string(),
            paused: !paused,
        },
        lines: vec![
            format!("{} {dag_id}", if paused { "unpause" } else { "pause" }),
            WriteRequest::set_paused(dag_id, !paused).line(s.dags.api.unwrap_or(ApiVersion::V2)),
        ],
        shown: false,
    })
}

/// The dry run of a clear, shown before the real one.
pub fn confirm_clear(dag_id: &str, run_id: &str, outcome: &ClearOutcome) -> DagConfirm {
    let mut lines = vec![format!(
        "clear run {run_id} of {dag_id}: these tasks run again"
    )];
    for t in &outcome.tasks {
        lines.push(format!(
            "  {} ({})",
            t.task_id,
            t.state
                .as_ref()
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|| "-".into())
        ));
    }
    if outcome.tasks.is_empty() {
        lines.push("  (the dry run lists no task)".into());
    }
    if outcome.scope == crate::airflow::ClearScope::AllTasks {
        lines.push("Airflow 2's API clears every task of the run, not only the failed ones".into());
    }
    DagConfirm {
        action: DagWrite::Clear {
            dag_id: dag_id.to_string(),
            run_id: run_id.to_string(),
            only_failed: outcome.scope == crate::airflow::ClearScope::OnlyFailed,
        },
        lines,
        shown: false,
    }
}
