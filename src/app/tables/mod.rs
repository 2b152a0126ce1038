//! The Tables tab: every table, worst first; the discovery and stats results that fill
//! it, and the health breakdown of a table (the side panel and the `i` popup).

use chrono::{DateTime, Utc};

use super::action::Effect;
use super::grid::Grid;
use super::state::{Level, Load, State, StatusKind};
use crate::cache::Entry;
use crate::fmt::human_bytes;
use crate::health::{DagFacts, Health, Severity, evaluate};
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::{DEFAULT_PROBE_BATCH, Probe, RANK_BATCH};

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
    /// What the change probe last saw (the snapshot the stats are of).
    pub probe: Option<Probe>,
    /// When the stats shown were read.
    pub read_at: Option<DateTime<Utc>>,
    /// The stats come from the cache of an earlier run and are not confirmed yet: shown
    /// "as of" `read_at` until the probe finds the same snapshot (or they are re-read).
    pub cached: bool,
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
    /// The health reads of the full refresh in flight not started yet, the next first:
    /// started as others end, at most `policy.reads` at a time, so that what the
    /// ranking of a cold start shows still reorders them.
    pub queue: std::collections::VecDeque<TableRef>,
    /// Health reads of the queue in flight.
    pub reading: usize,
    /// Ranking batches of a cold start still to send (up to `policy.rank_slots` of the
    /// `policy.reads` slots in flight), the next last.
    pub ranking: Vec<Vec<TableRef>>,
    /// Ranking batches in flight.
    pub ranking_in_flight: usize,
    /// Live files (the current manifests'), per table ranked on this start.
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
    pub full_every: Option<std::time::Duration>,
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

/// Whether a refresh at `now` reads every table: never read in full yet, or the last
/// full read is `every` old (wall time, however many refreshes probed since).
pub fn full_due(
    last_full: Option<DateTime<Utc>>,
    every: Option<std::time::Duration>,
    now: DateTime<Utc>,
) -> bool {
    match (last_full, every) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(at), Some(every)) => (now - at).to_std().is_ok_and(|age| age >= every),
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
        result: Result<Vec<TableRef>, String>,
    },
    Stats {
        generation: u64,
        table: TableRef,
        result: Result<TableStats, String>,
    },
    /// The change probe of a batch: one result per table.
    Probed {
        generation: u64,
        results: Vec<(TableRef, Result<Probe, String>)>,
    },
    /// The first-read ranking of a batch: each table's live files.
    Ranked {
        generation: u64,
        results: Vec<(TableRef, Result<u64, String>)>,
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
        } => on_stats(s, generation, &table, result),
        TablesMsg::Probed {
            generation,
            results,
        } => on_probed(s, generation, results),
        TablesMsg::Ranked {
            generation,
            results,
        } => on_ranked(s, generation, results),
    }
}

/// Show the last known state of every table from the cache of an earlier run, marked
/// "as of" when it was read until the probe confirms it; the next refresh probes only.
/// Returns what the status line says of it (also set), none without entries.
pub fn warm_start(s: &mut State, entries: Vec<Entry>) -> Option<String> {
    if entries.is_empty() {
        return None;
    }
    let now = s.now;
    let cfg = s.health.clone();
    let oldest = entries.iter().map(|e| e.read_at).min();
    s.tables.rows = entries
        .into_iter()
        .map(|e| {
            let mut row = TableRow::new(e.table);
            row.health = Some(evaluate(&e.stats, None, &cfg, now));
            row.stats = Some(e.stats);
            row.probe = e.probe;
            row.read_at = Some(e.read_at);
            row.cached = true;
            row.stale = true;
            row
        })
        .collect();
    // The cache stands for a full read: the first refresh revalidates it by probe, and
    // the next full read is due a full interval after the launch.
    s.tables.last_full = Some(now);
    s.tables.reindex();
    let said = oldest.map(|at| cached_status(now, at));
    if let Some(text) = &said {
        s.set_status_of(StatusKind::CachedStats, Level::Warn, text.clone());
    }
    said
}

fn cached_status(now: DateTime<Utc>, at: DateTime<Utc>) -> String {
    format!(
        "cached stats as of {} ago; revalidating",
        crate::fmt::human_duration(now.signed_duration_since(at).num_seconds())
    )
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
    s.tables.full = manual || full_due(s.tables.last_full, s.tables.policy.full_every, s.now);
    if s.tables.full {
        s.tables.last_full = Some(s.now);
    }
    for r in &mut s.tables.rows {
        r.stale = true;
    }
    s.last_refresh = Some(s.now);
    vec![
        Effect::FetchServerInfo,
        Effect::Discover {
            generation: s.tables.generation,
            schemas: s.schemas.clone(),
            relearn: manual,
        },
    ]
}

/// The clock moved: every verdict is evaluated again against it (ages grow without a new
/// read: a table that stops being written or compacted must not stay green). The list is
/// re-sorted only when a verdict changed.
pub fn reevaluate(s: &mut State) {
    let now = s.now;
    let cfg = s.health.clone();
    let mut changed = false;
    for row in &mut s.tables.rows {
        if let Some(st) = &row.stats {
            let h = evaluate(st, row.dag.as_ref(), &cfg, now);
            if row.health.as_ref() != Some(&h) {
                changed |= row
                    .health
                    .as_ref()
                    .is_none_or(|old| old.status != h.status || old.score != h.score);
                row.health = Some(h);
            }
        }
    }
    if changed {
        s.tables.reindex();
        s.triage.dirty = true;
    }
}

/// `table` read again outside a refresh (after a maintenance run ended): its row takes
/// the new stats and verdict.
pub fn reread(s: &mut State, table: &TableRef, stats: TableStats) {
    let now = s.now;
    let cfg = s.health.clone();
    if let Some(row) = s.tables.row_mut(table) {
        row.health = Some(evaluate(&stats, row.dag.as_ref(), &cfg, now));
        row.probe = None;
        row.stats = Some(stats);
        row.error = None;
        row.read_at = Some(now);
        row.cached = false;
        row.stale = false;
    }
}

fn on_stats(
    s: &mut State,
    generation: u64,
    table: &TableRef,
    result: Result<TableStats, String>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
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
                // A probe of an older snapshot than these stats (a full refresh reads
                // no probe) would make the next probe re-read an unchanged table.
                if row.probe.is_some_and(|p| !same_snapshot(&stats, &p)) {
                    row.probe = None;
                }
                row.stats = Some(stats);
                row.error = None;
                row.read_at = Some(now);
                row.cached = false;
            }
            Err(e) => row.error = Some(e),
        }
    }
    s.tables.reading = s.tables.reading.saturating_sub(1);
    let mut fx = start_reads(s);
    fx.extend(finish(s));
    fx
}

/// Start queued health reads while fewer than the window are in flight: every slot of
/// `policy.reads`, less those a cold start's ranking takes while it lasts.
fn start_reads(s: &mut State) -> Vec<Effect> {
    let ranking = s.tables.ranking_in_flight > 0 || !s.tables.ranking.is_empty();
    let window = if ranking {
        s.tables.policy.rank_window().1
    } else {
        s.tables.policy.reads.max(1)
    };
    let generation = s.tables.generation;
    let mut fx = Vec::new();
    while s.tables.reading < window {
        let Some(table) = s.tables.queue.pop_front() else {
            break;
        };
        s.tables.reading += 1;
        fx.push(Effect::LoadStats { generation, table });
    }
    fx
}

/// The next ranking batches of a cold start, while fewer than its slots are in flight.
fn next_ranks(s: &mut State) -> Vec<Effect> {
    let (slots, _) = s.tables.policy.rank_window();
    let mut fx = Vec::new();
    while s.tables.ranking_in_flight < slots {
        let Some(tables) = s.tables.ranking.pop() else {
            break;
        };
        s.tables.ranking_in_flight += 1;
        fx.push(Effect::Rank {
            generation: s.tables.generation,
            tables,
        });
    }
    fx
}

/// The order of the reads not started yet: the most live files first (where small files
/// pile up, and the CRITICAL tables are), then the tables not ranked yet in their order,
/// then those ranked empty. Stable: equal ranks keep the order they had (worst known
/// first, then by name).
pub fn rank_queue(
    queue: &mut std::collections::VecDeque<TableRef>,
    rank: &std::collections::HashMap<TableRef, u64>,
) {
    queue.make_contiguous().sort_by_key(|t| match rank.get(t) {
        Some(&n) if n > 0 => (0, std::cmp::Reverse(n)),
        None => (1, std::cmp::Reverse(0)),
        Some(_) => (2, std::cmp::Reverse(0)),
    });
}

/// A ranking batch of a cold start: the reads not started yet are reordered by it, the
/// next batch is sent, and the reads fill the slots.
fn on_ranked(
    s: &mut State,
    generation: u64,
    results: Vec<(TableRef, Result<u64, String>)>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    s.tables.ranking_in_flight = s.tables.ranking_in_flight.saturating_sub(1);
    for (t, r) in results {
        match r {
            Ok(n) => {
                s.tables.rank.insert(t, n);
            }
            // The table's own health read says what is wrong with it.
            Err(e) => tracing::debug!(table = %t, "not ranked: {e}"),
        }
    }
    rank_queue(&mut s.tables.queue, &s.tables.rank);
    // Nothing left to read: the rest of the ranking would only cost statements.
    if s.tables.queue.is_empty() {
        s.tables.ranking.clear();
    }
    let mut fx = next_ranks(s);
    fx.extend(start_reads(s));
    fx
}

/// A batch's probe results: a table whose newest snapshot and snapshot count are what
/// its stats were read at keeps them (its verdicts re-evaluated against now: ages tick);
/// the others get the health statement. A table whose probe failed shows its own error.
fn on_probed(
    s: &mut State,
    generation: u64,
    results: Vec<(TableRef, Result<Probe, String>)>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    let now = s.now;
    let cfg = s.health.clone();
    let mut fx = Vec::new();
    for (table, result) in results {
        let Some(row) = s.tables.row_mut(&table) else {
            continue;
        };
        match result {
            Ok(p) => {
                let same_id = row.probe.is_none_or(|old| old.snapshot_id == p.snapshot_id);
                let unchanged = same_id
                    && row.error.is_none()
                    && row.stats.as_ref().is_some_and(|st| same_snapshot(st, &p));
                row.probe = Some(p);
                if unchanged {
                    row.loading = false;
                    row.stale = false;
                    row.cached = false;
                    if let Some(st) = &row.stats {
                        row.health = Some(evaluate(st, row.dag.as_ref(), &cfg, now));
                    }
                    s.tables.pending = s.tables.pending.saturating_sub(1);
                } else {
                    fx.push(Effect::LoadStats { generation, table });
                }
            }
            Err(e) => {
                row.loading = false;
                row.stale = false;
                row.error = Some(e);
                s.tables.pending = s.tables.pending.saturating_sub(1);
            }
        }
    }
    fx.extend(finish(s));
    fx
}

/// The stats were read at the snapshot the probe sees: the same number of snapshots and
/// the same newest commit (to the second: both went through `to_unixtime`, but the stats
/// statement need not round the same way). A full refresh reads no probe: its stats
/// alone tell the next probe whether the table changed since.
pub fn same_snapshot(st: &TableStats, p: &Probe) -> bool {
    if let Some(at) = p.metadata_at {
        // The metadata-log probe: the same newest metadata file (both to the millisecond).
        return st
            .metadata_at
            .is_some_and(|m| (m - at).num_microseconds().is_some_and(|d| d.abs() < 1000));
    }
    let close = match (st.newest_snapshot, p.committed_at) {
        (Some(a), Some(b)) => (a - b).num_milliseconds().abs() < 1000,
        (None, None) => true,
        _ => false,
    };
    st.snapshots == p.snapshots && close
}

/// Once every table of the refresh is in: the failures on the status line, the cache
/// written for the next start.
fn finish(s: &mut State) -> Vec<Effect> {
    let mut fx = Vec::new();
    if s.tables.pending == 0 {
        if let Some(m) = &s.status
            && m.kind == StatusKind::CachedStats
        {
            s.status = None;
        }
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
        fx.push(Effect::SaveCache {
            profile: s.conn.profile.clone(),
            url: s.conn.trino_url.clone(),
            entries: cache_entries(s),
        });
    }
    s.tables.reindex();
    fx
}

/// What the cache keeps of the rows: the stats read (not one still unconfirmed from an
/// earlier run) with the snapshot they are of.
pub fn cache_entries(s: &State) -> Vec<Entry> {
    s.tables
        .rows
        .iter()
        .filter_map(|r| {
            Some(Entry {
                profile: s.conn.profile.clone(),
                url: s.conn.trino_url.clone(),
                table: r.table.clone(),
                probe: r.probe,
                read_at: r.read_at?,
                stats: r.stats.clone()?,
            })
        })
        .collect()
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
            let batch = s.tables.policy.probe_batch.max(1);
            // A full refresh reads every table's stats (which show its newest snapshot
            // and snapshot count), a few at a time from a queue; otherwise the probes say
            // which tables changed.
            if s.tables.full {
                s.tables.queue = order.into();
                s.tables.reading = 0;
                s.tables.rank.clear();
                s.tables.ranking_in_flight = 0;
                // A cold start (nothing known of any table): the tables not being read
                // yet are ranked by their live files, a few per statement in all slots
                // but one (that one reads), by the layout statement a cold start sends
                // anyway, and read most files first, so that the first CRITICAL rows come
                // first, not the alphabet's.
                let cold = s.tables.rows.iter().all(|r| r.stats.is_none());
                s.tables.ranking = if cold { vec![Vec::new()] } else { Vec::new() };
                let mut fx = start_reads(s);
                let mut batches: Vec<Vec<TableRef>> = s
                    .tables
                    .queue
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>()
                    .chunks(RANK_BATCH)
                    .map(<[TableRef]>::to_vec)
                    .collect();
                batches.reverse();
                s.tables.ranking = if cold { batches } else { Vec::new() };
                fx.extend(next_ranks(s));
                fx.extend(start_reads(s));
                fx
            } else {
                order
                    .chunks(batch)
                    .map(|tables| Effect::Probe {
                        generation,
                        tables: tables.to_vec(),
                    })
                    .collect()
            }
        }
        Err(e) => {
            s.tables.load = Load::Failed(e.clone());
            s.tables.pending = 0;
            s.tables.queue.clear();
            s.tables.ranking.clear();
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
    let queries = crate::app::queries::lines(s, t);
    if !queries.is_empty() {
        out.push((Severity::Info, String::new()));
        out.extend(queries.into_iter().map(|l| (Severity::Info, l)));
    }
    out
}

#[cfg(test)]
mod refresh_tests {
    use super::*;
    use crate::app::action::Action;
    use crate::app::testing::{healthy_stats, incident_stats, loaded, t0, tref};
    use crate::app::update::update;

    fn probe_of(st: &TableStats, id: i64) -> Probe {
        Probe {
            snapshot_id: Some(id),
            committed_at: st.newest_snapshot,
            snapshots: st.snapshots,
            metadata_at: None,
        }
    }

    /// The fixture's state with every table loaded by a full refresh.
    fn all_loaded() -> State {
        let mut s = loaded();
        let generation = s.tables.generation;
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("audit", "events"),
                result: Ok(healthy_stats()),
            }),
        );
        assert!(!s.refresh_in_flight());
        assert!(
            fx.iter()
                .any(|e| matches!(e, Effect::SaveCache { entries, .. } if entries.len() == 3)),
            "the end of a refresh keeps every table's stats: {fx:?}"
        );
        s
    }

    fn auto_refresh(s: &mut State) -> Vec<Effect> {
        let fx = refresh(s, false);
        assert!(matches!(fx.last(), Some(Effect::Discover { .. })));
        let generation = s.tables.generation;
        let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
        update(
            s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(tables),
            }),
        )
    }

    fn stats_of(s: &State, t: &TableRef) -> TableStats {
        s.tables.row(t).unwrap().stats.clone().unwrap()
    }

    type Probed = Vec<(TableRef, Result<Probe, String>)>;

    fn probed(s: &mut State, results: impl FnOnce(&State) -> Probed) -> Vec<Effect> {
        let results = results(s);
        let generation = s.tables.generation;
        update(
            s,
            Action::Tables(TablesMsg::Probed {
                generation,
                results,
            }),
        )
    }

    #[test]
    fn a_steady_refresh_probes_in_batches_and_reads_only_what_changed() {
        let mut s = all_loaded();
        s.tables.policy.probe_batch = 2;
        let fx = auto_refresh(&mut s);
        assert!(!s.tables.full);
        let batches: Vec<usize> = fx
            .iter()
            .map(|e| match e {
                Effect::Probe { tables, .. } => tables.len(),
                other => panic!("only probes, got {other:?}"),
            })
            .collect();
        assert_eq!(batches, vec![2, 1]);
        let (docs, parcels, events) = (
            tref("zoning", "documents"),
            tref("zoning", "parcels"),
            tref("audit", "events"),
        );
        let mut written = probe_of(&stats_of(&s, &docs), 9);
        written.snapshots += 1;
        written.committed_at = Some(t0());
        let fx = probed(&mut s, |s| {
            vec![
                (docs.clone(), Ok(written)),
                (parcels.clone(), Ok(probe_of(&stats_of(s, &parcels), 1))),
            ]
        });
        assert_eq!(
            fx,
            vec![Effect::LoadStats {
                generation: s.tables.generation,
                table: docs.clone()
            }],
            "only the written table is read again"
        );
        assert!(!s.tables.row(&parcels).unwrap().stale);
        let fx = probed(&mut s, |s| {
            vec![(events.clone(), Ok(probe_of(&stats_of(s, &events), 2)))]
        });
        assert!(fx.is_empty(), "{fx:?}");
        assert!(s.refresh_in_flight(), "documents is still being read");
        let generation = s.tables.generation;
        let mut after = incident_stats();
        after.snapshots += 1;
        after.newest_snapshot = Some(t0());
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: docs.clone(),
                result: Ok(after),
            }),
        );
        assert!(!s.refresh_in_flight());
        assert!(matches!(fx.as_slice(), [Effect::SaveCache { .. }]));
        // Nothing changed since: the next refresh reads no stats at all.
        let fx = auto_refresh(&mut s);
        let results = s
            .tables
            .rows
            .iter()
            .map(|r| {
                let p = r
                    .probe
                    .unwrap_or_else(|| probe_of(r.stats.as_ref().unwrap(), 1));
                (r.table.clone(), Ok(p))
            })
            .collect();
        assert_eq!(fx.len(), 2);
        let fx = probed(&mut s, |_| results);
        assert!(
            matches!(fx.as_slice(), [Effect::SaveCache { .. }]),
            "{fx:?}"
        );
    }

    #[test]
    fn a_failing_probe_is_that_tables_error_only() {
        let mut s = all_loaded();
        auto_refresh(&mut s);
        let parcels = tref("zoning", "parcels");
        let events = tref("audit", "events");
        let fx = probed(&mut s, |s| {
            vec![
                (parcels.clone(), Err("TABLE_NOT_FOUND: gone".into())),
                (events.clone(), Ok(probe_of(&stats_of(s, &events), 2))),
            ]
        });
        assert!(fx.is_empty());
        let row = s.tables.row(&parcels).unwrap();
        assert!(row.error.as_deref().unwrap().contains("TABLE_NOT_FOUND"));
        assert!(row.stats.is_some(), "its last stats stay");
        assert!(s.tables.row(&events).unwrap().error.is_none());
        // A table that failed is read in full once it answers again.
        let docs = tref("zoning", "documents");
        probed(&mut s, |s| {
            vec![(docs.clone(), Ok(probe_of(&stats_of(s, &docs), 3)))]
        });
        assert!(!s.refresh_in_flight());
        auto_refresh(&mut s);
        let fx = probed(&mut s, |s| {
            vec![(parcels.clone(), Ok(probe_of(&stats_of(s, &parcels), 1)))]
        });
        assert!(matches!(fx.as_slice(), [Effect::LoadStats { table, .. }] if *table == parcels));
    }

    #[test]
    fn only_a_manual_refresh_relearns_the_layouts() {
        let relearn = |fx: &[Effect]| {
            fx.iter().find_map(|e| match e {
                Effect::Discover { relearn, .. } => Some(*relearn),
                _ => None,
            })
        };
        let mut s = all_loaded();
        assert_eq!(relearn(&refresh(&mut s, false)), Some(false));
        let mut s = all_loaded();
        assert_eq!(relearn(&refresh(&mut s, true)), Some(true));
    }

    #[test]
    fn the_full_read_is_due_by_wall_time_never_by_a_count_of_refreshes() {
        let min = |m: i64| t0() + chrono::Duration::minutes(m);
        let hour = Some(std::time::Duration::from_secs(3600));
        assert!(full_due(None, hour, t0()), "never read in full");
        assert!(full_due(None, None, t0()));
        assert!(!full_due(Some(t0()), hour, min(59)));
        assert!(full_due(Some(t0()), hour, min(60)));
        assert!(!full_due(Some(t0()), None, min(100_000)), "0s: never");
        // A clock that stepped back does not make one due.
        assert!(!full_due(Some(t0()), hour, min(-5)));

        let mut s = all_loaded();
        s.tables.policy.full_every = Some(std::time::Duration::from_secs(600));
        let full = |fx: &[Effect]| fx.iter().all(|e| matches!(e, Effect::LoadStats { .. }));
        let start = s.now;
        // A refresh every 5 s for 9 minutes: none reads everything, however many.
        let mut kinds = Vec::new();
        for k in 0..108 {
            s.now = start + chrono::Duration::seconds(5 * k);
            let fx = auto_refresh(&mut s);
            kinds.push(full(&fx));
            s.tables.pending = 0;
        }
        assert!(kinds.iter().all(|f| !f), "{kinds:?}");
        // Ten minutes after the last full read: the next one reads everything, once.
        s.now = start + chrono::Duration::minutes(10);
        assert!(full(&auto_refresh(&mut s)));
        s.tables.pending = 0;
        s.now += chrono::Duration::seconds(5);
        assert!(!full(&auto_refresh(&mut s)));
        s.tables.pending = 0;
        let fx = refresh(&mut s, true);
        assert!(s.tables.full, "r and :refresh read everything: {fx:?}");
    }

    fn reads(fx: &[Effect]) -> Vec<String> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::LoadStats { table, .. } => Some(table.table.clone()),
                _ => None,
            })
            .collect()
    }

    fn ranks(fx: &[Effect]) -> Vec<Vec<TableRef>> {
        fx.iter()
            .filter_map(|e| match e {
                Effect::Rank { tables, .. } => Some(tables.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn ranking_puts_the_most_written_first_then_the_unranked_then_the_compacted() {
        let t = |n: &str| tref("s", n);
        let mut q: std::collections::VecDeque<TableRef> =
            ["a", "b", "c", "d", "e"].iter().map(|n| t(n)).collect();
        let rank = [(t("b"), 0), (t("c"), 7), (t("e"), 40), (t("d"), 7)]
            .into_iter()
            .collect();
        rank_queue(&mut q, &rank);
        let names: Vec<&str> = q.iter().map(|t| t.table.as_str()).collect();
        // Equal ranks keep their order (c before d).
        assert_eq!(names, ["e", "c", "d", "a", "b"]);
    }

    #[test]
    fn a_cold_start_reads_the_most_written_tables_first_not_the_alphabet() {
        let mut s = State::new(t0());
        s.tables.policy.reads = 4;
        let tables: Vec<TableRef> = (0..25).map(|i| tref("s", &format!("t{i:02}"))).collect();
        refresh(&mut s, false);
        assert!(s.tables.full, "nothing known: a full read");
        let generation = s.tables.generation;
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(tables.clone()),
            }),
        );
        // One slot reads (nothing is known to order the reads by), the other three rank
        // the next tables, ten per statement.
        assert_eq!(reads(&fx), ["t00"]);
        let batches = ranks(&fx);
        let firsts: Vec<&str> = batches.iter().map(|b| b[0].table.as_str()).collect();
        assert_eq!(firsts, ["t01", "t11", "t21"]);
        assert_eq!(batches[0].len(), RANK_BATCH);
        assert_eq!(batches[2].len(), 4);
        let written = |t: &TableRef| match t.table.as_str() {
            "t09" => 80,
            "t05" => 20,
            "t04" => 0,
            n if n < "t11" => 3,
            _ => 1,
        };
        let ranked = |s: &mut State, batch: &[TableRef]| {
            let results = batch.iter().map(|t| (t.clone(), Ok(written(t)))).collect();
            update(
                s,
                Action::Tables(TablesMsg::Ranked {
                    generation,
                    results,
                }),
            )
        };
        let fx = ranked(&mut s, &batches[0]);
        assert!(reads(&fx).is_empty(), "the read slot is busy: {fx:?}");
        assert!(ranks(&fx).is_empty(), "every batch is sent: {fx:?}");
        // As the read ends, the most written starts.
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: tref("s", "t00"),
                result: Ok(healthy_stats()),
            }),
        );
        assert_eq!(reads(&fx), ["t09"]);
        let fx = ranked(&mut s, &batches[1]);
        assert!(reads(&fx).is_empty(), "a ranking is still in flight: {fx:?}");
        // The ranking is over: the reads take every slot, most written first.
        let fx = ranked(&mut s, &batches[2]);
        assert_eq!(reads(&fx), ["t05", "t01", "t02"]);
        let queued: Vec<&str> = s.tables.queue.iter().map(|t| t.table.as_str()).collect();
        assert_eq!(queued[..6], ["t03", "t06", "t07", "t08", "t10", "t11"]);
        assert_eq!(
            queued.last(),
            Some(&"t04"),
            "compacted since, nothing written: last"
        );
        assert_eq!(queued.len(), 25 - 5);
    }

    #[test]
    fn the_ranking_never_takes_the_last_read_slot() {
        let window = |reads, rank_slots| {
            RefreshPolicy {
                reads,
                rank_slots,
                ..Default::default()
            }
            .rank_window()
        };
        assert_eq!(window(4, DEFAULT_RANK_SLOTS), (3, 1));
        assert_eq!(window(2, DEFAULT_RANK_SLOTS), (1, 1));
        assert_eq!(window(8, DEFAULT_RANK_SLOTS), (3, 5));
        assert_eq!(window(4, 1), (1, 3), "one ranking slot, as a knob can ask");
        assert_eq!(window(4, 9), (3, 1));
        // A single slot: the ranking runs beside it rather than never.
        assert_eq!(window(1, DEFAULT_RANK_SLOTS), (1, 1));
        assert_eq!(window(0, 0), (1, 1));
    }

    #[test]
    fn a_full_refresh_of_known_tables_ranks_nothing_and_keeps_the_slots_full() {
        let mut s = all_loaded();
        s.tables.policy.reads = 2;
        let fx = refresh(&mut s, true);
        assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
        let generation = s.tables.generation;
        let tables: Vec<TableRef> = s.tables.rows.iter().map(|r| r.table.clone()).collect();
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(tables),
            }),
        );
        assert!(ranks(&fx).is_empty());
        assert_eq!(reads(&fx).len(), 2, "{fx:?}");
        let first = reads(&fx)[0].clone();
        let table = s
            .tables
            .rows
            .iter()
            .find(|r| r.table.table == first)
            .unwrap()
            .table
            .clone();
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table,
                result: Ok(healthy_stats()),
            }),
        );
        assert_eq!(
            reads(&fx).len(),
            1,
            "the last table starts as one ends: {fx:?}"
        );
    }

    #[test]
    fn the_metadata_probe_decides_by_the_newest_metadata_file() {
        let mut st = healthy_stats();
        let at = t0() - chrono::Duration::hours(1);
        st.metadata_at = Some(at);
        let p = |m: chrono::DateTime<Utc>| Probe {
            snapshot_id: Some(1),
            committed_at: None,
            snapshots: 0,
            metadata_at: Some(m),
        };
        assert!(same_snapshot(&st, &p(at)));
        // A property, schema or spec change or an expiry: a newer metadata file, however
        // the snapshots look.
        assert!(!same_snapshot(
            &st,
            &p(at + chrono::Duration::milliseconds(1))
        ));
        // Stats read without the metadata log are read again once.
        st.metadata_at = None;
        assert!(!same_snapshot(&st, &p(at)));
    }

    #[test]
    fn a_warm_start_paints_the_cache_as_of_its_age_then_the_probe_confirms_it() {
        let mut s = State::new(t0());
        let docs = tref("zoning", "documents");
        let st = incident_stats();
        let p = probe_of(&st, 7);
        let entry = Entry {
            profile: "lab".into(),
            url: "u".into(),
            table: docs.clone(),
            probe: Some(p),
            read_at: t0() - chrono::Duration::hours(3),
            stats: st,
        };
        warm_start(&mut s, vec![entry]);
        let row = s.tables.row(&docs).unwrap();
        assert!(row.cached && row.stale && row.health.is_some());
        let status = s.status.as_ref().unwrap().text.clone();
        assert!(status.contains("as of 3h ago"), "{status}");
        let fx = update(&mut s, Action::Start);
        assert!(
            !s.tables.full,
            "the first refresh after a warm start probes"
        );
        assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
        let generation = s.tables.generation;
        let fx = update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(vec![docs.clone()]),
            }),
        );
        assert!(matches!(fx.as_slice(), [Effect::Probe { .. }]));
        let fx = probed(&mut s, |_| vec![(docs.clone(), Ok(p))]);
        assert!(
            matches!(fx.as_slice(), [Effect::SaveCache { .. }]),
            "{fx:?}"
        );
        let row = s.tables.row(&docs).unwrap();
        assert!(!row.cached && !row.stale);
        assert!(s.status.is_none(), "the as-of mark is gone");
    }

    #[test]
    fn a_profile_switch_paints_that_profiles_cache_then_probes() {
        let mut s = loaded();
        let docs = tref("zoning", "documents");
        let st = incident_stats();
        let entry = Entry {
            profile: "prod".into(),
            url: "http://prod:8080/".into(),
            table: docs.clone(),
            probe: Some(probe_of(&st, 7)),
            read_at: t0() - chrono::Duration::hours(2),
            stats: st,
        };
        let view = crate::app::action::ProfileView {
            profile: "prod".into(),
            trino_url: "http://prod:8080/".into(),
            readonly: false,
            refresh: std::time::Duration::from_secs(60),
            schemas: vec![],
            health: Default::default(),
            airflow_url: None,
            maintenance: vec![],
            warnings: vec![],
            cached: vec![entry],
        };
        let fx = update(&mut s, Action::ProfileSwitched(Ok(view)));
        // Only the new profile's cached table, dimmed until revalidated.
        assert_eq!(s.tables.rows.len(), 1);
        let row = s.tables.row(&docs).unwrap();
        assert!(row.cached && row.stale && row.health.is_some());
        let status = s.status.as_ref().unwrap().text.clone();
        assert!(
            status.contains("switched to profile prod") && status.contains("as of 2h ago"),
            "{status}"
        );
        assert!(!s.tables.full, "the first refresh probes: {fx:?}");
        assert!(fx.iter().any(|e| matches!(e, Effect::Discover { .. })));
    }

    #[test]
    fn a_write_read_by_a_full_refresh_is_not_read_again_by_the_next_probe() {
        let mut s = all_loaded();
        let events = tref("audit", "events");
        let old = probe_of(&stats_of(&s, &events), 1);
        s.tables.rows.iter_mut().for_each(|r| r.probe = Some(old));
        // A write, then `r`: the stats show the new snapshot.
        refresh(&mut s, true);
        let generation = s.tables.generation;
        let tables = s.tables.rows.iter().map(|r| r.table.clone()).collect();
        update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(tables),
            }),
        );
        let mut newer = healthy_stats();
        newer.snapshots += 1;
        newer.newest_snapshot = Some(t0());
        update(
            &mut s,
            Action::Tables(TablesMsg::Stats {
                generation,
                table: events.clone(),
                result: Ok(newer.clone()),
            }),
        );
        assert_eq!(s.tables.row(&events).unwrap().probe, None);
        s.tables.pending = 0;
        auto_refresh(&mut s);
        let fx = probed(&mut s, |_| vec![(events.clone(), Ok(probe_of(&newer, 2)))]);
        assert!(
            !fx.iter().any(|e| matches!(e, Effect::LoadStats { .. })),
            "{fx:?}"
        );
    }

    #[test]
    fn a_cached_table_at_another_snapshot_is_read_again() {
        let mut s = State::new(t0());
        let docs = tref("zoning", "documents");
        let st = incident_stats();
        let entry = Entry {
            profile: "lab".into(),
            url: "u".into(),
            table: docs.clone(),
            probe: Some(probe_of(&st, 7)),
            read_at: t0(),
            stats: st.clone(),
        };
        warm_start(&mut s, vec![entry]);
        update(&mut s, Action::Start);
        let generation = s.tables.generation;
        update(
            &mut s,
            Action::Tables(TablesMsg::Discovered {
                generation,
                result: Ok(vec![docs.clone()]),
            }),
        );
        let fx = probed(&mut s, |_| vec![(docs.clone(), Ok(probe_of(&st, 8)))]);
        assert!(matches!(fx.as_slice(), [Effect::LoadStats { .. }]));
        assert!(s.tables.row(&docs).unwrap().cached, "still as of its age");
    }
}
