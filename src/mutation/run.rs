//! Running a plan: statements one at a time (never two mutations on one table at once),
//! progress from Trino's stats, cancellable, stop at the first failure, re-read the
//! partitions an optimize rewrote (only those), audit every statement.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::audit::{Action, AuditError, Outcome, Record, RunContext};
use super::commit::CommitFailure;
use super::contention::{self, Others};
use crate::lakehouse::model::TableRef;
use crate::lakehouse::plan::{Plan, Procedure};
use crate::lakehouse::queries::Lakehouse;
use crate::trino::{QueryOptions, QueryProgress, TrinoError};

#[derive(Clone, Debug, PartialEq)]
pub struct StepOutcome {
    pub ok: bool,
    pub cancelled: bool,
    pub query_id: Option<String>,
    pub error: Option<StepError>,
    /// `rows` / updateCount (Trino ≤ 480).
    pub rows: Option<i64>,
    /// `metric_name` / `metric_value` (Trino 481+, and coordinator procedures 478+).
    pub metrics: BTreeMap<String, i64>,
    pub duration_ms: u64,
    /// Data files of the partition after the statement, when re-read.
    pub files_after: Option<u64>,
    pub small_after: Option<u64>,
}

/// The metric rows an optimize answers from Trino 481 (`metric_name`, `metric_value`).
pub const REWRITTEN_DATA_FILES: &str = "rewritten_data_files_count";
pub const ADDED_DATA_FILES: &str = "added_data_files_count";
pub const REMOVED_DELETE_FILES: &str = "removed_delete_files_count";

/// What a procedure's metric rows say it did, in words: for an optimize "rewrote 214 data
/// files into 107" (", removed 3 delete files" when it did), any other metric by its name;
/// `None` when there are none (Trino before 481 answers no row).
pub fn metrics_text(metrics: &BTreeMap<String, i64>) -> Option<String> {
    if metrics.is_empty() {
        return None;
    }
    let files = |n: i64, what: &str| {
        format!(
            "{} {what}{}",
            crate::fmt::thousands(n.max(0) as u64),
            if n == 1 { "" } else { "s" }
        )
    };
    let mut parts = Vec::new();
    let mut said = Vec::new();
    if let (Some(r), Some(a)) = (
        metrics.get(REWRITTEN_DATA_FILES),
        metrics.get(ADDED_DATA_FILES),
    ) {
        parts.push(format!(
            "rewrote {} into {}",
            files(*r, "data file"),
            crate::fmt::thousands((*a).max(0) as u64)
        ));
        said.extend([REWRITTEN_DATA_FILES, ADDED_DATA_FILES]);
    }
    if let Some(d) = metrics.get(REMOVED_DELETE_FILES) {
        if *d > 0 {
            parts.push(format!("removed {}", files(*d, "delete file")));
        }
        said.push(REMOVED_DELETE_FILES);
    }
    for (k, v) in metrics {
        if !said.contains(&k.as_str()) {
            parts.push(format!("{k} {v}"));
        }
    }
    Some(parts.join(", "))
}

/// How a running plan is stopped: cancelled by the operator (`c`, ctrl-c, quitting with
/// `y`), or interrupted because floe was told to stop (SIGTERM, SIGHUP). Both cancel the
/// running statement on Trino; the audit log says which.
#[derive(Clone, Debug, Default)]
pub struct Stop {
    token: CancellationToken,
    interrupted: Arc<AtomicBool>,
}

impl Stop {
    pub fn new() -> Stop {
        Stop::default()
    }

    pub fn cancel(&self) {
        self.token.cancel();
    }

    pub fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.token.cancel();
    }

    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// The audit outcome of a statement stopped this way.
    pub fn outcome(&self) -> Outcome {
        if self.interrupted.load(Ordering::SeqCst) {
            Outcome::Interrupted
        } else {
            Outcome::Cancelled
        }
    }
}

impl From<CancellationToken> for Stop {
    fn from(token: CancellationToken) -> Stop {
        Stop {
            token,
            interrupted: Arc::default(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum StepEvent {
    Started {
        step: usize,
    },
    Progress {
        step: usize,
        progress: QueryProgress,
    },
    Finished {
        step: usize,
        outcome: StepOutcome,
    },
    /// A record of the step could not be written to the audit log.
    AuditFailed {
        step: usize,
        error: AuditError,
    },
}

/// Why a statement did not succeed: Trino's error, and what a failed commit means for the
/// table (said after it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{trino}{}", commit.map(|c| format!(": {}", c.meaning())).unwrap_or_default())]
pub struct StepError {
    pub trino: TrinoError,
    pub commit: Option<CommitFailure>,
}

impl From<TrinoError> for StepError {
    fn from(trino: TrinoError) -> StepError {
        StepError {
            commit: CommitFailure::of(&trino),
            trino,
        }
    }
}

/// Why a plan stopped before its end.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// Read-only: every statement audited as refused, none sent.
    #[error("read-only: refusing to run {procedure} on {table}")]
    ReadOnly {
        procedure: &'static str,
        table: TableRef,
    },
    /// Another plan runs on the table: one at a time per table.
    #[error("a maintenance statement is already running on {0}; one at a time per table")]
    Busy(TableRef),
    #[error("internal lock poisoned")]
    Poisoned,
    /// Stopped between statements: `step` (1-based) of `of` was never sent, nor the rest.
    #[error("cancelled before step {step} of {of}; {} remaining statement(s) not run", of + 1 - step)]
    CancelledBefore { step: usize, of: usize },
    /// A statement's `started` record could not be written, so it was not sent.
    #[error("not run: cannot write the {0} (no statement is sent unaudited)")]
    Unaudited(AuditError),
    /// A statement failed or was stopped; `remaining`: the statements after it, not run.
    #[error("{error}{}", not_run(*remaining))]
    Step {
        step: usize,
        error: Box<StepError>,
        remaining: usize,
    },
    /// Another write runs on the table (any client), found before a statement was sent:
    /// that statement and the rest were not sent.
    #[error("{0}")]
    Contended(super::contention::Contended),
    /// Whether another write runs on the table could not be read before a statement.
    #[error("{0}")]
    Unsure(super::contention::Unknown),
    /// floe itself failed while running it (a panic: a bug).
    #[error("internal error: {0} (a bug in floe; details in floe.log)")]
    Internal(String),
}

fn not_run(remaining: usize) -> String {
    if remaining == 0 {
        String::new()
    } else {
        format!("; {remaining} remaining statement(s) not run")
    }
}

/// A table on one cluster: the coordinator's URL (the run's audit target) and the table.
type OnCluster = (String, TableRef);

/// Tables with a mutation running, process-wide, each on its cluster: a second plan on
/// the same table of the same cluster is refused rather than queued behind the first's
/// back (`floe --all` runs every cluster's plans in one process, and two clusters may
/// hold tables of one name).
fn busy() -> &'static Mutex<HashSet<OnCluster>> {
    static BUSY: std::sync::OnceLock<Mutex<HashSet<OnCluster>>> = std::sync::OnceLock::new();
    BUSY.get_or_init(|| Mutex::new(HashSet::new()))
}

struct Claim(OnCluster);

impl Drop for Claim {
    fn drop(&mut self) {
        if let Ok(mut b) = busy().lock() {
            b.remove(&self.0);
        }
    }
}

/// Run every step of `plan` in order. Returns the outcomes of the steps that ran; the
/// error says why it stopped early (refused, busy, failed, cancelled).
pub async fn run_plan(
    lake: &Lakehouse,
    plan: &Plan,
    ctx: &RunContext,
    cancel: CancellationToken,
    on_event: &(dyn Fn(StepEvent) + Send + Sync),
) -> Result<Vec<StepOutcome>, RunError> {
    run_plan_until(lake, plan, ctx, &Stop::from(cancel), on_event).await
}

/// [`run_plan`], stopped by `stop`. Each statement has a `started` audit record before it
/// is sent (a statement whose record cannot be written is not sent) and an outcome record
/// with its query id after.
pub async fn run_plan_until(
    lake: &Lakehouse,
    plan: &Plan,
    ctx: &RunContext,
    stop: &Stop,
    on_event: &(dyn Fn(StepEvent) + Send + Sync),
) -> Result<Vec<StepOutcome>, RunError> {
    run_plan_watched(lake, plan, ctx, &Others::default(), stop, on_event).await
}

/// [`run_plan_until`], asking before each statement whether another write runs on the
/// table (the coordinator's running statements, and `others`' maintenance DAGs): one found
/// refuses that statement and the rest, audited `refused`.
pub async fn run_plan_watched(
    lake: &Lakehouse,
    plan: &Plan,
    ctx: &RunContext,
    others: &Others,
    stop: &Stop,
    on_event: &(dyn Fn(StepEvent) + Send + Sync),
) -> Result<Vec<StepOutcome>, RunError> {
    let run = Run {
        lake,
        plan,
        ctx,
        stop,
        on_event,
    };
    if ctx.readonly {
        return Err(run.refuse_read_only());
    }
    let _claim = run.claim()?;
    let n = plan.steps.len();
    let mut outcomes = Vec::new();
    for i in 0..n {
        if stop.token().is_cancelled() {
            let why = format!("{} before step {} of {n}", stop.outcome(), i + 1);
            run.cut_short(i, &why);
            return Err(RunError::CancelledBefore { step: i + 1, of: n });
        }
        run.no_other_writer(i, others).await?;
        run.audit_start(i)?;
        let outcome = run.step(i).await;
        (on_event)(StepEvent::Finished {
            step: i,
            outcome: outcome.clone(),
        });
        let failed = (!outcome.ok).then(|| (outcome.cancelled, outcome.error.clone()));
        outcomes.push(outcome);
        if let Some((cancelled, Some(error))) = failed {
            let remaining = n - i - 1;
            if remaining > 0 {
                let how = if cancelled {
                    format!("step {} of {n} was {}", i + 1, stop.outcome())
                } else {
                    format!("step {} of {n} did not succeed", i + 1)
                };
                run.cut_short(i + 1, &how);
            }
            return Err(RunError::Step {
                step: i,
                error: Box::new(error),
                remaining,
            });
        }
    }
    Ok(outcomes)
}

/// One plan being run: what every step's audit record and event needs.
struct Run<'a> {
    lake: &'a Lakehouse,
    plan: &'a Plan,
    ctx: &'a RunContext,
    stop: &'a Stop,
    on_event: &'a (dyn Fn(StepEvent) + Send + Sync),
}

impl Run<'_> {
    /// An audit record of step `step` (or of the plan, `None`) with `outcome`.
    fn record(&self, step: Option<usize>, outcome: Outcome, error: Option<String>) -> Record {
        let s = step.and_then(|i| self.plan.steps.get(i));
        let mut r = Record::now(
            &self.ctx.profile,
            &self.ctx.user,
            &self.ctx.target,
            Action::from(&self.plan.procedure),
            s.map(|s| s.sql.as_str()).unwrap_or(""),
        );
        r.table = Some(self.plan.table.to_string());
        r.partition = s.and_then(|s| s.partition.clone());
        r.outcome = outcome;
        r.error = error;
        r
    }

    /// Read-only: every statement is audited as refused, none is sent.
    fn refuse_read_only(&self) -> RunError {
        let e = RunError::ReadOnly {
            procedure: self.plan.procedure.name(),
            table: self.plan.table.clone(),
        };
        for i in 0..self.plan.steps.len() {
            let _ =
                self.ctx
                    .audit
                    .append(&self.record(Some(i), Outcome::Refused, Some(e.to_string())));
        }
        e
    }

    /// The table, for this plan alone while it runs (a second plan on it is refused).
    fn claim(&self) -> Result<Claim, RunError> {
        let mut b = busy().lock().map_err(|_| RunError::Poisoned)?;
        let key = (self.ctx.target.clone(), self.plan.table.clone());
        if !b.insert(key.clone()) {
            let e = RunError::Busy(self.plan.table.clone());
            let _ =
                self.ctx
                    .audit
                    .append(&self.record(Some(0), Outcome::Refused, Some(e.to_string())));
            return Err(e);
        }
        Ok(Claim(key))
    }

    /// Before step `i` is sent: nobody else writes the table (any client). One that does,
    /// or a record that cannot be read, refuses the step (audited) and the rest.
    async fn no_other_writer(&self, i: usize, others: &Others) -> Result<(), RunError> {
        let n = self.plan.steps.len();
        let token = self.stop.token();
        let found = tokio::select! {
            r = contention::writers(self.lake, others, &self.plan.table) => r,
            _ = token.cancelled() => {
                let why = format!("{} before step {} of {n}", self.stop.outcome(), i + 1);
                self.cut_short(i, &why);
                return Err(RunError::CancelledBefore { step: i + 1, of: n });
            }
        };
        let e = match found {
            Ok(w) if w.none() => return Ok(()),
            Ok(w) => RunError::Contended(contention::Contended(Box::new(w))),
            Err(u) => RunError::Unsure(u),
        };
        let _ = self
            .ctx
            .audit
            .append(&self.record(Some(i), Outcome::Refused, Some(e.to_string())));
        if i + 1 < n {
            self.cut_short(i + 1, &format!("step {} of {n} was refused", i + 1));
        }
        Err(e)
    }

    /// A plan cut short (cancelled, interrupted, failed) leaves one record that says how
    /// many of its statements were never sent, and which.
    fn cut_short(&self, from: usize, why: &str) {
        let n = self.plan.steps.len();
        let rest = &self.plan.steps[from..];
        let mut r = self.record(
            None,
            Outcome::NotRun,
            Some(format!("{} of {n} statement(s) not run: {why}", rest.len())),
        );
        r.statement = rest
            .iter()
            .map(|s| s.sql.as_str())
            .collect::<Vec<_>>()
            .join(";\n");
        if let Err(e) = self.ctx.audit.append(&r) {
            tracing::error!(error = %e, "cannot write the audit log");
            (self.on_event)(StepEvent::AuditFailed {
                step: from.min(n.saturating_sub(1)),
                error: e,
            });
        }
    }

    /// The `started` record before a statement is sent: no statement is sent unaudited.
    fn audit_start(&self, i: usize) -> Result<(), RunError> {
        let step = &self.plan.steps[i];
        let mut begun = self.record(Some(i), Outcome::Started, None);
        begun.files_before = (step.files > 0).then_some(step.files);
        if let Err(e) = self.ctx.audit.append(&begun) {
            (self.on_event)(StepEvent::AuditFailed {
                step: i,
                error: e.clone(),
            });
            return Err(RunError::Unaudited(e));
        }
        (self.on_event)(StepEvent::Started { step: i });
        Ok(())
    }

    /// Step `i` sent and followed to its end, its outcome audited.
    async fn step(&self, i: usize) -> StepOutcome {
        let step = &self.plan.steps[i];
        let on_event = self.on_event;
        let started = Instant::now();
        let last_id: Arc<Mutex<Option<String>>> = Arc::default();
        let id2 = last_id.clone();
        let progress = move |p: &QueryProgress| {
            if let Ok(mut g) = id2.lock() {
                *g = Some(p.query_id.clone());
            }
            on_event(StepEvent::Progress {
                step: i,
                progress: p.clone(),
            });
        };
        let result = self
            .lake
            .client
            .execute(
                &step.sql,
                QueryOptions {
                    progress: Some(&progress),
                    cancel: Some(self.stop.token()),
                    // A compaction may run for hours; the operator cancels, not a timer.
                    deadline: Some(None),
                    session: self.plan.session.clone(),
                    mutation: true,
                },
            )
            .await;
        let duration_ms = started.elapsed().as_millis() as u64;
        let mut outcome = StepOutcome {
            ok: false,
            cancelled: false,
            query_id: last_id.lock().ok().and_then(|g| g.clone()),
            error: None,
            rows: None,
            metrics: BTreeMap::new(),
            duration_ms,
            files_after: None,
            small_after: None,
        };
        let mut rec = self.record(Some(i), Outcome::Succeeded, None);
        rec.duration_ms = duration_ms;
        rec.files_before = (step.files > 0).then_some(step.files);
        rec.bytes_before = (step.bytes > 0).then_some(step.bytes);
        match result {
            Ok(out) => {
                outcome.ok = true;
                outcome.query_id = Some(out.query_id.clone());
                match out.metrics() {
                    Some(m) => outcome.metrics = m,
                    None => {
                        outcome.rows = out
                            .update_count
                            .or_else(|| out.rows.first().and_then(|r| r.i64("rows")));
                    }
                }
                if let Procedure::Optimize { threshold } = &self.plan.procedure
                    && !step.targets.is_empty()
                    && let Ok((files, small)) = self
                        .lake
                        .recount_in_spec(&self.plan.table, step.spec_id, &step.targets, *threshold)
                        .await
                {
                    outcome.files_after = Some(files);
                    outcome.small_after = Some(small);
                }
            }
            Err(e) => {
                outcome.cancelled = matches!(e, TrinoError::Cancelled { .. });
                if let Some(id) = e.query_id().filter(|s| !s.is_empty()) {
                    outcome.query_id = Some(id.to_string());
                }
                let error = StepError::from(e);
                rec.outcome = if outcome.cancelled {
                    self.stop.outcome()
                } else if matches!(error.trino, TrinoError::MayHaveRun { .. })
                    || error.commit == Some(CommitFailure::Unknown)
                {
                    Outcome::MayHaveRun
                } else {
                    Outcome::Failed
                };
                rec.error = Some(error.to_string());
                outcome.error = Some(error);
            }
        }
        rec.query_id = outcome.query_id.clone();
        rec.rows = outcome.rows;
        rec.metrics = outcome.metrics.clone();
        rec.files_after = outcome.files_after;
        if let Err(e) = self.ctx.audit.append(&rec) {
            tracing::error!(error = %e, "cannot write the audit log");
            (self.on_event)(StepEvent::AuditFailed { step: i, error: e });
        }
        outcome
    }
}

#[cfg(test)]
mod tests;
