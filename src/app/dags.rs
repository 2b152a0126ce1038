//! The DAGs tab: maintenance DAGs (failing first), import errors, and the drill-down
//! DAG → runs → task instances → log; plus the table ↔ DAG correlation it feeds.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::action::{DagWrite, Effect};
use super::grid::Grid;
use super::state::{Level, Load, State, Tab};
use crate::airflow::scan::DagList;
use crate::airflow::{
    AirflowError, AirflowHealth, Dag, DagImportError, DagRun, TaskInstance, TaskLog,
};
use crate::health::mapping::{DagName, Mapped, map_dags};
use crate::health::{DagFacts, Finding, Health, Severity, evaluate_dag};
use crate::mutation::audit::WriteError;

mod columns;
pub mod connection;
mod drill;
pub use drill::copy;
mod log_view;
pub mod source_view;
#[cfg(test)]
mod tests;
pub mod watch;
pub mod writes;
use columns::cmp_dags;
pub use columns::{DAG_SORTS, DagCol};
pub use drill::{back, enter, scroll_log, search_log};
pub use log_view::{
    LogRow, is_library_frame, log_rows, scroll_log_sideways, toggle_log_frames, toggle_log_wrap,
};
pub use writes::{DagConfirm, command, confirm_clear, confirm_pause, confirm_trigger, target_dag};

#[derive(Clone, Debug, PartialEq)]
pub struct DagRow {
    pub dag: Dag,
    pub facts: Option<DagFacts>,
    pub error: Option<String>,
    pub health: Option<Health>,
    /// Tables this DAG maintains (configured or guessed).
    pub tables: Vec<String>,
    pub search: String,
}

impl DagRow {
    pub fn status(&self) -> Option<Severity> {
        if self.error.is_some() && self.health.is_none() {
            return Some(Severity::Unknown);
        }
        self.health.as_ref().map(|h| h.status)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DagLevel {
    List,
    Runs,
    Tasks,
    Log,
    /// A DAG's source file (`v`).
    Source,
}

/// The failing task of a DAG's newest failed run with the tail of its log (the detail pane).
#[derive(Clone, Debug, PartialEq)]
pub struct FailureDetail {
    pub run_id: String,
    pub task_id: String,
    pub try_number: u32,
    pub log: TaskLog,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LogView {
    pub dag_id: String,
    pub run_id: String,
    pub task_id: String,
    pub try_number: u32,
    pub log: TaskLog,
    /// First visible line.
    pub scroll: usize,
    /// `/` search (lower-cased); matching lines are highlighted.
    pub search: String,
    /// What is drawn, row by row: the lines, runs of library frames folded into one.
    pub rows: Vec<LogRow>,
    /// Long lines wrap (off: they are cut at the edge and scroll sideways).
    pub wrap: bool,
    /// Characters scrolled off the left of each line (without wrap).
    pub hscroll: usize,
    /// The frames under site-packages are unfolded.
    pub frames: bool,
}

#[derive(Clone, Debug, Default)]
pub struct DagsView {
    pub rows: Vec<DagRow>,
    pub grid: Grid,
    pub load: Load,
    pub generation: u64,
    pub version: Option<String>,
    pub api: Option<crate::airflow::ApiVersion>,
    pub health: Option<AirflowHealth>,
    pub import_errors: Vec<DagImportError>,
    /// Connection and server findings.
    pub findings: Vec<Finding>,
    /// Connections floe fixed on this profile, and when (triage ties a failure to them).
    pub fixed: std::collections::BTreeMap<String, DateTime<Utc>>,
    pub last_full: Option<DateTime<Utc>>,
    pub level: Option<DagLevel>,
    pub dag_id: Option<String>,
    pub runs: Vec<DagRun>,
    pub runs_grid: Grid,
    pub runs_load: Load,
    pub run_id: Option<String>,
    pub tasks: Vec<TaskInstance>,
    pub tasks_grid: Grid,
    pub tasks_load: Load,
    pub log: Option<LogView>,
    pub log_load: Load,
    pub failures: BTreeMap<String, Result<FailureDetail, AirflowError>>,
    /// Which DAG maintains which table.
    pub mapping: BTreeMap<crate::lakehouse::model::TableRef, Mapped>,
    /// The run floe triggered, followed to its end.
    pub watch: Option<watch::Watch>,
    /// The DAGs' code, read once per version of their file.
    pub code: source_view::CodeCache,
    /// DAGs whose code is being read.
    pub code_loading: std::collections::BTreeSet<String>,
    /// The source view (`v`).
    pub source: Option<source_view::SourceView>,
}

impl DagsView {
    pub fn level(&self) -> DagLevel {
        self.level.unwrap_or(DagLevel::List)
    }

    pub fn reindex(&mut self) {
        self.grid
            .rebuild(&self.rows, |r| r.search.as_str(), cmp_dags, None);
    }

    /// Re-apply filter and order to the list the current level shows.
    pub fn reindex_level(&mut self) {
        match self.level() {
            DagLevel::List => self.reindex(),
            DagLevel::Runs => {
                self.runs_grid
                    .rebuild(&self.runs, |r| r.run_id.as_str(), keep_order, None)
            }
            DagLevel::Tasks => {
                self.tasks_grid
                    .rebuild(&self.tasks, |t| t.task_id.as_str(), keep_order, None)
            }
            DagLevel::Log | DagLevel::Source => {}
        }
    }

    pub fn selected(&self) -> Option<&DagRow> {
        self.grid.selected_row().and_then(|i| self.rows.get(i))
    }

    pub fn row(&self, dag_id: &str) -> Option<&DagRow> {
        self.rows.iter().find(|r| r.dag.dag_id == dag_id)
    }

    pub fn selected_run(&self) -> Option<&DagRun> {
        self.runs_grid.selected_row().and_then(|i| self.runs.get(i))
    }

    pub fn selected_task(&self) -> Option<&TaskInstance> {
        self.tasks_grid
            .selected_row()
            .and_then(|i| self.tasks.get(i))
    }

    /// The grid the current level moves through (the log scrolls instead).
    pub fn grid_mut(&mut self) -> Option<&mut Grid> {
        match self.level() {
            DagLevel::List => Some(&mut self.grid),
            DagLevel::Runs => Some(&mut self.runs_grid),
            DagLevel::Tasks => Some(&mut self.tasks_grid),
            DagLevel::Log | DagLevel::Source => None,
        }
    }

    pub fn grid(&self) -> Option<&Grid> {
        match self.level() {
            DagLevel::List => Some(&self.grid),
            DagLevel::Runs => Some(&self.runs_grid),
            DagLevel::Tasks => Some(&self.tasks_grid),
            DagLevel::Log | DagLevel::Source => None,
        }
    }
}

fn keep_order<T>(_: &T, _: &T, _: usize) -> Ordering {
    Ordering::Equal
}

/// Start (or skip) the DAGs part of a refresh: the full list at 5× the refresh interval
/// (what Airflow's own UI does to spare the server), the selected DAG at every refresh.
pub fn refresh(s: &mut State, manual: bool) -> Vec<Effect> {
    if !s.airflow_configured {
        return Vec::new();
    }
    let full_every = chrono::Duration::from_std(s.refresh_every * 5).unwrap_or_default();
    let due =
        s.dags.last_full.is_none_or(|t| s.now - t >= full_every) || (manual && s.tab == Tab::Dags);
    if due && !s.dags.load.is_loading() {
        s.dags.generation += 1;
        s.dags.load = Load::Loading;
        s.dags.last_full = Some(s.now);
        return vec![
            Effect::LoadDags {
                generation: s.dags.generation,
            },
            Effect::CheckConnections,
        ];
    }
    let mut fx = source_view::wanted(s);
    if let Some(r) = s.dags.selected() {
        fx.push(Effect::LoadDagFacts {
            generation: s.dags.generation,
            dag: Box::new(r.dag.clone()),
        });
    }
    if s.tab == Tab::Dags {
        match (s.dags.level(), &s.dags.dag_id, &s.dags.run_id) {
            (DagLevel::Runs, Some(d), _) => fx.push(Effect::LoadRuns { dag_id: d.clone() }),
            (DagLevel::Tasks, Some(d), Some(r)) => fx.push(Effect::LoadTasks {
                dag_id: d.clone(),
                run_id: r.clone(),
            }),
            _ => {}
        }
    }
    fx
}

/// Recompute the table ↔ DAG mapping and push every DAG's facts into the table rows,
/// re-evaluating their health (the correlation findings).
pub fn correlate(s: &mut State) {
    let tables: Vec<_> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
    let names: Vec<DagName> = s
        .dags
        .rows
        .iter()
        .map(|r| DagName {
            dag_id: r.dag.dag_id.clone(),
            tags: r.dag.tags.clone(),
        })
        .collect();
    s.dags.mapping = map_dags(&tables, &names, &s.maintenance);
    for d in &mut s.dags.rows {
        d.tables = s
            .dags
            .mapping
            .iter()
            .filter(|(_, m)| m.dag_id == d.dag.dag_id)
            .map(|(t, _)| t.to_string())
            .collect();
    }
    let now = s.now;
    let cfg = s.health.clone();
    for row in &mut s.tables.rows {
        row.dag = s.dags.mapping.get(&row.table).and_then(|m| {
            s.dags
                .rows
                .iter()
                .find(|d| d.dag.dag_id == m.dag_id)
                .and_then(|d| d.facts.clone())
                .map(|f| DagFacts {
                    guessed: m.guessed,
                    ..f
                })
        });
        row.evaluate(&cfg, now);
    }
    s.tables.reindex();
}

pub fn on_list(
    s: &mut State,
    generation: u64,
    result: Result<DagList, AirflowError>,
) -> Vec<Effect> {
    if generation != s.dags.generation {
        return Vec::new();
    }
    match result {
        Ok(list) => {
            s.dags.version = Some(list.version.clone());
            s.dags.api = Some(list.api);
            s.conn.airflow_version = Some(list.version.clone());
            s.dags.health = list.health.clone();
            s.dags.import_errors = list.import_errors.clone();
            let old = std::mem::take(&mut s.dags.rows);
            s.dags.rows = list
                .dags
                .into_iter()
                .map(|dag| {
                    let prev = old.iter().find(|r| r.dag.dag_id == dag.dag_id);
                    DagRow {
                        search: format!(
                            "{} {} {}",
                            dag.dag_id,
                            dag.tags.join(" "),
                            dag.owners.join(" ")
                        )
                        .to_lowercase(),
                        facts: prev.and_then(|p| p.facts.clone()),
                        error: None,
                        health: prev.and_then(|p| p.health.clone()),
                        tables: Vec::new(),
                        dag,
                    }
                })
                .collect();
            s.dags.load = Load::Loaded;
            correlate(s);
            s.dags.reindex();
            let generation = s.dags.generation;
            s.dags
                .rows
                .iter()
                .map(|r| Effect::LoadDagFacts {
                    generation,
                    dag: Box::new(r.dag.clone()),
                })
                .collect()
        }
        Err(e) => {
            s.dags.load = Load::Failed(e.clone().into());
            s.set_status(Level::Error, format!("Airflow: {e}"));
            Vec::new()
        }
    }
}

pub fn on_facts(
    s: &mut State,
    dag_id: &str,
    result: Result<DagFacts, AirflowError>,
) -> Vec<Effect> {
    let now = s.now;
    let Some(row) = s.dags.rows.iter_mut().find(|r| r.dag.dag_id == dag_id) else {
        return Vec::new();
    };
    let mut fx = Vec::new();
    let mut active = None;
    match result {
        Ok(f) => {
            row.health = Some(evaluate_dag(&f, now));
            let failing = f.last_run_failed();
            active = f.active_run.clone();
            row.facts = Some(f);
            row.error = None;
            // The failing task and the tail of its log, for the detail pane.
            if failing {
                fx.push(Effect::LoadFailure {
                    dag_id: dag_id.to_string(),
                });
            } else {
                s.dags.failures.remove(dag_id);
            }
        }
        Err(e) => row.error = Some(e.to_string()),
    }
    source_view::attach(s, dag_id);
    correlate(s);
    s.dags.reindex();
    let code: Vec<Effect> = source_view::want(s, dag_id).into_iter().collect();
    source_view::mark_loading(s, &code);
    fx.extend(code);
    // A running maintenance DAG (or one whose write was found before): who writes its
    // tables now, for Triage to say instead of proposing `o`.
    let tables: Vec<crate::lakehouse::model::TableRef> = s
        .dags
        .mapping
        .iter()
        .filter(|(t, m)| {
            m.dag_id == dag_id && (active.is_some() || s.jobs.elsewhere.contains_key(*t))
        })
        .map(|(t, _)| t.clone())
        .collect();
    fx.extend(
        tables
            .into_iter()
            .map(|table| Effect::CheckWriters { table }),
    );
    if let Some(run_id) = active {
        fx.extend(watch::follow(s, dag_id, &run_id));
    }
    fx
}

/// Results for the DAGs tab.
#[derive(Clone, Debug)]
pub enum DagMsg {
    Loaded {
        generation: u64,
        result: Result<DagList, AirflowError>,
    },
    Facts {
        generation: u64,
        dag_id: String,
        result: Result<DagFacts, AirflowError>,
    },
    ConnectionFindings(Vec<Finding>),
    /// A DAG's code: its source read and inspected, or unchanged since.
    Code {
        dag_id: String,
        result: Result<source_view::CodeRead, AirflowError>,
    },
    Runs {
        dag_id: String,
        result: Result<Vec<DagRun>, AirflowError>,
    },
    Tasks {
        dag_id: String,
        run_id: String,
        result: Result<Vec<TaskInstance>, AirflowError>,
    },
    Log {
        dag_id: String,
        run_id: String,
        task_id: String,
        try_number: u32,
        result: Result<TaskLog, AirflowError>,
    },
    Failure {
        dag_id: String,
        result: Result<Option<FailureDetail>, AirflowError>,
    },
    ClearPlanned {
        dag_id: String,
        run_id: String,
        result: Result<crate::airflow::ClearOutcome, AirflowError>,
        /// The profile it was asked on ([`crate::app::state::Conn::epoch`]).
        epoch: u64,
    },
    /// A write's answer, with the profile it was sent on ([`crate::app::state::Conn::epoch`]).
    Written {
        action: DagWrite,
        result: Result<String, WriteError>,
        epoch: u64,
    },
    /// floe triggered a run (on the profile of `epoch`): watch it, on that profile only.
    Triggered {
        dag_id: String,
        run_id: String,
        epoch: u64,
    },
    /// The watched run as Airflow has it; once it ended, its tables read again.
    Watched {
        run_id: String,
        result: Result<(crate::airflow::DagRun, Vec<crate::airflow::TaskInstance>), AirflowError>,
        reread: Option<
            Vec<(
                crate::lakehouse::model::TableRef,
                Result<crate::lakehouse::model::TableStats, crate::trino::TrinoError>,
            )>,
        >,
    },
    /// A connection read for its fix: the diff to confirm.
    ConnectionPlanned {
        connection_id: String,
        target: String,
        /// The profile it was read on.
        epoch: u64,
        result: Result<(crate::airflow::Connection, crate::airflow::ApiVersion), AirflowError>,
    },
}

/// Esc on the DAGs tab: clear the log's (or the source's) search, else one level up;
/// `false` on the list.
pub fn back_level(s: &mut State) -> bool {
    if s.dags.level() == DagLevel::Log && s.dags.log.as_ref().is_some_and(|l| !l.search.is_empty())
    {
        search_log(s, "");
        return true;
    }
    if s.dags.level() == DagLevel::Source
        && s.dags.source.as_ref().is_some_and(|v| !v.search.is_empty())
    {
        source_view::search(s, "");
        return true;
    }
    back(s)
}

/// The DAGs tab's messages: lists, facts, runs, tasks, logs, failures, writes.
pub fn update(s: &mut State, msg: DagMsg) -> Vec<Effect> {
    match msg {
        DagMsg::Loaded { generation, result } => on_list(s, generation, result),
        DagMsg::Facts {
            generation,
            dag_id,
            result,
        } => {
            if generation != s.dags.generation {
                return Vec::new();
            }
            on_facts(s, &dag_id, result)
        }
        DagMsg::ConnectionFindings(f) => {
            s.dags.findings = f;
            Vec::new()
        }
        DagMsg::Code { dag_id, result } => {
            source_view::on_code(s, &dag_id, result);
            Vec::new()
        }
        DagMsg::Runs { dag_id, result } => {
            drill::on_runs(s, &dag_id, result);
            Vec::new()
        }
        DagMsg::Tasks {
            dag_id,
            run_id,
            result,
        } => {
            drill::on_tasks(s, &dag_id, &run_id, result);
            Vec::new()
        }
        DagMsg::Log {
            dag_id,
            run_id,
            task_id,
            try_number,
            result,
        } => {
            drill::on_log(s, (dag_id, run_id, task_id, try_number), result);
            Vec::new()
        }
        DagMsg::Failure { dag_id, result } => {
            match result {
                Ok(Some(f)) => {
                    s.dags.failures.insert(dag_id, Ok(f));
                }
                Ok(None) => {
                    s.dags.failures.remove(&dag_id);
                }
                Err(e) => {
                    s.dags.failures.insert(dag_id, Err(e));
                }
            }
            Vec::new()
        }
        DagMsg::ClearPlanned {
            dag_id,
            run_id,
            result,
            epoch,
        } => {
            writes::on_clear_planned(s, &dag_id, &run_id, result, epoch);
            Vec::new()
        }
        DagMsg::Written {
            action,
            result,
            epoch,
        } => writes::on_written(s, action, result, epoch),
        DagMsg::Triggered {
            dag_id,
            run_id,
            epoch,
        } => watch::on_triggered(s, &dag_id, &run_id, epoch),
        DagMsg::Watched {
            run_id,
            result,
            reread,
        } => watch::on_progress(s, &run_id, result, reread),
        DagMsg::ConnectionPlanned {
            connection_id,
            target,
            epoch,
            result,
        } => {
            connection::on_planned(s, &connection_id, &target, epoch, result);
            Vec::new()
        }
    }
}
