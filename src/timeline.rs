//! A table's timeline: its snapshots (writes, compactions) and its maintenance DAG's runs
//! on one time axis, and the sentence they add up to ("compactions stopped 2026-11-14;
//! compact_documents has failed every run since 2026-11-16 (14 runs); files 144 → 2,034").
//!
//! Pure: the Snapshots tab's chart, `:export md` and `floe report` build it from what they
//! already read.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::airflow::{DagRun, DagRunState};
use crate::fmt::thousands;
use crate::lakehouse::model::{SnapshotInfo, SnapshotOperation};

/// What happened at one point of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A snapshot that added data (append, overwrite, delete).
    Write,
    /// A `replace` that rewrote data files.
    Compaction,
    /// A maintenance DAG run that failed (✗).
    RunFailed,
    /// A maintenance DAG run that succeeded (✓).
    RunSucceeded,
    /// A run still queued or running.
    RunPending,
}

impl EventKind {
    pub fn is_run(self) -> bool {
        matches!(
            self,
            EventKind::RunFailed | EventKind::RunSucceeded | EventKind::RunPending
        )
    }

    /// The glyph the chart and the postmortem mark it with (never colour alone).
    pub fn glyph(self) -> &'static str {
        match self {
            EventKind::Write => "·",
            EventKind::Compaction => "◆",
            EventKind::RunFailed => "✗",
            EventKind::RunSucceeded => "✓",
            EventKind::RunPending => "…",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            EventKind::Write => "write",
            EventKind::Compaction => "compaction",
            EventKind::RunFailed => "run failed",
            EventKind::RunSucceeded => "run succeeded",
            EventKind::RunPending => "run pending",
        }
    }
}

/// One point of the timeline.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    pub at: DateTime<Utc>,
    pub kind: EventKind,
    /// The snapshot's operation, or the run's state, as the server spells it.
    pub what: String,
    /// The snapshot's operation, typed (`None` for a DAG run).
    #[serde(skip)]
    pub operation: Option<SnapshotOperation>,
    /// The snapshot id, or the run id.
    pub id: String,
    /// Data files after the snapshot (`total-data-files` of its summary).
    pub total_files: Option<u64>,
}

/// What is known of the table's maintenance DAG and its runs.
#[derive(Clone, Debug, PartialEq)]
pub enum DagRuns {
    /// No Airflow configured: nothing to say about a DAG.
    NoAirflow,
    /// Airflow is there, but no DAG maps to this table.
    NotMapped,
    /// Airflow is there; its DAGs are not read yet.
    NotRead,
    /// The DAG is known; its runs are being read.
    Loading(String),
    /// The runs could not be read.
    Failed { dag_id: String, error: String },
    /// The runs floe looked at (any order).
    Loaded { dag_id: String, runs: Vec<DagRun> },
}

impl DagRuns {
    pub fn dag_id(&self) -> Option<&str> {
        match self {
            DagRuns::NoAirflow | DagRuns::NotMapped | DagRuns::NotRead => None,
            DagRuns::Loading(d)
            | DagRuns::Failed { dag_id: d, .. }
            | DagRuns::Loaded { dag_id: d, .. } => Some(d),
        }
    }

    pub fn runs(&self) -> &[DagRun] {
        match self {
            DagRuns::Loaded { runs, .. } => runs,
            _ => &[],
        }
    }
}

/// The timeline of one table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timeline {
    /// The maintenance DAG, when one maps to the table.
    pub dag_id: Option<String>,
    /// Snapshots and runs, oldest first.
    pub events: Vec<Event>,
    /// What they add up to, in one line.
    pub sentence: String,
}

/// A row of a timeline as a postmortem lists it: an event that matters, or a run of
/// ordinary writes between two of them folded into one.
#[derive(Clone, Debug, PartialEq)]
pub enum Row<'a> {
    Event(&'a Event),
    /// Consecutive appends: how many, the first and the last.
    Appends {
        count: usize,
        first: &'a Event,
        last: &'a Event,
    },
}

/// An ordinary write: an append. Compactions, overwrites and deletes, DAG runs and
/// failures stay rows of their own.
fn ordinary(e: &Event) -> bool {
    e.kind == EventKind::Write && e.operation == Some(SnapshotOperation::Append)
}

/// The rows of `events` (oldest first): each run of two or more appends between other
/// events is one row.
pub fn rows(events: &[Event]) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let start = i;
        while i < events.len() && ordinary(&events[i]) {
            i += 1;
        }
        match i - start {
            0 => {
                out.push(Row::Event(&events[i]));
                i += 1;
            }
            1 => out.push(Row::Event(&events[start])),
            count => out.push(Row::Appends {
                count,
                first: &events[start],
                last: &events[i - 1],
            }),
        }
    }
    out
}

/// When a run counts as having happened: when it was due (`run_after`, else its logical
/// date), the order Airflow itself lists runs in.
pub fn run_time(r: &DagRun) -> Option<DateTime<Utc>> {
    r.sort_time().or(r.end_date)
}

fn run_kind(r: &DagRun) -> EventKind {
    match r.state {
        DagRunState::Failed => EventKind::RunFailed,
        DagRunState::Success => EventKind::RunSucceeded,
        _ => EventKind::RunPending,
    }
}

fn day(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d").to_string()
}

/// Build the timeline of a table from its snapshots (any order) and its DAG's runs.
/// A compaction older than `stale_after` with writes after it reads "compactions
/// stopped"; a newer one "last compaction".
pub fn build(
    snapshots: &[SnapshotInfo],
    dag: &DagRuns,
    now: DateTime<Utc>,
    stale_after: chrono::Duration,
) -> Timeline {
    let mut events: Vec<Event> = snapshots
        .iter()
        .map(|s| Event {
            at: s.committed_at,
            kind: if s.is_compaction() {
                EventKind::Compaction
            } else {
                EventKind::Write
            },
            what: s.operation.to_string(),
            operation: Some(s.operation.clone()),
            id: s.snapshot_id.to_string(),
            total_files: s.total_data_files,
        })
        .collect();
    events.extend(dag.runs().iter().filter_map(|r| {
        Some(Event {
            at: run_time(r)?,
            kind: run_kind(r),
            what: r.state.as_str().to_string(),
            operation: None,
            id: r.run_id.clone(),
            total_files: None,
        })
    }));
    events.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| a.id.cmp(&b.id)));
    Timeline {
        dag_id: dag.dag_id().map(str::to_string),
        sentence: sentence(snapshots, dag, now, stale_after),
        events,
    }
}

/// The sentence a table's timeline adds up to: its compactions, its DAG's runs, its
/// file count since the last compaction; parts joined by "; ".
pub fn sentence(
    snapshots: &[SnapshotInfo],
    dag: &DagRuns,
    now: DateTime<Utc>,
    stale_after: chrono::Duration,
) -> String {
    let mut snaps: Vec<&SnapshotInfo> = snapshots.iter().collect();
    snaps.sort_by_key(|s| s.committed_at);
    let mut parts = Vec::new();
    let last_compaction = snaps.iter().rev().find(|s| s.is_compaction()).copied();
    match (snaps.is_empty(), last_compaction) {
        (true, _) => parts.push("no snapshots".to_string()),
        (false, None) => parts.push("never compacted".to_string()),
        (false, Some(c)) => {
            let writes_after = snaps
                .iter()
                .filter(|s| s.committed_at > c.committed_at && !s.is_compaction())
                .count();
            if writes_after > 0 && now - c.committed_at > stale_after {
                parts.push(format!("compactions stopped {}", day(c.committed_at)));
            } else {
                parts.push(format!("last compaction {}", day(c.committed_at)));
            }
        }
    }
    parts.push(dag_part(dag));
    let current = snaps.iter().rev().find_map(|s| s.total_data_files);
    // Written since the last compaction: its growth from it; nothing written since
    // (compacted last): what the compactions did, from the snapshot before them.
    let compacted_last = snaps.iter().rev().take_while(|s| s.is_compaction()).count();
    let from = match last_compaction {
        Some(_) if compacted_last > 0 => snaps[..snaps.len() - compacted_last]
            .iter()
            .rev()
            .find_map(|s| s.total_data_files),
        Some(c) => c.total_data_files,
        None => snaps.iter().find_map(|s| s.total_data_files),
    };
    match (from, current) {
        (Some(a), Some(b)) if snaps.len() > 1 => {
            parts.push(format!("files {} → {}", thousands(a), thousands(b)))
        }
        (_, Some(b)) => parts.push(format!("files {}", thousands(b))),
        _ => {}
    }
    parts.join("; ")
}

fn dag_part(dag: &DagRuns) -> String {
    match dag {
        DagRuns::NoAirflow => "no maintenance DAG (Airflow not configured)".into(),
        DagRuns::NotMapped => "no maintenance DAG maps to this table".into(),
        DagRuns::NotRead => "maintenance DAGs not read yet".into(),
        DagRuns::Loading(d) => format!("{d}: reading its runs"),
        DagRuns::Failed { dag_id, .. } => format!("{dag_id}: its runs could not be read"),
        DagRuns::Loaded { dag_id, runs } => {
            let mut finished: Vec<(&DagRun, DateTime<Utc>)> = runs
                .iter()
                .filter(|r| r.state.is_finished())
                .filter_map(|r| Some((r, run_time(r)?)))
                .collect();
            finished.sort_by_key(|(_, t)| *t);
            let n = finished.len();
            let Some((last, last_at)) = finished.last().copied() else {
                return if runs.is_empty() {
                    format!("{dag_id} has no runs")
                } else {
                    format!("{dag_id} has no finished run")
                };
            };
            let failed = finished
                .iter()
                .filter(|(r, _)| r.state == DagRunState::Failed)
                .count();
            let runs_word = |k: usize| if k == 1 { "run" } else { "runs" };
            if last.state == DagRunState::Failed {
                // The failing streak: every run after the last success.
                let streak: Vec<_> = finished
                    .iter()
                    .rev()
                    .take_while(|(r, _)| r.state == DagRunState::Failed)
                    .collect();
                let since = streak.last().map(|(_, t)| *t).unwrap_or(last_at);
                let k = streak.len();
                if k == n {
                    format!(
                        "{dag_id} has failed every run since {} ({k} {})",
                        day(since),
                        runs_word(k)
                    )
                } else {
                    let ok = finished[n - k - 1].1;
                    format!(
                        "{dag_id} has failed every run since {} ({k} {}; last success {})",
                        day(since),
                        runs_word(k),
                        day(ok)
                    )
                }
            } else if failed == 0 {
                format!(
                    "{dag_id} succeeded every run ({n} {}, last {})",
                    runs_word(n),
                    day(last_at)
                )
            } else {
                format!(
                    "{dag_id} last succeeded {}; {failed} of {n} runs failed",
                    day(last_at)
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 9, 0, 0).unwrap()
    }

    fn days_ago(d: i64) -> DateTime<Utc> {
        t0() - chrono::Duration::days(d)
    }

    fn snap(d: i64, op: &str, total: u64) -> SnapshotInfo {
        let compaction = op == "replace";
        SnapshotInfo {
            committed_at: days_ago(d),
            snapshot_id: 1000 - d,
            parent_id: None,
            operation: crate::lakehouse::model::SnapshotOperation::parse(op),
            added_data_files: Some(if compaction { 144 } else { 126 }),
            deleted_data_files: compaction.then_some(1800),
            total_data_files: Some(total),
            added_records: None,
            total_records: None,
            total_delete_files: None,
            added_files_size: None,
            removed_files_size: None,
            trino_user: None,
            trino_query_id: None,
        }
    }

    /// The seed's story: 1,800 files, a compaction to 144 15 days ago, daily appends since.
    fn incident() -> Vec<SnapshotInfo> {
        let mut v = vec![snap(16, "append", 1800), snap(15, "replace", 144)];
        for d in (0..15).rev() {
            v.push(snap(d, "append", 144 + (15 - d as u64) * 126));
        }
        v
    }

    fn run(d: i64, state: DagRunState) -> DagRun {
        crate::app::testing::dags::scheduled_run(
            format!("scheduled__{}", day(days_ago(d))),
            days_ago(d),
            state,
        )
    }

    fn loaded(runs: Vec<DagRun>) -> DagRuns {
        DagRuns::Loaded {
            dag_id: "compact_documents".into(),
            runs,
        }
    }

    fn say(snaps: &[SnapshotInfo], dag: &DagRuns) -> String {
        sentence(snaps, dag, t0(), chrono::Duration::hours(36))
    }

    #[test]
    fn every_run_failing_since_the_last_compaction() {
        let runs = loaded((1..=13).map(|d| run(d, DagRunState::Failed)).collect());
        assert_eq!(
            say(&incident(), &runs),
            "compactions stopped 2026-11-14; compact_documents has failed every run since \
             2026-11-16 (13 runs); files 144 → 2,034"
        );
    }

    #[test]
    fn no_runs_and_a_run_still_going() {
        assert_eq!(
            say(&incident(), &loaded(vec![])),
            "compactions stopped 2026-11-14; compact_documents has no runs; files 144 → 2,034"
        );
        assert!(
            say(&incident(), &loaded(vec![run(0, DagRunState::Running)]))
                .contains("compact_documents has no finished run")
        );
        // A running run does not hide the failures before it.
        let runs = loaded(vec![
            run(2, DagRunState::Failed),
            run(1, DagRunState::Failed),
            run(0, DagRunState::Running),
        ]);
        assert!(say(&incident(), &runs).contains("has failed every run since 2026-11-27 (2 runs)"));
    }

    #[test]
    fn mixed_runs() {
        // Failing since a success.
        let runs = loaded(vec![
            run(5, DagRunState::Failed),
            run(4, DagRunState::Success),
            run(3, DagRunState::Failed),
            run(2, DagRunState::Failed),
        ]);
        assert!(
            say(&incident(), &runs).contains(
                "compact_documents has failed every run since 2026-11-26 (2 runs; last success 2026-11-25)"
            ),
            "{}",
            say(&incident(), &runs)
        );
        // Recovered: the last run succeeded.
        let runs = loaded(vec![
            run(3, DagRunState::Failed),
            run(2, DagRunState::Failed),
            run(1, DagRunState::Success),
        ]);
        assert!(
            say(&incident(), &runs)
                .contains("compact_documents last succeeded 2026-11-28; 2 of 3 runs failed")
        );
        // Succeeding every run while compactions stopped: the silent DAG.
        let runs = loaded((1..=3).map(|d| run(d, DagRunState::Success)).collect());
        assert_eq!(
            say(&incident(), &runs),
            "compactions stopped 2026-11-14; compact_documents succeeded every run (3 runs, \
             last 2026-11-28); files 144 → 2,034"
        );
    }

    #[test]
    fn no_compaction_ever_and_a_fresh_one() {
        let never = vec![
            snap(3, "append", 10),
            snap(2, "append", 20),
            snap(1, "append", 30),
        ];
        assert_eq!(
            say(&never, &DagRuns::NotMapped),
            "never compacted; no maintenance DAG maps to this table; files 10 → 30"
        );
        // A compaction yesterday is not "stopped"; nothing written since, the files are
        // what it made of them.
        let fresh = vec![snap(3, "append", 300), snap(1, "replace", 12)];
        assert_eq!(
            say(&fresh, &DagRuns::NoAirflow),
            "last compaction 2026-11-28; no maintenance DAG (Airflow not configured); files 300 → 12"
        );
        assert_eq!(
            say(&[], &DagRuns::NotMapped),
            "no snapshots; no maintenance DAG maps to this table"
        );
        assert_eq!(
            say(&[snap(1, "append", 5)], &DagRuns::NotMapped),
            "never compacted; no maintenance DAG maps to this table; files 5"
        );
    }

    #[test]
    fn not_mapped_loading_and_unreadable() {
        assert!(say(&incident(), &DagRuns::NotMapped).contains("no maintenance DAG maps"));
        assert!(say(&incident(), &DagRuns::NotRead).contains("maintenance DAGs not read yet"));
        assert!(
            say(&incident(), &DagRuns::Loading("compact_documents".into()))
                .contains("compact_documents: reading its runs")
        );
        let failed = DagRuns::Failed {
            dag_id: "compact_documents".into(),
            error: "HTTP 500".into(),
        };
        assert!(
            say(&incident(), &failed).contains("compact_documents: its runs could not be read")
        );
    }

    #[test]
    fn events_merge_snapshots_and_runs_oldest_first() {
        let runs = loaded(vec![
            run(1, DagRunState::Failed),
            run(14, DagRunState::Success),
        ]);
        let t = build(&incident(), &runs, t0(), chrono::Duration::hours(36));
        assert_eq!(t.dag_id.as_deref(), Some("compact_documents"));
        assert_eq!(t.events.len(), 17 + 2);
        assert!(t.events.windows(2).all(|w| w[0].at <= w[1].at));
        let kinds: Vec<EventKind> = t.events.iter().map(|e| e.kind).collect();
        assert_eq!(kinds[1], EventKind::Compaction);
        assert_eq!(
            kinds.iter().filter(|k| **k == EventKind::RunFailed).count(),
            1
        );
        assert_eq!(
            kinds[3],
            EventKind::RunSucceeded,
            "the 11-15 run, after that day's write"
        );
        assert_eq!(EventKind::RunFailed.glyph(), "✗");
        assert_eq!(EventKind::RunSucceeded.glyph(), "✓");
    }
}
