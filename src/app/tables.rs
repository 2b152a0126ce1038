//! The Tables tab: every table, worst first; the discovery and stats results that fill
//! it, and the health breakdown of a table (the side panel and the `i` popup).

use std::cmp::Ordering;

use super::action::{Action, Effect};
use super::grid::{Grid, opt_cmp, opt_desc};
use super::layout::Width;
use super::state::{Level, Load, State};
use crate::config::units::human_bytes;
use crate::health::{DagFacts, Health, Severity, evaluate};
use crate::lakehouse::model::{TableRef, TableStats};

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
        }
    }

    pub fn status(&self) -> Option<Severity> {
        if self.error.is_some() && self.health.is_none() {
            return Some(Severity::Unknown);
        }
        self.health.as_ref().map(|h| h.status)
    }
}

/// The columns of the Tables tab: drawn (those of [`TableCol::SHOWN`] that fit), sorted
/// by (in [`TABLE_SORTS`] order) and exported (in [`TableCol::EXPORTED`] order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableCol {
    Catalog,
    Schema,
    Status,
    Score,
    Table,
    Files,
    Small,
    AvgSize,
    Size,
    Records,
    Partitions,
    SmallPartitions,
    Snapshots,
    Compacted,
    Written,
    Deletes,
    Dag,
    Findings,
}

/// Sort columns of the Tables tab, in `s` cycling order.
pub const TABLE_SORTS: [TableCol; 12] = [
    TableCol::Status,
    TableCol::Table,
    TableCol::Files,
    TableCol::Small,
    TableCol::AvgSize,
    TableCol::Size,
    TableCol::Records,
    TableCol::Partitions,
    TableCol::Snapshots,
    TableCol::Compacted,
    TableCol::Written,
    TableCol::Deletes,
];

/// From this list width on the wide columns show.
pub const WIDE: u16 = 110;

impl TableCol {
    /// Drawn columns, left to right.
    pub const SHOWN: [TableCol; 14] = [
        TableCol::Status,
        TableCol::Score,
        TableCol::Table,
        TableCol::Files,
        TableCol::Small,
        TableCol::AvgSize,
        TableCol::Size,
        TableCol::Records,
        TableCol::Partitions,
        TableCol::Snapshots,
        TableCol::Compacted,
        TableCol::Written,
        TableCol::Deletes,
        TableCol::Dag,
    ];

    /// Exported fields, in file order.
    pub const EXPORTED: [TableCol; 17] = [
        TableCol::Catalog,
        TableCol::Schema,
        TableCol::Table,
        TableCol::Status,
        TableCol::Score,
        TableCol::Files,
        TableCol::Small,
        TableCol::AvgSize,
        TableCol::Size,
        TableCol::Records,
        TableCol::Partitions,
        TableCol::SmallPartitions,
        TableCol::Snapshots,
        TableCol::Deletes,
        TableCol::Compacted,
        TableCol::Written,
        TableCol::Findings,
    ];

    pub fn header(self) -> &'static str {
        match self {
            TableCol::Status => "STAT",
            TableCol::Score => "SCORE",
            TableCol::Table => "TABLE",
            TableCol::Files => "FILES",
            TableCol::Small => "SMALL",
            TableCol::AvgSize => "AVG",
            TableCol::Size => "SIZE",
            TableCol::Records => "RECORDS",
            TableCol::Partitions => "PARTS",
            TableCol::Snapshots => "SNAPS",
            TableCol::Compacted => "COMPACTED",
            TableCol::Written => "WRITTEN",
            TableCol::Deletes => "DELETES",
            TableCol::Dag => "MAINTENANCE DAG",
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => "",
        }
    }

    /// The width drawn; `wide` when the wide columns show (narrow, COMPACTED also holds
    /// the maintenance DAG's mark).
    pub fn width(self, wide: bool) -> Width {
        Width::Fixed(match self {
            TableCol::Table => return Width::Min(20),
            TableCol::Status | TableCol::Score | TableCol::Snapshots => 5,
            TableCol::Files | TableCol::Small | TableCol::Partitions => 6,
            TableCol::AvgSize
            | TableCol::Size
            | TableCol::Records
            | TableCol::Written
            | TableCol::Deletes => 7,
            TableCol::Compacted if wide => 9,
            TableCol::Compacted => 10,
            TableCol::Dag => 24,
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => 0,
        })
    }

    /// Priority: the list width from which the column shows (narrower lists drop it);
    /// `None` for fields that are only exported.
    pub fn shown_from(self) -> Option<u16> {
        match self {
            TableCol::Status
            | TableCol::Score
            | TableCol::Table
            | TableCol::Files
            | TableCol::Small
            | TableCol::AvgSize
            | TableCol::Size
            | TableCol::Compacted => Some(0),
            TableCol::Records
            | TableCol::Partitions
            | TableCol::Snapshots
            | TableCol::Written
            | TableCol::Deletes => Some(WIDE),
            TableCol::Dag => Some(150),
            TableCol::Catalog
            | TableCol::Schema
            | TableCol::SmallPartitions
            | TableCol::Findings => None,
        }
    }

    /// The columns a list `width` wide shows (the DAG's only with Airflow).
    pub fn shown(width: u16, airflow: bool) -> Vec<TableCol> {
        TableCol::SHOWN
            .into_iter()
            .filter(|c| c.shown_from().is_some_and(|w| width >= w))
            .filter(|c| *c != TableCol::Dag || airflow)
            .collect()
    }

    /// The name `s` shows when sorting by this column.
    pub fn sort_name(self) -> &'static str {
        match self {
            TableCol::Status | TableCol::Score => "health",
            TableCol::Table => "table",
            TableCol::Files => "files",
            TableCol::Small => "small",
            TableCol::AvgSize => "avg size",
            TableCol::Size => "size",
            TableCol::Records => "records",
            TableCol::Partitions => "partitions",
            TableCol::Snapshots => "snapshots",
            TableCol::Compacted => "compacted",
            TableCol::Written => "written",
            TableCol::Deletes => "deletes",
            TableCol::Catalog => "catalog",
            TableCol::Schema => "schema",
            TableCol::SmallPartitions => "small partitions",
            TableCol::Dag => "dag",
            TableCol::Findings => "findings",
        }
    }

    /// Order two rows by this column (ties: by table).
    pub fn cmp(self, a: &TableRow, b: &TableRow) -> Ordering {
        let s = |r: &TableRow, f: fn(&TableStats) -> u64| r.stats.as_ref().map(f);
        let o = match self {
            TableCol::Status | TableCol::Score => {
                let rank = |r: &TableRow| r.status().map(|s| s.rank());
                opt_desc(rank(a), rank(b))
                    .then(opt_cmp(
                        a.health.as_ref().map(|h| h.score),
                        b.health.as_ref().map(|h| h.score),
                    ))
                    .then(opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)))
            }
            TableCol::Files => opt_desc(s(a, |x| x.data_files), s(b, |x| x.data_files)),
            TableCol::Small => opt_desc(s(a, |x| x.small_files), s(b, |x| x.small_files)),
            TableCol::AvgSize => opt_cmp(
                a.stats.as_ref().and_then(|x| x.avg_file_size()),
                b.stats.as_ref().and_then(|x| x.avg_file_size()),
            ),
            TableCol::Size => opt_desc(s(a, |x| x.total_bytes), s(b, |x| x.total_bytes)),
            TableCol::Records => opt_desc(s(a, |x| x.records), s(b, |x| x.records)),
            TableCol::Partitions => opt_desc(s(a, |x| x.partitions), s(b, |x| x.partitions)),
            TableCol::SmallPartitions => opt_desc(
                s(a, |x| x.small_file_partitions),
                s(b, |x| x.small_file_partitions),
            ),
            TableCol::Snapshots => opt_desc(s(a, |x| x.snapshots), s(b, |x| x.snapshots)),
            // Oldest compaction first (never compacted first of all).
            TableCol::Compacted => {
                let t = |r: &TableRow| {
                    r.stats
                        .as_ref()
                        .map(|x| x.last_compaction.map(|t| t.timestamp()).unwrap_or(i64::MIN))
                };
                opt_cmp(t(a), t(b))
            }
            TableCol::Written => {
                let t = |r: &TableRow| {
                    r.stats
                        .as_ref()
                        .and_then(|x| x.last_write.map(|t| t.timestamp()))
                };
                opt_desc(t(a), t(b))
            }
            TableCol::Deletes => opt_desc(s(a, |x| x.delete_files), s(b, |x| x.delete_files)),
            TableCol::Table
            | TableCol::Catalog
            | TableCol::Schema
            | TableCol::Dag
            | TableCol::Findings => Ordering::Equal,
        };
        o.then_with(|| a.table.cmp(&b.table))
    }

    /// The field's name in an export.
    pub fn field(self) -> &'static str {
        match self {
            TableCol::Catalog => "catalog",
            TableCol::Schema => "schema",
            TableCol::Table => "table",
            TableCol::Status => "status",
            TableCol::Score => "score",
            TableCol::Files => "data_files",
            TableCol::Small => "small_files",
            TableCol::AvgSize => "avg_file_bytes",
            TableCol::Size => "total_bytes",
            TableCol::Records => "records",
            TableCol::Partitions => "partitions",
            TableCol::SmallPartitions => "small_file_partitions",
            TableCol::Snapshots => "snapshots",
            TableCol::Deletes => "delete_files",
            TableCol::Compacted => "last_compaction",
            TableCol::Written => "last_write",
            TableCol::Dag => "maintenance_dag",
            TableCol::Findings => "findings",
        }
    }

    /// The field's value in an export.
    pub fn export(self, r: &TableRow) -> String {
        let st = r.stats.as_ref();
        let n = |f: fn(&TableStats) -> u64| opt(st.map(f));
        let ts = |t: Option<chrono::DateTime<chrono::Utc>>| {
            t.map(|t| t.to_rfc3339()).unwrap_or_default()
        };
        match self {
            TableCol::Catalog => r.table.catalog.clone(),
            TableCol::Schema => r.table.schema.clone(),
            TableCol::Table => r.table.table.clone(),
            TableCol::Status => r
                .status()
                .map(|x| x.label().to_string())
                .unwrap_or_default(),
            TableCol::Score => opt(r.health.as_ref().map(|h| h.score)),
            TableCol::Files => n(|x| x.data_files),
            TableCol::Small => n(|x| x.small_files),
            TableCol::AvgSize => opt(st.and_then(|x| x.avg_file_size())),
            TableCol::Size => n(|x| x.total_bytes),
            TableCol::Records => n(|x| x.records),
            TableCol::Partitions => n(|x| x.partitions),
            TableCol::SmallPartitions => n(|x| x.small_file_partitions),
            TableCol::Snapshots => n(|x| x.snapshots),
            TableCol::Deletes => n(|x| x.delete_files),
            TableCol::Compacted => ts(st.and_then(|x| x.last_compaction)),
            TableCol::Written => ts(st.and_then(|x| x.last_write)),
            TableCol::Dag => r.dag.as_ref().map(|d| d.dag_id.clone()).unwrap_or_default(),
            TableCol::Findings => r
                .health
                .as_ref()
                .map(|h| {
                    h.findings
                        .iter()
                        .map(|f| format!("[{}] {}", f.severity.label(), f.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .or_else(|| r.error.clone())
                .unwrap_or_default(),
        }
    }
}

/// An optional value as exported (empty when unknown).
pub fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

pub fn cmp_tables(a: &TableRow, b: &TableRow, col: usize) -> Ordering {
    TABLE_SORTS
        .get(col)
        .copied()
        .unwrap_or(TableCol::Deletes)
        .cmp(a, b)
}

#[derive(Clone, Debug, Default)]
pub struct TablesView {
    pub rows: Vec<TableRow>,
    pub grid: Grid,
    pub load: Load,
    /// Refresh generation; results of older generations are dropped.
    pub generation: u64,
    /// Stats queries of the current generation still in flight.
    pub pending: usize,
}

impl TablesView {
    pub fn reindex(&mut self) {
        self.grid
            .rebuild(&self.rows, |r| r.search.as_str(), cmp_tables, None);
    }

    pub fn selected(&self) -> Option<&TableRow> {
        self.grid.selected_row().and_then(|i| self.rows.get(i))
    }

    pub fn row_mut(&mut self, t: &TableRef) -> Option<&mut TableRow> {
        self.rows.iter_mut().find(|r| &r.table == t)
    }

    pub fn row(&self, t: &TableRef) -> Option<&TableRow> {
        self.rows.iter().find(|r| &r.table == t)
    }
}

/// The Tables tab's messages: discovery and stats results.
pub fn update(s: &mut State, action: Action) -> Vec<Effect> {
    match action {
        Action::Discovered { generation, result } => on_discovered(s, generation, result),
        Action::Stats {
            generation,
            table,
            result,
        } => {
            on_stats(s, generation, &table, result);
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// Start a refresh of the table list (unless one is running).
pub fn refresh(s: &mut State, manual: bool) -> Vec<Effect> {
    if s.refresh_in_flight() {
        if manual {
            s.set_status(Level::Info, "a refresh is already running");
        }
        return Vec::new();
    }
    s.tables.generation += 1;
    s.tables.load = Load::Loading;
    for r in &mut s.tables.rows {
        r.stale = true;
    }
    s.last_refresh = Some(s.now);
    vec![
        Effect::FetchServerInfo,
        Effect::Discover {
            generation: s.tables.generation,
            schemas: s.schemas.clone(),
        },
    ]
}

fn on_stats(s: &mut State, generation: u64, table: &TableRef, result: Result<TableStats, String>) {
    if generation != s.tables.generation {
        return;
    }
    s.tables.pending = s.tables.pending.saturating_sub(1);
    let now = s.now;
    let cfg = s.health.clone();
    if let Some(row) = s.tables.row_mut(table) {
        row.loading = false;
        row.stale = false;
        match result {
            Ok(stats) => {
                row.health = Some(evaluate(&stats, row.dag.as_ref(), &cfg, now));
                row.stats = Some(stats);
                row.error = None;
            }
            Err(e) => row.error = Some(e),
        }
    }
    if s.tables.pending == 0 {
        let failed: Vec<String> = s
            .tables
            .rows
            .iter()
            .filter(|r| r.error.is_some())
            .map(|r| r.name.clone())
            .collect();
        if let Some(first) = failed.first() {
            let e = s
                .tables
                .rows
                .iter()
                .find(|r| &r.name == first)
                .and_then(|r| r.error.clone())
                .unwrap_or_default();
            s.set_status(
                Level::Error,
                format!(
                    "{} of {} tables failed to load; {first}: {e}",
                    failed.len(),
                    s.tables.rows.len()
                ),
            );
        }
    }
    s.tables.reindex();
}

fn on_discovered(
    s: &mut State,
    generation: u64,
    result: Result<Vec<TableRef>, String>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    match result {
        Ok(tables) => {
            let old = std::mem::take(&mut s.tables.rows);
            let mut rows = Vec::with_capacity(tables.len());
            for t in &tables {
                let mut row = old
                    .iter()
                    .find(|r| &r.table == t)
                    .cloned()
                    .unwrap_or_else(|| TableRow::new(t.clone()));
                row.loading = true;
                rows.push(row);
            }
            s.tables.rows = rows;
            s.tables.load = Load::Loaded;
            super::dags::correlate(s);
            s.tables.pending = s.tables.rows.len();
            s.tables.reindex();
            if s.tables.rows.is_empty() {
                let scope = if s.schemas.is_empty() {
                    "the catalog".to_string()
                } else {
                    format!("schemas {}", s.schemas.join(", "))
                };
                s.set_status(Level::Warn, format!("no Iceberg tables found in {scope}"));
            }
            // Worst known first, so what matters fills in first.
            let order: Vec<TableRef> = s
                .tables
                .grid
                .index
                .iter()
                .map(|&i| s.tables.rows[i].table.clone())
                .collect();
            let generation = s.tables.generation;
            order
                .into_iter()
                .map(|table| Effect::LoadStats { generation, table })
                .collect()
        }
        Err(e) => {
            s.tables.load = Load::Failed(e.clone());
            s.tables.pending = 0;
            for r in &mut s.tables.rows {
                r.stale = false;
            }
            s.set_status(Level::Error, format!("cannot list tables: {e}"));
            Vec::new()
        }
    }
}

/// Re-read a table's stats (its row) after something changed it.
pub fn reload_row(s: &mut State, table: &TableRef) -> Option<Effect> {
    let row = s.tables.row_mut(table)?;
    row.loading = true;
    row.stale = true;
    s.tables.pending += 1;
    Some(Effect::LoadStats {
        generation: s.tables.generation,
        table: table.clone(),
    })
}

/// One line per finding, for the health popup and the side panel.
pub fn health_breakdown(s: &State, t: &TableRef) -> Vec<(Severity, String)> {
    let Some(row) = s.tables.row(t) else {
        return vec![(Severity::Unknown, format!("{t} is not loaded"))];
    };
    let mut out = Vec::new();
    if let Some(h) = &row.health {
        out.push((
            h.status,
            format!("{} — score {}/100", h.status.label(), h.score),
        ));
        for f in &h.findings {
            let pen = if f.penalty > 0 {
                format!(" (−{})", f.penalty)
            } else {
                String::new()
            };
            out.push((
                f.severity,
                format!("[{}] {}{pen}: {}", f.severity.short(), f.rule, f.message),
            ));
        }
        if h.findings.is_empty() {
            out.push((Severity::Ok, "no findings: every rule passes".into()));
        }
    }
    if let Some(st) = &row.stats {
        out.push((Severity::Info, String::new()));
        out.push((
            Severity::Info,
            format!(
                "target {} ({}), {} data files, {} small, avg {}, {} total",
                human_bytes(st.target_file_size),
                if st.target_from_property {
                    "write.target-file-size-bytes"
                } else {
                    "config default"
                },
                st.data_files,
                st.small_files,
                st.avg_file_size()
                    .map(human_bytes)
                    .unwrap_or_else(|| "-".into()),
                human_bytes(st.total_bytes)
            ),
        ));
    }
    if let Some(e) = &row.error {
        out.push((Severity::Unknown, format!("last load failed: {e}")));
    }
    out
}
