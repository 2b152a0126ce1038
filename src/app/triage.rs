//! The Triage tab: the incidents of the tables and DAGs on screen, grouped by root cause
//! and ranked worst first (`health::incidents`), re-derived whenever tables or DAGs change.
//! Enter jumps to an incident's evidence — the failing task's log, the DAG, the table's
//! partitions, snapshots or findings — and Esc there comes back.

use std::collections::HashMap;

use super::action::Effect;
use super::dags::DagLevel;
use super::grid::Grid;
use super::state::{Level, Load, Popup, State, Tab};
use crate::airflow::scan::DagList;
use crate::health::airflow::server_findings;
use crate::health::incidents::{Facts, Incident, Jump, Kind, Next, TableFacts, incidents};
use crate::health::{Finding, Rule, Severity};
use crate::lakehouse::model::TableRef;

/// Where Enter took the operator, so Esc there comes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jumped {
    pub tab: Tab,
    /// On the DAGs tab: the level the jump opened.
    pub dag_level: Option<DagLevel>,
}

#[derive(Clone, Debug, Default)]
pub struct TriageView {
    pub incidents: Vec<Incident>,
    /// Lower-cased searchable text of each incident.
    pub search: Vec<String>,
    pub grid: Grid,
    pub jumped: Option<Jumped>,
    /// Tables or DAGs changed since the incidents were derived.
    pub dirty: bool,
}

impl TriageView {
    pub fn selected(&self) -> Option<&Incident> {
        self.grid.selected_row().and_then(|i| self.incidents.get(i))
    }
}

/// Rows the evidence pane takes below the list (none on short terminals).
pub fn detail_height(term_rows: u16) -> usize {
    if term_rows < 16 {
        0
    } else {
        ((term_rows as usize).saturating_sub(super::layout::CHROME_ROWS) * 3 / 5).clamp(6, 30)
    }
}

/// Where the list's data stands: loading until the first refresh has read every table.
pub fn load(s: &State) -> Load {
    match &s.tables.load {
        Load::Failed(e) if s.tables.rows.is_empty() => Load::Failed(e.clone()),
        Load::Idle => Load::Idle,
        _ if s.tables.rows.is_empty() && s.tables.load.is_loading() => Load::Loading,
        _ if s.last_refresh.is_none() && s.tables.refresh.running() => Load::Loading,
        _ => Load::Loaded,
    }
}

/// An incident's identity across re-derivations: its kind and what it is about.
pub(crate) type Key = (Kind, Option<String>, Option<TableRef>);

pub(crate) fn key(i: &Incident) -> Key {
    (i.kind, i.dags.first().cloned(), i.worst_table().cloned())
}

/// Derive the incidents again from the tables and DAGs in `s`.
pub fn rebuild(s: &mut State) {
    let mut loose: Vec<Finding> = s.dags.findings.clone();
    if s.airflow_configured {
        loose.extend(server_findings(&DagList {
            version: String::new(),
            api: s.dags.api.unwrap_or(crate::airflow::ApiVersion::V2),
            health: s.dags.health.clone(),
            dags: Vec::new(),
            import_errors: s.dags.import_errors.clone(),
        }));
        if let Load::Failed(e) = &s.dags.load {
            loose.push(Finding {
                rule: Rule::AirflowUnreachable,
                severity: Severity::Unknown,
                message: format!("DAGs not evaluated: {e}"),
                penalty: 0,
            });
        }
        for r in &s.dags.rows {
            if let (None, Some(e)) = (&r.facts, &r.error) {
                loose.push(Finding {
                    rule: Rule::DagUnreadable,
                    severity: Severity::Unknown,
                    message: format!("DAG {}: cannot read its runs: {e}", r.dag.dag_id),
                    penalty: 0,
                });
            }
        }
    }
    let suffered: HashMap<&TableRef, String> = s
        .tables
        .rows
        .iter()
        .filter_map(|r| super::query_history::suffered(s, &r.table).map(|l| (&r.table, l)))
        .collect();
    let running: HashMap<&TableRef, String> = s
        .tables
        .rows
        .iter()
        .filter_map(|r| Some((&r.table, s.jobs.running_elsewhere(&r.table, s.now)?)))
        .collect();
    let errors: Vec<Option<String>> = s
        .tables
        .rows
        .iter()
        .map(|r| r.error().map(ToString::to_string))
        .collect();
    let facts = Facts {
        tables: s
            .tables
            .rows
            .iter()
            .zip(&errors)
            .map(|(r, error)| TableFacts {
                running: running.get(&r.table).map(String::as_str),
                suffered: suffered.get(&r.table).map(String::as_str),
                table: &r.table,
                stats: r.stats(),
                health: r.health.as_ref(),
                error: error.as_deref(),
                dag_id: s.dags.mapping.get(&r.table).map(|m| m.dag_id.as_str()),
            })
            .collect(),
        dags: s
            .dags
            .rows
            .iter()
            .filter_map(|r| r.facts.as_ref())
            .collect(),
        findings: loose.iter().collect(),
        airflow: s.airflow_configured,
        fixed: s.dags.fixed.clone(),
    };
    let list = incidents(&facts, s.now);
    let keep = s.triage.selected().map(key);
    s.triage.search = list.iter().map(Incident::search_text).collect();
    s.triage.incidents = list;
    s.triage.dirty = false;
    reindex_with(&mut s.triage, keep);
}

fn reindex_with(v: &mut TriageView, keep: Option<Key>) {
    let search = &v.search;
    let rows: Vec<(usize, &Incident)> = v.incidents.iter().enumerate().collect();
    let same = |r: &(usize, &Incident)| keep.as_ref() == Some(&key(r.1));
    v.grid.rebuild(
        &rows,
        |r| search[r.0].as_str(),
        |a, b, _| a.0.cmp(&b.0),
        keep.as_ref()
            .map(|_| &same as &dyn Fn(&(usize, &Incident)) -> bool),
    );
}

/// Re-apply the filter (the order is the ranking).
pub fn reindex(s: &mut State) {
    let keep = s.triage.selected().map(key);
    reindex_with(&mut s.triage, keep);
}

/// The DAG the selected incident's DAG actions (`t`, `p`, `C`) act on.
pub fn selected_dag(s: &State) -> Option<String> {
    s.triage
        .selected()
        .and_then(|i| i.dag())
        .map(str::to_string)
}

/// The Airflow connection the selected incident says to fix (`F`).
pub fn selected_connection(s: &State) -> Option<String> {
    s.triage.selected()?.next.iter().find_map(|n| match n {
        Next::FixConnection { connections, .. } => connections.first().cloned(),
        _ => None,
    })
}

/// `y`: the incident's line, as an operator pastes it into the incident channel.
pub fn copy(s: &mut State) -> Vec<Effect> {
    let line = s.triage.selected().map(|i| i.summary());
    match line {
        Some(line) => super::copy::emit(s, "incident", &line),
        None => super::copy::emit(s, "incident selected", ""),
    }
}

/// The table the selected incident's table actions (`o`, `x`, `i`) act on: its worst.
pub fn selected_table(s: &State) -> Option<TableRef> {
    s.triage.selected().and_then(|i| i.worst_table()).cloned()
}

/// Select `table` in the Tables list (clearing a filter that hides it).
fn select_table(s: &mut State, table: &TableRef) -> bool {
    let Some(i) = s.tables.rows.iter().position(|r| &r.table == table) else {
        return false;
    };
    if !s.tables.grid.index.contains(&i) {
        s.tables.grid.filter.clear();
        s.tables.reindex();
    }
    let Some(pos) = s.tables.grid.index.iter().position(|&x| x == i) else {
        return false;
    };
    s.tables.grid.selected = pos;
    s.tables.grid.moved = true;
    true
}

/// Select `dag_id` in the DAG list (clearing a filter that hides it).
fn select_dag(s: &mut State, dag_id: &str) -> bool {
    let Some(i) = s.dags.rows.iter().position(|r| r.dag.dag_id == dag_id) else {
        return false;
    };
    s.dags.level = Some(DagLevel::List);
    if !s.dags.grid.index.contains(&i) {
        s.dags.grid.filter.clear();
        s.dags.reindex();
    }
    let Some(pos) = s.dags.grid.index.iter().position(|&x| x == i) else {
        return false;
    };
    s.dags.grid.selected = pos;
    s.dags.grid.moved = true;
    true
}

/// Show the tab of a jump with the selection visible.
fn arrive(s: &mut State, tab: Tab, dag_level: Option<DagLevel>) {
    s.tab = tab;
    s.triage.jumped = Some(Jumped { tab, dag_level });
    let h = s.page_height();
    if let Some(g) = s.grid_mut() {
        g.ensure_visible(h);
    }
}

/// Enter on the Triage tab: jump to the selected incident's evidence.
pub fn enter(s: &mut State) -> Vec<Effect> {
    // The incident of a run being watched: its running task's log (read again at each
    // poll while it runs).
    if let Some((dag_id, run_id, task_id, try_number)) = super::dags::watch::running_log(s)
        && select_dag(s, &dag_id)
    {
        return open_log(s, dag_id, run_id, task_id, try_number);
    }
    let Some(jump) = s.triage.selected().map(|i| i.jump.clone()) else {
        return Vec::new();
    };
    match jump {
        Jump::DagFailure { dag_id } | Jump::Dag { dag_id } | Jump::DagCode { dag_id, .. }
            if !select_dag(s, &dag_id) =>
        {
            s.set_status(Level::Warn, format!("DAG {dag_id} is not loaded yet"));
            Vec::new()
        }
        Jump::DagFailure { dag_id } => {
            let failure = match s.dags.failures.get(&dag_id) {
                Some(Ok(f)) => Some((f.run_id.clone(), f.task_id.clone(), f.try_number)),
                _ => None,
            };
            let Some((run_id, task_id, try_number)) = failure else {
                // The failing task is not read yet: the DAG's runs.
                arrive(s, Tab::Dags, Some(DagLevel::Runs));
                return super::dags::enter(s);
            };
            open_log(s, dag_id, run_id, task_id, try_number)
        }
        Jump::Dag { .. } => {
            arrive(s, Tab::Dags, Some(DagLevel::List));
            Vec::new()
        }
        Jump::DagCode { line, .. } => {
            arrive(s, Tab::Dags, Some(DagLevel::List));
            let fx = super::dags::source_view::open(s, Some(line));
            if s.dags.level() == DagLevel::Source {
                arrive(s, Tab::Dags, Some(DagLevel::Source));
            }
            fx
        }
        Jump::Dags => {
            s.dags.level = Some(DagLevel::List);
            arrive(s, Tab::Dags, Some(DagLevel::List));
            Vec::new()
        }
        Jump::Partitions { table } | Jump::Snapshots { table } | Jump::Table { table }
            if !select_table(s, &table) =>
        {
            s.set_status(Level::Warn, format!("{table} is not listed"));
            Vec::new()
        }
        Jump::Partitions { .. } => {
            arrive(s, Tab::Partitions, None);
            super::partitions::load(s, false)
        }
        Jump::Snapshots { .. } => {
            arrive(s, Tab::Snapshots, None);
            super::snapshots::load(s, false)
        }
        Jump::Table { table } => {
            arrive(s, Tab::Tables, None);
            s.popup = Some(Popup::Health(table));
            Vec::new()
        }
    }
}

/// A task's log on the DAGs tab, with its run and tasks behind it for Esc.
fn open_log(
    s: &mut State,
    dag_id: String,
    run_id: String,
    task_id: String,
    try_number: u32,
) -> Vec<Effect> {
    if s.dags.dag_id.as_deref() != Some(&dag_id) {
        s.dags.runs.clear();
        s.dags.runs_grid = Grid::default();
    }
    if s.dags.run_id.as_deref() != Some(&run_id) {
        s.dags.tasks.clear();
        s.dags.tasks_grid = Grid::default();
    }
    s.dags.dag_id = Some(dag_id.clone());
    s.dags.run_id = Some(run_id.clone());
    s.dags.level = Some(DagLevel::Log);
    s.dags.runs_load = Load::Loading;
    s.dags.tasks_load = Load::Loading;
    s.dags.log_load = Load::Loading;
    arrive(s, Tab::Dags, Some(DagLevel::Log));
    vec![
        Effect::LoadRuns {
            dag_id: dag_id.clone(),
        },
        Effect::LoadTasks {
            dag_id: dag_id.clone(),
            run_id: run_id.clone(),
        },
        Effect::LoadLog {
            dag_id,
            run_id,
            task_id,
            try_number,
        },
    ]
}

/// Esc where a jump arrived (nothing else to clear there): back to the Triage tab.
pub fn back(s: &mut State) -> bool {
    let Some(j) = s.triage.jumped else {
        return false;
    };
    let here = s.tab == j.tab && j.dag_level.is_none_or(|l| s.dags.level() == l);
    if !here {
        if s.tab != j.tab {
            s.triage.jumped = None;
        }
        return false;
    }
    let filter = s.grid().is_some_and(|g| !g.filter.is_empty());
    let log_search = s.tab == Tab::Dags
        && (s.dags.log.as_ref().is_some_and(|l| !l.search.is_empty())
            || s.dags.source.as_ref().is_some_and(|v| !v.search.is_empty()));
    if filter || log_search {
        return false;
    }
    s.triage.jumped = None;
    s.tab = Tab::Triage;
    true
}

#[cfg(test)]
pub(crate) mod tests;
