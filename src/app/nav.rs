//! Moving through the lists: selection, pages, sort, tabs, enter and back. Each tab's
//! list is a `Grid`; the DAG log scrolls instead.

use super::action::Effect;
use super::dags::DagLevel;
use super::state::{Level, State, Tab};

/// The DAGs tab shows a task's log (which scrolls and searches instead of a list).
pub fn in_log(s: &State) -> bool {
    s.tab == Tab::Dags && s.dags.level() == DagLevel::Log
}

/// Re-apply filter and sort to the list on screen.
pub fn reindex_current(s: &mut State) {
    match s.tab {
        Tab::Triage => super::triage::reindex(s),
        Tab::Tables => s.tables.reindex(),
        Tab::Partitions => s.partitions.reindex(None),
        Tab::Snapshots => s.snapshots.reindex(),
        Tab::Dags => s.dags.reindex_level(),
    }
}

/// The names of the sort columns of a tab, in `s` cycling order.
fn sort_columns(tab: Tab) -> Vec<&'static str> {
    match tab {
        Tab::Tables => super::tables::TABLE_SORTS.map(|c| c.sort_name()).to_vec(),
        Tab::Partitions => super::partitions::PARTITION_SORTS
            .map(|c| c.sort_name())
            .to_vec(),
        Tab::Snapshots => super::snapshots::SNAPSHOT_SORTS
            .map(|c| c.sort_name())
            .to_vec(),
        Tab::Dags | Tab::Triage => Vec::new(),
    }
}

/// Move the selection (or scroll the log) by `delta` rows.
pub fn move_by(s: &mut State, delta: isize) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, delta, h);
    } else if let Some(g) = s.grid_mut() {
        g.move_by(delta, h);
    }
}

pub fn top(s: &mut State) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, isize::MIN / 2, h);
    } else if let Some(g) = s.grid_mut() {
        g.top(h);
    }
}

pub fn bottom(s: &mut State) {
    let h = s.page_height();
    if in_log(s) {
        super::dags::scroll_log(s, isize::MAX / 2, h);
    } else if let Some(g) = s.grid_mut() {
        g.bottom(h);
    }
}

/// `s` (next column) and `S` (reverse).
pub fn sort(s: &mut State, next: bool) {
    let cols = sort_columns(s.tab);
    if let Some(g) = s.grid_mut() {
        if next {
            g.cycle_sort(cols.len());
        } else {
            g.reverse = !g.reverse;
        }
        let text = format!(
            "sorted by {}{}",
            cols.get(g.sort_col).unwrap_or(&""),
            if g.reverse { " (reversed)" } else { "" }
        );
        reindex_current(s);
        s.set_status(Level::Info, text);
    }
}

pub fn switch_tab(s: &mut State, tab: Tab) -> Vec<Effect> {
    // The operator chose: floe no longer moves on its own.
    s.auto_start = false;
    if s.tab == Tab::Tables && matches!(tab, Tab::Partitions | Tab::Snapshots) {
        open_selected(s);
    }
    s.tab = tab;
    let h = s.page_height();
    if let Some(g) = s.grid_mut() {
        g.ensure_visible(h);
    }
    match tab {
        Tab::Partitions => super::partitions::load(s, false),
        Tab::Snapshots => super::snapshots::load(s, false),
        _ => Vec::new(),
    }
}

/// The selected row becomes the opened table: the Partitions and Snapshots tabs follow
/// it, and the Tables selection stays on it through re-sorts and refreshes.
fn open_selected(s: &mut State) {
    if let Some(t) = s.tables.selected().map(|r| r.table.clone()) {
        s.tables.grid.moved = true;
        s.tables.opened = Some(t);
    }
}

/// Open `table` from anywhere (it need not be the selected row): it becomes the table
/// the detail tabs are about, and the Tables selection moves to it.
pub fn open_table(s: &mut State, table: crate::lakehouse::model::TableRef) {
    s.tables.grid.moved = true;
    s.tables.reindex_keeping(Some(table.clone()));
    s.tables.opened = Some(table);
}

/// Enter: a table opens its partitions; on the DAGs tab, one level down.
pub fn enter(s: &mut State) -> Vec<Effect> {
    if s.tab == Tab::Triage {
        return super::triage::enter(s);
    }
    if s.tab == Tab::Tables && s.tables.selected().is_some() {
        open_selected(s);
        s.tab = Tab::Partitions;
        return super::partitions::load(s, false);
    }
    if s.tab == Tab::Dags {
        return super::dags::enter(s);
    }
    Vec::new()
}

/// Esc: clear the filter, else the log search, else one level up, else the status.
pub fn back(s: &mut State) {
    if !super::prompt::current_filter(s).is_empty() {
        super::prompt::set_filter(s, "");
    } else if s.tab == Tab::Dags
        && s.dags.log.as_ref().is_some_and(|l| !l.search.is_empty())
        && s.dags.level() == DagLevel::Log
    {
        super::dags::search_log(s, "");
    } else if s.tab == Tab::Dags && super::dags::back(s) {
    } else if matches!(s.tab, Tab::Partitions | Tab::Snapshots) {
        s.tab = Tab::Tables;
    } else if s.status.is_some() {
        s.status = None;
    }
}
