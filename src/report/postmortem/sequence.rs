//! The incident's sequence with its times: symptom, cause, fix, run and result, from
//! what the postmortem holds.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::Postmortem;
use crate::fmt::thousands;
use crate::lakehouse::query_history;
use crate::mutation::audit::Action;
use crate::timeline;

/// One step of the incident as it happened: symptom, cause, fix, run, result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub at: DateTime<Utc>,
    /// `symptom`, `cause`, `fix`, `run`, `result`.
    pub step: &'static str,
    pub what: String,
}

/// The incident's sequence with its times, oldest first, from what the postmortem holds:
/// the slowest query that read the table (symptom), the DAG's first failed run since its
/// last success (cause), the connection fixes and maintenance the audit log holds (fix),
/// the DAG's runs after the first fix (run), and the compactions after them (result).
pub fn sequence(p: &Postmortem) -> Vec<Step> {
    let mut out = Vec::new();
    let short = p.name.rsplit('.').next().unwrap_or(&p.name).to_string();
    let now = DateTime::parse_from_rfc3339(&p.generated_at)
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|_| Utc::now());
    let first_fix = fixes(p, &mut out);
    if let Some(q) = &p.queries
        && let Some(w) = query_history::suffering_until(q.runs(), first_fix)
        && let Some(at) = w.run.created
    {
        out.push(Step {
            at,
            step: "symptom",
            what: w.line(&short, now),
        });
    }
    if let (Some(e), Some(d)) = (first_failure(p, first_fix.unwrap_or(now)), &p.dag) {
        out.push(Step {
            at: e.at,
            step: "cause",
            what: format!(
                "DAG {} failing from run {}{}",
                d.dag_id,
                e.id,
                d.error_line
                    .as_deref()
                    .map(|l| format!(": {}", crate::text::clip(l, 200)))
                    .unwrap_or_default()
            ),
        });
    }
    if let Some(f) = first_fix {
        for e in p.timeline.events.iter().filter(|e| e.at >= f) {
            let (step, what) = match e.kind {
                timeline::EventKind::RunSucceeded => ("run", format!("run {} succeeded", e.id)),
                timeline::EventKind::RunFailed => ("run", format!("run {} failed", e.id)),
                timeline::EventKind::Compaction => (
                    "result",
                    format!(
                        "compaction {}{}",
                        e.id,
                        e.total_files
                            .map(|n| format!(": {} data files", thousands(n)))
                            .unwrap_or_default()
                    ),
                ),
                _ => continue,
            };
            out.push(Step {
                at: e.at,
                step,
                what,
            });
        }
        out.extend(symptom_after(p, f));
    }
    // At the same instant, the order of the story: what was done before what it started.
    out.sort_by_key(|s| (s.at, STEPS.iter().position(|x| *x == s.step)));
    out
}

/// The steps in the order a story tells them.
const STEPS: [&str; 5] = ["symptom", "cause", "fix", "run", "result"];

/// When an audited action began: its outcome record is written once it was answered
/// (`time`), `duration_ms` after it was sent — and what it started (the run a trigger
/// queued, the snapshot an optimize committed) is stamped by the server in between.
fn began(r: &crate::mutation::audit::Record) -> Option<DateTime<Utc>> {
    let t = DateTime::parse_from_rfc3339(&r.time)
        .ok()?
        .with_timezone(&Utc);
    let took = chrono::Duration::milliseconds(i64::try_from(r.duration_ms).unwrap_or(i64::MAX));
    Some(t.checked_sub_signed(took).unwrap_or(t))
}

/// The fixes and triggers of the audit log as steps (into `out`); returns the first one's
/// time.
fn fixes(p: &Postmortem, out: &mut Vec<Step>) -> Option<DateTime<Utc>> {
    let mut first_fix: Option<DateTime<Utc>> = None;
    for r in &p.actions {
        let Some(t) = began(r) else {
            continue;
        };
        let step = match r.action {
            Action::FixConnection | Action::Optimize | Action::UnpauseDag | Action::ClearDagRun => {
                "fix"
            }
            Action::TriggerDag => "run",
            _ => continue,
        };
        first_fix = Some(first_fix.map_or(t, |f| f.min(t)));
        let files = match (r.files_before, r.files_after) {
            (Some(b), Some(a)) => format!(", files {} → {}", thousands(b), thousands(a)),
            _ => String::new(),
        };
        out.push(Step {
            at: t,
            step,
            what: format!("{} ({}{files})", r.statement, r.outcome),
        });
    }
    first_fix
}

/// The cause: the first failed run of the failing streak that was going on at `until`
/// (the first fix, or now) — the failures after the last success before the streak's
/// newest failure. A success after the fix (the verified fix itself) does not hide it.
fn first_failure(p: &Postmortem, until: DateTime<Utc>) -> Option<&timeline::Event> {
    let runs = || p.timeline.events.iter().filter(|e| e.at < until);
    let newest_failure = runs()
        .filter(|e| e.kind == timeline::EventKind::RunFailed)
        .map(|e| e.at)
        .max()?;
    let dag_ok = p
        .dag
        .as_ref()
        .and_then(|d| d.last_success_at.as_deref())
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let last_ok = runs()
        .filter(|e| e.kind == timeline::EventKind::RunSucceeded)
        .map(|e| e.at)
        .chain(dag_ok)
        .filter(|t| *t < newest_failure)
        .max();
    runs()
        .filter(|e| e.kind == timeline::EventKind::RunFailed)
        .filter(|e| last_ok.is_none_or(|ok| e.at > ok))
        .min_by_key(|e| e.at)
}

/// The later runs of the query that suffered (the symptom), from `since` (the first fix):
/// the result a reader of the table sees.
pub fn symptom_after(p: &Postmortem, since: DateTime<Utc>) -> Vec<Step> {
    let short = p.name.rsplit('.').next().unwrap_or(&p.name);
    let Some(q) = &p.queries else {
        return Vec::new();
    };
    let Some(w) = query_history::suffering_until(q.runs(), Some(since)) else {
        return Vec::new();
    };
    let shape = query_history::shape(&w.run.query);
    q.runs()
        .iter()
        .filter(|r| r.query_id != w.run.query_id && query_history::shape(&r.query) == shape)
        .filter_map(|r| Some((r.created.filter(|c| *c >= since)?, r.elapsed_ms?)))
        .map(|(at, ms)| Step {
            at,
            step: "result",
            what: format!(
                "{} on {short} took {} (the symptom's run: {})",
                query_history::who(w.run),
                query_history::elapsed_text(ms),
                query_history::elapsed_text(w.elapsed_ms)
            ),
        })
        .collect()
}
