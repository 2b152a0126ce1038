//! What the app asks of every tab, answered by each tab's feature: one entry per tab.
//! Navigation, copy, export, maintenance, the Airflow writes, the footer and help and the
//! screen geometry read this table instead of matching on the tab themselves, so a new
//! tab is in five places: the tab in `crate::tab` (its place in the tab bar and its
//! title; its key, `:tab`, keymap layer and help follow), its feature module in `app/`
//! (with its view in `State`), its entry here, its module in `ui/` (with its arm in
//! `ui::tab_view`), and its messages in `Action` with their line in the dispatcher
//! (`update.rs`).

use super::action::Effect;
use super::detail::Detail;
use super::export::ExportData;
use super::grid::Grid;
use super::keymap::Scope;
use super::state::{State, Tab};
use super::{dags, partitions, snapshots, tables, triage};
use crate::lakehouse::model::{PartitionStats, TableRef};

pub struct TabOps {
    /// A lakehouse tab: the commands shown as `lake` (optimize, expire snapshots, …) are
    /// hinted in its footer, and the help lists them under its title.
    pub lake: bool,
    /// A tab about one table, the opened one (Partitions, Snapshots): its [`Detail`]. The
    /// tab bar names that table, and leaving Tables for it opens the selected row.
    pub detail: Option<fn(&State) -> &Detail>,
    /// Its list (the DAGs tab's at the level on screen; none while a log is shown).
    pub grid: fn(&State) -> Option<&Grid>,
    pub grid_mut: fn(&mut State) -> Option<&mut Grid>,
    /// Re-apply filter and sort.
    pub reindex: fn(&mut State),
    /// The names of its sort columns, in `s` cycling order.
    pub sorts: fn() -> Vec<&'static str>,
    /// `y`: what is selected, to the clipboard.
    pub copy: fn(&mut State) -> Vec<Effect>,
    /// `e`: the view as listed; `None` for nothing to export.
    pub export: fn(&State) -> Option<ExportData>,
    /// The tab came on screen.
    pub arrive: fn(&mut State) -> Vec<Effect>,
    /// Enter.
    pub enter: fn(&mut State) -> Vec<Effect>,
    /// Esc, once the filter is clear: one level up; `false` when there is none.
    pub back: fn(&mut State) -> bool,
    /// Rows it spends above its list.
    pub extra_rows: fn(&State) -> usize,
    /// The table the tab is about: what maintenance, `i`, a DAG write of the table's DAG
    /// and the postmortem apply to.
    pub table: fn(&State) -> Option<TableRef>,
    /// What a refresh (`r`, or the timer's with `manual` false) reloads of it, beside the
    /// tables and the DAGs every refresh reads.
    pub refresh: fn(&mut State, bool) -> Vec<Effect>,
    /// Rows marked on it (the tab bar counts them).
    pub marked: fn(&State) -> usize,
    /// The partitions an optimize from it takes (`None`: those the drafter picks for the
    /// table, its small-file partitions).
    pub partitions: fn(&State) -> Option<Vec<PartitionStats>>,
    /// The DAG `t`, `C` and `p` apply to.
    pub dag: fn(&State) -> Option<String>,
    /// The DAG run `C` clears (`None`: the DAG's newest failed run).
    pub run: fn(&State) -> Option<String>,
    /// The Airflow connection `F` points elsewhere.
    pub connection: fn(&State) -> Option<String>,
}

impl Tab {
    /// The keymap layer of the tab (where its keys are looked up before the global ones).
    pub fn layer(self) -> Scope {
        Scope::Tab(self)
    }

    pub fn ops(self) -> &'static TabOps {
        match self {
            Tab::Triage => &TRIAGE,
            Tab::Tables => &TABLES,
            Tab::Partitions => &PARTITIONS,
            Tab::Snapshots => &SNAPSHOTS,
            Tab::Dags => &DAGS,
        }
    }
}

fn nothing(_: &mut State) -> Vec<Effect> {
    Vec::new()
}

fn no_export(_: &State) -> Option<ExportData> {
    None
}

fn no_sorts() -> Vec<&'static str> {
    Vec::new()
}

fn no_back(_: &mut State) -> bool {
    false
}

fn no_rows(_: &State) -> usize {
    0
}

fn no_table(_: &State) -> Option<TableRef> {
    None
}

fn no_reload(_: &mut State, _: bool) -> Vec<Effect> {
    Vec::new()
}

fn no_marks(_: &State) -> usize {
    0
}

fn drafted(_: &State) -> Option<Vec<PartitionStats>> {
    None
}

fn none(_: &State) -> Option<String> {
    None
}

fn partitions_detail(s: &State) -> &Detail {
    &s.partitions.detail
}

fn snapshots_detail(s: &State) -> &Detail {
    &s.snapshots.detail
}

/// A detail tab's Esc: back to the Tables tab.
fn to_tables(s: &mut State) -> bool {
    s.tab = Tab::Tables;
    true
}

const TRIAGE: TabOps = TabOps {
    lake: false,
    detail: None,
    grid: |s| Some(&s.triage.grid),
    grid_mut: |s| Some(&mut s.triage.grid),
    reindex: triage::reindex,
    sorts: no_sorts,
    copy: triage::copy,
    export: no_export,
    arrive: nothing,
    enter: triage::enter,
    back: no_back,
    extra_rows: |s| triage::detail_height(s.size.1),
    table: triage::selected_table,
    refresh: no_reload,
    marked: no_marks,
    partitions: drafted,
    dag: triage::selected_dag,
    run: none,
    connection: triage::selected_connection,
};

const TABLES: TabOps = TabOps {
    lake: true,
    detail: None,
    grid: |s| Some(&s.tables.grid),
    grid_mut: |s| Some(&mut s.tables.grid),
    reindex: |s| s.tables.reindex(),
    sorts: || tables::TABLE_SORTS.map(|c| c.sort_name()).to_vec(),
    copy: tables::copy,
    export: |s| Some(tables::export_view(s)),
    arrive: nothing,
    enter: tables::enter,
    back: no_back,
    extra_rows: no_rows,
    table: |s| s.tables.selected().map(|r| r.table.clone()),
    refresh: no_reload,
    marked: no_marks,
    partitions: drafted,
    dag: dags::writes::table_dag,
    run: none,
    connection: none,
};

const PARTITIONS: TabOps = TabOps {
    lake: true,
    detail: Some(partitions_detail),
    grid: |s| Some(&s.partitions.grid),
    grid_mut: |s| Some(&mut s.partitions.grid),
    reindex: |s| s.partitions.reindex(None),
    sorts: || partitions::PARTITION_SORTS.map(|c| c.sort_name()).to_vec(),
    copy: partitions::copy,
    export: partitions::export_view,
    arrive: |s| partitions::load(s, false),
    enter: nothing,
    back: to_tables,
    extra_rows: no_rows,
    table: |s| s.partitions.detail.table.clone(),
    refresh: |s, manual| {
        if manual || !s.partitions.detail.load.is_loading() {
            partitions::load(s, true)
        } else {
            Vec::new()
        }
    },
    marked: |s| s.partitions.marks.len(),
    partitions: partitions::optimize_targets,
    dag: dags::writes::table_dag,
    run: none,
    connection: none,
};

const SNAPSHOTS: TabOps = TabOps {
    lake: true,
    detail: Some(snapshots_detail),
    grid: |s| Some(&s.snapshots.grid),
    grid_mut: |s| Some(&mut s.snapshots.grid),
    reindex: |s| s.snapshots.reindex(),
    sorts: || snapshots::SNAPSHOT_SORTS.map(|c| c.sort_name()).to_vec(),
    copy: snapshots::copy,
    export: snapshots::export_view,
    arrive: |s| snapshots::load(s, false),
    enter: nothing,
    back: to_tables,
    extra_rows: |s| super::layout::chart_height(s.size.1),
    table: |s| s.snapshots.detail.table.clone(),
    refresh: |s, manual| {
        if manual || !s.snapshots.detail.load.is_loading() {
            snapshots::load(s, true)
        } else {
            Vec::new()
        }
    },
    marked: no_marks,
    partitions: drafted,
    dag: dags::writes::table_dag,
    run: none,
    connection: none,
};

const DAGS: TabOps = TabOps {
    lake: false,
    detail: None,
    grid: |s| s.dags.grid(),
    grid_mut: |s| s.dags.grid_mut(),
    reindex: |s| s.dags.reindex_level(),
    sorts: no_sorts,
    copy: dags::copy,
    export: no_export,
    arrive: nothing,
    enter: dags::enter,
    back: dags::back_level,
    extra_rows: no_rows,
    table: no_table,
    refresh: no_reload,
    marked: no_marks,
    partitions: drafted,
    dag: dags::writes::selected_dag,
    run: dags::writes::shown_run,
    connection: none,
};
