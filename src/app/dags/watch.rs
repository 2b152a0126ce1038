//! Watch the run floe triggered to its end: its state, running task and elapsed time in
//! the status line (and above the Triage list), then, when it ends, the tables its DAG
//! maintains read again at once and what changed said in one line. One run at a time:
//! a newer trigger replaces the watch.

use chrono::{DateTime, Utc};

use crate::airflow::{DagRun, TaskInstance, TaskState};
use crate::app::action::Effect;
use crate::app::state::{Level, State};
use crate::fmt::{human_duration, thousands};
use crate::lakehouse::model::{TableRef, TableStats};

/// How often the runtime asks Airflow about the watched run.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(2);

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
    /// The one-line outcome once the run ended and the tables were read again.
    pub outcome: Option<String>,
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
        .map(|t| {
            (
                t.clone(),
                files(s.tables.row(t).and_then(|r| r.stats.as_ref())),
            )
        })
        .collect();
    s.dags.watch = Some(Watch {
        dag_id: dag_id.to_string(),
        run_id: run_id.to_string(),
        tables: tables.clone(),
        before,
        since: s.now,
        run: None,
        running_task: None,
        outcome: None,
    });
    vec![Effect::WatchRun {
        dag_id: dag_id.to_string(),
        run_id: run_id.to_string(),
        tables,
    }]
}

/// The run as Airflow has it now (and, once it ended, the tables read again).
pub fn on_progress(
    s: &mut State,
    run_id: &str,
    result: Result<(DagRun, Vec<TaskInstance>), String>,
    reread: Option<Vec<(TableRef, Result<TableStats, String>)>>,
) {
    let now = s.now;
    let Some(w) = s.dags.watch.as_mut().filter(|w| w.run_id == run_id) else {
        return;
    };
    match result {
        Ok((run, tasks)) => {
            w.running_task = tasks
                .iter()
                .find(|t| t.state == Some(TaskState::Running))
                .map(|t| t.task_id.clone());
            w.run = Some(run);
        }
        Err(e) => {
            let line = format!("watching {} {run_id}: {e}", w.dag_id);
            s.set_status(Level::Error, line);
            return;
        }
    }
    let Some(reread) = reread else {
        let line = w.line(now);
        s.set_status(Level::Info, line);
        return;
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
    let h = crate::health::evaluate(st, None, cfg, now);
    let waiting = h
        .findings
        .iter()
        .any(|f| f.rule.waits_for_compaction() && f.severity > crate::health::Severity::Info);
    if waiting {
        format!(
            "{files}; {} small files still waiting",
            thousands(st.small_files)
        )
    } else {
        format!("{files}; small files no longer waiting")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::airflow::{DagRunState, RunType};
    use crate::app::testing::dags::with_dags;
    use crate::app::testing::{healthy_stats, tref};

    fn run(state: DagRunState, secs: i64) -> DagRun {
        let t0 = crate::app::testing::t0();
        DagRun {
            dag_id: "compact_documents".into(),
            run_id: "manual__1".into(),
            state,
            run_type: RunType::Manual,
            logical_date: None,
            run_after: Some(t0),
            data_interval_start: None,
            data_interval_end: None,
            queued_at: Some(t0),
            start_date: Some(t0),
            end_date: (secs > 0).then(|| t0 + chrono::Duration::seconds(secs)),
            duration: None,
            triggered_by: None,
            external_trigger: None,
            note: None,
        }
    }

    #[test]
    fn a_triggered_run_is_followed_then_its_table_read_again() {
        let mut s = with_dags();
        let docs = tref("zoning", "documents");
        let before = s.tables.row(&docs).unwrap().stats.clone().unwrap();
        let fx = start(&mut s, "compact_documents", "manual__1");
        assert_eq!(
            fx,
            vec![Effect::WatchRun {
                dag_id: "compact_documents".into(),
                run_id: "manual__1".into(),
                tables: vec![docs.clone()]
            }]
        );
        s.now += chrono::Duration::seconds(80);
        on_progress(
            &mut s,
            "manual__1",
            Ok((run(DagRunState::Running, 0), vec![])),
            None,
        );
        let st = s.status.clone().unwrap().text;
        assert_eq!(st, "watching compact_documents manual__1: running, 1m");
        let mut after = healthy_stats();
        after.data_files = 75;
        on_progress(
            &mut s,
            "manual__1",
            Ok((run(DagRunState::Success, 130), vec![])),
            Some(vec![(docs.clone(), Ok(after))]),
        );
        let st = s.status.clone().unwrap().text;
        assert_eq!(
            st,
            format!(
                "compact_documents manual__1 succeeded in 2m; documents {} → 75 files; small files no longer waiting",
                thousands(before.data_files)
            )
        );
        assert_eq!(
            s.tables
                .row(&docs)
                .unwrap()
                .stats
                .as_ref()
                .unwrap()
                .data_files,
            75
        );
        // Another run's answer changes nothing.
        on_progress(&mut s, "other", Err("x".into()), None);
        assert_eq!(s.status.clone().unwrap().text, st);
    }
}
