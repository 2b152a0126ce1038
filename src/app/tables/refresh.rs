//! How a refresh of the Tables tab spends statements: the listing, then either the
//! change probe of every table in batches (only the tables it shows changed are read
//! again) or, when a full read is due, every table's health statement from a queue, at
//! most `policy.reads` in flight; on a cold start the queue is ranked by each table's live
//! files first, so the reads go most written first.

use chrono::{DateTime, Utc};

use super::TableRow;
use crate::app::action::Effect;
use crate::app::state::{Level, Load, State, StatusKind};
use crate::cache::Entry;
use crate::health::evaluate;
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::Probe;
use crate::lakehouse::summary::SURVEY_BATCH;
use crate::trino::TrinoError;

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
    // the next full read is due a full interval after the launch. The coordinator's
    // writes since the cache was written are read first: the tables they name are the
    // ones that changed, probed ahead of the rest.
    s.tables.last_full = Some(now);
    s.tables.writes_since = oldest.map(|at| at - chrono::Duration::seconds(WRITES_MARGIN_S));
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
    // A full read (every table surveyed) on a cold start and on `r`; a steady refresh
    // looks at the written tables and a rotation of the rest (see [`rotation`]).
    s.tables.full = manual || s.tables.last_full.is_none();
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

pub(super) fn on_stats(
    s: &mut State,
    generation: u64,
    table: &TableRef,
    result: Result<TableStats, TrinoError>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    take_stats(s, table, result);
    s.tables.reading = s.tables.reading.saturating_sub(1);
    after_read(s)
}

/// The files of a batch of surveyed tables: each row takes its stats, and the batch's
/// slot goes to the next reads.
pub(super) fn on_files_read(
    s: &mut State,
    generation: u64,
    results: Vec<(TableRef, Result<TableStats, TrinoError>)>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    for (t, r) in results {
        take_stats(s, &t, r);
    }
    s.tables.reading = s.tables.reading.saturating_sub(1);
    after_read(s)
}

/// A read ended: its slot to the next file reads and surveys, and the refresh's end.
fn after_read(s: &mut State) -> Vec<Effect> {
    let mut fx = start_reads(s);
    fx.extend(next_ranks(s));
    fx.extend(finish(s));
    fx
}

/// One table's read: its row takes the stats (and their verdict) or the error.
fn take_stats(s: &mut State, table: &TableRef, result: Result<TableStats, TrinoError>) {
    s.tables.pending = s.tables.pending.saturating_sub(1);
    let now = s.now;
    let cfg = s.health.clone();
    if let Some(row) = s.tables.row_mut(table) {
        row.loading = false;
        row.stale = false;
        row.checked_at = Some(now);
        match result {
            Ok(mut stats) => {
                // A probe of an older snapshot than these stats (a full refresh reads
                // no probe) would make the next probe re-read an unchanged table; the
                // probe that sent this read gives it the metadata log.
                match row.probe {
                    Some(p) if same_snapshot(&stats, &p) => adopt_probe(&mut stats, &p),
                    Some(_) => row.probe = None,
                    None => {}
                }
                row.health = Some(evaluate(&stats, row.dag.as_ref(), &cfg, now));
                row.stats = Some(stats);
                row.error = None;
                row.read_at = Some(now);
                row.cached = false;
            }
            Err(e) => row.error = Some(e.to_string()),
        }
    }
}

/// Tables whose files one statement reads: what a statement costs the coordinator beyond
/// its reads is paid once for them (on Trino 476 ten file reads in one statement cost
/// its process about 40 % less CPU than ten statements), and the first tables of the
/// queue, the worst proved, still go in the first statement.
pub const FILE_BATCH: usize = 10;

/// Start queued file reads while fewer than the window are in flight. While surveys
/// remain, only a table whose proved small files could fill a CRITICAL partition is read
/// (alone, in the reads' one slot: the screen's first answer); the others wait for the
/// surveys to end and go [`FILE_BATCH`] tables a statement, every slot taken. Each
/// carries the stats its survey gave (the row's), which the file read completes.
fn start_reads(s: &mut State) -> Vec<Effect> {
    let ranking = s.tables.ranking_in_flight > 0 || !s.tables.ranking.is_empty();
    let window = if ranking {
        s.tables.policy.rank_window().1
    } else {
        s.tables.policy.reads.max(1)
    };
    let generation = s.tables.generation;
    let urgent = urgent_rank(s);
    let mut fx = Vec::new();
    while s.tables.reading < window {
        let size = match s.tables.queue.front() {
            Some(t) if ranking && s.tables.rank.get(t).is_some_and(|&r| r >= urgent) => 1,
            _ if ranking => break,
            _ => FILE_BATCH,
        };
        let mut batch = Vec::new();
        while batch.len() < size {
            let Some(table) = s.tables.queue.pop_front() else {
                break;
            };
            match s.tables.row(&table).and_then(|r| r.stats.clone()) {
                Some(st) if st.files_unread => batch.push((table, Box::new(st))),
                // No survey to complete: the table's own read, alone.
                _ => {
                    s.tables.reading += 1;
                    fx.push(Effect::LoadStats { generation, table });
                    if s.tables.reading >= window {
                        break;
                    }
                }
            }
        }
        if batch.is_empty() {
            if s.tables.queue.is_empty() || s.tables.reading >= window {
                break;
            }
            continue;
        }
        s.tables.reading += 1;
        fx.push(Effect::LoadFiles {
            generation,
            tables: batch,
        });
    }
    fx
}

/// The proved excess small files from which a table is read ahead of the surveys: as many
/// as make one partition CRITICAL.
fn urgent_rank(s: &State) -> u64 {
    s.health
        .critical_partition_small_files
        .max(s.health.min_small_files)
}

/// Whether the head of the read queue is read while surveys remain ([`start_reads`]).
fn urgent_queued(s: &State) -> bool {
    let urgent = urgent_rank(s);
    s.tables
        .queue
        .front()
        .is_some_and(|t| s.tables.rank.get(t).is_some_and(|&r| r >= urgent))
}

/// Survey batches to send while fewer than their slots are in flight: their share of the
/// window while file reads wait, every slot while none does.
fn next_ranks(s: &mut State) -> Vec<Effect> {
    let (slots, _) = s.tables.policy.rank_window();
    // Every slot surveys unless a table worth reading at once waits or is read.
    let slots = if !urgent_queued(s) && s.tables.reading == 0 {
        s.tables.policy.reads.max(1)
    } else {
        slots
    };
    let mut fx = Vec::new();
    while s.tables.ranking_in_flight < slots {
        let Some(tables) = s.tables.ranking.pop() else {
            break;
        };
        s.tables.ranking_in_flight += 1;
        fx.push(Effect::Survey {
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

/// A survey batch of a full read: a table whose files cannot change its verdict has its
/// stats now; the others show what their totals prove (marked unread) and queue their
/// file read, the most excess files proved first; the next batches and reads fill the
/// slots.
pub(super) fn on_surveyed(
    s: &mut State,
    generation: u64,
    results: Vec<(
        TableRef,
        Result<crate::lakehouse::summary::Survey, TrinoError>,
    )>,
) -> Vec<Effect> {
    use crate::lakehouse::summary::FileRead;
    if generation != s.tables.generation {
        return Vec::new();
    }
    s.tables.ranking_in_flight = s.tables.ranking_in_flight.saturating_sub(1);
    let now = s.now;
    let cfg = s.health.clone();
    let scan = cfg.scan();
    for (t, r) in results {
        let Some(row) = s.tables.row_mut(&t) else {
            continue;
        };
        match r {
            Ok(survey) => {
                row.checked_at = Some(now);
                let stats = survey.stats(&scan);
                let read = survey.file_read(&scan);
                row.health = Some(evaluate(&stats, row.dag.as_ref(), &cfg, now));
                row.probe = None;
                row.stats = Some(stats);
                row.error = None;
                row.cached = false;
                match read {
                    FileRead::NotNeeded => {
                        row.loading = false;
                        row.stale = false;
                        row.read_at = Some(now);
                        s.tables.pending = s.tables.pending.saturating_sub(1);
                    }
                    FileRead::Needed(bounds) => {
                        let excess = bounds.map_or(0, |b| b.excess_at_least);
                        s.tables.rank.insert(t.clone(), excess);
                        s.tables.queue.push_back(t);
                    }
                }
            }
            Err(e) => {
                row.loading = false;
                row.stale = false;
                row.error = Some(e.to_string());
                s.tables.pending = s.tables.pending.saturating_sub(1);
            }
        }
    }
    rank_queue(&mut s.tables.queue, &s.tables.rank);
    let mut fx = next_ranks(s);
    fx.extend(start_reads(s));
    fx.extend(finish(s));
    fx
}

/// A batch's probe results: a table whose newest snapshot and snapshot count are what
/// its stats were read at keeps them (its verdicts re-evaluated against now: ages tick);
/// the others get the health statement. A table whose probe failed shows its own error.
pub(super) fn on_probed(
    s: &mut State,
    generation: u64,
    results: Vec<(TableRef, Result<Probe, TrinoError>)>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    s.tables.probes_in_flight = s.tables.probes_in_flight.saturating_sub(1);
    let now = s.now;
    let cfg = s.health.clone();
    let mut fx = Vec::new();
    for (table, result) in results {
        let Some(row) = s.tables.row_mut(&table) else {
            continue;
        };
        row.checked_at = Some(now);
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
                    if let Some(st) = &mut row.stats {
                        adopt_probe(st, &p);
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
                row.error = Some(e.to_string());
                s.tables.pending = s.tables.pending.saturating_sub(1);
            }
        }
    }
    fx.extend(next_probes(s));
    fx.extend(finish(s));
    fx
}

/// Probe batches to send: all slots but one probe at a time (a read of a table found
/// changed takes the last one at once instead of waiting behind every probe).
fn next_probes(s: &mut State) -> Vec<Effect> {
    let slots = s.tables.policy.reads.saturating_sub(1).max(1);
    let generation = s.tables.generation;
    let mut fx = Vec::new();
    while s.tables.probes_in_flight < slots {
        let Some(tables) = s.tables.probe_queue.pop_front() else {
            break;
        };
        s.tables.probes_in_flight += 1;
        fx.push(Effect::Probe { generation, tables });
    }
    fx
}

/// The stats were read at the snapshot the probe sees: the same number of snapshots and
/// the same newest commit (to the second: both went through `to_unixtime`, but the stats
/// statement need not round the same way). A full refresh reads no probe: its stats
/// alone tell the next probe whether the table changed since. The metadata-log probe
/// compares the newest metadata file; stats read without the log (the survey's) are of
/// the probe's snapshot when they name the same newest snapshot id (see [`adopt_probe`]).
pub fn same_snapshot(st: &TableStats, p: &Probe) -> bool {
    if let Some(at) = p.metadata_at {
        return match st.metadata_at {
            // The same newest metadata file (both to the millisecond).
            Some(m) => (m - at).num_microseconds().is_some_and(|d| d.abs() < 1000),
            None => st.snapshot_id.is_some() && st.snapshot_id == p.snapshot_id,
        };
    }
    let close = match (st.newest_snapshot, p.committed_at) {
        (Some(a), Some(b)) => (a - b).num_milliseconds().abs() < 1000,
        (None, None) => true,
        _ => false,
    };
    st.snapshots == p.snapshots && close
}

/// What an unchanged table's probe adds to its stats: the metadata log the survey leaves
/// to the probe (its metadata files, for their rule, and its newest file, which the next
/// probes compare). A metadata-only change between the survey and this first probe (a
/// property, an expiry with no new snapshot) shows at the next full refresh, or through
/// the coordinator's record of its own writes.
pub fn adopt_probe(st: &mut TableStats, p: &Probe) {
    if st.metadata_at.is_none() {
        st.metadata_at = p.metadata_at;
    }
    if p.metadata_files.is_some() {
        st.metadata_files = p.metadata_files;
    }
}

/// Once every table of the refresh is in: the failures on the status line, the cache
/// written for the next start.
fn finish(s: &mut State) -> Vec<Effect> {
    let mut fx = Vec::new();
    if s.tables.pending == 0 {
        // The next refresh asks for the writes since this one began, with a margin for
        // the two clocks (a write seen twice costs one probe more, never a verdict).
        let margin = s
            .last_refresh
            .map(|at| at - chrono::Duration::seconds(WRITES_MARGIN_S));
        s.tables.writes_since = margin.max(s.tables.writes_seen);
        s.tables.probing.clear();
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

pub(super) fn on_discovered(
    s: &mut State,
    generation: u64,
    result: Result<Vec<TableRef>, TrinoError>,
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
            crate::app::dags::correlate(s);
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
                // A full read: every table surveyed, ten a statement (metadata only), worst
                // known first; the surveys queue the file reads that can change a verdict.
                s.tables.queue.clear();
                s.tables.reading = 0;
                s.tables.rank.clear();
                s.tables.ranking_in_flight = 0;
                let mut batches: Vec<Vec<TableRef>> = order
                    .chunks(SURVEY_BATCH)
                    .map(<[TableRef]>::to_vec)
                    .collect();
                batches.reverse();
                s.tables.ranking = batches;
                next_ranks(s)
            } else {
                let probe = rotation(s);
                s.tables.probing = probe.iter().cloned().collect();
                for r in &mut s.tables.rows {
                    if !s.tables.probing.contains(&r.table) {
                        r.loading = false;
                        r.stale = false;
                    }
                }
                let since = s.tables.writes_since;
                s.tables.pending = probe.len() + usize::from(since.is_some());
                s.tables.probe_queue = probe.chunks(batch).map(<[TableRef]>::to_vec).collect();
                s.tables.probes_in_flight = 0;
                // The coordinator's writes first: the tables they name are probed ahead
                // of the rest.
                let mut fx = Vec::new();
                if let Some(since) = since {
                    fx.push(Effect::RecentWrites { generation, since });
                }
                fx.extend(next_probes(s));
                fx.extend(finish(s));
                fx
            }
        }
        Err(e) => {
            s.tables.load = Load::Failed(e.to_string());
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

/// Seconds the writes read reaches back before the refresh that last read them: the
/// coordinator's clock and floe's need not agree.
pub const WRITES_MARGIN_S: i64 = 60;

/// The tables a steady refresh probes: every table never read, failed, or shown from the
/// cache of an earlier run; then the least recently checked, as many as it takes to look
/// at every table within `full_refresh_every` at this refresh interval — fewer when the
/// last minutes cost the coordinator more than `coordinator_budget`, in proportion.
pub fn rotation(s: &State) -> Vec<TableRef> {
    let rows = &s.tables.rows;
    let policy = &s.tables.policy;
    let mut quota = match policy.full_every {
        Some(every) if !every.is_zero() => {
            let per = s.refresh_every.as_secs_f64() / every.as_secs_f64();
            (rows.len() as f64 * per).ceil() as usize
        }
        _ => 0,
    };
    if let (Some(budget), Some(spent)) = (policy.budget, spent_per_minute(s))
        && spent > budget.as_secs_f64()
    {
        quota = (quota as f64 * budget.as_secs_f64() / spent).floor() as usize;
    }
    let must = |r: &TableRow| r.stats.is_none() || r.error.is_some() || r.cached;
    let mut out: Vec<TableRef> = rows
        .iter()
        .filter(|r| must(r))
        .map(|r| r.table.clone())
        .collect();
    let mut rest: Vec<&TableRow> = rows.iter().filter(|r| !must(r)).collect();
    rest.sort_by_key(|r| r.checked_at);
    out.extend(rest.into_iter().take(quota).map(|r| r.table.clone()));
    out
}

/// A reading of the client's cost meter: kept ten minutes.
pub fn record_cost(s: &mut State, c: crate::trino::Cost) {
    let now = s.now;
    let ledger = &mut s.tables.ledger;
    if ledger.back().is_some_and(|(_, last)| *last == c) && ledger.len() > 1 {
        // Nothing sent since: the newest reading moves, the cost per minute falls.
        ledger.pop_back();
    }
    ledger.push_back((now, c));
    while ledger
        .front()
        .is_some_and(|(at, _)| (now - *at).num_seconds() > 600)
    {
        ledger.pop_front();
    }
}

/// What floe cost the coordinator per minute over the last five minutes of readings
/// (planning plus task CPU, seconds); `None` with less than half a minute of them.
pub fn spent_per_minute(s: &State) -> Option<f64> {
    let ledger = &s.tables.ledger;
    let (last_at, last) = ledger.back()?;
    let (first_at, first) = ledger
        .iter()
        .find(|(at, _)| (*last_at - *at).num_seconds() <= 300)?;
    let span = (*last_at - *first_at).num_milliseconds() as f64 / 60_000.0;
    if span < 0.5 {
        return None;
    }
    Some(last.since(first).coordinator_ms() as f64 / 1000.0 / span)
}

/// The writes the coordinator finished since the last look: the listed tables they can
/// name that this refresh does not probe yet are probed now.
pub(super) fn on_written(
    s: &mut State,
    generation: u64,
    result: Result<crate::lakehouse::writes::RecentWrites, TrinoError>,
) -> Vec<Effect> {
    if generation != s.tables.generation {
        return Vec::new();
    }
    s.tables.pending = s.tables.pending.saturating_sub(1);
    let names = match result {
        Ok(w) => {
            s.tables.writes_seen = s.tables.writes_seen.max(w.newest);
            w.names
        }
        Err(e) => {
            // A coordinator may deny `system.runtime.queries`: the rotation still looks.
            tracing::debug!("recent writes not read: {e}");
            return finish(s);
        }
    };
    let named = |t: &TableRef| {
        names
            .iter()
            .any(|n| crate::lakehouse::writes::names_table(n, t))
    };
    // Written tables whose probe waits in the queue go first, in a batch of their own.
    let mut ahead = Vec::new();
    for b in &mut s.tables.probe_queue {
        b.retain(|t| {
            let w = named(t);
            if w {
                ahead.push(t.clone());
            }
            !w
        });
    }
    s.tables.probe_queue.retain(|b| !b.is_empty());
    let batch = s.tables.policy.probe_batch.max(1);
    for chunk in ahead.chunks(batch).rev() {
        s.tables.probe_queue.push_front(chunk.to_vec());
    }
    let written: Vec<TableRef> = s
        .tables
        .rows
        .iter()
        .filter(|r| !s.tables.probing.contains(&r.table))
        .filter(|r| named(&r.table))
        .map(|r| r.table.clone())
        .collect();
    s.tables.pending += written.len();
    for t in &written {
        s.tables.probing.insert(t.clone());
        if let Some(r) = s.tables.row_mut(t) {
            r.loading = true;
            r.stale = true;
        }
    }
    for chunk in written.chunks(batch).rev() {
        s.tables.probe_queue.push_front(chunk.to_vec());
    }
    let mut fx = next_probes(s);
    fx.extend(finish(s));
    fx
}
