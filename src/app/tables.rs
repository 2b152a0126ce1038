//! The Tables tab: every table, worst first, and the messages that fill it. How a refresh
//! spends statements (the probe, the full read's queue, a cold start's ranking) is in
//! [`refresh`]; the health breakdown a table's side panel and `i` popup draw is the UI's
//! (`ui::breakdown`).

use chrono::{DateTime, Utc};

use super::action::Effect;
use super::grid::Grid;
use super::state::{Load, State};
use crate::health::{DagFacts, Health, Severity};
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::{DEFAULT_PROBE_BATCH, Probe};
use crate::trino::TrinoError;

mod columns;
mod export;
mod refresh;
#[cfg(test)]
mod tests;
pub use columns::{TABLE_SORTS, TableCol, WIDE, cmp_tables, opt};
pub use export::export_view;
pub use refresh::{
    adopt_probe, cache_entries, full_due, rank_queue, record_cost, reevaluate, refresh, reload_row,
    reread, rotation, same_snapshot, spent_per_minute, warm_start,
};
use refresh::{on_discovered, on_probed, on_stats, on_surveyed};

#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    pub table: TableRef,
    pub name: String,
    /// Lower-cased searchable text.
    pub search: String,
    pub stats: Option<TableStats>,
    pub health: Option<Health>,
    pub error: Option<String>,
    /// A reload is in flight; the values shown are from the previous refresh.
    pub stale: bool,
    pub loading: bool,
    pub dag: Option<DagFacts>,
    /// What the change probe last saw (the snapshot the stats are of).
    pub probe: Option<Probe>,
    /// When the stats shown were read.
    pub read_at: Option<DateTime<Utc>>,
    /// The stats come from the cache of an earlier run and are not confirmed yet: shown
    /// "as of" `read_at` until the probe finds the same snapshot (or they are re-read).
    pub cached: bool,
    /// When floe last looked at the table (a probe or a read): a steady refresh looks at
    /// the least recently checked first, every table within `full_refresh_every`.
    pub checked_at: Option<DateTime<Utc>>,
}

impl TableRow {
    pub fn new(table: TableRef) -> TableRow {
        let name = format!("{}.{}", table.schema, table.table);
        TableRow {
            search: name.to_lowercase(),
            name,
            table,
            stats: None,
            health: None,
            error: None,
            stale: false,
            loading: false,
            dag: None,
            probe: None,
            read_at: None,
            cached: false,
            checked_at: None,
        }
    }

    /// The row's verdict. A table whose last read failed is UNKNOWN (what Triage says of
    /// it), unless the verdict of its last good read was worse: what is shown is old.
    pub fn status(&self) -> Option<Severity> {
        let last = self.health.as_ref().map(|h| h.status);
        if self.error.is_some() {
            return Some(match last {
                Some(s) if s.rank() > Severity::Unknown.rank() => s,
                _ => Severity::Unknown,
            });
        }
        last
    }
}

#[derive(Clone, Debug, Default)]
pub struct TablesView {
    pub rows: Vec<TableRow>,
    pub grid: Grid,
    pub load: Load,
    /// Refresh generation; results of older generations are dropped.
    pub generation: u64,
    /// Tables of the current generation whose probe or stats are still in flight.
    pub pending: usize,
    /// The table the operator opened (Enter, or a detail tab left the Tables tab for):
    /// what the Partitions and Snapshots tabs are about, whatever row sorts first now.
    pub opened: Option<TableRef>,
    pub policy: RefreshPolicy,
    /// When every table was last read in full (`None`: never, the next refresh is a
    /// full one). A warm start counts as one: the probe revalidates the cache.
    pub last_full: Option<DateTime<Utc>>,
    /// The refresh in flight re-reads every table whatever its probe says.
    pub full: bool,
    /// The file reads of the full refresh in flight not started yet, the next first:
    /// started as others end, at most `policy.reads` at a time, ordered by what the
    /// surveys prove (the most excess files first), so that the worst tables come first.
    pub queue: std::collections::VecDeque<TableRef>,
    /// File reads of the queue in flight.
    pub reading: usize,
    /// Survey batches of the full refresh still to send (up to `policy.rank_slots` of
    /// the `policy.reads` slots in flight while file reads wait), the next last.
    pub ranking: Vec<Vec<TableRef>>,
    /// Survey batches in flight.
    pub ranking_in_flight: usize,
    /// What floe's statements have cost the coordinator so far, read at each tick (the
    /// client's meter): the last ten minutes of readings, oldest first.
    pub ledger: std::collections::VecDeque<(DateTime<Utc>, crate::trino::Cost)>,
    /// The writes the coordinator finished from this time on are the next refresh's
    /// first probes (`None` until a first refresh ended).
    pub writes_since: Option<DateTime<Utc>>,
    /// When the newest write read so far ended (the coordinator's clock): never read again.
    pub writes_seen: Option<DateTime<Utc>>,
    /// Tables the refresh in flight probes already (the written ones are added once).
    pub probing: std::collections::HashSet<TableRef>,
    /// Probe batches of the refresh not sent yet: at most all slots but one are probing
    /// at a time, so a table found changed (or named by a write) is read at once.
    pub probe_queue: std::collections::VecDeque<Vec<TableRef>>,
    /// Probe batches in flight.
    pub probes_in_flight: usize,
    /// Excess files each surveyed table is proved to hold (its totals' lower bound): the
    /// order of the file reads.
    pub rank: std::collections::HashMap<TableRef, u64>,
}

/// How a refresh spends statements: tables per probe, and how long after the last full
/// read every table is read again whatever its probe says (`None`: never). The probe sees
/// every commit (a snapshot, an expiry, a property, schema or spec change writes a new
/// metadata file), so every refresh costs the same; the full read is a safety net tied to
/// the clock, never to a count of refreshes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefreshPolicy {
    pub probe_batch: usize,
    /// Every table is looked at (probed) at least this often (`None`: only when a write
    /// through the coordinator names it, or the operator refreshes).
    pub full_every: Option<std::time::Duration>,
    /// What the steady refreshes may cost the coordinator per minute (planning plus task
    /// CPU; `None`: no limit).
    pub budget: Option<std::time::Duration>,
    /// Statements a full refresh keeps in flight (`max_concurrent_queries`).
    pub reads: usize,
    /// Of those, the slots a cold start's ranking takes while it lasts; the reads keep at
    /// least one (see [`RefreshPolicy::rank_window`]).
    pub rank_slots: usize,
}

/// The slots a cold start's ranking takes by default: all but the one read. A ranking
/// statement orders ten tables in the time a health statement reads one, so the first
/// CRITICAL rows come sooner when the fleet is ranked first; the statements are the same
/// (each table's layout is learned from its ranking, not by a statement of its own).
pub const DEFAULT_RANK_SLOTS: usize = 3;

impl Default for RefreshPolicy {
    fn default() -> RefreshPolicy {
        RefreshPolicy {
            probe_batch: DEFAULT_PROBE_BATCH,
            full_every: Some(crate::config::DEFAULT_FULL_REFRESH),
            budget: Some(crate::config::DEFAULT_COORDINATOR_BUDGET),
            reads: 4,
            rank_slots: DEFAULT_RANK_SLOTS,
        }
    }
}

impl RefreshPolicy {
    /// Ranking batches in flight at most, and health reads at most, while a cold start's
    /// ranking lasts: the ranking never takes the last read slot, and takes one even of a
    /// single slot (then two statements are in flight, as before ranking took slots).
    pub fn rank_window(&self) -> (usize, usize) {
        let reads = self.reads.max(1);
        let rank = self.rank_slots.clamp(1, (reads - 1).max(1));
        (rank, if reads > 1 { reads - rank } else { 1 })
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
}

/// Results for the Tables tab.
// Stats are the big variant and the common one (one per table per refresh): boxing them
// would only add an allocation. Action held them inline before it nested them.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum TablesMsg {
    Discovered {
        generation: u64,
        result: Result<Vec<TableRef>, TrinoError>,
    },
    Stats {
        generation: u64,
        table: TableRef,
        result: Result<TableStats, TrinoError>,
    },
    /// The change probe of a batch: one result per table.
    Probed {
        generation: u64,
        results: Vec<(TableRef, Result<Probe, TrinoError>)>,
    },
    /// The tables named by the writes the coordinator finished since the last look.
    Written {
        generation: u64,
        result: Result<crate::lakehouse::writes::RecentWrites, TrinoError>,
    },
    /// The files of a batch of surveyed tables: one result per table.
    FilesRead {
        generation: u64,
        results: Vec<(TableRef, Result<TableStats, TrinoError>)>,
    },
    /// The survey of a batch of a full read: one result per table.
    Surveyed {
        generation: u64,
        results: Vec<(
            TableRef,
            Result<crate::lakehouse::summary::Survey, TrinoError>,
        )>,
    },
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

/// The Tables tab's messages: discovery and stats results.
pub fn update(s: &mut State, msg: TablesMsg) -> Vec<Effect> {
    match msg {
        TablesMsg::Discovered { generation, result } => on_discovered(s, generation, result),
        TablesMsg::Stats {
            generation,
            table,
            result,
        } => on_stats(s, generation, &table, result),
        TablesMsg::Probed {
            generation,
            results,
        } => on_probed(s, generation, results),
        TablesMsg::Surveyed {
            generation,
            results,
        } => on_surveyed(s, generation, results),
        TablesMsg::FilesRead {
            generation,
            results,
        } => refresh::on_files_read(s, generation, results),
        TablesMsg::Written { generation, result } => refresh::on_written(s, generation, result),
    }
}
