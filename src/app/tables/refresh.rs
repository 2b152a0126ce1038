//! The Tables tab's side of the refresh: the reads [`crate::refresh::Refresh`] asks for go
//! out as effects, their answers come back here, and the rows take what each settled (their
//! verdicts evaluated again, the status line, the cache at the end). What is read when is
//! the refresh's business, not this module's.

use chrono::{DateTime, Utc};

use super::TableRow;
use crate::app::action::Effect;
use crate::app::state::{Level, Load, State, StatusKind};
use crate::cache::Entry;
use crate::lakehouse::model::{TableRef, TableStats};
use crate::refresh::{Answer, Ctx, Request, RequestId, Step, TableRead};

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
            row.read = TableRead::cached(e.stats, e.probe, e.read_at);
            row.evaluate(&cfg, now);
            row
        })
        .collect();
    TableRow::name_all(&mut s.tables.rows);
    s.tables.refresh.warm(now, oldest);
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

/// The effect that sends one of the refresh's reads.
fn effect((id, read): Request) -> Effect {
    Effect::Read { id, read }
}

/// Start a refresh of the table list (unless one is running).
pub fn refresh(s: &mut State, manual: bool) -> Vec<Effect> {
    let Some(listing) = s.tables.refresh.start(s.now, manual, s.schemas.clone()) else {
        if manual {
            s.set_status(Level::Info, "a refresh is already running");
        }
        return Vec::new();
    };
    s.tables.load = Load::Loading;
    s.last_refresh = Some(s.now);
    vec![Effect::FetchServerInfo, effect(listing)]
}

/// The clock moved: every verdict is evaluated again against it (ages grow without a new
/// read: a table that stops being written or compacted must not stay green). The list is
/// re-sorted only when a verdict changed.
pub fn reevaluate(s: &mut State) {
    let now = s.now;
    let cfg = s.health.clone();
    let mut changed = false;
    for row in &mut s.tables.rows {
        let old = row.health.take();
        row.evaluate(&cfg, now);
        changed |= match (&old, &row.health) {
            (Some(a), Some(b)) => a.status != b.status || a.score != b.score,
            (a, b) => a.is_some() != b.is_some(),
        };
    }
    if changed {
        s.tables.reindex();
        s.triage.dirty = true;
    }
}

/// `table` read again outside a refresh (a watched run ended and its effect read it): its
/// row takes the new stats and verdict.
pub fn reread(s: &mut State, table: &TableRef, stats: TableStats) {
    let now = s.now;
    let cfg = s.health.clone();
    if let Some(row) = s.tables.row_mut(table) {
        crate::refresh::settle_read(&mut row.read, stats, now);
        row.evaluate(&cfg, now);
        s.tables.unsaved = true;
    }
}

/// Read a table's stats again on their own (after something changed it).
pub fn reload_row(s: &mut State, table: &TableRef) -> Option<Effect> {
    let crate::app::tables::TablesView { rows, refresh, .. } = &mut s.tables;
    refresh.reload(table, rows).map(effect)
}

/// The answer to one of the refresh's reads.
pub(super) fn on_answer(s: &mut State, id: RequestId, answer: Answer) -> Vec<Effect> {
    if !s.tables.refresh.expects(id) {
        return Vec::new();
    }
    let answer = match answer {
        Answer::Listed(result) => Answer::Listed(listed(s, result)),
        Answer::ListedPart(tables) => Answer::ListedPart(listed_part(s, tables)),
        Answer::Table(t, Err(e)) => {
            // A table read on its own (after a job, a watched run): its failure is said
            // at once, not at the end of a refresh it is not part of.
            s.set_status(Level::Error, format!("{t} not read again: {e}"));
            Answer::Table(t, Err(e))
        }
        other => other,
    };
    let scan = s.health.scan();
    let ctx = Ctx {
        now: s.now,
        scan: &scan,
        refresh_every: s.refresh_every,
    };
    let crate::app::tables::TablesView { rows, refresh, .. } = &mut s.tables;
    let step = refresh.answer(id, answer, rows, ctx);
    apply(s, step)
}

/// The listing's answer: the rows (each keeps what it knew), the DAGs correlated, the
/// order the refresh reads them in (worst known first); or the failure on screen.
fn listed(
    s: &mut State,
    result: Result<Vec<TableRef>, crate::trino::TrinoError>,
) -> Result<Vec<TableRef>, crate::trino::TrinoError> {
    let tables = match result {
        Ok(t) => t,
        Err(e) => {
            s.tables.load = Load::Failed(e.clone().into());
            s.set_status(Level::Error, format!("cannot list tables: {e}"));
            return Err(e);
        }
    };
    let key = s.tables.selected().map(|r| r.table.clone());
    let mut old: std::collections::HashMap<TableRef, TableRow> = std::mem::take(&mut s.tables.rows)
        .into_iter()
        .map(|r| (r.table.clone(), r))
        .collect();
    s.tables.rows = tables
        .iter()
        .map(|t| old.remove(t).unwrap_or_else(|| TableRow::new(t.clone())))
        .collect();
    TableRow::name_all(&mut s.tables.rows);
    s.tables.load = Load::Loaded;
    crate::app::dags::correlate(s);
    s.tables.reindex_keeping(key);
    if s.tables.rows.is_empty() {
        let scope = if s.schemas.is_empty() {
            "the catalog".to_string()
        } else {
            format!("schemas {}", s.schemas.join(", "))
        };
        s.set_status(Level::Warn, format!("no Iceberg tables found in {scope}"));
    }
    Ok(read_order(s, |_| true))
}

/// The order a refresh reads the rows of `part` in: the rows on screen as they are sorted
/// (worst known first, so what matters fills in first), then those a filter hides (read
/// all the same: a filter narrows the view, not what is kept up to date).
fn read_order(s: &State, part: impl Fn(&TableRef) -> bool) -> Vec<TableRef> {
    let shown: std::collections::HashSet<usize> = s.tables.grid.index.iter().copied().collect();
    let hidden = (0..s.tables.rows.len()).filter(|i| !shown.contains(i));
    s.tables
        .grid
        .index
        .iter()
        .copied()
        .chain(hidden)
        .map(|i| &s.tables.rows[i].table)
        .filter(|t| part(t))
        .cloned()
        .collect()
}

/// A catalog's tables listed while another's are awaited: their rows join the list (the
/// other rows stay until the whole listing), in the order the refresh reads them.
fn listed_part(s: &mut State, tables: Vec<TableRef>) -> Vec<TableRef> {
    let key = s.tables.selected().map(|r| r.table.clone());
    let held: std::collections::HashSet<TableRef> =
        s.tables.rows.iter().map(|r| r.table.clone()).collect();
    let new: Vec<TableRow> = tables
        .iter()
        .filter(|t| !held.contains(*t))
        .map(|t| TableRow::new(t.clone()))
        .collect();
    s.tables.rows.extend(new);
    TableRow::name_all(&mut s.tables.rows);
    s.tables.load = Load::Loaded;
    s.tables.reindex_keeping(key);
    let part: std::collections::HashSet<&TableRef> = tables.iter().collect();
    read_order(s, |t| part.contains(t))
}

/// What a step of the refresh did, on screen: the settled rows' verdicts, the reads it
/// sends, and at its end the status line and the cache.
fn apply(s: &mut State, step: Step) -> Vec<Effect> {
    let now = s.now;
    let cfg = s.health.clone();
    for t in &step.settled {
        if let Some(row) = s.tables.row_mut(t) {
            row.evaluate(&cfg, now);
        }
    }
    if !step.changed.is_empty() {
        s.tables.unsaved = true;
    }
    let mut fx: Vec<Effect> = step.reads.into_iter().map(effect).collect();
    if let Some(ended) = step.ended {
        fx.extend(finish(s, ended.listing_failed));
    }
    s.tables.reindex();
    fx
}

/// A refresh ended: the failures on the status line (a failed listing's own line stays),
/// the cache written for the next start when a table's stats changed since it was last
/// written.
fn finish(s: &mut State, listing_failed: bool) -> Vec<Effect> {
    if let Some(m) = &s.status
        && m.kind == StatusKind::CachedStats
    {
        s.status = None;
    }
    let failed: Vec<&TableRow> = s
        .tables
        .rows
        .iter()
        .filter(|r| r.error().is_some())
        .collect();
    if let Some(first) = failed.first().filter(|_| !listing_failed) {
        let text = format!(
            "{} of {} tables failed to load; {}: {}",
            failed.len(),
            s.tables.rows.len(),
            first.name,
            first.error().map(ToString::to_string).unwrap_or_default()
        );
        s.set_status(Level::Error, text);
    }
    if !std::mem::take(&mut s.tables.unsaved) {
        return Vec::new();
    }
    vec![Effect::SaveCache {
        profile: s.conn.profile.clone(),
        url: s.conn.trino_url.clone(),
        entries: cache_entries(s),
    }]
}

/// What the cache keeps of the rows: each table's verdict's stats (never a bound) with the
/// snapshot they are of and when they were read.
pub fn cache_entries(s: &State) -> Vec<Entry> {
    s.tables
        .rows
        .iter()
        .filter_map(|r| {
            Some(Entry {
                profile: s.conn.profile.clone(),
                url: s.conn.trino_url.clone(),
                table: r.table.clone(),
                probe: r.read.probe,
                read_at: r.read.read_at?,
                stats: r.read.stats.clone()?,
            })
        })
        .collect()
}
