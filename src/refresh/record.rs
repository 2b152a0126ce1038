//! What each table's verdict rests on, and how an answer changes it. A verdict rests on a
//! complete read (its time kept) or on an earlier run's cache (marked until confirmed);
//! what a survey proves while the table's files are being read is kept beside it as a
//! bound — shown as one, never evaluated or cached as a verdict — and a read that fails
//! keeps the last good verdict, marked with its error and its age.

use chrono::{DateTime, Utc};

use super::RequestId;
use crate::lakehouse::model::{TableRef, TableStats};
use crate::lakehouse::probe::Probe;
use crate::lakehouse::summary::{FileRead, Survey};
use crate::trino::TrinoError;

/// One table as the refresh knows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableRead {
    /// The verdict's facts: the last complete read, or the cache's.
    pub stats: Option<TableStats>,
    /// When `stats` were read.
    pub read_at: Option<DateTime<Utc>>,
    /// `stats` come from the cache of an earlier run and are not confirmed yet: shown
    /// "as of" `read_at` until the probe finds the same snapshot (or they are read again).
    pub cached: bool,
    /// What the survey of the read in flight proved (its small files a lower bound, its
    /// files unread): what the screen shows of a table while its files are read.
    pub bound: Option<TableStats>,
    /// What the change probe last saw (the snapshot the stats are of).
    pub probe: Option<Probe>,
    /// When floe last looked at the table (a probe or a read): a steady refresh looks at
    /// the least recently checked first.
    pub checked_at: Option<DateTime<Utc>>,
    /// Why the last look failed (the stats, when any, are older).
    pub error: Option<TrinoError>,
    /// The read whose answer settles the table now (`None`: none is awaited).
    pub owner: Option<RequestId>,
}

impl TableRead {
    /// A record painted from an earlier run's cache.
    pub fn cached(stats: TableStats, probe: Option<Probe>, read_at: DateTime<Utc>) -> TableRead {
        TableRead {
            stats: Some(stats),
            read_at: Some(read_at),
            cached: true,
            probe,
            ..TableRead::default()
        }
    }

    /// What the screen shows: the verdict's facts, else what a survey proved.
    pub fn shown(&self) -> Option<&TableStats> {
        self.stats.as_ref().or(self.bound.as_ref())
    }
}

/// Where a refresh finds each table's record.
pub trait Records {
    fn get(&self, t: &TableRef) -> Option<&TableRead>;
    fn get_mut(&mut self, t: &TableRef) -> Option<&mut TableRead>;
}

/// Records kept apart from any screen (`floe check`, `floe serve`), in listing order.
#[derive(Clone, Debug, Default)]
pub struct VecRecords(pub Vec<(TableRef, TableRead)>);

impl VecRecords {
    /// One record per table, the old ones kept, in `tables`' order.
    pub fn relist(&mut self, tables: &[TableRef]) {
        let mut old: std::collections::HashMap<TableRef, TableRead> =
            std::mem::take(&mut self.0).into_iter().collect();
        self.0 = tables
            .iter()
            .map(|t| (t.clone(), old.remove(t).unwrap_or_default()))
            .collect();
    }

    /// A record for each of `tables` not held yet (a part of a listing: the other
    /// catalogs' records stay until the whole listing comes).
    pub fn add(&mut self, tables: &[TableRef]) {
        let held: std::collections::HashSet<TableRef> =
            self.0.iter().map(|(t, _)| t.clone()).collect();
        let new = tables.iter().filter(|t| !held.contains(*t));
        let new: Vec<_> = new.map(|t| (t.clone(), TableRead::default())).collect();
        self.0.extend(new);
    }
}

impl Records for VecRecords {
    fn get(&self, t: &TableRef) -> Option<&TableRead> {
        self.0.iter().find(|(x, _)| x == t).map(|(_, r)| r)
    }

    fn get_mut(&mut self, t: &TableRef) -> Option<&mut TableRead> {
        self.0.iter_mut().find(|(x, _)| x == t).map(|(_, r)| r)
    }
}

/// A survey's answer: a table whose files cannot change its verdict is settled with the
/// survey's facts; the others keep their verdict and show the bound until their files are
/// read (`Some`: the excess files proved, which orders the file reads). A failed survey
/// keeps the last verdict.
pub(super) fn take_survey(
    rec: &mut TableRead,
    r: Result<Survey, TrinoError>,
    ctx: super::Ctx<'_>,
) -> Option<u64> {
    rec.checked_at = Some(ctx.now);
    match r {
        Ok(s) => {
            let facts = s.stats(ctx.scan);
            match s.file_read(ctx.scan) {
                FileRead::NotNeeded => {
                    settle_read(rec, facts, ctx.now);
                    None
                }
                FileRead::Needed(bounds) => {
                    rec.bound = Some(facts);
                    rec.error = None;
                    Some(bounds.map_or(0, |b| b.excess_at_least))
                }
            }
        }
        Err(e) => {
            rec.error = Some(e);
            rec.bound = None;
            None
        }
    }
}

/// A complete read's answer (a file read, a table's own read): the new verdict's facts,
/// or the error beside the last good ones.
pub(super) fn take_stats(
    rec: &mut TableRead,
    r: Result<TableStats, TrinoError>,
    now: DateTime<Utc>,
) {
    rec.checked_at = Some(now);
    match r {
        Ok(stats) => settle_read(rec, stats, now),
        Err(e) => {
            rec.error = Some(e);
            rec.bound = None;
        }
    }
}

/// `stats` read just now, outside the refresh or by it: the table's new verdict's facts.
pub fn settle_read(rec: &mut TableRead, mut stats: TableStats, now: DateTime<Utc>) {
    // A probe of an older snapshot than these stats would make the next probe re-read an
    // unchanged table; the probe that sent this read gives it the metadata log.
    match rec.probe {
        Some(p) if same_snapshot(&stats, &p) => adopt_probe(&mut stats, &p),
        Some(_) => rec.probe = None,
        None => {}
    }
    rec.stats = Some(stats);
    rec.read_at = Some(now);
    rec.cached = false;
    rec.error = None;
    rec.bound = None;
}

/// A probe's answer: `true` when the table is settled by it (unchanged since its stats
/// were read: they stay, confirmed; or its probe failed), `false` when it changed and is
/// read again.
pub(super) fn take_probe(
    rec: &mut TableRead,
    r: Result<Probe, TrinoError>,
    now: DateTime<Utc>,
) -> bool {
    rec.checked_at = Some(now);
    match r {
        Ok(p) => {
            let same_id = rec.probe.is_none_or(|old| old.snapshot_id == p.snapshot_id);
            let unchanged = same_id
                && rec.error.is_none()
                && rec.stats.as_ref().is_some_and(|st| same_snapshot(st, &p));
            rec.probe = Some(p);
            if unchanged {
                rec.cached = false;
                if let Some(st) = &mut rec.stats {
                    adopt_probe(st, &p);
                }
            }
            unchanged
        }
        Err(e) => {
            rec.error = Some(e);
            true
        }
    }
}

/// The stats were read at the snapshot the probe sees: the same newest metadata file
/// (both to the millisecond) when both know it; else the same current snapshot id; else
/// (servers without a metadata log) the same number of snapshots and the same newest
/// commit, to the second.
pub fn same_snapshot(st: &TableStats, p: &Probe) -> bool {
    if let Some(at) = p.metadata_at {
        return match st.metadata_at {
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

/// What an unchanged table's probe adds to its stats: the metadata log a survey may leave
/// to the probe (its metadata files, for their rule, and its newest file, which the next
/// probes compare).
pub fn adopt_probe(st: &mut TableStats, p: &Probe) {
    if st.metadata_at.is_none() {
        st.metadata_at = p.metadata_at;
    }
    if p.metadata_files.is_some() {
        st.metadata_files = p.metadata_files;
    }
}
