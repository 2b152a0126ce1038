//! The Tables tab: every table, worst first; the discovery and stats results that fill
//! it, and the health breakdown of a table (the side panel and the `i` popup).

use super::action::Effect;
use super::grid::Grid;
use super::state::{Level, Load, State};
use crate::config::units::human_bytes;
use crate::health::{DagFacts, Health, Severity, evaluate};
use crate::lakehouse::model::{TableRef, TableStats};

mod columns;
pub use columns::{TABLE_SORTS, TableCol, WIDE, cmp_tables, opt};

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

#[derive(Clone, Debug, Default)]
pub struct TablesView {
    pub rows: Vec<TableRow>,
    pub grid: Grid,
    pub load: Load,
    /// Refresh generation; results of older generations are dropped.
    pub generation: u64,
    /// Stats queries of the current generation still in flight.
    pub pending: usize,
    /// The table the operator opened (Enter, or a detail tab left the Tables tab for):
    /// what the Partitions and Snapshots tabs are about, whatever row sorts first now.
    pub opened: Option<TableRef>,
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
        result: Result<Vec<TableRef>, String>,
    },
    Stats {
        generation: u64,
        table: TableRef,
        result: Result<TableStats, String>,
    },
}

/// The Tables tab's messages: discovery and stats results.
pub fn update(s: &mut State, msg: TablesMsg) -> Vec<Effect> {
    match msg {
        TablesMsg::Discovered { generation, result } => on_discovered(s, generation, result),
        TablesMsg::Stats {
            generation,
            table,
            result,
        } => {
            on_stats(s, generation, &table, result);
            Vec::new()
        }
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
            let key = s.tables.selected().map(|r| r.table.clone());
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
            s.tables.reindex_keeping(key);
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
/// The facts behind the newer rules, one line each, only those the server reported.
pub fn detail_facts(
    st: &crate::lakehouse::model::TableStats,
    now: chrono::DateTime<chrono::Utc>,
) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(w) = st.oldest_small_file_at
        && st.small_files > 0
    {
        out.push(format!(
            "small files waiting since {} (oldest live small file)",
            crate::fmt::human_duration((now - w).num_seconds().max(0))
        ));
    }
    if st.delete_files > 0 {
        out.push(format!(
            "deletes: {} position files ({} rows), {} equality files ({} keys), {}",
            st.position_delete_files,
            st.position_deletes,
            st.equality_delete_files,
            st.equality_deletes,
            human_bytes(st.delete_bytes)
        ));
    }
    let mut meta = Vec::new();
    if let Some(m) = st.manifests {
        meta.push(format!(
            "{m} manifests ({} small{})",
            st.small_manifests.unwrap_or(0),
            st.manifest_bytes
                .map(|b| format!(", {}", human_bytes(b)))
                .unwrap_or_default()
        ));
    }
    if let Some(m) = st.metadata_files {
        meta.push(format!("{m} metadata files"));
    }
    if st.large_files > 0 {
        meta.push(format!("{} files over the large-file line", st.large_files));
    }
    if !meta.is_empty() {
        out.push(meta.join(", "));
    }
    out
}

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
        for line in detail_facts(st, s.now) {
            out.push((Severity::Info, line));
        }
    }
    if let Some(e) = &row.error {
        out.push((Severity::Unknown, format!("last load failed: {e}")));
    }
    out
}
