//! The Tables tab: every table, worst first, and the messages that fill it. How a refresh
//! spends statements (the probe, the surveys, the file reads' queue) is the scheduler's
//! ([`crate::refresh`]); [`refresh`] applies its steps to the tab; the health breakdown a table's side panel and `i` popup draw is the UI's
//! (`ui::breakdown`).

use chrono::{DateTime, Utc};

use super::action::Effect;
use super::grid::Grid;
use super::state::{Load, State};
use crate::health::{DagFacts, Health, Severity};
use crate::lakehouse::model::{TableRef, TableStats};
use crate::refresh::{Answer, Refresh, RequestId, Standing, TableRead};
use crate::trino::TrinoError;

mod columns;
mod export;
mod refresh;
#[cfg(test)]
mod tests;
pub use columns::{TABLE_SORTS, TableCol, WIDE, cmp_tables, opt};
pub use export::export_view;
pub use refresh::{cache_entries, reevaluate, refresh, reload_row, reread, warm_start};

#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    pub table: TableRef,
    pub name: String,
    /// Lower-cased searchable text.
    pub search: String,
    /// What the table's verdict rests on (see [`crate::refresh`]).
    pub read: TableRead,
    /// The verdict of `read.stats` (never of a bound).
    pub health: Option<Health>,
    pub dag: Option<DagFacts>,
}

impl TableRow {
    pub fn new(table: TableRef) -> TableRow {
        let name = format!("{}.{}", table.schema, table.table);
        TableRow {
            search: name.to_lowercase(),
            name,
            table,
            read: TableRead::default(),
            health: None,
            dag: None,
        }
    }

    /// Name each row as its table's schema and name, or with its catalog too where the
    /// rows come from more than one catalog (a profile reading several).
    pub fn name_all(rows: &mut [TableRow]) {
        let several = rows
            .first()
            .is_some_and(|f| rows.iter().any(|r| r.table.catalog != f.table.catalog));
        for r in rows {
            let name = if several {
                format!("{}.{}.{}", r.table.catalog, r.table.schema, r.table.table)
            } else {
                format!("{}.{}", r.table.schema, r.table.table)
            };
            if name != r.name {
                r.search = name.to_lowercase();
                r.name = name;
            }
        }
    }

    /// The facts the screen shows: the verdict's, else what a survey proved while the
    /// table's files are read.
    pub fn stats(&self) -> Option<&TableStats> {
        self.read.shown()
    }

    /// Why the table's last look failed.
    pub fn error(&self) -> Option<&TrinoError> {
        self.read.error.as_ref()
    }

    /// The row's verdict. A table whose last read failed is UNKNOWN (what Triage says of
    /// it), unless the verdict of its last good read was worse: what is shown is old.
    pub fn status(&self) -> Option<Severity> {
        let last = self.health.as_ref().map(|h| h.status);
        if self.read.error.is_some() {
            return Some(match last {
                Some(s) if s.rank() > Severity::Unknown.rank() => s,
                _ => Severity::Unknown,
            });
        }
        last
    }

    /// Its verdict evaluated again (its facts or its DAG changed, or the clock moved).
    pub fn evaluate(&mut self, cfg: &crate::health::HealthConfig, now: DateTime<Utc>) {
        self.health = self
            .read
            .stats
            .as_ref()
            .map(|st| crate::health::evaluate(st, self.dag.as_ref(), cfg, now));
    }
}

#[derive(Clone, Debug, Default)]
pub struct TablesView {
    pub rows: Vec<TableRow>,
    pub grid: Grid,
    pub load: Load,
    /// The table the operator opened (Enter, or a detail tab left the Tables tab for):
    /// what the Partitions and Snapshots tabs are about, whatever row sorts first now.
    pub opened: Option<TableRef>,
    /// The refresh: its reads in flight and queued, its policy, its cost ledger.
    pub refresh: Refresh,
    /// A table's stats changed since the cache was last written.
    pub unsaved: bool,
}

impl crate::refresh::Records for Vec<TableRow> {
    fn get(&self, t: &TableRef) -> Option<&TableRead> {
        self.iter().find(|r| &r.table == t).map(|r| &r.read)
    }

    fn get_mut(&mut self, t: &TableRef) -> Option<&mut TableRead> {
        self.iter_mut().find(|r| &r.table == t).map(|r| &mut r.read)
    }
}

impl TablesView {
    /// Re-apply filter and sort; the selection stays on its table (by key).
    pub fn reindex(&mut self) {
        let key = self.selected().map(|r| r.table.clone());
        self.reindex_keeping(key);
    }

    /// Re-apply filter and sort with the selection on `key` once the operator has moved
    /// (rows may have been replaced: data indices mean nothing across a rediscovery).
    pub fn reindex_keeping(&mut self, key: Option<TableRef>) {
        match key {
            Some(key) => {
                let same = move |r: &TableRow| r.table == key;
                self.grid
                    .rebuild(&self.rows, |r| r.search.as_str(), cmp_tables, Some(&same));
            }
            None => self
                .grid
                .rebuild(&self.rows, |r| r.search.as_str(), cmp_tables, None),
        }
    }

    pub fn selected(&self) -> Option<&TableRow> {
        self.grid.selected_row().and_then(|i| self.rows.get(i))
    }

    /// The table the detail tabs are about: the opened one, else the selected row.
    pub fn focus(&self) -> Option<TableRef> {
        self.opened
            .clone()
            .or_else(|| self.selected().map(|r| r.table.clone()))
    }

    pub fn row_mut(&mut self, t: &TableRef) -> Option<&mut TableRow> {
        self.rows.iter_mut().find(|r| &r.table == t)
    }

    pub fn row(&self, t: &TableRef) -> Option<&TableRow> {
        self.rows.iter().find(|r| &r.table == t)
    }

    /// Where `row` stands in the refresh (read now, queued, or neither).
    pub fn standing(&self, row: &TableRow) -> Standing {
        self.refresh.standing(&row.table, &row.read)
    }
}

/// Results for the Tables tab: the answer to one of the refresh's reads.
#[derive(Clone, Debug)]
pub enum TablesMsg {
    Answer { id: RequestId, answer: Answer },
}

/// Enter: the selected table opens its partitions.
pub fn enter(s: &mut State) -> Vec<Effect> {
    if s.tables.selected().is_none() {
        return Vec::new();
    }
    super::nav::open_selected(s);
    s.tab = super::state::Tab::Partitions;
    super::partitions::load(s, false)
}

/// `y`: the selected table's quoted name.
pub fn copy(s: &mut State) -> Vec<Effect> {
    match s.tables.selected().map(|r| r.table.sql()) {
        Some(name) => super::copy::emit(s, "table name", &name),
        None => super::copy::emit(s, "table selected", ""),
    }
}

/// The Tables tab's messages: the refresh's answers.
pub fn update(s: &mut State, msg: TablesMsg) -> Vec<Effect> {
    match msg {
        TablesMsg::Answer { id, answer } => refresh::on_answer(s, id, answer),
    }
}
