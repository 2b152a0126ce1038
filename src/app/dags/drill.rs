//! The drill-down of the DAGs tab: DAG → runs → task instances → log, and back.

use super::{DagLevel, LogView, keep_order};
use crate::airflow::{AirflowError, DagRun, TaskInstance, TaskLog};
use crate::app::action::Effect;
use crate::app::grid::Grid;
use crate::app::state::{Level, Load, State};
use crate::health::airflow::task_rank;

/// Enter on the DAGs tab: DAG → runs → tasks → log.
pub fn enter(s: &mut State) -> Vec<Effect> {
    match s.dags.level() {
        DagLevel::List => {
            let Some(d) = s.dags.selected().map(|r| r.dag.dag_id.clone()) else {
                return Vec::new();
            };
            s.dags.level = Some(DagLevel::Runs);
            if s.dags.dag_id.as_ref() != Some(&d) {
                s.dags.runs.clear();
                s.dags.runs_grid = Grid::default();
            }
            s.dags.dag_id = Some(d.clone());
            s.dags.runs_load = Load::Loading;
            vec![Effect::LoadRuns { dag_id: d }]
        }
        DagLevel::Runs => {
            let (Some(d), Some(run)) = (
                s.dags.dag_id.clone(),
                s.dags.selected_run().map(|r| r.run_id.clone()),
            ) else {
                return Vec::new();
            };
            s.dags.level = Some(DagLevel::Tasks);
            if s.dags.run_id.as_ref() != Some(&run) {
                s.dags.tasks.clear();
                s.dags.tasks_grid = Grid::default();
            }
            s.dags.run_id = Some(run.clone());
            s.dags.tasks_load = Load::Loading;
            vec![Effect::LoadTasks {
                dag_id: d,
                run_id: run,
            }]
        }
        DagLevel::Tasks => {
            let (Some(d), Some(run)) = (s.dags.dag_id.clone(), s.dags.run_id.clone()) else {
                return Vec::new();
            };
            let Some(t) = s.dags.selected_task().cloned() else {
                return Vec::new();
            };
            if t.try_number == 0 {
                s.set_status(
                    Level::Info,
                    format!("task {} has not run yet: no log", t.task_id),
                );
                return Vec::new();
            }
            s.dags.level = Some(DagLevel::Log);
            s.dags.log_load = Load::Loading;
            vec![Effect::LoadLog {
                dag_id: d,
                run_id: run,
                task_id: t.task_id,
                try_number: t.try_number,
            }]
        }
        DagLevel::Log => Vec::new(),
        DagLevel::Source => {
            super::source_view::next_finding(s);
            Vec::new()
        }
    }
}

/// Esc on the DAGs tab: one level up. Returns false at the top.
pub fn back(s: &mut State) -> bool {
    s.dags.level = match s.dags.level() {
        DagLevel::List => return false,
        DagLevel::Runs => Some(DagLevel::List),
        DagLevel::Tasks => Some(DagLevel::Runs),
        DagLevel::Log => Some(DagLevel::Tasks),
        DagLevel::Source => Some(DagLevel::List),
    };
    true
}

pub(super) fn on_runs(s: &mut State, dag_id: &str, result: Result<Vec<DagRun>, AirflowError>) {
    if s.dags.dag_id.as_deref() != Some(dag_id) {
        return;
    }
    match result {
        Ok(runs) => {
            let keep = s.dags.selected_run().map(|r| r.run_id.clone());
            s.dags.runs = runs;
            s.dags.runs_load = Load::Loaded;
            let f = move |r: &DagRun| Some(&r.run_id) == keep.as_ref();
            s.dags
                .runs_grid
                .rebuild(&s.dags.runs, |r| r.run_id.as_str(), keep_order, Some(&f));
        }
        Err(e) => {
            s.set_status(Level::Error, format!("runs of {dag_id}: {e}"));
            s.dags.runs_load = Load::Failed(e.into());
        }
    }
}

pub(super) fn on_tasks(
    s: &mut State,
    dag_id: &str,
    run_id: &str,
    result: Result<Vec<TaskInstance>, AirflowError>,
) {
    if s.dags.dag_id.as_deref() != Some(dag_id) || s.dags.run_id.as_deref() != Some(run_id) {
        return;
    }
    match result {
        Ok(mut tasks) => {
            // Failed first: the task to look at is on top.
            tasks.sort_by_key(|t| (task_rank(t.state.as_ref()), t.start_date));
            s.dags.tasks = tasks;
            s.dags.tasks_load = Load::Loaded;
            s.dags
                .tasks_grid
                .rebuild(&s.dags.tasks, |t| t.task_id.as_str(), keep_order, None);
        }
        Err(e) => {
            s.set_status(Level::Error, format!("tasks of {dag_id} {run_id}: {e}"));
            s.dags.tasks_load = Load::Failed(e.into());
        }
    }
}

pub(super) fn on_log(
    s: &mut State,
    key: (String, String, String, u32),
    result: Result<TaskLog, AirflowError>,
) {
    let (dag_id, run_id, task_id, try_number) = key;
    match result {
        Ok(log) => {
            // Open on the error: the line an operator needs is shown first.
            let rows = super::log_rows(&log.lines, false);
            let scroll = if super::watch::is_tail(s, &dag_id, &run_id) {
                // The watched run's running task: its tail.
                rows.len().saturating_sub(s.page_height().max(1))
            } else {
                log.lines
                    .iter()
                    .position(|l| l.error)
                    .map(|i| super::log_view::row_of(&rows, i).saturating_sub(2))
                    .unwrap_or(0)
            };
            s.dags.log = Some(LogView {
                dag_id,
                run_id,
                task_id,
                try_number,
                log,
                scroll,
                search: String::new(),
                rows,
                wrap: false,
                hscroll: 0,
                frames: false,
            });
            s.dags.log_load = Load::Loaded;
        }
        Err(e) => {
            s.set_status(
                Level::Error,
                format!("log of {task_id} ({run_id}, try {try_number}): {e}"),
            );
            s.dags.log_load = Load::Failed(e.into());
        }
    }
}

/// `/` in the log view: jump to the first line that matches.
pub fn search_log(s: &mut State, text: &str) {
    if let Some(v) = &mut s.dags.log {
        v.search = text.to_lowercase();
        if !v.search.is_empty()
            && let Some(i) = v
                .log
                .lines
                .iter()
                .position(|l| l.text.to_lowercase().contains(&v.search))
        {
            // A match inside folded frames unfolds them.
            if matches!(
                v.rows.get(super::log_view::row_of(&v.rows, i)),
                Some(super::LogRow::Folded { .. })
            ) {
                v.frames = true;
                v.rows = super::log_rows(&v.log.lines, true);
            }
            v.scroll = super::log_view::row_of(&v.rows, i).saturating_sub(1);
        }
    }
}

pub fn scroll_log(s: &mut State, delta: isize, height: usize) {
    if let Some(v) = &mut s.dags.log {
        let max = v.rows.len().saturating_sub(height.max(1));
        v.scroll = (v.scroll as isize + delta).clamp(0, max as isize) as usize;
    }
}

/// `y` on the DAGs tab: the DAG id on the list; its failing error line once drilled in.
pub fn copy(s: &mut State) -> Vec<Effect> {
    use crate::app::copy::emit;
    let d = &s.dags;
    if d.level() == DagLevel::List {
        return match d.selected().map(|r| r.dag.dag_id.clone()) {
            Some(id) => emit(s, "DAG id", &id),
            None => emit(s, "DAG selected", ""),
        };
    }
    if let Some(v) = d.source.as_ref().filter(|_| d.level() == DagLevel::Source) {
        // The finding at the top of the view, else the file's place.
        let top = v.scroll + 1;
        let mark = v.marks.iter().find(|m| m.0 >= top).or(v.marks.last());
        let text = mark.map_or_else(|| format!("{}:{top}", v.file), |m| m.1.clone());
        return emit(s, "code finding", &text);
    }
    let from_log = d
        .log
        .as_ref()
        .filter(|_| d.level() == DagLevel::Log)
        .and_then(|l| l.log.error_line.clone());
    let dag_id = d.dag_id.clone().unwrap_or_default();
    let from_failure = d
        .failures
        .get(&dag_id)
        .and_then(|f| f.as_ref().ok())
        .and_then(|f| f.log.error_line.clone());
    let from_facts = d
        .row(&dag_id)
        .and_then(|r| r.facts.as_ref())
        .and_then(|f| f.error_line.clone());
    match from_log.or(from_failure).or(from_facts) {
        Some(line) => emit(s, "error line", &line),
        None => emit(s, "DAG id", &dag_id),
    }
}
