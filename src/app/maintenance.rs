//! Maintenance in the TUI: planning (`o`, `O`, `E`, `X`), the confirm popup, jobs (plans
//! being run) and their queue, cancelling.

pub mod confirm;
pub mod jobs;
pub mod quit;

pub use confirm::Confirm;
pub use jobs::{Job, Jobs, StepStatus, step_line};

use super::action::{Effect, MaintenanceKind};
use super::prompt::{Prompt, RetentionFor};
use super::state::{Level, Popup, State};
use crate::lakehouse::model::TableRef;
use crate::mutation::contention::{Unknown, Writers};
use crate::mutation::draft::{PlanDraft, PlanError};
use crate::mutation::run::{RunError, StepEvent};

/// Results for maintenance.
#[derive(Clone, Debug)]
pub enum MaintenanceMsg {
    /// A plan was drafted (or could not be) on the connection of the given epoch.
    PlanReady(u64, Result<PlanDraft, PlanError>),
    /// A statement of a job started, progressed or finished.
    Step { job: u64, event: StepEvent },
    /// A job ended: its run's own account of what failed and what was not run (the
    /// statements' Trino errors are on each step's `StepEvent`).
    Done {
        job: u64,
        result: Result<(), RunError>,
    },
    /// Who else writes a table now, as read for Triage.
    Writers {
        table: TableRef,
        result: Result<Writers, Unknown>,
    },
}

/// Maintenance messages: a drafted plan, a job's progress, a job's end.
pub fn update(s: &mut State, msg: MaintenanceMsg) -> Vec<Effect> {
    match msg {
        MaintenanceMsg::PlanReady(epoch, r) => {
            on_plan_ready(s, epoch, r);
            Vec::new()
        }
        MaintenanceMsg::Step { job, event } => {
            on_job_event(s, job, event);
            Vec::new()
        }
        MaintenanceMsg::Writers { table, result } => {
            match result {
                Ok(w) if w.none() => {
                    s.jobs.elsewhere.remove(&table);
                }
                Ok(w) => {
                    s.jobs.elsewhere.insert(table, (s.now, w));
                }
                // Not read this time: what was read before stands until it is stale.
                Err(e) => tracing::warn!(error = %e, "cannot read who else writes a table"),
            }
            Vec::new()
        }
        MaintenanceMsg::Done { job, result } => {
            let now = s.now;
            let profile = s.conn.profile.clone();
            let Some(j) = s.jobs.get_mut(job) else {
                return Vec::new();
            };
            j.finish(now, result.err());
            let line = j.line(now);
            let level = if j.audit_error.is_some() || (j.error.is_some() && !j.cancelled()) {
                Level::Error
            } else if j.cancelled() {
                Level::Warn
            } else {
                Level::Info
            };
            let table = j.plan.table.clone();
            if j.profile != profile {
                // Started on another profile: its tables are not the ones on screen.
                let on = format!("[profile {}] {line}", j.profile);
                s.set_status(level, on);
                return Vec::new();
            }
            s.set_status(level, line);
            after_mutation(s, &table)
        }
    }
}

fn on_plan_ready(s: &mut State, epoch: u64, r: Result<PlanDraft, PlanError>) {
    if epoch != s.conn.epoch {
        // Drafted on the profile before a switch: its coordinator is not this one.
        s.set_status(
            Level::Warn,
            "a plan drafted before the profile switch arrived: not shown (plan it again)",
        );
        return;
    }
    if let Err(PlanError::Contended(c)) = &r
        && let Some(t) = c.0.table.clone()
    {
        // Said on Triage too, instead of proposing `o` again.
        s.jobs.elsewhere.insert(t, (s.now, (*c.0).clone()));
    }
    match r.and_then(|draft| Ok(Confirm::new(draft, &s.health, epoch)?)) {
        Ok(c) if s.readonly => {
            s.set_status(
                Level::Error,
                format!("read-only: not running {}", c.plan.procedure.name()),
            );
        }
        Ok(_) if matches!(s.popup, Some(Popup::QuitJobs { .. })) => {
            s.set_status(Level::Warn, "a plan arrived while quitting: not shown");
        }
        Ok(c) if s.popup.is_some() => {
            // Replacing the open popup would hand its answer (a `y` meant for it) to
            // this plan.
            s.set_status(
                Level::Warn,
                format!(
                    "the plan for {} arrived while another popup was open: not shown (plan it again)",
                    c.plan.table
                ),
            );
        }
        Ok(c) => {
            // An open prompt stays open and keeps its keys: the popup takes an answer
            // only once it has been drawn with no prompt in front of it.
            s.status = None;
            // Why the plan covers what it covers (a table spread thin), beside it.
            if let Some(note) = c.draft.note.clone().filter(|n| !c.plan.notes.contains(n)) {
                s.set_status(Level::Info, note);
            }
            s.popup = Some(Popup::Confirm(Box::new(c)));
        }
        Err(e) => s.set_status(Level::Error, e.to_string()),
    }
}

fn on_job_event(s: &mut State, job: u64, event: StepEvent) {
    if let StepEvent::AuditFailed { error, .. } = &event {
        s.set_status(Level::Error, format!("AUDIT LOG FAILED: {error}"));
    }
    if let StepEvent::Finished { step, outcome } = &event
        && let Some(j) = s.jobs.list.iter().find(|j| j.id == job)
    {
        let what = j
            .plan
            .steps
            .get(*step)
            .and_then(|x| x.partition.clone())
            .unwrap_or_else(|| j.plan.table.to_string());
        let name = j.plan.procedure.name();
        if outcome.ok {
            if s.partitions.detail.table.as_ref() == Some(&j.plan.table)
                && let Some(st) = j.plan.steps.get(*step)
            {
                for target in &st.targets {
                    s.partitions.marks.remove(&(st.spec_id, target.clone()));
                }
            }
            let files = match (outcome.files_after, j.plan.steps.get(*step)) {
                (Some(a), Some(st)) => format!(": files {} → {a}", st.files),
                _ => String::new(),
            };
            s.set_status(Level::Info, format!("{name} {what}{files}"));
        } else if !outcome.cancelled {
            s.set_status(
                Level::Error,
                format!(
                    "{name} {what} failed: {}",
                    outcome
                        .error
                        .as_ref()
                        .map(ToString::to_string)
                        .unwrap_or_default()
                ),
            );
        }
    }
    if let Some(j) = s.jobs.get_mut(job) {
        j.apply(event);
    }
}

/// Re-read what a finished job changed: the table's stats (its row), its partitions and
/// snapshots when they are loaded (the new `replace` appears).
fn after_mutation(s: &mut State, table: &TableRef) -> Vec<Effect> {
    let mut fx = Vec::new();
    fx.extend(super::tables::reload_row(s, table));
    if s.partitions.detail.table.as_ref() == Some(table) {
        fx.extend(super::partitions::reload(s, table.clone()));
    }
    if s.snapshots.detail.table.as_ref() == Some(table) {
        fx.extend(super::snapshots::reload(s, table.clone()));
    }
    fx
}

/// The table a maintenance command applies to on the current tab.
fn target_table(s: &State) -> Option<TableRef> {
    (s.tab.ops().table)(s)
}

/// `o`, `O`, and a retention entered: ask the runtime to draft a plan.
pub fn plan(s: &mut State, kind: MaintenanceKind) -> Vec<Effect> {
    if s.readonly {
        s.set_status(Level::Error, "read-only: maintenance is disabled");
        return Vec::new();
    }
    let Some(table) = target_table(s) else {
        s.set_status(Level::Warn, "select a table first");
        return Vec::new();
    };
    if let Some(j) = s.jobs.running_on(&table) {
        let name = j.plan.procedure.name();
        s.set_status(
            Level::Error,
            format!("{name} is already running on {table}: one mutation per table at a time"),
        );
        return Vec::new();
    }
    let partitions = match kind {
        MaintenanceKind::Optimize => (s.tab.ops().partitions)(s),
        _ => None,
    };
    s.set_status(Level::Info, format!("planning maintenance of {table}…"));
    vec![Effect::PlanMaintenance {
        epoch: s.conn.epoch,
        table,
        kind,
        partitions,
    }]
}

/// `x`, `R`, `V`: ask for the retention first (the prompt plans on enter).
pub fn ask_retention(s: &mut State, r: RetentionFor) {
    if s.readonly {
        s.set_status(Level::Error, "read-only: maintenance is disabled");
    } else if target_table(s).is_some() {
        s.prompt = Some(Prompt::Retention(r, "7d".into()));
    }
}

/// The retention prompt's text entered.
pub fn plan_with_retention(s: &mut State, r: RetentionFor, text: &str) -> Vec<Effect> {
    match crate::config::Dur::parse(text) {
        Ok(d) => {
            let retention_secs = d.0.as_secs();
            plan(
                s,
                match r {
                    RetentionFor::ExpireSnapshots => {
                        MaintenanceKind::ExpireSnapshots { retention_secs }
                    }
                    RetentionFor::RemoveOrphanFiles => {
                        MaintenanceKind::RemoveOrphanFiles { retention_secs }
                    }
                    RetentionFor::Vacuum => MaintenanceKind::Vacuum { retention_secs },
                },
            )
        }
        Err(e) => {
            s.set_status(Level::Error, e.to_string());
            Vec::new()
        }
    }
}

/// `c`: cancel every running job.
pub fn cancel(s: &mut State) -> Vec<Effect> {
    let running: Vec<u64> = s
        .jobs
        .list
        .iter_mut()
        .filter(|j| j.running())
        .map(|j| {
            j.cancel_requested = true;
            j.id
        })
        .collect();
    if running.is_empty() {
        s.set_status(Level::Info, "no maintenance is running");
        Vec::new()
    } else {
        s.set_status(
            Level::Warn,
            "cancelling: DELETE sent to Trino, the remaining statements will not run",
        );
        running.into_iter().map(Effect::CancelJob).collect()
    }
}

#[cfg(test)]
mod tests;
