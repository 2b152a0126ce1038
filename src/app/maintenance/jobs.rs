//! Maintenance jobs: plans being run, with the state of each statement.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::fmt::{human_bytes, human_duration, thousands};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::plan::Plan;
use crate::mutation::audit::AuditError;
use crate::mutation::contention::Writers;
use crate::mutation::run::{RunError, StepEvent, StepOutcome};
use crate::trino::QueryProgress;

#[derive(Clone, Debug, PartialEq)]
pub enum StepStatus {
    Pending,
    Running(Option<QueryProgress>),
    Done(StepOutcome),
    Failed(StepOutcome),
    Cancelled,
    /// Not run because an earlier statement failed or was cancelled.
    Skipped,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: u64,
    pub plan: Plan,
    pub steps: Vec<StepStatus>,
    pub started: DateTime<Utc>,
    pub finished: Option<DateTime<Utc>>,
    /// Why it stopped early, when it did.
    pub error: Option<RunError>,
    /// The profile it was started on: it keeps that connection across a profile switch.
    pub profile: String,
    /// A record of it that could not be written to the audit log.
    pub audit_error: Option<AuditError>,
    /// The operator cancelled it (`c`): a cancel that lands between two statements stops
    /// the queue without cancelling a query, and is still a cancel, not a failure.
    pub cancel_requested: bool,
}

impl Job {
    pub fn new(id: u64, plan: Plan, now: DateTime<Utc>) -> Job {
        let steps = vec![StepStatus::Pending; plan.steps.len()];
        Job {
            id,
            plan,
            steps,
            started: now,
            finished: None,
            error: None,
            profile: String::new(),
            audit_error: None,
            cancel_requested: false,
        }
    }

    pub fn running(&self) -> bool {
        self.finished.is_none()
    }

    pub fn apply(&mut self, ev: StepEvent) {
        match ev {
            StepEvent::Started { step } => {
                if let Some(s) = self.steps.get_mut(step) {
                    *s = StepStatus::Running(None);
                }
            }
            StepEvent::Progress { step, progress } => {
                if let Some(s) = self.steps.get_mut(step) {
                    *s = StepStatus::Running(Some(progress));
                }
            }
            StepEvent::AuditFailed { error, .. } => self.audit_error = Some(error),
            StepEvent::Finished { step, outcome } => {
                if let Some(s) = self.steps.get_mut(step) {
                    *s = if outcome.ok {
                        StepStatus::Done(outcome)
                    } else if outcome.cancelled {
                        StepStatus::Cancelled
                    } else {
                        StepStatus::Failed(outcome)
                    };
                }
            }
        }
    }

    pub fn finish(&mut self, now: DateTime<Utc>, error: Option<RunError>) {
        self.finished = Some(now);
        self.error = error;
        for s in &mut self.steps {
            if matches!(s, StepStatus::Pending | StepStatus::Running(_)) {
                *s = StepStatus::Skipped;
            }
        }
    }

    /// It ended because it was cancelled: a statement was cancelled on Trino, or the
    /// operator's cancel stopped the queue between two statements (a statement that
    /// failed on its own before the cancel reached it is a failure).
    pub fn cancelled(&self) -> bool {
        let any = |f: fn(&StepStatus) -> bool| self.steps.iter().any(f);
        self.error.is_some()
            && (any(|s| matches!(s, StepStatus::Cancelled))
                || (self.cancel_requested && !any(|s| matches!(s, StepStatus::Failed(_)))))
    }

    pub fn done_steps(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, StepStatus::Done(_)))
            .count()
    }

    /// (files before, files after) over the steps that re-read their partition.
    pub fn files_before_after(&self) -> Option<(u64, u64)> {
        let mut any = false;
        let (mut b, mut a) = (0, 0);
        for (st, step) in self.steps.iter().zip(&self.plan.steps) {
            if let StepStatus::Done(o) = st
                && let Some(after) = o.files_after
            {
                any = true;
                b += step.files;
                a += after;
            }
        }
        any.then_some((b, a))
    }

    /// The running step and its progress.
    pub fn current(&self) -> Option<(usize, Option<&QueryProgress>)> {
        self.steps.iter().enumerate().find_map(|(i, s)| match s {
            StepStatus::Running(p) => Some((i, p.as_ref())),
            _ => None,
        })
    }

    /// One line for the status area; a failed audit write is said first.
    pub fn line(&self, now: DateTime<Utc>) -> String {
        match &self.audit_error {
            Some(e) => format!("AUDIT LOG FAILED ({e}) · {}", self.progress_line(now)),
            None => self.progress_line(now),
        }
    }

    fn progress_line(&self, now: DateTime<Utc>) -> String {
        let name = format!("{} {}", self.plan.procedure.name(), self.plan.table.table);
        let n = self.steps.len();
        if self.running() {
            let elapsed = human_duration((now - self.started).num_seconds());
            return match self.current() {
                Some((i, p)) => {
                    let part = self.plan.steps[i].partition.as_deref().unwrap_or("table");
                    let stats = match p {
                        Some(p) => format!(
                            "{} {}/{} splits, {} rows",
                            p.percentage
                                .map(|x| format!("{x:.0}%"))
                                .unwrap_or_else(|| p.state.to_lowercase()),
                            p.completed_splits,
                            p.total_splits,
                            thousands(p.processed_rows)
                        ),
                        None => "starting".into(),
                    };
                    format!("▶ {name} {}/{n} {stats} · {part} · {elapsed}", i + 1)
                }
                None => format!("▶ {name} [{}/{n}] · {elapsed}", self.done_steps()),
            };
        }
        let mut files = self
            .files_before_after()
            .map(|(b, a)| format!(", files {} → {}", thousands(b), thousands(a)))
            .unwrap_or_default();
        // What Trino 481+ said the statements did (its metric rows), summed.
        let mut metrics = std::collections::BTreeMap::new();
        for st in &self.steps {
            if let StepStatus::Done(o) = st {
                for (k, v) in &o.metrics {
                    *metrics.entry(k.clone()).or_insert(0) += v;
                }
            }
        }
        if let Some(m) = crate::mutation::run::metrics_text(&metrics) {
            files.push_str(&format!(" ({m})"));
        }
        match &self.error {
            None => format!(
                "✓ {name}: {} of {n} statements done{files}",
                self.done_steps()
            ),
            Some(e) if self.cancelled() => {
                format!(
                    "⊘ {name} cancelled after {} of {n}{files}: {e}",
                    self.done_steps()
                )
            }
            Some(e) => format!(
                "✗ {name} failed after {} of {n}{files}: {e}",
                self.done_steps()
            ),
        }
    }

    /// A progress fraction 0..=1 for the gauge: statements done plus the running one's share.
    pub fn ratio(&self) -> f64 {
        let n = self.steps.len().max(1) as f64;
        let running = self
            .current()
            .and_then(|(_, p)| p.and_then(|p| p.percentage))
            .map(|x| x / 100.0)
            .unwrap_or(0.0);
        ((self.done_steps() as f64 + running) / n).clamp(0.0, 1.0)
    }
}

/// One line per statement, for the queue popup.
pub fn step_line(job: &Job, i: usize) -> String {
    let step = &job.plan.steps[i];
    let what = step.partition.clone().unwrap_or_else(|| "table".into());
    match &job.steps[i] {
        StepStatus::Pending => format!(
            "· {what}: pending ({} small files, {})",
            step.small_files,
            human_bytes(step.bytes)
        ),
        StepStatus::Running(p) => format!(
            "▶ {what}: {}",
            p.as_ref()
                .map(|p| format!(
                    "{} {} splits {}/{}",
                    p.state,
                    p.percentage.map(|x| format!("{x:.0}%")).unwrap_or_default(),
                    p.completed_splits,
                    p.total_splits
                ))
                .unwrap_or_else(|| "starting".into())
        ),
        StepStatus::Done(o) => {
            let mut s = format!("✓ {what}");
            if let Some(a) = o.files_after {
                s.push_str(&format!(": files {} → {a}", step.files));
            }
            if let Some(r) = o.rows {
                s.push_str(&format!(", {r} rows"));
            }
            if let Some(m) = crate::mutation::run::metrics_text(&o.metrics) {
                s.push_str(&format!(", {m}"));
            }
            s.push_str(&format!(
                " ({:.1}s, {})",
                o.duration_ms as f64 / 1000.0,
                o.query_id.as_deref().unwrap_or("-")
            ));
            s
        }
        StepStatus::Failed(o) => match &o.error {
            Some(e) => format!("✗ {what}: {e}"),
            None => format!("✗ {what}: failed"),
        },
        StepStatus::Cancelled => format!("⊘ {what}: cancelled"),
        StepStatus::Skipped => format!("- {what}: not run"),
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Jobs {
    pub list: Vec<Job>,
    pub next_id: u64,
    /// Writes of other clients found running on a table (its maintenance DAG, a
    /// colleague's floe, a cron), and when they were read.
    pub elsewhere: BTreeMap<TableRef, (DateTime<Utc>, Writers)>,
}

/// How long a write found running elsewhere is believed without being read again.
pub const ELSEWHERE_FOR: chrono::Duration = chrono::Duration::minutes(3);

impl Jobs {
    /// `compact_documents, 40 %`: who else rewrites `t`, as last read (within
    /// [`ELSEWHERE_FOR`]).
    pub fn running_elsewhere(&self, t: &TableRef, now: DateTime<Utc>) -> Option<String> {
        self.elsewhere
            .get(t)
            .filter(|(at, w)| now - *at <= ELSEWHERE_FOR && !w.none())
            .map(|(_, w)| w.short())
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut Job> {
        self.list.iter_mut().find(|j| j.id == id)
    }

    pub fn running_on(&self, t: &TableRef) -> Option<&Job> {
        self.list.iter().find(|j| j.running() && &j.plan.table == t)
    }

    /// The job the status area shows: a running one, else the latest for a short while.
    pub fn visible(&self, now: DateTime<Utc>) -> Option<&Job> {
        self.list.iter().rev().find(|j| j.running()).or_else(|| {
            self.list
                .last()
                .filter(|j| j.finished.is_some_and(|f| (now - f).num_seconds() < 30))
        })
    }
}
