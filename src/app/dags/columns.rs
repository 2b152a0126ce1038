//! The columns of the DAG list, defined once: what is drawn and sorted by.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use super::DagRow;
use crate::app::layout::Width;
use crate::health::DagFacts;

/// The columns of the DAG list: drawn and sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DagCol {
    Status,
    Dag,
    LastRun,
    Ago,
    LastOk,
    Failed,
    Paused,
    NextRun,
    Schedule,
    Owner,
    Tags,
}

/// Sort columns of the DAG list, in `s` cycling order.
pub const DAG_SORTS: [DagCol; 4] = [DagCol::Status, DagCol::Dag, DagCol::Ago, DagCol::LastOk];

impl DagCol {
    /// Drawn columns, left to right.
    pub const SHOWN: [DagCol; 11] = [
        DagCol::Status,
        DagCol::Dag,
        DagCol::LastRun,
        DagCol::Ago,
        DagCol::LastOk,
        DagCol::Failed,
        DagCol::Paused,
        DagCol::NextRun,
        DagCol::Schedule,
        DagCol::Owner,
        DagCol::Tags,
    ];

    pub fn header(self) -> &'static str {
        match self {
            DagCol::Status => "STAT",
            DagCol::Dag => "DAG",
            DagCol::LastRun => "LAST RUN",
            DagCol::Ago => "AGO",
            DagCol::LastOk => "LAST OK",
            DagCol::Failed => "FAILED",
            DagCol::Paused => "PAUSED",
            DagCol::NextRun => "NEXT RUN",
            DagCol::Schedule => "SCHEDULE",
            DagCol::Owner => "OWNER",
            DagCol::Tags => "TAGS",
        }
    }

    pub fn width(self) -> Width {
        Width::Fixed(match self {
            DagCol::Dag => return Width::Min(26),
            DagCol::Tags => return Width::Min(20),
            DagCol::Status => 5,
            DagCol::LastRun => 9,
            DagCol::Ago | DagCol::Failed | DagCol::Paused => 6,
            DagCol::LastOk => 7,
            DagCol::NextRun => 8,
            DagCol::Schedule => 10,
            DagCol::Owner => 12,
        })
    }

    /// Priority: the list width from which the column shows. Above 0 the column also
    /// yields to a DAG id that needs the room, the highest first (FAILED, then LAST OK
    /// give way at any width before an id is cut).
    pub fn shown_from(self) -> u16 {
        match self {
            DagCol::Paused | DagCol::NextRun | DagCol::Schedule | DagCol::Owner | DagCol::Tags => {
                140
            }
            DagCol::Failed => 2,
            DagCol::LastOk => 1,
            _ => 0,
        }
    }

    /// The columns a list `width` wide shows when the longest DAG name is `need` cells.
    pub fn shown(width: u16, need: u16) -> Vec<DagCol> {
        let admitted = DagCol::SHOWN
            .into_iter()
            .filter(|c| width >= c.shown_from())
            .collect();
        crate::app::layout::fit_columns(
            width,
            admitted,
            need,
            DagCol::width,
            |c| c == DagCol::Dag,
            DagCol::shown_from,
        )
    }

    pub fn sort_name(self) -> &'static str {
        match self {
            DagCol::Status => "health",
            DagCol::Dag => "dag",
            DagCol::LastRun | DagCol::Ago => "last run",
            DagCol::LastOk => "last success",
            DagCol::Failed => "failed",
            DagCol::Paused => "paused",
            DagCol::NextRun => "next run",
            DagCol::Schedule => "schedule",
            DagCol::Owner => "owner",
            DagCol::Tags => "tags",
        }
    }

    /// Order two rows by this column (ties: by DAG id).
    pub fn cmp(self, a: &DagRow, b: &DagRow) -> Ordering {
        let rank = |r: &DagRow| r.status().map(|s| s.rank()).unwrap_or(0);
        let fa =
            |r: &DagRow, f: fn(&DagFacts) -> Option<DateTime<Utc>>| r.facts.as_ref().and_then(f);
        let o = match self {
            DagCol::Status | DagCol::Failed => rank(b).cmp(&rank(a)).then(
                b.facts
                    .as_ref()
                    .map(|f| f.failed_runs)
                    .cmp(&a.facts.as_ref().map(|f| f.failed_runs)),
            ),
            DagCol::LastRun | DagCol::Ago => {
                fa(b, |f| f.last_run_at).cmp(&fa(a, |f| f.last_run_at))
            }
            // Longest without success first.
            DagCol::LastOk => fa(a, |f| f.last_success_at).cmp(&fa(b, |f| f.last_success_at)),
            DagCol::Dag
            | DagCol::Paused
            | DagCol::NextRun
            | DagCol::Schedule
            | DagCol::Owner
            | DagCol::Tags => Ordering::Equal,
        };
        o.then_with(|| a.dag.dag_id.cmp(&b.dag.dag_id))
    }
}

pub(super) fn cmp_dags(a: &DagRow, b: &DagRow, col: usize) -> Ordering {
    DAG_SORTS
        .get(col)
        .copied()
        .unwrap_or(DagCol::LastOk)
        .cmp(a, b)
}
