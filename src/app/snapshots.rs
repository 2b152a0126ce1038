//! The Snapshots tab: the snapshot history of the focused table, newest first.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use super::action::Effect;
use super::detail::{self, Detail, TableDetail};
use super::grid::{Grid, opt_cmp};
use super::layout::Width;
use super::state::{Level, Load, State};
use crate::airflow::DagRun;
use crate::lakehouse::delta::log::LogFacts;
use crate::lakehouse::model::{SnapshotInfo, TableRef};
use crate::timeline::{self, DagRuns, Timeline};

#[derive(Clone, Debug, PartialEq)]
pub struct SnapshotRow {
    pub info: SnapshotInfo,
    pub search: String,
}

/// The columns of the Snapshots tab: drawn, sorted by and exported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotCol {
    Table,
    Committed,
    Age,
    SnapshotId,
    Operation,
    Added,
    Deleted,
    TotalFiles,
    Records,
    By,
    QueryId,
}

/// Sort columns of the Snapshots tab, in `s` cycling order.
pub const SNAPSHOT_SORTS: [SnapshotCol; 4] = [
    SnapshotCol::Committed,
    SnapshotCol::Operation,
    SnapshotCol::Added,
    SnapshotCol::TotalFiles,
];

impl SnapshotCol {
    /// Drawn columns, left to right (all fit).
    pub const SHOWN: [SnapshotCol; 8] = [
        SnapshotCol::Committed,
        SnapshotCol::Age,
        SnapshotCol::Operation,
        SnapshotCol::Added,
        SnapshotCol::Deleted,
        SnapshotCol::TotalFiles,
        SnapshotCol::Records,
        SnapshotCol::By,
    ];

    /// Exported fields, in file order.
    pub const EXPORTED: [SnapshotCol; 10] = [
        SnapshotCol::Table,
        SnapshotCol::Committed,
        SnapshotCol::SnapshotId,
        SnapshotCol::Operation,
        SnapshotCol::Added,
        SnapshotCol::Deleted,
        SnapshotCol::TotalFiles,
        SnapshotCol::Records,
        SnapshotCol::By,
        SnapshotCol::QueryId,
    ];

    pub fn header(self) -> &'static str {
        match self {
            SnapshotCol::Committed => "COMMITTED (UTC)",
            SnapshotCol::Age => "AGE",
            SnapshotCol::Operation => "OPERATION",
            SnapshotCol::Added => "ADDED",
            SnapshotCol::Deleted => "DELETED",
            SnapshotCol::TotalFiles => "TOTAL FILES",
            SnapshotCol::Records => "RECORDS",
            SnapshotCol::By => "BY",
            SnapshotCol::Table | SnapshotCol::SnapshotId | SnapshotCol::QueryId => "",
        }
    }

    pub fn width(self) -> Width {
        Width::Fixed(match self {
            SnapshotCol::By => return Width::Min(6),
            SnapshotCol::Committed => 16,
            SnapshotCol::Age => 6,
            SnapshotCol::Operation => 12,
            SnapshotCol::Added | SnapshotCol::Deleted => 7,
            SnapshotCol::TotalFiles => 11,
            SnapshotCol::Records => 10,
            SnapshotCol::Table | SnapshotCol::SnapshotId | SnapshotCol::QueryId => 0,
        })
    }

    pub fn sort_name(self) -> &'static str {
        match self {
            SnapshotCol::Committed => "committed",
            SnapshotCol::Operation => "operation",
            SnapshotCol::Added => "added",
            SnapshotCol::TotalFiles => "total files",
            SnapshotCol::Table => "table",
            SnapshotCol::Age => "age",
            SnapshotCol::SnapshotId => "snapshot",
            SnapshotCol::Deleted => "deleted",
            SnapshotCol::Records => "records",
            SnapshotCol::By => "by",
            SnapshotCol::QueryId => "query",
        }
    }

    /// Order two rows by this column (ties: newest first).
    pub fn cmp(self, a: &SnapshotRow, b: &SnapshotRow) -> Ordering {
        let (x, y) = (&a.info, &b.info);
        let o = match self {
            SnapshotCol::Operation => x.operation.as_str().cmp(y.operation.as_str()),
            SnapshotCol::Added => opt_cmp(y.added_data_files, x.added_data_files),
            SnapshotCol::Deleted => opt_cmp(y.deleted_data_files, x.deleted_data_files),
            SnapshotCol::TotalFiles => opt_cmp(y.total_data_files, x.total_data_files),
            SnapshotCol::Records => opt_cmp(y.total_records, x.total_records),
            SnapshotCol::By => x.trino_user.cmp(&y.trino_user),
            SnapshotCol::Committed
            | SnapshotCol::Age
            | SnapshotCol::Table
            | SnapshotCol::SnapshotId
            | SnapshotCol::QueryId => Ordering::Equal,
        };
        // Newest first within ties.
        o.then_with(|| y.committed_at.cmp(&x.committed_at))
            .then_with(|| y.snapshot_id.cmp(&x.snapshot_id))
    }

    /// The field's name in an export.
    pub fn field(self) -> &'static str {
        match self {
            SnapshotCol::Table => "table",
            SnapshotCol::Committed => "committed_at",
            SnapshotCol::Age => "age_secs",
            SnapshotCol::SnapshotId => "snapshot_id",
            SnapshotCol::Operation => "operation",
            SnapshotCol::Added => "added_data_files",
            SnapshotCol::Deleted => "deleted_data_files",
            SnapshotCol::TotalFiles => "total_data_files",
            SnapshotCol::Records => "total_records",
            SnapshotCol::By => "trino_user",
            SnapshotCol::QueryId => "trino_query_id",
        }
    }

    /// The field's value in an export of `v` at `now`.
    pub fn export(self, v: &SnapshotsView, r: &SnapshotRow, now: DateTime<Utc>) -> String {
        let r = &r.info;
        let opt = super::tables::opt;
        match self {
            SnapshotCol::Table => v
                .detail
                .table
                .as_ref()
                .map(|t| t.to_string())
                .unwrap_or_default(),
            SnapshotCol::Committed => r.committed_at.to_rfc3339(),
            SnapshotCol::Age => (now - r.committed_at).num_seconds().to_string(),
            SnapshotCol::SnapshotId => r.snapshot_id.to_string(),
            SnapshotCol::Operation => r.operation.to_string(),
            SnapshotCol::Added => opt(r.added_data_files),
            SnapshotCol::Deleted => opt(r.deleted_data_files),
            SnapshotCol::TotalFiles => opt(r.total_data_files),
            SnapshotCol::Records => opt(r.total_records),
            SnapshotCol::By => r.trino_user.clone().unwrap_or_default(),
            SnapshotCol::QueryId => r.trino_query_id.clone().unwrap_or_default(),
        }
    }
}

pub fn cmp_snapshots(a: &SnapshotRow, b: &SnapshotRow, col: usize) -> Ordering {
    SNAPSHOT_SORTS
        .get(col)
        .copied()
        .unwrap_or(SnapshotCol::TotalFiles)
        .cmp(a, b)
}

#[derive(Clone, Debug, Default)]
pub struct SnapshotsView {
    /// The table, its load, the newest request.
    pub detail: Detail,
    pub rows: Vec<SnapshotRow>,
    pub grid: Grid,
    /// The runs of the table's maintenance DAG, for the timeline.
    pub runs: Option<TimelineRuns>,
    /// A Delta table's log, as read with its history (the error's text when it failed).
    pub log: Option<Result<LogFacts, String>>,
}

/// The runs of one maintenance DAG, as the timeline reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct TimelineRuns {
    pub dag_id: String,
    pub load: Load,
    pub runs: Vec<DagRun>,
}

impl SnapshotsView {
    pub fn reindex(&mut self) {
        self.grid
            .rebuild(&self.rows, |r| r.search.as_str(), cmp_snapshots, None);
    }
}

/// `y`: the selected snapshot's id; a second `y` on it, the Trino query that wrote it.
pub fn copy(s: &mut State) -> Vec<Effect> {
    use super::copy::emit;
    let row = s
        .snapshots
        .grid
        .selected_row()
        .and_then(|i| s.snapshots.rows.get(i))
        .map(|r| {
            (
                r.info.snapshot_id.to_string(),
                r.info.trino_query_id.clone(),
            )
        });
    match row {
        Some((id, Some(q))) if s.copied.as_deref() == Some(id.as_str()) => {
            emit(s, "Trino query id", &q)
        }
        Some((id, q)) => {
            let fx = emit(s, "snapshot id", &id);
            if q.is_some()
                && let Some(m) = &mut s.status
            {
                m.text.push_str(" (y again: its Trino query id)");
            }
            fx
        }
        None => emit(s, "snapshot selected", ""),
    }
}

/// `e`: the snapshots as listed (filter and sort applied), the exported columns.
pub fn export_view(s: &State) -> Option<super::export::ExportData> {
    let v = &s.snapshots;
    v.detail.table.as_ref()?;
    Some(super::export::table(
        "snapshots",
        &v.grid,
        &SnapshotCol::EXPORTED.map(SnapshotCol::field),
        |i| {
            SnapshotCol::EXPORTED
                .map(|c| c.export(v, &v.rows[i], s.now))
                .to_vec()
        },
    ))
}

/// Results for the Snapshots tab.
#[derive(Clone, Debug)]
pub enum SnapshotsMsg {
    /// The snapshots of `table`, for the load numbered `request`.
    Loaded {
        request: u64,
        table: TableRef,
        result: Result<Vec<SnapshotInfo>, crate::trino::TrinoError>,
    },
    /// The runs of the table's maintenance DAG (its timeline).
    Runs {
        dag_id: String,
        result: Result<Vec<DagRun>, crate::airflow::AirflowError>,
    },
    /// What a Delta table's log tells (see [`crate::lakehouse::delta::log`]).
    Log {
        table: TableRef,
        result: Result<LogFacts, crate::trino::TrinoError>,
    },
}

/// The Snapshots tab's messages.
pub fn update(s: &mut State, msg: SnapshotsMsg) -> Vec<Effect> {
    match msg {
        SnapshotsMsg::Loaded {
            request,
            table,
            result,
        } => on_snapshots(s, request, &table, result),
        SnapshotsMsg::Runs { dag_id, result } => on_runs(s, &dag_id, result),
        SnapshotsMsg::Log { table, result } => {
            if s.snapshots.detail.table.as_ref() == Some(&table) {
                s.snapshots.log = Some(result.map_err(|e| e.to_string()));
            }
            Vec::new()
        }
    }
}

/// A Delta table's log, read beside its history: what a vacuum at the snapshot
/// retention deletes and the rows deletion vectors hide (one statement; an Iceberg
/// table reads nothing more).
fn load_log(s: &mut State, table: &TableRef) -> Vec<Effect> {
    s.snapshots.log = None;
    let delta = s
        .tables
        .row(table)
        .and_then(|r| r.stats())
        .is_some_and(|st| st.format == crate::lakehouse::delta::TableFormat::Delta);
    if !delta {
        return Vec::new();
    }
    vec![Effect::LoadDeltaLog {
        table: table.clone(),
        retention_secs: s.health.snapshot_retention.as_secs(),
    }]
}

/// The snapshots of `table` arrived.
fn on_snapshots(
    s: &mut State,
    request: u64,
    table: &TableRef,
    result: Result<Vec<SnapshotInfo>, crate::trino::TrinoError>,
) -> Vec<Effect> {
    if !s.snapshots.detail.awaits(request, table) {
        return Vec::new();
    }
    match result {
        Ok(list) => {
            s.snapshots.rows = list
                .into_iter()
                .map(|info| SnapshotRow {
                    search: format!(
                        "{} {} {}",
                        info.operation,
                        info.snapshot_id,
                        info.committed_at.format("%Y-%m-%d %H:%M")
                    )
                    .to_lowercase(),
                    info,
                })
                .collect();
            s.snapshots.detail.load = Load::Loaded;
            s.snapshots.reindex();
            // The DAG's runs are read again with the snapshots: one timeline, one moment.
            let mut fx = load_runs(s, true);
            fx.extend(load_log(s, table));
            fx
        }
        Err(e) => {
            s.set_status(Level::Error, format!("snapshots of {table}: {e}"));
            s.snapshots.detail.load = Load::Failed(e.into());
            Vec::new()
        }
    }
}

/// The maintenance DAG of the Snapshots tab's table, when one maps to it.
fn mapped_dag(s: &State) -> Option<String> {
    let t = s.snapshots.detail.table.as_ref()?;
    s.dags.mapping.get(t).map(|m| m.dag_id.clone())
}

/// Read the runs of the table's maintenance DAG for the timeline, unless they are read
/// (or being read) and not `force`d. Nothing without Airflow or a mapped DAG.
pub fn load_runs(s: &mut State, force: bool) -> Vec<Effect> {
    if !s.airflow_configured {
        return Vec::new();
    }
    let Some(dag_id) = mapped_dag(s) else {
        s.snapshots.runs = None;
        return Vec::new();
    };
    let same = s
        .snapshots
        .runs
        .as_ref()
        .is_some_and(|r| r.dag_id == dag_id);
    if same && !force {
        return Vec::new();
    }
    let runs = match s.snapshots.runs.take() {
        Some(r) if r.dag_id == dag_id => r.runs,
        _ => Vec::new(),
    };
    s.snapshots.runs = Some(TimelineRuns {
        dag_id: dag_id.clone(),
        load: Load::Loading,
        runs,
    });
    vec![Effect::LoadTimelineRuns { dag_id }]
}

/// After a DAG result: read the runs of the shown table's DAG if it was mapped only now.
pub fn on_dags(s: &mut State) -> Vec<Effect> {
    if s.snapshots.detail.load != Load::Loaded || s.snapshots.runs.is_some() {
        return Vec::new();
    }
    load_runs(s, false)
}

/// The runs of `dag_id` arrived (or failed): kept when the timeline still wants them.
fn on_runs(
    s: &mut State,
    dag_id: &str,
    result: Result<Vec<DagRun>, crate::airflow::AirflowError>,
) -> Vec<Effect> {
    let Some(r) = s.snapshots.runs.as_mut().filter(|r| r.dag_id == dag_id) else {
        return Vec::new();
    };
    match result {
        Ok(runs) => {
            r.runs = runs;
            r.load = Load::Loaded;
        }
        // The runs read before stay on the chart; the sentence says they could not be
        // read again only when there are none.
        Err(e) => r.load = Load::Failed(e.into()),
    }
    Vec::new()
}

/// What the timeline knows of the table's maintenance DAG.
pub fn dag_runs(s: &State) -> DagRuns {
    if !s.airflow_configured {
        return DagRuns::NoAirflow;
    }
    let Some(dag_id) = mapped_dag(s) else {
        // Before the first DAG list, "no DAG maps" would be a guess.
        return if s.dags.rows.is_empty() && s.dags.load != Load::Loaded {
            DagRuns::NotRead
        } else {
            DagRuns::NotMapped
        };
    };
    match s.snapshots.runs.as_ref().filter(|r| r.dag_id == dag_id) {
        Some(r) if !r.runs.is_empty() || r.load == Load::Loaded => DagRuns::Loaded {
            dag_id,
            runs: r.runs.clone(),
        },
        Some(TimelineRuns {
            load: Load::Failed(e),
            ..
        }) => DagRuns::Failed {
            dag_id,
            error: e.to_string(),
        },
        _ => DagRuns::Loading(dag_id),
    }
}

/// The timeline of the Snapshots tab's table: its snapshots and its DAG's runs.
pub fn timeline(s: &State) -> Timeline {
    let snaps: Vec<SnapshotInfo> = s.snapshots.rows.iter().map(|r| r.info.clone()).collect();
    let mut tl = timeline::build(
        &snaps,
        &dag_runs(s),
        s.now,
        chrono::Duration::from_std(s.health.compaction_warn).unwrap_or(chrono::Duration::hours(36)),
    );
    // A Delta table's log: what its vacuum would delete, after the story.
    match &s.snapshots.log {
        Some(Ok(f)) => {
            tl.sentence.push_str(" · ");
            tl.sentence
                .push_str(&f.summary(s.health.snapshot_retention.as_secs()));
        }
        Some(Err(e)) => tl
            .sentence
            .push_str(&format!(" · the table's log could not be read: {e}")),
        None => {}
    }
    tl
}

impl TableDetail for SnapshotsView {
    fn detail(&mut self) -> &mut Detail {
        &mut self.detail
    }
    fn effect(request: u64, table: TableRef) -> Effect {
        Effect::LoadSnapshots { request, table }
    }
}

/// Point the Snapshots tab at the opened table (else the selected one) and load it (when needed or forced).
pub fn load(s: &mut State, force: bool) -> Vec<Effect> {
    let selected = s.tables.focus();
    let mut fx = detail::load(&mut s.snapshots, selected, force);
    // Snapshots already there: the DAG may have been mapped since they arrived.
    if fx.is_empty() && s.snapshots.detail.load == Load::Loaded {
        fx = load_runs(s, false);
    }
    fx
}

/// Load the snapshots of `table` again (it is the focused one).
pub fn reload(s: &mut State, table: TableRef) -> Vec<Effect> {
    detail::reload(&mut s.snapshots, table)
}

#[cfg(test)]
mod tests {
    use super::SnapshotsMsg;
    use crate::app::action::{Action, Effect};
    use crate::app::testing::*;
    use crate::app::update::update;
    use crate::lakehouse::model::SnapshotInfo;

    #[test]
    fn snapshots_tab_loads_and_orders_newest_first() {
        let mut s = loaded();
        let fx = update(&mut s, key('3'));
        assert_eq!(
            fx,
            vec![Effect::LoadSnapshots {
                request: 1,
                table: tref("zoning", "documents")
            }]
        );
        let snaps: Vec<SnapshotInfo> = (0..5)
            .map(|i| SnapshotInfo {
                committed_at: t0() - chrono::Duration::days(5 - i),
                snapshot_id: 100 + i,
                parent_id: None,
                operation: if i == 1 {
                    crate::lakehouse::model::SnapshotOperation::Replace
                } else {
                    crate::lakehouse::model::SnapshotOperation::Append
                },
                added_data_files: Some(10),
                deleted_data_files: if i == 1 { Some(40) } else { None },
                total_data_files: Some(10 * i as u64),
                added_records: None,
                total_records: None,
                total_delete_files: None,
                added_files_size: None,
                removed_files_size: None,
                trino_user: None,
                trino_query_id: None,
            })
            .collect();
        update(
            &mut s,
            Action::Snapshots(SnapshotsMsg::Loaded {
                request: 1,
                table: tref("zoning", "documents"),
                result: Ok(snaps),
            }),
        );
        let first = &s.snapshots.rows[s.snapshots.grid.index[0]].info;
        assert_eq!(first.snapshot_id, 104);
    }
}
