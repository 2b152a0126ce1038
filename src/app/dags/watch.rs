//! Watch the run floe triggered (or one already running for a table in trouble, seen in
//! its DAG's facts) to its end: its state, running task and elapsed time in
//! the status line (and above the Triage list), then, when it ends, the tables its DAG
//! maintains read again at once and what changed said in one line. One run at a time:
//! a newer trigger replaces the watch.
//!
//! While it runs, Enter on its incident opens the running task's log, read again at each
//! poll (its tail). When it ended and the coordinator's record held a query that suffered
//! on its table, the next runs of that query are shown as they come (nothing is rerun).
//!
//! A watch ends too when Airflow cannot answer about its run: at once on a 404 (the run
//! was deleted, or is not on this Airflow), after [`MAX_ERRORS`] failed polls in a row
//! otherwise. Its progress is an INFO line that never covers a warning said since.

use chrono::{DateTime, Utc};

use crate::airflow::{DagRun, TaskInstance, TaskState};
use crate::app::action::Effect;
use crate::app::state::{Level, State, StatusKind};
use crate::fmt::{human_duration, thousands};
use crate::lakehouse::model::{TableRef, TableStats};

/// How often the runtime asks Airflow about the watched run.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// How many polls in a row may fail before a watch gives up (20 s at [`POLL`]).
pub const MAX_ERRORS: u32 = 10;

/// Whether a watch stops at `e`, its `errors`-th failed poll in a row: a run Airflow
/// answers 404 about never comes back; any other error gets [`MAX_ERRORS`] polls.
/// Decided the same way by the runtime's poll loop and by the state it reports to.
pub fn gives_up(errors: u32, e: &crate::airflow::AirflowError) -> bool {
    e.is_not_found() || errors >= MAX_ERRORS
}

#[derive(Clone, Debug, PartialEq)]
pub struct Watch {
    pub dag_id: String,
    pub run_id: String,
    pub tables: Vec<TableRef>,
    /// Each table's data and small files when the run was triggered.
    pub before: Vec<(TableRef, Option<(u64, u64)>)>,
    pub since: DateTime<Utc>,
    pub run: Option<DagRun>,
    pub running_task: Option<String>,
    /// The running task's try (its log's).
    pub running_try: Option<u32>,
    /// The one-line outcome once the run ended and the tables were read again.
    pub outcome: Option<String>,
    /// The query that suffered on a watched table when the watch began.
    pub query: Option<WatchedQuery>,
    /// Polls failed in a row (reset by an answer).
    pub errors: u32,
}

/// The query a watched table suffered: its later runs are the proof of the fix.
#[derive(Clone, Debug, PartialEq)]
pub struct WatchedQuery {
    pub table: TableRef,
    pub query_id: String,
    /// The statement, whitespace folded (`query_history::shape`).
    pub shape: String,
    /// `the dashboard query`
    pub who: String,
    pub elapsed_ms: u64,
    /// The splits it read, when the coordinator's record has them: the files a reader
    /// opens, the part of its cost a compaction changes whatever the coordinator's load.
    pub splits: Option<u64>,
}

impl Watch {
    /// `compact_documents manual__…: running, task compact, 1m20s`.
    pub fn line(&self, now: DateTime<Utc>) -> String {
        if let Some(o) = &self.outcome {
            return o.clone();
        }
        let state = self
            .run
            .as_ref()
            .map(|r| r.state.as_str().to_string())
            .unwrap_or_else(|| "queued".into());
        let start = self
            .run
            .as_ref()
            .and_then(|r| r.start_date)
            .unwrap_or(self.since);
        let mut s = format!("watching {} {}: {state}", self.dag_id, self.run_id);
        if let Some(t) = &self.running_task {
            s.push_str(&format!(", task {t}"));
        }
        s.push_str(&format!(
            ", {}",
            human_duration((now - start).num_seconds().max(0))
        ));
        s
    }
}

fn files(st: Option<&TableStats>) -> Option<(u64, u64)> {
    st.map(|s| (s.data_files, s.small_files))
}

/// A triggered run: watch it to its end.
pub fn start(s: &mut State, dag_id: &str, run_id: &str) -> Vec<Effect> {
    let tables: Vec<TableRef> = s
        .dags
        .mapping
        .iter()
        .filter(|(_, m)| m.dag_id == dag_id)
        .map(|(t, _)| t.clone())
        .collect();
    let before = tables
        .iter()
        .map(|t| (t.clone(), files(s.tables.row(t).and_then(|r| r.stats()))))
        .collect();
    let query = tables.iter().find_map(|t| suffered(s, t, None));
    s.dags.watch = Some(Watch {
        dag_id: dag_id.to_string(),
        run_id: run_id.to_string(),
        tables: tables.clone(),
        before,
        since: s.now,
        run: None,
        running_task: None,
        running_try: None,
        outcome: None,
        query,
        errors: 0,
    });
    vec![Effect::WatchRun {
        dag_id: dag_id.to_string(),
        run_id: run_id.to_string(),
        tables,
    }]
}

/// A run floe triggered, answered on the profile of `epoch`: watched when that is still
/// the profile on screen; after a switch its run id means nothing to this Airflow.
pub fn on_triggered(s: &mut State, dag_id: &str, run_id: &str, epoch: u64) -> Vec<Effect> {
    if epoch != s.conn.epoch {
        s.set_status(
            Level::Warn,
            format!("{dag_id} {run_id} was triggered on the profile left: not watched here"),
        );
        return Vec::new();
    }
    start(s, dag_id, run_id)
}

/// A run already queued or running, seen in a DAG's facts: watched like one floe
/// triggered when the DAG maintains a table floe shows in trouble (WARNING or worse) and
/// no other run is being watched. A run watched to its end is not watched again.
pub fn follow(s: &mut State, dag_id: &str, run_id: &str) -> Vec<Effect> {
    if s.dags
        .watch
        .as_ref()
        .is_some_and(|w| w.outcome.is_none() || w.run_id == run_id)
    {
        return Vec::new();
    }
    let troubled = s.dags.mapping.iter().any(|(t, m)| {
        m.dag_id == dag_id
            && s.tables
                .row(t)
                .and_then(|r| r.health.as_ref())
                .is_some_and(|h| h.status >= crate::health::Severity::Warning)
    });
    if !troubled {
        return Vec::new();
    }
    start(s, dag_id, run_id)
}

/// The slowest query the coordinator's record holds for `t` (as the incidents say it),
/// among those created before `until`.
fn suffered(s: &State, t: &TableRef, until: Option<DateTime<Utc>>) -> Option<WatchedQuery> {
    let Some((_, crate::app::query_history::QueryLoad::Loaded(q))) = s.queries.by_table.get(t)
    else {
        return None;
    };
    let w = crate::lakehouse::query_history::suffering_until(q.runs(), until)?;
    Some(WatchedQuery {
        table: t.clone(),
        query_id: w.run.query_id.clone(),
        shape: crate::lakehouse::query_history::shape(&w.run.query),
        who: crate::lakehouse::query_history::who(w.run),
        elapsed_ms: w.elapsed_ms,
        splits: w.run.splits,
    })
}

/// The watch `inc` is about: its DAG, or one of its tables.
pub fn concerns(w: &Watch, inc: &crate::health::incidents::Incident) -> bool {
    inc.dags.contains(&w.dag_id) || inc.tables.iter().any(|t| w.tables.contains(&t.table))
}

/// The watch shown in `inc`'s evidence: while the run runs, under the incident it
/// concerns (where Enter opens its running task's log); once it ended, under every
/// incident, until another run is triggered — a verified fix resolves the incident it was
/// started from, and its result (the run, the tables read again, the suffering query's
/// next runs) is the news, whichever incident the selection fell to.
pub fn shown_with<'a>(s: &'a State, inc: &crate::health::incidents::Incident) -> Option<&'a Watch> {
    let w = s.dags.watch.as_ref()?;
    (w.outcome.is_some() || concerns(w, inc)).then_some(w)
}

/// The running task of the watched run the selected incident is about: what Enter
/// opens (dag, run, task, try).
pub fn running_log(s: &State) -> Option<(String, String, String, u32)> {
    let w = s.dags.watch.as_ref().filter(|w| w.outcome.is_none())?;
    s.triage.selected().filter(|i| concerns(w, i))?;
    Some((
        w.dag_id.clone(),
        w.run_id.clone(),
        w.running_task.clone()?,
        w.running_try.unwrap_or(1),
    ))
}

/// The log on screen is the watched run's running task: read it again (its tail).
fn tail(s: &State) -> Option<Effect> {
    let w = s.dags.watch.as_ref().filter(|w| w.outcome.is_none())?;
    let v = s.dags.log.as_ref()?;
    let open = s.tab == crate::app::state::Tab::Dags && s.dags.level() == super::DagLevel::Log;
    (open
        && v.dag_id == w.dag_id
        && v.run_id == w.run_id
        && w.running_task.as_deref() == Some(v.task_id.as_str()))
    .then(|| Effect::LoadLog {
        dag_id: v.dag_id.clone(),
        run_id: v.run_id.clone(),
        task_id: v.task_id.clone(),
        try_number: v.try_number,
    })
}

/// A log read for the watched run while it runs is shown from its end.
pub fn is_tail(s: &State, dag_id: &str, run_id: &str) -> bool {
    s.dags
        .watch
        .as_ref()
        .is_some_and(|w| w.outcome.is_none() && w.dag_id == dag_id && w.run_id == run_id)
}

/// The runs of the watched query after the run ended: `the dashboard query on documents
/// since: 0.9s, 1.1s (before: 37s)`.
pub fn next_runs(s: &State) -> Option<String> {
    let w = s.dags.watch.as_ref()?;
    w.outcome.as_ref()?;
    let q = &query_of(s, w)?;
    let ended = w.run.as_ref().and_then(|r| r.end_date).unwrap_or(w.since);
    let Some((_, crate::app::query_history::QueryLoad::Loaded(h))) =
        s.queries.by_table.get(&q.table)
    else {
        return None;
    };
    let mut later: Vec<&crate::lakehouse::query_history::QueryRun> = h
        .runs()
        .iter()
        .filter(|r| {
            r.query_id != q.query_id
                && r.created.is_some_and(|c| c >= ended)
                && r.elapsed_ms.is_some()
                && crate::lakehouse::query_history::shape(&r.query) == q.shape
        })
        .collect();
    if later.is_empty() {
        return None;
    }
    later.sort_by_key(|r| r.created);
    let took: Vec<String> = later
        .iter()
        .take(5)
        .filter_map(|r| {
            r.elapsed_ms
                .map(crate::lakehouse::query_history::elapsed_text)
        })
        .collect();
    // The splits of the first run since, beside the symptom's: elapsed time moves with the
    // coordinator's load, the files a reader opens do not.
    let (now_splits, before_splits) = match (later[0].splits, q.splits) {
        (Some(a), Some(b)) => (
            format!("; {} splits", crate::fmt::thousands(a)),
            format!(", {} splits", crate::fmt::thousands(b)),
        ),
        _ => (String::new(), String::new()),
    };
    Some(format!(
        "{} on {} since the run: {}{now_splits} (before: {}{before_splits})",
        q.who,
        q.table.table,
        took.join(", "),
        crate::lakehouse::query_history::elapsed_text(q.elapsed_ms)
    ))
}

/// The tables whose query history the ended watch waits on for the next runs: its
/// query's, else (none was known yet) every table it watched.
pub fn query_tables(s: &State) -> Vec<TableRef> {
    let Some(w) = s.dags.watch.as_ref().filter(|w| w.outcome.is_some()) else {
        return Vec::new();
    };
    match query_of(s, w) {
        Some(q) => vec![q.table],
        None => w.tables.clone(),
    }
}

/// The query the watched run's tables suffered: the one known when the watch began,
/// else — their query history was being read again then — the slowest from before it,
/// once that history is in; without it the proof of the fix would never be shown.
fn query_of(s: &State, w: &Watch) -> Option<WatchedQuery> {
    w.query
        .clone()
        .or_else(|| w.tables.iter().find_map(|t| suffered(s, t, Some(w.since))))
}

/// The run as Airflow has it now (and, once it ended, the tables read again): the
/// open log of its running task read again, and once it ended the DAG's facts.
pub fn on_progress(
    s: &mut State,
    run_id: &str,
    result: Result<(DagRun, Vec<TaskInstance>), crate::airflow::AirflowError>,
    reread: Option<Vec<(TableRef, Result<TableStats, crate::trino::TrinoError>)>>,
) -> Vec<Effect> {
    let now = s.now;
    let Some(w) = s.dags.watch.as_mut().filter(|w| w.run_id == run_id) else {
        return Vec::new();
    };
    match result {
        Ok((run, tasks)) => {
            let running = tasks.iter().find(|t| t.state == Some(TaskState::Running));
            w.running_task = running.map(|t| t.task_id.clone());
            w.running_try = running.map(|t| t.try_number.max(1));
            w.run = Some(run);
            w.errors = 0;
        }
        Err(e) => {
            w.errors += 1;
            let mut line = format!("watching {} {run_id}: {e}", w.dag_id);
            if gives_up(w.errors, &e) {
                line = format!(
                    "stopped watching {} {run_id} after {} failed poll{}: {e}",
                    w.dag_id,
                    w.errors,
                    if w.errors == 1 { "" } else { "s" }
                );
                w.outcome = Some(line.clone());
            }
            s.set_status_of(StatusKind::Watch, Level::Error, line);
            return Vec::new();
        }
    }
    let Some(reread) = reread else {
        let line = w.line(now);
        s.set_status_quietly(StatusKind::Watch, line);
        return tail(s).into_iter().collect();
    };
    let w = w.clone();
    let mut parts = vec![ended(&w)];
    for (t, r) in reread {
        let before = w.before.iter().find(|(x, _)| *x == t).and_then(|(_, b)| *b);
        match r {
            Ok(st) => {
                parts.push(changed(&t.table, before, &st, &s.health, now));
                crate::app::tables::reread(s, &t, st);
            }
            Err(e) => parts.push(format!("{} not read again: {e}", t.table)),
        }
    }
    let line = parts.join("; ");
    let ok = w
        .run
        .as_ref()
        .is_some_and(|r| r.state == crate::airflow::DagRunState::Success);
    if let Some(x) = s.dags.watch.as_mut() {
        x.outcome = Some(line.clone());
    }
    s.set_status(if ok { Level::Warn } else { Level::Error }, line);
    // What the incidents say follows the run's end at once: the DAG's facts.
    s.dags
        .row(&w.dag_id)
        .map(|r| Effect::LoadDagFacts {
            generation: s.dags.generation,
            dag: Box::new(r.dag.clone()),
        })
        .into_iter()
        .collect()
}

/// `compact_documents manual__… succeeded in 2m10s`.
fn ended(w: &Watch) -> String {
    let r = w.run.as_ref();
    let state = match r.map(|r| &r.state) {
        Some(crate::airflow::DagRunState::Success) => "succeeded".to_string(),
        Some(crate::airflow::DagRunState::Failed) => "failed".to_string(),
        Some(other) => other.as_str().to_string(),
        None => "ended".to_string(),
    };
    let took = r
        .and_then(|r| match (r.start_date, r.end_date) {
            (Some(a), Some(b)) => Some((b - a).num_seconds().max(0)),
            _ => r.duration.map(|d| d.as_secs() as i64),
        })
        .map(|s| format!(" in {}", human_duration(s)))
        .unwrap_or_default();
    format!("{} {} {state}{took}", w.dag_id, w.run_id)
}

/// `documents 2,004 → 75 files; small files no longer waiting`.
fn changed(
    name: &str,
    before: Option<(u64, u64)>,
    st: &TableStats,
    cfg: &crate::health::HealthConfig,
    now: DateTime<Utc>,
) -> String {
    let files = match before {
        Some((b, _)) => format!(
            "{name} {} → {} files",
            thousands(b),
            thousands(st.data_files)
        ),
        None => format!("{name} {} files", thousands(st.data_files)),
    };
    if crate::health::evaluate(st, None, cfg, now).waits_for_compaction() {
        format!(
            "{files}; {} small files still waiting",
            thousands(st.small_files)
        )
    } else {
        format!("{files}; small files no longer waiting")
    }
}

#[cfg(test)]
mod tests;
